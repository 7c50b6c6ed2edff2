//! `tidal timeline` end to end on the README's demo cluster, through the real binary: the drain start,
//! the pacing of rounds by `evictPeriod`, the budget per round, and the report's drain start and pods
//! waiting for the next round.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::Value;
use tempfile::NamedTempFile;
use tidal_testkit::objects;

/// The instant the README runs the demo at: Monday, both zones closed.
const DEMO_NOW: &str = "2026-11-23T09:30:00Z";

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo-cluster.yaml")
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tidal"))
        .args(args)
        .output()
        .expect("run tidal")
}

fn stdout(args: &[&str]) -> String {
    let output = run(args);
    assert!(output.status.success(), "{args:?}: {output:?}");
    String::from_utf8(output.stdout).expect("utf-8")
}

fn json(args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.extend(["-o", "json"]);
    let text = stdout(&args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn path(file: &Path) -> &str {
    file.to_str().expect("utf-8 path")
}

/// `(at, event, zone)` of every event, and the events themselves.
fn events(timeline: &Value) -> &Vec<Value> {
    timeline["events"].as_array().expect("events")
}

/// Per round of `zone`: `(at, pods evicted)`.
fn rounds(timeline: &Value, zone: &str) -> Vec<(String, Vec<String>)> {
    events(timeline)
        .iter()
        .filter(|e| e["event"] == "round" && e["zone"] == zone)
        .map(|e| {
            let pods = e["evictions"]
                .as_array()
                .expect("evictions")
                .iter()
                .map(|p| {
                    format!(
                        "{}/{}",
                        p["namespace"].as_str().unwrap(),
                        p["name"].as_str().unwrap()
                    )
                })
                .collect();
            (e["at"].as_str().unwrap().to_owned(), pods)
        })
        .collect()
}

fn change<'t>(timeline: &'t Value, zone: &str, event: &str) -> &'t Value {
    events(timeline)
        .iter()
        .find(|e| e["event"] == event && e["zone"] == zone)
        .unwrap_or_else(|| panic!("no {event} for {zone}: {timeline:#}"))
}

