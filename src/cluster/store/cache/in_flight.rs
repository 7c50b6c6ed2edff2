//! What this process started and the watches have not confirmed yet: pods it evicted that have not
//! terminated, and eviction rounds and drains its zones' status does not show. They count in every
//! snapshot, so that no pod is evicted twice, `evictPeriod` holds and a started drain goes on before
//! the API server echoes the change back. And how far each watch has caught up, which tells when
//! the absence of a confirmation means that nothing happened.

use std::time::Duration;

use jiff::Timestamp;

use super::ClusterCache;
use crate::cluster::{DrainStart, ObjectKey, ObjectKind, ZoneInfo};

/// How far one kind's watch has brought the cache, by the watch adapter's clock: after an eviction
/// that got no answer, whether the cache can show what became of its pod.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WatchProgress {
    /// When the latest list of the kind that completed began. Lists read the API server's current
    /// state (no resourceVersion), so the cache has shown the kind as of that instant or later since.
    pub listed_from: Option<Timestamp>,
    /// When the list under way began.
    listing_from: Option<Timestamp>,
    /// Since when the watch has streamed without a break: from then on, what the API server writes
    /// reaches the cache as it is written. `None` while it is down or listing.
    pub streaming_since: Option<Timestamp>,
}

#[derive(Clone, Debug)]
pub(super) struct InFlight {
    pub(super) uid: String,
    pub(super) since: Timestamp,
}

/// A zone's rounds and drain as this process knows them ahead of its status.
#[derive(Clone, Debug, Default)]
pub(super) struct LocalZoneNotes {
    round: Option<Timestamp>,
    drain: Option<DrainStart>,
    retry: Option<Timestamp>,
}

impl LocalZoneNotes {
    /// Puts what the status does not show yet into `zone`, and forgets what it does: once the status
    /// is the record again, a round or drain an operator later clears from it is not brought back.
    pub(super) fn merge_into(&mut self, zone: &mut ZoneInfo) {
        if let Some(round) = self.round {
            if zone.last_eviction_round.is_some_and(|last| last >= round) {
                self.round = None;
            } else {
                zone.last_eviction_round = Some(round);
            }
        }
        if let Some(retry) = self.retry {
            if zone.last_eviction_round.is_some_and(|last| last >= retry) {
                self.retry = None;
            } else {
                zone.round_retry = Some(retry);
            }
        }
        if let Some(drain) = self.drain {
            if zone
                .drain_started
                .is_some_and(|known| known.close == drain.close)
            {
                self.drain = None;
            } else {
                zone.drain_started = Some(drain);
            }
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.round.is_none() && self.drain.is_none() && self.retry.is_none()
    }
}

/// How long evicted pods took to go, as seen in one zone: the last few, for the drain estimate.
#[derive(Clone, Debug, Default)]
pub(super) struct Terminations {
    seconds: std::collections::VecDeque<f64>,
}

/// Terminations remembered per zone.
const TERMINATIONS_KEPT: usize = 64;

/// Terminations needed before they stand in for the pods' grace periods.
const TERMINATIONS_TRUSTED: usize = 5;

impl Terminations {
    fn record(&mut self, took: jiff::SignedDuration) {
        if self.seconds.len() == TERMINATIONS_KEPT {
            self.seconds.pop_front();
        }
        self.seconds.push_back(took.as_secs_f64().max(0.0));
    }

    /// The 90th percentile of what was seen, once enough was.
    fn typical(&self) -> Option<jiff::SignedDuration> {
        if self.seconds.len() < TERMINATIONS_TRUSTED {
            return None;
        }
        let mut sorted: Vec<f64> = self.seconds.iter().copied().collect();
        sorted.sort_by(f64::total_cmp);
        let at = (sorted.len() * 9).div_ceil(10).saturating_sub(1);
        jiff::SignedDuration::try_from_secs_f64(sorted[at]).ok()
    }
}

impl ClusterCache {
    /// Records that tidal evicted the pod at `at`, so that later cycles count it as leaving and never evict
    /// it again. Returns false if the pod is not in the cache.
    pub fn mark_evicting(&mut self, key: &ObjectKey, at: Timestamp) -> bool {
        let Some(uid) = self.pods.get(key).map(|pod| pod.uid.to_string()) else {
            return false;
        };
        self.mark_evicted(key, &uid, at)
    }

    /// [`mark_evicting`](Self::mark_evicting) for the pod with this `uid` only: what the API server
    /// answered was about that pod, and a namesake in the cache (newer or older) is another one.
    pub fn mark_evicted(&mut self, key: &ObjectKey, uid: &str, at: Timestamp) -> bool {
        let Some(current) = self.pods.get(key) else {
            return false;
        };
        if current.uid != uid {
            return false;
        }
        let pod = (**current).clone();
        self.evicting.insert(
            key.clone(),
            InFlight {
                uid: uid.to_owned(),
                since: at,
            },
        );
        self.note_departure(&pod, at);
        self.apply_pod(pod, at);
        true
    }

    /// Drops eviction marks older than `ttl`: if the API server never deleted the pod (say, a finalizer
    /// blocks it) it must count again. Returns the pods unmarked.
    pub fn expire_evictions(&mut self, now: Timestamp, ttl: Duration) -> Vec<ObjectKey> {
        let ttl = jiff::SignedDuration::try_from(ttl).unwrap_or(jiff::SignedDuration::MAX);
        let expired: Vec<ObjectKey> = self
            .evicting
            .iter()
            .filter(|(_, mark)| {
                mark.since
                    .saturating_add(ttl)
                    .is_ok_and(|until| until <= now)
            })
            .map(|(key, _)| key.clone())
            .collect();
        for key in &expired {
            self.unmark_evicting(key, now);
        }
        expired
    }

