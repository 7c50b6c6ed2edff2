//! `tidal report` end to end: saved clusters in, plan out (JSON, table, markdown), through the real CLI.
//!
//! The real dump (tests/fixtures/real-apiserver-small.yaml, see the README there) with the zones of
//! tests/fixtures/real-zones.yaml: on 2026-11-22 rz1 is open 08:00-20:00 UTC and rz2 05:00-17:00 UTC; all
//! pods were scheduled at 03:40:22 and train-worker-3 has a 1h cooldown (protected until 04:40:22).
//! ml/train is a gang (PodGroup minMember 2) of four bare workers, all on rz2: its drain takes it
//! below its minimum, so its workers go together, once worker-3's cooldown lets all four go.
//! Cases the real dump cannot show use small clusters built here and written to temporary files.

use std::{
    collections::{BTreeMap, BTreeSet},
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use clap::Parser;
use serde_json::{Value, json};
use tempfile::NamedTempFile;
use tidal_testkit::objects::{self, merge, node, policy};

const BOTH_CLOSED_IN_COOLDOWN: &str = "2026-11-22T04:00:00Z";
const BOTH_CLOSED_AFTER_COOLDOWN: &str = "2026-11-22T04:50:00Z";
const ONLY_RZ1_CLOSED: &str = "2026-11-22T06:00:00Z";
const BOTH_OPEN: &str = "2026-11-22T12:00:00Z";
const ONLY_RZ2_CLOSED: &str = "2026-11-22T19:00:00Z";

const ETL: [&str; 5] = [
    "analytics/etl-7dcf699648-ffdd4",
    "analytics/etl-7dcf699648-kdrsm",
    "analytics/etl-7dcf699648-m6768",
    "analytics/etl-7dcf699648-rfkn7",
    "analytics/etl-7dcf699648-z67fj",
];
const PINNED: &str = "shop/pinned-report";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn real() -> PathBuf {
    fixture("real-apiserver-small.yaml")
}

fn real_zones() -> PathBuf {
    fixture("real-zones.yaml")
}

/// Runs `tidal report` in-process, as the CLI parses it, and returns the JSON report.
fn plan(files: &[&Path], now: &str) -> Value {
    plan_with(files, now, &[])
}

pub(crate) fn plan_with(files: &[&Path], now: &str, extra: &[&str]) -> Value {
    let mut argv: Vec<String> = vec!["tidal".into(), "report".into()];
    for file in files {
        argv.push("--cluster".into());
        argv.push(file.display().to_string());
    }
    argv.extend(["--now".into(), now.into(), "-o".into(), "json".into()]);
    argv.extend(extra.iter().map(|s| (*s).to_owned()));
    let cli = tidal::cli::Cli::try_parse_from(&argv).expect("arguments parse");
    let tidal::cli::Command::Report(args) = &cli.command else {
        panic!("not a report command");
    };
    let text = tidal::cli::report(args).unwrap_or_else(|e| panic!("report failed: {e:#}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("report is not JSON ({e}): {text}"))
}

/// Runs the binary.
fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tidal"))
        .args(args)
        .output()
        .expect("run tidal")
}

fn pod_ref(entry: &Value) -> String {
    format!(
        "{}/{}",
        entry["namespace"].as_str().unwrap_or("?"),
        entry["name"].as_str().unwrap_or("?")
    )
}

fn evicted(report: &Value) -> BTreeSet<String> {
    let list = report["evictions"].as_array().expect("evictions");
    let set: BTreeSet<String> = list.iter().map(pod_ref).collect();
    assert_eq!(set.len(), list.len(), "a pod is evicted twice: {list:#?}");
    set
}

/// Skipped pods with the gate that stopped them.
fn skipped(report: &Value) -> BTreeMap<String, String> {
    let list = report["skipped"].as_array().expect("skipped");
    let map: BTreeMap<String, String> = list
        .iter()
        .map(|s| (pod_ref(s), s["gate"].as_str().unwrap_or("?").to_owned()))
        .collect();
    assert_eq!(map.len(), list.len(), "a pod is skipped twice: {list:#?}");
    map
}

fn skip_entry<'a>(report: &'a Value, pod: &str) -> &'a Value {
    report["skipped"]
        .as_array()
        .expect("skipped")
        .iter()
        .find(|s| pod_ref(s) == pod)
        .unwrap_or_else(|| panic!("{pod} is not skipped: {report:#}"))
}

fn eviction<'a>(report: &'a Value, pod: &str) -> &'a Value {
    report["evictions"]
        .as_array()
        .expect("evictions")
        .iter()
        .find(|e| pod_ref(e) == pod)
        .unwrap_or_else(|| panic!("{pod} is not evicted: {report:#}"))
}

pub(crate) fn zone_of<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["zones"]
        .as_array()
        .expect("zones")
        .iter()
        .find(|z| z["name"] == name)
        .unwrap_or_else(|| panic!("no zone {name}"))
}

fn set(pods: &[&str]) -> BTreeSet<String> {
    pods.iter().map(|p| (*p).to_owned()).collect()
}

fn gates(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(p, g)| ((*p).to_owned(), (*g).to_owned()))
        .collect()
}

/// Every pod the report mentions, evicted or skipped.
fn mentioned(report: &Value) -> BTreeSet<String> {
    let mut all = evicted(report);
    all.extend(skipped(report).into_keys());
    all
}

// ---- building small clusters ---------------------------------------------------------------------------

const SCHEDULED: &str = "2026-11-22T03:00:00Z";

/// A bare running pod on `node`, created just before [`SCHEDULED`] and scheduled then, with `patch`
/// merged in.
fn bare_pod(namespace: &str, name: &str, node: &str, patch: Value) -> Value {
    objects::pod(&format!("{namespace}/{name}"), node)
        .bare()
        .scheduled_at(SCHEDULED)
        .patch(json!({"metadata": {"creationTimestamp": "2026-11-22T02:59:58Z"}}))
        .patch(patch)
        .into()
}

/// `pod` owned by ReplicaSet `owner`.
fn replica(namespace: &str, name: &str, node: &str, owner: &str, patch: Value) -> Value {
    let mut p = bare_pod(
        namespace,
        name,
        node,
        json!({"metadata": {"ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
            "uid": format!("uid-rs-{owner}"), "controller": true, "blockOwnerDeletion": true,
        }]}}),
    );
    merge(&mut p, patch);
    p
}

fn preemptable() -> Value {
    json!({"metadata": {"annotations": {"volcano.sh/preemptable": "true"}}})
}

fn annotated(pairs: &[(&str, &str)]) -> Value {
    let map: serde_json::Map<String, Value> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v)))
        .collect();
    json!({"metadata": {"annotations": map}})
}

fn revocable_zone(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone", "metadata": {"name": name}, "spec": spec})
}

/// The objects as a JSON `List` in a temporary file (so the JSON path of the loader is exercised too).
fn cluster(objects: Vec<Value>) -> NamedTempFile {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    text_file(&serde_json::to_string_pretty(&list).expect("json"))
}

fn text_file(text: &str) -> NamedTempFile {
    let mut file = tempfile::Builder::new()
        .suffix(".yaml")
        .tempfile()
        .expect("tempfile");
    file.write_all(text.as_bytes()).expect("write");
    file
}

/// The real dump's zones with other specs, and one policy.
fn real_with(rz1: Value, rz2: Value, policy_patch: Value) -> NamedTempFile {
    cluster(vec![
        revocable_zone("rz1", rz1),
        revocable_zone("rz2", rz2),
        policy(policy_patch).named("tdm").into(),
    ])
}

fn utc(window: &str) -> Value {
    json!({"windows": [{"time": window}], "timeZone": "UTC"})
}

// ---- the real dump -------------------------------------------------------------------------------------