#[test]
fn demo_timeline_paces_rounds_by_evict_period_within_each_job_s_budget() {
    let demo = demo();
    let timeline = json(&["timeline", "--cluster", path(&demo), "--now", DEMO_NOW]);
    assert_eq!(timeline["until"], "2026-11-24T09:30:00Z", "24h by default");

    // yarn-a: evictPeriod 2m; etl-nightly (4 pods, maxUnavailable 40%: 2) loses 2, replaced
    // elsewhere once gone, then the other 2; the misplaced invoice-export replica goes in round 1.
    assert_eq!(
        rounds(&timeline, "yarn-a"),
        [
            (
                "2026-11-23T09:30:00Z".to_owned(),
                vec![
                    "analytics/etl-nightly-5d9c7b8f4-s4hvk".to_owned(),
                    "analytics/etl-nightly-5d9c7b8f4-mx8rb".to_owned(),
                    "shop/invoice-export-6b8d4f7c9-wp7fm".to_owned(),
                ]
            ),
            (
                "2026-11-23T09:32:00Z".to_owned(),
                vec![
                    "analytics/etl-nightly-5d9c7b8f4-7ctzq".to_owned(),
                    "analytics/etl-nightly-5d9c7b8f4-dn5wl".to_owned(),
                ]
            ),
        ]
    );
    // yarn-b: evictPeriod 5m; hpo-sweep (maxUnavailable 1) loses one trial per round. resnet-train
    // is a gang of 4 with minMember 4: its first worker evicted and Volcano gives up its work, so
    // it goes whole, in the first round after worker-3's cooldown has ended (09:42:40), where its
    // minAvailable 3 would have taken it one worker per round until 09:45.
    assert_eq!(
        rounds(&timeline, "yarn-b"),
        [
            (
                "2026-11-23T09:30:00Z".to_owned(),
                vec!["ml/hpo-sweep-trial-1".to_owned()]
            ),
            (
                "2026-11-23T09:35:00Z".to_owned(),
                vec!["ml/hpo-sweep-trial-0".to_owned()]
            ),
            (
                "2026-11-23T09:44:00Z".to_owned(),
                vec![
                    "ml/resnet-train-worker-3".to_owned(),
                    "ml/resnet-train-worker-2".to_owned(),
                    "ml/resnet-train-worker-0".to_owned(),
                    "ml/resnet-train-worker-1".to_owned(),
                ]
            ),
        ]
    );
    let first = events(&timeline)
        .iter()
        .find(|e| e["event"] == "round" && e["zone"] == "yarn-b")
        .unwrap();
    let trial = first["waiting"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "hpo-sweep-trial-0")
        .expect("trial-0 waits in round 1");
    assert_eq!(trial["gate"], "budget");
    assert_eq!(trial["nextRound"], "2026-11-23T09:35:00Z");
    assert_eq!(trial["nextRoundWhen"], "Mon 10:35 CET");
    assert_eq!(first["when"], "Mon 10:30 CET", "in the zone's time zone");

    // Zone changes, shown as the operator wrote them, in the zone's time zone and relative to now.
    let opens = change(&timeline, "yarn-b", "opens");
    assert_eq!(
        (opens["when"].as_str(), opens["in"].as_str()),
        (Some("Mon 19:00 CET"), Some("in 8h30m"))
    );
    let drain = change(&timeline, "yarn-b", "drainStarts");
    assert_eq!(drain["at"], "2026-11-24T05:40:01Z");
    assert_eq!(drain["when"], "Tue 06:40 CET");
    let closes = change(&timeline, "yarn-b", "closes");
    assert_eq!(closes["at"], "2026-11-24T06:00:01Z");
    assert_eq!(closes["shown"], "2026-11-24T06:00:00Z");
    assert_eq!(closes["when"], "Tue 07:00 CET");
    // yarn-a sets no drainBefore: an `auto` drain, started from the estimate. Its pods went in the
    // morning's rounds, so nothing is left to drain and it starts the 30 s slack before the close.
    let auto = change(&timeline, "yarn-a", "drainStarts");
    assert_eq!(auto["at"], "2026-11-24T05:59:31Z");
    assert_eq!(
        auto["detail"],
        "drainBefore auto: nothing left to drain; started 30s before the close"
    );
    let bars: Vec<&str> = timeline["zones"]
        .as_array()
        .unwrap()
        .iter()
        .map(|z| z["bar"].as_str().unwrap())
        .collect();
    // Half-hour slots from 09:30 UTC: yarn-b closed until 18:00 UTC, open, draining, closed.
    assert_eq!(
        bars[1],
        format!("{}{}~{}", "#".repeat(17), ".".repeat(23), "#".repeat(7))
    );

    // The table: a bar per zone, then the events; close times never end in :01.
    let table = stdout(&["timeline", "--cluster", path(&demo), "--now", DEMO_NOW]);
    for expected in [
        "yarn-b  Europe/Berlin  closed",
        "round 1 evicts 1 pod ",
        "1 job in 1 namespace; sent within 0s, gone within 30s",
        "5 wait for Mon 09:35 (budget 1, cooldown 4)",
        "round 3 evicts 4 pods  1 job in 1 namespace, a gang taken whole: PodGroup ml/resnet-train \
         (gang of 4 (minMember 4)); sent within 0s",
        "Tue 05:40",
        "starts draining",
        "Tue 06:00",
        "yarn-a: 2 rounds, 5 evictions",
    ] {
        assert!(
            table.contains(expected),
            "table lacks {expected:?}:\n{table}"
        );
    }
    assert!(!table.contains(":01 "), "{table}");
    // One line per round; the pods themselves only with -o wide.
    assert!(!table.contains("ml/hpo-sweep-trial-0"), "{table}");
    let wide = stdout(&[
        "timeline",
        "--cluster",
        path(&demo),
        "--now",
        DEMO_NOW,
        "-o",
        "wide",
    ]);
    let trial = wide
        .lines()
        .find(|l| l.contains("ml/hpo-sweep-trial-0"))
        .unwrap_or_else(|| panic!("{wide}"));
    assert!(trial.contains("waits for Mon 09:35"), "{trial}");
}

