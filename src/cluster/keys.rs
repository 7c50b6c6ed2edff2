//! Identities of the things tidal keeps: namespaced objects and jobs.

use std::fmt;

use serde::Serialize;

/// `namespace/name` of a namespaced object (or `name` alone for a cluster-scoped one, with an empty namespace).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ObjectKey {
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectKey {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// The unit disruption budgets apply to: the pod's Volcano PodGroup, else its controller, else the pod.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct JobKey {
    pub namespace: String,
    pub kind: JobKind,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum JobKind {
    PodGroup,
    /// A controller owner, by kind (`ReplicaSet`, `StatefulSet`, `Job`, ...).
    Controller(String),
    /// A pod without group or controller is a job of one.
    Pod,
}

impl fmt::Display for JobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            JobKind::PodGroup => "PodGroup",
            JobKind::Controller(kind) => kind,
            JobKind::Pod => "Pod",
        };
        write!(f, "{kind} {}/{}", self.namespace, self.name)
    }
}
