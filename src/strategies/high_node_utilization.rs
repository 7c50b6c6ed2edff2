//! highNodeUtilization: bin packing. Schedulable nodes below `thresholds` on every listed resource are
//! emptied, least used first, so that their pods pack onto the other schedulable nodes and an
//! autoscaler can remove the empty ones. Pair it with a scheduler that scores `MostAllocated`. Moves stop
//! when the other nodes' spare room (up to 100% of allocatable) runs out on some resource.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Strategy,
    common::{Selection, movable, victim_order},
    low_node_utilization::describe_thresholds,
    proposals,
    utilization::{
        NodeUsage, Room, Thresholds, UsageArgs, below_all, bounded_resources, describe_percent,
        node_usages, pod_usage, validate_thresholds,
    },
};
use crate::{
    api::policy::NamespaceFilter,
    cluster::PodInfo,
    plan::{Admission, Candidate, PlanContext},
};

pub const NAME: &str = "highNodeUtilization";

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HighNodeUtilizationArgs {
    /// Percent of allocatable per resource below which (on every listed resource) a node is
    /// underutilized and gets emptied.
    #[schemars(extend("maxProperties" = 32))]
    pub thresholds: Thresholds,
    /// Act only when more than this many nodes are underutilized.
    #[serde(default)]
    pub number_of_nodes: u32,
    #[serde(default)]
    pub usage: UsageArgs,
    /// Namespaces whose pods may be evicted (usage counts every pod).
    #[serde(default)]
    pub namespaces: NamespaceFilter,
}

pub struct HighNodeUtilization {
    args: HighNodeUtilizationArgs,
}

impl HighNodeUtilization {
    pub fn new(args: HighNodeUtilizationArgs) -> Self {
        HighNodeUtilization { args }
    }

    fn selection(&self) -> Selection<'_> {
        Selection {
            namespaces: &self.args.namespaces,
            label_selector: None,
        }
    }
}

impl Strategy for HighNodeUtilization {
    fn name(&self) -> &'static str {
        NAME
    }

    fn validate(&self) -> Result<(), String> {
        validate_thresholds("thresholds", &self.args.thresholds)?;
        self.selection().validate()
    }

    fn propose(&self, ctx: &PlanContext<'_>) -> Vec<Candidate> {
        proposals(self, ctx)
    }

    fn run(&self, ctx: &PlanContext<'_>, admission: &mut dyn Admission) {
        let args = &self.args;
        let (nodes, _unmeasured) = node_usages(ctx, &args.usage);
        let listed: Vec<String> = args.thresholds.keys().cloned().collect();
        let (mut under, others): (Vec<&NodeUsage<'_>>, Vec<&NodeUsage<'_>>) = nodes
            .iter()
            .filter(|n| !n.node.unschedulable)
            .partition(|n| below_all(n, &args.thresholds));
        if under.is_empty() || others.is_empty() || under.len() <= args.number_of_nodes as usize {
            return;
        }
        let mut room = Room::new(&others, bounded_resources(&args.thresholds), |_| 100.0);
        under.sort_by(|a, b| {
            a.load(&listed)
                .total_cmp(&b.load(&listed))
                .then_with(|| a.node.name.cmp(&b.node.name))
        });
        let selection = self.selection();
        for source in under {
            let mut pods: Vec<&Arc<PodInfo>> = source
                .state
                .pods
                .values()
                .filter(|p| movable(p, ctx) && selection.admits(p))
                .collect();
            pods.sort_by(|a, b| victim_order(a).cmp(&victim_order(b)));
            let why = format!(
                "node {} is underutilized ({}; thresholds {}): emptying it onto {} fuller node(s) with room",
                source.node.name,
                describe_percent(source, &listed),
                describe_thresholds(&args.thresholds),
                others.len(),
            );
            for pod in pods {
                if room.exhausted() {
                    return;
                }
                if admission.protected(pod) {
                    continue;
                }
                let Some(pod_usage) = pod_usage(pod, ctx, &args.usage) else {
                    continue;
                };
                if !room.admits(pod, &pod_usage) {
                    continue;
                }
                let reason = format!("{why} {}", room.describe());
                if admission.offer(Candidate::new(pod, NAME, reason)) {
                    room.take(&pod_usage);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::*;

    const SPEC: &str = "mode: Evict\nstrategies:\n  highNodeUtilization:\n    thresholds: {cpu: 20, memory: 20}\ndefaults: {jobBudget: {maxUnavailable: 100}}\n";

    #[test]
    fn empties_the_least_used_nodes_onto_the_fuller_ones() {
        let mut cluster = Cluster::new()
            .node(node("n1", "10", "100Gi", 110))
            .node(node("n2", "10", "100Gi", 110))
            .node(node("n3", "10", "100Gi", 110))
            .pod(pod("a/big", "n1", "5", "50Gi"))
            .pod(pod("a/small", "n2", "1", "1Gi"))
            .pod(pod("a/smaller", "n3", "500m", "1Gi"))
            .pod(pod("a/ds", "n3", "100m", "1Gi").owner("DaemonSet", "agent"));
        let out = cluster.plan(SPEC);
        // n3 (least used) first, then n2; the DaemonSet pod is left silently.
        assert_eq!(out.evicted(), ["a/smaller", "a/small"]);
        assert!(out.skipped().is_empty());
    }

    #[test]
    fn needs_a_fuller_node_with_room() {
        let mut cluster = Cluster::new()
            .node(node("n1", "10", "100Gi", 110))
            .node(node("n2", "10", "100Gi", 110))
            .pod(pod("a/small", "n2", "1", "1Gi"));
        assert!(
            cluster.plan(SPEC).evicted().is_empty(),
            "every node is underutilized"
        );
        let mut cluster = Cluster::new()
            .node(node("n1", "10", "100Gi", 110))
            .node(node("n2", "10", "100Gi", 110))
            .pod(pod("a/full", "n1", "9500m", "1Gi"))
            .pod(pod("a/small", "n2", "1", "1Gi"));
        assert!(
            cluster.plan(SPEC).evicted().is_empty(),
            "n1 has only 500m left"
        );
    }
}
