//! The arguments of podLifeTime, as a policy spells them under `spec.strategies.podLifeTime`: their
//! type, their defaults and the checks the CRD schema makes of them; what the schema cannot check,
//! the plugin's `validate` does.

// The schema derives (KubeSchema, JsonSchema) copy each type's visibility into items they generate,
// which `unreachable_pub` then reports; these are public CRD types.
#![allow(unreachable_pub)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::pod_filters::{NamespaceFilter, OwnerKinds};

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
