//! What this process started and the watches have not confirmed yet: pods it evicted that have not
//! terminated, and eviction rounds its zones' status does not show. Both count in every snapshot, so
//! that no pod is evicted twice and `evictPeriod` holds before the API server echoes the change back.

use std::time::Duration;

use jiff::Timestamp;

use super::ClusterCache;
use crate::cluster::ObjectKey;

#[derive(Clone, Debug)]
pub(super) struct InFlight {
    pub(super) uid: String,
    pub(super) since: Timestamp,
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
            self.evicting.remove(key);
            if let Some(current) = self.pods.get(key) {
                let pod = (**current).clone();
                self.apply_pod(pod, now);
            }
        }
        expired
    }

    pub fn evicting_count(&self) -> usize {
        self.evicting.len()
    }

    /// Records that this process started an eviction round in `zone` at `at`, so that `evictPeriod`
    /// holds before its status write comes back through the watch, and if that write failed. A later
    /// round known from the status wins. Returns whether the zone's last round changed.
    pub fn note_eviction_round(&mut self, zone: &str, at: Timestamp) -> bool {
        let local = self.local_rounds.entry(zone.to_owned()).or_insert(at);
        *local = (*local).max(at);
        let Some(current) = self.zones.get(&zone.to_owned()) else {
            return false;
        };
        if current.last_eviction_round.is_some_and(|last| last >= at) {
            return false;
        }
        let mut updated = (**current).clone();
        updated.last_eviction_round = Some(at);
        // Not `apply_zone`: this is the local note itself, not the status confirming it.
        self.zones
            .insert(&mut self.generation, zone.to_owned(), updated);
        true
    }

    /// The last eviction round this process started in `zone`, if any.
    pub fn local_round(&self, zone: &str) -> Option<Timestamp> {
        self.local_rounds.get(zone).copied()
    }
}
