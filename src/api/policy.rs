//! `DeschedulingPolicy`: which strategies run, how often, in which mode, under which defaults and limits.

// The schema derives (KubeSchema, CustomResource, JsonSchema) copy each type's visibility into items
// they generate, which `unreachable_pub` then reports; these are the public CRD and window types.
#![allow(unreachable_pub)]

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::{
    apis::meta::v1::{Condition, Time},
    util::intstr::IntOrString,
};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{duration::GoDuration, pod_filters::NamespaceFilter};

/// A descheduling policy. Several may exist; each runs its strategies on its own interval, and a pod
/// evicted under one is in flight for all.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "tidal.dev",
    doc = "A tidal descheduling policy: strategies, mode, defaults and limits.",
    version = "v1alpha1",
    kind = "DeschedulingPolicy",
    plural = "deschedulingpolicies",
    shortname = "dsp",
    category = "tidal",
    status = "DeschedulingPolicyStatus",
    printcolumn = r#"{"name":"Mode","type":"string","jsonPath":".spec.mode"}"#,
    printcolumn = r#"{"name":"Interval","type":"string","jsonPath":".spec.interval"}"#,
    printcolumn = r#"{"name":"Last-Cycle","type":"date","jsonPath":".status.lastCycleTime"}"#,
    printcolumn = r#"{"name":"Planned","type":"integer","jsonPath":".status.planned"}"#,
    printcolumn = r#"{"name":"Evicted","type":"integer","jsonPath":".status.evicted"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!has(self.interval) || duration(self.interval) >= duration('10s')").message("interval must be at least 10s"))]
pub struct DeschedulingPolicySpec {
    /// Time between two cycles. Zone window changes also start a cycle, so TDM need not poll fast.
    #[serde(default = "default_interval")]
    pub interval: GoDuration,
    /// `Evict` sends evictions; `DryRun` only plans and checks each eviction with a server-side dry run.
    /// Required, so that nobody gets evictions they did not ask for.
    pub mode: PolicyMode,
    /// The strategies to run, each with its arguments. A strategy runs when its key is present.
    pub strategies: Strategies,
    /// Values used where a pod or job says nothing.
    #[serde(default)]
    pub defaults: PolicyDefaults,
    /// Caps on evictions per cycle, shared by all strategies of this policy.
    #[serde(default)]
    pub limits: EvictionLimits,
    /// Pods this policy never evicts, and the node-fit check (the descheduler's default evictor).
    #[serde(default)]
    pub protections: super::protections::Protections,
    /// Namespaces whose pods this policy may evict.
    #[serde(default)]
    pub namespaces: NamespaceFilter,
    /// Only nodes whose labels match this selector are processed: only their pods may be evicted,
    /// and only they count as destinations and in the utilization strategies' classification (the
    /// descheduler's top-level `nodeSelector`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum PolicyMode {
    Evict,
    DryRun,
}

