//! A pod's labels in the cache. A `BTreeMap<String, String>` allocates a 500-byte node for even one
//! label; with 150,000 pods that alone would be a sixth of the cache. Pods' labels are read, never edited,
//! so a sorted slice does: one allocation for the pairs, binary search. The replicas of a workload
//! carry the same labels (a Deployment's pods differ only in name), so the cache interns whole sets
//! and, within them, the keys and values.

use std::{collections::BTreeMap, sync::Arc};

use crate::cluster::{
    model::keys::{Interner, Name, Shared},
    rules::matching::Labels,
};

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PodLabels(Arc<[(Name, Name)]>);

impl Default for PodLabels {
    fn default() -> Self {
        PodLabels(Arc::from([]))
    }
}

impl PodLabels {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .ok()
            .map(|i| self.0[i].1.as_str())
    }

    /// In key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Shares this set with the pods that carry the same one; a set seen for the first time shares
    /// its keys and values with other sets.
    pub fn intern(&mut self, sets: &mut Interner<PodLabels>, names: &mut Interner) {
        sets.intern_new(self, |fresh| {
            // Only this pod holds a set seen for the first time, so it can still be changed.
            if let Some(pairs) = Arc::get_mut(&mut fresh.0) {
                for (key, value) in pairs {
                    names.intern(key);
                    names.intern(value);
                }
            }
        });
    }
}

impl Shared for PodLabels {
    fn holders(&self) -> usize {
        Arc::strong_count(&self.0)
    }

    fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Answers about label sets, remembered per set by identity rather than content: the cache interns
/// sets, so the replicas of a workload hold one allocation and ask once, at the cost of a pointer's
/// hash. Each entry holds its set, so that the allocation outlives the entry and its address cannot be
/// another set's while remembered; equal sets that were not interned are merely asked about apart.
pub(crate) struct PerLabelSet<T> {
    known: foldhash::HashMap<usize, (PodLabels, T)>,
}

impl<T> Default for PerLabelSet<T> {
    fn default() -> Self {
        PerLabelSet {
            known: foldhash::HashMap::default(),
        }
    }
}

impl<T: Copy> PerLabelSet<T> {
    /// The answer remembered for `labels`, else `answer()`, remembered.
    pub(crate) fn get_or(&mut self, labels: &PodLabels, answer: impl FnOnce() -> T) -> T {
        // A set nothing else holds (never interned) cannot be presented again: not worth an entry.
        if labels.holders() == 1 {
            return answer();
        }
        let address = Arc::as_ptr(&labels.0).cast::<u8>().addr();
        if let Some((_, known)) = self.known.get(&address) {
            return *known;
        }
        let found = answer();
        self.known.insert(address, (labels.clone(), found));
        found
    }
}

impl From<BTreeMap<String, String>> for PodLabels {
    fn from(map: BTreeMap<String, String>) -> Self {
        // A BTreeMap iterates in key order: the slice is sorted, as `get` needs.
        PodLabels(
            map.into_iter()
                .map(|(k, v)| (Name::from(k), Name::from(v)))
                .collect(),
        )
    }
}

impl Labels for PodLabels {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

impl<'a> IntoIterator for &'a PodLabels {
    type Item = (&'a str, &'a str);
    type IntoIter = Box<dyn Iterator<Item = (&'a str, &'a str)> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> PodLabels {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>()
            .into()
    }

    #[test]
    fn lookups_and_order_match_the_map() {
        let map: BTreeMap<String, String> = [("tier", "front"), ("app", "web"), ("z", "")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let labels = PodLabels::from(map.clone());
        for (k, v) in &map {
            assert_eq!(labels.get(k), Some(v.as_str()));
        }
        assert_eq!(labels.get("missing"), None);
        assert_eq!(labels.get(""), None);
        let keys: Vec<&str> = labels.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["app", "tier", "z"]);
        assert_eq!(labels.len(), 3);
        assert!(PodLabels::default().is_empty());
    }

    #[test]
    fn equal_sets_are_shared_and_new_sets_share_their_strings() {
        let (mut sets, mut names) = (Interner::default(), Interner::default());
        let mut a = labels(&[("app", "web"), ("hash", "1")]);
        let mut b = labels(&[("app", "web"), ("hash", "1")]);
        let mut c = labels(&[("app", "web"), ("hash", "2")]);
        for set in [&mut a, &mut b, &mut c] {
            set.intern(&mut sets, &mut names);
        }
        assert!(a.same(&b));
        assert!(!a.same(&c));
        assert!(a.0[0].0.ptr_eq(&c.0[0].0), "keys shared between sets");
        assert!(a.0[0].1.ptr_eq(&c.0[0].1), "equal values shared too");
        assert_eq!(c.get("hash"), Some("2"));
    }
}
