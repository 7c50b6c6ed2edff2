//! A snapshot's map of the cache's aggregates (nodes, jobs): in key order for the strategies that read
//! it, and addressed by the slot number the cache gave each key, so that an update replaces a changed
//! entry without searching for it.
//!
//! A sorted map searched once per changed entry costs a dozen key comparisons each (node names and job
//! keys, behind pointers); here a change costs one index. Only keys that appear or disappear touch the
//! key order, a list of slot numbers.

use std::{
    borrow::Borrow,
    fmt,
    hash::Hash,
    iter::FusedIterator,
    ops::{Bound, Index, RangeBounds},
    sync::Arc,
};

use crate::cluster::store::pile::Pile;

/// Entries in key order. Reads as the `BTreeMap<K, Arc<V>>` it replaces does.
#[derive(Clone)]
pub struct SnapshotMap<K, V> {
    /// By cache slot.
    slots: Vec<Option<(K, Arc<V>)>>,
    /// The occupied slots, in key order.
    order: Vec<usize>,
    /// The slot of each key. A binary search of `order` reaches each key through its slot, a dozen
    /// times per lookup: planning looks up a node or a job for every pod it weighs, and that search
    /// cost lowNodeUtilization about a tenth of its time. Maintained only for keys that come or go.
    index: foldhash::HashMap<K, usize>,
}

impl<K, V> Default for SnapshotMap<K, V> {
    fn default() -> Self {
        SnapshotMap {
            slots: Vec::new(),
            order: Vec::new(),
            index: foldhash::HashMap::default(),
        }
    }
}

impl<K, V> SnapshotMap<K, V> {
    #[inline]
    pub fn len(&self) -> usize {
        self.order.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    #[inline]
    pub fn get<Q>(&self, key: &Q) -> Option<&Arc<V>>
    where
        K: Borrow<Q> + Hash + Eq,
        Q: Hash + Eq + ?Sized,
    {
        let slot = *self.index.get(key)?;
        self.entry(slot).map(|(_, value)| value)
    }

    #[inline]
    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q> + Hash + Eq,
        Q: Hash + Eq + ?Sized,
    {
        self.index.contains_key(key)
    }

    /// Entries in key order.
    #[inline]
    pub fn iter(&self) -> Iter<'_, K, V> {
        Iter {
            slots: &self.slots,
            order: self.order.iter(),
        }
    }

    /// Entries whose keys lie in `range`, in key order (as `BTreeMap::range`, without its panics: a
    /// range that ends before it starts is empty).
    pub fn range<T, R>(&self, range: R) -> Iter<'_, K, V>
    where
        T: Ord + ?Sized,
        K: Borrow<T>,
        R: RangeBounds<T>,
    {
        let below = |bound: Bound<&T>, inclusive_end: bool| match bound {
            Bound::Included(key) if inclusive_end => self.count_while(|k| k <= key),
            Bound::Included(key) => self.count_while(|k| k < key),
            Bound::Excluded(key) if inclusive_end => self.count_while(|k| k < key),
            Bound::Excluded(key) => self.count_while(|k| k <= key),
            Bound::Unbounded if inclusive_end => self.order.len(),
            Bound::Unbounded => 0,
        };
        let start = below(range.start_bound(), false);
        let end = below(range.end_bound(), true).max(start);
        Iter {
            slots: &self.slots,
            order: self.order.get(start..end).unwrap_or_default().iter(),
        }
    }

    #[inline]
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + ExactSizeIterator {
        self.iter().map(|(key, _)| key)
    }

    #[inline]
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Arc<V>> + ExactSizeIterator {
        self.iter().map(|(_, value)| value)
    }

    /// Puts `stand_in` in place of the value in cache slot `slot`, if it has one: the map is lent back
    /// to the cache, which is about to change that entry and must find its own version unshared. The
    /// key stays, for the order; the next update replaces the stand-in.
    #[inline]
    pub(crate) fn vacate(&mut self, slot: usize, stand_in: &Arc<V>) {
        if let Some(Some((_, held))) = self.slots.get_mut(slot)
            && !Arc::ptr_eq(held, stand_in)
        {
            *held = Arc::clone(stand_in);
        }
    }

    #[inline]
    fn entry(&self, slot: usize) -> Option<&(K, Arc<V>)> {
        self.slots.get(slot)?.as_ref()
    }

    /// Where `key` is, or would go, in `order`.
    fn search<Q>(&self, key: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.order.binary_search_by(|&slot| match self.entry(slot) {
            Some((k, _)) => k.borrow().cmp(key),
            // Never so: `order` holds occupied slots only.
            None => std::cmp::Ordering::Less,
        })
    }

