//! highNodeUtilization: bin packing. Schedulable nodes below `thresholds` on every listed resource are
//! emptied, least used first, so that their pods pack onto the other schedulable nodes and an
//! autoscaler can remove the empty ones. Pair it with a scheduler that scores `MostAllocated`. A pod moves
//! only if one of the other nodes would take it and has room for all of it ([`Room`]); moves stop when
//! their spare room (up to 100% of allocatable) runs out on some resource.

pub mod args;

use crate::framework::{Balancing, Candidate, Gatekeeper, PlanContext, Plugin, StrategyId};
use crate::strategies::node_usage::{
    NodeUsage, Room, below_all, bounded_resources, describe_percent, describe_thresholds,
    node_usages, pod_usage, thousands, validate_thresholds,
};
use crate::strategies::selection::Selection;
use args::{EvictionMode, HighNodeUtilizationArgs};

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
        if self.args.usage.source == crate::strategies::node_usage::args::UsageSource::Prometheus {
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
mod tests;
