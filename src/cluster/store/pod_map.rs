//! The pods of one node or one job, by key: an ordered map that a snapshot shares with the cache, and
//! that the cache changes afterwards without copying it whole.
//!
//! A persistent B+tree. Its nodes are behind `Arc`: a clone shares every node, and a change copies only
//! the nodes on the path to the pod it touches (`Arc::make_mut`), at most [`MAX`] entries each, where a
//! sorted map would copy the whole aggregate (5,000 pods for a DaemonSet's job) and the snapshot update
//! would then free the old one, one reference count per pod. Pods carry their own key, so the tree holds
//! only the pods: an inner node finds a child by the key of the child's first pod rather than by
//! separator keys, which would be more reference counts on every copy. Beside each pod a leaf keeps its
//! [`PodBrief`], so that strategies can pass over a node's pods without reading each pod's memory.

use std::{fmt, iter::FusedIterator, sync::Arc};

use smallvec::SmallVec;

use crate::cluster::{
    model::keys::ObjectKey,
    model::pod::{PodBrief, PodInfo},
    store::prefetch,
};

/// Entries (pods or children) per tree node at most. Small, because each change copies one node per
/// level (a count per entry), and a node's pods are 30 on average: one leaf copied out of four or so.
const MAX: usize = 8;

/// Pods in key order. Reads as the `BTreeMap<ObjectKey, Arc<PodInfo>>` it replaces does.
#[derive(Clone, Default)]
pub struct PodMap {
    root: Option<Arc<Node>>,
    len: usize,
}

/// Every leaf is at the same depth, and no node is empty except a root being emptied.
///
/// Entries are held inline, in the node's own allocation: a separate buffer was a second allocation
/// per tree node, so a second dependent cache miss on every level a read goes down, and a second
/// allocation and free on every copy on write and on every snapshot update that lets a copy go.
#[derive(Clone)]
enum Node {
    /// Pods in key order.
    Leaf(Pods),
    /// Subtrees in key order.
    Inner(Children),
}

/// Never spills to the heap: a node holds at most [`MAX`] entries (see [`insert_or_split`]).
type Pods = SmallVec<[Entry; MAX]>;
type Children = SmallVec<[Arc<Node>; MAX]>;

/// A pod and its brief, computed once when the pod is put in.
#[derive(Clone)]
struct Entry {
    pod: Arc<PodInfo>,
    brief: PodBrief,
}

impl Entry {
    fn new(pod: Arc<PodInfo>) -> Self {
        Entry {
            brief: pod.brief(),
            pod,
        }
    }
}

impl Node {
    fn len(&self) -> usize {
        match self {
            Node::Leaf(pods) => pods.len(),
            Node::Inner(children) => children.len(),
        }
    }

    /// The key of the first pod under this node.
    fn first_key(&self) -> Option<&ObjectKey> {
        let mut node = self;
        loop {
            match node {
                Node::Leaf(pods) => return pods.first().map(|entry| &entry.pod.key),
                Node::Inner(children) => node = children.first()?,
            }
        }
    }
}

impl PodMap {
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn get(&self, key: &ObjectKey) -> Option<&Arc<PodInfo>> {
        let mut node = self.root.as_deref()?;
        loop {
            match node {
                Node::Leaf(pods) => {
                    return search(pods, key)
                        .ok()
                        .and_then(|at| pods.get(at))
                        .map(|entry| &entry.pod);
                }
                Node::Inner(children) => node = children.get(child_for(children, key))?,
            }
        }
    }

    #[inline]
    pub fn contains_key(&self, key: &ObjectKey) -> bool {
        self.get(key).is_some()
    }

