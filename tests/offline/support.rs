//! What several offline tests share: tidal's report as JSON, and the descheduler policies a fixture
//! file holds.

use std::path::Path;

use serde_json::{Value, json};

use crate::cli::tidal;

/// `tidal report -o json` with `args`: it must succeed and run every policy without error.
pub(crate) fn report_json(args: &[&str]) -> Value {
    let output = tidal(&[&["report", "-o", "json"], args].concat());
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    for policy in report["policies"].as_array().unwrap() {
        assert!(policy["error"].is_null(), "{report}");
    }
    report
}

/// The descheduler policies in a fixture file: plain documents, the keys of a ConfigMap, or a chart's
/// `deschedulerPolicy` (with the chart's `deschedulerPolicyAPIVersion`).
pub(crate) fn descheduler_policies_in(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let documents: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap_or_default();
    let mut out = Vec::new();
    for document in documents {
        if document["kind"] == "ConfigMap" {
            out.extend(
                document["data"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter_map(|(_, t)| serde_saphyr::from_str::<Value>(t.as_str()?).ok()),
            );
        } else if let Some(policy) = document.get("deschedulerPolicy") {
            let mut policy = policy.clone();
            policy["apiVersion"] = document["deschedulerPolicyAPIVersion"].clone();
            out.push(policy);
        } else {
            out.push(document);
        }
    }
    out
}

/// A v1alpha1 strategy's evictor settings as v1alpha2 DefaultEvictor arguments: the policy's top-level
/// switches and the strategy's `thresholdPriority`.
pub(crate) fn v1alpha1_evictor(policy: &Value, params: &Value) -> Value {
    let mut evictor = json!({});
    for key in [
        "evictLocalStoragePods",
        "evictDaemonSetPods",
        "evictSystemCriticalPods",
        "ignorePvcPods",
        "evictFailedBarePods",
    ] {
        evictor[key] = policy[key].clone();
    }
    if let Some(value) = params["thresholdPriority"].as_i64() {
        evictor["priorityThreshold"] = json!({"value": value});
    }
    evictor
}