#[test]
fn at_five_thirty_the_report_and_the_timeline_say_when_draining_starts() {
    let demo = demo();
    let now = "2026-11-23T05:30:00Z";
    let report = json(&["report", "--cluster", path(&demo), "--now", now]);
    let yarn_b = report["zones"]
        .as_array()
        .unwrap()
        .iter()
        .find(|z| z["name"] == "yarn-b")
        .unwrap();
    assert_eq!(yarn_b["draining"], false);
    assert_eq!(yarn_b["drainStart"], "2026-11-23T05:40:01Z");
    let table = stdout(&["report", "--cluster", path(&demo), "--now", now]);
    assert!(
        table.contains("drains Mon 05:40 (in 10m), closes Mon 06:00"),
        "{table}"
    );
    // yarn-a's `auto` drain: 4 pods, 2 rounds 2 minutes apart, the last gone 30 s later (2m 30s);
    // 1.5 times that and 30 s before the close at 06:00:01.
    let yarn_a = report["zones"]
        .as_array()
        .unwrap()
        .iter()
        .find(|z| z["name"] == "yarn-a")
        .unwrap();
    assert_eq!(yarn_a["drainStart"], "2026-11-23T05:55:45.85Z");
    assert_eq!(yarn_a["drain"]["atRisk"], false, "{yarn_a:#}");
    assert!(
        table.contains("drains Mon 05:55 (in 25m), closes Mon 06:00"),
        "{table}"
    );

    // The first yarn-b round is at the drain start, and takes one trial of hpo-sweep; the
    // resnet-train gang waits whole for its worker's cooldown.
    let timeline = json(&[
        "timeline",
        "--cluster",
        path(&demo),
        "--now",
        now,
        "--span",
        "1h",
    ]);
    assert_eq!(timeline["until"], "2026-11-23T06:30:00Z");
    let first = &rounds(&timeline, "yarn-b")[0];
    assert_eq!(first.0, "2026-11-23T05:40:01Z");
    assert_eq!(first.1, ["ml/hpo-sweep-trial-1"], "{first:?}");
    // The timeline starts yarn-a's `auto` drain where the report says.
    assert_eq!(
        change(&timeline, "yarn-a", "drainStarts")["at"],
        yarn_a["drainStart"]
    );
}

/// The demo with yarn-b's last round at 09:28: its next round may start at 09:33.
fn demo_with_a_recent_round() -> NamedTempFile {
    let text = std::fs::read_to_string(demo()).expect("demo");
    let anchor = "  drainBefore: 20m\n";
    assert!(text.contains(anchor));
    let text = text.replacen(
        anchor,
        &format!("{anchor}status:\n  lastEvictionRound: \"2026-11-23T09:28:00Z\"\n"),
        1,
    );
    let mut file = NamedTempFile::new().expect("temp file");
    std::io::Write::write_all(&mut file, text.as_bytes()).expect("write");
    file
}

