//! Evictions whose every attempt went without a certain answer: the API server may have applied one
//! (a dying server often does, then drops the connection). Counting them failed would lose an
//! eviction, and evicting the pod again would count one twice; so the pod stays marked as leaving
//! (it holds its job's budget as unavailable) until the watch settles the question: the pod gone or
//! terminating is this eviction, counted once with its Event; the pod still there, running, once
//! the watch shows the cluster as it was after the request could still be applied, was never
//! evicted and counts as failed. That is as soon as a list of the pods that began after the last
//! unanswered attempt ended has completed (the watch broke and relisted, as it does when the API
//! server restarts, which ends the requests it was serving), or once the API server has given the
//! request up for certain and a watch that has streamed since had time to deliver it. Should
//! neither come to pass (a watch down for good), the mark's expiry (`--in-flight-ttl`) settles it.

use std::{sync::Mutex, time::Duration};

use jiff::{SignedDuration, Timestamp};
use tracing::{info, warn};

use crate::{
    cluster::{ClusterCache, ObjectKey, ObjectKind, PodInfo, WatchProgress},
    framework::Candidate,
};

/// How long after an attempt the API server has given it up for certain: kube-apiserver's default
/// `--request-timeout`, past which it abandons any request it still serves.
pub(crate) const SERVER_GIVES_UP: SignedDuration = SignedDuration::from_secs(60);

/// How long a streaming watch is given to deliver what the API server wrote.
pub(crate) const WATCH_DELIVERS: SignedDuration = SignedDuration::from_secs(5);

/// How the watch settled an unanswered eviction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Settled {
    /// The pod is gone, terminating, or replaced by a namesake: the eviction went through.
    Evicted,
    /// The pod is still there, running, and the watch has caught up with the request (or tidal's
    /// mark on it has expired): it was not evicted.
    NotEvicted,
}

/// What the cache shows of an unanswered eviction's pod at `now`, given how far the pods' watch has
/// caught up. Pure, for the tests.
pub(crate) fn settle(
    current: Option<&PodInfo>,
    pending: &Pending,
    watch: &WatchProgress,
    now: Timestamp,
) -> Option<Settled> {
    match current {
        None => Some(Settled::Evicted),
        Some(pod) if pod.uid != pending.uid.as_str() || pod.terminating => Some(Settled::Evicted),
        // The mark expired: the pod counts again whatever the watch knows.
        Some(pod) if pod.evicting_since.is_none() => Some(Settled::NotEvicted),
        Some(_) if caught_up(watch, pending.ended, now) => Some(Settled::NotEvicted),
        // The deletion may still be on its way, or the request still be served.
        Some(_) => None,
    }
}

/// Whether the pods' watch shows the cluster as it was once a request whose last attempt ended at
/// `ended` could no longer be applied: a list that began after it completed, or the API server has
/// given it up and the watch has streamed long enough since to have delivered its effect.
fn caught_up(watch: &WatchProgress, ended: Timestamp, now: Timestamp) -> bool {
    let relisted = watch.listed_from.is_some_and(|from| from >= ended);
    let given_up = ended
        .saturating_add(SERVER_GIVES_UP)
        .unwrap_or(Timestamp::MAX);
    let streamed = watch.streaming_since.is_some_and(|since| {
        since
            .max(given_up)
            .saturating_add(WATCH_DELIVERS)
            .is_ok_and(|delivered| delivered <= now)
    });
    relisted || streamed
}

/// One eviction waiting for the watch.
#[derive(Clone, Debug)]
pub(crate) struct Pending {
    pub policy: String,
    pub candidate: Candidate,
    pub uid: String,
    /// When its last attempt that got no answer ended, as the evictor saw it.
    pub ended: Timestamp,
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
        cache.mark_evicted(pending.key(), &pending.uid, pending.ended);
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

