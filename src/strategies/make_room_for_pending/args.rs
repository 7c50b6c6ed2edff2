//! The arguments of makeRoomForPending, as a policy spells them under
//! `spec.strategies.makeRoomForPending`: their type, their defaults and the checks the CRD schema
//! makes of them; what the schema cannot check, the plugin's `validate` does.

// The schema derives (KubeSchema, JsonSchema) copy each type's visibility into items they generate,
// which `unreachable_pub` then reports; these are public CRD types.
#![allow(unreachable_pub)]

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::{GoDuration, pod_filters::NamespaceFilter};

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