#[test]
fn pods_held_back_by_evict_period_wait_for_the_next_round() {
    let file = demo_with_a_recent_round();
    let report = json(&["report", "--cluster", path(file.path()), "--now", DEMO_NOW]);
    let waiting: Vec<(String, String)> = report["waiting"]
        .as_array()
        .expect("waiting")
        .iter()
        .map(|w| {
            (
                w["name"].as_str().unwrap().to_owned(),
                w["nextRound"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        waiting,
        [(
            "hpo-sweep-trial-1".to_owned(),
            "2026-11-23T09:33:00Z".to_owned()
        ),]
    );
    let table = stdout(&["report", "--cluster", path(file.path()), "--now", DEMO_NOW]);
    // With the two etl-nightly pods their job's budget holds until yarn-a's next round.
    assert!(table.contains("WAITING FOR A LATER ROUND (3)"), "{table}");
    assert!(table.contains("Mon 09:33 (in 3m)"), "{table}");
    assert!(table.contains("3 waiting for a later round"), "{table}");

    // The timeline's first yarn-b round is that one, and the next is evictPeriod later.
    let timeline = json(&[
        "timeline",
        "--cluster",
        path(file.path()),
        "--now",
        DEMO_NOW,
    ]);
    let at: Vec<String> = rounds(&timeline, "yarn-b")
        .into_iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(
        at,
        [
            "2026-11-23T09:33:00Z",
            "2026-11-23T09:38:00Z",
            "2026-11-23T09:43:00Z"
        ]
    );
}

#[test]
fn timeline_flags_it_cannot_honour_are_refused() {
    let demo = demo();
    for extra in [&["--span", "169h"][..], &["--span", "0s"], &["-n", "ml"]] {
        let mut args = vec!["timeline", "--cluster", path(&demo), "--now", DEMO_NOW];
        args.extend(extra);
        let output = run(&args);
        assert!(!output.status.success(), "{extra:?} accepted");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("error"), "{stderr}");
    }
}

/// Every command shown with its output in README.md and docs/ (a code block starting `$ tidal ...`,
/// run from the repository's root) prints exactly that output: the README's timeline and the
/// explanations of a pod.
#[test]
fn every_sample_in_the_docs_is_what_its_command_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    let mut samples = 0;
    for page in pages {
        let text = std::fs::read_to_string(&page).expect("a page");
        for (at, _) in text.match_indices("```\n$ tidal ") {
            let command_at = at + "```\n$ ".len();
            let line_end = command_at + text[command_at..].find('\n').expect("a command line");
            let command = &text[command_at..line_end];
            let sample = &text[line_end + 1..];
            let sample = &sample[..sample.find("```").expect("the end of the sample")];
            let args: Vec<&str> = command.split_whitespace().skip(1).collect();
            let output = Command::new(env!("CARGO_BIN_EXE_tidal"))
                .args(&args)
                .current_dir(root)
                .output()
                .expect("run tidal");
            assert!(output.status.success(), "{command}: {output:?}");
            let printed = String::from_utf8(output.stdout).expect("utf-8");
            assert_eq!(
                sample,
                printed,
                "{}: the sample of `{command}` is stale: paste what the command prints",
                page.display()
            );
            samples += 1;
        }
    }
    assert!(
        samples >= 3,
        "the README's timeline and the pod explanations"
    );
}

// ---- drains: the pacing, the budgets held while pods terminate, and each close's verdict ---------------

/// Runs `tidal timeline` in-process, as the CLI parses it, and returns the JSON timeline.
pub(crate) fn timeline_json(file: &Path, now: &str, extra: &[&str]) -> Value {
    let text = timeline_output(file, now, &[&["-o", "json"], extra].concat());
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

pub(crate) fn timeline_output(file: &Path, now: &str, extra: &[&str]) -> String {
    let mut argv = vec!["tidal", "timeline", "--cluster", path(file), "--now", now];
    argv.extend(extra);
    let cli = <tidal::cli::Cli as clap::Parser>::try_parse_from(&argv).expect("arguments parse");
    let tidal::cli::Command::Timeline(args) = &cli.command else {
        panic!("not a timeline command");
    };
    tidal::cli::timeline(args).unwrap_or_else(|e| panic!("timeline failed: {e:#}"))
}

/// A list of objects in a temporary file, as `kubectl get -o json` writes one.
pub(crate) fn cluster_file(objects: Vec<Value>) -> NamedTempFile {
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects});
    let mut file = tempfile::Builder::new()
        .suffix(".json")
        .tempfile()
        .expect("tempfile");
    std::io::Write::write_all(&mut file, list.to_string().as_bytes()).expect("write");
    file
}

/// A node of zone `zone` with room for `pods` pods.
fn roomy_node(name: &str, zone: &str, pods: usize) -> Value {
    let slots = u32::try_from(pods + 10).expect("a small node");
    objects::node(name)
        .zone(zone)
        .allocatable("1000", "4Ti", slots)
        .into()
}

/// A preemptable pod of zone node `node`, owned by ReplicaSet `owner`, long past any cooldown, gone
/// `grace` seconds after its eviction.
fn preemptable_pod(name: &str, node: &str, owner: &str, grace: u32) -> objects::PodBuilder {
    objects::pod(&format!("batch/{name}"), node)
        .preemptable()
        .owned_by("ReplicaSet", owner)
        .scheduled_at("2026-11-20T03:00:00Z")
        .spec("terminationGracePeriodSeconds", serde_json::json!(grace))
}

/// Zone `rz` (UTC, open 08:00-20:00, so closing at 20:00:01) with `spec` merged in; one node holding
/// a job of 100 pods that may lose one at a time and take a minute to terminate, and a node outside
/// the zone where their replacements run.
pub(crate) fn zone_with_a_big_job(spec: Value) -> NamedTempFile {
    let zone = objects::zone("rz")
        .window("08:00-20:00")
        .evict_period("1m")
        .spec(spec);
    let mut items = vec![
        zone.into(),
        objects::policy(serde_json::json!({"interval": "5m"}))
            .named("tdm")
            .into(),
        roomy_node("rev-1", "rz", 100),
        objects::node("elsewhere-1")
            .allocatable("1000", "4Ti", 110)
            .into(),
    ];
    items.extend((0..100).map(|i| {
        preemptable_pod(&format!("big-{i:03}"), "rev-1", "big", 60)
            .annotation("volcano.sh/jdb-max-unavailable", "1")
            .into()
    }));
    cluster_file(items)
}