    /// The pods in key order.
    #[inline]
    pub fn values(&self) -> Values<'_> {
        Values::new(self)
    }

    /// The pods in key order, each with its [`PodBrief`].
    #[inline]
    pub fn briefed(&self) -> impl Iterator<Item = (&Arc<PodInfo>, PodBrief)> {
        let mut values = self.values();
        std::iter::from_fn(move || values.next_entry().map(|entry| (&entry.pod, entry.brief)))
    }

    #[inline]
    pub fn keys(&self) -> impl Iterator<Item = &ObjectKey> {
        self.values().map(|pod| &pod.key)
    }

    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &Arc<PodInfo>)> {
        self.values().map(|pod| (&pod.key, pod))
    }

    /// Adds `pod` under its key, returning the pod it replaces.
    pub fn insert(&mut self, pod: Arc<PodInfo>) -> Option<Arc<PodInfo>> {
        let mut root = self
            .root
            .take()
            .unwrap_or_else(|| Arc::new(Node::Leaf(Pods::new())));
        let (previous, split) = insert_into(&mut root, pod);
        self.root = Some(match split {
            Some(right) => Arc::new(Node::Inner(smallvec::smallvec![root, right])),
            None => root,
        });
        if previous.is_none() {
            self.len += 1;
        }
        previous
    }

    pub fn remove(&mut self, key: &ObjectKey) -> Option<Arc<PodInfo>> {
        // Looked up first: removing a pod that is not here must not copy nodes a snapshot shares.
        self.get(key)?;
        let mut root = self.root.take()?;
        let removed = remove_from(&mut root, key);
        self.root = collapse(root);
        if removed.is_some() {
            self.len = self.len.saturating_sub(1);
        }
        removed
    }
}

#[inline]
fn search(pods: &[Entry], key: &ObjectKey) -> Result<usize, usize> {
    pods.binary_search_by(|entry| entry.pod.key.cmp(key))
}

/// The child whose range holds `key`: the last one whose first key is not above it (or the first).
fn child_for(children: &[Arc<Node>], key: &ObjectKey) -> usize {
    children.get(1..).map_or(0, |rest| {
        rest.partition_point(|child| child.first_key().is_some_and(|first| first <= key))
    })
}

/// Inserts into the subtree at `node`, copying it first if a snapshot shares it. Returns the pod
/// replaced, and the right half of `node` if it had to split.
fn insert_into(
    node: &mut Arc<Node>,
    pod: Arc<PodInfo>,
) -> (Option<Arc<PodInfo>>, Option<Arc<Node>>) {
    match Arc::make_mut(node) {
        Node::Leaf(pods) => match search(pods, &pod.key) {
            Ok(at) => (
                Some(std::mem::replace(&mut pods[at], Entry::new(pod)).pod),
                None,
            ),
            Err(at) => {
                let right = insert_or_split(pods, at, Entry::new(pod));
                (None, right.map(|right| Arc::new(Node::Leaf(right))))
            }
        },
        Node::Inner(children) => {
            let at = child_for(children, &pod.key);
            let (previous, split) = insert_into(&mut children[at], pod);
            let right = split.and_then(|right| insert_or_split(children, at + 1, right));
            (previous, right.map(|right| Arc::new(Node::Inner(right))))
        }
    }
}

/// Inserts `item` at `at`; a full node is split in two halves first, and the right one returned. So a
/// node never holds more than [`MAX`] entries, and never spills out of its own allocation.
fn insert_or_split<A: smallvec::Array>(
    items: &mut SmallVec<A>,
    at: usize,
    item: A::Item,
) -> Option<SmallVec<A>> {
    if items.len() < MAX {
        items.insert(at, item);
        return None;
    }
    let half = MAX / 2;
    let mut right = SmallVec::new();
    right.extend(items.drain(half..));
    if at <= half {
        items.insert(at, item);
    } else {
        right.insert(at - half, item);
    }
    Some(right)
}