    /// How many keys, from the first, satisfy `below` (which must hold for a prefix of the keys).
    fn count_while<T: ?Sized>(&self, below: impl Fn(&T) -> bool) -> usize
    where
        K: Borrow<T>,
    {
        self.order
            .partition_point(|&slot| self.entry(slot).is_none_or(|(k, _)| below(k.borrow())))
    }
}

/// What an update changed beyond values in place: keys that appeared in, or went from, the cache
/// (they change the key order), and the versions the map let go of.
pub(crate) struct Reshape<V> {
    added: Vec<usize>,
    removed: Vec<usize>,
    retired: Pile<Arc<V>>,
    /// The value a lent map holds for entries changed while it was lent ([`SnapshotMap::vacate`]):
    /// replaced, it is dropped rather than retired.
    stand_in: Option<Arc<V>>,
}

impl<V> Default for Reshape<V> {
    fn default() -> Self {
        Self::replacing(None)
    }
}

impl<V> Reshape<V> {
    pub(crate) fn replacing(stand_in: Option<Arc<V>>) -> Self {
        Reshape {
            added: Vec::new(),
            removed: Vec::new(),
            retired: Pile::default(),
            stand_in,
        }
    }

    fn retire(&mut self, value: Arc<V>) {
        let stood_in = self
            .stand_in
            .as_ref()
            .is_some_and(|stand_in| Arc::ptr_eq(stand_in, &value));
        if !stood_in {
            self.retired.push(value);
        }
    }
}

impl<K: Ord + Hash + Clone, V> SnapshotMap<K, V> {
    /// A map of `entries` (key, value, cache slot), in any order. Keys and slots must be distinct.
    pub(crate) fn build(entries: impl IntoIterator<Item = (K, Arc<V>, usize)>) -> Self {
        // Sorted where the keys lie side by side, rather than through the slot table.
        let mut entries: Vec<_> = entries.into_iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut map = SnapshotMap {
            slots: Vec::new(),
            order: Vec::with_capacity(entries.len()),
            index: foldhash::HashMap::with_capacity_and_hasher(entries.len(), Default::default()),
        };
        for (key, value, slot) in entries {
            if map.slots.len() <= slot {
                map.slots.resize_with(slot + 1, || None);
            }
            if map.slots[slot].is_none() {
                map.order.push(slot);
            }
            map.index.insert(key.clone(), slot);
            map.slots[slot] = Some((key, value));
        }
        map
    }

    /// Sets the entry of cache slot `slot`, taking `key` only if the slot is new to the map (a key is an
    /// allocation to clone). A new key joins the key order at [`reshape`](Self::reshape).
    #[inline]
    pub(crate) fn set(
        &mut self,
        reshape: &mut Reshape<V>,
        slot: usize,
        key: impl FnOnce() -> K,
        value: Arc<V>,
    ) {
        if self.slots.len() <= slot {
            self.slots.resize_with(slot + 1, || None);
        }
        match &mut self.slots[slot] {
            // Keys of one slot are equal between updates from one cache (a slot is reused only once
            // the snapshot saw its key go), so only the value changes.
            Some((_, held)) => reshape.retire(std::mem::replace(held, value)),
            vacant => {
                let key = key();
                // A key already indexed under another slot comes only from a map misused across
                // caches: `reshape` takes that entry out, and the index points here already.
                self.index.insert(key.clone(), slot);
                *vacant = Some((key, value));
                reshape.added.push(slot);
            }
        }
    }

    /// Notes that the key in cache slot `slot` is gone; it leaves at [`reshape`](Self::reshape).
    #[inline]
    pub(crate) fn remove(&self, reshape: &mut Reshape<V>, slot: usize) {
        if self.entry(slot).is_some() {
            reshape.removed.push(slot);
        }
    }

