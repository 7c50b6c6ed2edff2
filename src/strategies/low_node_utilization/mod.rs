//! lowNodeUtilization: move pods from overutilized nodes so that the scheduler places them on
//! underutilized ones.
//!
//! A schedulable node below `thresholds` on every listed resource is underutilized; a node above
//! `targetThresholds` on any listed resource is overutilized. Overutilized nodes are drained busiest
//! first, their pods in the descheduler's order (no priority first, then ascending priority, then
//! BestEffort, Burstable, Guaranteed), until the node is no longer above target or the underutilized
//! nodes' spare room (up to their target) runs out on some resource. A pod moves only if one
//! underutilized node would take it and has room for all of it ([`Room`]); otherwise it is passed over,
//! so no destination's room goes negative (Volcano's rescheduling kept subtracting past zero). Unlisted
//! cpu, memory and pods do not classify nodes, but still bound the room at 100% of allocatable, so moves
//! never overfill the destinations. A pod that uses none of the resources its node is over on is not
//! moved: evicting it would not bring the node closer to its target.

pub mod args;

use std::sync::Arc;

use crate::strategies::node_fit::fits_on_after;
use crate::strategies::node_usage::args::{METRIC_RESOURCE, UsageSource};
use crate::strategies::node_usage::{
    NodeUsage, Room, Slot, above_any, below_all, bounded_resources, describe_percent,
    describe_thresholds, node_usages, percent, pod_usage, resolve_thresholds, thousands,
    validate_thresholds,
};
use crate::strategies::selection::{Selection, still_movable_briefed};
use crate::strategies::victim_order::{victim_key, weighed_in_order};
use crate::{
    cluster::{PodInfo, Resources},
    framework::{Balancing, Candidate, Gatekeeper, PlanContext, Plugin, StrategyId},
};
use args::LowNodeUtilizationArgs;

const ID: StrategyId = StrategyId::LowNodeUtilization;

pub(crate) struct LowNodeUtilization {
    args: LowNodeUtilizationArgs,
}

impl LowNodeUtilization {
    pub(crate) fn new(args: LowNodeUtilizationArgs) -> Self {
        LowNodeUtilization { args }
    }

    fn selection(&self) -> Selection<'_> {
        Selection {
            namespaces: &self.args.namespaces,
            label_selector: None,
        }
    }
}

impl Plugin for LowNodeUtilization {
    fn id(&self) -> StrategyId {
        ID
    }

    fn validate(&self) -> Result<(), String> {
        let args = &self.args;
        validate_thresholds("thresholds", &args.thresholds)?;
        validate_thresholds("targetThresholds", &args.target_thresholds)?;
        if !args.thresholds.keys().eq(args.target_thresholds.keys()) {
            return Err("thresholds and targetThresholds must list the same resources".to_owned());
        }
        validate_source(args)?;
        if !args.use_deviation_thresholds {
            for (resource, low) in &args.thresholds {
                if args
                    .target_thresholds
                    .get(resource)
                    .is_some_and(|high| low > high)
                {
                    return Err(format!(
                        "thresholds.{resource} is above targetThresholds.{resource}"
                    ));
                }
            }
        }
        self.selection().validate()
    }
}

