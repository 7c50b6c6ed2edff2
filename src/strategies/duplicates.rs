//! removeDuplicates: spread pods of one owner (ReplicaSet, StatefulSet, Job, ...) that pile up on one
//! node, as happens after a node outage. Pods are duplicates when they share the owner and the same
//! container images. With `total` such pods and `n` nodes they could run on, a node keeps at most
//! `ceil(total / n)` of them; the newest extra ones are evicted.
//!
//! The pods of one owner need not share a placement (a patched selector, a rollout in progress), so
//! feasibility is decided per placement (constraints and what tidal's placement rules read), never
//! from one sample pod: the nodes the group could run on are those of every placement that could run
//! on two or more (as the descheduler counts them), and a pod is only evicted if its own placement
//! allows some other node.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    sync::Arc,
};

use super::shared::{Selection, movable, newest_first};
use crate::api::args::RemoveDuplicatesArgs;
use crate::{
    cluster::PodInfo,
    framework::{Balancing, Candidate, Gatekeeper, PlanContext, Plugin, StrategyId},
};

const ID: StrategyId = StrategyId::RemoveDuplicates;

pub(crate) struct RemoveDuplicates {
    args: RemoveDuplicatesArgs,
}

/// Owner UID and image set.
type GroupKey<'s> = (&'s str, u64);

/// One owner's duplicates by node.
type ByNode<'s> = BTreeMap<&'s str, Vec<&'s Arc<PodInfo>>>;

/// A pod's placement: its constraint signature and its placement-rule key. Pods with equal ones may
/// run on the same nodes.
type PlacementKey = (u64, u64);

fn placement(pod: &PodInfo, ctx: &PlanContext<'_>) -> PlacementKey {
    (pod.constraints.signature, ctx.placement_key(pod))
}

/// The nodes a pod of `pod`'s placement may run on: ready, schedulable, allowed by its selector,
/// affinity and taints, and by tidal's placement rules.
fn feasible_nodes<'s>(pod: &PodInfo, ctx: &PlanContext<'s>) -> BTreeSet<&'s str> {
    ctx.snapshot
        .nodes
        .values()
        .filter_map(|s| s.node.as_deref())
        .filter(|n| pod.constraints.allows_node(n) && ctx.may_run_on(pod, n))
        .map(|n| n.name.as_str())
        .collect()
}

