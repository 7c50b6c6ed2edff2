//! `tidal report` end to end for the strategy catalogue: the example policies in `policies/` planned over
//! the dump in `tests/fixtures/strategies/` (and over the real API server dump), checking what each
//! strategy evicts and why the others are skipped.

use std::path::{Path, PathBuf};

use clap::Parser;
use serde_json::Value;
use tidal::cli::{self, Cli, Command};

const NOW: &str = "2026-03-02T12:00:00Z";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/strategies").join(name)
}

fn policy(name: &str) -> PathBuf {
    root().join("policies").join(format!("{name}.yaml"))
}

fn report_json(files: &[PathBuf]) -> Value {
    // Through clap, as the binary does, so that new report options keep their defaults here.
    let mut argv: Vec<std::ffi::OsString> = vec![
        "tidal".into(),
        "report".into(),
        "--now".into(),
        NOW.into(),
        "-o".into(),
        "json".into(),
    ];
    for file in files {
        argv.push("--cluster".into());
        argv.push(file.into());
    }
    let Command::Report(args) = Cli::try_parse_from(argv).unwrap().command else {
        unreachable!("parsed a report command");
    };
    let text = cli::report(&args).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `namespace/name` of a report row's pod.
fn pod_of(row: &Value) -> String {
    format!(
        "{}/{}",
        row["namespace"].as_str().unwrap(),
        row["name"].as_str().unwrap()
    )
}

/// `row(entry)` for every entry of a report section.
fn rows(report: &Value, section: &str, row: impl Fn(&Value) -> String) -> Vec<String> {
    report[section]
        .as_array()
        .unwrap()
        .iter()
        .map(row)
        .collect()
}

/// `namespace/name` of every eviction.
fn evicted(report: &Value) -> Vec<String> {
    rows(report, "evictions", pod_of)
}

/// `namespace/name gate` of every skipped candidate.
fn skipped(report: &Value) -> Vec<String> {
    rows(report, "skipped", |s| {
        format!("{} {}", pod_of(s), s["gate"].as_str().unwrap())
    })
}

fn field(report: &Value, section: &str, pod: &str, key: &str) -> String {
    report[section]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| pod_of(e) == pod)
        .and_then(|e| e[key].as_str())
        .unwrap_or_else(|| panic!("{pod} not in {section}"))
        .to_owned()
}

fn run(strategy: &str) -> Value {
    let report = report_json(&[fixture("cluster.yaml"), policy(strategy)]);
    let policies = report["policies"].as_array().unwrap();
    assert_eq!(policies.len(), 1);
    assert!(
        policies[0].get("error").is_none(),
        "{strategy}: {}",
        policies[0]
    );
    for eviction in report["evictions"].as_array().unwrap() {
        assert_eq!(eviction["strategy"], strategy);
    }
    report
}

#[test]
fn low_node_utilization_drains_busy_nodes_towards_idle_ones() {
    let report = run("lowNodeUtilization");
    // node-d1 (98% cpu) first; pods without priority first, Job pods included. They fill node-c1 to
    // its 50% target. node-a1 (73%) stays: the only room left is on node-a2, whose maintenance taint
    // its pods do not tolerate (pooling the room of every underutilized node would send them
    // towards node-c1 all the same).
    assert_eq!(
        evicted(&report),
        ["batch/spot-b", "batch/spot-c", "batch/spot-a"]
    );
    assert!(field(&report, "evictions", "batch/spot-a", "reason").contains("it fits node node-c1"));
    // The system-critical CoreDNS pod and the DaemonSet agents are never proposed; nothing is skipped.
    assert!(skipped(&report).is_empty());
    assert!(
        field(&report, "evictions", "batch/spot-b", "reason")
            .contains("node node-d1 is overutilized (cpu 98%")
    );
}

#[test]
fn low_node_utilization_on_measured_usage() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: tidal.dev/v1alpha1\nkind: DeschedulingPolicy\nmetadata: {name: lnu-metrics}\nspec:\n  mode: DryRun\n  strategies:\n    lowNodeUtilization:\n      thresholds: {cpu: 20, memory: 20}\n      targetThresholds: {cpu: 70, memory: 70}\n      usage: {source: Metrics, window: 5m}\n  defaults: {jobBudget: {maxUnavailable: 100%}}\n",
    )
    .unwrap();
    let report = report_json(&[
        fixture("cluster.yaml"),
        fixture("node-metrics.json"),
        fixture("pod-metrics.json"),
        policy,
    ]);
    // Measured, node-b1 runs at 85% and node-d1 at 88%; node-a1 (73% by requests) is at 24%. Pods
    // without a measurement are not moved (their weight is unknown): db pods and the worker are.
    let evictions = evicted(&report);
    assert!(
        evictions.contains(&"shop/worker-8d7f6-old1z".to_owned()),
        "{evictions:?}"
    );
    assert!(
        evictions.iter().all(|p| !p.starts_with("shop/web")),
        "{evictions:?}"
    );
    assert!(
        evictions.iter().all(|p| p != "batch/spot-c"),
        "spot-c has no PodMetrics: {evictions:?}"
    );
    assert!(
        field(&report, "evictions", "shop/worker-8d7f6-old1z", "reason")
            .contains("node node-b1 is overutilized (cpu 85%")
    );
}