fn drain_of<'t>(timeline: &'t Value, zone: &str) -> &'t Value {
    timeline["drains"]
        .as_array()
        .expect("drains")
        .iter()
        .find(|d| d["zone"] == zone)
        .unwrap_or_else(|| panic!("no drain for {zone}: {:#}", timeline["drains"]))
}

fn instant(value: &Value) -> jiff::Timestamp {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not an instant: {value}"))
        .parse()
        .expect("RFC 3339")
}

#[test]
fn a_zone_that_cannot_drain_in_time_is_at_risk_hours_ahead_with_the_fix_named() {
    // Four hours before the close: more than the drain needs (100 rounds, one pod every other round
    // while the last one terminates: over three hours).
    let file = zone_with_a_big_job(serde_json::json!({}));
    let timeline = timeline_json(file.path(), "2026-11-23T16:00:00Z", &["--span", "6h"]);
    let drain = drain_of(&timeline, "rz");
    assert_eq!(drain["close"], "2026-11-23T20:00:01Z");
    assert_eq!(drain["atRisk"], true, "{drain:#}");
    assert!(
        drain["marginSeconds"].as_i64().unwrap() < -3_600,
        "{drain:#}"
    );
    let at_close = drain["atClose"].as_u64().unwrap();
    assert!((30..=50).contains(&at_close), "{drain:#}");
    let fix = drain["fix"].as_str().unwrap();
    assert!(fix.contains("raise maxDrainBefore"), "{fix}");
    assert!(fix.contains("volcano.sh/jdb-max-unavailable"), "{fix}");
    assert!(
        drain["summary"]
            .as_str()
            .unwrap()
            .contains("pods gone 1m after eviction")
    );
    assert!(
        drain["afterClose"]
            .as_str()
            .unwrap()
            .contains("budgetsAfterClose: Respect")
    );

    // The auto drain starts at maxDrainBefore (2h) before the close, and says why it is that early.
    let starts = change(&timeline, "rz", "drainStarts");
    assert_eq!(starts["at"], "2026-11-23T18:00:01Z");
    assert!(
        starts["detail"]
            .as_str()
            .unwrap()
            .contains("more than maxDrainBefore")
    );
    // A pod holds the job's budget until it has terminated (60 s after its eviction is sent): the
    // round a minute later takes nothing, the one after takes the next pod.
    let at: Vec<String> = rounds(&timeline, "rz")
        .into_iter()
        .take(3)
        .map(|(at, pods)| {
            assert_eq!(pods.len(), 1);
            at
        })
        .collect();
    assert_eq!(
        at,
        [
            "2026-11-23T18:00:01Z",
            "2026-11-23T18:02:01Z",
            "2026-11-23T18:04:01Z"
        ]
    );
    let first = events(&timeline)
        .iter()
        .find(|e| e["event"] == "round")
        .unwrap();
    assert_eq!(first["evictions"][0]["sentAt"], "2026-11-23T18:00:01Z");
    assert_eq!(first["evictions"][0]["goneAt"], "2026-11-23T18:01:01.1Z");

    // The table says it in a line per round and the verdict with the fix.
    let table = timeline_output(file.path(), "2026-11-23T16:00:00Z", &["--span", "6h"]);
    for expected in [
        "round 1 evicts 1 pod",
        "99 wait for Mon 18:02 (budget 99)",
        "misses the close by",
        "rz (Mon 20:00) at risk: ",
        "at the close of rz: pods left at the close keep leaving round by round",
    ] {
        assert!(table.contains(expected), "lacks {expected:?}:\n{table}");
    }
    assert!(
        !table.contains("batch/big-001"),
        "pods only with -o wide:\n{table}"
    );
    let wide = timeline_output(
        file.path(),
        "2026-11-23T16:00:00Z",
        &["--span", "6h", "-o", "wide"],
    );
    assert!(wide.contains("batch/big-001"), "{wide}");
}