#[test]
fn real_dump_both_zones_closed_inside_cooldown() {
    let report = plan(&[&real(), &real_zones()], BOTH_CLOSED_IN_COOLDOWN);
    assert_eq!(report["now"], BOTH_CLOSED_IN_COOLDOWN);
    // 40% of 5 rounds up to 2; within the job equal priority and age fall back to name order.
    // The train gang goes whole or not at all, and worker-3 is protected by its own cooldown.
    assert_eq!(evicted(&report), set(&[ETL[0], ETL[1]]));
    assert_eq!(
        skipped(&report),
        gates(&[
            (PINNED, "protected"),
            (ETL[2], "budget"),
            (ETL[3], "budget"),
            (ETL[4], "budget"),
            ("ml/train-worker-0", "cooldown"),
            ("ml/train-worker-1", "cooldown"),
            ("ml/train-worker-2", "cooldown"),
            ("ml/train-worker-3", "cooldown"),
        ])
    );
    let cooldown = skip_entry(&report, "ml/train-worker-3");
    let detail = cooldown["detail"].as_str().expect("detail");
    assert!(
        detail.contains("1h") && detail.contains("2026-11-22T04:40:22Z"),
        "{detail}"
    );
    let budget = skip_entry(&report, ETL[2])["detail"]
        .as_str()
        .expect("detail");
    assert!(
        budget.contains("maxUnavailable 40%") && budget.contains("5 pods"),
        "{budget}"
    );
    let waits = skip_entry(&report, "ml/train-worker-2")["detail"]
        .as_str()
        .expect("detail");
    assert!(
        waits.contains("gang of 4 (minMember 2) goes whole or not at all")
            && waits.contains("ml/train-worker-3 is held"),
        "{waits}"
    );

    for z in ["rz1", "rz2"] {
        assert_eq!(zone_of(&report, z)["open"], false, "{z}");
    }
    assert_eq!(
        zone_of(&report, "rz1")["nextChange"],
        "2026-11-22T08:00:00Z"
    );
    assert_eq!(
        zone_of(&report, "rz2")["nextChange"],
        "2026-11-22T05:00:00Z"
    );
    let etl = eviction(&report, ETL[0]);
    assert_eq!(etl["node"], "node-rz1-1");
    assert_eq!(etl["strategy"], "tdm");
    assert!(
        etl["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("zone rz1 closed")),
        "{etl}"
    );
}

#[test]
fn real_dump_past_worker_3_s_cooldown_the_train_gang_goes_whole() {
    let report = plan(&[&real(), &real_zones()], BOTH_CLOSED_AFTER_COOLDOWN);
    // minAvailable 2 would let two go and hold the other two for good; the gang is lost at the
    // third anyway, so all four go at once.
    let ml: BTreeSet<String> = evicted(&report)
        .into_iter()
        .filter(|p| p.starts_with("ml/"))
        .collect();
    assert_eq!(ml, set(&TRAIN));
    assert!(
        eviction(&report, "ml/train-worker-3")["reason"]
            .as_str()
            .is_some_and(|r| r.ends_with("; gang of 4 (minMember 2), taken whole")),
        "{report:#}"
    );
    // `tidal explain` says so of each worker; before worker-3's cooldown is over, what holds them.
    let explain = |now: &str| {
        let real = real();
        let zones = real_zones();
        let output = run(&[
            "explain",
            "pod",
            "ml/train-worker-0",
            "--cluster",
            real.to_str().expect("utf-8 path"),
            "--cluster",
            zones.to_str().expect("utf-8 path"),
            "--now",
            now,
        ]);
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).expect("utf-8")
    };
    let words = |text: String| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let goes = words(explain(BOTH_CLOSED_AFTER_COOLDOWN));
    assert!(
        goes.contains(
            "for tdm: zone rz2 closed; opens Sun 05:00; gang of 4 (minMember 2), taken whole."
        ),
        "{goes}"
    );
    let waits = words(explain(BOTH_CLOSED_IN_COOLDOWN));
    assert!(
        waits.contains(
            "gate cooldown stops it: its gang of 4 (minMember 2) goes whole or not at all, and \
             ml/train-worker-3 is held"
        ),
        "{waits}"
    );
}

const TRAIN: [&str; 4] = [
    "ml/train-worker-0",
    "ml/train-worker-1",
    "ml/train-worker-2",
    "ml/train-worker-3",
];

#[test]
fn real_dump_daemonset_pods_are_never_proposed() {
    let everyone_preemptable = real_with(
        utc("08:00-20:00"),
        utc("08:00-20:00"),
        json!({"defaults": {"preemptable": true}}),
    );
    for (files, now) in [
        (
            vec![real(), real_zones()],
            BOTH_CLOSED_IN_COOLDOWN.to_owned(),
        ),
        (
            vec![real(), everyone_preemptable.path().to_owned()],
            BOTH_CLOSED_AFTER_COOLDOWN.to_owned(),
        ),
    ] {
        let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
        let report = plan(&paths, &now);
        let daemons: Vec<String> = mentioned(&report)
            .into_iter()
            .filter(|p| p.starts_with("kube-system/"))
            .collect();
        assert!(daemons.is_empty(), "DaemonSet pods proposed: {daemons:?}");
        assert!(
            !mentioned(&report)
                .iter()
                .any(|p| p.starts_with("shop/web-")),
            "shop/web runs on normal nodes only"
        );
    }
}

#[test]
fn real_dump_pinned_pod_is_a_placement_violation_whatever_the_time() {
    // A placement violation did not opt into preemption, so it keeps every protection: the pinned pod
    // is bare (nothing would recreate it) and stays until the policy allows evicting bare pods.
    let violation = "placement violation: not preemptable, on a node of revocable zone rz1";
    let bare_pods_allowed = real_with(
        utc("08:00-20:00"),
        json!({"windows": [{"time": "06:00-18:00"}], "timeZone": "Europe/Berlin"}),
        json!({"protections": {"barePods": false}}),
    );
    for now in [BOTH_CLOSED_IN_COOLDOWN, BOTH_OPEN] {
        let report = plan(&[&real(), &real_zones()], now);
        let kept = skip_entry(&report, PINNED);
        assert_eq!(kept["gate"], "protected", "at {now}");
        assert_eq!(kept["reason"], violation, "at {now}");
        assert!(
            kept["detail"].as_str().is_some_and(|d| d.contains("bare")),
            "{kept}"
        );

        let report = plan(&[&real(), bare_pods_allowed.path()], now);
        let pinned = eviction(&report, PINNED);
        assert_eq!(pinned["node"], "node-rz1-2");
        assert_eq!(pinned["reason"], violation, "at {now}");
    }
}

