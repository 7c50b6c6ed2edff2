//! The slim node tidal keeps.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Taint};

use crate::api::labels;
use crate::cluster::Unnamed;
use crate::cluster::{model::resources::Resources, model::setting::InvalidValue};

#[derive(Clone, Debug, PartialEq)]
pub struct NodeInfo {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// `volcano.sh/revocable-zone` label.
    pub revocable_zone: Option<String>,
    pub allocatable: Resources,
    pub unschedulable: bool,
    pub ready: bool,
    pub taints: Vec<Taint>,
    pub problems: Vec<InvalidValue>,
}

impl NodeInfo {
    pub fn from_node(node: &Node) -> Result<NodeInfo, Unnamed> {
        let name = node.metadata.name.clone().ok_or(Unnamed::name("node"))?;
        let labels = node.metadata.labels.clone().unwrap_or_default();
        let status = node.status.as_ref();
        let mut problems = Vec::new();
        let allocatable = match status.and_then(|s| s.allocatable.as_ref()) {
            Some(list) => Resources::from_list(list).unwrap_or_else(|(resource, error)| {
                problems.push(InvalidValue {
                    object: format!("Node {name}"),
                    key: format!("status.allocatable.{resource}"),
                    value: error.text.clone(),
                    error: error.reason.to_owned(),
                });
                Resources::default()
            }),
            None => Resources::default(),
        };
        let ready = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .is_some_and(|c| c.status == "True");
        let spec = node.spec.as_ref();
        Ok(NodeInfo {
            revocable_zone: labels
                .get(labels::REVOCABLE_ZONE)
                .filter(|z| !z.is_empty())
                .cloned(),
            allocatable,
            unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            ready,
            taints: spec.and_then(|s| s.taints.clone()).unwrap_or_default(),
            problems,
            labels,
            name,
        })
    }

    /// Whether a pod evicted elsewhere could be scheduled here: the node is ready, schedulable, and in
    /// no zone that `shut` says is closed or draining (a zone without its RevocableZone counts as
    /// shut: nothing says it is open). Taints and resources are not weighed: an estimate of whether
    /// replacements run at all, not of where.
    pub fn takes_replacements(&self, shut: impl Fn(&str) -> bool) -> bool {
        self.ready && !self.unschedulable && self.revocable_zone.as_deref().is_none_or(|z| !shut(z))
    }
}
