//! `tidal timeline` end to end on the README's demo cluster, through the real binary: the drain start,
//! the pacing of rounds by `evictPeriod`, the budget per round, and the report's drain start and pods
//! waiting for the next round.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::Value;
use tempfile::NamedTempFile;

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

    // yarn-a: evictPeriod 2m; etl-nightly (4 pods, maxUnavailable 40%) loses 2, then 40% of the 2
    // left (1), then the last one; the misplaced invoice-export replica goes in round 1.
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
                vec!["analytics/etl-nightly-5d9c7b8f4-7ctzq".to_owned()]
            ),
            (
                "2026-11-23T09:34:00Z".to_owned(),
                vec!["analytics/etl-nightly-5d9c7b8f4-dn5wl".to_owned()]
            ),
        ]
    );
    // yarn-b: evictPeriod 5m; hpo-sweep (maxUnavailable 1) loses one trial per round; resnet-train keeps
    // its minAvailable 3, so after worker-2 the rest stay until the zone opens.
    assert_eq!(
        rounds(&timeline, "yarn-b"),
        [
            (
                "2026-11-23T09:30:00Z".to_owned(),
                vec![
                    "ml/hpo-sweep-trial-1".to_owned(),
                    "ml/resnet-train-worker-2".to_owned(),
                ]
            ),
            (
                "2026-11-23T09:35:00Z".to_owned(),
                vec!["ml/hpo-sweep-trial-0".to_owned()]
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
    assert!(
        !events(&timeline)
            .iter()
            .any(|e| e["event"] == "drainStarts" && e["zone"] == "yarn-a"),
        "yarn-a has no drainBefore"
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
        "round 1 evicts",
        "waits for Mon 10:35 CET",
        "Tue 06:40 CET",
        "starts draining",
        "Tue 07:00 CET",
        "yarn-a: 3 rounds, 5 evictions",
    ] {
        assert!(
            table.contains(expected),
            "table lacks {expected:?}:\n{table}"
        );
    }
    assert!(!table.contains(":01 "), "{table}");
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
        table.contains("drains Mon 06:40 CET (in 10m), closes 07:00"),
        "{table}"
    );
    assert!(table.contains("closes Mon 06:00 UTC (in 30m)"), "{table}");

    // The first yarn-b round is at the drain start, and takes one pod of each job.
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
    assert_eq!(first.1.len(), 2, "{first:?}");
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
        [
            (
                "hpo-sweep-trial-1".to_owned(),
                "2026-11-23T09:33:00Z".to_owned()
            ),
            (
                "resnet-train-worker-2".to_owned(),
                "2026-11-23T09:33:00Z".to_owned()
            ),
        ]
    );
    let table = stdout(&["report", "--cluster", path(file.path()), "--now", DEMO_NOW]);
    assert!(table.contains("WAITING FOR THE NEXT ROUND (2)"), "{table}");
    assert!(table.contains("Mon 10:33 CET (in 3m)"), "{table}");
    assert!(table.contains("2 waiting for the next round"), "{table}");

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
    assert_eq!(at, ["2026-11-23T09:33:00Z", "2026-11-23T09:38:00Z"]);
}

#[test]
fn timeline_flags_it_cannot_honour_are_refused() {
    let demo = demo();
    for extra in [&["--span", "169h"][..], &["--span", "0s"]] {
        let mut args = vec!["timeline", "--cluster", path(&demo), "--now", DEMO_NOW];
        args.extend(extra);
        let output = run(&args);
        assert!(!output.status.success(), "{extra:?} accepted");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("error"), "{stderr}");
    }
    // `--help` offers markdown for the report and the timeline alike: the timeline's is its table in
    // a code block.
    let markdown = stdout(&[
        "timeline",
        "--cluster",
        path(&demo),
        "--now",
        DEMO_NOW,
        "-o",
        "markdown",
    ]);
    let table = stdout(&["timeline", "--cluster", path(&demo), "--now", DEMO_NOW]);
    assert_eq!(markdown, format!("```\n{table}```\n"));
}

#[test]
fn the_readme_sample_is_what_the_timeline_prints() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let command =
        format!("$ tidal timeline --cluster examples/demo-cluster.yaml --now {DEMO_NOW}\n");
    let start = readme
        .find(&command)
        .expect("the README shows the timeline")
        + command.len();
    let sample = &readme[start..start + readme[start..].find("```").expect("end of the sample")];
    let demo = demo();
    let printed = stdout(&["timeline", "--cluster", path(&demo), "--now", DEMO_NOW]);
    assert_eq!(
        sample, printed,
        "README.md's timeline sample is stale: paste the output of the command above it"
    );
}
