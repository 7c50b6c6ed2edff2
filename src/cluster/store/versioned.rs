//! A map that remembers, per entry, the generation at which it last changed, so that a snapshot can copy
//! only what changed since it was taken (the idea behind kube-scheduler's generation-ordered node list).
//!
//! Values are held behind `Arc`: a snapshot shares unchanged values with the cache, and the cache's next
//! change to a shared value copies it once (`Arc::make_mut`), leaving the snapshot's version intact.
//! Aggregates keep that copy shallow (their pods are a [`PodMap`](crate::cluster::PodMap), which shares its
//! tree), since the snapshot update frees every old version the cache copied.

use std::{
    borrow::Borrow,
    collections::{BTreeMap, hash_map::Entry},
    hash::Hash,
    sync::Arc,
};

use crate::cluster::{
    store::pile::Pile,
    store::snapshot_map::{Reshape, SnapshotMap},
};

/// Keys are names of cluster objects, hashed on every event and every snapshot update: foldhash rather
/// than SipHash, seeded per process as std's maps are.
type HashMap<K, V> = foldhash::HashMap<K, V>;

/// A value built up from parts (a node's pods, a job's pods) that disappears when it has none left.
pub(crate) trait Aggregate: Default + Clone {
    fn is_empty(&self) -> bool;
}

#[derive(Debug)]
pub(crate) struct Versioned<K, V> {
    entries: HashMap<K, Slot<V>>,
    /// Generation of every entry's last change, including removals not yet pruned.
    changes: BTreeMap<u64, K>,
    /// Removals by generation, so that pruning never scans live entries.
    tombstones: BTreeMap<u64, K>,
    live: usize,
    /// Slot numbers freed by pruning, for new keys to take.
    free_slots: Vec<usize>,
    /// Slot numbers handed out so far.
    slots: usize,
    /// The snapshot's copy of this map while the snapshot is lent back to the cache between cycles
    /// (see [`Self::lend`]).
    lent: Option<Lent<K, V>>,
    /// What a lent map holds, once lent, in place of each version the cache changed since: one shared
    /// empty value (created at the first lending).
    stand_in: Option<Arc<V>>,
}

/// A snapshot's copy of a [`Versioned`] map, lent back to it.
#[derive(Debug)]
struct Lent<K, V> {
    map: SnapshotMap<K, V>,
    /// The generation the map was up to date with when lent.
    generation: u64,
}

#[derive(Debug)]
struct Slot<V> {
    generation: u64,
    value: Option<Arc<V>>,
    /// A number for the key, unique among the keys held (tombstones included): a [`SnapshotMap`] finds
    /// the key's entry by it. Reused only once the key is pruned, that is once the snapshot saw it go.
    slot: usize,
}

impl<K, V> Default for Versioned<K, V> {
    fn default() -> Self {
        Versioned {
            entries: HashMap::default(),
            changes: BTreeMap::new(),
            tombstones: BTreeMap::new(),
            live: 0,
            free_slots: Vec::new(),
            slots: 0,
            lent: None,
            stand_in: None,
        }
    }
}

impl<K: Clone + Eq + Hash + Ord, V: Clone> Versioned<K, V> {
    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&Arc<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.get(key).and_then(|slot| slot.value.as_ref())
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Removals remembered for snapshots that have not seen them yet (until [`Self::prune`]).
    pub(crate) fn removals(&self) -> usize {
        self.tombstones.len()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &Arc<V>)> {
        self.entries
            .iter()
            .filter_map(|(k, slot)| slot.value.as_ref().map(|v| (k, v)))
    }

    pub(crate) fn insert(&mut self, generation: &mut u64, key: K, value: V) {
        self.insert_shared(generation, key, Arc::new(value));
    }

    /// [`insert`](Self::insert), unless `key` holds an equal value already: a relist reads every
    /// object again, and one that did not change must not count as a change for the snapshot to copy.
    pub(crate) fn insert_if_changed(&mut self, generation: &mut u64, key: K, value: V)
    where
        V: PartialEq,
    {
        if self.get(&key).is_none_or(|held| **held != value) {
            self.insert(generation, key, value);
        }
    }

