//! Sending evictions: the Eviction API only (never a pod delete), bounded concurrency, a QPS/burst
//! limit, retries for transient failures within the cycle's deadline, and a guard consulted right
//! before every request so that a replica that lost its lease (or is shutting down) stops at once.

pub(crate) mod body;
pub(crate) mod outcome;
pub(crate) mod queue;
pub(crate) mod retry;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::{StreamExt, future::BoxFuture};
use jiff::{SignedDuration, Timestamp};
use kube::Client;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use crate::drain::TokenBucket;

pub use body::{EvictionRequest, eviction_body, eviction_body_with};
pub use outcome::{Answer, Outcome, classify, classify_answer};
pub use queue::{EvictionQueue, OnOutcome, Outcomes, Submission};
pub use retry::RetryPolicy;

#[derive(Clone, Debug)]
pub struct EvictorConfig {
    pub qps: f64,
    pub burst: u32,
    pub concurrency: usize,
    /// Each attempt gives up after this long (and counts as a transient failure).
    pub request_timeout: Duration,
    pub retry: RetryPolicy,
    /// `deleteOptions.gracePeriodSeconds` of every eviction (not of dry runs); `None`: each pod's own.
    pub grace_period_seconds: Option<i64>,
}

impl Default for EvictorConfig {
    fn default() -> Self {
        EvictorConfig {
            // A zone of thousands of preemptable pods drains in minutes (6,000 in about 5 at 20/s), at a
            // load an API server serving thousands of nodes does not notice.
            qps: 20.0,
            burst: 40,
            concurrency: 8,
            request_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
            grace_period_seconds: None,
        }
    }
}

/// Why the evictor may not send a request, or must give up one on the wire. `Display` is the
/// reason status, events and logs show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Halt {
    ShuttingDown,
    NotLeader,
    /// Leadership was lost while a request was on the wire.
    LeadershipLapsed,
    ShutdownGraceOver,
}

impl std::fmt::Display for Halt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Halt::ShuttingDown => "shutting down",
            Halt::NotLeader => "no longer the leader",
            Halt::LeadershipLapsed => "leadership lapsed",
            Halt::ShutdownGraceOver => "shutdown grace period over",
        })
    }
}

/// Asked right before each request is sent: `Err(why)` abandons it.
pub trait Guard: Send + Sync {
    fn may_act(&self, dry_run: bool) -> Result<(), Halt>;

    /// Resolves (with the reason) once requests already on the wire must be given up: the right to
    /// act has lapsed (leadership lost, shutdown grace over). A request cut off this way may still be
    /// applied by the server, which is why leadership keeps a margin before a standby may take over.
    fn lapsed(&self) -> BoxFuture<'_, Halt> {
        Box::pin(std::future::pending())
    }
}

/// A guard that always allows: one-shot commands (`tidal report --verify`) that only dry-run.
pub struct Always;
impl Guard for Always {
    fn may_act(&self, _dry_run: bool) -> Result<(), Halt> {
        Ok(())
    }
}

/// Sends evictions. Cheap to clone; clones share the rate limits.
#[derive(Clone)]
pub struct Evictor {
    client: Client,
    config: EvictorConfig,
    /// The drain plan's own rate model, at the wall clock's instants.
    limiter: Arc<Mutex<TokenBucket>>,
    /// Dry runs (verifying DryRun policies) have a bucket of their own at the same rate, so that
    /// checking a plan never delays or starves the real evictions of another policy.
    dry_run_limiter: Arc<Mutex<TokenBucket>>,
    /// How long answered requests took, smoothed: what the drain estimate assumes of the next ones.
    request_seconds: Arc<std::sync::Mutex<Option<f64>>>,
}

impl Evictor {
    pub fn new(client: Client, config: EvictorConfig) -> Self {
        let bucket = || {
            Arc::new(Mutex::new(TokenBucket::new(
                config.qps,
                config.burst,
                Timestamp::now(),
            )))
        };
        Evictor {
            client,
            limiter: bucket(),
            dry_run_limiter: bucket(),
            request_seconds: Arc::default(),
            config,
        }
    }

    pub fn config(&self) -> &EvictorConfig {
        &self.config
    }

    /// How long an eviction request typically takes here, once one has been answered.
    pub fn typical_request(&self) -> Option<Duration> {
        let seconds = *self
            .request_seconds
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        seconds.and_then(|s| Duration::try_from_secs_f64(s).ok())
    }

    fn note_request(&self, took: Duration) {
        // Smoothed over the last twenty or so answers.
        const WEIGHT: f64 = 0.05;
        let mut seconds = self
            .request_seconds
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let took = took.as_secs_f64();
        *seconds = Some(seconds.map_or(took, |s| s + WEIGHT * (took - s)));
    }