/// The policy's `strategies`, one field per row of the strategy table
/// (`crate::strategies::strategy_table`), holding the arguments in the strategy's `args.rs`.
macro_rules! strategies_struct {
    ($(
        $(#[$doc:meta])*
        $field:ident {
            id: $id:ident = $run:literal, name: $name:literal,
            args: $args:ident, plugin: $kind:ident($plugin:ident)
        }
    )*) => {
        /// One key per strategy; its value holds the strategy's arguments (`{}` for the defaults).
        #[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
        #[serde(rename_all = "camelCase")]
        #[schemars(extend("minProperties" = 1))]
        pub struct Strategies {
            $(
                $(#[$doc])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $field: Option<crate::strategies::$field::args::$args>,
            )*
        }
    };
}

crate::strategies::strategy_table!(strategies_struct);

impl Strategies {
    /// Whether a strategy of this policy reads measured usage (metrics.k8s.io), so that the controller
    /// polls it only when someone needs it.
    pub fn uses_measured_usage(&self) -> bool {
        use crate::strategies::node_usage::args::UsageSource::Metrics;
        let low = self.low_node_utilization.as_ref().map(|a| a.usage.source);
        let high = self.high_node_utilization.as_ref().map(|a| a.usage.source);
        low == Some(Metrics) || high == Some(Metrics)
    }

    /// The Prometheus queries this policy's strategies read (`usage.source: Prometheus`).
    pub fn prometheus_queries(&self) -> Vec<String> {
        use crate::strategies::node_usage::args::UsageSource::Prometheus;
        let low = self.low_node_utilization.as_ref().map(|a| &a.usage);
        let high = self.high_node_utilization.as_ref().map(|a| &a.usage);
        low.into_iter()
            .chain(high)
            .filter(|u| u.source == Prometheus)
            .filter_map(|u| u.query.clone())
            .collect()
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyDefaults {
    /// Cooldown for pods without a `volcano.sh/cooldown-time`: pods scheduled more recently are not evicted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown: Option<GoDuration>,
    /// Budget for jobs whose PodGroup and pods carry none. Without one, a job loses one pod per round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_budget: Option<JobBudgetSpec>,
    /// Whether pods without a `volcano.sh/preemptable` label or annotation count as preemptable.
    /// Off by default: preemption is opt-in.
    #[serde(default)]
    pub preemptable: bool,
}

/// A percentage from 0% to 100%: what a budget given as a string must be.
pub const PERCENT_PATTERN: &str = "^(100|[1-9]?[0-9])%$";

/// A job disruption budget, as an integer or a percentage of the job's pods (rounded up).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.maxUnavailable) != has(self.minAvailable)").message("set exactly one of maxUnavailable and minAvailable"))]
pub struct JobBudgetSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // Plain schema keywords rather than CEL: `pattern` applies only to the string form and `minimum` only to
    // the integer form, which every validator (the API server, kubectl, client-side tests) agrees on.
    #[schemars(extend("pattern" = PERCENT_PATTERN, "minimum" = 0))]
    /// Most pods of the job that may be unavailable at once (pending, terminating or being evicted).
    pub max_unavailable: Option<IntOrString>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // Plain schema keywords rather than CEL: `pattern` applies only to the string form and `minimum` only to
    // the integer form, which every validator (the API server, kubectl, client-side tests) agrees on.
    #[schemars(extend("pattern" = PERCENT_PATTERN, "minimum" = 0))]
    /// Fewest pods of the job that must stay running.
    pub min_available: Option<IntOrString>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvictionLimits {
    /// Evictions per node per cycle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_node: Option<u32>,
    /// Evictions per namespace per cycle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_namespace: Option<u32>,
    /// Evictions per cycle in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u32>,
    /// Evictions per workload (PodGroup, else controller, else the pod itself) per cycle, on top of the
    /// workload's disruption budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_job: Option<u32>,
    /// Evictions per revocable zone per cycle (pods on nodes of no revocable zone do not count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_zone: Option<u32>,
    /// Evictions per `topology.kubernetes.io/zone` per cycle (pods on nodes without the label do not count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_topology_zone: Option<u32>,
    /// Caps counted across every policy that names the same `name`: the evictions all of them plan
    /// in one cycle together (DryRun policies count too, so that a report shows what they would do
    /// together). Each policy is held to its own caps against that shared count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<SharedLimits>,
}

/// Caps shared by several policies: what the descheduler's global `maxNoOfPodsToEvict*` are to its
/// profiles.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SharedLimits {
    /// The count the policies share: policies naming the same one count together.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Evictions per cycle in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u32>,
    /// Evictions per node per cycle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_node: Option<u32>,
    /// Evictions per namespace per cycle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_namespace: Option<u32>,
}

/// What the controller did in the policy's last cycle.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeschedulingPolicyStatus {
    /// When the last cycle of this policy ran (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_cycle_time: Option<Time>,
    /// The `metadata.generation` of the spec the last cycle ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Evictions the last cycle planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned: Option<u32>,
    /// Evictions the API server accepted in the last cycle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evicted: Option<u32>,
    /// DryRun mode: planned evictions a server-side dry run accepted in the last cycle (at most
    /// `--dry-run-verify-per-cycle` are checked per cycle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<u32>,
    /// DryRun mode: planned evictions the dry run refused; the reasons (`pdb`, `gone`, ...) are
    /// counted in `skipped`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<u32>,
    /// DryRun mode: planned evictions not checked in the last cycle. They are still planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unverified: Option<u32>,
    /// Candidates the last cycle skipped, by the gate that stopped them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub skipped: BTreeMap<String, u32>,
    /// `Ready` is `False` with a reason when the policy cannot run (an invalid spec, a failed cycle).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

fn default_interval() -> GoDuration {
    GoDuration::from_secs(300)
}
