//! Required inter-pod anti-affinity as a destination check: could a pod move to a node without
//! breaking an anti-affinity rule, its own or a pod's already there.
//!
//! The descheduler's NodeFit (`podMatchesInterPodAntiAffinity`, pkg/descheduler/node/node.go, v0.36)
//! checks only the moving pod's terms, against the pods on the target node, with the term's
//! `namespaces` (else the pod's own namespace) and its plain label selector. The scheduler checks the
//! whole topology domain, both directions, `namespaceSelector` and `matchLabelKeys`. A destination is
//! refused when either would refuse it, so that a plan never moves a pod the descheduler would keep,
//! nor one the scheduler could not place:
//!
//! - the moving pod's terms hold against every pod in the target node's domain (the node's own pods
//!   among them), the existing pods' terms against the moving pod;
//! - a term's namespaces are the union of both readings, and `matchLabelKeys`/`mismatchLabelKeys`,
//!   which only narrow a selector, are left out;
//! - pods this plan evicts still count: the descheduler's NodeFit sees them until they are gone;
//! - a malformed selector repels every pod in scope, a namespace tidal has not seen is in every
//!   `namespaceSelector`'s scope: bad data never opens a destination.

use std::{
    borrow::Cow,
    collections::{BTreeMap, BTreeSet, HashMap},
    hash::{Hash, Hasher},
    sync::Arc,
};

use k8s_openapi::{
    api::core::v1::PodAffinityTerm, apimachinery::pkg::apis::meta::v1::LabelSelector,
};

use crate::cluster::{
    NamespaceInfo, NodeInfo, NodeState, ObjectKey, PodInfo, Snapshot,
    model::{constraints::Constraints, pod_labels::PodLabels},
    rules::{
        label_index::{LabelIndex, SelectorIndex},
        matching,
    },
};

/// Whether `namespace` is in the scope of `term`, declared by a pod of `owner_namespace`.
fn in_scope(
    term: &PodAffinityTerm,
    owner_namespace: &str,
    namespace: &str,
    namespaces: &BTreeMap<String, Arc<NamespaceInfo>>,
) -> bool {
    let listed = term.namespaces.as_deref().unwrap_or_default();
    if listed.iter().any(|n| n == namespace) {
        return true;
    }
    // An empty list is the owner's namespace to the descheduler whatever the namespaceSelector says,
    // and to the scheduler when there is no namespaceSelector: honour both.
    if listed.is_empty() && namespace == owner_namespace {
        return true;
    }
    term.namespace_selector.as_ref().is_some_and(|selector| {
        namespaces
            .get(namespace)
            .is_none_or(|ns| matching::selector_matches(selector, &ns.labels))
    })
}

/// Whether `term`, declared by a pod of `owner_namespace`, selects a pod of `namespace` with `labels`.
/// A term without a label selector selects nothing (as in the scheduler and the descheduler); one
/// whose selector is malformed selects every pod in scope.
pub(crate) fn term_selects(
    term: &PodAffinityTerm,
    owner_namespace: &str,
    namespace: &str,
    labels: &PodLabels,
    namespaces: &BTreeMap<String, Arc<NamespaceInfo>>,
) -> bool {
    let Some(selector) = &term.label_selector else {
        return false;
    };
    in_scope(term, owner_namespace, namespace, namespaces)
        && (matching::selector_is_valid(selector).is_err()
            || matching::selector_matches(selector, labels))
}

/// The selector to narrow a search of the pods `term` selects with: none for a malformed one, which
/// selects every pod in scope.
fn narrowing(term: &PodAffinityTerm) -> Option<&LabelSelector> {
    term.label_selector
        .as_ref()
        .filter(|selector| matching::selector_is_valid(selector).is_ok())
}

/// How many pods a domain holds before its pods are indexed by label: trying a selector on a few
/// pods costs less than indexing them. Once a cluster is past the caches, reading a pod is a miss,
/// so a node's worth of pods (30 at the benches' density) is already worth indexing.
const INDEXED_FROM: usize = 16;

/// How many terms a domain holds before they are filed by label.
const FILED_FROM: usize = 16;

/// The pods of one topology domain, in node order, indexed by label when there are many: a selector
/// is then tried on the pods carrying a label it requires rather than on the whole domain, which for
/// a zone of one large namespace cost pods × pods.
pub(crate) struct DomainPods {
    nodes: Vec<Arc<NodeState>>,
    indexed: Option<(Vec<Arc<PodInfo>>, LabelIndex)>,
}

