//! One queue for every eviction the controller sends, drained by one dispatcher: the drain plan's
//! queue ([`drain::EvictionQueue`]), least slack first (a closed zone's overdue pods before all,
//! evictions of other strategies after every zone's), and the rate limit and concurrency are shared
//! by all. A cycle submits its plan and goes on: the next zone change is acted on while the last
//! one's evictions are still going out.
//!
//! Queued evictions count as leaving for every later plan ([`EvictionQueue::pending`]), so no pod is
//! planned twice and budgets see them. An eviction is abandoned rather than sent when its deadline
//! passes (other strategies' plans go stale), when its zone no longer evicts (it opened), or when this
//! replica may no longer act.

use std::{
    collections::HashSet,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use futures::{StreamExt, future::BoxFuture, stream::FuturesUnordered};
use jiff::Timestamp;
use tokio::{sync::Notify, time::Instant};
use tokio_util::sync::CancellationToken;

use super::{EvictionRequest, Evictor, Guard, Outcome};
use crate::{
    cluster::{ObjectKey, SharedCache},
    drain::{
        self, Urgency,
        inputs::{InQueue, Queued},
    },
};

/// The retry window of an eviction without a deadline of its own.
const RETRY_WINDOW: Duration = Duration::from_secs(300);

/// What is called with each outcome, as soon as it is known.
pub type OnOutcome = Box<dyn Fn(&EvictionRequest, &Outcome) + Send + Sync>;

/// One eviction to queue.
#[derive(Clone, Debug)]
pub struct Submission {
    pub request: EvictionRequest,
    /// How soon it must go, as the drain plan says.
    pub urgency: Urgency,
    /// Abandoned if not sent by then.
    pub deadline: Option<Instant>,
    /// Sent only while this zone evicts (closed or draining).
    pub zone: Option<String>,
}

#[derive(Clone)]
pub struct EvictionQueue {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    wake: Notify,
}

#[derive(Default)]
struct State {
    queue: drain::EvictionQueue<Entry>,
    /// Pods queued or on the wire.
    pending: HashSet<ObjectKey>,
}

struct Entry {
    submission: Submission,
    batch: Arc<Batch>,
    index: usize,
}

/// The evictions of one submission, and their outcomes as they come.
struct Batch {
    outcomes: Mutex<Vec<Option<Outcome>>>,
    left: AtomicUsize,
    done: Notify,
    on_outcome: OnOutcome,
}

impl Batch {
    fn complete(&self, index: usize, request: &EvictionRequest, outcome: Outcome) {
        (self.on_outcome)(request, &outcome);
        lock(&self.outcomes)[index] = Some(outcome);
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done.notify_waiters();
            self.done.notify_one();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The outcomes of one submission, in submission order, once every eviction has one.
pub struct Outcomes {
    batch: Arc<Batch>,
}

impl Outcomes {
    pub async fn all(self) -> Vec<Outcome> {
        loop {
            let notified = self.batch.done.notified();
            if self.batch.left.load(Ordering::Acquire) == 0 {
                break;
            }
            notified.await;
        }
        lock(&self.batch.outcomes)
            .iter_mut()
            .map(|outcome| {
                outcome
                    .take()
                    .unwrap_or_else(|| Outcome::Abandoned("never sent".to_owned()))
            })
            .collect()
    }
}

impl Default for EvictionQueue {
    fn default() -> Self {
        EvictionQueue {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                wake: Notify::new(),
            }),
        }
    }
}

impl EvictionQueue {
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues `submissions`; `on_outcome` sees each outcome as soon as it is known.
    pub fn submit(&self, submissions: Vec<Submission>, on_outcome: OnOutcome) -> Outcomes {
        let batch = Arc::new(Batch {
            outcomes: Mutex::new(vec![None; submissions.len()]),
            left: AtomicUsize::new(submissions.len()),
            done: Notify::new(),
            on_outcome,
        });
        {
            let mut state = lock(&self.inner.state);
            for (index, submission) in submissions.into_iter().enumerate() {
                state.pending.insert(submission.request.pod.clone());
                state.queue.push(
                    submission.urgency,
                    Entry {
                        submission,
                        batch: Arc::clone(&batch),
                        index,
                    },
                );
            }
        }
        self.inner.wake.notify_one();
        Outcomes { batch }
    }

    /// Pods whose evictions are queued or on the wire: later plans count them as leaving.
    pub fn pending(&self) -> HashSet<ObjectKey> {
        lock(&self.inner.state).pending.clone()
    }

    /// Evictions queued and not yet sent.
    pub fn queued(&self) -> usize {
        lock(&self.inner.state).queue.len()
    }

    /// What the queue holds, for the drain plan: each eviction waiting, in the order it will be sent,
    /// and those on the wire.
    pub fn holds(&self) -> Queued {
        let state = lock(&self.inner.state);
        let mut held: Queued = state
            .queue
            .in_order()
            .into_iter()
            .enumerate()
            .map(|(position, (urgency, entry))| {
                (
                    entry.submission.request.pod.clone(),
                    InQueue {
                        urgency,
                        position,
                        sent: false,
                    },
                )
            })
            .collect();
        for pod in &state.pending {
            held.entry(pod.clone()).or_insert(InQueue {
                urgency: Urgency::OVERDUE,
                position: usize::MAX,
                sent: true,
            });
        }
        held
    }

    fn pop(&self) -> Option<Entry> {
        lock(&self.inner.state).queue.pop().map(|(_, entry)| entry)
    }

    fn finish(&self, entry: &Entry, outcome: Outcome) {
        lock(&self.inner.state)
            .pending
            .remove(&entry.submission.request.pod);
        entry
            .batch
            .complete(entry.index, &entry.submission.request, outcome);
    }

    /// Sends queued evictions until `stop`, at most the evictor's concurrency at a time; what is left
    /// then is abandoned, so that every submission gets all its outcomes.
    pub async fn dispatch(
        &self,
        evictor: Evictor,
        guard: Arc<dyn Guard>,
        cache: SharedCache,
        stop: CancellationToken,
    ) {
        let concurrency = evictor.config.concurrency.max(1);
        let mut on_the_wire: FuturesUnordered<BoxFuture<'_, (Entry, Outcome)>> =
            FuturesUnordered::new();
        loop {
            while on_the_wire.len() < concurrency {
                let Some(entry) = self.pop() else {
                    break;
                };
                if let Err(why) = self.still_wanted(&entry, guard.as_ref(), &cache) {
                    self.finish(&entry, Outcome::Abandoned(why));
                    continue;
                }
                let (evictor, guard) = (&evictor, Arc::clone(&guard));
                on_the_wire.push(Box::pin(async move {
                    let deadline = entry
                        .submission
                        .deadline
                        .unwrap_or_else(|| Instant::now() + RETRY_WINDOW);
                    let outcome = evictor
                        .evict(&entry.submission.request, deadline, guard.as_ref())
                        .await;
                    (entry, outcome)
                }));
            }
            tokio::select! {
                Some((entry, outcome)) = on_the_wire.next(), if !on_the_wire.is_empty() => {
                    self.finish(&entry, outcome);
                }
                () = self.inner.wake.notified(), if on_the_wire.len() < concurrency => {}
                () = stop.cancelled() => break,
            }
        }
        while let Some((entry, outcome)) = on_the_wire.next().await {
            self.finish(&entry, outcome);
        }
        while let Some(entry) = self.pop() {
            self.finish(&entry, Outcome::Abandoned("shutting down".to_owned()));
        }
    }

    /// Why an entry must not be sent any more, if so.
    fn still_wanted(
        &self,
        entry: &Entry,
        guard: &dyn Guard,
        cache: &SharedCache,
    ) -> Result<(), String> {
        let submission = &entry.submission;
        guard
            .may_act(submission.request.dry_run)
            .map_err(|halt| halt.to_string())?;
        if submission
            .deadline
            .is_some_and(|deadline| deadline <= Instant::now())
        {
            return Err("cycle deadline reached before sending".to_owned());
        }
        if let Some(zone) = &submission.zone {
            let cache = cache.read();
            let evicting = cache
                .zone(zone)
                .and_then(|z| z.state_at(Timestamp::now()).ok())
                .is_some_and(|state| state.evicting());
            if !evicting {
                return Err(format!("zone {zone} no longer evicts (it opened)"));
            }
        }
        Ok(())
    }
}