    /// Forgets that tidal evicted the pod: an eviction given up before it was sent. The pod counts as
    /// running again from `at`. Returns whether it was marked.
    pub fn unmark_evicting(&mut self, key: &ObjectKey, at: Timestamp) -> bool {
        if self.evicting.remove(key).is_none() {
            return false;
        }
        if let Some(current) = self.pods.get(key) {
            let pod = (**current).clone();
            self.apply_pod(pod, at);
        }
        true
    }

    pub fn evicting_count(&self) -> usize {
        self.evicting.len()
    }

    /// A list of `kind` begins at `at` (again, if one was under way): the watch is not streaming.
    pub fn note_list_start(&mut self, kind: ObjectKind, at: Timestamp) {
        let progress = self.watches.entry(kind).or_default();
        progress.listing_from = Some(at);
        progress.streaming_since = None;
    }

    /// The list of `kind` under way has completed.
    pub fn note_list_done(&mut self, kind: ObjectKind) {
        let progress = self.watches.entry(kind).or_default();
        if let Some(from) = progress.listing_from.take() {
            progress.listed_from = Some(from);
        }
    }

    /// The watch of `kind` streams from `since` on, or (`None`) no longer does.
    pub fn note_streaming(&mut self, kind: ObjectKind, since: Option<Timestamp>) {
        self.watches.entry(kind).or_default().streaming_since = since;
    }

    /// How far the watch of `kind` has caught up (nothing known for a cache no watch feeds).
    pub fn watch_progress(&self, kind: ObjectKind) -> WatchProgress {
        self.watches.get(&kind).copied().unwrap_or_default()
    }

    /// Records that this process started an eviction round in `zone` at `at`, so that `evictPeriod`
    /// holds before its status write comes back through the watch, and if that write failed. A later
    /// round known from the status wins. Returns whether the zone's last round changed.
    pub fn note_eviction_round(&mut self, zone: &str, at: Timestamp) -> bool {
        let notes = self.local_notes.entry(zone.to_owned()).or_default();
        notes.round = Some(notes.round.map_or(at, |round| round.max(at)));
        self.change_zone(zone, |info| {
            let later = info.last_eviction_round.is_none_or(|last| last < at);
            if later {
                info.last_eviction_round = Some(at);
            }
            later
        })
    }

    /// Records that the API server cut short the round under way in `zone` (it throttled or dropped
    /// evictions): what the round left is tried again at `at`, not `evictPeriod` after the round
    /// started. A retry already asked for and not yet made stays if it is sooner. Returns whether the
    /// zone changed.
    pub fn note_round_cut_short(&mut self, zone: &str, at: Timestamp) -> bool {
        let mut retry = None;
        let changed = self.change_zone(zone, |info| {
            let pending = info
                .round_retry
                .filter(|retry| info.last_eviction_round.is_none_or(|last| *retry > last));
            let next = pending.map_or(at, |pending| pending.min(at));
            retry = Some(next);
            let changed = info.round_retry != Some(next);
            info.round_retry = Some(next);
            changed
        });
        if let Some(retry) = retry {
            self.local_notes.entry(zone.to_owned()).or_default().retry = Some(retry);
        }
        changed
    }

    /// The last eviction round this process started in `zone`, if any.
    pub fn local_round(&self, zone: &str) -> Option<Timestamp> {
        self.local_notes.get(zone).and_then(|notes| notes.round)
    }

    /// Records that this process started `zone`'s `auto` drain for a close, so that the zone drains
    /// from now on in every snapshot (and for the closed-zone taint) before the status shows it.
    /// Returns whether the zone changed.
    pub fn note_drain_start(&mut self, zone: &str, start: DrainStart) -> bool {
        let notes = self.local_notes.entry(zone.to_owned()).or_default();
        notes.drain = Some(start);
        self.change_zone(zone, |info| {
            let new = info
                .drain_started
                .is_none_or(|known| known.close != start.close);
            if new {
                info.drain_started = Some(start);
            }
            new
        })
    }

    /// A pod this process evicted went, `took` after the eviction was accepted: what the drain
    /// estimate of its zone assumes of the next ones, once it has seen a few.
    pub(super) fn note_termination(
        &mut self,
        pod: &crate::cluster::PodInfo,
        took: jiff::SignedDuration,
    ) {
        let Some(zone) = pod
            .node_name
            .as_ref()
            .and_then(|node| self.node(node))
            .and_then(|node| node.revocable_zone.clone())
        else {
            return;
        };
        self.terminations.entry(zone).or_default().record(took);
    }

    /// How long evicted pods of `zone` typically took to go (the 90th percentile of the last few),
    /// once this process has seen enough of them.
    pub fn observed_termination(&self, zone: &str) -> Option<jiff::SignedDuration> {
        self.terminations.get(zone).and_then(Terminations::typical)
    }

    /// Changes the cached zone in place when `change` says it changed something.
    fn change_zone(&mut self, zone: &str, change: impl FnOnce(&mut ZoneInfo) -> bool) -> bool {
        let Some(current) = self.zones.get(&zone.to_owned()) else {
            return false;
        };
        let mut updated = (**current).clone();
        if !change(&mut updated) {
            return false;
        }
        // Not `apply_zone`: this is the local note itself, not the status confirming it.
        self.zones
            .insert(&mut self.generation, zone.to_owned(), updated);
        true
    }
}