impl DomainPods {
    /// Every domain of topology `key`: the nodes carrying it, by its value, in the snapshot's order.
    pub(crate) fn by_value(snapshot: &Snapshot, key: &str) -> HashMap<String, DomainPods> {
        let mut nodes: HashMap<String, Vec<Arc<NodeState>>> = HashMap::new();
        for state in snapshot.nodes.values() {
            if let Some(v) = state.node.as_deref().and_then(|n| n.labels.get(key)) {
                nodes.entry(v.clone()).or_default().push(Arc::clone(state));
            }
        }
        nodes
            .into_iter()
            .map(|(value, nodes)| (value, DomainPods::new(nodes)))
            .collect()
    }

    pub(crate) fn new(nodes: Vec<Arc<NodeState>>) -> Self {
        let count: usize = nodes.iter().map(|state| state.pods.len()).sum();
        let indexed = (count >= INDEXED_FROM).then(|| {
            let pods: Vec<Arc<PodInfo>> = nodes
                .iter()
                .flat_map(|state| state.pods.values())
                .cloned()
                .collect();
            let index = LabelIndex::new(pods.iter().map(|pod| pod.labels.iter()));
            (pods, index)
        });
        DomainPods { nodes, indexed }
    }

    /// The domain's pods that `selector` may select, in node order: all of them for `None`.
    pub(crate) fn candidates<'a>(
        &'a self,
        selector: Option<&LabelSelector>,
    ) -> Box<dyn Iterator<Item = &'a Arc<PodInfo>> + 'a> {
        let narrowed = self
            .indexed
            .as_ref()
            .zip(selector)
            .and_then(|((pods, index), selector)| Some((pods, index.candidates(selector)?)));
        match narrowed {
            None => Box::new(self.nodes.iter().flat_map(|state| state.pods.values())),
            Some((pods, Cow::Borrowed(positions))) => {
                Box::new(positions.iter().filter_map(|&at| pods.get(at as usize)))
            }
            Some((pods, Cow::Owned(positions))) => {
                Box::new(positions.into_iter().filter_map(|at| pods.get(at as usize)))
            }
        }
    }
}

/// Every pod on a node of `snapshot`, indexed by label.
fn everyone(snapshot: &Snapshot) -> (Vec<Arc<PodInfo>>, LabelIndex) {
    let pods: Vec<Arc<PodInfo>> = snapshot
        .nodes
        .values()
        .flat_map(|state| state.pods.values())
        .cloned()
        .collect();
    let index = LabelIndex::new(pods.iter().map(|pod| pod.labels.iter()));
    (pods, index)
}

/// Constraints compared by identity: the cache interns them, so the replicas of a workload share one.
#[derive(Clone)]
struct Shared(Arc<Constraints>);

impl PartialEq for Shared {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Shared {}

impl Hash for Shared {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::ptr::hash(Arc::as_ptr(&self.0), state);
    }
}

/// A workload's required term: the constraints its pods share, the term's index, their namespace.
type Term = (Shared, usize, String);

/// Values by topology value, per topology key.
type ByDomain<T> = HashMap<String, HashMap<String, T>>;

/// The terms of the pods already placed in one domain, filed by a label each term's selector requires
/// once there are many: a moving pod is checked against those it may satisfy, in list order, rather
/// than against one term per workload of the domain.
struct Repellers {
    list: Vec<Repeller>,
    index: Option<SelectorIndex>,
}

impl Repellers {
    fn new(list: Vec<Repeller>) -> Self {
        let index = (list.len() >= FILED_FROM).then(|| {
            let selectors: Vec<Option<&LabelSelector>> = list
                .iter()
                .map(|r| narrowing(&r.constraints.anti_affinity[r.term]))
                .collect();
            SelectorIndex::new(&selectors)
        });
        Repellers { list, index }
    }

    /// The repellers whose terms may select a pod with `labels`, in list order.
    fn candidates<'a>(&'a self, labels: &PodLabels) -> Box<dyn Iterator<Item = &'a Repeller> + 'a> {
        match &self.index {
            None => Box::new(self.list.iter()),
            Some(index) => Box::new(
                index
                    .candidates(labels.iter())
                    .into_iter()
                    .filter_map(|at| self.list.get(at as usize)),
            ),
        }
    }
}

/// One required term of pods already placed, for one topology domain: which pods declare it there.
struct Repeller {
    constraints: Arc<Constraints>,
    term: usize,
    namespace: String,
    /// How many pods of the domain declare it, and one of them: a pod is not repelled by itself.
    owners: u32,
    first: ObjectKey,
}