#[test]
fn placement_violations_keep_protections_that_opted_in_pods_waive() {
    // On a closed zone's node: a system-critical pod that never opted in, and a bare preemptable pod
    // with an emptyDir. The first is a violation and keeps its protection; the second opted in, so only
    // the never-evict rules hold for it.
    let objects = vec![
        node("rev-1").zone("z").into(),
        replica(
            "kube-system",
            "coredns-abc",
            "rev-1",
            "coredns",
            json!({"spec": {"priorityClassName": "system-cluster-critical", "priority": 2000000000}}),
        ),
        bare_pod(
            "batch",
            "scratch",
            "rev-1",
            json!({"metadata": {"labels": {"volcano.sh/preemptable": "true"}},
                   "spec": {"volumes": [{"name": "tmp", "emptyDir": {}}]}}),
        ),
        revocable_zone("z", utc("08:00-09:00")),
        policy(json!({})).named("tdm").into(),
    ];
    let report = plan(&[cluster(objects).path()], "2026-11-22T12:00:00Z");
    assert_eq!(evicted(&report), set(&["batch/scratch"]));
    let kept = skip_entry(&report, "kube-system/coredns-abc");
    assert_eq!(kept["gate"], "protected");
    assert!(
        kept["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("placement violation")),
        "{kept}"
    );
}

#[test]
fn a_policy_wide_preemptable_default_does_not_waive_protections() {
    let objects = vec![
        node("rev-1").zone("z").into(),
        replica(
            "batch",
            "scratch",
            "rev-1",
            "scratch",
            json!({"spec": {"volumes": [{"name": "tmp", "emptyDir": {}}]}}),
        ),
        revocable_zone("z", utc("08:00-09:00")),
        policy(json!({"defaults": {"preemptable": true}}))
            .named("tdm")
            .into(),
    ];
    let report = plan(&[cluster(objects).path()], "2026-11-22T12:00:00Z");
    let kept = skip_entry(&report, "batch/scratch");
    assert_eq!(kept["gate"], "protected", "{kept}");
    assert!(
        kept["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("zone z closed")),
        "a TDM victim by the policy's default, not a violation: {kept}"
    );
}

#[test]
fn real_dump_both_zones_open() {
    let report = plan(&[&real(), &real_zones()], BOTH_OPEN);
    assert!(evicted(&report).is_empty(), "{report:#}");
    assert_eq!(skipped(&report), gates(&[(PINNED, "protected")]));
    for z in ["rz1", "rz2"] {
        assert_eq!(zone_of(&report, z)["open"], true, "{z}");
    }
    assert_eq!(
        zone_of(&report, "rz1")["nextChange"],
        "2026-11-22T20:00:01Z"
    );
    assert_eq!(
        zone_of(&report, "rz2")["nextChange"],
        "2026-11-22T17:00:01Z"
    );
}

#[test]
fn zones_are_independent() {
    let report = plan(&[&real(), &real_zones()], ONLY_RZ1_CLOSED);
    assert_eq!(zone_of(&report, "rz1")["open"], false);
    assert_eq!(zone_of(&report, "rz2")["open"], true);
    assert_eq!(evicted(&report), set(&[ETL[0], ETL[1]]));
    assert!(
        !mentioned(&report).iter().any(|p| p.starts_with("ml/")),
        "rz2 is open: {report:#}"
    );

    let report = plan(&[&real(), &real_zones()], ONLY_RZ2_CLOSED);
    assert_eq!(zone_of(&report, "rz1")["open"], true);
    assert_eq!(zone_of(&report, "rz2")["open"], false);
    assert_eq!(evicted(&report), set(&TRAIN));
    assert!(
        !mentioned(&report)
            .iter()
            .any(|p| p.starts_with("analytics/")),
        "rz1 is open: {report:#}"
    );
}

#[test]
fn cross_midnight_window_is_open_at_night() {
    let zones = real_with(utc("22:00-06:00"), utc("22:00-06:00"), json!({}));
    let report = plan(&[&real(), zones.path()], "2026-11-22T03:00:00Z");
    assert_eq!(zone_of(&report, "rz1")["open"], true);
    assert_eq!(
        zone_of(&report, "rz1")["nextChange"],
        "2026-11-22T06:00:01Z"
    );
    assert!(
        evicted(&report).is_empty(),
        "open at 03:00: no TDM evictions: {report:#}"
    );
    assert_eq!(skipped(&report), gates(&[(PINNED, "protected")]));

    let report = plan(&[&real(), zones.path()], "2026-11-22T07:00:00Z");
    assert_eq!(zone_of(&report, "rz1")["open"], false);
    assert_eq!(
        zone_of(&report, "rz1")["nextChange"],
        "2026-11-22T22:00:00Z"
    );
    assert!(evicted(&report).contains(ETL[0]));
}

#[test]
fn zones_show_the_time_zone_tidal_uses() {
    let zones = real_with(
        json!({"windows": [{"time": "08:00-20:00"}], "timeZone": "europe/berlin"}),
        utc("08:00-20:00"),
        json!({}),
    );
    let report = plan(&[&real(), zones.path()], BOTH_OPEN);
    assert_eq!(zone_of(&report, "rz1")["timeZone"], "Europe/Berlin");
}

#[test]
fn drain_before_evicts_ahead_of_the_close() {
    let zones = real_with(
        json!({"windows": [{"time": "00:00-05:00"}], "drainBefore": "30m"}),
        utc("00:00-00:00"),
        json!({}),
    );
    let draining = plan(&[&real(), zones.path()], "2026-11-22T04:45:00Z");
    let rz1 = zone_of(&draining, "rz1");
    assert_eq!(
        (&rz1["open"], &rz1["draining"]),
        (&json!(true), &json!(true))
    );
    assert_eq!(evicted(&draining), set(&[ETL[0], ETL[1]]));
    let reason = eviction(&draining, ETL[0])["reason"]
        .as_str()
        .expect("reason");
    assert!(reason.contains("draining"), "{reason}");

    let before = plan(&[&real(), zones.path()], "2026-11-22T04:15:00Z");
    assert_eq!(zone_of(&before, "rz1")["draining"], false);
    assert!(evicted(&before).is_empty(), "{before:#}");
}

#[test]
fn evict_period_is_per_zone() {
    // rz1 had a round 30s ago (evictPeriod 1m); rz2's last round was hours ago.
    let zones = cluster(vec![
        json!({
            "apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone", "metadata": {"name": "rz1"},
            "spec": {"windows": [{"time": "08:00-20:00"}], "evictPeriod": "1m"},
            "status": {"lastEvictionRound": "2026-11-22T04:49:30Z"},
        }),
        json!({
            "apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone", "metadata": {"name": "rz2"},
            "spec": {"windows": [{"time": "08:00-20:00"}], "evictPeriod": "1m"},
            "status": {"lastEvictionRound": "2026-11-22T01:00:00Z"},
        }),
        policy(json!({})).named("tdm").into(),
    ]);
    let report = plan(&[&real(), zones.path()], BOTH_CLOSED_AFTER_COOLDOWN);
    assert_eq!(zone_of(&report, "rz1")["nextRound"], "2026-11-22T04:50:30Z");
    assert!(zone_of(&report, "rz2").get("nextRound").is_none());
    assert!(
        !mentioned(&report)
            .iter()
            .any(|p| p.starts_with("analytics/")),
        "rz1's round is not due: {report:#}"
    );
    assert_eq!(
        evicted(&report)
            .into_iter()
            .filter(|p| p.starts_with("ml/"))
            .collect::<BTreeSet<_>>(),
        set(&TRAIN)
    );

    let later = plan(&[&real(), zones.path()], "2026-11-22T04:50:30Z");
    assert!(zone_of(&later, "rz1").get("nextRound").is_none());
    assert!(evicted(&later).contains(ETL[0]), "due again at 04:50:30");
}

// ---- policy settings -----------------------------------------------------------------------------------

#[test]
fn preemptable_default_flips_the_opt_in() {
    let zones = real_with(
        utc("08:00-20:00"),
        utc("08:00-20:00"),
        json!({"defaults": {"preemptable": true}}),
    );
    let closed = plan(&[&real(), zones.path()], BOTH_CLOSED_IN_COOLDOWN);
    let pinned = skip_entry(&closed, PINNED);
    assert!(
        pinned["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("zone rz1 closed")),
        "preemptable by default, the pinned pod is an ordinary TDM victim: {pinned}"
    );
    assert_eq!(
        pinned["gate"], "protected",
        "a policy default is not the owner's opt-in: the bare pod keeps its protection"
    );
    let open = plan(&[&real(), zones.path()], BOTH_OPEN);
    assert!(
        evicted(&open).is_empty() && skipped(&open).is_empty(),
        "no violation when everything is preemptable: {open:#}"
    );
}

#[test]
fn default_cooldown_applies_unless_the_pod_sets_its_own() {
    let zones = real_with(
        utc("08:00-20:00"),
        utc("08:00-20:00"),
        json!({"defaults": {"cooldown": "2h"}}),
    );
    let report = plan(&[&real(), zones.path()], BOTH_CLOSED_AFTER_COOLDOWN);
    // Everyone was scheduled 70 minutes ago: the 2h default protects all but train-worker-3, whose own 1h
    // cooldown has passed; it waits with its gang.
    assert_eq!(evicted(&report), set(&[]));
    let skips = skipped(&report);
    for pod in ETL.iter().copied().chain(TRAIN) {
        assert_eq!(
            skips.get(pod).map(String::as_str),
            Some("cooldown"),
            "{pod}"
        );
    }
    // Protections come before cooldown: the bare pinned pod is reported as protected.
    assert_eq!(skips[PINNED], "protected");
    let detail = skip_entry(&report, ETL[0])["detail"]
        .as_str()
        .expect("detail");
    assert!(detail.contains("2h0m0s"), "{detail}");
}

/// A revocable node running a Deployment of 4 preemptable pods without any budget annotation.
fn no_budget_cluster(policy_patch: Value) -> NamedTempFile {
    let mut objects = vec![
        node("rev-1").zone("z").into(),
        revocable_zone("z", utc("08:00-20:00")),
        policy(policy_patch).named("p").into(),
    ];
    for i in 0..4 {
        objects.push(replica(
            "batch",
            &format!("job-{i}"),
            "rev-1",
            "job-rs",
            preemptable(),
        ));
    }
    cluster(objects)
}

#[test]
fn a_job_without_budget_loses_one_pod_at_a_time() {
    // job-0 is already terminating (evicted last round, still shutting down): nothing more goes until it
    // is gone, whatever the zone's evictPeriod.
    let mut objects = vec![
        node("rev-1").zone("z").into(),
        revocable_zone("z", utc("08:00-20:00")),
        policy(json!({})).named("p").into(),
    ];
    for i in 0..3 {
        let mut pod = replica(
            "batch",
            &format!("job-{i}"),
            "rev-1",
            "job-rs",
            preemptable(),
        );
        if i == 0 {
            merge(
                &mut pod,
                json!({"metadata": {"deletionTimestamp": "2026-11-22T03:59:50Z"}}),
            );
        }
        objects.push(pod);
    }
    let report = plan(&[cluster(objects).path()], BOTH_CLOSED_IN_COOLDOWN);
    assert!(evicted(&report).is_empty(), "{report:#}");
    assert_eq!(
        skipped(&report),
        gates(&[("batch/job-1", "budget"), ("batch/job-2", "budget")])
    );
}

#[test]
fn default_job_budget_applies_to_jobs_without_one() {
    let without = no_budget_cluster(json!({}));
    let report1 = plan(&[without.path()], BOTH_CLOSED_IN_COOLDOWN);
    assert_eq!(evicted(&report1), set(&["batch/job-0"]));
    assert!(
        skip_entry(&report1, "batch/job-1")["detail"]
            .as_str()
            .is_some_and(|d| d.contains("no budget (one at a time)")),
        "{report1:#}"
    );

    let with_default =
        no_budget_cluster(json!({"defaults": {"jobBudget": {"maxUnavailable": "50%"}}}));
    let report2 = plan(&[with_default.path()], BOTH_CLOSED_IN_COOLDOWN);
    assert_eq!(evicted(&report2), set(&["batch/job-0", "batch/job-1"]));
    assert_eq!(
        skipped(&report2),
        gates(&[("batch/job-2", "budget"), ("batch/job-3", "budget")])
    );

    // The pods' own annotation beats the policy default.
    let mut objects = vec![
        node("rev-1").zone("z").into(),
        revocable_zone("z", utc("08:00-20:00")),
        policy(json!({"defaults": {"jobBudget": {"maxUnavailable": "50%"}}}))
            .named("p")
            .into(),
    ];
    for i in 0..4 {
        let mut p = replica(
            "batch",
            &format!("job-{i}"),
            "rev-1",
            "job-rs",
            preemptable(),
        );
        merge(
            &mut p,
            annotated(&[("volcano.sh/job-disruption-budget-min-available", "3")]),
        );
        objects.push(p);
    }
    let own = cluster(objects);
    let report3 = plan(&[own.path()], BOTH_CLOSED_IN_COOLDOWN);
    assert_eq!(evicted(&report3), set(&["batch/job-0"]));
}

#[test]
fn namespaces_include_and_exclude() {
    let exclude = real_with(
        utc("08:00-20:00"),
        utc("08:00-20:00"),
        json!({"namespaces": {"exclude": ["analytics"]}}),
    );
    let report1 = plan(&[&real(), exclude.path()], BOTH_CLOSED_IN_COOLDOWN);
    assert!(
        !mentioned(&report1)
            .iter()
            .any(|p| p.starts_with("analytics/")),
        "{report1:#}"
    );
    // The train gang waits whole for worker-3's cooldown.
    assert_eq!(evicted(&report1), set(&[]));

    let include = real_with(
        utc("08:00-20:00"),
        utc("08:00-20:00"),
        json!({"namespaces": {"include": ["ml"]}}),
    );
    let report2 = plan(&[&real(), include.path()], BOTH_CLOSED_IN_COOLDOWN);
    assert!(
        mentioned(&report2).iter().all(|p| p.starts_with("ml/")),
        "{report2:#}"
    );
    assert_eq!(evicted(&report2), set(&[]));
    assert_eq!(skipped(&report2).len(), 4, "{report2:#}");
}

#[test]
fn limits_cap_the_cycle_without_using_up_budgets() {
    let total = real_with(
        utc("08:00-20:00"),
        utc("08:00-20:00"),
        // The pinned bare pod takes part, so that it can be the one a limit stops.
        json!({"limits": {"total": 3}, "protections": {"barePods": false}}),
    );
    let report1 = plan(&[&real(), total.path()], BOTH_CLOSED_IN_COOLDOWN);
    // Zones in name order, jobs in order within a zone: rz1's two etl pods and the pinned pod fill the cap.
    assert_eq!(evicted(&report1), set(&[ETL[0], ETL[1], PINNED]));
    let skips = skipped(&report1);
    for pod in ["ml/train-worker-0", "ml/train-worker-1"] {
        assert_eq!(skips[pod], "limit", "{pod}");
    }
    // The limit refused workers 0 and 1 after the budget let them through; had the budget counted them,
    // worker-2 would be refused by `budget`, not `limit`.
    assert_eq!(skips["ml/train-worker-2"], "limit");
    assert_eq!(skips["ml/train-worker-3"], "cooldown");
    assert!(
        skip_entry(&report1, "ml/train-worker-0")["detail"]
            .as_str()
            .is_some_and(|d| d.contains("total limit 3")),
        "{report1:#}"
    );

    let per_node = real_with(
        utc("08:00-20:00"),
        utc("08:00-20:00"),
        json!({"limits": {"perNode": 1}, "protections": {"barePods": false}}),
    );
    let report2 = plan(&[&real(), per_node.path()], BOTH_CLOSED_IN_COOLDOWN);
    // ffdd4 is on node-rz1-1, kdrsm on node-rz1-2, worker-0 on node-rz2-1: one each.
    assert_eq!(
        evicted(&report2),
        set(&[ETL[0], ETL[1], "ml/train-worker-0"])
    );
    let pinned = skip_entry(&report2, PINNED);
    assert_eq!(pinned["gate"], "limit");
    assert!(
        pinned["detail"]
            .as_str()
            .is_some_and(|d| d.contains("perNode limit 1 reached on node-rz1-2")),
        "{pinned}"
    );

    let per_namespace = real_with(
        utc("08:00-20:00"),
        utc("08:00-20:00"),
        json!({"limits": {"perNamespace": 1}, "protections": {"barePods": false}}),
    );
    let report3 = plan(&[&real(), per_namespace.path()], BOTH_CLOSED_IN_COOLDOWN);
    assert_eq!(
        evicted(&report3),
        set(&[ETL[0], PINNED, "ml/train-worker-0"])
    );
    assert_eq!(skip_entry(&report3, ETL[1])["gate"], "limit");
}

#[test]
fn placement_violations_can_be_held() {
    let zones = real_with(
        utc("08:00-20:00"),
        utc("08:00-20:00"),
        json!({"strategies": {"tdm": {"evictPlacementViolations": false}}}),
    );
    for now in [BOTH_CLOSED_IN_COOLDOWN, BOTH_OPEN] {
        let report = plan(&[&real(), zones.path()], now);
        assert!(!evicted(&report).contains(PINNED), "at {now}");
        let held = skip_entry(&report, PINNED);
        assert_eq!(held["gate"], "policy", "at {now}");
        assert_eq!(held["detail"], "evictPlacementViolations is off");
        assert!(
            held["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("placement violation")),
            "{held}"
        );
    }
}

#[test]
fn several_policies_never_evict_a_pod_twice_or_overrun_a_budget() {
    let zones = cluster(vec![
        revocable_zone("rz1", utc("08:00-20:00")),
        revocable_zone("rz2", utc("08:00-20:00")),
        // Only an Evict policy's plan holds pods back from the policies after it: a dry run evicts
        // nothing.
        policy(json!({"mode": "Evict"})).named("a-first").into(),
        policy(json!({"mode": "Evict"})).named("b-second").into(),
    ]);
    let report = plan(&[&real(), zones.path()], BOTH_CLOSED_IN_COOLDOWN);
    // `evicted` also asserts that no pod appears twice.
    assert_eq!(evicted(&report), set(&[ETL[0], ETL[1]]));
    for eviction in report["evictions"].as_array().expect("evictions") {
        assert_eq!(
            eviction["policy"], "a-first",
            "the second policy sees the first one's evictions as in flight: {eviction}"
        );
    }
    let second: Vec<&Value> = report["skipped"]
        .as_array()
        .expect("skipped")
        .iter()
        .filter(|s| s["policy"] == "b-second")
        .collect();
    assert!(!second.is_empty());
    for skip in second {
        assert!(
            skip["gate"] == "budget"
                || skip["gate"] == "cooldown"
                || (skip["gate"] == "protected" && pod_ref(skip) == PINNED),
            "{skip}"
        );
        if skip["gate"] == "budget" && pod_ref(skip).starts_with("analytics/") {
            assert!(
                skip["detail"]
                    .as_str()
                    .is_some_and(|d| d.contains("2 unavailable")),
                "planned evictions count as unavailable: {skip}"
            );
        }
    }
    let policies = report["policies"].as_array().expect("policies");
    assert_eq!(policies.len(), 2);
    assert_eq!(policies[1]["name"], "b-second");
    assert_eq!(policies[1]["mode"], "Evict");
    assert_eq!(policies[1]["evictions"], 0);
}

#[test]
fn policy_flag_plans_only_the_named_policies() {
    let zones = cluster(vec![
        revocable_zone("rz1", utc("08:00-20:00")),
        revocable_zone("rz2", utc("08:00-20:00")),
        policy(json!({})).named("a-first").into(),
        policy(json!({"namespaces": {"include": ["ml"]}}))
            .named("b-second")
            .into(),
    ]);
    let report = plan_with(
        &[&real(), zones.path()],
        BOTH_CLOSED_IN_COOLDOWN,
        &["--policy", "b-second"],
    );
    let names: Vec<&Value> = report["policies"]
        .as_array()
        .expect("policies")
        .iter()
        .map(|p| &p["name"])
        .collect();
    assert_eq!(names, [&json!("b-second")]);
    assert_eq!(evicted(&report), set(&[]));
    assert_eq!(skipped(&report).len(), 4, "{report:#}");

    let path = zones.path().to_str().expect("utf-8 path");
    assert_fails(
        &["report", "--cluster", path, "--policy", "nope"],
        &["nope"],
    );
}

// ---- output formats ------------------------------------------------------------------------------------

#[test]
fn json_has_the_documented_shape() {
    let report = plan(&[&real(), &real_zones()], BOTH_CLOSED_IN_COOLDOWN);
    let keys = |v: &Value| -> BTreeSet<String> {
        v.as_object().expect("object").keys().cloned().collect()
    };
    for key in ["now", "zones", "evictions", "skipped"] {
        assert!(report.get(key).is_some(), "missing {key}");
    }
    assert!(report["now"].is_string());
    for zone in report["zones"].as_array().expect("zones") {
        assert!(
            keys(zone).is_superset(&set(&["name", "open", "nextChange"])),
            "{zone}"
        );
        assert!(
            zone["name"].is_string() && zone["open"].is_boolean() && zone["nextChange"].is_string()
        );
    }
    let evictions = report["evictions"].as_array().expect("evictions");
    assert!(!evictions.is_empty());
    for e in evictions {
        assert!(
            keys(e).is_superset(&set(&["namespace", "name", "node", "strategy", "reason"])),
            "{e}"
        );
        for key in ["namespace", "name", "node", "strategy", "reason"] {
            assert!(e[key].is_string(), "{key} in {e}");
        }
    }
    let skipped = report["skipped"].as_array().expect("skipped");
    assert!(!skipped.is_empty());
    for s in skipped {
        assert!(
            keys(s).is_superset(&set(&["namespace", "name", "strategy", "gate", "detail"])),
            "{s}"
        );
        for key in ["namespace", "name", "strategy", "gate", "detail"] {
            assert!(s[key].is_string(), "{key} in {s}");
        }
    }
}

#[test]
fn binary_prints_json_table_and_markdown() {
    let real = real();
    let zones = real_zones();
    let base = [
        "report",
        "--cluster",
        real.to_str().expect("utf-8 path"),
        "--cluster",
        zones.to_str().expect("utf-8 path"),
        "--now",
        BOTH_CLOSED_IN_COOLDOWN,
    ];
    let run_with = |format: &str| -> String {
        let mut args = base.to_vec();
        args.extend(["-o", format]);
        let output = run(&args);
        assert!(output.status.success(), "{format}: {output:?}");
        String::from_utf8(output.stdout).expect("utf-8")
    };

    let json: Value = serde_json::from_str(&run_with("json")).expect("json");
    assert_eq!(json["evictions"].as_array().map(Vec::len), Some(2));

    let table = run_with("table");
    for expected in [
        "tidal report at 2026-11-22T04:00:00Z, times in UTC\n",
        "policy tdm (DryRun)",
        "ZONES",
        "EVICTIONS (2)",
        "WAITING FOR A LATER ROUND (3)",
        "SKIPPED (5)",
        "analytics/etl-7dcf699648-ffdd4",
        "bare pod: no owner would recreate it",
        "protected for 40m 22s more (until Sun 04:40:22)",
        "2 evictions planned, 3 waiting for a later round (the first ",
        "), 5 skipped (cooldown 4, protected 1); 2 of 2 zones closed, 2 at risk",
        "1 gang taken whole, each in one round: PodGroup ml/train (gang of 4 (minMember 2))",
    ] {
        assert!(
            table.contains(expected),
            "table lacks {expected:?}:\n{table}"
        );
    }
    // kubectl style: the header row of each section is aligned with its rows.
    let header = table
        .lines()
        .find(|l| l.starts_with("POD") && l.contains("GATE"))
        .expect("skipped header");
    let row = table
        .lines()
        .find(|l| l.starts_with("ml/train-worker-3"))
        .expect("cooldown row");
    assert_eq!(
        header.find("GATE"),
        row.find("cooldown"),
        "\n{header}\n{row}"
    );
    assert!(
        table.trim_end().ends_with("2 of 2 zones closed, 2 at risk"),
        "summary last"
    );

    let markdown = run_with("markdown");
    for expected in [
        "# tidal report at 2026-11-22T04:00:00Z, times in UTC\n",
        "## Zones",
        "## Evictions (2)",
        "## Waiting for a later round (3)",
        "## Skipped (5)",
        "| `analytics/etl-7dcf699648-ffdd4` |",
        "| cooldown |",
        "| protected |",
        "**2 evictions planned, 3 waiting for a later round (the first ",
        "), 5 skipped (cooldown 4, protected 1); 2 of 2 zones closed, 2 at risk**",
    ] {
        assert!(
            markdown.contains(expected),
            "markdown lacks {expected:?}:\n{markdown}"
        );
    }
}

#[test]
fn without_a_policy_the_builtin_dry_run_tdm_policy_is_used() {
    let zones_only = cluster(vec![
        revocable_zone("rz1", utc("08:00-20:00")),
        revocable_zone("rz2", utc("08:00-20:00")),
    ]);
    let report = plan(&[&real(), zones_only.path()], BOTH_CLOSED_IN_COOLDOWN);
    assert_eq!(report["policies"][0]["name"], "builtin-tdm");
    assert_eq!(report["policies"][0]["mode"], "DryRun");
    assert!(evicted(&report).contains(ETL[0]));
    assert!(
        report["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .any(|w| w
                .as_str()
                .is_some_and(|w| w.contains("no DeschedulingPolicy"))),
        "{report:#}"
    );
}

// ---- bad input -----------------------------------------------------------------------------------------

/// A closed zone with one node and `pods`, under a policy with `policy_patch`.
fn closed_zone_with(pods: Vec<Value>, extra: Vec<Value>) -> NamedTempFile {
    let mut objects = vec![
        node("rev-1").zone("z").into(),
        revocable_zone("z", utc("08:00-20:00")),
        policy(json!({})).named("p").into(),
    ];
    objects.extend(pods);
    objects.extend(extra);
    cluster(objects)
}

fn assert_invalid(report: &Value, pod: &str, key: &str, value: &str) {
    assert!(!evicted(report).contains(pod), "{pod} evicted: {report:#}");
    let skip = skip_entry(report, pod);
    assert_eq!(skip["gate"], "invalid", "{skip}");
    let detail = skip["detail"].as_str().expect("detail");
    assert!(
        detail.contains(key) && detail.contains(&format!("{value:?}")),
        "{pod}: detail should name {key} and {value:?}: {detail}"
    );
}

#[test]
fn malformed_pod_annotations_are_invalid_and_never_evicted() {
    let mut pods = Vec::new();
    // Three bare pods (jobs of one, so budgets do not interfere), each with one bad value.
    for (name, key, value) in [
        ("bad-preemptable", "volcano.sh/preemptable", "yes"),
        ("bad-cooldown", "volcano.sh/cooldown-time", "5 minutes"),
        ("bad-budget", "volcano.sh/jdb-max-unavailable", "lots"),
        (
            "bad-long-budget",
            "volcano.sh/job-disruption-budget-min-available",
            "-1",
        ),
    ] {
        let mut p = bare_pod("batch", name, "rev-1", preemptable());
        merge(&mut p, annotated(&[(key, value)]));
        pods.push(p);
    }
    // A cooldown given as a label is read before the annotation.
    let mut label = bare_pod("batch", "bad-cooldown-label", "rev-1", preemptable());
    merge(
        &mut label,
        json!({"metadata": {"labels": {"volcano.sh/cooldown-time": "1day"},
                            "annotations": {"volcano.sh/cooldown-time": "1m"}}}),
    );
    pods.push(label);
    pods.push(bare_pod("batch", "good", "rev-1", preemptable()));
    let file = closed_zone_with(pods, vec![]);
    let report = plan(&[file.path()], BOTH_CLOSED_IN_COOLDOWN);
    assert_invalid(
        &report,
        "batch/bad-preemptable",
        "volcano.sh/preemptable",
        "yes",
    );
    assert_invalid(
        &report,
        "batch/bad-cooldown",
        "volcano.sh/cooldown-time",
        "5 minutes",
    );
    assert_invalid(
        &report,
        "batch/bad-budget",
        "volcano.sh/jdb-max-unavailable",
        "lots",
    );
    assert_invalid(
        &report,
        "batch/bad-long-budget",
        "volcano.sh/job-disruption-budget-min-available",
        "-1",
    );
    assert_invalid(
        &report,
        "batch/bad-cooldown-label",
        "volcano.sh/cooldown-time",
        "1day",
    );
    assert_eq!(evicted(&report), set(&["batch/good"]));
}

#[test]
fn a_malformed_budget_stops_the_whole_job() {
    // One pod of the ReplicaSet carries a bad budget: none of its pods may go, the good ones included.
    let mut pods = Vec::new();
    for i in 0..3 {
        let mut p = replica("batch", &format!("rs-{i}"), "rev-1", "rs", preemptable());
        let value = if i == 2 { "40 percent" } else { "40%" };
        merge(
            &mut p,
            annotated(&[("volcano.sh/jdb-max-unavailable", value)]),
        );
        pods.push(p);
    }
    // A PodGroup whose own budget is malformed.
    let group = json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "train", "namespace": "ml",
                     "annotations": {"volcano.sh/jdb-min-available": "two"}},
        "spec": {"minMember": 2},
    });
    for i in 0..2 {
        let mut p = bare_pod("ml", &format!("train-{i}"), "rev-1", preemptable());
        merge(
            &mut p,
            annotated(&[("scheduling.k8s.io/group-name", "train")]),
        );
        pods.push(p);
    }
    let file = closed_zone_with(pods, vec![group]);
    let report = plan(&[file.path()], BOTH_CLOSED_IN_COOLDOWN);
    assert!(evicted(&report).is_empty(), "{report:#}");
    for i in 0..3 {
        assert_invalid(
            &report,
            &format!("batch/rs-{i}"),
            "volcano.sh/jdb-max-unavailable",
            "40 percent",
        );
    }
    for i in 0..2 {
        let pod = format!("ml/train-{i}");
        assert_invalid(&report, &pod, "volcano.sh/jdb-min-available", "two");
        let detail = skip_entry(&report, &pod)["detail"]
            .as_str()
            .expect("detail");
        assert!(detail.contains("PodGroup ml/train"), "{detail}");
    }
}

fn assert_fails(args: &[&str], expected: &[&str]) {
    let output = run(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "should fail: {args:?}\nstdout: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    for text in expected {
        assert!(stderr.contains(text), "stderr lacks {text:?}: {stderr}");
    }
    assert!(
        !stderr.contains("panicked"),
        "a panic is not an error message: {stderr}"
    );
}

#[test]
fn an_unparsable_window_in_a_dump_is_an_error_naming_file_and_zone() {
    let bad = text_file(
        "apiVersion: tidal.dev/v1alpha1\nkind: RevocableZone\nmetadata:\n  name: rz-night\nspec:\n  windows:\n  - time: \"25:00-06:00\"\n",
    );
    let path = bad.path().to_str().expect("utf-8 path");
    assert_fails(
        &["report", "--cluster", path, "--now", BOTH_OPEN],
        &[path, "RevocableZone rz-night", "25:00-06:00"],
    );
    let bad_tz = text_file(
        "apiVersion: tidal.dev/v1alpha1\nkind: RevocableZone\nmetadata:\n  name: rz-mars\nspec:\n  windows:\n  - time: \"20:00-06:00\"\n  timeZone: Mars/Olympus_Mons\n",
    );
    let path = bad_tz.path().to_str().expect("utf-8 path");
    assert_fails(
        &["report", "--cluster", path],
        &[path, "RevocableZone rz-mars", "Mars/Olympus_Mons"],
    );
}

#[test]
fn a_malformed_object_is_an_error_naming_file_and_object() {
    let broken = cluster(vec![
        node("rev-1").zone("z").into(),
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "broken", "namespace": "shop"},
            "spec": {"containers": "not a list"},
        }),
    ]);
    let path = broken.path().to_str().expect("utf-8 path");
    assert_fails(
        &["report", "--cluster", path, "--now", BOTH_OPEN],
        &[path, "Pod shop/broken", "containers"],
    );

    let bad_policy = cluster(vec![
        policy(json!({"defaults": {"jobBudget": {"maxUnavailable": -3}}}))
            .named("p")
            .into(),
    ]);
    let path = bad_policy.path().to_str().expect("utf-8 path");
    assert_fails(
        &["report", "--cluster", path],
        &[path, "DeschedulingPolicy p", "jobBudget"],
    );

    let not_yaml = text_file("items: [\n  - {kind: Pod\n");
    let path = not_yaml.path().to_str().expect("utf-8 path");
    assert_fails(&["report", "--cluster", path], &[path]);
}