    pub(crate) fn insert_shared(&mut self, generation: &mut u64, key: K, value: Arc<V>) {
        self.set(generation, key, Some(value));
    }

    /// Changes an entry in place (creating it from `V::default()` if absent). If `f` leaves the entry
    /// empty, it is removed, so that empty aggregates do not linger.
    pub(crate) fn update<R>(
        &mut self,
        generation: &mut u64,
        key: &K,
        f: impl FnOnce(&mut V) -> R,
    ) -> R
    where
        V: Aggregate,
    {
        // Taking the value out of its slot leaves this map's reference the only one unless a snapshot
        // shares it, so `make_mut` copies exactly when a snapshot still needs the old version.
        // A lent map lets go of its version first, so that the snapshot's copy no longer forces one.
        let mut value = self
            .entries
            .get_mut(key)
            .and_then(|slot| {
                vacate(&mut self.lent, self.stand_in.as_ref(), slot.slot);
                slot.value.take()
            })
            .unwrap_or_default();
        let result = f(Arc::make_mut(&mut value));
        let value = (!value.is_empty()).then_some(value);
        self.set(generation, key.clone(), value);
        result
    }

    pub(crate) fn remove(&mut self, generation: &mut u64, key: &K) -> Option<Arc<V>> {
        let previous = self.get(key).cloned();
        if previous.is_some() {
            self.set(generation, key.clone(), None);
        }
        previous
    }

    fn set(&mut self, generation: &mut u64, key: K, value: Option<Arc<V>>) {
        *generation += 1;
        let now = *generation;
        let is_live = value.is_some();
        // The change log and the tombstones hold the entry's own key, not the caller's equal copy: the
        // snapshot update looks each change up by it, and the same allocation compares equal at its
        // address, where an equal copy compares its text.
        let key = match self.entries.entry(key) {
            Entry::Occupied(occupied) => {
                let key = occupied.key().clone();
                let slot = occupied.into_mut();
                vacate(&mut self.lent, self.stand_in.as_ref(), slot.slot);
                self.changes.remove(&slot.generation);
                let was_live = self.tombstones.remove(&slot.generation).is_none();
                match (was_live, is_live) {
                    (true, false) => self.live -= 1,
                    (false, true) => self.live += 1,
                    _ => {}
                }
                slot.generation = now;
                slot.value = value;
                key
            }
            Entry::Vacant(vacant) => {
                if !is_live {
                    return;
                }
                self.live += 1;
                let slot = self.free_slots.pop().unwrap_or_else(|| {
                    self.slots += 1;
                    self.slots - 1
                });
                let key = vacant.key().clone();
                vacant.insert(Slot {
                    generation: now,
                    value,
                    slot,
                });
                key
            }
        };
        if !is_live {
            self.tombstones.insert(now, key.clone());
        }
        self.changes.insert(now, key);
    }

    /// Brings `target` up to date with every change made after generation `since`; returns how many
    /// entries it copied or removed. The versions `target` let go of go to `retired`, for the caller
    /// to free when it suits it (they may be the last copies of whole aggregates).
    pub(crate) fn sync_into_retiring(
        &self,
        since: u64,
        target: &mut BTreeMap<K, Arc<V>>,
        retired: &mut Pile<Arc<V>>,
    ) -> usize {
        let mut touched = 0;
        for (_, key) in self.changes.range(since + 1..) {
            touched += 1;
            let previous = match (self.get(key), target.get_mut(key)) {
                // In place: no key to clone (a node's name would be an allocation).
                (Some(value), Some(slot)) => Some(std::mem::replace(slot, Arc::clone(value))),
                (Some(value), None) => target.insert(key.clone(), Arc::clone(value)),
                (None, _) => target.remove(key),
            };
            retired.extend(previous);
        }
        touched
    }

    /// [`Self::sync_into_retiring`] for small values: what `target` lets go of is freed at once.
    pub(crate) fn sync_into(&self, since: u64, target: &mut BTreeMap<K, Arc<V>>) -> usize {
        self.sync_into_retiring(since, target, &mut Pile::default())
    }