/// A per-plan view of the snapshot's anti-affinity, built as checks need it, with the answers that
/// do not change within a plan remembered. The snapshot must be the same for every call.
#[derive(Default)]
pub(crate) struct AntiAffinityFit {
    /// Nodes and their pods by topology value, per topology key.
    domains: ByDomain<DomainPods>,
    /// The terms of the pods already placed, by topology key and value of their node.
    repellers: Option<ByDomain<Repellers>>,
    /// How many pods (0, 1, or 2 for more) a term of a namespace selects in a domain.
    selected: HashMap<(Term, String), u8>,
    /// Every pod on a node, indexed by label: where the pods a term selects are.
    everyone: Option<(Vec<Arc<PodInfo>>, LabelIndex)>,
    /// The domains holding a pod that a term of a namespace selects, by term: a workload's
    /// replicas ask once, not each through every pod its selector may select.
    occupied: HashMap<Term, Option<Arc<[String]>>>,
}

impl AntiAffinityFit {
    /// Why `node` is refused to `pod` by the pod's own required anti-affinity terms, if it is: the
    /// descheduler's NodeFit check (`podMatchesInterPodAntiAffinity` reads only these).
    pub(crate) fn own_terms_refuse_pod(
        &mut self,
        pod: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) -> Option<String> {
        self.own_terms_refuse(pod, node, snapshot)
    }

    /// Why `node` is refused to `pod` by required anti-affinity, if it is: the first rule broken.
    pub(crate) fn refuses(
        &mut self,
        pod: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) -> Option<String> {
        if let Some(why) = self.own_terms_refuse(pod, node, snapshot) {
            return Some(why);
        }
        let repellers = self.repellers(snapshot);
        for (key, by_value) in repellers {
            let Some(value) = node.labels.get(key) else {
                continue;
            };
            let Some(repellers) = by_value.get(value) else {
                continue;
            };
            for repeller in repellers.candidates(&pod.labels) {
                let term = &repeller.constraints.anti_affinity[repeller.term];
                let itself = repeller.owners == 1 && repeller.first == pod.key;
                if !itself
                    && term_selects(
                        term,
                        &repeller.namespace,
                        &pod.key.namespace,
                        &pod.labels,
                        &snapshot.namespaces,
                    )
                {
                    return Some(format!(
                        "the required anti-affinity of {} repels it ({key}={value})",
                        repeller.first
                    ));
                }
            }
        }
        None
    }

    /// The pod's own terms: does another pod in the node's domain match one.
    fn own_terms_refuse(
        &mut self,
        pod: &PodInfo,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) -> Option<String> {
        for (index, term) in pod.constraints.anti_affinity.iter().enumerate() {
            let key = &term.topology_key;
            let Some(value) = node.labels.get(key) else {
                continue;
            };
            if self.term_refuses(pod, index, value, snapshot) {
                return Some(format!(
                    "its required anti-affinity selects a pod in {key}={value}"
                ));
            }
        }
        None
    }

    /// Whether `pod`'s term `index` refuses the nodes of the domain `value` of its topology key: it
    /// selects a pod there, the pod itself aside.
    fn term_refuses(
        &mut self,
        pod: &PodInfo,
        index: usize,
        value: &str,
        snapshot: &Snapshot,
    ) -> bool {
        let Some(term) = pod.constraints.anti_affinity.get(index) else {
            return false;
        };
        let key = &term.topology_key;
        let memo = (
            (
                Shared(Arc::clone(&pod.constraints)),
                index,
                pod.key.namespace.to_string(),
            ),
            value.to_owned(),
        );
        let selected = match self.selected.get(&memo) {
            Some(count) => *count,
            None => {
                let count = self.count_selected(term, &pod.key.namespace, key, value, snapshot);
                self.selected.insert(memo, count);
                count
            }
        };
        // The pod itself leaves the domain it is counted in.
        let own_node = pod
            .node_name
            .as_deref()
            .and_then(|n| snapshot.node(n))
            .and_then(|s| s.node.as_deref());
        let itself = own_node.is_some_and(|n| n.labels.get(key).map(String::as_str) == Some(value))
            && term_selects(
                term,
                &pod.key.namespace,
                &pod.key.namespace,
                &pod.labels,
                &snapshot.namespaces,
            );
        selected > u8::from(itself)
    }