fn remove_from(node: &mut Arc<Node>, key: &ObjectKey) -> Option<Arc<PodInfo>> {
    match Arc::make_mut(node) {
        Node::Leaf(pods) => {
            let at = search(pods, key).ok()?;
            Some(pods.remove(at).pod)
        }
        Node::Inner(children) => {
            let at = child_for(children, key);
            let removed = remove_from(children.get_mut(at)?, key);
            rebalance(children, at);
            removed
        }
    }
}

/// After a removal under `children[at]`: drops that child if it is empty, else merges it with a
/// neighbour if both fit in one node. Every two neighbours then hold more than `MAX` entries together,
/// so nodes stay about half full on average and the tree stays shallow under churn.
fn rebalance(children: &mut Children, mut at: usize) {
    if children.get(at).is_some_and(|child| child.len() == 0) {
        children.remove(at);
        return;
    }
    let fits = |children: &[Arc<Node>], left: usize| {
        children.get(left).map(|n| n.len()).unwrap_or(MAX)
            + children.get(left + 1).map(|n| n.len()).unwrap_or(MAX)
            <= MAX
    };
    if at > 0 && fits(children, at - 1) {
        merge_with_next(children, at - 1);
        at -= 1;
    }
    if fits(children, at) {
        merge_with_next(children, at);
    }
}

fn merge_with_next(children: &mut Children, at: usize) {
    if at + 1 >= children.len() {
        return;
    }
    let right = Arc::unwrap_or_clone(children.remove(at + 1));
    match (Arc::make_mut(&mut children[at]), right) {
        (Node::Leaf(left), Node::Leaf(right)) => left.extend(right),
        (Node::Inner(left), Node::Inner(right)) => left.extend(right),
        // Siblings are always of one height; were they not, they stay apart.
        (_, right) => children.insert(at + 1, Arc::new(right)),
    }
}

/// The root without the levels a removal left with a single child; none if nothing is left.
fn collapse(mut root: Arc<Node>) -> Option<Arc<Node>> {
    loop {
        let only = match &*root {
            Node::Leaf(pods) if pods.is_empty() => return None,
            Node::Inner(children) if children.len() <= 1 => children.first().cloned()?,
            _ => return Some(root),
        };
        root = only;
    }
}

impl PartialEq for PodMap {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.values().eq(other.values())
    }
}

impl fmt::Debug for PodMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl FromIterator<Arc<PodInfo>> for PodMap {
    fn from_iter<I: IntoIterator<Item = Arc<PodInfo>>>(pods: I) -> Self {
        let mut map = PodMap::default();
        for pod in pods {
            map.insert(pod);
        }
        map
    }
}

/// The pods of a [`PodMap`] in key order.
pub struct Values<'a> {
    /// Per inner level above the current leaf, the children not visited yet.
    pending: SmallVec<[std::slice::Iter<'a, Arc<Node>>; 4]>,
    leaf: std::slice::Iter<'a, Entry>,
    remaining: usize,
}

impl<'a> Values<'a> {
    #[inline]
    fn new(map: &'a PodMap) -> Self {
        let mut values = Values {
            pending: SmallVec::new(),
            leaf: Default::default(),
            remaining: map.len,
        };
        if let Some(root) = &map.root {
            values.descend(root);
        }
        values
    }

    /// Goes down to the first leaf under `node`, noting the siblings left to visit on the way.
    fn descend(&mut self, mut node: &'a Node) {
        loop {
            match node {
                Node::Leaf(pods) => {
                    self.leaf = pods.iter();
                    return;
                }
                Node::Inner(children) => {
                    // The children are visited next, one after the other, and each is a miss of
                    // its own (the pods of a node were inserted over the whole listing, so their
                    // tree is spread over the heap): asked for together, the misses overlap.
                    for child in children {
                        prefetch::bytes(Arc::as_ptr(child), size_of::<Node>());
                    }
                    let mut rest = children.iter();
                    let Some(first) = rest.next() else { return };
                    self.pending.push(rest);
                    node = first;
                }
            }
        }
    }

