//! Node utilization for lowNodeUtilization and highNodeUtilization: how much of each resource a node
//! uses, from pod requests (what the scheduler counts) or from measured usage (metrics.k8s.io), as a
//! percentage of allocatable, and how nodes compare with thresholds.

use std::{collections::BTreeMap, sync::Arc};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    api::GoDuration,
    cluster::{
        NodeInfo, NodeState, PodInfo, Resources,
        resources::{CPU, MEMORY, PODS},
    },
    plan::PlanContext,
};

/// Percentages per resource name (`cpu`, `memory`, `pods`, or an extended resource).
pub type Thresholds = BTreeMap<String, f64>;

/// The resources every utilization strategy bounds its moves by, listed or not.
pub const BASIC: [&str; 3] = [CPU, MEMORY, PODS];

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum UsageSource {
    /// Sum of the requests of the pods on the node (what the scheduler counts).
    #[default]
    Requests,
    /// CPU and memory measured by metrics-server (`metrics.k8s.io` NodeMetrics and PodMetrics),
    /// averaged over `window`; pods and extended resources still from requests.
    Metrics,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageArgs {
    #[serde(default)]
    pub source: UsageSource,
    /// With `Metrics`: average the samples of this long a window before the cycle.
    #[serde(default = "default_window")]
    pub window: GoDuration,
}

impl Default for UsageArgs {
    fn default() -> Self {
        UsageArgs {
            source: UsageSource::Requests,
            window: default_window(),
        }
    }
}

fn default_window() -> GoDuration {
    GoDuration::from_secs(300)
}

/// Checks a thresholds map: known shape, percentages in [0, 100].
pub fn validate_thresholds(field: &str, thresholds: &Thresholds) -> Result<(), String> {
    if thresholds.is_empty() {
        return Err(format!("{field} must list at least one resource"));
    }
    for (name, value) in thresholds {
        if !(0.0..=100.0).contains(value) {
            return Err(format!(
                "{field}.{name}: {value} is not a percentage in [0, 100]"
            ));
        }
    }
    Ok(())
}

/// One node's usage.
pub struct NodeUsage<'s> {
    pub state: &'s Arc<NodeState>,
    pub node: &'s NodeInfo,
    /// Absolute usage, without pods that are already leaving.
    pub usage: Resources,
}

impl NodeUsage<'_> {
    /// Usage of `resource` as a percentage of allocatable. A resource the node does not have is 0% if
    /// unused and 100% if somehow used.
    pub fn percent(&self, resource: &str) -> f64 {
        percent(
            self.usage.get(resource),
            self.node.allocatable.get(resource),
        )
    }

    /// Sum of the percentages of `resources`: how busy the node is, for ordering.
    pub fn load(&self, resources: &[String]) -> f64 {
        resources.iter().map(|r| self.percent(r)).sum()
    }
}

pub fn percent(used: i64, allocatable: i64) -> f64 {
    if allocatable <= 0 {
        return if used > 0 { 100.0 } else { 0.0 };
    }
    used as f64 * 100.0 / allocatable as f64
}

/// The amount of `resource` that is `pct` percent of `allocatable`, rounded down.
pub fn amount_at(pct: f64, allocatable: i64) -> i64 {
    (allocatable as f64 * pct / 100.0).floor() as i64
}

/// Usage of every ready node that tidal can read, in name order. With `Metrics`, nodes without a sample
/// in the window are left out: a missing measurement is not an idle node.
pub fn node_usages<'s>(
    ctx: &PlanContext<'s>,
    source: &UsageArgs,
) -> (Vec<NodeUsage<'s>>, Vec<&'s str>) {
    let mut out = Vec::new();
    let mut unmeasured = Vec::new();
    for (name, state) in &ctx.snapshot.nodes {
        let Some(node) = state.node.as_deref() else {
            continue;
        };
        if !node.ready || !node.problems.is_empty() {
            continue;
        }
        let mut usage = state.requested.clone();
        for pod in state.pods.values() {
            if pod.holds_resources() && ctx.is_leaving(pod) {
                usage.sub(&pod.requests);
            }
        }
        if source.source == UsageSource::Metrics {
            let measured = ctx
                .snapshot
                .node_usage
                .get(name)
                .and_then(|series| series.average(ctx.now, source.window));
            let Some(measured) = measured else {
                unmeasured.push(name.as_str());
                continue;
            };
            usage.milli_cpu = measured.milli_cpu;
            usage.memory = measured.memory;
        }
        out.push(NodeUsage { state, node, usage });
    }
    (out, unmeasured)
}

/// What moving `pod` takes off its node: its requests, or with `Metrics` its measured CPU and memory
/// (`None` if it has no sample in the window: its weight is unknown, so it is not moved).
pub fn pod_usage(pod: &PodInfo, ctx: &PlanContext<'_>, source: &UsageArgs) -> Option<Resources> {
    let mut usage = pod.requests.clone();
    if source.source == UsageSource::Metrics {
        let measured = ctx
            .snapshot
            .pod_usage
            .get(&pod.key)?
            .average(ctx.now, source.window)?;
        usage.milli_cpu = measured.milli_cpu;
        usage.memory = measured.memory;
    }
    Some(usage)
}