    /// [`sync_into`](Self::sync_into) for a [`SnapshotMap`] of this map's entries: changed entries are
    /// found by slot, and keys that came or went are merged in at once. The stand-ins of a map that was
    /// lent are dropped, not retired: they are no versions of anything.
    pub(crate) fn sync_into_map(
        &self,
        since: u64,
        target: &mut SnapshotMap<K, V>,
        retired: &mut Pile<Arc<V>>,
    ) -> usize {
        let mut touched = 0;
        let mut reshape = Reshape::replacing(self.stand_in.clone());
        for (_, key) in self.changes.range(since + 1..) {
            touched += 1;
            // Every change names an entry: pruning forgets both together.
            let Some(slot) = self.entries.get(key) else {
                continue;
            };
            match &slot.value {
                Some(value) => {
                    target.set(&mut reshape, slot.slot, || key.clone(), Arc::clone(value))
                }
                None => target.remove(&mut reshape, slot.slot),
            }
        }
        retired.append(target.reshape(reshape));
        touched
    }

    /// Every live entry as a [`SnapshotMap`].
    pub(crate) fn copy_all_map(&self) -> SnapshotMap<K, V> {
        SnapshotMap::build(self.entries.iter().filter_map(|(key, slot)| {
            let value = slot.value.as_ref()?;
            Some((key.clone(), Arc::clone(value), slot.slot))
        }))
    }

    /// Takes `map`, a snapshot's copy of this map as of `generation`, until [`Self::reclaim`]. Meanwhile
    /// each change lets go of the map's version of its entry before changing it, so the cache changes
    /// its values in place where a snapshot holding them would make it copy each one (and the update
    /// free the copies). Returns a map lent before and not reclaimed.
    pub(crate) fn lend(
        &mut self,
        map: SnapshotMap<K, V>,
        generation: u64,
    ) -> Option<SnapshotMap<K, V>>
    where
        V: Aggregate,
    {
        self.stand_in.get_or_insert_with(Arc::default);
        let previous = self.lent.replace(Lent { map, generation });
        previous.map(|lent| lent.map)
    }

    /// The map lent at `generation`, back, with stand-ins where the cache changed entries since:
    /// [`Self::sync_into_map`] from `generation` replaces every one of them.
    pub(crate) fn reclaim(&mut self, generation: u64) -> Option<SnapshotMap<K, V>> {
        if self.lent.as_ref()?.generation != generation {
            return None;
        }
        self.lent.take().map(|lent| lent.map)
    }

    /// Every live entry, for a snapshot that cannot be brought up to date incrementally.
    pub(crate) fn copy_all(&self) -> BTreeMap<K, Arc<V>> {
        self.iter()
            .map(|(k, v)| (k.clone(), Arc::clone(v)))
            .collect()
    }

    /// Forgets removals at or before `through`; snapshots older than that must be rebuilt in full. A
    /// lent map older than that is dropped: its snapshot is rebuilt, and its slots may be reused.
    pub(crate) fn prune(&mut self, through: u64) {
        if self
            .lent
            .as_ref()
            .is_some_and(|lent| lent.generation < through)
        {
            self.lent = None;
        }
        while let Some(entry) = self.tombstones.first_entry() {
            if *entry.key() > through {
                break;
            }
            let (generation, key) = entry.remove_entry();
            self.changes.remove(&generation);
            if let Some(slot) = self.entries.remove(&key) {
                self.free_slots.push(slot.slot);
            }
        }
    }
}