    fn limiter(&self, dry_run: bool) -> std::sync::MutexGuard<'_, TokenBucket> {
        let limiter = if dry_run {
            &self.dry_run_limiter
        } else {
            &self.limiter
        };
        limiter
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The real evictions' token bucket as it stands: the drain plan sends on from it.
    pub fn bucket(&self) -> TokenBucket {
        self.limiter(false).clone()
    }

    /// Takes a token for a request if it can go before `deadline`; how long to wait for it.
    fn reserve_before(&self, dry_run: bool, deadline: Instant) -> Option<Duration> {
        let now = Timestamp::now();
        let left = SignedDuration::try_from(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or(SignedDuration::MAX);
        let deadline = now.checked_add(left).unwrap_or(Timestamp::MAX);
        let wait = self.limiter(dry_run).reserve_before(now, deadline)?;
        Some(Duration::try_from(wait).unwrap_or(Duration::ZERO))
    }

    /// Sends every request, at most `concurrency` at a time; outcomes come back in request order.
    /// `on_outcome` sees each one as soon as it is known (to mark the pod in flight at once).
    pub async fn evict_all(
        &self,
        requests: &[EvictionRequest],
        deadline: Instant,
        guard: &dyn Guard,
        on_outcome: &(dyn Fn(&EvictionRequest, &Outcome) + Sync),
    ) -> Vec<Outcome> {
        let concurrency = self.config.concurrency.max(1);
        // Boxed with an explicit lifetime: closures returning borrowing futures trip rustc's
        // higher-ranked `Send` inference when the caller spawns the whole cycle.
        let sends: Vec<BoxFuture<'_, (usize, Outcome)>> = requests
            .iter()
            .enumerate()
            .map(|(index, request)| -> BoxFuture<'_, (usize, Outcome)> {
                Box::pin(async move {
                    let outcome = self.evict(request, deadline, guard).await;
                    on_outcome(request, &outcome);
                    (index, outcome)
                })
            })
            .collect();
        let mut outcomes: Vec<(usize, Outcome)> = futures::stream::iter(sends)
            .buffer_unordered(concurrency)
            .collect()
            .await;
        outcomes.sort_by_key(|(index, _)| *index);
        outcomes.into_iter().map(|(_, outcome)| outcome).collect()
    }

