//! The arguments of removePodsViolatingNodeAffinity, as a policy spells them under
//! `spec.strategies.removePodsViolatingNodeAffinity`: their type, their defaults and the checks the
//! CRD schema makes of them; what the schema cannot check, the plugin's `validate` does.

// The schema derives (KubeSchema, JsonSchema) copy each type's visibility into items they generate,
// which `unreachable_pub` then reports; these are public CRD types.
#![allow(unreachable_pub)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::pod_filters::NamespaceFilter;

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

fn yes() -> bool {
    true
}

fn is_true(value: &bool) -> bool {
    *value
}

fn default_types() -> Vec<AffinityType> {
    vec![AffinityType::Required]
}