#[test]
fn a_missing_file_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-such-cluster.yaml");
    let path = missing.to_str().expect("utf-8 path");
    assert_fails(&["report", "--cluster", path], &[path]);
    assert_fails(&["report", "--cluster", path, "-o", "json"], &[path]);
    let output = run(&["report", "--cluster", path]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.matches("No such file or directory").count(),
        1,
        "the cause is said once: {stderr}"
    );
}

/// Input that used to be dropped without a word: a plan that silently leaves out objects the user meant
/// it to see is worse than no plan.
#[test]
fn objects_tidal_cannot_place_are_errors_not_silence() {
    let cases: Vec<(NamedTempFile, Vec<&str>)> = vec![
        (text_file(""), vec!["holds no Kubernetes objects"]),
        (
            text_file("hello\n"),
            vec!["item 1", "not a Kubernetes object"],
        ),
        (text_file("- 1\n"), vec!["not a Kubernetes object"]),
        (
            text_file("apiVersion: v1\nkind: List\nitems: 5\n"),
            vec!["items must be a list"],
        ),
        (
            cluster(vec![
                json!({"kind": "Pod", "metadata": {"name": "p", "namespace": "a"}}),
            ]),
            vec!["Pod a/p", "apiVersion and kind"],
        ),
        // A kind tidal reads, at a version it does not.
        (
            cluster(vec![
                json!({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
                                "metadata": {"name": "db", "namespace": "a"}}),
            ]),
            vec![
                "PodDisruptionBudget a/db",
                "tidal reads PodDisruptionBudget as policy/v1",
            ],
        ),
        (
            cluster(vec![{
                let mut p: Value = policy(json!({})).named("p2").into();
                p["apiVersion"] = json!("tidal.dev/v1beta1");
                p
            }]),
            vec!["DeschedulingPolicy p2", "tidal.dev/v1beta1"],
        ),
    ];
    for (file, mut expected) in cases {
        let path = file.path().to_str().expect("utf-8 path");
        expected.push(path);
        assert_fails(
            &["report", "--cluster", path, "--now", BOTH_OPEN],
            &expected,
        );
    }
}

