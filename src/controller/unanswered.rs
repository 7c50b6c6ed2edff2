//! Evictions whose every attempt went without a certain answer: the API server may have applied one
//! (a dying server often does, then drops the connection). Counting them failed would lose an
//! eviction, and evicting the pod again would count one twice; so the pod stays marked as leaving
//! (it holds its job's budget as unavailable) until the watch settles the question: the pod gone or
//! terminating is this eviction, counted once with its Event; the pod still there when its mark
//! expires was never evicted, and counts as failed.

use std::{sync::Mutex, time::Duration};

use jiff::Timestamp;
use tracing::{info, warn};

use crate::{
    cluster::{ClusterCache, ObjectKey, PodInfo},
    framework::Candidate,
};

/// How the watch settled an unanswered eviction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Settled {
    /// The pod is gone, terminating, or replaced by a namesake: the eviction went through.
    Evicted,
    /// The pod is still there, running, and tidal's mark on it has expired: it was not evicted.
    NotEvicted,
}

/// What the cache shows of an unanswered eviction's pod. Pure, for the tests.
pub(crate) fn settle(current: Option<&PodInfo>, uid: &str) -> Option<Settled> {
    match current {
        None => Some(Settled::Evicted),
        Some(pod) if pod.uid != uid || pod.terminating => Some(Settled::Evicted),
        // Still marked: the watch has not shown the deletion yet, or it never comes.
        Some(pod) if pod.evicting_since.is_some() => None,
        Some(_) => Some(Settled::NotEvicted),
    }
}

/// One eviction waiting for the watch.
#[derive(Clone, Debug)]
pub(crate) struct Pending {
    pub policy: String,
    pub candidate: Candidate,
    pub uid: String,
    pub since: Timestamp,
}

impl Pending {
    fn key(&self) -> &ObjectKey {
        &self.candidate.pod.key
    }
}

/// The evictions waiting for the watch, shared by every cycle's outcome callback.
#[derive(Debug, Default)]
pub(crate) struct Unanswered {
    pending: Mutex<Vec<Pending>>,
}

/// How often the control loop looks again while evictions wait: the watch usually shows a deletion
/// within a second.
pub(crate) const RECHECK: Duration = Duration::from_secs(5);

impl Unanswered {
    /// Holds the pod as leaving and waits for the watch.
    pub(crate) fn hold(&self, cache: &mut ClusterCache, pending: Pending) {
        // A pod the cache no longer has is settled at the next look; the mark is for the others.
        cache.mark_evicted(pending.key(), &pending.uid, pending.since);
        warn!(
            pod = %pending.key(),
            policy = %pending.policy,
            "eviction unanswered: the pod counts as leaving until the watch shows whether it went"
        );
        self.lock().push(pending);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// The evictions the cache now settles, removed from those waiting.
    pub(crate) fn settle(&self, cache: &ClusterCache) -> Vec<(Pending, Settled)> {
        let mut pending = self.lock();
        let mut settled = Vec::new();
        let mut waiting = Vec::with_capacity(pending.len());
        for entry in pending.drain(..) {
            match settle(cache.pod(entry.key()).map(|pod| &**pod), &entry.uid) {
                Some(outcome) => {
                    match outcome {
                        Settled::Evicted => info!(
                            pod = %entry.key(),
                            "evicted (unconfirmed): an unanswered attempt went through, the watch shows the pod going"
                        ),
                        Settled::NotEvicted => warn!(
                            pod = %entry.key(),
                            "eviction unanswered and not applied: the pod is still running; it counts again"
                        ),
                    }
                    settled.push((entry, outcome));
                }
                None => waiting.push(entry),
            }
        }
        *pending = waiting;
        settled
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Pending>> {
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{
        framework::StrategyId,
        testkit::{Cluster, pod},
    };

    fn pending(pod: &Arc<PodInfo>) -> Pending {
        Pending {
            policy: "tdm".into(),
            candidate: Candidate::new(pod, StrategyId::Tdm, "zone z closed"),
            uid: pod.uid.to_string(),
            since: Timestamp::UNIX_EPOCH,
        }
    }

    #[test]
    fn the_watch_settles_each_way_and_waits_while_the_mark_holds() {
        let mut world = Cluster::revocable().pods([
            pod("ns/deleted", "rev-1").preemptable(),
            pod("ns/terminating", "rev-1").preemptable(),
            pod("ns/replaced", "rev-1").preemptable(),
            pod("ns/kept", "rev-1").preemptable(),
        ]);
        let unanswered = Unanswered::default();
        let keys: Vec<ObjectKey> = ["deleted", "terminating", "replaced", "kept"]
            .iter()
            .map(|name| ObjectKey::new("ns", *name))
            .collect();
        for key in &keys {
            let pod = Arc::clone(world.cache.pod(key).unwrap());
            unanswered.hold(&mut world.cache, pending(&pod));
        }
        // Held as leaving: a later plan neither evicts them again nor counts them available.
        for key in &keys {
            assert!(world.cache.pod(key).unwrap().is_leaving(), "{key}");
        }
        assert!(unanswered.settle(&world.cache).is_empty());

        world.cache.delete_pod(&keys[0], Timestamp::UNIX_EPOCH);
        world.cache.apply_pod(
            pod("ns/terminating", "rev-1")
                .preemptable()
                .terminating()
                .build(),
            Timestamp::UNIX_EPOCH,
        );
        world.cache.apply_pod(
            pod("ns/replaced", "rev-2")
                .preemptable()
                .patch(serde_json::json!({"metadata": {"uid": "another"}}))
                .build(),
            Timestamp::UNIX_EPOCH,
        );
        let settled: Vec<(String, Settled)> = unanswered
            .settle(&world.cache)
            .into_iter()
            .map(|(p, s)| (p.candidate.pod.key.to_string(), s))
            .collect();
        assert_eq!(
            settled,
            [
                ("ns/deleted".to_owned(), Settled::Evicted),
                ("ns/terminating".to_owned(), Settled::Evicted),
                ("ns/replaced".to_owned(), Settled::Evicted),
            ]
        );

        // Never deleted: once its mark expires it was not evicted, and is settled exactly once.
        world
            .cache
            .expire_evictions(Timestamp::now(), Duration::from_secs(1));
        let settled = unanswered.settle(&world.cache);
        assert_eq!(settled.len(), 1);
        assert_eq!(settled[0].0.candidate.pod.key, keys[3]);
        assert_eq!(settled[0].1, Settled::NotEvicted);
        assert!(!world.cache.pod(&keys[3]).unwrap().is_leaving());
        assert!(unanswered.is_empty());
        assert!(unanswered.settle(&world.cache).is_empty());
    }
}