#[test]
fn high_node_utilization_empties_the_least_used_nodes() {
    let report = run("highNodeUtilization");
    assert_eq!(
        evicted(&report),
        [
            "batch/crashy-77f9b-9zq4d",
            "shop/api-59d8f-m4k2x",
            "shop/maintenance-probe"
        ]
    );
    assert_eq!(skipped(&report), ["shop/api-59d8f-t8p1z budget"]);
}

#[test]
fn remove_duplicates_spreads_piled_up_replicas() {
    let report = run("removeDuplicates");
    assert_eq!(
        evicted(&report),
        ["shop/api-59d8f-m4k2x", "shop/db-0", "shop/web-6f7b9c-q9c3v"]
    );
    // The other web replicas wanted to go too; the job budget (none set: one per round) holds them.
    assert_eq!(skipped(&report).len(), 4);
    assert!(skipped(&report).iter().all(|s| s.ends_with(" budget")));
    assert!(
        field(&report, "evictions", "shop/web-6f7b9c-q9c3v", "reason")
            .contains("runs 5 of the 5 pods")
    );
}

#[test]
fn topology_spread_moves_the_fewest_pods() {
    let report = run("removePodsViolatingTopologySpreadConstraint");
    assert_eq!(
        evicted(&report),
        ["shop/web-6f7b9c-4xkqp", "shop/web-6f7b9c-8h2mz"]
    );
    assert_eq!(
        skipped(&report),
        [
            "shop/web-6f7b9c-b7r9t budget",
            "shop/web-6f7b9c-d2w5n budget",
            "shop/web-6f7b9c-q9c3v budget"
        ]
    );
    assert!(
        field(&report, "evictions", "shop/web-6f7b9c-8h2mz", "reason")
            .contains("domain a has 4 matching pods, domain c has 0")
    );
}

#[test]
fn anti_affinity_evicts_the_lower_priority_pod_of_a_pair() {
    let report = run("removePodsViolatingInterPodAntiAffinity");
    assert_eq!(evicted(&report), ["shop/db-1"]);
    assert!(field(&report, "evictions", "shop/db-1", "reason").contains("violated by shop/db-0"));
}

#[test]
fn node_affinity_required_and_preferred() {
    let report = run("removePodsViolatingNodeAffinity");
    assert_eq!(
        evicted(&report),
        ["shop/reports-7cc9d-hdd4k", "shop/search-55b6-zc7xw"]
    );
    assert!(
        field(&report, "evictions", "shop/search-55b6-zc7xw", "reason")
            .contains("50 on node node-c1")
    );
}

#[test]
fn node_taints_and_the_budget() {
    let report = run("removePodsViolatingNodeTaints");
    assert_eq!(evicted(&report), ["shop/api-59d8f-m4k2x"]);
    assert_eq!(skipped(&report), ["shop/api-59d8f-t8p1z budget"]);
    assert!(
        field(&report, "evictions", "shop/api-59d8f-m4k2x", "reason")
            .contains("maintenance=planned:NoSchedule")
    );
}

#[test]
fn too_many_restarts() {
    let report = run("removePodsHavingTooManyRestarts");
    assert_eq!(evicted(&report), ["batch/crashy-77f9b-9zq4d"]);
}

#[test]
fn pod_life_time_and_protections() {
    let report = run("podLifeTime");
    assert_eq!(evicted(&report), ["shop/worker-8d7f6-old1z"]);
    assert_eq!(
        skipped(&report),
        ["shop/legacy-admin protected", "shop/cache-0 protected"]
    );
    assert!(field(&report, "skipped", "shop/legacy-admin", "detail").contains("bare pod"));
    assert!(field(&report, "skipped", "shop/cache-0", "detail").contains("local storage"));
}

#[test]
fn failed_pods_except_jobs() {
    let report = run("removeFailedPods");
    assert_eq!(evicted(&report), ["batch/import-6c9b4-f2k8d"]);
}

#[test]
fn make_room_for_a_pending_pod_on_a_non_revocable_node() {
    let report = run("makeRoomForPending");
    // train-critical (1500m, pool=training) fits neither node-d1 (full of preemptable pods) nor
    // node-rz1 (revocable, never used). Evicting spot-a alone frees node-d1; the preemptable pending
    // train-spot triggers nothing.
    assert_eq!(evicted(&report), ["batch/spot-a"]);
    assert!(
        field(&report, "evictions", "batch/spot-a", "reason")
            .contains("for pending pod batch/train-critical")
    );
}

