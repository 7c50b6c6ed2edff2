//! highNodeUtilization: bin packing. Schedulable nodes below `thresholds` on every listed resource are
//! emptied, least used first, so that their pods pack onto the other schedulable nodes and an
//! autoscaler can remove the empty ones. Pair it with a scheduler that scores `MostAllocated`. A pod moves
//! only if one of the other nodes would take it and has room for all of it ([`Room`]); moves stop when
//! their spare room (up to 100% of allocatable) runs out on some resource.

use super::usage::{
    NodeUsage, Room, below_all, bounded_resources, describe_percent, describe_thresholds,
    node_usages, pod_usage, thousands, validate_thresholds,
};
use crate::api::args::{EvictionMode, HighNodeUtilizationArgs};
use crate::framework::{Balancing, Candidate, Gatekeeper, PlanContext, Plugin, StrategyId};
use crate::strategies::shared::Selection;

const ID: StrategyId = StrategyId::HighNodeUtilization;

pub(crate) struct HighNodeUtilization {
    args: HighNodeUtilizationArgs,
}

impl HighNodeUtilization {
    pub(crate) fn new(args: HighNodeUtilizationArgs) -> Self {
        HighNodeUtilization { args }
    }

    fn selection(&self) -> Selection<'_> {
        Selection {
            namespaces: &self.args.namespaces,
            label_selector: None,
        }
    }
}

impl Plugin for HighNodeUtilization {
    fn id(&self) -> StrategyId {
        ID
    }

    fn validate(&self) -> Result<(), String> {
        if self.args.usage.source == crate::api::args::UsageSource::Prometheus {
            return Err(
                "highNodeUtilization reads requests or Metrics, not Prometheus (nor does the \
                 descheduler's)"
                    .to_owned(),
            );
        }
        validate_thresholds("thresholds", &self.args.thresholds)?;
        self.selection().validate()
    }
}

