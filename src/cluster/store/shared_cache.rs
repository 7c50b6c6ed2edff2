//! The cache as shared between the watch tasks that feed it and the loops that read it (planning
//! cycles, the admission webhook), with the one rule that matters: nobody plans from a cache whose
//! initial lists are incomplete.

use std::{
    collections::BTreeMap,
    sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard},
};

use tokio::sync::watch;

use crate::cluster::{ClusterCache, ObjectKind};

#[derive(Clone)]
pub struct SharedCache {
    inner: Arc<RwLock<ClusterCache>>,
    /// Per required kind: has its latest (re)list completed?
    synced: Arc<watch::Sender<BTreeMap<ObjectKind, bool>>>,
    /// Per required kind: has any list completed? Never reset: during a relist the watcher keeps the
    /// previous objects until the new list is complete, so the cache stays as usable as between
    /// events. Readers that only need "filled once" (admission) use this instead of `synced`.
    initially_synced: Arc<watch::Sender<BTreeMap<ObjectKind, bool>>>,
    /// Bumped on every change to zones or policies, so that loops can recompute their timers.
    config_changes: Arc<watch::Sender<u64>>,
    /// Bumped when a node's zone label or taints change (closed-zone taints depend on them).
    node_changes: Arc<watch::Sender<u64>>,
}

impl SharedCache {
    /// A cache that counts as synced once every kind in `required` has completed its initial list.
    pub fn new(required: &[ObjectKind]) -> Self {
        let synced: BTreeMap<_, _> = required.iter().map(|kind| (*kind, false)).collect();
        SharedCache {
            inner: Arc::new(RwLock::new(ClusterCache::new())),
            initially_synced: Arc::new(watch::Sender::new(synced.clone())),
            synced: Arc::new(watch::Sender::new(synced)),
            config_changes: Arc::new(watch::Sender::new(0)),
            node_changes: Arc::new(watch::Sender::new(0)),
        }
    }

    /// Wraps an already filled cache (a dump, a test) as fully synced.
    pub fn from_cache(cache: ClusterCache) -> Self {
        let shared = SharedCache::new(&[]);
        *shared.write() = cache;
        shared
    }

    // Lock poisoning only follows a panic in another holder; the cache itself is still consistent at
    // every await-free step, so we keep serving rather than cascading the panic.
    pub fn read(&self) -> RwLockReadGuard<'_, ClusterCache> {
        self.inner
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn write(&self) -> RwLockWriteGuard<'_, ClusterCache> {
        self.inner
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn set_synced(&self, kind: ObjectKind, synced: bool) {
        let update = |map: &mut BTreeMap<ObjectKind, bool>| match map.get_mut(&kind) {
            Some(state) if *state != synced => {
                *state = synced;
                true
            }
            _ => false,
        };
        self.synced.send_if_modified(update);
        if synced {
            self.initially_synced.send_if_modified(update);
        }
    }

    /// Whether one kind has completed its latest (re)list (kinds not required count as synced).
    pub fn is_kind_synced(&self, kind: ObjectKind) -> bool {
        self.synced.borrow().get(&kind).copied().unwrap_or(true)
    }

    pub fn is_synced(&self) -> bool {
        all_synced(&self.synced.borrow())
    }

    /// Required kinds whose list has not completed, for readiness messages.
    pub fn unsynced(&self) -> Vec<ObjectKind> {
        not_synced(&self.synced.borrow())
    }

    /// Waits until every required kind has completed its initial list.
    pub async fn wait_synced(&self) {
        wait_all_synced(&self.synced).await;
    }

    /// Whether every required kind has completed a list at least once (a relist since does not
    /// count against it).
    pub fn is_initially_synced(&self) -> bool {
        all_synced(&self.initially_synced.borrow())
    }

    /// Required kinds that have never completed a list, for readiness messages.
    pub fn never_synced(&self) -> Vec<ObjectKind> {
        not_synced(&self.initially_synced.borrow())
    }

    /// Waits until every required kind has completed a list at least once.
    pub async fn wait_initially_synced(&self) {
        wait_all_synced(&self.initially_synced).await;
    }

    pub fn notify_config_change(&self) {
        self.config_changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A receiver that changes whenever a zone or policy does.
    pub fn config_changes(&self) -> watch::Receiver<u64> {
        self.config_changes.subscribe()
    }

    pub fn notify_node_change(&self) {
        self.node_changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// A receiver that changes whenever a node's zone label or taints do.
    pub fn node_changes(&self) -> watch::Receiver<u64> {
        self.node_changes.subscribe()
    }
}

fn all_synced(flags: &BTreeMap<ObjectKind, bool>) -> bool {
    flags.values().all(|synced| *synced)
}

fn not_synced(flags: &BTreeMap<ObjectKind, bool>) -> Vec<ObjectKind> {
    flags
        .iter()
        .filter(|(_, synced)| !**synced)
        .map(|(kind, _)| *kind)
        .collect()
}

async fn wait_all_synced(flags: &watch::Sender<BTreeMap<ObjectKind, bool>>) {
    // The sender lives as long as the cache, so this cannot fail while we wait.
    let _ = flags.subscribe().wait_for(all_synced).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn synced_only_when_every_required_kind_listed() {
        let shared = SharedCache::new(&[ObjectKind::Node, ObjectKind::Pod]);
        assert!(!shared.is_synced());
        shared.set_synced(ObjectKind::Node, true);
        assert_eq!(shared.unsynced(), vec![ObjectKind::Pod]);
        let waiter = {
            let shared = shared.clone();
            tokio::spawn(async move { shared.wait_synced().await })
        };
        shared.set_synced(ObjectKind::Pod, true);
        waiter.await.unwrap();
        assert!(shared.is_synced());
        // A relist marks the kind unsynced again.
        shared.set_synced(ObjectKind::Pod, false);
        assert!(!shared.is_synced());
    }

    #[tokio::test]
    async fn initially_synced_survives_a_relist() {
        let shared = SharedCache::new(&[ObjectKind::Node, ObjectKind::Pod]);
        shared.set_synced(ObjectKind::Node, true);
        // A kind that starts its list before ever completing one is still waited for.
        shared.set_synced(ObjectKind::Pod, false);
        assert!(!shared.is_initially_synced());
        assert_eq!(shared.never_synced(), vec![ObjectKind::Pod]);
        let waiter = {
            let shared = shared.clone();
            tokio::spawn(async move { shared.wait_initially_synced().await })
        };
        shared.set_synced(ObjectKind::Pod, true);
        waiter.await.unwrap();
        shared.set_synced(ObjectKind::Pod, false);
        assert!(!shared.is_synced());
        assert!(shared.is_initially_synced());
        assert!(shared.never_synced().is_empty());
    }
}
