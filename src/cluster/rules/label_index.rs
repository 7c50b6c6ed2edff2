//! Many label selectors against many label sets without trying each selector on each set. Whatever a
//! selector matches carries a label the selector requires (a `matchLabels` pair, or one of the values
//! an `In` expression lists), so sets indexed by their pairs narrow a selector to the sets that carry
//! one ([`LabelIndex`]), and selectors indexed by a pair they require narrow a set to the selectors
//! worth trying ([`SelectorIndex`]). Both give candidates, in the order they were added: callers match
//! each candidate in full and so find what trying everything in order would find, first match included.
//! Trying everything costs sets × selectors; one namespace holding thousands of workloads, each with
//! its own selector, made that grow with the square of the namespace.

use std::{borrow::Cow, hash::BuildHasher};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

type Positions = foldhash::HashMap<u64, Vec<u32>>;

/// A label pair as the indexes key it: hashed, since every candidate is matched in full and a
/// collision only adds one to try.
fn pair(key: &str, value: &str) -> u64 {
    foldhash::quality::FixedState::default().hash_one((key, value))
}

/// A label `selector` requires of everything it matches, as the pairs any of which satisfies it.
enum Required<'a> {
    Pair(&'a str, &'a str),
    OneOf(&'a str, &'a [String]),
}

impl Required<'_> {
    fn pairs(&self) -> impl Iterator<Item = u64> + '_ {
        let (key, values): (&str, Box<dyn Iterator<Item = &str>>) = match self {
            Required::Pair(key, value) => (key, Box::new(std::iter::once(*value))),
            Required::OneOf(key, values) => (key, Box::new(values.iter().map(String::as_str))),
        };
        values.map(move |value| pair(key, value))
    }
}

/// What `selector` requires (`matchLabels`, `In`); `NotIn`, `Exists` and `DoesNotExist` require no
/// pair. A malformed `In` without values requires a pair no set has: it matches nothing, as
/// [`super::matching::selector_matches`] says.
fn requirements(selector: &LabelSelector) -> impl Iterator<Item = Required<'_>> {
    let pairs = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(key, value)| Required::Pair(key, value));
    let listed = selector
        .match_expressions
        .iter()
        .flatten()
        .filter(|e| e.operator == "In")
        .map(|e| Required::OneOf(&e.key, e.values.as_deref().unwrap_or_default()));
    pairs.chain(listed)
}

fn listed(index: &Positions, pair: u64) -> &[u32] {
    index.get(&pair).map_or(&[], Vec::as_slice)
}

/// Label sets by the pairs they carry: the sets a selector may match, without trying the others. One
/// sorted list of (pair, position), so that indexing a few sets costs one allocation.
#[derive(Default)]
pub(crate) struct LabelIndex {
    pairs: Vec<u64>,
    /// The position of each entry of `pairs`: in increasing order among equal pairs.
    positions: Vec<u32>,
}

impl LabelIndex {
    /// Indexes `sets`, the first at position 0.
    pub(crate) fn new<'a, S>(sets: impl IntoIterator<Item = S>) -> Self
    where
        S: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut entries: Vec<(u64, u32)> = Vec::new();
        for (position, labels) in (0u32..).zip(sets) {
            entries.extend(
                labels
                    .into_iter()
                    .map(|(key, value)| (pair(key, value), position)),
            );
        }
        entries.sort_unstable();
        let (pairs, positions) = entries.into_iter().unzip();
        LabelIndex { pairs, positions }
    }

    fn listed(&self, pair: u64) -> &[u32] {
        let start = self.pairs.partition_point(|&p| p < pair);
        let end = self.pairs.partition_point(|&p| p <= pair);
        self.positions.get(start..end).unwrap_or_default()
    }

    /// The positions, in increasing order, of the sets `selector` may match: those carrying its
    /// rarest requirement. `None` when it requires no pair, and any set may match.
    pub(crate) fn candidates(&self, selector: &LabelSelector) -> Option<Cow<'_, [u32]>> {
        let count = |required: &Required<'_>| -> usize {
            required.pairs().map(|p| self.listed(p).len()).sum()
        };
        let rarest = requirements(selector).min_by_key(count)?;
        Some(match rarest {
            Required::Pair(key, value) => Cow::Borrowed(self.listed(pair(key, value))),
            // A set has one value per key, so the lists are disjoint but for repeated values and
            // colliding hashes.
            Required::OneOf(..) => {
                let mut merged: Vec<u32> = rarest
                    .pairs()
                    .flat_map(|p| self.listed(p).iter().copied())
                    .collect();
                merged.sort_unstable();
                merged.dedup();
                Cow::Owned(merged)
            }
        })
    }
}

