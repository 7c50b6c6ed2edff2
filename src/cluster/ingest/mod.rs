//! The one path by which Kubernetes objects enter the cache, for watch events and saved dumps alike:
//! each kind is converted to its slim form here (so managed fields, specs tidal never reads, etc. are
//! dropped at the door) and applied or deleted by key.

use std::fmt::Debug;

use jiff::Timestamp;
use k8s_openapi::api::{
    core::v1::{Namespace, Node, PersistentVolumeClaim, Pod},
    policy::v1::PodDisruptionBudget,
};
use kube::Resource;
use serde::de::DeserializeOwned;

use crate::api::{DeschedulingPolicy, PodGroup, RevocableZone};
use crate::cluster::{
    ClaimInfo, ClusterCache, NamespaceInfo, NodeInfo, ObjectKey, ObjectKind, PdbInfo, PodGroupInfo,
    PodInfo, PolicyInfo, Unnamed, ZoneInfo,
};

pub(crate) mod decode;

/// A Kubernetes type the cache ingests.
pub trait Ingest: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static {
    const KIND: ObjectKind;

    /// Converts and stores the object, as observed at `at` (when its event arrived). `Err` means the
    /// object cannot be used at all.
    fn apply_to(&self, cache: &mut ClusterCache, at: Timestamp) -> Result<(), Unnamed>;

    fn key(&self) -> ObjectKey {
        let meta = self.meta();
        ObjectKey::new(
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        )
    }
}

impl Ingest for Pod {
    const KIND: ObjectKind = ObjectKind::Pod;
    fn apply_to(&self, cache: &mut ClusterCache, at: Timestamp) -> Result<(), Unnamed> {
        cache.apply_pod(PodInfo::from_pod(self)?, at);
        Ok(())
    }
}

impl Ingest for Node {
    const KIND: ObjectKind = ObjectKind::Node;
    fn apply_to(&self, cache: &mut ClusterCache, _at: Timestamp) -> Result<(), Unnamed> {
        cache.apply_node(NodeInfo::from_node(self)?);
        Ok(())
    }
}

impl Ingest for PodDisruptionBudget {
    const KIND: ObjectKind = ObjectKind::PodDisruptionBudget;
    fn apply_to(&self, cache: &mut ClusterCache, _at: Timestamp) -> Result<(), Unnamed> {
        cache.apply_pdb(PdbInfo::from_pdb(self)?);
        Ok(())
    }
}

impl Ingest for PodGroup {
    const KIND: ObjectKind = ObjectKind::PodGroup;
    fn apply_to(&self, cache: &mut ClusterCache, _at: Timestamp) -> Result<(), Unnamed> {
        cache.apply_podgroup(PodGroupInfo::from_podgroup(self)?);
        Ok(())
    }
}

impl Ingest for RevocableZone {
    const KIND: ObjectKind = ObjectKind::RevocableZone;
    fn apply_to(&self, cache: &mut ClusterCache, _at: Timestamp) -> Result<(), Unnamed> {
        cache.apply_zone(ZoneInfo::from_zone(self)?);
        Ok(())
    }
}

impl Ingest for DeschedulingPolicy {
    const KIND: ObjectKind = ObjectKind::DeschedulingPolicy;
    fn apply_to(&self, cache: &mut ClusterCache, _at: Timestamp) -> Result<(), Unnamed> {
        cache.apply_policy(PolicyInfo::from_policy(self)?);
        Ok(())
    }
}

impl Ingest for Namespace {
    const KIND: ObjectKind = ObjectKind::Namespace;
    fn apply_to(&self, cache: &mut ClusterCache, _at: Timestamp) -> Result<(), Unnamed> {
        cache.apply_namespace(NamespaceInfo::from_namespace(self)?);
        Ok(())
    }
}

impl Ingest for PersistentVolumeClaim {
    const KIND: ObjectKind = ObjectKind::PersistentVolumeClaim;
    fn apply_to(&self, cache: &mut ClusterCache, _at: Timestamp) -> Result<(), Unnamed> {
        cache.apply_claim(ClaimInfo::from_claim(self)?);
        Ok(())
    }
}

impl ClusterCache {
    /// Removes one object by kind and key (`namespace/name`; empty namespace for cluster-scoped kinds),
    /// as observed at `at`.
    pub fn delete_object(&mut self, kind: ObjectKind, key: &ObjectKey, at: Timestamp) {
        match kind {
            ObjectKind::Pod => self.delete_pod(key, at),
            ObjectKind::Node => self.delete_node(&key.name),
            ObjectKind::PodDisruptionBudget => self.delete_pdb(key),
            ObjectKind::PodGroup => self.delete_podgroup(key),
            ObjectKind::RevocableZone => self.delete_zone(&key.name),
            ObjectKind::DeschedulingPolicy => self.delete_policy(&key.name),
            ObjectKind::Namespace => self.delete_namespace(&key.name),
            ObjectKind::PersistentVolumeClaim => self.delete_claim(key),
        }
    }
}
