//! The arguments of highNodeUtilization, as a policy spells them under
//! `spec.strategies.highNodeUtilization`: their type, their defaults and the checks the CRD schema
//! makes of them; what the schema cannot check, the plugin's `validate` does.

// The schema derives (KubeSchema, JsonSchema) copy each type's visibility into items they generate,
// which `unreachable_pub` then reports; these are public CRD types.
#![allow(unreachable_pub)]

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::pod_filters::NamespaceFilter;
use crate::strategies::node_usage::args::{Thresholds, UsageArgs};

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
