//! A DeschedulingPolicy as the cache keeps it: its default job budget checked once when it changes.

use crate::api::{DeschedulingPolicy, DeschedulingPolicySpec};
use crate::cluster::Unnamed;
use crate::cluster::model::job_budget::JobBudget;

#[derive(Clone, Debug)]
pub struct PolicyInfo {
    pub name: String,
    /// For the events tidal sends about the policy, and to tell it from a namesake deleted before it:
    /// both start at generation 1.
    pub uid: Option<String>,
    pub generation: Option<i64>,
    pub spec: DeschedulingPolicySpec,
    /// The default job budget, checked once. An invalid one stops the policy rather than being ignored.
    pub default_budget: Result<Option<JobBudget>, String>,
}

impl PolicyInfo {
    pub fn from_policy(policy: &DeschedulingPolicy) -> Result<PolicyInfo, Unnamed> {
        let name = policy
            .metadata
            .name
            .clone()
            .ok_or(Unnamed::name("DeschedulingPolicy"))?;
        Ok(PolicyInfo {
            uid: policy.metadata.uid.clone(),
            ..PolicyInfo::new(name, policy.metadata.generation, policy.spec.clone())
        })
    }

    pub fn new(name: String, generation: Option<i64>, spec: DeschedulingPolicySpec) -> PolicyInfo {
        let default_budget = spec
            .defaults
            .job_budget
            .as_ref()
            .map(JobBudget::from_spec)
            .transpose()
            .map_err(|e| format!("DeschedulingPolicy {name}: spec.defaults.jobBudget: {e}"));
        PolicyInfo {
            name,
            uid: None,
            generation,
            spec,
            default_budget,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_keeps_its_uid_to_tell_it_from_a_namesake() {
        let policy: DeschedulingPolicy = serde_json::from_value(serde_json::json!({
            "apiVersion": "tidal.dev/v1alpha1", "kind": "DeschedulingPolicy",
            "metadata": {"name": "p", "uid": "0b5e-1", "generation": 1},
            "spec": {"mode": "DryRun", "strategies": {"tdm": {}}},
        }))
        .unwrap();
        let info = PolicyInfo::from_policy(&policy).unwrap();
        assert_eq!(info.uid.as_deref(), Some("0b5e-1"));
        assert_eq!(info.generation, Some(1));
    }
}
