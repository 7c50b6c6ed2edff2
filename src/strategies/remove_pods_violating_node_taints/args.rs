//! The arguments of removePodsViolatingNodeTaints, as a policy spells them under
//! `spec.strategies.removePodsViolatingNodeTaints`: their type, their defaults and the checks the
//! CRD schema makes of them; what the schema cannot check, the plugin's `validate` does.

// The schema derives (KubeSchema, JsonSchema) copy each type's visibility into items they generate,
// which `unreachable_pub` then reports; these are public CRD types.
#![allow(unreachable_pub)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::KubeSchema;
use serde::{Deserialize, Serialize};

use crate::api::pod_filters::NamespaceFilter;

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
