//! A pod's labels in the cache. A `BTreeMap<String, String>` allocates a 500-byte node for even one
//! label; with 150,000 pods that alone was a sixth of the cache. Pods' labels are read, never edited,
//! so a sorted boxed slice does: one allocation for the pairs, exact-size strings, binary search.

use std::collections::BTreeMap;

use super::matching::Labels;

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PodLabels(Box<[(Box<str>, Box<str>)]>);

impl PodLabels {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*self.0[i].1)
    }

    /// In key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<BTreeMap<String, String>> for PodLabels {
    fn from(map: BTreeMap<String, String>) -> Self {
        // A BTreeMap iterates in key order: the slice is sorted, as `get` needs.
        PodLabels(
            map.into_iter()
                .map(|(k, v)| (k.into_boxed_str(), v.into_boxed_str()))
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
}
