//! Sending evictions: the Eviction API only (never a pod delete), bounded concurrency, a QPS/burst
//! limit, retries for transient failures within the cycle's deadline, and a guard consulted right
//! before every request so that a replica that lost its lease (or is shutting down) stops at once.

pub mod body;
pub mod limiter;
pub mod outcome;
pub mod retry;

use std::{sync::Arc, time::Duration};

use futures::{StreamExt, future::BoxFuture};
use kube::Client;
use tokio::{sync::Mutex, time::Instant};
use tracing::{debug, info, warn};

pub use body::{EvictionRequest, eviction_body};
pub use limiter::TokenBucket;
pub use outcome::{Answer, Outcome, classify};
pub use retry::RetryPolicy;

#[derive(Clone, Debug)]
pub struct EvictorConfig {
    pub qps: f64,
    pub burst: u32,
    pub concurrency: usize,
    /// Each attempt gives up after this long (and counts as a transient failure).
    pub request_timeout: Duration,
    pub retry: RetryPolicy,
}

impl Default for EvictorConfig {
    fn default() -> Self {
        EvictorConfig {
            qps: 5.0,
            burst: 10,
            concurrency: 4,
            request_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
        }
    }
}

/// Asked right before each request is sent: `Err(why)` abandons it.
pub trait Guard: Send + Sync {
    fn may_act(&self, dry_run: bool) -> Result<(), String>;
}

/// A guard that always allows: one-shot commands (`tidal report --verify`) that only dry-run.
pub struct Always;
impl Guard for Always {
    fn may_act(&self, _dry_run: bool) -> Result<(), String> {
        Ok(())
    }
}

/// Sends evictions. Cheap to clone; clones share the rate limit.
#[derive(Clone)]
pub struct Evictor {
    client: Client,
    config: EvictorConfig,
    limiter: Arc<Mutex<TokenBucket>>,
}

impl Evictor {
    pub fn new(client: Client, config: EvictorConfig) -> Self {
        let limiter = TokenBucket::new(config.qps, config.burst, Instant::now());
        Evictor {
            client,
            config,
            limiter: Arc::new(Mutex::new(limiter)),
        }
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
        let mut attempt = 0;
        loop {
            attempt += 1;
            let wait = self.limiter.lock().await.reserve(Instant::now());
            if Instant::now() + wait >= deadline {
                return Outcome::Abandoned("cycle deadline reached before sending".to_owned());
            }
            tokio::time::sleep(wait).await;
            if let Err(why) = guard.may_act(request.dry_run) {
                return Outcome::Abandoned(why);
            }
            let failure = match self.attempt(request).await {
                Attempt::Done(outcome) => {
                    log_outcome(request, &outcome);
                    return outcome;
                }
                Attempt::Transient(why) => why,
            };
            match self.config.retry.next(attempt, Instant::now(), deadline) {
                Some(delay) => {
                    debug!(pod = %request.pod, attempt, %failure, ?delay, "eviction failed; retrying");
                    tokio::time::sleep(delay).await;
                }
                None => {
                    warn!(pod = %request.pod, attempt, %failure, "eviction failed; giving up this cycle");
                    return Outcome::Failed(format!("{failure} (after {attempt} attempts)"));
                }
            }
        }
    }

    async fn attempt(&self, request: &EvictionRequest) -> Attempt {
        let http = match body::http_request(request) {
            Ok(http) => http,
            Err(error) => return Attempt::Done(Outcome::Failed(error)),
        };
        let sent =
            tokio::time::timeout(self.config.request_timeout, self.client.request_text(http)).await;
        let status = match sent {
            Err(_) => {
                return Attempt::Transient(format!(
                    "no answer within {:?}",
                    self.config.request_timeout
                ));
            }
            Ok(Ok(_)) => {
                return Attempt::Done(if request.dry_run {
                    Outcome::WouldEvict
                } else {
                    Outcome::Evicted
                });
            }
            Ok(Err(kube::Error::Api(status))) => status,
            Ok(Err(error)) => return Attempt::Transient(error.to_string()),
        };
        let message = if status.message.is_empty() {
            format!("HTTP {}", status.code)
        } else {
            status.message.clone()
        };
        Attempt::Done(match classify(status.code) {
            Answer::Accepted => Outcome::Evicted,
            Answer::TooManyRequests => {
                let causes: Vec<String> = status
                    .details
                    .iter()
                    .flat_map(|d| d.causes.iter())
                    .flat_map(|c| [c.reason.clone(), c.message.clone()])
                    .collect();
                Outcome::Refused {
                    gate: outcome::too_many_requests_gate(&message, &causes),
                    detail: message,
                }
            }
            Answer::NotFound => Outcome::Gone,
            Answer::Conflict => Outcome::Replaced,
            Answer::Retryable => return Attempt::Transient(message),
            Answer::Rejected => Outcome::Failed(format!("HTTP {}: {message}", status.code)),
        })
    }
}

enum Attempt {
    Done(Outcome),
    Transient(String),
}

fn log_outcome(request: &EvictionRequest, outcome: &Outcome) {
    match outcome {
        Outcome::Evicted => info!(pod = %request.pod, "evicted"),
        Outcome::WouldEvict => debug!(pod = %request.pod, "dry-run eviction accepted"),
        Outcome::Refused { gate, detail } => {
            info!(pod = %request.pod, gate, %detail, "eviction refused; skipped this cycle")
        }
        other => info!(pod = %request.pod, outcome = other.label(), "eviction not done"),
    }
}