#[test]
fn with_budgets_after_close_ignore_the_round_at_the_close_takes_every_pod_left() {
    let file = zone_with_a_big_job(serde_json::json!({"budgetsAfterClose": "Ignore"}));
    let timeline = timeline_json(file.path(), "2026-11-23T16:00:00Z", &["--span", "6h"]);
    let drain = drain_of(&timeline, "rz");
    assert!(
        drain["afterClose"]
            .as_str()
            .unwrap()
            .contains("budgetsAfterClose: Ignore")
    );
    let at_close = drain["atClose"].as_u64().unwrap();
    let closing = rounds(&timeline, "rz")
        .into_iter()
        .find(|(at, _)| at == "2026-11-23T20:00:01Z")
        .expect("a round at the close");
    assert_eq!(closing.1.len() as u64, at_close, "every pod left, at once");
    // Gone a minute later (eight requests at a time, each 0.1 s): the close missed by the pods'
    // termination.
    let empty = instant(&drain["expectedEmptyAt"]);
    let after = empty
        .duration_since("2026-11-23T20:01:01Z".parse().unwrap())
        .as_secs_f64();
    assert!((0.0..1.0).contains(&after), "{empty}");
}

/// Zones `a` (closing at 20:00:01) and `b` (at 20:02:01), both draining from their close
/// (`drainBefore: 0s`): `a` holds 3,000 one-pod jobs, `b` 100.
fn two_zones_two_minutes_apart() -> NamedTempFile {
    let zone = |name: &str, window: &str| -> Value {
        objects::zone(name)
            .window(window)
            .evict_period("1m")
            .spec(serde_json::json!({"drainBefore": "0s"}))
            .into()
    };
    let mut items = vec![
        zone("a", "08:00-20:00"),
        zone("b", "08:00-20:02"),
        objects::policy(serde_json::json!({"mode": "Evict", "interval": "5m"}))
            .named("tdm")
            .into(),
        roomy_node("a-1", "a", 3_000),
        roomy_node("b-1", "b", 100),
    ];
    items.extend((0..3_000).map(|i| {
        let name = format!("a-{i:04}");
        preemptable_pod(&name, "a-1", &name, 30).into()
    }));
    items.extend((0..100).map(|i| {
        let name = format!("b-{i:03}");
        preemptable_pod(&name, "b-1", &name, 30).into()
    }));
    cluster_file(items)
}