/// Selectors by a pair each requires: the selectors a label set may satisfy, without trying the others.
pub(crate) struct SelectorIndex {
    by_pair: Positions,
    /// Selectors that require no pair, and those the caller wants tried on every set.
    everywhere: Vec<u32>,
}

impl SelectorIndex {
    /// Indexes `selectors` by position; `None` is a selector to try on every set. Each is filed
    /// under the requirement fewest of the others share, so that a common label (`tier: web`) does
    /// not make every set a candidate for every selector requiring it.
    pub(crate) fn new(selectors: &[Option<&LabelSelector>]) -> Self {
        let mut shared: foldhash::HashMap<u64, usize> = foldhash::HashMap::default();
        for selector in selectors.iter().flatten() {
            for required in requirements(selector) {
                for p in required.pairs() {
                    *shared.entry(p).or_default() += 1;
                }
            }
        }
        let mut index = SelectorIndex {
            by_pair: Positions::default(),
            everywhere: Vec::new(),
        };
        for (position, selector) in (0u32..).zip(selectors) {
            let filed = selector.and_then(|s| {
                requirements(s).min_by_key(|r| r.pairs().map(|p| shared[&p]).sum::<usize>())
            });
            match filed {
                Some(required) => {
                    for p in required.pairs() {
                        index.by_pair.entry(p).or_default().push(position);
                    }
                }
                None => index.everywhere.push(position),
            }
        }
        index
    }