/// Makes a lent map let go of its version of the entry in `slot`, if it still holds one.
#[inline]
fn vacate<K, V>(lent: &mut Option<Lent<K, V>>, stand_in: Option<&Arc<V>>, slot: usize) {
    if let (Some(lent), Some(stand_in)) = (lent, stand_in) {
        lent.map.vacate(slot, stand_in);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Aggregate for i32 {
        fn is_empty(&self) -> bool {
            *self == 0
        }
    }

    impl Aggregate for Vec<u8> {
        fn is_empty(&self) -> bool {
            Vec::is_empty(self)
        }
    }

    #[test]
    fn sync_copies_only_changes_and_removals() {
        let mut generation = 0;
        let mut map: Versioned<&str, i32> = Versioned::default();
        map.insert(&mut generation, "a", 1);
        map.insert(&mut generation, "b", 2);
        let mut target = map.copy_all();
        let mark = generation;

        map.update(&mut generation, &"a", |v| *v = 10);
        map.remove(&mut generation, &"b");
        map.insert(&mut generation, "c", 3);
        let mut retired = Pile::default();
        assert_eq!(map.sync_into_retiring(mark, &mut target, &mut retired), 3);
        assert_eq!(
            retired.iter().cloned().collect::<Vec<_>>(),
            [Arc::new(1), Arc::new(2)],
            "the versions replaced and removed"
        );
        assert_eq!(
            target,
            BTreeMap::from([("a", Arc::new(10)), ("c", Arc::new(3))])
        );
        assert_eq!(map.len(), 2);
    }

    #[test]
    fn an_equal_value_inserted_again_is_no_change() {
        let mut generation = 0;
        let mut map: Versioned<&str, i32> = Versioned::default();
        map.insert_if_changed(&mut generation, "a", 1);
        let mut target = map.copy_all();
        let mark = generation;
        map.insert_if_changed(&mut generation, "a", 1);
        assert_eq!(generation, mark, "nothing logged");
        map.insert_if_changed(&mut generation, "a", 2);
        map.insert_if_changed(&mut generation, "b", 1);
        let mut retired = Pile::default();
        assert_eq!(map.sync_into_retiring(mark, &mut target, &mut retired), 2);
        assert_eq!(
            target,
            BTreeMap::from([("a", Arc::new(2)), ("b", Arc::new(1))])
        );
    }

    #[test]
    fn changes_name_the_entry_by_its_own_key() {
        let mut generation = 0;
        let mut map: Versioned<Arc<str>, i32> = Versioned::default();
        let first: Arc<str> = Arc::from("node-a");
        map.insert(&mut generation, Arc::clone(&first), 1);
        // An equal key in another allocation, as a pod's copy of its node's name.
        map.insert(&mut generation, Arc::from("node-a"), 2);
        map.remove(&mut generation, &Arc::from("node-a"));
        let logged: Vec<&Arc<str>> = map
            .changes
            .values()
            .chain(map.tombstones.values())
            .collect();
        assert_eq!(logged.len(), 2);
        assert!(
            logged.iter().all(|key| Arc::ptr_eq(key, &first)),
            "the log holds the entry's key, found again by address"
        );
    }

    #[test]
    fn update_to_default_removes_and_counts_stay_right() {
        let mut generation = 0;
        let mut map: Versioned<&str, i32> = Versioned::default();
        map.update(&mut generation, &"a", |v| *v = 5);
        assert_eq!(map.len(), 1);
        map.update(&mut generation, &"a", |v| *v = 0);
        assert_eq!(map.len(), 0);
        assert!(map.get(&"a").is_none());
        map.update(&mut generation, &"a", |v| *v = 0);
        assert_eq!(map.len(), 0);
        map.update(&mut generation, &"a", |v| *v = 7);
        assert_eq!(map.len(), 1);
        map.prune(generation);
        assert_eq!(map.copy_all(), BTreeMap::from([("a", Arc::new(7))]));
    }

    #[test]
    fn unchanged_values_are_shared_not_copied() {
        let mut generation = 0;
        let mut map: Versioned<&str, Vec<u8>> = Versioned::default();
        map.insert(&mut generation, "a", vec![1]);
        map.insert(&mut generation, "b", vec![2]);
        let snapshot = map.copy_all();
        map.update(&mut generation, &"a", |v| v.push(9));
        assert!(Arc::ptr_eq(&snapshot[&"b"], map.get(&"b").unwrap()));
        assert_eq!(*snapshot[&"a"], vec![1], "the snapshot keeps its version");
    }
}