/// `cpu 85%, memory 40%`: percentages for messages.
pub fn describe_percent(node: &NodeUsage<'_>, resources: &[String]) -> String {
    resources
        .iter()
        .map(|r| format!("{r} {:.0}%", node.percent(r)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Thresholds per node: the static ones, or with deviation thresholds the mean usage of all nodes
/// minus `low` and plus `high`, clamped to [0, 100].
pub fn resolve_thresholds(
    nodes: &[NodeUsage<'_>],
    resources: &[String],
    low: &Thresholds,
    high: Option<&Thresholds>,
    deviation: bool,
) -> (Thresholds, Option<Thresholds>) {
    if !deviation {
        return (low.clone(), high.cloned());
    }
    let mean = |resource: &str| {
        if nodes.is_empty() {
            return 0.0;
        }
        nodes.iter().map(|n| n.percent(resource)).sum::<f64>() / nodes.len() as f64
    };
    let mut resolved_low = Thresholds::new();
    let mut resolved_high = Thresholds::new();
    for resource in resources {
        let average = mean(resource);
        if let Some(d) = low.get(resource) {
            resolved_low.insert(resource.clone(), (average - d).clamp(0.0, 100.0));
        }
        if let Some(d) = high.and_then(|h| h.get(resource)) {
            resolved_high.insert(resource.clone(), (average + d).clamp(0.0, 100.0));
        }
    }
    (resolved_low, high.map(|_| resolved_high))
}

/// Below `thresholds` on every listed resource (equal counts as below, as in the descheduler).
pub fn below_all(node: &NodeUsage<'_>, thresholds: &Thresholds) -> bool {
    thresholds.iter().all(|(r, t)| node.percent(r) <= *t)
}

/// Above `thresholds` on at least one listed resource.
pub fn above_any(node: &NodeUsage<'_>, thresholds: &Thresholds) -> bool {
    thresholds.iter().any(|(r, t)| node.percent(r) > *t)
}

/// The resources a move is bounded by: the listed ones plus cpu, memory and pods.
pub fn bounded_resources(thresholds: &Thresholds) -> Vec<String> {
    let mut out: Vec<String> = BASIC.iter().map(|r| (*r).to_owned()).collect();
    for name in thresholds.keys() {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

/// The spare room of the destination nodes, shared by every move of one strategy run: a move must fit
/// it, and it only ever shrinks, so it never goes negative.
pub struct Room<'s> {
    resources: Vec<String>,
    room: Resources,
    destinations: Vec<&'s NodeInfo>,
    /// Whether some destination allows a placement signature (selector, affinity, tolerations).
    allowed: std::collections::HashMap<u64, bool>,
}

impl<'s> Room<'s> {
    /// `limit(node, resource)` is the percentage each destination may be filled to.
    pub fn new(
        destinations: &[&NodeUsage<'s>],
        resources: Vec<String>,
        limit: impl Fn(&str) -> f64,
    ) -> Self {
        let mut room = Resources::default();
        for node in destinations {
            for resource in &resources {
                let cap = amount_at(limit(resource), node.node.allocatable.get(resource));
                let spare = cap.saturating_sub(node.usage.get(resource)).max(0);
                room.set(resource, room.get(resource).saturating_add(spare));
            }
        }
        Room {
            resources,
            room,
            destinations: destinations.iter().map(|n| n.node).collect(),
            allowed: std::collections::HashMap::new(),
        }
    }

    /// Some resource has no room left: nothing more can move.
    pub fn exhausted(&self) -> bool {
        self.resources.iter().any(|r| self.room.get(r) <= 0)
    }

    /// The move of a pod using `usage` fits the remaining room and some destination would take the pod
    /// (selector, required affinity, hard taints).
    pub fn admits(&mut self, pod: &PodInfo, usage: &Resources) -> bool {
        let fits = self
            .resources
            .iter()
            .all(|r| usage.get(r) <= self.room.get(r));
        let destinations = &self.destinations;
        fits && *self
            .allowed
            .entry(pod.placement.signature)
            .or_insert_with(|| {
                destinations.iter().any(|node| {
                    pod.placement.matches_node(node)
                        && pod
                            .placement
                            .tolerates_node(node, crate::cluster::matching::HARD_EFFECTS)
                })
            })
    }

    pub fn take(&mut self, usage: &Resources) {
        for resource in &self.resources {
            self.room.set(
                resource,
                self.room.get(resource).saturating_sub(usage.get(resource)),
            );
        }
    }

    pub fn describe(&self) -> String {
        self.resources
            .iter()
            .map(|r| {
                format!(
                    "{r} {}",
                    crate::gates::nodefit::format_amount(r, self.room.get(r))
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}