    /// Brings the key order up to date with the keys noted added and removed, and takes out the
    /// removed entries. Each change is placed by a binary search, then the order is edited in place in
    /// one pass per kind: a new vector here would be a large allocation on every update. Returns the
    /// values this update replaced or removed, for the caller to free when it suits it.
    pub(crate) fn reshape(&mut self, mut reshape: Reshape<V>) -> Pile<Arc<V>> {
        let added = std::mem::take(&mut reshape.added);
        let removed = std::mem::take(&mut reshape.removed);
        if added.is_empty() && removed.is_empty() {
            return reshape.retired;
        }
        // Positions in the current order.
        let mut removals: Vec<usize> = Vec::with_capacity(removed.len());
        for &slot in &removed {
            let at = self.entry(slot).and_then(|(key, _)| self.search(key).ok());
            if let Some(at) = at.filter(|&at| self.order.get(at) == Some(&slot)) {
                removals.push(at);
            }
        }
        let mut inserts: Vec<(usize, usize)> = Vec::with_capacity(added.len());
        for slot in added {
            // Not in `order` yet, so the search says where it goes; a key found there already (under
            // another slot) can only come from a map misused across caches: the new entry replaces it.
            match self.entry(slot).map(|(key, _)| self.search(key)) {
                Some(Err(at)) => inserts.push((at, slot)),
                Some(Ok(at)) => {
                    inserts.push((at, slot));
                    if let Some(&old) = self.order.get(at)
                        && !removed.contains(&old)
                    {
                        removals.push(at);
                        if let Some((_, value)) = self.slots.get_mut(old).and_then(Option::take) {
                            reshape.retire(value);
                        }
                    }
                }
                None => {}
            }
        }
        removals.sort_unstable();
        removals.dedup();
        self.remove_positions(&removals);
        // Where each insertion goes once the removals are gone; several at one place in key order.
        for (at, _) in &mut inserts {
            *at -= removals.partition_point(|&r| r < *at);
        }
        let slots = &self.slots;
        let key = |slot: usize| slots.get(slot).and_then(Option::as_ref).map(|(k, _)| k);
        inserts.sort_unstable_by(|(a, x), (b, y)| a.cmp(b).then_with(|| key(*x).cmp(&key(*y))));
        self.insert_at_positions(&inserts);
        for slot in removed {
            if let Some((key, value)) = self.slots.get_mut(slot).and_then(Option::take) {
                if self.index.get(&key) == Some(&slot) {
                    self.index.remove(&key);
                }
                reshape.retire(value);
            }
        }
        reshape.retired
    }

    /// Removes the slots at `positions` (ascending, distinct) from the order, shifting the rest down.
    fn remove_positions(&mut self, positions: &[usize]) {
        let Some(&first) = positions.first() else {
            return;
        };
        let mut kept = first;
        let mut skip = positions.iter().peekable();
        for at in first..self.order.len() {
            if skip.next_if_eq(&&at).is_some() {
                continue;
            }
            self.order[kept] = self.order[at];
            kept += 1;
        }
        self.order.truncate(kept);
    }

    /// Inserts slots before the given positions of the order (ascending), from the back, so that each
    /// slot of the order moves once.
    fn insert_at_positions(&mut self, inserts: &[(usize, usize)]) {
        let old_len = self.order.len();
        self.order.resize(old_len + inserts.len(), 0);
        let mut unread = old_len;
        let mut write = self.order.len();
        for &(at, slot) in inserts.iter().rev() {
            let at = at.min(unread);
            let moved = unread - at;
            self.order.copy_within(at..unread, write - moved);
            write -= moved;
            unread = at;
            write -= 1;
            self.order[write] = slot;
        }
    }
}

/// The entries of a [`SnapshotMap`] in key order.
#[derive(Clone)]
pub struct Iter<'a, K, V> {
    slots: &'a [Option<(K, Arc<V>)>],
    order: std::slice::Iter<'a, usize>,
}

impl<'a, K, V> Iter<'a, K, V> {
    #[inline]
    fn entry(&self, slot: usize) -> Option<(&'a K, &'a Arc<V>)> {
        let slots: &'a [Option<(K, Arc<V>)>] = self.slots;
        slots.get(slot)?.as_ref().map(|(k, v)| (k, v))
    }
}

impl<'a, K, V> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a Arc<V>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        // `order` holds occupied slots only, so this skips nothing.
        loop {
            let slot = *self.order.next()?;
            if let Some(entry) = self.entry(slot) {
                return Some(entry);
            }
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.order.size_hint()
    }
}

impl<K, V> DoubleEndedIterator for Iter<'_, K, V> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        loop {
            let slot = *self.order.next_back()?;
            if let Some(entry) = self.entry(slot) {
                return Some(entry);
            }
        }
    }
}

impl<K, V> ExactSizeIterator for Iter<'_, K, V> {}

impl<K, V> FusedIterator for Iter<'_, K, V> {}

impl<'a, K, V> IntoIterator for &'a SnapshotMap<K, V> {
    type Item = (&'a K, &'a Arc<V>);
    type IntoIter = Iter<'a, K, V>;

    fn into_iter(self) -> Iter<'a, K, V> {
        self.iter()
    }
}

