//! Where descheduler policies live: a policy file, a ConfigMap holding one under any key (the
//! descheduler's `kubernetes/base/configmap.yaml`), or the descheduler Helm chart's values
//! (`deschedulerPolicy`, with `deschedulerPolicyAPIVersion` and the interval or schedule it runs on).

use serde_json::{Value, json};

use super::{API_VERSION, KIND, is_descheduler_policy};

/// A descheduler policy found in a document, with what the document says about how it ran.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Source {
    /// Where it was found, for messages: `ConfigMap kube-system/descheduler-policy-configmap key policy.yaml`.
    pub label: String,
    pub policy: Value,
    /// How often the descheduler ran it (a Helm values file's `deschedulingInterval` or `*/N` schedule).
    pub interval: Option<String>,
    /// Notes about the document itself (a schedule tidal cannot follow, ...).
    pub notes: Vec<String>,
}

/// The descheduler policies `document` holds, or why it holds none.
pub(crate) fn policies_in(document: &Value) -> Result<Vec<Source>, String> {
    if is_descheduler_policy(document) {
        return Ok(vec![Source {
            label: "the policy".to_owned(),
            policy: document.clone(),
            interval: None,
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
    let api_version = document["deschedulerPolicyAPIVersion"]
        .as_str()
        .unwrap_or(API_VERSION);
    let mut full = json!({"apiVersion": api_version, "kind": KIND});
    for (key, value) in policy.as_object().into_iter().flatten() {
        full[key] = value.clone();
    }
    let mut notes = Vec::new();
    let interval = match document["kind"].as_str() {
        Some("Deployment") => document["deschedulingInterval"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| Some("5m".to_owned())),
        // The chart's default kind is a CronJob.
        _ => {
            let schedule = document["schedule"].as_str().unwrap_or("*/2 * * * *");
            let every = cron_minutes(schedule);
            if every.is_none() {
                notes.push(format!(
                    "schedule {schedule:?}: tidal runs a policy every `interval`, not on a cron \
                     schedule; set --interval to what the schedule amounts to"
                ));
            }
            every.map(|m| format!("{m}m"))
        }
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
        notes,
    }])
}

/// `*/N * * * *` (every N minutes) and `* * * * *` (every minute): the schedules an interval can say.
fn cron_minutes(schedule: &str) -> Option<u32> {
    let fields: Vec<&str> = schedule.split_whitespace().collect();
    let [minute, "*", "*", "*", "*"] = fields.as_slice() else {
        return None;
    };
    match *minute {
        "*" => Some(1),
        every => every.strip_prefix("*/")?.parse().ok().filter(|m| *m > 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cron_schedules_that_are_intervals() {
        assert_eq!(cron_minutes("*/2 * * * *"), Some(2));
        assert_eq!(cron_minutes("* * * * *"), Some(1));
        assert_eq!(cron_minutes("0 3 * * *"), None);
        assert_eq!(cron_minutes("*/0 * * * *"), None);
    }
}
