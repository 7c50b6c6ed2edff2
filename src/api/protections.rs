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
    /// With `pvcPods`: only claims of these StorageClasses protect a pod; a claim whose class tidal
    /// cannot tell (claim not found, no class) protects it too. Empty: every claim protects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub protected_storage_classes: Vec<String>,
    /// Protect pods that use dynamic resources (`spec.resourceClaims`: GPUs and other devices
    /// allocated through DRA).
    #[serde(default)]
    pub resource_claim_pods: bool,
    /// What a pod's `descheduler.alpha.kubernetes.io/prefer-no-eviction` annotation means:
    /// `Preferred` (default) evicts such pods last among equals, `Mandatory` never evicts them.
    #[serde(default)]
    pub no_eviction_policy: NoEvictionPolicy,
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
    /// Protect pods younger than this, counted from `status.startTime` as the descheduler does (a pod
    /// the kubelet has not started yet is protected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_pod_age: Option<GoDuration>,
    /// Only evict a pod that fits some other ready, schedulable node (selector, affinity, taints,
    /// resources). Does not apply to `tdm` and `makeRoomForPending`, whose pods must leave their node
    /// whether or not they fit elsewhere. Refusals are reported by gate `nodefit`.
    #[serde(default)]
    pub node_fit: bool,
    /// With `nodeFit`: only nodes whose labels match this selector count as places the pod could go
    /// (the descheduler's evictor `nodeSelector`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_fit_node_selector: Option<LabelSelector>,
}

/// How the `descheduler.alpha.kubernetes.io/prefer-no-eviction` annotation is read.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NoEvictionPolicy {
    /// A wish: among pods a strategy ranks alike, annotated ones are evicted last.
    #[default]
    Preferred,
    /// A rule: annotated pods are never evicted (unless `descheduler.alpha.kubernetes.io/evict` says
    /// true, which overrides it as in the descheduler).
    Mandatory,
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
            protected_storage_classes: Vec::new(),
            resource_claim_pods: false,
            no_eviction_policy: NoEvictionPolicy::Preferred,
            pods_without_pdb: false,
            label_selector: None,
            namespace_label_selector: None,
            min_replicas: None,
            min_pod_age: None,
            node_fit: false,
            node_fit_node_selector: None,
        }
    }
}

fn yes() -> bool {
    true
}
