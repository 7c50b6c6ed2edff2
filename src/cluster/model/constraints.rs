//! Where a pod may run: its node selector, node affinity, tolerations, pod anti-affinity and topology
//! spread constraints, read once at ingest, and the checks that combine them with a node.

use std::{
    collections::BTreeMap,
    hash::{DefaultHasher, Hash, Hasher},
};

use k8s_openapi::api::core::v1::{
    NodeSelector, PodAffinityTerm, PodSpec, PreferredSchedulingTerm, Toleration,
    TopologySpreadConstraint,
};

use crate::cluster::{
    model::node::NodeInfo,
    rules::matching::{self, HARD_EFFECTS},
};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Constraints {
    pub node_selector: BTreeMap<String, String>,
    /// `requiredDuringSchedulingIgnoredDuringExecution` node affinity.
    pub required: Option<NodeSelector>,
    /// `preferredDuringSchedulingIgnoredDuringExecution` node affinity.
    pub preferred: Vec<PreferredSchedulingTerm>,
    /// Required pod anti-affinity terms.
    pub anti_affinity: Vec<PodAffinityTerm>,
    pub tolerations: Vec<Toleration>,
    pub spread: Vec<TopologySpreadConstraint>,
    /// Equal for pods whose selector, required affinity and tolerations are equal: such pods may run on
    /// the same nodes (resources aside), which lets fit checks remember answers per shape of pod.
    pub signature: u64,
    /// Equal for equal constraints, every field read: the cache files its one copy of each under it.
    /// Filed under the signature alone, the workloads of a namespace that spread or repel by their
    /// own labels, and share a node placement, were compared one by one for every pod ingested.
    pub fingerprint: u64,
}

impl Constraints {
    pub fn from_spec(spec: Option<&PodSpec>) -> Constraints {
        let Some(spec) = spec else {
            return Constraints::default();
        };
        let affinity = spec.affinity.as_ref();
        let node_affinity = affinity.and_then(|a| a.node_affinity.as_ref());
        let mut placement = Constraints {
            node_selector: spec.node_selector.clone().unwrap_or_default(),
            required: node_affinity.and_then(|n| {
                n.required_during_scheduling_ignored_during_execution
                    .clone()
            }),
            preferred: node_affinity
                .and_then(|n| {
                    n.preferred_during_scheduling_ignored_during_execution
                        .clone()
                })
                .unwrap_or_default(),
            anti_affinity: affinity
                .and_then(|a| a.pod_anti_affinity.as_ref())
                .and_then(|a| {
                    a.required_during_scheduling_ignored_during_execution
                        .clone()
                })
                .unwrap_or_default(),
            tolerations: spec.tolerations.clone().unwrap_or_default(),
            spread: spec.topology_spread_constraints.clone().unwrap_or_default(),
            signature: 0,
            fingerprint: 0,
        };
        placement.signature = placement.compute_signature();
        placement.fingerprint = placement.compute_fingerprint();
        placement
    }

    fn compute_fingerprint(&self) -> u64 {
        let mut hasher = DefaultHasher::new();
        self.signature.hash(&mut hasher);
        // Most pods declare none of these: their fingerprint is their signature's hash.
        if !(self.preferred.is_empty() && self.anti_affinity.is_empty() && self.spread.is_empty()) {
            serde_json::to_vec(&(&self.preferred, &self.anti_affinity, &self.spread))
                .unwrap_or_default()
                .hash(&mut hasher);
        }
        hasher.finish()
    }

    fn compute_signature(&self) -> u64 {
        let mut hasher = DefaultHasher::new();
        self.node_selector.hash(&mut hasher);
        // The API types do not implement Hash; their JSON form is canonical enough (fields in a fixed
        // order) to tell shapes apart, and this runs once per pod at ingest.
        serde_json::to_vec(&self.required)
            .unwrap_or_default()
            .hash(&mut hasher);
        serde_json::to_vec(&self.tolerations)
            .unwrap_or_default()
            .hash(&mut hasher);
        hasher.finish()
    }

    /// The node selector and required node affinity both allow `node`.
    pub fn matches_node(&self, node: &NodeInfo) -> bool {
        self.node_selector
            .iter()
            .all(|(k, v)| node.labels.get(k) == Some(v))
            && self
                .required
                .as_ref()
                .is_none_or(|r| matching::node_selector_matches(r, &node.name, &node.labels))
    }

    /// Every taint of `node` with one of `effects` is tolerated.
    pub fn tolerates_node(&self, node: &NodeInfo, effects: &[&str]) -> bool {
        matching::untolerated(&self.tolerations, &node.taints, effects).is_none()
    }

    /// The scheduler would consider `node` for this pod, resources aside: ready, schedulable, selected
    /// by the pod's node selector and required affinity, no untolerated NoSchedule/NoExecute taint.
    pub fn allows_node(&self, node: &NodeInfo) -> bool {
        node.ready
            && !node.unschedulable
            && node.problems.is_empty()
            && self.matches_node(node)
            && self.tolerates_node(node, HARD_EFFECTS)
    }

    /// Sum of the weights of the preferred node affinity terms `node` matches.
    pub fn preferred_score(&self, node: &NodeInfo) -> i64 {
        self.preferred
            .iter()
            .filter(|t| matching::node_term_matches(&t.preference, &node.name, &node.labels))
            .map(|t| i64::from(t.weight))
            .sum()
    }

    /// The best score any node could give.
    pub fn max_preferred_score(&self) -> i64 {
        self.preferred
            .iter()
            .map(|t| i64::from(t.weight).max(0))
            .sum()
    }
}
