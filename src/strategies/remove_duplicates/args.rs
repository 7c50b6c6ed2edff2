//! The arguments of removeDuplicates, as a policy spells them under
//! `spec.strategies.removeDuplicates`: their type, their defaults and the checks the CRD schema
//! makes of them; what the schema cannot check, the plugin's `validate` does.

// The schema derives (KubeSchema, JsonSchema) copy each type's visibility into items they generate,
// which `unreachable_pub` then reports; these are public CRD types.
#![allow(unreachable_pub)]

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::pod_filters::NamespaceFilter;

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoveDuplicatesArgs {
    /// Leave pods with an owner of one of these kinds (add `ReplicaSet` to leave Deployments alone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub exclude_owner_kinds: Vec<String>,
    #[serde(default)]
    pub namespaces: NamespaceFilter,
}
