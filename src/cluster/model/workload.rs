//! Objects that describe workloads rather than run them: Volcano PodGroups and PodDisruptionBudgets.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::policy::v1::PodDisruptionBudget, apimachinery::pkg::apis::meta::v1::LabelSelector,
};

use crate::api::{PodGroup, labels};
use crate::cluster::Unnamed;
use crate::cluster::{
    model::job_budget::JobBudget,
    model::keys::ObjectKey,
    model::setting::{Setting, Sources, parse_bool},
};

#[derive(Clone, Debug, PartialEq)]
pub struct PodGroupInfo {
    pub key: ObjectKey,
    pub preemptable: Setting<bool>,
    pub budget: Setting<JobBudget>,
    pub min_member: Option<i32>,
    /// [`labels::EXPECTED_RUN_TIME`] for the group's pods that set none.
    pub expected_run_time: Setting<crate::api::GoDuration>,
}

impl PodGroupInfo {
    pub fn from_podgroup(group: &PodGroup) -> Result<PodGroupInfo, Unnamed> {
        let meta = &group.metadata;
        let key = ObjectKey::new(
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().ok_or(Unnamed::name("PodGroup"))?,
        );
        let object = format!("PodGroup {key}");
        let empty = BTreeMap::new();
        let sources = Sources {
            object: &object,
            maps: &[
                Some(meta.labels.as_ref().unwrap_or(&empty)),
                Some(meta.annotations.as_ref().unwrap_or(&empty)),
            ],
        };
        Ok(PodGroupInfo {
            preemptable: sources.read(&[labels::PREEMPTABLE], parse_bool),
            budget: JobBudget::read(&sources),
            min_member: group.spec.min_member,
            expected_run_time: sources.read_parsed(&[labels::EXPECTED_RUN_TIME]),
            key,
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct PdbInfo {
    pub key: ObjectKey,
    pub selector: Option<LabelSelector>,
    pub disruptions_allowed: i32,
}

impl PdbInfo {
    pub fn from_pdb(pdb: &PodDisruptionBudget) -> Result<PdbInfo, Unnamed> {
        let meta = &pdb.metadata;
        Ok(PdbInfo {
            key: ObjectKey::new(
                meta.namespace.clone().unwrap_or_default(),
                meta.name
                    .clone()
                    .ok_or(Unnamed::name("PodDisruptionBudget"))?,
            ),
            selector: pdb.spec.as_ref().and_then(|s| s.selector.clone()),
            disruptions_allowed: pdb.status.as_ref().map_or(0, |s| s.disruptions_allowed),
        })
    }
}
