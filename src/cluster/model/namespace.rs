//! Namespaces, for their labels: the evictor's namespace label selector and affinity terms' namespace
//! selectors read them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;

use crate::cluster::Unnamed;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamespaceInfo {
    pub name: String,
    pub labels: BTreeMap<String, String>,
}

impl NamespaceInfo {
    pub fn from_namespace(namespace: &Namespace) -> Result<NamespaceInfo, Unnamed> {
        Ok(NamespaceInfo {
            name: namespace
                .metadata
                .name
                .clone()
                .ok_or(Unnamed::name("Namespace"))?,
            labels: namespace.metadata.labels.clone().unwrap_or_default(),
        })
    }
}