    /// The topology key of `pod`'s one required term and the values of it whose nodes the term
    /// refuses ([`Self::own_terms_refuse`]), found from the pods the term may select rather than
    /// domain by domain. `None` for a pod with no term or several, or one whose selector narrows no
    /// search (a malformed selector selects every pod in scope).
    pub(crate) fn refusing_domains(
        &mut self,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> Option<(String, Vec<String>)> {
        let [term] = pod.constraints.anti_affinity.as_slice() else {
            return None;
        };
        let key = &term.topology_key;
        // A term without a selector selects nothing.
        let Some(selector) = &term.label_selector else {
            return Some((key.clone(), Vec::new()));
        };
        if matching::selector_is_valid(selector).is_err() {
            return None;
        }
        let memo = (
            Shared(Arc::clone(&pod.constraints)),
            0,
            pod.key.namespace.to_string(),
        );
        let occupied = match self.occupied.get(&memo) {
            Some(known) => known.clone(),
            None => {
                let found = self.occupied_domains(term, &pod.key.namespace, snapshot);
                self.occupied.insert(memo, found.clone());
                found
            }
        }?;
        let refusing = occupied
            .iter()
            .filter(|value| self.term_refuses(pod, 0, value, snapshot))
            .cloned()
            .collect();
        Some((key.clone(), refusing))
    }

    /// The values of `term`'s topology key whose domains hold a pod it selects, declared in
    /// `owner_namespace`, in order; `None` when its selector narrows no search.
    fn occupied_domains(
        &mut self,
        term: &PodAffinityTerm,
        owner_namespace: &str,
        snapshot: &Snapshot,
    ) -> Option<Arc<[String]>> {
        let selector = term.label_selector.as_ref()?;
        let (pods, index) = self.everyone.get_or_insert_with(|| everyone(snapshot));
        let positions = index.candidates(selector)?;
        let mut values: BTreeSet<&str> = BTreeSet::new();
        for other in positions.iter().filter_map(|&at| pods.get(at as usize)) {
            if other.phase.is_finished()
                || !term_selects(
                    term,
                    owner_namespace,
                    &other.key.namespace,
                    &other.labels,
                    &snapshot.namespaces,
                )
            {
                continue;
            }
            let node = other
                .node_name
                .as_deref()
                .and_then(|n| snapshot.node(n))
                .and_then(|s| s.node.as_deref());
            if let Some(value) = node.and_then(|n| n.labels.get(&term.topology_key)) {
                values.insert(value);
            }
        }
        Some(values.into_iter().map(str::to_owned).collect())
    }

    /// Pods (unfinished) of the domain `key=value` that `term` selects: 0, 1, or 2 for two or more.
    fn count_selected(
        &mut self,
        term: &PodAffinityTerm,
        owner_namespace: &str,
        key: &str,
        value: &str,
        snapshot: &Snapshot,
    ) -> u8 {
        let Some(domain) = self.domain(key, value, snapshot) else {
            return 0;
        };
        let mut count = 0u8;
        for other in domain.candidates(narrowing(term)) {
            if !other.phase.is_finished()
                && term_selects(
                    term,
                    owner_namespace,
                    &other.key.namespace,
                    &other.labels,
                    &snapshot.namespaces,
                )
            {
                count += 1;
                if count == 2 {
                    return count;
                }
            }
        }
        count
    }

    fn domain(&mut self, key: &str, value: &str, snapshot: &Snapshot) -> Option<&DomainPods> {
        let index = (self.domains.entry(key.to_owned()))
            .or_insert_with(|| DomainPods::by_value(snapshot, key));
        index.get(value)
    }

    /// Every required term of the unfinished pods placed on known nodes, once per workload (the
    /// pods that share constraints and namespace) and domain.
    fn repellers(&mut self, snapshot: &Snapshot) -> &ByDomain<Repellers> {
        self.repellers.get_or_insert_with(|| {
            let mut index: ByDomain<Vec<Repeller>> = HashMap::new();
            // Where each term of a workload sits in its domain's list.
            let mut seen: HashMap<(Term, String, String), usize> = HashMap::new();
            for state in snapshot.nodes.values() {
                let Some(node) = state.node.as_deref() else {
                    continue;
                };
                for pod in state.pods.values() {
                    if pod.constraints.anti_affinity.is_empty() || pod.phase.is_finished() {
                        continue;
                    }
                    for (term_index, term) in pod.constraints.anti_affinity.iter().enumerate() {
                        let Some(value) = node.labels.get(&term.topology_key) else {
                            continue;
                        };
                        let key = term.topology_key.clone();
                        let by_value = index.entry(key.clone()).or_default();
                        let list = by_value.entry(value.clone()).or_default();
                        let group = (
                            (
                                Shared(Arc::clone(&pod.constraints)),
                                term_index,
                                pod.key.namespace.to_string(),
                            ),
                            key,
                            value.clone(),
                        );
                        match seen.get(&group) {
                            Some(at) => list[*at].owners += 1,
                            None => {
                                seen.insert(group, list.len());
                                list.push(Repeller {
                                    constraints: Arc::clone(&pod.constraints),
                                    term: term_index,
                                    namespace: pod.key.namespace.to_string(),
                                    owners: 1,
                                    first: pod.key.clone(),
                                });
                            }
                        }
                    }
                }
            }
            index
                .into_iter()
                .map(|(key, by_value)| {
                    let by_value = by_value
                        .into_iter()
                        .map(|(value, list)| (value, Repellers::new(list)))
                        .collect();
                    (key, by_value)
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::*;
    use serde_json::json;

    fn repels(app: &str, key: &str) -> serde_json::Value {
        json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key
        }]}})
    }

    const HOST: &str = "kubernetes.io/hostname";

    fn host(name: &str) -> NodeBuilder {
        node(name).label(HOST, name).label("zone", "z1")
    }

    /// Whether `pod` may move to `target` as far as anti-affinity goes.
    fn refused(cluster: &mut Cluster, pod: &str, target: &str) -> Option<String> {
        let snapshot = cluster.snapshot();
        let (namespace, name) = pod.split_once('/').unwrap();
        let key = ObjectKey::new(namespace, name);
        let pod = snapshot
            .nodes
            .values()
            .find_map(|s| s.pods.get(&key))
            .cloned()
            .unwrap();
        let node = snapshot.node(target).unwrap().node.clone().unwrap();
        AntiAffinityFit::default().refuses(&pod, &node, &snapshot)
    }

    #[test]
    fn the_moving_pods_terms_repel_pods_on_the_target_node() {
        // The descheduler's case: x-1 repels app=y by hostname; n2 runs y-1.
        let mut cluster = Cluster::new()
            .node(host("n1"))
            .node(host("n2"))
            .node(host("n3"))
            .pod(
                pod("a/x-1", "n1")
                    .label("app", "x")
                    .spec("affinity", repels("y", HOST)),
            )
            .pod(pod("a/y-1", "n2").label("app", "y"));
        assert!(refused(&mut cluster, "a/x-1", "n2").is_some());
        assert_eq!(refused(&mut cluster, "a/x-1", "n3"), None);
        // Another namespace is out of the term's scope unless the term lists it.
        let mut cluster = Cluster::new()
            .node(host("n1"))
            .node(host("n2"))
            .pod(pod("a/x-1", "n1").spec("affinity", repels("y", HOST)))
            .pod(pod("b/y-1", "n2").label("app", "y"));
        assert_eq!(refused(&mut cluster, "a/x-1", "n2"), None);
        let mut terms = repels("y", HOST);
        terms["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["namespaces"] =
            json!(["b"]);
        let mut cluster = Cluster::new()
            .node(host("n1"))
            .node(host("n2"))
            .pod(pod("a/x-1", "n1").spec("affinity", terms))
            .pod(pod("b/y-1", "n2").label("app", "y"));
        assert!(refused(&mut cluster, "a/x-1", "n2").is_some());
    }

    #[test]
    fn pods_already_there_repel_the_moving_pod() {
        let mut cluster = Cluster::new()
            .node(host("n1"))
            .node(host("n2"))
            .pod(pod("a/x-1", "n1").label("app", "x"))
            .pod(
                pod("a/y-1", "n2")
                    .label("app", "y")
                    .spec("affinity", repels("x", HOST)),
            );
        let why = refused(&mut cluster, "a/x-1", "n2").unwrap();
        assert!(why.contains("a/y-1"), "{why}");
    }

    #[test]
    fn the_whole_topology_domain_counts_but_not_the_pod_itself() {
        // Zone anti-affinity against its own app: w-1 may move within its zone (it leaves it), not
        // to a zone where w-2 runs.
        let mut cluster = Cluster::new()
            .node(node("a1").label("zone", "a"))
            .node(node("a2").label("zone", "a"))
            .node(node("b1").label("zone", "b"))
            .node(node("b2").label("zone", "b"))
            .node(node("none"))
            .pod(
                pod("x/w-1", "a1")
                    .label("app", "w")
                    .spec("affinity", repels("w", "zone")),
            )
            .pod(
                pod("x/w-2", "b1")
                    .label("app", "w")
                    .spec("affinity", repels("w", "zone")),
            );
        assert_eq!(refused(&mut cluster, "x/w-1", "a2"), None);
        assert!(refused(&mut cluster, "x/w-1", "b2").is_some());
        // A node without the topology key is in no domain: no rule applies there.
        assert_eq!(refused(&mut cluster, "x/w-1", "none"), None);
        // A third replica in zone a: w-1 leaving still leaves w-3 there.
        let mut cluster = cluster.pod(
            pod("x/w-3", "a2")
                .label("app", "w")
                .spec("affinity", repels("w", "zone")),
        );
        assert!(refused(&mut cluster, "x/w-1", "a2").is_some());
    }

    /// A domain of many pods, holding the terms of many workloads: what is refused, and the rule
    /// named, are those of checking every pod and every term in order.
    #[test]
    fn large_domains_refuse_as_checking_everything_does() {
        let mut cluster = Cluster::new()
            .node(host("n1"))
            .node(host("n2"))
            .node(node("m1").label("zone", "z2"));
        for i in 0..150 {
            let app = format!("f{}", i % 30);
            cluster = cluster.pod(
                pod(&format!("a/filler-{i:03}"), "n1")
                    .label("app", &app)
                    .spec("affinity", repels(&app, "zone")),
            );
        }
        let malformed = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Near", "values": ["y"]}]},
            "topologyKey": "zone"
        }]}});
        let mut cluster = cluster
            .pod(pod("c/odd", "n1").spec("affinity", malformed))
            .pod(pod("a/mover", "m1").label("app", "f7"))
            .pod(pod("a/other", "m1").label("app", "g"))
            .pod(pod("b/mover", "m1").label("app", "f7"))
            .pod(pod("c/mover", "m1").label("app", "g"))
            .pod(pod("a/seeker", "m1").spec("affinity", repels("f3", "zone")))
            .pod(pod("a/seeker-none", "m1").spec("affinity", repels("none", "zone")));
        let why = refused(&mut cluster, "a/mover", "n2").unwrap();
        assert!(why.contains("of a/filler-007 repels it (zone=z1)"), "{why}");
        assert_eq!(refused(&mut cluster, "a/other", "n2"), None);
        assert_eq!(refused(&mut cluster, "b/mover", "n2"), None);
        let why = refused(&mut cluster, "c/mover", "n2").unwrap();
        assert!(why.contains("of c/odd"), "{why}");
        let why = refused(&mut cluster, "a/seeker", "n2").unwrap();
        assert!(why.contains("selects a pod in zone=z1"), "{why}");
        assert_eq!(refused(&mut cluster, "a/seeker-none", "n2"), None);
    }

    #[test]
    fn finished_pods_repel_nothing() {
        let mut cluster = Cluster::new()
            .node(host("n1"))
            .node(host("n2"))
            .pod(pod("a/x-1", "n1").spec("affinity", repels("y", HOST)))
            .pod(pod("a/y-1", "n2").label("app", "y").phase("Succeeded"));
        assert_eq!(refused(&mut cluster, "a/x-1", "n2"), None);
    }

    #[test]
    fn malformed_selectors_and_unknown_namespaces_refuse() {
        let bad = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Near", "values": ["y"]}]},
            "topologyKey": HOST
        }]}});
        let mut cluster = Cluster::new()
            .node(host("n1"))
            .node(host("n2"))
            .pod(pod("a/x-1", "n1").spec("affinity", bad))
            .pod(pod("a/other", "n2").label("app", "z"));
        assert!(refused(&mut cluster, "a/x-1", "n2").is_some());
        // A namespaceSelector over a namespace tidal has not seen: in scope.
        let by_namespace = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": "y"}},
            "namespaceSelector": {"matchLabels": {"team": "blue"}},
            "topologyKey": HOST
        }]}});
        let cluster = || {
            Cluster::new()
                .node(host("n1"))
                .node(host("n2"))
                .pod(pod("a/x-1", "n1").spec("affinity", by_namespace.clone()))
                .pod(pod("b/y-1", "n2").label("app", "y"))
        };
        assert!(refused(&mut cluster(), "a/x-1", "n2").is_some());
        let mut red = cluster().namespace("b", &[("team", "red")]);
        assert_eq!(refused(&mut red, "a/x-1", "n2"), None);
        let mut blue = cluster().namespace("b", &[("team", "blue")]);
        assert!(refused(&mut blue, "a/x-1", "n2").is_some());
    }

    /// The indexed searches (domains' pods by label, domains' terms by a label they require, a
    /// term's refusing domains found from the pods it may select) against plain scans of every pod, on
    /// random clusters whose domains are large enough to be indexed: the same refusals, the same rule
    /// named.
    mod against_a_scan {
        use std::collections::BTreeSet;

        use proptest::prelude::*;
        use serde_json::{Value, json};

        use super::{super::*, HOST};
        use crate::testkit::*;

        /// A pod: namespace, node, app (4: none), tier label, finished, and its one term: selector
        /// kind, app it names, by host rather than zone, which namespaces.
        type Member = (u8, u8, u8, bool, bool, Option<(u8, u8, bool, u8)>);

        fn selector(kind: u8, app: u8, unique: usize) -> Option<Value> {
            let app = format!("a{app}");
            let expression = |operator: &str, values: Option<Vec<String>>| json!({"matchExpressions": [{"key": "app", "operator": operator, "values": values}]});
            Some(match kind % 10 {
                0 => json!({"matchLabels": {"app": app}}),
                // A value of its own makes each such pod a workload of its own.
                1 => expression("In", Some(vec![app, format!("u{unique}")])),
                2 => expression("NotIn", Some(vec![app])),
                3 => json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
                4 => json!({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}),
                5 => json!({}),
                6 => expression("Near", Some(vec![app])),
                7 => return None,
                8 => expression("In", None),
                _ => json!({"matchLabels": {"app": app, "tier": "t"}}),
            })
        }

        fn term((kind, app, by_host, scope): (u8, u8, bool, u8), unique: usize) -> Value {
            let mut term = json!({"topologyKey": if by_host { HOST } else { "zone" }});
            if let Some(selector) = selector(kind, app, unique) {
                term["labelSelector"] = selector;
            }
            match scope % 4 {
                1 => term["namespaces"] = json!(["b"]),
                2 => term["namespaceSelector"] = json!({}),
                3 => term["namespaceSelector"] = json!({"matchLabels": {"team": "x"}}),
                _ => {}
            }
            json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
        }

        /// Nodes in two zones (the last node in none); namespace a labelled team=x, b unlabelled, c
        /// unseen.
        fn cluster(nodes: u8, members: &[Member]) -> Cluster {
            let mut cluster = Cluster::new()
                .namespace("a", &[("team", "x")])
                .namespace("b", &[]);
            for n in 0..nodes {
                let name = format!("n{n}");
                let mut built = node(&name).label(HOST, &name);
                if n + 1 < nodes {
                    built = built.label("zone", &format!("z{}", n % 2));
                }
                cluster = cluster.node(built);
            }
            for (i, &(namespace, on, app, tier, finished, declared)) in members.iter().enumerate() {
                let namespace = ["a", "b", "c"][usize::from(namespace % 3)];
                let mut member = pod(&format!("{namespace}/p{i:02}"), &format!("n{}", on % nodes));
                if app < 4 {
                    member = member.label("app", &format!("a{app}"));
                }
                if tier {
                    member = member.label("tier", "t");
                }
                if finished {
                    member = member.phase("Succeeded");
                }
                if let Some(declared) = declared {
                    member = member.spec("affinity", term(declared, i));
                }
                cluster = cluster.pod(member);
            }
            cluster
        }

        fn node_of<'s>(snapshot: &'s Snapshot, pod: &PodInfo) -> Option<&'s NodeInfo> {
            snapshot.node(pod.node_name.as_deref()?)?.node.as_deref()
        }

        /// The pods of the domain `key=value`, in node order.
        fn domain<'s>(
            snapshot: &'s Snapshot,
            key: &'s str,
            value: &'s str,
        ) -> impl Iterator<Item = &'s Arc<PodInfo>> {
            snapshot
                .nodes
                .values()
                .filter(move |state| {
                    state
                        .node
                        .as_deref()
                        .and_then(|n| n.labels.get(key))
                        .map(String::as_str)
                        == Some(value)
                })
                .flat_map(|state| state.pods.values())
        }

        /// The pod's own terms, each tried on every pod of the node's domain.
        fn own_terms_scan(pod: &PodInfo, node: &NodeInfo, snapshot: &Snapshot) -> Option<String> {
            let namespace = &pod.key.namespace;
            for term in &pod.constraints.anti_affinity {
                let key = &term.topology_key;
                let Some(value) = node.labels.get(key) else {
                    continue;
                };
                let selects = |other: &PodInfo| {
                    term_selects(
                        term,
                        namespace,
                        &other.key.namespace,
                        &other.labels,
                        &snapshot.namespaces,
                    )
                };
                let selected = domain(snapshot, key, value)
                    .filter(|other| !other.phase.is_finished() && selects(other))
                    .count();
                let itself = node_of(snapshot, pod)
                    .is_some_and(|n| n.labels.get(key) == Some(value))
                    && selects(pod);
                if selected > usize::from(itself) {
                    return Some(format!(
                        "its required anti-affinity selects a pod in {key}={value}"
                    ));
                }
            }
            None
        }

        /// What the terms of the pods already placed may say of `pod` on `node`: for each topology
        /// key, the first workload (in node order) of the node's domain whose term selects it.
        fn repelled_scan(pod: &PodInfo, node: &NodeInfo, snapshot: &Snapshot) -> Vec<String> {
            let placed = || {
                snapshot.nodes.values().filter_map(|state| {
                    let node = state.node.as_deref()?;
                    Some(state.pods.values().map(move |other| (node, other)))
                })
            };
            let keys: BTreeSet<&str> = placed()
                .flatten()
                .flat_map(|(_, other)| &other.constraints.anti_affinity)
                .map(|term| term.topology_key.as_str())
                .collect();
            let mut found = Vec::new();
            for key in keys {
                let Some(value) = node.labels.get(key) else {
                    continue;
                };
                // Workloads (constraints, term, namespace) in order of their first pod: that pod,
                // and how many declare the term there.
                let mut workloads: Vec<(*const Constraints, usize, &str, &ObjectKey, usize)> =
                    Vec::new();
                for (on, other) in placed().flatten() {
                    if on.labels.get(key) != Some(value) || other.phase.is_finished() {
                        continue;
                    }
                    for (index, term) in other.constraints.anti_affinity.iter().enumerate() {
                        if term.topology_key != key {
                            continue;
                        }
                        let identity = (
                            Arc::as_ptr(&other.constraints),
                            index,
                            other.key.namespace.as_str(),
                        );
                        match workloads.iter_mut().find(|w| (w.0, w.1, w.2) == identity) {
                            Some(workload) => workload.4 += 1,
                            None => workloads.push((identity.0, index, identity.2, &other.key, 1)),
                        }
                    }
                }
                let first =
                    workloads
                        .iter()
                        .find(|&&(constraints, index, namespace, first, owners)| {
                            let term = &snapshot
                                .nodes
                                .values()
                                .flat_map(|state| state.pods.values())
                                .find(|other| Arc::as_ptr(&other.constraints) == constraints)
                                .map(|other| other.constraints.anti_affinity[index].clone());
                            !(owners == 1 && *first == pod.key)
                                && term.as_ref().is_some_and(|term| {
                                    term_selects(
                                        term,
                                        namespace,
                                        &pod.key.namespace,
                                        &pod.labels,
                                        &snapshot.namespaces,
                                    )
                                })
                        });
                if let Some((_, _, _, first, _)) = first {
                    found.push(format!(
                        "the required anti-affinity of {first} repels it ({key}={value})"
                    ));
                }
            }
            found
        }

        fn member() -> impl Strategy<Value = Member> {
            (
                0u8..3,
                0u8..6,
                0u8..5,
                any::<bool>(),
                prop::bool::weighted(0.1),
                prop::option::weighted(0.8, (0u8..10, 0u8..4, prop::bool::weighted(0.3), 0u8..4)),
            )
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(64))]

            #[test]
            fn indexed_searches_find_what_scans_find(
                nodes in 2u8..6,
                members in prop::collection::vec(member(), 16..72),
            ) {
                let snapshot = cluster(nodes, &members).snapshot();
                let pods: Vec<&Arc<PodInfo>> =
                    snapshot.nodes.values().flat_map(|state| state.pods.values()).collect();
                let nodes: Vec<&NodeInfo> =
                    snapshot.nodes.values().filter_map(|state| state.node.as_deref()).collect();

                // Each domain's pods a selector may select, through its index.
                for key in ["zone", HOST] {
                    let values: BTreeSet<&String> =
                        nodes.iter().filter_map(|n| n.labels.get(key)).collect();
                    for value in values {
                        let states = snapshot
                            .nodes
                            .values()
                            .filter(|s| s.node.as_deref().and_then(|n| n.labels.get(key)) == Some(value))
                            .cloned()
                            .collect();
                        let indexed = DomainPods::new(states);
                        for term in pods.iter().flat_map(|p| &p.constraints.anti_affinity) {
                            let Some(selector) = narrowing(term) else {
                                continue;
                            };
                            let found: Vec<&ObjectKey> = indexed
                                .candidates(Some(selector))
                                .filter(|p| matching::selector_matches(selector, &p.labels))
                                .map(|p| &p.key)
                                .collect();
                            let scanned: Vec<&ObjectKey> = domain(&snapshot, key, value)
                                .filter(|p| matching::selector_matches(selector, &p.labels))
                                .map(|p| &p.key)
                                .collect();
                            prop_assert_eq!(found, scanned);
                        }
                    }
                }

                let mut fit = AntiAffinityFit::default();
                for pod in &pods {
                    for node in &nodes {
                        let own = own_terms_scan(pod, node, &snapshot);
                        prop_assert_eq!(&fit.own_terms_refuse_pod(pod, node, &snapshot), &own);
                        let repelled = repelled_scan(pod, node, &snapshot);
                        match (fit.refuses(pod, node, &snapshot), &own) {
                            (found, Some(_)) => prop_assert_eq!(&found, &own),
                            (None, None) => prop_assert!(repelled.is_empty(), "{repelled:?}"),
                            (Some(why), None) => prop_assert!(repelled.contains(&why), "{why}: {repelled:?}"),
                        }
                    }
                    if let Some((key, refusing)) = fit.refusing_domains(pod, &snapshot) {
                        let scanned: BTreeSet<&String> = nodes
                            .iter()
                            .filter(|node| own_terms_scan(pod, node, &snapshot).is_some())
                            .filter_map(|node| node.labels.get(&key))
                            .collect();
                        let refusing: BTreeSet<&String> = refusing.iter().collect();
                        prop_assert_eq!(refusing, scanned);
                    }
                }
            }
        }
    }
}
