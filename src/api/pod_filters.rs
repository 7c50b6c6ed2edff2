//! The pod filters that several strategies' arguments and the policy itself take: namespaces to include
//! or exclude, owner kinds to include or exclude.

// The schema derives (KubeSchema, JsonSchema) copy each type's visibility into items they generate,
// which `unreachable_pub` then reports; these are public CRD types.
#![allow(unreachable_pub)]

use kube::KubeSchema;
use serde::{Deserialize, Serialize};

/// Either a list of namespaces to include or a list to exclude; empty means every namespace.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!(has(self.include) && size(self.include) > 0 && has(self.exclude) && size(self.exclude) > 0)").message("set include or exclude, not both"))]
pub struct NamespaceFilter {
    /// Only pods in these namespaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub include: Vec<String>,
    /// No pods in these namespaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub exclude: Vec<String>,
}

impl NamespaceFilter {
    pub fn admits(&self, namespace: &str) -> bool {
        if !self.include.is_empty() {
            return self.include.iter().any(|n| n == namespace);
        }
        !self.exclude.iter().any(|n| n == namespace)
    }
}

/// Include or exclude owner kinds (at most one list).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, KubeSchema)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!(has(self.include) && has(self.exclude))").message("set include or exclude, not both"))]
pub struct OwnerKinds {
    /// Only pods with an owner reference of one of these kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// No pod with an owner reference of one of these kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
}