impl Balancing for HighNodeUtilization {
    fn balance(&self, ctx: &PlanContext<'_>, gatekeeper: &mut dyn Gatekeeper) {
        let args = &self.args;
        let listed: Vec<String> = args.thresholds.keys().cloned().collect();
        let (nodes, _unmeasured) = node_usages(ctx, &args.usage, &listed, gatekeeper);
        let (mut under, others): (Vec<&NodeUsage<'_>>, Vec<&NodeUsage<'_>>) = nodes
            .iter()
            .filter(|n| !n.node.unschedulable)
            .partition(|n| below_all(n, &args.thresholds));
        let saw = format!(
            "{} node(s): {} underutilized (at or below {}), {} fuller",
            thousands(ctx.snapshot.nodes.len()),
            thousands(under.len()),
            describe_thresholds(&args.thresholds),
            thousands(others.len()),
        );
        let idle = if under.is_empty() {
            Some("no node is underutilized: nothing to empty")
        } else if others.is_empty() {
            Some("no fuller node to pack onto")
        } else if under.len() <= args.number_of_nodes as usize {
            Some("numberOfNodes asks for more underutilized nodes")
        } else {
            None
        };
        if let Some(idle) = idle {
            gatekeeper.observe(format!("{saw}; {idle}"));
            return;
        }
        let (mut offered, mut no_destination, mut diagnosis) = (0usize, 0usize, None);
        let mut room = Room::new(&others, bounded_resources(&args.thresholds), |_| 100.0);
        under.sort_by(|a, b| {
            a.load(&listed)
                .total_cmp(&b.load(&listed))
                .then_with(|| a.node.name.cmp(&b.node.name))
        });
        let selection = self.selection();
        let thresholding_only = args
            .eviction_modes
            .contains(&EvictionMode::OnlyThresholdingResources);
        for source in under {
            let pods =
                selection.movable_in_victim_order(source.state.pods.values(), ctx, gatekeeper);
            let why = format!(
                "node {} is underutilized ({}; thresholds {}): emptying it onto {} fuller node(s) with room",
                source.node.name,
                describe_percent(source, &listed),
                describe_thresholds(&args.thresholds),
                others.len(),
            );
            for pod in pods {
                if room.exhausted() {
                    break;
                }
                if gatekeeper.protected(pod)
                    || (thresholding_only && !listed.iter().any(|r| pod.requests.get(r) > 0))
                {
                    continue;
                }
                let Some(pod_usage) = pod_usage(pod, ctx, &args.usage) else {
                    continue;
                };
                let Some(destination) = room.find(pod, &pod_usage, ctx) else {
                    no_destination += 1;
                    if diagnosis.is_none() {
                        diagnosis = Some(room.diagnose(pod, &pod_usage, ctx, "fuller"));
                    }
                    continue;
                };
                let reason = room.reason(&why, destination);
                offered += 1;
                if gatekeeper.offer(Candidate::new(pod, ID, reason)) {
                    room.take(destination, pod, &pod_usage);
                }
            }
        }
        let mut outcome = format!("{saw}; {} offered for eviction", thousands(offered));
        if no_destination > 0 {
            outcome.push_str(&format!(
                ", {} fit no destination: {}",
                thousands(no_destination),
                diagnosis.unwrap_or_default()
            ));
        }
        gatekeeper.observe(outcome);
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::*;

    const SPEC: &str = "mode: Evict\nstrategies:\n  highNodeUtilization:\n    thresholds: {cpu: 20, memory: 20}\ndefaults: {jobBudget: {maxUnavailable: 100}}\n";

    #[test]
    fn empties_the_least_used_nodes_onto_the_fuller_ones() {
        let mut cluster = Cluster::new()
            .standard_nodes(&["n1", "n2", "n3"])
            .pod(pod("a/big", "n1").requests("5", "50Gi"))
            .pod(pod("a/small", "n2").requests("1", "1Gi"))
            .pod(pod("a/smaller", "n3").requests("500m", "1Gi"))
            .pod(
                pod("a/ds", "n3")
                    .requests("100m", "1Gi")
                    .owned_by("DaemonSet", "agent"),
            );
        let out = cluster.plan(SPEC);
        // n3 (least used) first, then n2; the DaemonSet pod is left silently.
        assert_eq!(out.evicted(), ["a/smaller", "a/small"]);
        assert!(out.skipped().is_empty());
    }

    /// The descheduler's `evictionModes: [OnlyThresholdingResources]`: a pod that requests none of
    /// the listed resources stays.
    #[test]
    fn only_thresholding_resources_leaves_pods_that_request_none_of_them() {
        let mut cluster = Cluster::new()
            .standard_nodes(&["n1", "n2"])
            .pod(pod("a/big", "n1").requests("5", "50Gi"))
            .pod(pod("a/mem", "n2").requests("0", "1Gi"))
            .pod(pod("a/cpu", "n2").requests("1", "0"));
        let spec = |modes: &str| {
            format!(
                "mode: Evict\nstrategies:\n  highNodeUtilization:\n    thresholds: {{cpu: 20}}\n{modes}defaults: {{jobBudget: {{maxUnavailable: 100}}}}\n"
            )
        };
        assert_eq!(cluster.plan(&spec("")).evicted(), ["a/cpu", "a/mem"]);
        assert_eq!(
            cluster
                .plan(&spec("    evictionModes: [OnlyThresholdingResources]\n"))
                .evicted(),
            ["a/cpu"]
        );
    }

    #[test]
    fn needs_a_fuller_node_with_room() {
        let mut cluster = Cluster::new()
            .standard_nodes(&["n1", "n2"])
            .pod(pod("a/small", "n2").requests("1", "1Gi"));
        assert!(
            cluster.plan(SPEC).evicted().is_empty(),
            "every node is underutilized"
        );
        let mut cluster = Cluster::new()
            .standard_nodes(&["n1", "n2"])
            .pod(pod("a/full", "n1").requests("9500m", "1Gi"))
            .pod(pod("a/small", "n2").requests("1", "1Gi"));
        assert!(
            cluster.plan(SPEC).evicted().is_empty(),
            "n1 has only 500m left"
        );
    }

    #[test]
    fn a_pod_with_unreadable_requests_hides_its_node_s_load() {
        // n2 runs a pod whose request tidal cannot read: it may be full, so it is not emptied, and
        // nothing is packed onto it.
        let mut cluster = Cluster::new()
            .standard_nodes(&["n1", "n2"])
            .pod(pod("a/big", "n1").requests("6", "1Gi"))
            .pod(pod("a/bad", "n2").requests("9 cores", "1Gi"))
            .pod(pod("a/small", "n2").requests("500m", "1Gi"));
        assert!(cluster.plan(SPEC).evicted().is_empty());
        let mut cluster = Cluster::new()
            .standard_nodes(&["n1", "n2", "n3"])
            .pod(pod("a/bad", "n1").requests("9 cores", "1Gi"))
            .pod(pod("a/small", "n2").requests("500m", "1Gi"))
            .pod(pod("a/big", "n3").requests("6", "50Gi"));
        assert_eq!(cluster.plan(SPEC).evicted(), ["a/small"], "onto n3 only");
    }

    #[test]
    fn extended_resources_must_fit_a_fuller_node() {
        // The underutilized node's GPU pods can only pack onto a node with GPUs free.
        let mut cluster = Cluster::new()
            .node(
                node("n1")
                    .allocatable("10", "100Gi", 110)
                    .resource("nvidia.com/gpu", "2"),
            )
            .node(
                node("n2")
                    .allocatable("10", "100Gi", 110)
                    .resource("nvidia.com/gpu", "2"),
            )
            .node(node("n3").allocatable("10", "100Gi", 110))
            .pod(
                pod("a/gpu-full", "n2")
                    .requests("6", "50Gi")
                    .request("nvidia.com/gpu", "2"),
            )
            .pod(pod("a/cpu-full", "n3").requests("6", "50Gi"))
            .pod(
                pod("a/train", "n1")
                    .requests("1", "1Gi")
                    .request("nvidia.com/gpu", "1"),
            )
            .pod(pod("a/web", "n1").requests("500m", "1Gi"));
        // n2 has no GPU left and n3 none at all: only the web pod moves, and n1 is not emptied.
        assert_eq!(cluster.plan(SPEC).evicted(), ["a/web"]);
        let mut cluster = cluster.pod(
            pod("a/gpu-full", "n2")
                .requests("6", "50Gi")
                .request("nvidia.com/gpu", "1"),
        );
        assert_eq!(cluster.plan(SPEC).evicted(), ["a/train", "a/web"]);
    }

    #[test]
    fn cordoned_nodes_are_neither_emptied_nor_filled_and_number_of_nodes_gates() {
        let mut cluster = Cluster::new()
            .node(node("n1").allocatable("10", "100Gi", 110))
            .node(node("n2").allocatable("10", "100Gi", 110).unschedulable())
            .node(node("n3").allocatable("10", "100Gi", 110))
            .node(node("n4").allocatable("10", "100Gi", 110).unschedulable())
            .pod(pod("a/big", "n1").requests("5", "50Gi"))
            .pod(pod("a/cordoned-small", "n2").requests("500m", "1Gi"))
            .pod(pod("a/small", "n3").requests("1", "1Gi"))
            .pod(pod("a/cordoned-big", "n4").requests("5", "50Gi"));
        // n2 is underutilized but cordoned: left to whoever cordoned it. n4 is full enough to take
        // pods, but cordoned: the only destination is n1.
        let out = cluster.plan(SPEC);
        assert_eq!(out.evicted(), ["a/small"]);
        assert!(out.reason("a/small").contains("it fits node n1"));
        // One underutilized node is not more than numberOfNodes 1.
        let gated = SPEC.replace(
            "thresholds: {cpu: 20, memory: 20}",
            "thresholds: {cpu: 20, memory: 20}\n    numberOfNodes: 1",
        );
        assert!(cluster.plan(&gated).evicted().is_empty());
    }

    #[test]
    fn each_move_must_fit_one_destination() {
        // Two fuller nodes with 1.5 cores free each: 3 cores in all, but a 2-core pod fits neither.
        let mut cluster = Cluster::new()
            .standard_nodes(&["n1", "n2", "n3"])
            .pod(pod("a/full1", "n1").requests("8500m", "50Gi"))
            .pod(pod("a/full2", "n2").requests("8500m", "50Gi"))
            .pod(pod("a/two", "n3").requests("1900m", "1Gi"));
        assert!(cluster.plan(SPEC).evicted().is_empty());
    }
}
