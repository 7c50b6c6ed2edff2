//! PersistentVolumeClaims, for their StorageClass: `protections.protectedStorageClasses` protects the
//! pods that mount a claim of one of the listed classes.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;

use crate::cluster::{ObjectKey, Unnamed};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimInfo {
    pub key: ObjectKey,
    /// `spec.storageClassName`; `None` when unset or empty (the claim's class cannot be told).
    pub storage_class: Option<String>,
}

impl ClaimInfo {
    pub fn from_claim(claim: &PersistentVolumeClaim) -> Result<ClaimInfo, Unnamed> {
        let meta = &claim.metadata;
        let name = meta
            .name
            .clone()
            .ok_or(Unnamed::name("PersistentVolumeClaim"))?;
        Ok(ClaimInfo {
            key: ObjectKey::new(meta.namespace.clone().unwrap_or_default(), name),
            storage_class: claim
                .spec
                .as_ref()
                .and_then(|s| s.storage_class_name.clone())
                .filter(|c| !c.is_empty()),
        })
    }
}