/// `kubectl apply` would refuse these (schema, CEL, or tidal's own checks at load): so does a report on
/// a saved cluster, naming file and object.
#[test]
fn policies_and_zones_kubectl_would_refuse_are_errors() {
    let cases = [
        (
            policy(json!({"namespaces": {"include": ["a"], "exclude": ["b"]}}))
                .named("both-lists")
                .into(),
            "DeschedulingPolicy both-lists",
        ),
        (
            policy(json!({"defaults": {"jobBudget": {"maxUnavailable": 1, "minAvailable": 2}}}))
                .named("both-budgets")
                .into(),
            "DeschedulingPolicy both-budgets",
        ),
        (
            policy(json!({"interval": "1s"})).named("too-fast").into(),
            "DeschedulingPolicy too-fast",
        ),
        (
            policy(json!({"limits": {"perNodes": 1}}))
                .named("misspelt")
                .into(),
            "DeschedulingPolicy misspelt",
        ),
        (
            policy(json!({"strategies": {"tdm": null}}))
                .named("nothing-enabled")
                .into(),
            "DeschedulingPolicy nothing-enabled",
        ),
        (
            policy(
                json!({"protections": {"labelSelector": {"matchExpressions": [
                    {"key": "app", "operator": "In"}]}}}),
            )
            .named("bad-selector")
            .into(),
            "DeschedulingPolicy bad-selector",
        ),
        (
            revocable_zone(
                "long-drain",
                json!({"windows": [{"time": "08:00-20:00"}], "drainBefore": "48h"}),
            ),
            "RevocableZone long-drain",
        ),
        (
            revocable_zone(
                "twice",
                json!({"windows": [{"time": "08:00-20:00"}, {"time": "08:00-20:00"}]}),
            ),
            "RevocableZone twice",
        ),
        (
            revocable_zone(
                "monday-twice",
                json!({"windows": [{"time": "08:00-20:00", "days": ["Mon", "Tue", "Mon"]}]}),
            ),
            "RevocableZone monday-twice",
        ),
    ];
    for (object, name) in cases {
        let file = cluster(vec![object]);
        let path = file.path().to_str().expect("utf-8 path");
        assert_fails(
            &["report", "--cluster", path, "--now", BOTH_OPEN],
            &[path, name],
        );
    }
}

