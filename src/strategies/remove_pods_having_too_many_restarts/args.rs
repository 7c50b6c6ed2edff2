//! The arguments of removePodsHavingTooManyRestarts, as a policy spells them under
//! `spec.strategies.removePodsHavingTooManyRestarts`: their type, their defaults and the checks the
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
