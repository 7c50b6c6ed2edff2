//! Pods that end by themselves before their zone's close, end to end through the real binary on a saved
//! cluster (`tests/fixtures/drains/pods-that-end.yaml`): `tidal report`, `tidal explain pod` and
//! `tidal timeline` leave the pod whose deadline ends it before the close to finish, and evict the one
//! whose deadline is the close and the one that outstayed the run time it declared.

use std::{path::Path, process::Command};

use serde_json::Value;

/// Monday 09:45: the zone has been draining since 09:30 and closes at 10:00.
const NOW: &str = "2026-11-23T09:45:00Z";

fn tidal_json(args: &[&str]) -> Value {
    let cluster =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/drains/pods-that-end.yaml");
    let output = Command::new(env!("CARGO_BIN_EXE_tidal"))
        .args(args)
        .arg("-f")
        .arg(&cluster)
        .args(["--now", NOW, "-o", "json"])
        .output()
        .expect("run tidal");
    assert!(output.status.success(), "{args:?}: {output:?}");
    serde_json::from_slice(&output.stdout).expect("JSON")
}

fn names(rows: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = rows
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| row["name"].as_str().expect("name"))
        .collect();
    names.sort_unstable();
    names
}

#[test]
fn the_report_leaves_a_pod_whose_deadline_ends_it_before_the_close_to_finish() {
    let report = tidal_json(&["report"]);
    assert_eq!(
        names(&report["evictions"]),
        ["model-eval", "nightly-export"],
        "{report}"
    );
    assert_eq!(names(&report["skipped"]), ["report-build"], "{report}");
    // Each eviction throws away the work since its pod's start at 08:00: 1h 45m.
    for eviction in report["evictions"].as_array().unwrap() {
        assert_eq!(eviction["workLostSeconds"], 6_300, "{eviction}");
    }
    let skipped = &report["skipped"][0];
    assert_eq!(skipped["gate"], "finishes", "{skipped}");
    assert!(
        skipped["detail"].as_str().unwrap().starts_with(
            "ends by itself at 2026-11-23T09:50:00Z (activeDeadlineSeconds 6600 from its start at \
             2026-11-23T08:00:00Z), before the close at 2026-11-23T10:00:00Z"
        ),
        "{skipped}"
    );
    // The drain counts its end: the zone is empty when it ends, not when the evictions are done.
    let drain = &report["zones"][0]["drain"];
    assert_eq!(drain["expectedEmptyAt"], "2026-11-23T09:50:00Z", "{drain}");
    assert_eq!(drain["atRisk"], false, "{drain}");
    assert!(
        drain["summary"]
            .as_str()
            .unwrap()
            .contains("1 pod left to finish, ending by itself before the close"),
        "{drain}"
    );
}

#[test]
fn explain_says_why_the_pod_stays_and_why_the_others_go() {
    let stays = tidal_json(&["explain", "pod", "batch/report-build"]);
    let verdict = &stays["policies"][0];
    assert_eq!(verdict["gate"], "finishes", "{stays}");
    assert!(
        verdict["sentence"]
            .as_str()
            .unwrap()
            .contains("ends by itself at Mon 09:50 (activeDeadlineSeconds 6600"),
        "{stays}"
    );
    for evicted in ["batch/nightly-export", "batch/model-eval"] {
        let goes = tidal_json(&["explain", "pod", evicted]);
        assert_eq!(goes["policies"][0]["outcome"], "evict", "{goes}");
    }
}

#[test]
fn the_timeline_shows_the_pod_ending_by_itself_and_the_zone_empty_then() {
    let timeline = tidal_json(&["timeline"]);
    let events = timeline["events"].as_array().unwrap();
    let ended: Vec<&Value> = events.iter().filter(|e| e["event"] == "finishes").collect();
    assert_eq!(ended.len(), 1, "{timeline}");
    assert_eq!(ended[0]["pod"], "batch/report-build");
    assert_eq!(ended[0]["at"], "2026-11-23T09:50:00Z");
    let evicted: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "round")
        .flat_map(|e| e["evictions"].as_array().unwrap())
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(evicted, ["model-eval", "nightly-export"], "{timeline}");
    let drain = &timeline["drains"][0];
    assert_eq!(drain["expectedEmptyAt"], "2026-11-23T09:50:00Z", "{drain}");
    assert_eq!(drain["atClose"], 0, "{drain}");
}
