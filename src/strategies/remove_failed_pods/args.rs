//! The arguments of removeFailedPods, as a policy spells them under
//! `spec.strategies.removeFailedPods`: their type, their defaults and the checks the CRD schema
//! makes of them; what the schema cannot check, the plugin's `validate` does.

// The schema derives (KubeSchema, JsonSchema) copy each type's visibility into items they generate,
// which `unreachable_pub` then reports; these are public CRD types.
#![allow(unreachable_pub)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::pod_filters::NamespaceFilter;

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
