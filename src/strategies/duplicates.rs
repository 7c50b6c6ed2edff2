//! removeDuplicates: spread pods of one owner (ReplicaSet, StatefulSet, Job, ...) that pile up on one
//! node, as happens after a node outage. Pods are duplicates when they share the owner and the same
//! container images. With `total` such pods and `n` nodes they could run on, a node keeps at most
//! `ceil(total / n)` of them; the newest extra ones are evicted.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use super::common::{Selection, movable, newest_first};
use crate::api::args::RemoveDuplicatesArgs;
use crate::{
    cluster::PodInfo,
    framework::{Admission, Balancing, Candidate, PlanContext, Plugin, StrategyId},
};

const ID: StrategyId = StrategyId::RemoveDuplicates;

pub struct RemoveDuplicates {
    args: RemoveDuplicatesArgs,
}

/// Owner UID and image set.
type GroupKey<'s> = (&'s str, u64);

/// One owner's duplicates by node.
type ByNode<'s> = BTreeMap<&'s str, Vec<&'s Arc<PodInfo>>>;

impl RemoveDuplicates {
    pub fn new(args: RemoveDuplicatesArgs) -> Self {
        RemoveDuplicates { args }
    }

    fn selection(&self) -> Selection<'_> {
        Selection {
            namespaces: &self.args.namespaces,
            label_selector: None,
        }
    }
}

impl Plugin for RemoveDuplicates {
    fn id(&self) -> StrategyId {
        ID
    }

    fn validate(&self) -> Result<(), String> {
        self.selection().validate()
    }
}

