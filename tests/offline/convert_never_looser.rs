//! `tidal convert` is never looser than the descheduler, on the inputs where it once was: each
//! descheduler policy below keeps a pod by a rule of its sources (v0.36), and tidal's report of the
//! converted policy, on a small saved cluster built with the testkit builders, must not evict it. A
//! control pod the descheduler would evict shows that the converted policy does run.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tidal_testkit::objects::{node, pod};

use crate::{cli::tidal, support::report_json};

const HOST: &str = "kubernetes.io/hostname";

fn repels(app: &str, topology_key: &str) -> Value {
    json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": app}}, "topologyKey": topology_key
    }]}})
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn write_cluster(dir: &Path, objects: Vec<Value>) -> PathBuf {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    write(dir, "cluster.json", &serde_json::to_string(&list).unwrap())
}

/// `tidal convert` of `input`, which must succeed, saved beside it.
fn convert(dir: &Path, input: &Path) -> (PathBuf, String) {
    let output = tidal(&["convert", "-f", input.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    (write(dir, "converted.yaml", &text), text)
}

/// The pods (`namespace/name`) tidal's report of `policies` on `cluster` evicts.
fn evicted(cluster: &Path, policies: &Path) -> Vec<String> {
    let report = report_json(&[
        "-f",
        cluster.to_str().unwrap(),
        "-f",
        policies.to_str().unwrap(),
    ]);
    let mut out: Vec<String> = report["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{}/{}",
                e["namespace"].as_str().unwrap(),
                e["name"].as_str().unwrap()
            )
        })
        .collect();
    out.sort();
    out
}

/// DefaultEvictor `nodeFit: true` with PodLifeTime. x-1 repels `app=y` by hostname and the only other
/// node runs y-1: the descheduler's NodeFit (`podMatchesInterPodAntiAffinity`,
/// pkg/descheduler/node/node.go) finds no node for it, and its PreEvictionFilter keeps it.
#[test]
fn node_fit_keeps_a_pod_its_anti_affinity_keeps_off_every_other_node() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        dir.path(),
        "policy.yaml",
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: lifetime\n  \
         pluginConfig:\n  - name: DefaultEvictor\n    args: {nodeFit: true}\n  - name: PodLifeTime\n    \
         args: {maxPodLifeTimeSeconds: 3600}\n  plugins:\n    deschedule:\n      enabled: [PodLifeTime]\n",
    );
    let (converted, text) = convert(dir.path(), &policy);
    assert!(
        !text.contains("Every setting was carried over as it is"),
        "{text}"
    );
    let cluster = write_cluster(
        dir.path(),
        vec![
            node("n1").label(HOST, "n1").into_value(),
            node("n2").label(HOST, "n2").into_value(),
            pod("apps/x-1", "n1")
                .label("app", "x")
                .spec("affinity", repels("y", HOST))
                .into_value(),
            // Young: PodLifeTime leaves it where it is.
            pod("apps/y-1", "n2")
                .label("app", "y")
                .created(&jiff::Timestamp::now().to_string())
                .into_value(),
            // The control: old, no anti-affinity, n2 takes it.
            pod("apps/z-1", "n1").label("app", "z").into_value(),
        ],
    );
    assert_eq!(evicted(&cluster, &converted), ["apps/z-1"]);
}

/// RemovePodsViolatingTopologySpreadConstraint with its defaults: `topologyBalanceNodeFit` is true,
/// so the descheduler (topologyspreadconstraint.go, `balanceDomains`) evicts a pod only if NodeFit
/// finds it a node in a domain below the average. Zone b's only node runs db-1, which the web pods
/// repel: none of them goes. The api pods, spread the same way with no anti-affinity, do.
#[test]
fn topology_spread_keeps_a_pod_its_anti_affinity_keeps_out_of_the_smaller_domain() {
    let dir = tempfile::tempdir().unwrap();
    let policy = write(
        dir.path(),
        "policy.yaml",
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: spread\n  \
         pluginConfig:\n  - name: RemovePodsViolatingTopologySpreadConstraint\n    args: {}\n  \
         plugins:\n    balance:\n      enabled: [RemovePodsViolatingTopologySpreadConstraint]\n",
    );
    let (converted, _) = convert(dir.path(), &policy);
    let spread = |app: &str| {
        json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}}}])
    };
    let mut objects = vec![
        node("a1").label("zone", "a").label(HOST, "a1").into_value(),
        node("b1").label("zone", "b").label(HOST, "b1").into_value(),
        pod("apps/db-1", "b1").label("app", "db").into_value(),
    ];
    for i in 1..=3 {
        objects.push(
            pod(&format!("apps/web-{i}"), "a1")
                .label("app", "web")
                .owned_by("ReplicaSet", "web")
                .spec("topologySpreadConstraints", spread("web"))
                .spec("affinity", repels("db", HOST))
                .into_value(),
        );
        objects.push(
            pod(&format!("apps/api-{i}"), "a1")
                .label("app", "api")
                .owned_by("ReplicaSet", "api")
                .spec("topologySpreadConstraints", spread("api"))
                .into_value(),
        );
    }
    let cluster = write_cluster(dir.path(), objects);
    let plan = evicted(&cluster, &converted);
    assert!(
        !plan.iter().any(|p| p.starts_with("apps/web-")),
        "the descheduler keeps every web pod: {plan:?}"
    );
    assert!(
        plan.iter().any(|p| p.starts_with("apps/api-")),
        "the control moves: {plan:?}"
    );
}

