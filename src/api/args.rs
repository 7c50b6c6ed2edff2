//! Every strategy's arguments, as a DeschedulingPolicy spells them (`spec.strategies.<name>`). Data only:
//! what a strategy does with its arguments lives with the strategy in `crate::strategies`.

// The schema derives (KubeSchema, CustomResource, JsonSchema) copy each type's visibility into items
// they generate, which `unreachable_pub` then reports; these are the public CRD and window types.
#![allow(unreachable_pub)]

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::GoDuration;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TdmArgs {
    /// Also evict pods that may not run on revocable nodes at all (not preemptable, or opted into another
    /// zone), whatever the time. They pass the same gates as any other candidate.
    #[serde(default = "yes")]
    pub evict_placement_violations: bool,
    /// Let a pod that ends by itself before its zone's close (its `activeDeadlineSeconds`, or the run
    /// time it or its PodGroup declares with `tidal.dev/expected-run-time`) finish rather than evict it,
    /// as long as the close still leaves time to evict it should it overstay. Off: a drain evicts every
    /// preemptable pod, as Volcano's TDM does.
    #[serde(default = "yes")]
    pub let_pods_finish: bool,
}

impl Default for TdmArgs {
    fn default() -> Self {
        TdmArgs {
            evict_placement_violations: true,
            let_pods_finish: true,
        }
    }
}

fn yes() -> bool {
    true
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoveFailedPodsArgs {
    /// Only pods failed for one of these reasons: the pod's status reason or a container's waiting or
    /// terminated reason (`NodeAffinity`, `OOMKilled`, `Error`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub reasons: Vec<String>,
    /// Only pods with a container that exited with one of these codes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub exit_codes: Vec<i32>,
    /// Look at init containers' reasons and exit codes too.
    #[serde(default)]
    pub including_init_containers: bool,
    /// Only pods created at least this many seconds ago.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_pod_lifetime_seconds: Option<u64>,
    /// Leave pods with an owner of one of these kinds (e.g. `Job`, whose failed pods hold its history).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub exclude_owner_kinds: Vec<String>,
    /// Evict failed pods that have no owner, which protection `barePods` otherwise keeps (as the
    /// descheduler's `evictFailedBarePods`): nothing recreates them, and their status and logs go
    /// with them.
    #[serde(default)]
    pub evict_failed_bare_pods: bool,
    #[serde(default)]
    pub namespaces: NamespaceFilter,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("has(self.maxPodLifeTimeSeconds) || has(self.states) || has(self.conditions) || has(self.exitCodes)").message("set at least one of maxPodLifeTimeSeconds, states, conditions, exitCodes"))]
pub struct PodLifeTimeArgs {
    /// Pods older than this many seconds (since creation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pod_life_time_seconds: Option<u64>,
    /// Only pods in one of these states: a phase (`Running`, `Pending`, `Succeeded`, `Failed`,
    /// `Unknown`), a pod status reason (`NodeLost`, `Shutdown`, ...), or a container waiting or
    /// terminated reason (`CrashLoopBackOff`, `ContainerCreating`, `OOMKilled`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub states: Vec<String>,
    /// Only pods with a condition matching one of these filters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ConditionFilter>,
    /// Only pods with a terminated container that exited with one of these codes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub exit_codes: Vec<i32>,
    /// Only (or never) pods with an owner of these kinds.
    #[serde(default)]
    pub owner_kinds: OwnerKinds,
    /// Match states and exit codes of init containers too.
    #[serde(default)]
    pub including_init_containers: bool,
    /// Match states of ephemeral containers too.
    #[serde(default)]
    pub including_ephemeral_containers: bool,
    #[serde(default)]
    pub namespaces: NamespaceFilter,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

/// A pod condition to match; every field that is set must match.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConditionFilter {
    /// The condition type, e.g. `PodScheduled` or `Ready`; unset matches any type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// The condition status, `True`, `False` or `Unknown`; unset matches any status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The condition reason, e.g. `Unschedulable`; unset matches any reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The condition last changed at least this many seconds ago.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_time_since_last_transition_seconds: Option<u64>,
}