impl Balancing for RemoveDuplicates {
    fn balance(&self, ctx: &PlanContext<'_>, admission: &mut dyn Admission) {
        let selection = self.selection();
        let mut groups: HashMap<GroupKey<'_>, ByNode<'_>> = HashMap::new();
        for (node, state) in &ctx.snapshot.nodes {
            for pod in state.pods.values() {
                let Some(owner) = &pod.owner else { continue };
                if owner.kind == "DaemonSet"
                    || !movable(pod, ctx)
                    || !selection.admits(pod)
                    || pod
                        .owner_kinds
                        .iter()
                        .any(|k| self.args.exclude_owner_kinds.contains(k))
                {
                    continue;
                }
                groups
                    .entry((owner.uid.as_str(), pod.images_hash))
                    .or_default()
                    .entry(node.as_str())
                    .or_default()
                    .push(pod);
            }
        }
        // A replica evicted earlier in this plan leaves its node but is replaced somewhere: it counts
        // in the owner's total, not on its node. Counting it on the node would evict its neighbours
        // for a pile-up that is already being cleared; leaving it out of the total would shrink every
        // node's share and evict more than the pile-up.
        let has_duplicates = |nodes: &ByNode<'_>| nodes.values().any(|pods| pods.len() > 1);
        let mut with_duplicates: Vec<(usize, ByNode<'_>)> = groups
            .into_values()
            .filter(has_duplicates)
            .map(|mut nodes| {
                let total = nodes.values().map(Vec::len).sum();
                for pods in nodes.values_mut() {
                    pods.retain(|p| !admission.admitted(p));
                }
                (total, nodes)
            })
            .filter(|(_, nodes)| has_duplicates(nodes))
            .collect();
        // Deterministic order: by the first pod of each group.
        with_duplicates.sort_by_cached_key(|(_, nodes)| {
            nodes
                .values()
                .flatten()
                .map(|p| &p.key)
                .min()
                .cloned()
                .unwrap_or_default()
        });
        let mut feasible_by_shape: HashMap<u64, usize> = HashMap::new();
        for (total, nodes) in with_duplicates {
            let Some(sample) = nodes.values().flatten().next() else {
                continue;
            };
            let feasible = *feasible_by_shape
                .entry(sample.constraints.signature)
                .or_insert_with(|| {
                    ctx.snapshot
                        .nodes
                        .values()
                        .filter_map(|s| s.node.as_deref())
                        .filter(|n| sample.constraints.allows_node(n))
                        .count()
                });
            if feasible < 2 {
                continue;
            }
            let keep = total.div_ceil(feasible).max(1);
            for (node, mut pods) in nodes {
                let on_node = pods.len();
                if on_node <= keep {
                    continue;
                }
                let mut excess = on_node - keep;
                pods.sort_by(|a, b| newest_first(a).cmp(&newest_first(b)));
                for pod in pods {
                    if excess == 0 {
                        break;
                    }
                    if admission.protected(pod) {
                        continue;
                    }
                    let reason = format!(
                        "node {node} runs {on_node} of the {total} pods of {}; at most {keep} per \
                         node ({total} pods over {feasible} feasible nodes)",
                        pod.job,
                    );
                    if admission.offer(Candidate::new(pod, ID, reason)) {
                        excess -= 1;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;

    fn replica(name: &str, node: &str) -> PodBuilder {
        pod(name, node, "100m", "128Mi").owner("ReplicaSet", "web")
    }

    #[test]
    fn keeps_a_fair_share_per_node_and_evicts_the_newest() {
        let mut cluster = Cluster::new()
            .node(node("n1", "4", "8Gi", 110))
            .node(node("n2", "4", "8Gi", 110))
            .node(node("n3", "4", "8Gi", 110))
            .pod(replica("a/web-1", "n1").created("2026-03-01T10:00:00Z"))
            .pod(replica("a/web-2", "n1").created("2026-03-01T11:00:00Z"))
            .pod(replica("a/web-3", "n1").created("2026-03-01T12:00:00Z"))
            .pod(replica("a/web-4", "n1").created("2026-03-01T13:00:00Z"))
            .pod(replica("a/web-5", "n2"))
            .pod(pod("a/other", "n1", "100m", "128Mi").owner("ReplicaSet", "api"));
        // 5 pods over 3 nodes: at most 2 per node; n1 has 4, so its 2 newest go. The budget of a job
        // without one is 1 per round: the other replicas, tried in turn, are refused.
        let out = cluster.plan("mode: Evict\nstrategies:\n  removeDuplicates: {}\n");
        assert_eq!(out.evicted(), ["a/web-4"]);
        assert_eq!(
            out.skipped(),
            ["a/web-3 budget", "a/web-2 budget", "a/web-1 budget"]
        );
        let out = cluster.plan(
            "mode: Evict\nstrategies:\n  removeDuplicates: {}\ndefaults: {jobBudget: {maxUnavailable: 2}}\n",
        );
        assert_eq!(out.evicted(), ["a/web-4", "a/web-3"]);
    }

    #[test]
    fn different_images_are_not_duplicates_and_excluded_kinds_stay() {
        let mut cluster = Cluster::new()
            .node(node("n1", "4", "8Gi", 110))
            .node(node("n2", "4", "8Gi", 110))
            .pod(replica("a/web-1", "n1"))
            .pod(replica("a/web-2", "n1").image("example.com/app:2"));
        assert!(
            cluster
                .plan("mode: Evict\nstrategies:\n  removeDuplicates: {}\n")
                .evicted()
                .is_empty()
        );
        let mut cluster = Cluster::new()
            .node(node("n1", "4", "8Gi", 110))
            .node(node("n2", "4", "8Gi", 110))
            .pod(replica("a/web-1", "n1"))
            .pod(replica("a/web-2", "n1").created("2026-03-02T00:00:00Z"));
        assert_eq!(
            cluster
                .plan("mode: Evict\nstrategies:\n  removeDuplicates: {}\n")
                .evicted(),
            ["a/web-2"]
        );
        assert!(
            cluster
                .plan("mode: Evict\nstrategies:\n  removeDuplicates: {excludeOwnerKinds: [ReplicaSet]}\n")
                .evicted()
                .is_empty()
        );
    }

    #[test]
    fn no_eviction_without_another_feasible_node() {
        let mut cluster = Cluster::new()
            .node(node("n1", "4", "8Gi", 110))
            .node(node("n2", "4", "8Gi", 110).taint("dedicated", "x", "NoSchedule"))
            .node(node("n3", "4", "8Gi", 110).unschedulable())
            .pod(replica("a/web-1", "n1"))
            .pod(replica("a/web-2", "n1"));
        assert!(
            cluster
                .plan("mode: Evict\nstrategies:\n  removeDuplicates: {}\n")
                .evicted()
                .is_empty()
        );
    }

    const WITH_NODE_FIT: &str = "mode: Evict\nstrategies:\n  removeDuplicates: {}\nprotections: {nodeFit: true}\ndefaults: {jobBudget: {maxUnavailable: 100%}}\n";

    #[test]
    fn under_node_fit_only_duplicates_with_somewhere_to_go_are_evicted() {
        // Four replicas on n1 over two feasible nodes: two should go, but n2 has room for one.
        let mut cluster = Cluster::new()
            .node(node("n1", "4", "8Gi", 110))
            .node(node("n2", "1", "8Gi", 110))
            .pod(replica("a/web-1", "n1").created("2026-03-01T10:00:00Z"))
            .pod(replica("a/web-2", "n1").created("2026-03-01T11:00:00Z"))
            .pod(replica("a/web-3", "n1").created("2026-03-01T12:00:00Z"))
            .pod(replica("a/web-4", "n1").created("2026-03-01T13:00:00Z"))
            .pod(pod("a/filler", "n2", "800m", "1Gi"));
        let out = cluster.plan(WITH_NODE_FIT);
        // n2 has 200m free: room for both replicas that should go.
        assert_eq!(out.evicted(), ["a/web-4", "a/web-3"]);
        let mut cluster = cluster.pod(pod("a/filler", "n2", "850m", "1Gi"));
        let out = cluster.plan(WITH_NODE_FIT);
        // 150m free on n2: one replica fits; the next is refused, and the others are tried in turn.
        assert_eq!(out.evicted(), ["a/web-4"]);
        assert_eq!(
            out.skipped(),
            ["a/web-3 nodefit", "a/web-2 nodefit", "a/web-1 nodefit"]
        );
    }

    #[test]
    fn replicas_evicted_by_an_earlier_strategy_leave_their_node_but_count_in_the_total() {
        // podLifeTime evicts the two oldest of four replicas on n1: the two left are within their
        // share (4 over 2 nodes: 2 per node), so removeDuplicates has nothing to do. It used to evict
        // the other two as well, emptying n1.
        let mut cluster = Cluster::new()
            .node(node("n1", "4", "8Gi", 110))
            .node(node("n2", "4", "8Gi", 110))
            .pod(replica("a/web-1", "n1").created("2026-01-01T00:00:00Z"))
            .pod(replica("a/web-2", "n1").created("2026-01-02T00:00:00Z"))
            .pod(replica("a/web-3", "n1"))
            .pod(replica("a/web-4", "n1"));
        let out = cluster.plan(
            "mode: Evict\nstrategies:\n  podLifeTime: {maxPodLifeTimeSeconds: 864000}\n  removeDuplicates: {}\ndefaults: {jobBudget: {maxUnavailable: 100%}}\n",
        );
        assert_eq!(out.evicted(), ["a/web-1", "a/web-2"]);
    }
}