#[test]
fn two_zones_closing_two_minutes_apart_the_second_round_starts_at_its_close_while_the_first_is_sent()
 {
    let file = two_zones_two_minutes_apart();
    let timeline = timeline_json(file.path(), "2026-11-23T19:55:00Z", &["--span", "15m"]);
    let round = |zone: &str| -> &Value {
        events(&timeline)
            .iter()
            .find(|e| e["event"] == "round" && e["zone"] == zone)
            .unwrap_or_else(|| panic!("no round in {zone}"))
    };
    let (a, b) = (round("a"), round("b"));
    assert_eq!(a["at"], "2026-11-23T20:00:01Z");
    assert_eq!(a["pods"], 3_000);
    // b's round at its close, planned while a's evictions are still going out (3,000 at 20 a second
    // after a burst of 40: two and a half minutes).
    assert_eq!(b["at"], "2026-11-23T20:02:01Z");
    assert_eq!(b["pods"], 100);
    let a_sent_by = instant(&a["sentBy"]);
    assert!(a_sent_by > instant(&b["at"]), "a sent by {a_sent_by}");
    let sending = a_sent_by.duration_since(instant(&a["at"])).as_secs_f64();
    assert!((147.0..150.0).contains(&sending), "{sending}");
    // a closes first, so its evictions go first: b's wait behind them.
    assert!(instant(&b["sentFrom"]) >= a_sent_by, "{b:#}");
    // Each zone's verdict: with no lead, both closes are missed, the fix says what lead would do.
    let drain = drain_of(&timeline, "a");
    assert_eq!(drain["atRisk"], true);
    assert!(
        drain["fix"].as_str().unwrap().contains("drainBefore"),
        "{drain:#}"
    );

    let table = timeline_output(file.path(), "2026-11-23T19:55:00Z", &["--span", "15m"]);
    let b_line = table
        .lines()
        .find(|l| l.contains("round 1 evicts 100 pods"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(b_line.starts_with("Mon 20:02 "), "{b_line}");
    assert!(b_line.contains("sent within"), "{b_line}");
}

/// Zone `z` (`drainBefore: auto`, closing at 20:00:01) holding 2,000 one-pod jobs.
pub(crate) fn a_large_zone_of_small_jobs() -> NamedTempFile {
    let mut items = vec![
        objects::zone("z")
            .window("08:00-20:00")
            .evict_period("1m")
            .into(),
        objects::policy(serde_json::json!({"interval": "5m"}))
            .named("tdm")
            .into(),
        roomy_node("z-1", "z", 1_000),
        roomy_node("z-2", "z", 1_000),
    ];
    items.extend((0..2_000).map(|i| {
        let name = format!("p-{i:04}");
        preemptable_pod(&name, if i % 2 == 0 { "z-1" } else { "z-2" }, &name, 30).into()
    }));
    cluster_file(items)
}

#[test]
fn at_the_default_pacing_the_timeline_drain_ends_when_the_drain_estimate_says() {
    let file = a_large_zone_of_small_jobs();
    let now = "2026-11-23T18:00:00Z";
    let timeline = timeline_json(file.path(), now, &["--span", "3h"]);
    let drain = drain_of(&timeline, "z");
    assert_eq!(drain["atRisk"], false, "{drain:#}");
    let simulated = instant(&drain["expectedEmptyAt"]);
    // The estimate made when the drain started, which decided the start.
    let estimated = instant(&drain["estimate"]["expectedEmptyAt"]);
    // The report's, two hours ahead.
    let report = crate::report_e2e::plan_with(&[file.path()], now, &[]);
    let zone = crate::report_e2e::zone_of(&report, "z");
    let reported = instant(&zone["drain"]["expectedEmptyAt"]);
    assert_eq!(zone["drain"]["drainStart"], drain["drainStart"]);
    for other in [estimated, reported] {
        let apart = simulated.duration_since(other).as_secs_f64().abs();
        assert!(apart < 1.0, "simulated {simulated}, estimated {other}");
    }
    // 2,000 evictions at 20 a second after a burst of 40, the last pod gone 30 s after its eviction:
    // about 128 s; the auto drain starts 1.5 times that and 30 s before the close.
    let start = instant(&drain["drainStart"]);
    let took = simulated.duration_since(start).as_secs_f64();
    assert!((127.0..130.0).contains(&took), "{took}");
    let lead = instant(&drain["close"]).duration_since(start).as_secs_f64();
    assert!(
        (took * 1.5 + 29.0..took * 1.5 + 31.0).contains(&lead),
        "{lead}"
    );
}

/// The demo with resnet-train's PodGroup keeping all four of its workers: its budget lets none go.
fn demo_with_a_job_that_never_moves() -> NamedTempFile {
    let text = std::fs::read_to_string(demo()).expect("demo").replace(
        "job-disruption-budget-min-available: \"3\"",
        "job-disruption-budget-min-available: \"4\"",
    );
    let mut file = tempfile::Builder::new()
        .suffix(".yaml")
        .tempfile()
        .expect("tempfile");
    std::io::Write::write_all(&mut file, text.as_bytes()).expect("write");
    file
}

#[test]
fn a_pod_that_stays_gets_its_line_once_and_is_counted_after() {
    let file = demo_with_a_job_that_never_moves();
    let wide = timeline_output(file.path(), DEMO_NOW, &["-o", "wide"]);
    for worker in ["worker-0", "worker-1", "worker-2", "worker-3"] {
        let said = wide
            .lines()
            .filter(|l| l.contains("stays") && l.contains(&format!("ml/resnet-train-{worker}")))
            .count();
        assert_eq!(said, 1, "{worker}:\n{wide}");
    }
    // Later events count them, as the same pods still there.
    let holds: Vec<&str> = wide.lines().filter(|l| l.contains(" holds ")).collect();
    assert!(!holds.is_empty(), "{wide}");
    for line in holds {
        assert!(line.ends_with("  4 still stay (budget 4)"), "{line}");
    }
    assert!(wide.contains("; 4 pods stay\n"), "{wide}");
}

#[test]
fn without_a_policy_running_tdm_no_drain_starts() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let policy = root.join("policies/lowNodeUtilization.yaml");
    let demo = demo();
    let only = ["--policy", "low-node-utilization"];
    let args = |extra: &[&str]| {
        let mut args = vec![
            "timeline",
            "--cluster",
            path(&demo),
            "--cluster",
            path(&policy),
            "--now",
            DEMO_NOW,
        ];
        args.extend(only);
        args.extend(extra);
        args.iter()
            .map(|s| (*s).to_owned())
            .collect::<Vec<String>>()
    };
    let table = stdout(&args(&[]).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(!table.contains("starts draining"), "{table}");
    assert!(table.contains("yarn-b  closes"), "{table}");
    let timeline = json(&args(&[]).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        events(&timeline)
            .iter()
            .all(|e| e["event"] != "drainStarts"),
        "{timeline:#}"
    );
    for zone in timeline["zones"].as_array().unwrap() {
        assert!(!zone["bar"].as_str().unwrap().contains('~'), "{zone:#}");
    }
    // The report, half an hour before yarn-b's 20-minute drain would start: no drain to announce.
    let report = stdout(&[
        "report",
        "--cluster",
        path(&demo),
        "--cluster",
        path(&policy),
        "--now",
        "2026-11-23T05:30:00Z",
        "--policy",
        "low-node-utilization",
    ]);
    assert!(report.contains("closes Mon 06:00 (in 30m)"), "{report}");
    assert!(!report.contains("drains"), "{report}");
}

/// `true` when `text` holds an RFC 3339 instant (`...T09:30:00Z`, `...T10:30:00+01:00`).
fn has_an_instant(text: &str) -> bool {
    text.match_indices('T').any(|(at, _)| {
        let time = text.get(at + 1..at + 9).unwrap_or_default();
        let date = text.get(at.saturating_sub(3)..at).unwrap_or_default();
        time.len() == 8
            && time.as_bytes()[2] == b':'
            && time.as_bytes()[5] == b':'
            && date.starts_with('-')
            && date[1..].bytes().all(|b| b.is_ascii_digit())
    })
}

/// The demo's zones run on two clocks (UTC and Europe/Berlin): each output shows every time in one
/// time zone, UTC unless `--time-zone` names another, said once at the top; the timeline's times
/// then read in order.
#[test]
fn every_output_shows_its_times_in_one_time_zone_stated_once() {
    let demo = demo();
    let berlin = ["--time-zone", "Europe/Berlin"];
    for (extra, stated, yarn_b_opens) in [
        (&[][..], ", times in UTC\n", "opens Mon 18:00 (in 8h30m)"),
        (
            &berlin[..],
            ", times in Europe/Berlin (CET)\n",
            "opens Mon 19:00 (in 8h30m)",
        ),
    ] {
        let with = |command: &[&str]| {
            let mut args = command.to_vec();
            args.extend(["--cluster", path(&demo), "--now", DEMO_NOW]);
            args.extend(extra);
            stdout(&args)
        };
        for output in [
            with(&["timeline"]),
            with(&["timeline", "-o", "wide"]),
            with(&["report"]),
            with(&["report", "-o", "wide"]),
            with(&["explain", "pod", "ml/resnet-train-worker-3"]),
        ] {
            let (header, body) = output.split_at(output.find('\n').unwrap() + 1);
            assert!(header.ends_with(stated), "{header}");
            assert!(!has_an_instant(body), "{output}");
            // No time of day names its zone again (`09:32 UTC`).
            for zone in [" UTC", " CET", " CEST"] {
                let after_a_time = body
                    .match_indices(zone)
                    .any(|(at, _)| body[..at].ends_with(|c: char| c.is_ascii_digit()));
                assert!(!after_a_time, "{zone}: {output}");
            }
        }
        assert!(with(&["report"]).contains(yarn_b_opens), "{stated}");
        // WHEN reads in order: one clock for all the zones' events.
        let timeline = with(&["timeline"]);
        let section = &timeline[timeline.find("TIMELINE\n").unwrap()..];
        let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
        let minutes: Vec<usize> = section
            .lines()
            .skip(2)
            .take_while(|l| !l.is_empty())
            .filter_map(|l| {
                let day = days.iter().position(|d| l.starts_with(d))?;
                let (h, m) = (
                    l.get(4..6)?.parse::<usize>().ok()?,
                    l.get(7..9)?.parse::<usize>().ok()?,
                );
                Some(day * 1440 + h * 60 + m)
            })
            .collect();
        assert!(minutes.len() > 5, "{timeline}");
        assert!(minutes.is_sorted(), "{timeline}");
    }
}
