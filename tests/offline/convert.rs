//! `tidal convert`: a descheduler policy becomes DeschedulingPolicies that `tidal report` plans with.

use std::{path::Path, process::Command};

use serde_json::Value;

fn tidal(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tidal"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run tidal")
}

#[test]
fn the_example_descheduler_policy_converts_into_a_policy_the_report_plans_with() {
    let output = tidal(&["convert", "-f", "examples/descheduler-policy.yaml"]);
    assert!(output.status.success(), "{output:?}");
    let yaml = String::from_utf8(output.stdout).unwrap();
    assert!(
        yaml.contains("#   - nodeSelector not carried over"),
        "the notes travel with the file: {yaml}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("1 setting(s) not carried over"), "{stderr}");

    let dir = tempfile::tempdir().unwrap();
    let converted = dir.path().join("converted.yaml");
    std::fs::write(&converted, &yaml).unwrap();
    let report = tidal(&[
        "report",
        "--cluster",
        "examples/demo-cluster.yaml",
        "--cluster",
        converted.to_str().unwrap(),
        "--policy",
        "balance",
        "--now",
        "2026-11-23T09:30:00Z",
        "-o",
        "json",
    ]);
    assert!(report.status.success(), "{report:?}");
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    let policies = report["policies"].as_array().unwrap();
    assert_eq!(policies.len(), 1, "{report}");
    assert_eq!(policies[0]["name"], "balance", "{report}");
    assert_eq!(policies[0]["mode"], "DryRun", "{report}");
}

#[test]
fn a_descheduler_policy_in_the_wrong_place_says_what_to_do() {
    let output = tidal(&["convert", "-f", "examples/demo-cluster.yaml"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not a descheduler policy"), "{stderr}");
    assert!(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/descheduler-policy.yaml")
            .exists()
    );
}