    /// One eviction with its retries.
    pub async fn evict(
        &self,
        request: &EvictionRequest,
        deadline: Instant,
        guard: &dyn Guard,
    ) -> Outcome {
        // When the last attempt that got no answer ended: the server may have evicted the pod all the
        // same, so a later 404 (or 409, the pod already replaced) is this eviction's own effect, not a
        // vanished pod; and if none comes, the watch settles it from that instant on.
        let mut unanswered_until: Option<jiff::Timestamp> = None;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let Some(wait) = self.reserve_before(request.dry_run, deadline) else {
                return Outcome::Abandoned("cycle deadline reached before sending".to_owned());
            };
            tokio::time::sleep(wait).await;
            if let Err(why) = guard.may_act(request.dry_run) {
                self.limiter(request.dry_run).cancel(Timestamp::now());
                return Outcome::Abandoned(why.to_string());
            }
            let failure = match self.attempt(request, deadline, guard).await {
                Attempt::Done(outcome) => {
                    let maybe_applied = unanswered_until.is_some() && !request.dry_run;
                    let outcome = after_unanswered(outcome, maybe_applied);
                    log_outcome(request, &outcome);
                    return outcome;
                }
                Attempt::Cut(why) => {
                    warn!(pod = %request.pod, %why, "eviction request cut off; the server may still apply it");
                    return Outcome::Abandoned(why.to_string());
                }
                Attempt::Transient { why, unanswered } => {
                    if unanswered {
                        unanswered_until = Some(jiff::Timestamp::now());
                    }
                    why
                }
            };
            match self.config.retry.next(attempt, Instant::now(), deadline) {
                Some(delay) => {
                    debug!(pod = %request.pod, attempt, %failure, ?delay, "eviction failed; retrying");
                    tokio::time::sleep(delay).await;
                }
                None => {
                    warn!(pod = %request.pod, attempt, %failure, "eviction failed; giving up this cycle");
                    let why = format!("{failure} (after {attempt} attempts)");
                    return match unanswered_until {
                        Some(ended) if !request.dry_run => Outcome::Unanswered { why, ended },
                        _ => Outcome::Failed(why),
                    };
                }
            }
        }
    }

    /// One request. It never outlives the cycle's deadline nor the guard: an answer that arrives after
    /// either could no longer be acted on, and a request still open when leadership lapses could be
    /// applied while another replica already leads.
    async fn attempt(
        &self,
        request: &EvictionRequest,
        deadline: Instant,
        guard: &dyn Guard,
    ) -> Attempt {
        let http = match body::http_request(request, self.config.grace_period_seconds) {
            Ok(http) => http,
            Err(error) => return Attempt::Done(Outcome::Failed(error)),
        };
        let limit = self
            .config
            .request_timeout
            .min(deadline.saturating_duration_since(Instant::now()));
        let started = Instant::now();
        let sent = tokio::select! {
            sent = tokio::time::timeout(limit, self.client.request_text(http)) => sent,
            why = guard.lapsed() => return Attempt::Cut(why),
        };
        if matches!(sent, Ok(Ok(_)) | Ok(Err(kube::Error::Api(_)))) {
            self.note_request(started.elapsed());
        }
        let status = match sent {
            Err(_) => {
                return Attempt::Transient {
                    why: format!("no answer within {limit:?}"),
                    unanswered: true,
                };
            }
            Ok(Ok(_)) => {
                return Attempt::Done(if request.dry_run {
                    Outcome::WouldEvict
                } else {
                    Outcome::Evicted
                });
            }
            Ok(Err(kube::Error::Api(status))) => status,
            Ok(Err(error)) => {
                return Attempt::Transient {
                    why: error.to_string(),
                    unanswered: true,
                };
            }
        };
        let message = if status.message.is_empty() {
            format!("HTTP {}", status.code)
        } else {
            status.message.clone()
        };
        Attempt::Done(match classify_answer(status.code, &message) {
            Answer::Accepted => Outcome::Evicted,
            Answer::TooManyRequests => {
                let causes: Vec<String> = status
                    .details
                    .iter()
                    .flat_map(|d| d.causes.iter())
                    .flat_map(|c| [c.reason.clone(), c.message.clone()])
                    .collect();
                Outcome::Refused {
                    reason: outcome::too_many_requests_reason(&message, &causes),
                    detail: message,
                }
            }
            Answer::NotFound => Outcome::Gone,
            Answer::Conflict => Outcome::Replaced,
            Answer::Retryable => {
                return Attempt::Transient {
                    why: message,
                    unanswered: false,
                };
            }
            Answer::Rejected => Outcome::Failed(format!("HTTP {}: {message}", status.code)),
        })
    }
}

enum Attempt {
    Done(Outcome),
    /// Worth retrying. `unanswered`: no HTTP answer came back (timeout, broken connection), so the
    /// server may have applied the request.
    Transient {
        why: String,
        unanswered: bool,
    },
    /// Given up by the guard while on the wire.
    Cut(Halt),
}

/// The final outcome given that an earlier attempt may have been applied: then the pod being gone
/// (404) or already replaced (409) is most likely that attempt's doing, and counts as one eviction.
fn after_unanswered(outcome: Outcome, maybe_applied: bool) -> Outcome {
    match outcome {
        Outcome::Gone | Outcome::Replaced if maybe_applied => Outcome::EvictedUnconfirmed,
        other => other,
    }
}

fn log_outcome(request: &EvictionRequest, outcome: &Outcome) {
    match outcome {
        Outcome::Evicted => info!(pod = %request.pod, "evicted"),
        Outcome::EvictedUnconfirmed => info!(
            pod = %request.pod,
            "evicted (unconfirmed): an unanswered attempt went through, the retry found the pod gone"
        ),
        Outcome::WouldEvict => debug!(pod = %request.pod, "dry-run eviction accepted"),
        Outcome::Refused { reason, detail } => {
            info!(pod = %request.pod, %reason, %detail, "eviction refused; skipped this cycle")
        }
        other => info!(pod = %request.pod, outcome = other.label(), "eviction not done"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_404_or_409_after_an_unanswered_attempt_is_that_attempt_s_eviction() {
        assert_eq!(
            after_unanswered(Outcome::Gone, true),
            Outcome::EvictedUnconfirmed
        );
        assert_eq!(
            after_unanswered(Outcome::Replaced, true),
            Outcome::EvictedUnconfirmed
        );
        assert_eq!(after_unanswered(Outcome::Gone, false), Outcome::Gone);
        assert_eq!(after_unanswered(Outcome::Evicted, true), Outcome::Evicted);
        let refused = Outcome::Refused {
            reason: crate::framework::SkipReason::Pdb,
            detail: String::new(),
        };
        assert_eq!(after_unanswered(refused.clone(), true), refused);
    }
}
