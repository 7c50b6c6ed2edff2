//! Which pods a policy must not evict: the evictor protections operators know from the Kubernetes
//! descheduler. The rules themselves are applied by gate `protected` in `crate::gates::protected`.

// The schema derives (KubeSchema, CustomResource, JsonSchema) copy each type's visibility into items
// they generate, which `unreachable_pub` then reports; these are the public CRD and window types.
#![allow(unreachable_pub)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::GoDuration;

/// Which pods the policy must not evict. Static (mirror) pods and terminating pods are never evicted,
/// whatever is set here.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Protections {
    /// Protect system-critical pods (priority ≥ 2000000000, or priority class `system-cluster-critical`
    /// or `system-node-critical`).
    #[serde(default = "yes")]
    pub system_critical: bool,
    /// Also protect every pod whose priority is at least this (pods without a priority count as 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_threshold: Option<i32>,
    /// Protect pods owned by a DaemonSet: evicting one only restarts it on the same node.
    #[serde(default = "yes")]
    pub daemon_set_pods: bool,
    /// Protect pods with `emptyDir` or `hostPath` volumes, whose data an eviction loses.
    #[serde(default = "yes")]
    pub local_storage_pods: bool,
    /// Protect pods without any owner reference (nothing would recreate them), unless they have failed.
    #[serde(default = "yes")]
    pub bare_pods: bool,
    /// Protect pods that mount a PersistentVolumeClaim (or a generic ephemeral volume).
    #[serde(default)]
    pub pvc_pods: bool,
    /// Protect pods that no PodDisruptionBudget covers.
    #[serde(default)]
    pub pods_without_pdb: bool,
    /// Only pods matching this selector may be evicted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Only pods in namespaces whose labels match this selector may be evicted. Pods in namespaces tidal
    /// has not seen are protected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_label_selector: Option<LabelSelector>,
    /// Protect pods of workloads (PodGroup, else controller) with fewer than this many unfinished pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<u32>,
    /// Protect pods younger than this (counted from creation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_pod_age: Option<GoDuration>,
    /// Only evict a pod that fits some other ready, schedulable node (selector, affinity, taints,
    /// resources). Does not apply to `tdm` and `makeRoomForPending`, whose pods must leave their node
    /// whether or not they fit elsewhere. Refusals are reported by gate `nodefit`.
    #[serde(default)]
    pub node_fit: bool,
}

impl Default for Protections {
    fn default() -> Self {
        Protections {
            system_critical: true,
            priority_threshold: None,
            daemon_set_pods: true,
            local_storage_pods: true,
            bare_pods: true,
            pvc_pods: false,
            pods_without_pdb: false,
            label_selector: None,
            namespace_label_selector: None,
            min_replicas: None,
            min_pod_age: None,
            node_fit: false,
        }
    }
}

fn yes() -> bool {
    true
}
