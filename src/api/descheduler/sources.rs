//! Where descheduler policies live: a policy file, a ConfigMap holding one under any key (the
//! descheduler's `kubernetes/base/configmap.yaml`), or the descheduler Helm chart's values
//! (`deschedulerPolicy`, with `deschedulerPolicyAPIVersion` and the interval or schedule it runs on).

use serde_json::{Value, json};

use super::{API_VERSION, API_VERSION_V1ALPHA1, Effect, KIND, Note, cron, is_descheduler_policy};
use crate::api::GoDuration;

/// A descheduler policy found in a document, with what the document says about how it ran.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Source {
    /// Where it was found, for messages: `ConfigMap kube-system/descheduler-policy-configmap key policy.yaml`.
    pub label: String,
    pub policy: Value,
    /// How often the descheduler ran it (a Helm values file's `deschedulingInterval`, or the interval
    /// its CronJob `schedule` amounts to).
    pub interval: Option<String>,
    /// The shortest interval at which tidal runs no more often than the descheduler did, when the
    /// document says how it ran: a shorter `--interval` is looser.
    pub min_interval: Option<GoDuration>,
    /// What became of the schedule; left out when `--interval` says how often to run instead.
    pub interval_note: Option<Note>,
    /// Notes about the document itself (flags of the descheduler's process, ...).
    pub notes: Vec<String>,
}

/// The descheduler policies `document` holds, or why it holds none.
pub(crate) fn policies_in(document: &Value) -> Result<Vec<Source>, String> {
    if is_descheduler_policy(document) {
        return Ok(vec![Source {
            label: "the policy".to_owned(),
            policy: document.clone(),
            interval: None,
            min_interval: None,
            interval_note: None,
            notes: Vec::new(),
        }]);
    }
    if document["kind"] == "ConfigMap" {
        return config_map(document);
    }
    if let Some(policy) = document.get("deschedulerPolicy") {
        return helm_values(document, policy);
    }
    Err(format!(
        "not a descheduler policy: expected a {KIND} (apiVersion descheduler/v1alpha1 or \
         {API_VERSION}), a ConfigMap holding one, or a descheduler Helm values file \
         (deschedulerPolicy); got {} {}",
        document["apiVersion"], document["kind"]
    ))
}

fn config_map(document: &Value) -> Result<Vec<Source>, String> {
    let name = format!(
        "{}/{}",
        document["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default"),
        document["metadata"]["name"].as_str().unwrap_or("(unnamed)")
    );
    let mut found = Vec::new();
    let mut unreadable = Vec::new();
    for (key, text) in document["data"].as_object().into_iter().flatten() {
        let Some(text) = text.as_str() else {
            continue;
        };
        match serde_saphyr::from_str::<Value>(text) {
            Ok(policy) if is_descheduler_policy(&policy) => found.push(Source {
                label: format!("ConfigMap {name} key {key}"),
                policy,
                interval: None,
                min_interval: None,
                interval_note: None,
                notes: Vec::new(),
            }),
            Ok(_) => {}
            Err(error) => unreadable.push(format!("{key} ({error})")),
        }
    }
    if found.is_empty() {
        let why = if unreadable.is_empty() {
            String::new()
        } else {
            format!("; unreadable: {}", unreadable.join(", "))
        };
        return Err(format!(
            "ConfigMap {name} holds no descheduler policy under any key{why}"
        ));
    }
    Ok(found)
}