/// Input without end is refused at once rather than read until memory runs out, and so is JSON with two
/// equal keys in one object (keeping the last would be a silent guess).
#[test]
fn endless_input_and_duplicate_keys_are_refused() {
    // Read in bounded chunks: refused at its first byte, not after reading without end.
    assert_fails(&["report", "--cluster", "/dev/zero"], &["/dev/zero"]);
    let large = text_file(&format!("# {}\n", "x".repeat(4096)));
    let path = large.path().to_str().expect("utf-8 path");
    assert_fails(
        &["report", "--cluster", path, "--max-input-size", "1Ki"],
        &[path, "larger than 1024 bytes", "--max-input-size"],
    );
    let duplicated = text_file(
        r#"{"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"volcano.sh/revocable-zone": "a", "volcano.sh/revocable-zone": "b"}}}]}"#,
    );
    let path = duplicated.path().to_str().expect("utf-8 path");
    assert_fails(
        &["report", "--cluster", path],
        &[
            path,
            "item 1 (Node n1)",
            "duplicate key metadata.labels.volcano.sh/revocable-zone",
        ],
    );
}

/// A time the API server accepts but tidal's timestamps cannot hold (year 9999) does not fail the
/// whole report. It is read as tidal's latest instant, with a warning naming the object and field,
/// and keeps its meaning: a pod scheduled "in 9999" is inside its cooldown, so it is not evicted.
#[test]
fn a_time_in_the_year_9999_is_read_as_the_latest_instant_with_a_warning() {
    let mut zone = revocable_zone("z", utc("08:00-20:00"));
    zone["status"] = json!({"nextChange": "9999-12-31T23:59:59Z"});
    let late = json!({"status": {"conditions": [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "9999-12-31T23:59:59Z"}]}});
    let mut late_pod = bare_pod("shop", "late", "rev-1", preemptable());
    merge(&mut late_pod, late);
    let file = cluster(vec![
        node("rev-1").zone("z").into(),
        zone,
        policy(json!({"defaults": {"cooldown": "10m"}}))
            .named("p")
            .into(),
        late_pod,
        bare_pod("shop", "early", "rev-1", preemptable()),
    ]);
    let report = plan(&[file.path()], "2026-11-22T21:00:00Z");
    assert_eq!(evicted(&report), set(&["shop/early"]), "{report:#}");
    assert_eq!(skip_entry(&report, "shop/late")["gate"], "cooldown");
    let warnings = report["warnings"].to_string();
    for expected in [
        "item 2 (RevocableZone z): status.nextChange 9999-12-31T23:59:59Z is past the latest time",
        "item 4 (Pod shop/late): status.conditions[0].lastTransitionTime 9999-12-31T23:59:59Z",
    ] {
        assert!(warnings.contains(expected), "{expected}: {warnings}");
    }
}