    /// The evictions the cache settles at `now`, removed from those waiting. A pod found not
    /// evicted counts again from `now`: its mark is dropped.
    pub(crate) fn settle(
        &self,
        cache: &mut ClusterCache,
        now: Timestamp,
    ) -> Vec<(Pending, Settled)> {
        let mut pending = self.lock();
        if pending.is_empty() {
            return Vec::new();
        }
        let watch = cache.watch_progress(ObjectKind::Pod);
        let mut settled = Vec::new();
        let mut waiting = Vec::with_capacity(pending.len());
        for entry in pending.drain(..) {
            match settle(
                cache.pod(entry.key()).map(|pod| &**pod),
                &entry,
                &watch,
                now,
            ) {
                Some(outcome) => {
                    match outcome {
                        Settled::Evicted => info!(
                            pod = %entry.key(),
                            "evicted (unconfirmed): an unanswered attempt went through, the watch shows the pod going"
                        ),
                        Settled::NotEvicted => {
                            cache.unmark_evicting(entry.key(), now);
                            warn!(
                                pod = %entry.key(),
                                "eviction unanswered and not applied: the pod is still running; it counts again"
                            );
                        }
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
            ended: Timestamp::UNIX_EPOCH,
        }
    }

    /// An instant some way into the kit's day, and `secs` seconds from it.
    fn at(secs: i64) -> Timestamp {
        crate::testkit::ts(crate::testkit::NOW) + SignedDuration::from_secs(secs)
    }

    fn held(
        world: &mut Cluster,
        unanswered: &Unanswered,
        name: &str,
        ended: Timestamp,
    ) -> ObjectKey {
        let key = ObjectKey::new("ns", name);
        let pod = Arc::clone(world.cache.pod(&key).unwrap());
        unanswered.hold(
            &mut world.cache,
            Pending {
                ended,
                ..pending(&pod)
            },
        );
        key
    }

    /// The watch broke and listed the pods again, from after the attempt: the request died with
    /// the connection, and the list shows the pod running. It counts again at once, failed once,
    /// rather than holding its job's budget until the mark expires.
    #[test]
    fn a_list_begun_after_the_attempt_settles_it_not_evicted() {
        let mut world = Cluster::revocable().pods([pod("ns/kept", "rev-1").preemptable()]);
        let unanswered = Unanswered::default();
        let key = held(&mut world, &unanswered, "kept", at(0));
        // A list that began before the attempt ended may predate what the request did.
        world.cache.note_list_start(ObjectKind::Pod, at(-1));
        world.cache.note_list_done(ObjectKind::Pod);
        assert!(unanswered.settle(&mut world.cache, at(2)).is_empty());
        // One under way has not shown anything yet.
        world.cache.note_list_start(ObjectKind::Pod, at(1));
        assert!(unanswered.settle(&mut world.cache, at(2)).is_empty());
        assert!(world.cache.pod(&key).unwrap().is_leaving());
        world.cache.note_list_done(ObjectKind::Pod);
        let settled = unanswered.settle(&mut world.cache, at(3));
        assert_eq!(settled.len(), 1);
        assert_eq!(settled[0].1, Settled::NotEvicted);
        assert!(!world.cache.pod(&key).unwrap().is_leaving(), "counts again");
        assert!(unanswered.is_empty());
        assert!(
            unanswered.settle(&mut world.cache, at(4)).is_empty(),
            "once"
        );
    }

    /// Without a list, the API server's own timeout bounds the request: once it has passed, and a
    /// watch streaming since has had time to deliver the pod's deletion, there is none to come.
    #[test]
    fn the_server_s_timeout_settles_it_once_the_watch_has_streamed_since() {
        let mut world = Cluster::revocable().pods([
            pod("ns/kept", "rev-1").preemptable(),
            pod("ns/going", "rev-1").preemptable(),
        ]);
        let unanswered = Unanswered::default();
        let kept = held(&mut world, &unanswered, "kept", at(0));
        let marked = Arc::clone(world.cache.pod(&kept).unwrap());
        let entry = unanswered.lock()[0].clone();
        let streaming = |since: i64| {
            let mut watch = WatchProgress::default();
            watch.streaming_since = Some(at(since));
            watch
        };
        let bound = (SERVER_GIVES_UP + WATCH_DELIVERS).as_secs();
        let cases = [
            // A watch streaming all along: the bound is what waits.
            (streaming(-600), bound - 1, None),
            (streaming(-600), bound, Some(Settled::NotEvicted)),
            // It reconnected after the bound: what it missed comes first.
            (streaming(bound + 30), bound + 34, None),
            (streaming(bound + 30), bound + 35, Some(Settled::NotEvicted)),
            // Down (or listing): nothing it shows is recent, however long ago the attempt was.
            (WatchProgress::default(), 3_600, None),
        ];
        for (watch, now, expected) in cases {
            assert_eq!(
                settle(Some(&marked), &entry, &watch, at(now)),
                expected,
                "{watch:?} at {now}s"
            );
        }
        // The pod going is this eviction, whatever the watch: never taken for a failure.
        let caught_up = streaming(-600);
        let going = held(&mut world, &unanswered, "going", at(0));
        let terminating = pod("ns/going", "rev-1").preemptable().terminating().build();
        world.cache.apply_pod(terminating, at(1));
        let going_entry = unanswered.lock()[1].clone();
        let current = world.cache.pod(&going).map(|p| &**p);
        assert_eq!(
            settle(current, &going_entry, &caught_up, at(3_600)),
            Some(Settled::Evicted)
        );
        assert_eq!(
            settle(None, &going_entry, &caught_up, at(3_600)),
            Some(Settled::Evicted)
        );
        // Through the cache: streaming from before the attempt, settled once the bound has passed.
        world.cache.note_streaming(ObjectKind::Pod, Some(at(-600)));
        let settled: Vec<(String, Settled)> = unanswered
            .settle(&mut world.cache, at(bound))
            .into_iter()
            .map(|(p, s)| (p.candidate.pod.key.to_string(), s))
            .collect();
        assert_eq!(
            settled,
            [
                ("ns/kept".to_owned(), Settled::NotEvicted),
                ("ns/going".to_owned(), Settled::Evicted),
            ]
        );
        assert!(!world.cache.pod(&kept).unwrap().is_leaving());
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
        assert!(unanswered.settle(&mut world.cache, at(0)).is_empty());

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
            .settle(&mut world.cache, at(0))
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
        let settled = unanswered.settle(&mut world.cache, at(0));
        assert_eq!(settled.len(), 1);
        assert_eq!(settled[0].0.candidate.pod.key, keys[3]);
        assert_eq!(settled[0].1, Settled::NotEvicted);
        assert!(!world.cache.pod(&keys[3]).unwrap().is_leaving());
        assert!(unanswered.is_empty());
        assert!(unanswered.settle(&mut world.cache, at(0)).is_empty());
    }
}
