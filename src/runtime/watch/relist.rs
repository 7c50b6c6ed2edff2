//! The bookkeeping of a list in progress: which objects it has read, so that its end can remove what
//! the cache still holds but the list no longer has.
//!
//! A first list into a kind the cache holds nothing of needs no such record: nothing can have
//! vanished. At 150,000 pods the set of read keys is about 8 MB and more while it grows, all of it
//! on top of the cache being filled, so the first list keeps only a count (the listing peak in
//! docs/performance.md).

use std::collections::HashSet;

use crate::cluster::ObjectKey;

/// What the list in progress has read; idle between lists.
#[derive(Debug, Default)]
pub struct Relist {
    listing: Option<Listing>,
}

#[derive(Debug)]
struct Listing {
    /// Keys read so far, kept only when the cache held objects of the kind as the list began.
    read: Option<HashSet<ObjectKey>>,
    /// Objects read, for the log line: the same count either way.
    count: usize,
}

/// How a list ended.
#[derive(Debug)]
pub(crate) enum Finished {
    /// The kind was empty as the list began: everything the cache holds now came from this list.
    Fresh { count: usize },
    /// Whatever the cache holds that is not in `read` vanished while the watch was away.
    Relisted { read: HashSet<ObjectKey> },
}

impl Finished {
    /// Whether the list read `key` (every key of a fresh list was).
    pub(crate) fn read(&self, key: &ObjectKey) -> bool {
        match self {
            Finished::Fresh { .. } => true,
            Finished::Relisted { read } => read.contains(key),
        }
    }

    pub(crate) fn count(&self) -> usize {
        match self {
            Finished::Fresh { count } => *count,
            Finished::Relisted { read } => read.len(),
        }
    }
}

impl Relist {
    /// A list begins (again: a list that failed midway starts over). `cache_holds_kind` says
    /// whether the cache held any object of the kind at that moment.
    pub(crate) fn start(&mut self, cache_holds_kind: bool) {
        self.listing = Some(Listing {
            read: cache_holds_kind.then(HashSet::new),
            count: 0,
        });
    }

    /// The list read the object `key` names; the key is built only if it is kept. Outside a list
    /// (a watch event) this records nothing.
    pub(crate) fn read(&mut self, key: impl FnOnce() -> ObjectKey) {
        if let Some(listing) = &mut self.listing {
            listing.count += 1;
            if let Some(read) = &mut listing.read {
                read.insert(key());
            }
        }
    }

    /// `key` was deleted while the list was in progress (a watch-list's initial events): it is not
    /// part of the state the list ends in.
    pub(crate) fn deleted(&mut self, key: &ObjectKey) {
        if let Some(listing) = &mut self.listing {
            listing.count = listing.count.saturating_sub(1);
            if let Some(read) = &mut listing.read {
                read.remove(key);
            }
        }
    }

    /// The list is complete. `None` when no list was in progress: nothing may be removed then, as
    /// the cache has not been compared with a whole list.
    pub(crate) fn finish(&mut self) -> Option<Finished> {
        self.listing.take().map(|listing| match listing.read {
            Some(read) => Finished::Relisted { read },
            None => Finished::Fresh {
                count: listing.count,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("ns", name)
    }

    #[test]
    fn a_first_list_keeps_no_keys_and_counts_what_it_read() {
        let mut relist = Relist::default();
        relist.start(false);
        relist.read(|| key("a"));
        relist.read(|| key("b"));
        relist.deleted(&key("b"));
        let finished = relist.finish().expect("a list was in progress");
        assert!(
            matches!(finished, Finished::Fresh { count: 1 }),
            "{finished:?}"
        );
        assert!(finished.read(&key("anything")));
    }

    #[test]
    fn a_relist_over_a_filled_cache_knows_what_it_did_not_read() {
        let mut relist = Relist::default();
        relist.start(true);
        relist.read(|| key("a"));
        relist.read(|| key("b"));
        relist.deleted(&key("b"));
        let finished = relist.finish().expect("a list was in progress");
        assert!(finished.read(&key("a")));
        assert!(!finished.read(&key("b")), "deleted during the list");
        assert!(!finished.read(&key("c")), "never listed");
        assert_eq!(finished.count(), 1);
    }

    #[test]
    fn a_restarted_list_forgets_what_the_failed_one_read() {
        let mut relist = Relist::default();
        relist.start(false);
        relist.read(|| key("partial"));
        // The watch-list broke off: the paginated list starts over, over what it applied.
        relist.start(true);
        relist.read(|| key("a"));
        let finished = relist.finish().expect("a list was in progress");
        assert!(!finished.read(&key("partial")));
        assert!(finished.read(&key("a")));
    }

    #[test]
    fn watch_events_outside_a_list_record_nothing_and_finish_removes_nothing() {
        let mut relist = Relist::default();
        relist.read(|| key("a"));
        relist.deleted(&key("a"));
        assert!(relist.finish().is_none());
        relist.start(true);
        assert!(relist.finish().is_some());
        assert!(relist.finish().is_none(), "a finished list is idle again");
    }
}