    /// The positions, in increasing order, of the selectors a set with `labels` may satisfy.
    pub(crate) fn candidates<'a>(
        &self,
        labels: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Vec<u32> {
        let mut found = self.everywhere.clone();
        for (key, value) in labels {
            found.extend_from_slice(listed(&self.by_pair, pair(key, value)));
        }
        found.sort_unstable();
        found.dedup();
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::rules::matching::selector_matches;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn selector(value: serde_json::Value) -> LabelSelector {
        serde_json::from_value(value).unwrap()
    }

    fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn pairs(set: &BTreeMap<String, String>) -> impl Iterator<Item = (&str, &str)> {
        set.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The positions of `sets` that `selector` matches, through the index and by trying each.
    fn both_ways(
        sets: &[BTreeMap<String, String>],
        selector: &LabelSelector,
    ) -> (Vec<usize>, Vec<usize>) {
        let index = LabelIndex::new(sets.iter().map(pairs));
        let all: Vec<u32> = (0..sets.len() as u32).collect();
        let tried = index.candidates(selector).map_or(all, Cow::into_owned);
        let indexed = tried
            .into_iter()
            .map(|p| p as usize)
            .filter(|&p| selector_matches(selector, &sets[p]))
            .collect();
        let everything = (0..sets.len())
            .filter(|&p| selector_matches(selector, &sets[p]))
            .collect();
        (indexed, everything)
    }

    #[test]
    fn sets_found_through_the_rarest_requirement() {
        let sets = [
            set(&[("app", "a"), ("tier", "web")]),
            set(&[("app", "b"), ("tier", "web")]),
            set(&[("app", "c")]),
            set(&[]),
        ];
        for s in [
            json_selector(r#"{"matchLabels": {"tier": "web", "app": "b"}}"#),
            json_selector(
                r#"{"matchExpressions": [{"key": "app", "operator": "In", "values": ["c", "a", "a"]}]}"#,
            ),
            json_selector(
                r#"{"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]}"#,
            ),
            json_selector(r#"{"matchExpressions": [{"key": "app", "operator": "In"}]}"#),
            json_selector("{}"),
        ] {
            let (indexed, everything) = both_ways(&sets, &s);
            assert_eq!(indexed, everything, "{s:?}");
        }
        let index = LabelIndex::new(sets.iter().map(pairs));
        let narrowed = index
            .candidates(&json_selector(
                r#"{"matchLabels": {"tier": "web", "app": "b"}}"#,
            ))
            .unwrap();
        assert_eq!(&*narrowed, [1], "app=b is rarer than tier=web");
        assert!(index.candidates(&json_selector("{}")).is_none());
    }

    fn json_selector(text: &str) -> LabelSelector {
        selector(serde_json::from_str(text).unwrap())
    }

    #[test]
    fn selectors_found_by_a_pair_they_require() {
        let selectors = [
            Some(json_selector(
                r#"{"matchLabels": {"app": "a", "tier": "web"}}"#,
            )),
            Some(json_selector(
                r#"{"matchLabels": {"app": "b", "tier": "web"}}"#,
            )),
            Some(json_selector("{}")),
            None,
            Some(json_selector(
                r#"{"matchExpressions": [{"key": "app", "operator": "Exists"}]}"#,
            )),
        ];
        let borrowed: Vec<Option<&LabelSelector>> = selectors.iter().map(Option::as_ref).collect();
        let index = SelectorIndex::new(&borrowed);
        let labels = set(&[("app", "a"), ("tier", "web")]);
        // Filed under app (each shares tier=web with the other): b is not tried on app=a.
        assert_eq!(index.candidates(pairs(&labels)), [0, 2, 3, 4]);
        assert_eq!(index.candidates(pairs(&set(&[]))), [2, 3, 4]);
    }

    fn arbitrary_set() -> impl Strategy<Value = BTreeMap<String, String>> {
        prop::collection::btree_map(
            prop::sample::select(vec!["app", "tier", "team"]).prop_map(str::to_owned),
            prop::sample::select(vec!["a", "b", "c"]).prop_map(str::to_owned),
            0..3,
        )
    }

    fn arbitrary_selector() -> impl Strategy<Value = LabelSelector> {
        let key = prop::sample::select(vec!["app", "tier", "team"]);
        let value = prop::sample::select(vec!["a", "b", "c"]);
        let operator = prop::sample::select(vec!["In", "NotIn", "Exists", "DoesNotExist"]);
        let expression = (
            key.clone(),
            operator,
            prop::collection::vec(value.clone(), 0..3),
        )
            .prop_map(|(key, operator, values)| {
                let values = matches!(operator, "In" | "NotIn").then_some(values);
                serde_json::json!({"key": key, "operator": operator, "values": values})
            });
        (
            prop::collection::btree_map(key, value, 0..2),
            prop::collection::vec(expression, 0..2),
        )
            .prop_map(|(labels, expressions)| {
                selector(
                    serde_json::json!({"matchLabels": labels, "matchExpressions": expressions}),
                )
            })
    }

    proptest! {
        #[test]
        fn the_index_finds_what_trying_everything_finds(
            sets in prop::collection::vec(arbitrary_set(), 0..12),
            selectors in prop::collection::vec(arbitrary_selector(), 0..6),
        ) {
            for s in &selectors {
                let (indexed, everything) = both_ways(&sets, s);
                prop_assert_eq!(indexed, everything);
            }
            let borrowed: Vec<Option<&LabelSelector>> = selectors.iter().map(Some).collect();
            let index = SelectorIndex::new(&borrowed);
            for labels in &sets {
                let indexed: Vec<usize> = index
                    .candidates(pairs(labels))
                    .into_iter()
                    .map(|p| p as usize)
                    .filter(|&p| selector_matches(&selectors[p], labels))
                    .collect();
                let everything: Vec<usize> =
                    (0..selectors.len()).filter(|&p| selector_matches(&selectors[p], labels)).collect();
                prop_assert_eq!(indexed, everything);
            }
        }
    }
}