    #[inline]
    fn next_entry(&mut self) -> Option<&'a Entry> {
        loop {
            if let Some(entry) = self.leaf.next() {
                self.remaining = self.remaining.saturating_sub(1);
                return Some(entry);
            }
            if !self.next_leaf() {
                return None;
            }
        }
    }

    /// Moves to the next leaf; false when there is none.
    fn next_leaf(&mut self) -> bool {
        while let Some(level) = self.pending.last_mut() {
            match level.next() {
                Some(child) => {
                    self.descend(child);
                    return true;
                }
                None => {
                    self.pending.pop();
                }
            }
        }
        false
    }
}

impl<'a> Iterator for Values<'a> {
    type Item = &'a Arc<PodInfo>;

    #[inline]
    fn next(&mut self) -> Option<&'a Arc<PodInfo>> {
        self.next_entry().map(|entry| &entry.pod)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Values<'_> {}

impl FusedIterator for Values<'_> {}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;

    /// A new version of pod `ns/name`: a distinct allocation, told apart from others by pointer, and
    /// each version with another brief than the last (priority, and every third one terminating).
    fn pod_version(name: &str) -> Arc<PodInfo> {
        thread_local! {
            static BASE: PodInfo = crate::testkit::pod("ns/base", "n1").build();
            static VERSION: std::cell::Cell<i32> = const { std::cell::Cell::new(0) };
        }
        let version = VERSION.with(|v| {
            v.set(v.get() + 1);
            v.get()
        });
        BASE.with(|base| {
            let mut pod = base.clone();
            pod.key = ObjectKey::new("ns", name);
            pod.priority = Some(version % 11 - 5);
            pod.terminating = version % 3 == 0;
            Arc::new(pod)
        })
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("ns", name)
    }

    /// The tree's invariants: leaves at one depth, no empty or overfull node, entries inline, keys in
    /// order, the count right.
    fn check_shape(map: &PodMap) {
        fn depths(node: &Node, depth: usize, out: &mut Vec<usize>) {
            assert!(node.len() > 0, "empty node");
            assert!(node.len() <= MAX, "overfull node");
            match node {
                Node::Leaf(pods) => {
                    assert!(!pods.spilled(), "leaf's pods spilled");
                    out.push(depth);
                }
                Node::Inner(children) => {
                    assert!(!children.spilled(), "inner node's children spilled");
                    for child in children {
                        depths(child, depth + 1, out);
                    }
                }
            }
        }
        let mut leaf_depths = Vec::new();
        if let Some(root) = &map.root {
            depths(root, 0, &mut leaf_depths);
        }
        leaf_depths.dedup();
        assert!(leaf_depths.len() <= 1, "leaves at depths {leaf_depths:?}");
        let keys: Vec<&ObjectKey> = map.keys().collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys out of order");
        assert_eq!(keys.len(), map.len());
        assert_eq!(map.values().len(), map.len());
    }

    /// Same keys in the same order, each with the very version the model holds.
    fn holds_exactly(map: &PodMap, model: &BTreeMap<ObjectKey, Arc<PodInfo>>) -> bool {
        check_shape(map);
        map.len() == model.len()
            && map
                .briefed()
                .zip(model.values())
                .all(|((pod, brief), version)| {
                    Arc::ptr_eq(pod, version) && brief == version.brief()
                })
            && map
                .iter()
                .zip(model)
                .all(|((k, p), (mk, mp))| k == mk && Arc::ptr_eq(p, mp))
            && model
                .iter()
                .all(|(k, p)| map.get(k).is_some_and(|found| Arc::ptr_eq(found, p)))
    }