impl RemoveDuplicates {
    pub(crate) fn new(args: RemoveDuplicatesArgs) -> Self {
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
    fn balance(&self, ctx: &PlanContext<'_>, gatekeeper: &mut dyn Gatekeeper) {
        let selection = self.selection();
        let mut groups: HashMap<GroupKey<'_>, ByNode<'_>> = HashMap::new();
        for (node, state) in &ctx.snapshot.nodes {
            for pod in state.pods.values() {
                let Some(owner) = &pod.owner else { continue };
                if pod.is_daemon_set_pod()
                    || !movable(pod, ctx)
                    || !selection.admits(pod)
                    || pod
                        .owner_kinds()
                        .any(|k| self.args.exclude_owner_kinds.iter().any(|w| w == k))
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
                    pods.retain(|p| !gatekeeper.admitted(p));
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
        let mut feasible_by_placement: HashMap<PlacementKey, Arc<BTreeSet<&str>>> = HashMap::new();
        for (total, nodes) in with_duplicates {
            // The group's distinct placements (usually one), each with the nodes it may run on.
            let mut placements: Vec<Arc<BTreeSet<&str>>> = Vec::new();
            let mut seen: HashSet<PlacementKey> = HashSet::new();
            for pod in nodes.values().flatten() {
                let key = placement(pod, ctx);
                if seen.insert(key) {
                    let feasible = feasible_by_placement
                        .entry(key)
                        .or_insert_with(|| Arc::new(feasible_nodes(pod, ctx)));
                    // A placement that fits one node at most spreads nothing (the descheduler's rule).
                    if feasible.len() > 1 {
                        placements.push(Arc::clone(feasible));
                    }
                }
            }
            let feasible = match placements.as_slice() {
                [] => 0,
                [only] => only.len(),
                several => several
                    .iter()
                    .flat_map(|nodes| nodes.iter())
                    .collect::<BTreeSet<_>>()
                    .len(),
            };
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
                    if gatekeeper.protected(pod) {
                        continue;
                    }
                    // Its own placement must allow another node, or it would only come back
                    // pending (or here).
                    let elsewhere = feasible_by_placement
                        .get(&placement(pod, ctx))
                        .is_some_and(|nodes| nodes.iter().any(|n| *n != node));
                    if !elsewhere {
                        continue;
                    }
                    let reason = format!(
                        "node {node} runs {on_node} of the {total} pods of {}; at most {keep} per \
                         node ({total} pods over {feasible} feasible nodes)",
                        pod.job,
                    );
                    if gatekeeper.offer(Candidate::new(pod, ID, reason)) {
                        excess -= 1;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::*;

    fn replica(name: &str, node: &str) -> PodBuilder {
        pod(name, node)
            .requests("100m", "128Mi")
            .owned_by("ReplicaSet", "web")
    }

    #[test]
    fn keeps_a_fair_share_per_node_and_evicts_the_newest() {
        let mut cluster = Cluster::new()
            .node(node("n1").allocatable("4", "8Gi", 110))
            .node(node("n2").allocatable("4", "8Gi", 110))
            .node(node("n3").allocatable("4", "8Gi", 110))
            .pod(replica("a/web-1", "n1").created("2026-11-21T02:00:00Z"))
            .pod(replica("a/web-2", "n1").created("2026-11-21T03:00:00Z"))
            .pod(replica("a/web-3", "n1").created("2026-11-21T04:00:00Z"))
            .pod(replica("a/web-4", "n1").created("2026-11-21T05:00:00Z"))
            .pod(replica("a/web-5", "n2"))
            .pod(
                pod("a/other", "n1")
                    .requests("100m", "128Mi")
                    .owned_by("ReplicaSet", "api"),
            );
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
            .node(node("n1").allocatable("4", "8Gi", 110))
            .node(node("n2").allocatable("4", "8Gi", 110))
            .pod(replica("a/web-1", "n1"))
            .pod(replica("a/web-2", "n1").image("example.com/app:2"));
        assert!(
            cluster
                .plan("mode: Evict\nstrategies:\n  removeDuplicates: {}\n")
                .evicted()
                .is_empty()
        );
        let mut cluster = Cluster::new()
            .node(node("n1").allocatable("4", "8Gi", 110))
            .node(node("n2").allocatable("4", "8Gi", 110))
            .pod(replica("a/web-1", "n1"))
            .pod(replica("a/web-2", "n1").created("2026-11-21T16:00:00Z"));
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
            .node(node("n1").allocatable("4", "8Gi", 110))
            .node(
                node("n2")
                    .allocatable("4", "8Gi", 110)
                    .taint("dedicated", "x", "NoSchedule"),
            )
            .node(node("n3").allocatable("4", "8Gi", 110).unschedulable())
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
            .node(node("n1").allocatable("4", "8Gi", 110))
            .node(node("n2").allocatable("1", "8Gi", 110))
            .pod(replica("a/web-1", "n1").created("2026-11-21T02:00:00Z"))
            .pod(replica("a/web-2", "n1").created("2026-11-21T03:00:00Z"))
            .pod(replica("a/web-3", "n1").created("2026-11-21T04:00:00Z"))
            .pod(replica("a/web-4", "n1").created("2026-11-21T05:00:00Z"))
            .pod(pod("a/filler", "n2").requests("800m", "1Gi"));
        let out = cluster.plan(WITH_NODE_FIT);
        // n2 has 200m free: room for both replicas that should go.
        assert_eq!(out.evicted(), ["a/web-4", "a/web-3"]);
        let mut cluster = cluster.pod(pod("a/filler", "n2").requests("850m", "1Gi"));
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
        // share (4 over 2 nodes: 2 per node), so removeDuplicates has nothing to do: counting only the
        // replicas left would evict the other two as well, emptying n1.
        let mut cluster = Cluster::new()
            .node(node("n1").allocatable("4", "8Gi", 110))
            .node(node("n2").allocatable("4", "8Gi", 110))
            .pod(replica("a/web-1", "n1").created("2026-09-22T16:00:00Z"))
            .pod(replica("a/web-2", "n1").created("2026-09-23T16:00:00Z"))
            .pod(replica("a/web-3", "n1"))
            .pod(replica("a/web-4", "n1"));
        let out = cluster.plan(
            "mode: Evict\nstrategies:\n  podLifeTime: {maxPodLifeTimeSeconds: 864000}\n  removeDuplicates: {}\ndefaults: {jobBudget: {maxUnavailable: 100%}}\n",
        );
        assert_eq!(out.evicted(), ["a/web-1", "a/web-2"]);
    }

    #[test]
    fn feasibility_is_per_placement_and_a_pod_that_fits_nowhere_else_stays() {
        // Three replicas on n1; the newest carries a node selector no node matches (patched after it
        // was scheduled). The group could spread over three nodes, so n1 keeps one: the two others
        // go, the stuck one stays, whatever the pods are called. A plan that followed one sample pod
        // would depend on the names: named first, the stuck pod would make the whole group look
        // unplaceable (nothing evicted); named last, it would be evicted itself although it fits no
        // node.
        for stuck in ["a/web-0-stuck", "a/web-9-stuck"] {
            let mut cluster = Cluster::new()
                .node(node("n1").allocatable("4", "8Gi", 110))
                .node(node("n2").allocatable("4", "8Gi", 110))
                .node(node("n3").allocatable("4", "8Gi", 110))
                .pod(replica("a/web-1", "n1").created("2026-11-21T02:00:00Z"))
                .pod(replica("a/web-2", "n1").created("2026-11-21T03:00:00Z"))
                .pod(
                    replica(stuck, "n1")
                        .created("2026-11-21T04:00:00Z")
                        .spec("nodeSelector", serde_json::json!({"disk": "none"})),
                );
            let out = cluster.plan(
                "mode: Evict\nstrategies:\n  removeDuplicates: {}\ndefaults: {jobBudget: {maxUnavailable: 100%}}\n",
            );
            assert_eq!(out.evicted(), ["a/web-2", "a/web-1"], "{stuck}");
            assert!(
                out.reason("a/web-2")
                    .contains("3 pods over 3 feasible nodes"),
                "{}",
                out.reason("a/web-2")
            );
        }
    }

    #[test]
    fn duplicates_spread_only_over_nodes_tidals_placement_rules_allow() {
        // Two non-preemptable replicas on n1; the only other node is revocable: nowhere to spread.
        let mut cluster = Cluster::new()
            .zone(zone("rz").window("00:00-00:00"))
            .node(node("n1").allocatable("4", "8Gi", 110))
            .node(node("rev").allocatable("4", "8Gi", 110).zone("rz"))
            .pod(replica("a/web-1", "n1"))
            .pod(replica("a/web-2", "n1"));
        let plan = "mode: Evict\nstrategies:\n  removeDuplicates: {}\n";
        assert!(cluster.plan(plan).evicted().is_empty());
        // Preemptable ones may use the open zone's node.
        let mut cluster = cluster
            .pod(replica("a/web-1", "n1").annotation("volcano.sh/preemptable", "true"))
            .pod(
                replica("a/web-2", "n1")
                    .annotation("volcano.sh/preemptable", "true")
                    .created("2026-11-21T16:00:00Z"),
            );
        assert_eq!(cluster.plan(plan).evicted(), ["a/web-2"]);
    }
}