impl Balancing for LowNodeUtilization {
    fn balance(&self, ctx: &PlanContext<'_>, gatekeeper: &mut dyn Gatekeeper) {
        let args = &self.args;
        let listed: Vec<String> = args.thresholds.keys().cloned().collect();
        let (nodes, unmeasured) = node_usages(ctx, &args.usage, &listed, gatekeeper);
        let (low, high) = resolve_thresholds(
            &nodes,
            &listed,
            &args.thresholds,
            Some(&args.target_thresholds),
            args.use_deviation_thresholds,
        );
        let high = high.unwrap_or_default();
        let under: Vec<&NodeUsage<'_>> = nodes
            .iter()
            .filter(|n| !n.node.unschedulable && below_all(n, &low))
            .collect();
        // With their load, computed once rather than in every comparison of the sort.
        let mut over: Vec<(f64, &NodeUsage<'_>)> = nodes
            .iter()
            .filter(|n| above_any(n, &high))
            .map(|n| (n.load(&listed), n))
            .collect();
        let saw = Saw {
            nodes: nodes.len(),
            left_out: ctx.snapshot.nodes.len().saturating_sub(nodes.len()),
            unmeasured: unmeasured.len(),
            under: under.len(),
            over: over.len(),
            low: describe_thresholds(&low),
            high: describe_thresholds(&high),
        };
        let idle = if under.is_empty() {
            Some("no node is underutilized: there is nowhere to move pods to".to_owned())
        } else if over.is_empty() {
            Some("no node is overutilized: nothing to move".to_owned())
        } else if under.len() <= args.number_of_nodes as usize {
            Some(format!(
                "numberOfNodes {} asks for more underutilized nodes than {}",
                args.number_of_nodes,
                under.len()
            ))
        } else if under.len() == nodes.len() {
            Some("every node is underutilized: nothing to balance".to_owned())
        } else {
            None
        };
        if let Some(idle) = idle {
            gatekeeper.observe(format!("{}; {idle}", saw.describe()));
            return;
        }
        if args.usage.source == UsageSource::Prometheus {
            over.sort_by(|(a_load, a), (b_load, b)| {
                b_load
                    .total_cmp(a_load)
                    .then_with(|| a.node.name.cmp(&b.node.name))
            });
            let sources: Vec<&NodeUsage<'_>> = over.iter().map(|(_, n)| *n).collect();
            let weighed = self.balance_by_metric(ctx, gatekeeper, &sources, &under, &high);
            gatekeeper.observe(format!("{}; {}", saw.describe(), weighed.describe()));
            return;
        }
        let mut room = Room::new(&under, bounded_resources(&args.thresholds), |resource| {
            high.get(resource).copied().unwrap_or(100.0)
        });
        over.sort_by(|(a_load, a), (b_load, b)| {
            b_load
                .total_cmp(a_load)
                .then_with(|| a.node.name.cmp(&b.node.name))
        });
        // The listed resources with a target, matched once rather than per pod weighed.
        let targets: Vec<(Slot, f64)> = listed
            .iter()
            .filter_map(|r| high.get(r).map(|t| (Slot::of(r), *t)))
            .collect();
        let thresholds = describe_thresholds(&high);
        let selection = self.selection();
        let mut weighed = Weighed::default();
        'sources: for (_, source) in over {
            let mut usage = source.usage.clone();
            let over_on = |usage: &Resources, (slot, target): &(Slot, f64)| {
                percent(slot.get(usage), slot.get(&source.node.allocatable)) > *target
            };
            let mut pods: Vec<(u128, &Arc<PodInfo>)> = Vec::with_capacity(source.state.pods.len());
            // By the pods' briefs: most of a busy node's pods are never weighed (it is back under its
            // target first), so only those weighed are read.
            let admits_all = selection.admits_all();
            pods.extend(
                source
                    .state
                    .pods
                    .briefed()
                    .filter(|(p, brief)| {
                        still_movable_briefed(p, *brief, ctx, gatekeeper)
                            && (admits_all || selection.admits(p))
                    })
                    .enumerate()
                    .map(|(at, (p, brief))| (victim_key(brief, at), p)),
            );
            // The node's pods come in key order, so their positions stand in for their keys. Often
            // every pod has the same rank (no priorities, one QoS class): then they are in order already.
            if !pods.is_sorted_by_key(|(key, _)| *key) {
                pods.sort_unstable_by_key(|(key, _)| *key);
            }
            // Written when the node's first candidate is offered: a node none of whose pods fits
            // anywhere offers none.
            let mut why = None;
            let mut evicted = 0u32;
            for pod in weighed_in_order(&pods) {
                if room.exhausted() {
                    weighed.room_ran_out = true;
                    break 'sources;
                }
                if !targets.iter().any(|t| over_on(&usage, t))
                    || args.eviction_limits.node.is_some_and(|max| evicted >= max)
                {
                    break;
                }
                weighed.pods += 1;
                if gatekeeper.protected(pod) {
                    weighed.protected += 1;
                    continue;
                }
                let Some(pod_usage) = pod_usage(pod, ctx, &args.usage) else {
                    weighed.unmeasured += 1;
                    continue;
                };
                // A pod that frees nothing the node is over on would take a move (and the per-node
                // limit) without bringing the node closer to its target.
                if !targets
                    .iter()
                    .any(|t| over_on(&usage, t) && t.0.get(&pod_usage) > 0)
                {
                    weighed.frees_nothing += 1;
                    continue;
                }
                let Some(destination) = room.find(pod, &pod_usage, ctx) else {
                    weighed.no_destination += 1;
                    if weighed.diagnosis.is_none() {
                        weighed.diagnosis =
                            Some(room.diagnose(pod, &pod_usage, ctx, "underutilized"));
                    }
                    continue;
                };
                let why = why.get_or_insert_with(|| {
                    format!(
                        "node {} is overutilized ({}; target {thresholds}); {} underutilized node(s) have room:",
                        source.node.name,
                        describe_percent(source, &listed),
                        under.len(),
                    )
                });
                let reason = room.reason(why, destination);
                weighed.offered += 1;
                if gatekeeper.offer(Candidate::new(pod, ID, reason)) {
                    room.take(destination, pod, &pod_usage);
                    usage.sub(&pod_usage);
                    evicted += 1;
                }
            }
        }
        gatekeeper.observe(format!("{}; {}", saw.describe(), weighed.describe()));
    }
}