    fn same_version(a: Option<Arc<PodInfo>>, b: Option<Arc<PodInfo>>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => Arc::ptr_eq(&a, &b),
            (None, None) => true,
            _ => false,
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u16),
        Remove(u16),
        /// Keep a clone, as a snapshot would.
        Share,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            5 => (0u16..300).prop_map(Op::Insert),
            4 => (0u16..300).prop_map(Op::Remove),
            1 => Just(Op::Share),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 200,
            rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
            ..ProptestConfig::default()
        })]

        /// Against a `BTreeMap`: the same content after every change, and every clone taken along the
        /// way keeps exactly the content it had, whatever the original went through afterwards.
        #[test]
        fn behaves_as_a_sorted_map_and_clones_never_see_later_changes(
            ops in prop::collection::vec(op(), 1..600)
        ) {
            let mut map = PodMap::default();
            let mut model = BTreeMap::new();
            let mut shared: Vec<(PodMap, BTreeMap<ObjectKey, Arc<PodInfo>>)> = Vec::new();
            for op in ops {
                match op {
                    Op::Insert(n) => {
                        let pod = pod_version(&format!("p{n:03}"));
                        let previous = map.insert(Arc::clone(&pod));
                        prop_assert!(same_version(previous, model.insert(pod.key.clone(), pod)));
                    }
                    Op::Remove(n) => {
                        let key = key(&format!("p{n:03}"));
                        prop_assert!(same_version(map.remove(&key), model.remove(&key)));
                    }
                    Op::Share => shared.push((map.clone(), model.clone())),
                }
                prop_assert_eq!(map.len(), model.len());
            }
            prop_assert!(holds_exactly(&map, &model));
            for (clone, content) in &shared {
                prop_assert!(holds_exactly(clone, content));
            }
        }
    }

    fn leaves(map: &PodMap) -> Vec<*const Node> {
        fn walk(node: &Arc<Node>, out: &mut Vec<*const Node>) {
            match &**node {
                Node::Leaf(_) => out.push(Arc::as_ptr(node)),
                Node::Inner(children) => children.iter().for_each(|c| walk(c, out)),
            }
        }
        let mut out = Vec::new();
        if let Some(root) = &map.root {
            walk(root, &mut out);
        }
        out
    }

    #[test]
    fn a_change_copies_one_path_and_shares_the_rest() {
        let originals: Vec<Arc<PodInfo>> = (0..5_000)
            .map(|n| pod_version(&format!("p{n:05}")))
            .collect();
        let mut map: PodMap = originals.iter().cloned().collect();
        let snapshot = map.clone();
        let replacement = pod_version("p02500");
        map.insert(Arc::clone(&replacement));
        map.remove(&key("p04000"));

        let before = leaves(&snapshot);
        let copied = leaves(&map)
            .into_iter()
            .filter(|leaf| !before.contains(leaf))
            .count();
        assert!(copied <= 3, "{copied} leaves copied for two changes");
        assert_eq!(snapshot.len(), 5_000);
        assert!(
            snapshot
                .values()
                .zip(&originals)
                .all(|(a, b)| Arc::ptr_eq(a, b))
        );
        assert_eq!(map.len(), 4_999);
        assert!(Arc::ptr_eq(map.get(&key("p02500")).unwrap(), &replacement));
        assert!(!map.contains_key(&key("p04000")));
        check_shape(&map);
        check_shape(&snapshot);
    }

    #[test]
    fn emptied_maps_hold_nothing_and_removing_the_absent_copies_nothing() {
        let mut map: PodMap = (0..100).map(|n| pod_version(&format!("p{n:03}"))).collect();
        let snapshot = map.clone();
        assert_eq!(map.remove(&key("absent")), None);
        assert!(Arc::ptr_eq(
            map.root.as_ref().unwrap(),
            snapshot.root.as_ref().unwrap()
        ));
        for n in (0..100).rev() {
            assert!(map.remove(&key(&format!("p{n:03}"))).is_some());
            check_shape(&map);
        }
        assert!(map.is_empty() && map.root.is_none());
        assert_eq!(map.values().next(), None);
        assert_eq!(snapshot.len(), 100);
        assert_eq!(map, PodMap::default());
    }
}
