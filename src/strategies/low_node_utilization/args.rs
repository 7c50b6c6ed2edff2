//! The arguments of lowNodeUtilization, as a policy spells them under
//! `spec.strategies.lowNodeUtilization`: their type, their defaults and the checks the CRD schema
//! makes of them; what the schema cannot check, the plugin's `validate` does.

// The schema derives (KubeSchema, JsonSchema) copy each type's visibility into items they generate,
// which `unreachable_pub` then reports; these are public CRD types.
#![allow(unreachable_pub)]

use kube::KubeSchema;
use serde::{Deserialize, Serialize};

use crate::api::pod_filters::NamespaceFilter;
use crate::strategies::node_usage::args::{Thresholds, UsageArgs};

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