/// `usage.source: Prometheus` takes a node's number and nothing else: thresholds list
/// `MetricResource` alone, and a query says what to ask.
fn validate_source(args: &LowNodeUtilizationArgs) -> Result<(), String> {
    let metric_only = |t: &crate::strategies::node_usage::args::Thresholds| {
        t.len() == 1 && t.contains_key(METRIC_RESOURCE)
    };
    let names_metric = args.thresholds.contains_key(METRIC_RESOURCE)
        || args.target_thresholds.contains_key(METRIC_RESOURCE);
    match args.usage.source {
        UsageSource::Prometheus => {
            if args
                .usage
                .query
                .as_deref()
                .is_none_or(|q| q.trim().is_empty())
            {
                return Err("usage.source Prometheus needs usage.query".to_owned());
            }
            if !metric_only(&args.thresholds) || !metric_only(&args.target_thresholds) {
                return Err(format!(
                    "with usage.source Prometheus, thresholds and targetThresholds list \
                     {METRIC_RESOURCE} alone (the query's value, in percent)"
                ));
            }
        }
        _ if names_metric => {
            return Err(format!(
                "{METRIC_RESOURCE} is a Prometheus query's value: set usage.source Prometheus and \
                 usage.query"
            ));
        }
        _ => {}
    }
    Ok(())
}