fn helm_values(document: &Value, policy: &Value) -> Result<Vec<Source>, String> {
    if !policy.is_object() {
        return Err("deschedulerPolicy is not a mapping: nothing to convert".to_owned());
    }
    // Charts up to v0.26 wrote v1alpha1 policies (`strategies:`) and had no
    // deschedulerPolicyAPIVersion: such values are read as what they were written for.
    let written_for_v1alpha1 =
        policy.get("strategies").is_some() && policy.get("profiles").is_none();
    let api_version =
        document["deschedulerPolicyAPIVersion"]
            .as_str()
            .unwrap_or(if written_for_v1alpha1 {
                API_VERSION_V1ALPHA1
            } else {
                API_VERSION
            });
    let mut full = json!({"apiVersion": api_version, "kind": KIND});
    for (key, value) in policy.as_object().into_iter().flatten() {
        full[key] = value.clone();
    }
    let mut notes = Vec::new();
    let (interval, min_interval, interval_note) = match document["kind"].as_str() {
        Some("Deployment") => {
            let interval = document["deschedulingInterval"].as_str().unwrap_or("5m");
            (Some(interval.to_owned()), interval.parse().ok(), None)
        }
        // The chart's default kind is a CronJob.
        _ => schedule_interval(document["schedule"].as_str().unwrap_or("*/2 * * * *")),
    };
    for key in ["cmdOptions", "leaderElection"] {
        if let Some(value) = document.get(key).filter(|v| v.is_object()) {
            notes.push(format!(
                "{key} {value}: flags of the descheduler's process, not of a policy; tidal's \
                 chart has its own (controller.*), see docs/descheduler.md"
            ));
        }
    }
    Ok(vec![Source {
        label: "Helm values deschedulerPolicy".to_owned(),
        policy: full,
        interval,
        min_interval,
        interval_note,
        notes,
    }])
}

/// The interval a CronJob schedule amounts to (see [`cron`]: its longest gap), the shortest safe
/// one, and what became of the schedule.
fn schedule_interval(schedule: &str) -> (Option<String>, Option<GoDuration>, Option<Note>) {
    match cron::cadence(schedule) {
        Ok(Some(cadence)) => {
            let every = GoDuration::from_secs(cadence.longest);
            let note = if cadence.uniform {
                Note {
                    effect: Effect::Same,
                    text: format!("schedule {schedule:?} runs every {every}: interval {every}"),
                }
            } else {
                Note {
                    effect: Effect::Stricter,
                    text: format!(
                        "schedule {schedule:?} runs at uneven gaps, the longest {every}: interval \
                         {every}, so that tidal never runs (and evicts) more often than the \
                         descheduler did, and less often where its gaps were shorter"
                    ),
                }
            };
            (Some(every.to_string()), Some(every), Some(note))
        }
        Ok(None) => (
            None,
            None,
            Some(Note {
                effect: Effect::Looser,
                text: format!(
                    "schedule {schedule:?} never runs, so the descheduler evicted nothing: a \
                     policy that runs at any interval evicts more"
                ),
            }),
        ),
        Err(why) => (
            None,
            None,
            Some(Note {
                effect: Effect::Looser,
                text: format!(
                    "schedule {schedule:?} is not a cron schedule tidal can read ({why}): it cannot \
                     tell how often the descheduler ran, and its default interval could run \
                     more often; give --interval"
                ),
            }),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(schedule: &str) -> Source {
        let values = json!({"kind": "CronJob", "schedule": schedule,
            "deschedulerPolicy": {"profiles": []}});
        policies_in(&values).unwrap().remove(0)
    }

    #[test]
    fn a_cron_schedule_becomes_the_interval_it_amounts_to() {
        let hourly = chart("0 * * * *");
        assert_eq!(hourly.interval.as_deref(), Some("1h0m0s"));
        assert_eq!(hourly.interval_note.unwrap().effect, Effect::Same);
        let uneven = chart("0 9,10 * * *");
        assert_eq!(uneven.interval.as_deref(), Some("23h0m0s"));
        assert_eq!(uneven.interval_note.unwrap().effect, Effect::Stricter);
        // The chart's default schedule.
        let values = json!({"deschedulerPolicy": {"profiles": []}});
        let default = policies_in(&values).unwrap().remove(0);
        assert_eq!(default.interval.as_deref(), Some("2m0s"));
    }

    #[test]
    fn a_schedule_tidal_cannot_read_or_that_never_runs_is_looser() {
        for schedule in ["0 0 30 2 *", "every hour", "0 25 * * *"] {
            let source = chart(schedule);
            assert_eq!(source.interval, None, "{schedule}");
            assert_eq!(
                source.interval_note.unwrap().effect,
                Effect::Looser,
                "{schedule}"
            );
        }
    }
}
