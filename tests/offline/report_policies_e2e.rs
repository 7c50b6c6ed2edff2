//! `tidal report` with several policies: rows say which policy decided them, and the summary counts
//! pods, not rows (with two policies the demo's four pods are `EVICTIONS (4)`, not `(8)`).

use std::{io::Write, path::Path, process::Command};

use tempfile::NamedTempFile;

#[test]
fn two_policies_on_the_demo_label_rows_and_count_each_pod_once() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo-cluster.yaml");
    let mut second = NamedTempFile::new().expect("temp file");
    second
        .write_all(
            b"apiVersion: tidal.dev/v1alpha1
kind: DeschedulingPolicy
metadata:
  name: second-look
spec:
  mode: DryRun
  strategies:
    tdm: {}
  defaults:
    cooldown: 10m
  namespaces:
    exclude: [kube-system, monitoring]
",
        )
        .expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_tidal"))
        .args(["report", "--now", "2026-11-23T09:30:00Z", "--cluster"])
        .arg(&demo)
        .arg("--cluster")
        .arg(second.path())
        .output()
        .expect("run tidal");
    assert!(output.status.success(), "{output:?}");
    let table = String::from_utf8(output.stdout).expect("utf-8");
    // Both dry-run policies plan the same four pods (a DryRun plan holds nothing back).
    assert!(table.contains("EVICTIONS (4 pods, 8 rows)"), "{table}");
    assert!(
        table.contains("4 evictions planned, 3 waiting for a later round (the first "),
        "{table}"
    );
    assert!(
        table.contains(", 4 skipped (cooldown 4) by 2 policies; 2 of 2 zones closed"),
        "{table}"
    );
    assert!(
        table.contains("WAITING FOR A LATER ROUND (3 pods, 6 rows)"),
        "{table}"
    );
    let header = table
        .lines()
        .find(|l| l.starts_with("POD") && l.contains("STRATEGY"))
        .expect("evictions header");
    let policy_column = header.find("POLICY").expect("POLICY column");
    for policy in ["revocable-zones", "second-look"] {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with("ml/hpo-sweep-trial-1")
                    && l[policy_column..].starts_with(policy)),
            "{policy}:\n{table}"
        );
    }
}