#[test]
fn kinds_tidal_does_not_read_are_counted_in_a_note() {
    let report = plan(&[&real(), &real_zones()], BOTH_OPEN);
    let warnings: Vec<&str> = report["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        warnings.contains(
            &"ignored 5 object(s) tidal does not read: apps/v1 DaemonSet (1), apps/v1 Deployment (2), apps/v1 ReplicaSet (2)"
        ),
        "{warnings:?}"
    );
}

// ---- the demo ------------------------------------------------------------------------------------------

/// The instant the README runs the demo at.
const DEMO_NOW: &str = "2026-11-23T09:30:00Z";

#[test]
fn demo_cluster_shows_evictions_budget_and_cooldown() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo-cluster.yaml");
    let report = plan(&[&demo], DEMO_NOW);
    assert_eq!(
        evicted(&report),
        set(&[
            "analytics/etl-nightly-5d9c7b8f4-mx8rb",
            "analytics/etl-nightly-5d9c7b8f4-s4hvk",
            "shop/invoice-export-6b8d4f7c9-wp7fm",
            "ml/hpo-sweep-trial-1",
        ])
    );
    // The resnet-train gang goes whole once its restarted worker's cooldown is over.
    assert_eq!(
        skipped(&report),
        gates(&[
            ("analytics/etl-nightly-5d9c7b8f4-7ctzq", "budget"),
            ("analytics/etl-nightly-5d9c7b8f4-dn5wl", "budget"),
            ("ml/resnet-train-worker-0", "cooldown"),
            ("ml/resnet-train-worker-1", "cooldown"),
            ("ml/resnet-train-worker-2", "cooldown"),
            ("ml/resnet-train-worker-3", "cooldown"),
            ("ml/hpo-sweep-trial-0", "budget"),
        ])
    );
    for z in ["yarn-a", "yarn-b"] {
        assert_eq!(zone_of(&report, z)["open"], false, "{z}");
    }
    assert!(
        report["warnings"].as_array().is_some_and(Vec::is_empty),
        "{report:#}"
    );

    // The README's command, as a newcomer runs it (table output).
    let demo = demo.to_str().expect("utf-8 path");
    let output = run(&["report", "--cluster", demo, "--now", DEMO_NOW]);
    assert!(output.status.success(), "{output:?}");
    let table = String::from_utf8(output.stdout).expect("utf-8");
    // The three pods their jobs' budgets hold this round only are counted as waiting for the round
    // that takes them, not as skipped; the gang held by its worker's cooldown is skipped.
    assert!(
        table.contains("4 evictions planned, 3 waiting for a later round (the first "),
        "{table}"
    );
    assert!(
        table.contains(", 4 skipped (cooldown 4); 2 of 2 zones closed"),
        "{table}"
    );
    assert!(table.contains("WAITING FOR A LATER ROUND (3)\n"), "{table}");
    assert!(table.contains("SKIPPED (4)\n"), "{table}");
    // JSON says the same: the budget's rows wait, with the round; the policy counts them.
    let waiting: Vec<(String, bool, bool)> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let pod = format!(
                "{}/{}",
                s["namespace"].as_str().unwrap(),
                s["name"].as_str().unwrap()
            );
            (pod, s["waiting"] == true, s["nextRound"].is_string())
        })
        .collect();
    for (pod, waits, round) in &waiting {
        let budget = !pod.starts_with("ml/resnet-train");
        assert_eq!((*waits, *round), (budget, budget), "{pod}: {report:#}");
    }
    assert_eq!(report["policies"][0]["waiting"], 3, "{report:#}");
}

