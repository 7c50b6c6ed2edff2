//! tidal's own configuration objects as the cache keeps them: validated once when they change.

use jiff::Timestamp;

use crate::cluster::Unnamed;
use crate::cluster::model::job_budget::JobBudget;
use crate::{
    api::{DeschedulingPolicy, DeschedulingPolicySpec, RevocableZone, RevocableZoneSpec},
    windows::{DailyWindow, ZoneSchedule},
};

#[derive(Clone, Debug)]
pub struct ZoneInfo {
    pub name: String,
    /// For the events tidal sends about the zone, and to tell it from a namesake deleted before it.
    pub uid: Option<String>,
    pub spec: RevocableZoneSpec,
    /// The parsed windows, or why they could not be parsed. A zone that does not parse evicts nothing.
    pub schedule: Result<ZoneSchedule, String>,
    /// From `status.lastEvictionRound`: `evictPeriod` counts from here.
    pub last_eviction_round: Option<Timestamp>,
}

impl ZoneInfo {
    pub fn from_zone(zone: &RevocableZone) -> Result<ZoneInfo, Unnamed> {
        let name = zone
            .metadata
            .name
            .clone()
            .ok_or(Unnamed::name("RevocableZone"))?;
        Ok(ZoneInfo {
            schedule: schedule_of(&zone.spec).map_err(|e| format!("RevocableZone {name}: {e}")),
            last_eviction_round: zone
                .status
                .as_ref()
                .and_then(|s| s.last_eviction_round.as_ref())
                .map(|t| t.0),
            uid: zone.metadata.uid.clone(),
            spec: zone.spec.clone(),
            name,
        })
    }
}

fn schedule_of(spec: &RevocableZoneSpec) -> Result<ZoneSchedule, String> {
    let windows = spec
        .windows
        .iter()
        .map(|w| DailyWindow::parse(&w.time, &w.days))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    ZoneSchedule::new(windows, &spec.time_zone).map_err(|e| e.to_string())
}

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