/// The interval and total limit of the one converted policy.
fn interval_and_total(text: &str) -> (u64, u64) {
    let mut policies: Vec<Value> = serde_saphyr::from_multiple(text).unwrap();
    policies.retain(|p| !p.is_null());
    let [policy] = policies.as_slice() else {
        panic!("one policy expected: {text}")
    };
    let interval = policy["spec"]["interval"].as_str().unwrap();
    let total = policy["spec"]["limits"]["total"].as_u64().unwrap();
    (go_seconds(interval), total)
}

/// Seconds of a Go duration as tidal prints them (`1h0m0s`, `23h0m0s`, `2m0s`).
pub(crate) fn go_seconds(text: &str) -> u64 {
    let mut total = 0;
    let mut number = String::new();
    for c in text.chars() {
        match c {
            '0'..='9' => number.push(c),
            'h' | 'm' | 's' => {
                let n: u64 = number.parse().unwrap();
                total += n * match c {
                    'h' => 3600,
                    'm' => 60,
                    _ => 1,
                };
                number.clear();
            }
            other => panic!("{text}: unexpected {other}"),
        }
    }
    total
}

/// The chart's CronJob runs the descheduler on `schedule`, each run capped at
/// `maxNoOfPodsToEvictTotal`; tidal applies its limits per run too, so the converted interval must
/// be at least the schedule's longest gap for tidal never to evict more per hour (or per day).
#[test]
fn a_cron_schedule_never_becomes_more_evictions_per_hour() {
    let dir = tempfile::tempdir().unwrap();
    let values = |schedule: &str| {
        format!(
            "kind: CronJob\nschedule: \"{schedule}\"\ndeschedulerPolicy:\n  maxNoOfPodsToEvictTotal: 10\n  \
             profiles:\n  - name: lifetime\n    pluginConfig:\n    - name: PodLifeTime\n      args: \
             {{maxPodLifeTimeSeconds: 3600}}\n    plugins:\n      deschedule:\n        enabled: [PodLifeTime]\n"
        )
    };
    // Runs a day of the schedule, and the evictions a day it allows at 10 a run.
    for (schedule, runs_a_day) in [
        ("0 * * * *", 24),
        ("*/7 * * * *", 9 * 24),
        ("0 9,10 * * *", 2),
    ] {
        let input = write(dir.path(), "values.yaml", &values(schedule));
        let (_, text) = convert(dir.path(), &input);
        let (interval, total) = interval_and_total(&text);
        assert_eq!(total, 10, "{text}");
        let tidal_runs_a_day = 86_400 / interval;
        assert!(
            tidal_runs_a_day * total <= runs_a_day * 10,
            "{schedule}: tidal every {interval}s evicts up to {} a day, the descheduler {}",
            tidal_runs_a_day * total,
            runs_a_day * 10
        );
    }
    let input = write(dir.path(), "values.yaml", &values("0 * * * *"));
    let (_, text) = convert(dir.path(), &input);
    assert!(text.contains("interval: 1h0m0s"), "{text}");
    // A schedule tidal cannot read, or a shorter --interval, is refused unless allowed.
    let unreadable = write(dir.path(), "values.yaml", &values("every hour"));
    let output = tidal(&["convert", "-f", unreadable.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--allow-looser"),
        "{output:?}"
    );
    let hourly = write(dir.path(), "values.yaml", &values("0 * * * *"));
    let output = tidal(&[
        "convert",
        "-f",
        hourly.to_str().unwrap(),
        "--interval",
        "5m",
    ]);
    assert!(!output.status.success(), "{output:?}");
    let output = tidal(&[
        "convert",
        "-f",
        hourly.to_str().unwrap(),
        "--interval",
        "5m",
        "--allow-looser",
    ]);
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("LOOSER"));
}