/// `policy strategy namespace/name` of every eviction.
fn evictions_by_policy(report: &Value) -> Vec<String> {
    rows(report, "evictions", |e| {
        format!(
            "{} {} {}",
            e["policy"].as_str().unwrap(),
            e["strategy"].as_str().unwrap(),
            pod_of(e)
        )
    })
}

#[test]
fn strategies_and_policies_see_the_evictions_planned_before_them() {
    let report = report_json(&[fixture("multi-policy.yaml")]);
    let web = |policy: &str, strategy: &str, replicas: std::ops::Range<u32>| {
        replicas
            .map(|i| format!("{policy} {strategy} a/web-{i}"))
            .collect::<Vec<_>>()
    };
    let mut expected = web("a-dry-lnu", "lowNodeUtilization", 0..4);
    // Not held back by the dry run; lowNodeUtilization sees n1 at 30% once the duplicates are gone.
    expected.extend(web("b-duplicates-then-lnu", "removeDuplicates", 0..6));
    // The Evict policy's evictions are in flight: n1 is no longer overutilized.
    assert_eq!(evictions_by_policy(&report), expected);
    assert!(skipped(&report).is_empty(), "{:?}", skipped(&report));
}

#[test]
fn every_example_policy_plans_on_a_real_cluster_dump() {
    let real = root().join("../shared/fixtures/real-apiserver-small.yaml");
    let real = if real.exists() {
        real
    } else {
        PathBuf::from("/work/shared/fixtures/real-apiserver-small.yaml")
    };
    if !real.exists() {
        eprintln!("real-apiserver-small.yaml not available; skipping");
        return;
    }
    let mut files = vec![real];
    files.extend(example_policies());
    let report = report_json(&files);
    let policies = report["policies"].as_array().unwrap();
    assert_eq!(policies.len(), example_policies().len());
    for policy in policies {
        assert!(policy.get("error").is_none(), "{policy}");
    }
    // The bare pod pinned onto a revocable node and the DaemonSet agents are never evicted.
    for eviction in evicted(&report) {
        assert!(!eviction.starts_with("kube-system/"), "{eviction}");
        assert_ne!(eviction, "shop/pinned-report");
    }
}

fn example_policies() -> Vec<PathBuf> {
    let strategies = [
        "lowNodeUtilization",
        "highNodeUtilization",
        "removeDuplicates",
        "removePodsViolatingTopologySpreadConstraint",
        "removePodsViolatingInterPodAntiAffinity",
        "removePodsViolatingNodeAffinity",
        "removePodsViolatingNodeTaints",
        "removePodsHavingTooManyRestarts",
        "podLifeTime",
        "removeFailedPods",
        "makeRoomForPending",
    ];
    strategies.iter().map(|s| policy(s)).collect()
}

#[test]
fn example_policies_satisfy_the_crd_rules() {
    for path in example_policies() {
        let text = std::fs::read_to_string(&path).unwrap();
        let policy: tidal::api::DeschedulingPolicy =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let violations = cel_violations(&policy);
        assert!(violations.is_empty(), "{}: {violations:?}", path.display());
    }
    // And a policy breaking a rule is caught.
    let bad: tidal::api::DeschedulingPolicy = serde_saphyr::from_str(
        "apiVersion: tidal.dev/v1alpha1\nkind: DeschedulingPolicy\nmetadata: {name: bad}\nspec:\n  mode: DryRun\n  strategies:\n    lowNodeUtilization:\n      thresholds: {cpu: 20}\n      targetThresholds: {memory: 50}\n",
    )
    .unwrap();
    assert_eq!(cel_violations(&bad).len(), 1);
}

/// Rules the policy breaks. Rules this client-side CEL cannot evaluate (the job budget's `type()`) are
/// left to the API server.
fn cel_violations(policy: &tidal::api::DeschedulingPolicy) -> Vec<String> {
    match kube::core::cel::validate_cel(policy) {
        Ok(()) => Vec::new(),
        Err(errors) => errors
            .into_vec()
            .into_iter()
            .filter(|e| e.kind != kube::core::cel::ErrorKind::UnsupportedReference)
            .map(|e| format!("{}: {}", e.field_path, e.message))
            .collect(),
    }
}

#[test]
fn the_binary_prints_decisions_and_skip_reasons() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tidal"))
        .args(["report", "--now", NOW, "--cluster"])
        .arg(fixture("cluster.yaml"))
        .arg("--cluster")
        .arg(policy("podLifeTime"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(table.contains("shop/worker-8d7f6-old1z"), "{table}");
    assert!(table.contains("protected"), "{table}");
    assert!(
        table.contains("bare pod: no owner would recreate it"),
        "{table}"
    );
}