/// Include or exclude owner kinds (at most one list).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, kube::KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!(has(self.include) && has(self.exclude))").message("set include or exclude, not both"))]
pub struct OwnerKinds {
    /// Only pods with an owner reference of one of these kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// No pod with an owner reference of one of these kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TooManyRestartsArgs {
    /// Restarts, summed over the pod's containers, at which the pod is evicted.
    #[schemars(range(min = 1))]
    pub pod_restart_threshold: i32,
    /// Count init containers' restarts too.
    #[serde(default)]
    pub including_init_containers: bool,
    /// Only pods in one of these states: `Running` (the pod phase) or `CrashLoopBackOff` (a container
    /// waiting to be restarted). Empty: any state.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub states: Vec<RestartState>,
    #[serde(default)]
    pub namespaces: NamespaceFilter,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum RestartState {
    Running,
    CrashLoopBackOff,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!(has(self.excludedTaints) && has(self.includedTaints))").message("set excludedTaints or includedTaints, not both"))]
pub struct NodeTaintsArgs {
    /// Also evict for `PreferNoSchedule` taints.
    #[serde(default)]
    pub include_prefer_no_schedule: bool,
    /// Taints to ignore, as `key` (any value) or `key=value`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded_taints: Vec<String>,
    /// If set, only these taints count, as `key` (any value) or `key=value`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub included_taints: Vec<String>,
    #[serde(default)]
    pub namespaces: NamespaceFilter,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeAffinityArgs {
    /// Which affinity to enforce: `requiredDuringSchedulingIgnoredDuringExecution` (default) and/or
    /// `preferredDuringSchedulingIgnoredDuringExecution`.
    #[serde(default = "default_types")]
    #[schemars(length(min = 1), extend("x-kubernetes-list-type" = "set"))]
    pub node_affinity_type: Vec<AffinityType>,
    /// Whether `spec.nodeSelector` counts as required affinity: a pod with a node selector its node no
    /// longer matches, and no required affinity terms, is evicted too. `false` is the descheduler's
    /// rule (only pods with required affinity terms), which `tidal convert` writes.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub node_selector_as_required: bool,
    #[serde(default)]
    pub namespaces: NamespaceFilter,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

fn is_true(value: &bool) -> bool {
    *value
}

impl Default for NodeAffinityArgs {
    fn default() -> Self {
        NodeAffinityArgs {
            node_affinity_type: default_types(),
            node_selector_as_required: true,
            namespaces: NamespaceFilter::default(),
            label_selector: None,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum AffinityType {
    #[serde(rename = "requiredDuringSchedulingIgnoredDuringExecution")]
    Required,
    #[serde(rename = "preferredDuringSchedulingIgnoredDuringExecution")]
    Preferred,
}

fn default_types() -> Vec<AffinityType> {
    vec![AffinityType::Required]
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AntiAffinityArgs {
    #[serde(default)]
    pub namespaces: NamespaceFilter,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MakeRoomArgs {
    /// How long a pod must have been unschedulable (`PodScheduled=False`, reason `Unschedulable`) before
    /// room is made for it, so that the scheduler's own preemption and the autoscaler get their chance.
    #[serde(default = "default_pending_for")]
    pub pending_for: GoDuration,
    /// Pending pods helped per cycle (highest priority, then longest waiting, first).
    #[serde(default = "default_max_pending")]
    #[schemars(range(min = 1))]
    pub max_pending_pods: u32,
    /// At most this many evictions for one pending pod; a node that needs more is not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_victims_per_pod: Option<u32>,
    /// Namespaces of the pending pods to make room for (victims follow the policy's namespaces).
    #[serde(default)]
    pub namespaces: NamespaceFilter,
}

impl Default for MakeRoomArgs {
    fn default() -> Self {
        MakeRoomArgs {
            pending_for: default_pending_for(),
            max_pending_pods: default_max_pending(),
            max_victims_per_pod: None,
            namespaces: NamespaceFilter::default(),
        }
    }
}

fn default_pending_for() -> GoDuration {
    GoDuration::from_secs(300)
}

fn default_max_pending() -> u32 {
    10
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoveDuplicatesArgs {
    /// Leave pods with an owner of one of these kinds (add `ReplicaSet` to leave Deployments alone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub exclude_owner_kinds: Vec<String>,
    #[serde(default)]
    pub namespaces: NamespaceFilter,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopologySpreadArgs {
    /// Which constraints to enforce, by `whenUnsatisfiable`: `DoNotSchedule` (hard, the default) and/or
    /// `ScheduleAnyway` (soft).
    #[serde(default = "default_constraints")]
    #[schemars(length(min = 1), extend("x-kubernetes-list-type" = "set"))]
    pub constraints: Vec<Unsatisfiable>,
    /// Only evict a pod if it fits a node in a domain with fewer matching pods (so that the move can
    /// actually happen).
    #[serde(default = "yes")]
    pub topology_balance_node_fit: bool,
    #[serde(default)]
    pub namespaces: NamespaceFilter,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

impl Default for TopologySpreadArgs {
    fn default() -> Self {
        TopologySpreadArgs {
            constraints: default_constraints(),
            topology_balance_node_fit: true,
            namespaces: NamespaceFilter::default(),
            label_selector: None,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum Unsatisfiable {
    DoNotSchedule,
    ScheduleAnyway,
}

fn default_constraints() -> Vec<Unsatisfiable> {
    vec![Unsatisfiable::DoNotSchedule]
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("self.thresholds.all(k, k in self.targetThresholds) && self.targetThresholds.all(k, k in self.thresholds)").message("thresholds and targetThresholds must list the same resources"))]
pub struct LowNodeUtilizationArgs {
    /// Percent of allocatable per resource below which (on every listed resource) a node is
    /// underutilized. With `useDeviationThresholds`: how far below the mean.
    #[schemars(extend("maxProperties" = 32))]
    pub thresholds: Thresholds,
    /// Percent of allocatable per resource above which (on any listed resource) a node is overutilized.
    /// Must list the same resources as `thresholds`. With `useDeviationThresholds`: how far above the
    /// mean.
    #[schemars(extend("maxProperties" = 32))]
    pub target_thresholds: Thresholds,
    /// Read the thresholds as deviations from the mean usage of all nodes.
    #[serde(default)]
    pub use_deviation_thresholds: bool,
    /// Act only when more than this many nodes are underutilized.
    #[serde(default)]
    pub number_of_nodes: u32,
    /// Caps on this strategy's evictions.
    #[serde(default)]
    pub eviction_limits: UtilizationLimits,
    /// Where usage comes from: pod requests (default) or measured usage.
    #[serde(default)]
    pub usage: UsageArgs,
    /// Namespaces whose pods may be evicted (usage counts every pod).
    #[serde(default)]
    pub namespaces: NamespaceFilter,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UtilizationLimits {
    /// Evictions per overutilized node per cycle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
}

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
    /// Where usage comes from: pod requests (default) or measured usage.
    #[serde(default)]
    pub usage: UsageArgs,
    /// Namespaces whose pods may be evicted (usage counts every pod).
    #[serde(default)]
    pub namespaces: NamespaceFilter,
    /// `OnlyThresholdingResources`: evict only pods that request at least one of the resources
    /// `thresholds` lists (the descheduler's `evictionModes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub eviction_modes: Vec<EvictionMode>,
}

/// How highNodeUtilization narrows the pods it evicts.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum EvictionMode {
    /// Only pods that request at least one of the resources `thresholds` lists.
    OnlyThresholdingResources,
}

/// Percentages per resource name (`cpu`, `memory`, `pods`, or an extended resource).
pub type Thresholds = BTreeMap<String, f64>;

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum UsageSource {
    /// Sum of the requests of the pods on the node (what the scheduler counts).
    #[default]
    Requests,
    /// CPU and memory measured by metrics-server (`metrics.k8s.io` NodeMetrics and PodMetrics),
    /// averaged over `window`; pods and extended resources still from requests.
    Metrics,
    /// One number per node from a Prometheus instant query (`query`), as the descheduler reads it:
    /// samples labelled `instance` with the node name, values in [0, 1]. Thresholds then list the
    /// one resource `MetricResource` (percent of 1). A pod's share is unknown, so each overutilized
    /// node loses one pod per cycle (or `evictionLimits.node`).
    Prometheus,
}

/// The resource thresholds name for a Prometheus query's value.
pub const METRIC_RESOURCE: &str = "MetricResource";

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageArgs {
    /// `Requests` (default): the sum of the pods' requests; `Metrics`: CPU and memory measured by
    /// metrics-server.
    #[serde(default)]
    pub source: UsageSource,
    /// With `Metrics`: average the samples of this long a window before the cycle.
    #[serde(default = "default_window")]
    pub window: GoDuration,
    /// With `Prometheus`: the PromQL instant query (`tidal run --prometheus-url` says where).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
}

impl Default for UsageArgs {
    fn default() -> Self {
        UsageArgs {
            source: UsageSource::Requests,
            window: default_window(),
            query: None,
        }
    }
}

fn default_window() -> GoDuration {
    GoDuration::from_secs(300)
}

/// Either a list of namespaces to include or a list to exclude; empty means every namespace.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!(has(self.include) && size(self.include) > 0 && has(self.exclude) && size(self.exclude) > 0)").message("set include or exclude, not both"))]
pub struct NamespaceFilter {
    /// Only pods in these namespaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub include: Vec<String>,
    /// No pods in these namespaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub exclude: Vec<String>,
}

impl NamespaceFilter {
    pub fn admits(&self, namespace: &str) -> bool {
        if !self.include.is_empty() {
            return self.include.iter().any(|n| n == namespace);
        }
        !self.exclude.iter().any(|n| n == namespace)
    }
}