/// A job whose budget lets none of its pods go, even with all of them running, waits for no round:
/// its pods are skipped, without a round, in the table, the JSON and `tidal explain` alike.
#[test]
fn a_budget_that_never_lets_a_pod_go_is_skipped_not_waiting() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo-cluster.yaml"),
    )
    .unwrap()
    .replace(
        "job-disruption-budget-min-available: \"3\"",
        "job-disruption-budget-min-available: \"4\"",
    );
    let dir = tempfile::tempdir().unwrap();
    let held = dir.path().join("held.yaml");
    std::fs::write(&held, text).unwrap();
    let report = plan(&[&held], DEMO_NOW);
    let resnet: Vec<&Value> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["gate"] == "budget" && s["job"] == "PodGroup ml/resnet-train")
        .collect();
    assert_eq!(resnet.len(), 3, "{report:#}");
    for row in resnet {
        assert_eq!(row["waiting"], false, "{row:#}");
        assert!(row.get("nextRound").is_none(), "{row:#}");
    }
    assert_eq!(report["policies"][0]["waiting"], 3, "{report:#}");
    let held = held.to_str().unwrap();
    let output = run(&["report", "--cluster", held, "--now", DEMO_NOW]);
    let table = String::from_utf8(output.stdout).expect("utf-8");
    assert!(
        table.contains("4 evictions planned, 3 waiting for a later round (the first "),
        "{table}"
    );
    assert!(
        table.contains(", 4 skipped (budget 3, cooldown 1);"),
        "{table}"
    );
    assert!(
        table.contains("no round takes it: the budget lets none of the job's pods go"),
        "{table}"
    );
    let explained = run(&[
        "explain",
        "pod",
        "ml/resnet-train-worker-0",
        "--cluster",
        held,
        "--now",
        DEMO_NOW,
        "-o",
        "json",
    ]);
    let explained: Value = serde_json::from_slice(&explained.stdout).unwrap();
    let verdict = &explained["policies"][0];
    assert_eq!(verdict["outcome"], "skipped", "{verdict:#}");
    assert!(verdict.get("nextRound").is_none(), "{verdict:#}");
}

/// Destinations obey tidal's own placement rules: highNodeUtilization on the demo cluster used to
/// move the non-preemptable shop/invoice-export replica because "it fits node yarn-a-1", a node of a
/// closed revocable zone where neither it nor its replacement may run.
#[test]
fn demo_high_node_utilization_moves_nothing_onto_revocable_nodes_it_may_not_use() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let demo = root.join("examples/demo-cluster.yaml");
    let policy = root.join("policies/highNodeUtilization.yaml");
    let report = plan_with(
        &[&demo, &policy],
        "2026-11-23T09:30:00Z",
        &["--policy", "high-node-utilization"],
    );
    let planned = evicted(&report);
    assert!(
        !planned.contains("shop/invoice-export-6b8d4f7c9-2kdxn"),
        "{report:#}"
    );
    for eviction in report["evictions"].as_array().unwrap() {
        let reason = eviction["reason"].as_str().unwrap();
        assert!(!reason.contains("fits node yarn-"), "{reason}");
    }
}

#[test]
fn a_job_that_cannot_leave_before_a_close_ten_minutes_away_is_at_risk_with_the_fix_named() {
    // 100 pods, maxUnavailable 1, each taking a minute to terminate; the close at 20:00:01.
    let auto = crate::timeline_e2e::zone_with_a_big_job(json!({}));
    let report = plan(&[auto.path()], "2026-11-23T19:50:00Z");
    let drain = &zone_of(&report, "rz")["drain"];
    assert_eq!(drain["atRisk"], true, "{drain:#}");
    assert_eq!(drain["remainingPods"], 100);
    // One pod every other round (the last one still terminating at the next): 94 or more still
    // there at the close, and the zone empty hours after it.
    assert!(drain["atClose"].as_u64().unwrap() >= 94, "{drain:#}");
    assert!(
        drain["marginSeconds"].as_i64().unwrap() < -3 * 3_600,
        "{drain:#}"
    );
    let fix = drain["fix"].as_str().unwrap();
    assert!(fix.contains("raise maxDrainBefore"), "{fix}");
    assert!(fix.contains("volcano.sh/jdb-max-unavailable"), "{fix}");
    // The auto drain is overdue (capped at maxDrainBefore): the round goes now, one pod.
    assert_eq!(zone_of(&report, "rz")["draining"], true);
    assert_eq!(report["evictions"].as_array().map(Vec::len), Some(1));

    // A fixed lead names drainBefore instead.
    let fixed = crate::timeline_e2e::zone_with_a_big_job(json!({"drainBefore": "10m"}));
    let report = plan(&[fixed.path()], "2026-11-23T19:50:00Z");
    let fix = zone_of(&report, "rz")["drain"]["fix"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(fix.contains("drainBefore 10m0s is shorter than"), "{fix}");

    // The table: the verdict in the zone's row, the fix under the zones.
    let table = run(&[
        "report",
        "--cluster",
        auto.path().to_str().unwrap(),
        "--now",
        "2026-11-23T19:50:00Z",
    ]);
    let table = String::from_utf8(table.stdout).expect("utf-8");
    for expected in ["misses the close by", "rz at risk: ", "1 at risk"] {
        assert!(table.contains(expected), "lacks {expected:?}:\n{table}");
    }
}

#[test]
fn the_drain_estimate_follows_the_eviction_rate() {
    // 2,000 one-pod jobs: at 20 a second the drain takes about 100 s of sending; at 5 a second four
    // times that. An estimate that ignored the rate would not move.
    let file = crate::timeline_e2e::a_large_zone_of_small_jobs();
    let now = "2026-11-23T19:00:00Z";
    let empty_after = |extra: &[&str]| -> f64 {
        let report = plan_with(&[file.path()], now, extra);
        let drain = &zone_of(&report, "z")["drain"];
        let start: jiff::Timestamp = drain["drainStart"].as_str().unwrap().parse().unwrap();
        let empty: jiff::Timestamp = drain["expectedEmptyAt"].as_str().unwrap().parse().unwrap();
        empty.duration_since(start).as_secs_f64()
    };
    let default = empty_after(&[]);
    let slow = empty_after(&["--eviction-qps", "5", "--eviction-burst", "10"]);
    assert!((127.0..130.0).contains(&default), "{default}");
    assert!((425.0..432.0).contains(&slow), "{slow}");
}