impl<K, V, Q> Index<&Q> for SnapshotMap<K, V>
where
    K: Borrow<Q> + Hash + Eq,
    Q: Hash + Eq + ?Sized,
{
    type Output = Arc<V>;

    /// Panics if the key is absent, as `BTreeMap`'s index does: for tests and known keys only.
    fn index(&self, key: &Q) -> &Arc<V> {
        self.get(key).expect("no entry found for key")
    }
}

/// Same keys and values in the same order; the cache's slot numbers are not content.
impl<K: PartialEq, V: PartialEq> PartialEq for SnapshotMap<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl<K: fmt::Debug, V: fmt::Debug> fmt::Debug for SnapshotMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    /// Rounds of changes to keys `0..160` in slots `0..160` of a fictitious cache: `Some(v)` sets,
    /// `None` removes. Rounds are small (the key order is edited) or large (it is rebuilt).
    fn changes() -> impl Strategy<Value = Vec<Vec<(u8, Option<u32>)>>> {
        let round = prop_oneof![
            prop::collection::vec((0u8..160, prop::option::of(0u32..100)), 0..12),
            prop::collection::vec((0u8..160, prop::option::of(0u32..100)), 60..200),
        ];
        prop::collection::vec(round, 0..12)
    }

    proptest! {
        #[test]
        fn reads_as_a_sorted_map_after_any_updates(rounds in changes()) {
            let mut map: SnapshotMap<u8, u32> = SnapshotMap::default();
            let mut model: BTreeMap<u8, Arc<u32>> = BTreeMap::new();
            for round in rounds {
                let mut reshape = Reshape::default();
                // One change per key and round, as a sync sees them.
                let latest: BTreeMap<u8, Option<u32>> = round.into_iter().collect();
                for (key, value) in latest {
                    let slot = usize::from(key);
                    match value {
                        Some(v) => {
                            let v = Arc::new(v);
                            map.set(&mut reshape, slot, || key, Arc::clone(&v));
                            model.insert(key, v);
                        }
                        None => {
                            map.remove(&mut reshape, slot);
                            model.remove(&key);
                        }
                    }
                }
                map.reshape(reshape);
                prop_assert_eq!(map.len(), model.len());
                prop_assert!(map.iter().eq(model.iter()));
                prop_assert!(map.iter().rev().eq(model.iter().rev()));
                prop_assert!(map.range(30u8..90).eq(model.range(30u8..90)));
                prop_assert!(map.range(..=40u8).eq(model.range(..=40u8)));
                prop_assert!(map.range((Bound::Excluded(50u8), Bound::Unbounded))
                    .eq(model.range((Bound::Excluded(50u8), Bound::Unbounded))));
                for key in 0u8..162 {
                    prop_assert_eq!(map.get(&key), model.get(&key));
                    prop_assert_eq!(map.contains_key(&key), model.contains_key(&key));
                }
            }
        }
    }

    #[test]
    fn a_slot_reused_by_another_key_answers_only_for_that_key() {
        let mut map = SnapshotMap::build([("a", Arc::new(1), 0)]);
        let mut reshape = Reshape::default();
        map.remove(&mut reshape, 0);
        map.reshape(reshape);
        let mut reshape = Reshape::default();
        map.set(&mut reshape, 0, || "b", Arc::new(2));
        map.reshape(reshape);
        assert_eq!(map.get("a"), None);
        assert!(!map.contains_key("a"));
        assert_eq!(map.get("b").map(|v| **v), Some(2));
    }

    #[test]
    fn a_clone_keeps_its_entries_while_the_original_changes() {
        let mut map = SnapshotMap::build([("b", Arc::new(2), 1), ("a", Arc::new(1), 0)]);
        let before = map.clone();
        let mut reshape = Reshape::default();
        map.set(&mut reshape, 1, || "b", Arc::new(20));
        map.remove(&mut reshape, 0);
        map.set(&mut reshape, 2, || "c", Arc::new(3));
        map.reshape(reshape);
        assert_eq!(
            before.iter().map(|(k, v)| (*k, **v)).collect::<Vec<_>>(),
            [("a", 1), ("b", 2)]
        );
        assert_eq!(
            map.iter().map(|(k, v)| (*k, **v)).collect::<Vec<_>>(),
            [("b", 20), ("c", 3)]
        );
        assert_eq!(map["c"], Arc::new(3));
    }

    #[test]
    fn equality_ignores_slots() {
        let a = SnapshotMap::build([("x", Arc::new(1), 0)]);
        let b = SnapshotMap::build([("x", Arc::new(1), 7)]);
        assert_eq!(a, b);
    }
}
