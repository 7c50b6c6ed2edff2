//! The arguments of removePodsViolatingTopologySpreadConstraint, as a policy spells them under
//! `spec.strategies.removePodsViolatingTopologySpreadConstraint`: their type, their defaults and
//! the checks the CRD schema makes of them; what the schema cannot check, the plugin's `validate`
//! does.

// The schema derives (KubeSchema, JsonSchema) copy each type's visibility into items they generate,
// which `unreachable_pub` then reports; these are public CRD types.
#![allow(unreachable_pub)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::pod_filters::NamespaceFilter;

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopologySpreadArgs {
    /// Which constraints to enforce, by `whenUnsatisfiable`: `DoNotSchedule` (hard, the default) and/or
    /// `ScheduleAnyway` (soft).
    #[serde(default = "default_constraints")]
    #[schemars(length(min = 1), extend("x-kubernetes-list-type" = "set"))]
    pub constraints: Vec<Unsatisfiable>,
    /// Only evict a pod if it fits a node in a domain with fewer matching pods (so that the move can
    /// actually happen).
    #[serde(default = "yes")]
    pub topology_balance_node_fit: bool,
    #[serde(default)]
    pub namespaces: NamespaceFilter,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

impl Default for TopologySpreadArgs {
    fn default() -> Self {
        TopologySpreadArgs {
            constraints: default_constraints(),
            topology_balance_node_fit: true,
            namespaces: NamespaceFilter::default(),
            label_selector: None,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum Unsatisfiable {
    DoNotSchedule,
    ScheduleAnyway,
}

fn default_constraints() -> Vec<Unsatisfiable> {
    vec![Unsatisfiable::DoNotSchedule]
}

fn yes() -> bool {
    true
}