impl LowNodeUtilization {
    /// With Prometheus a pod's share of its node's number is unknown: as in the descheduler, each
    /// overutilized node loses one pod per cycle (or `evictionLimits.node`), to an underutilized
    /// node that admits it and has room for its requests.
    fn balance_by_metric(
        &self,
        ctx: &PlanContext<'_>,
        gatekeeper: &mut dyn Gatekeeper,
        sources: &[&NodeUsage<'_>],
        under: &[&NodeUsage<'_>],
        high: &crate::strategies::node_usage::args::Thresholds,
    ) -> Weighed {
        let args = &self.args;
        let per_node = args.eviction_limits.node.unwrap_or(1);
        let selection = self.selection();
        let mut reserved: std::collections::HashMap<&str, Resources> = Default::default();
        let mut weighed = Weighed::default();
        for source in sources {
            let pods =
                selection.movable_in_victim_order(source.state.pods.values(), ctx, gatekeeper);
            let mut evicted = 0u32;
            for pod in pods {
                if evicted >= per_node {
                    break;
                }
                weighed.pods += 1;
                if gatekeeper.protected(pod) {
                    weighed.protected += 1;
                    continue;
                }
                let destination = under
                    .iter()
                    .find(|d| fits_on_after(pod, d.state, ctx, reserved.get(d.node.name.as_str())));
                let Some(destination) = destination else {
                    weighed.no_destination += 1;
                    if weighed.diagnosis.is_none() {
                        weighed.diagnosis = Some(format!(
                            "none of the {} underutilized node(s) admits it with room for its requests",
                            thousands(under.len())
                        ));
                    }
                    continue;
                };
                let reason = format!(
                    "node {} is overutilized ({METRIC_RESOURCE} {:.0}% by Prometheus; target {}); \
                     one pod per cycle, as a pod's share is unknown; it fits node {}",
                    source.node.name,
                    source.percent(METRIC_RESOURCE),
                    describe_thresholds(high),
                    destination.node.name,
                );
                weighed.offered += 1;
                if gatekeeper.offer(Candidate::new(pod, ID, reason)) {
                    reserved
                        .entry(destination.node.name.as_str())
                        .or_default()
                        .add(&pod.requests);
                    evicted += 1;
                }
            }
        }
        weighed
    }
}

/// How lowNodeUtilization classified the nodes, for [`Gatekeeper::observe`].
struct Saw {
    nodes: usize,
    left_out: usize,
    unmeasured: usize,
    under: usize,
    over: usize,
    low: String,
    high: String,
}

impl Saw {
    fn describe(&self) -> String {
        let between = self.nodes.saturating_sub(self.under + self.over);
        let mut out = format!(
            "{} node(s): {} underutilized (at or below {}), {} overutilized (above {}), {} in between",
            thousands(self.nodes + self.left_out),
            thousands(self.under),
            self.low,
            thousands(self.over),
            self.high,
            thousands(between),
        );
        if self.left_out > 0 {
            out.push_str(&format!(
                ", {} not classified (not ready, unreadable load or capacity, no usage sample, or \
                 outside the policy's nodeSelector{})",
                thousands(self.left_out),
                if self.unmeasured > 0 {
                    format!("; {} without a sample", thousands(self.unmeasured))
                } else {
                    String::new()
                }
            ));
        }
        out
    }
}

/// What became of the pods of the overutilized nodes.
#[derive(Default)]
struct Weighed {
    pods: usize,
    protected: usize,
    unmeasured: usize,
    frees_nothing: usize,
    no_destination: usize,
    offered: usize,
    room_ran_out: bool,
    /// Why the first pod with no destination found none.
    diagnosis: Option<String>,
}

impl Weighed {
    fn describe(&self) -> String {
        let mut out = format!(
            "{} pod(s) weighed on the overutilized nodes, {} offered for eviction",
            thousands(self.pods),
            thousands(self.offered)
        );
        let mut held = Vec::new();
        if self.protected > 0 {
            held.push(format!("{} protected", thousands(self.protected)));
        }
        if self.unmeasured > 0 {
            held.push(format!(
                "{} without a usage sample",
                thousands(self.unmeasured)
            ));
        }
        if self.frees_nothing > 0 {
            held.push(format!(
                "{} use none of what their node is over on",
                thousands(self.frees_nothing)
            ));
        }
        if self.no_destination > 0 {
            held.push(format!(
                "{} fit no destination",
                thousands(self.no_destination)
            ));
        }
        if !held.is_empty() {
            out.push_str(&format!(" ({})", held.join(", ")));
        }
        if let Some(diagnosis) = &self.diagnosis {
            out.push_str(&format!("; no destination admits these pods: {diagnosis}"));
        }
        if self.room_ran_out {
            out.push_str("; the underutilized nodes' room up to their target ran out");
        }
        out
    }
}

#[cfg(test)]
mod tests;
