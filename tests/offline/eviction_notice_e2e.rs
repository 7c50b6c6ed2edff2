//! Notice before eviction, end to end through the real binary on a saved cluster
//! (`tests/fixtures/drains/eviction-notice.yaml`): a zone with `evictionNotice: 10m`, draining, with a
//! pod told long ago, one told five minutes ago and one not told yet. `tidal report`, `explain` and
//! `timeline` evict each no sooner than ten minutes after its notice, and say when.

use std::{path::Path, process::Command};

use serde_json::Value;

/// Monday 09:45: the zone has been draining since 09:30 and closes at 10:00.
const NOW: &str = "2026-11-23T09:45:00Z";

fn tidal(args: &[&str], output: &str) -> Vec<u8> {
    let cluster =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/drains/eviction-notice.yaml");
    let run = Command::new(env!("CARGO_BIN_EXE_tidal"))
        .args(args)
        .arg("-f")
        .arg(&cluster)
        .args(["--now", NOW, "-o", output])
        .output()
        .expect("run tidal");
    assert!(run.status.success(), "{args:?}: {run:?}");
    run.stdout
}

fn tidal_json(args: &[&str]) -> Value {
    serde_json::from_slice(&tidal(args, "json")).expect("JSON")
}

#[test]
fn the_report_evicts_only_the_pod_whose_notice_has_run_and_says_when_the_others_go() {
    let report = tidal_json(&["report"]);
    let evicted: Vec<&str> = report["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(evicted, ["etl-early"], "{report}");
    let detail = |name: &str| -> String {
        let skip = report["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name} not skipped: {report}"));
        assert_eq!(skip["gate"], "notice", "{skip}");
        skip["detail"].as_str().unwrap().to_owned()
    };
    assert!(
        detail("etl-late").contains(
            "told at 2026-11-23T09:40:00Z that it goes, with 10m of notice: evicted from \
             2026-11-23T09:50:00Z on"
        ),
        "{}",
        detail("etl-late")
    );
    assert!(
        detail("etl-new").contains("has not been told yet"),
        "{}",
        detail("etl-new")
    );
    let zone = &report["zones"][0];
    assert_eq!(
        zone["notice"],
        serde_json::json!({"notice": "10m", "told": 2, "untold": 1, "tellsFrom": NOW}),
        "{zone}"
    );
    // Told now, etl-new goes at 09:55 and is gone 30 s after its request (0.1 s): the close keeps
    // its margin.
    let drain = &zone["drain"];
    assert_eq!(
        drain["expectedEmptyAt"], "2026-11-23T09:55:30.1Z",
        "{drain}"
    );
    assert_eq!(drain["atRisk"], false, "{drain}");
    let table = String::from_utf8(tidal(&["report"], "table")).unwrap();
    assert!(
        table.contains(
            "nightly notice: 10m before each eviction (evictionNotice): 2 pods told, 1 pod told now"
        ),
        "{table}"
    );
}

#[test]
fn explain_says_the_pod_waits_for_its_notice() {
    let explained = tidal_json(&["explain", "pod", "batch/etl-late"]);
    let verdict = &explained["policies"][0];
    assert_eq!(verdict["gate"], "notice", "{explained}");
    assert!(
        verdict["sentence"]
            .as_str()
            .unwrap()
            .contains("evicted from Mon 09:50 on"),
        "{explained}"
    );
    let goes = tidal_json(&["explain", "pod", "batch/etl-early"]);
    assert_eq!(goes["policies"][0]["outcome"], "evict", "{goes}");
}

#[test]
fn the_timeline_tells_the_untold_pod_and_evicts_each_once_its_notice_has_run() {
    let timeline = tidal_json(&["timeline"]);
    let events = timeline["events"].as_array().unwrap();
    let told: Vec<&Value> = events.iter().filter(|e| e["event"] == "notified").collect();
    assert_eq!(told.len(), 1, "{timeline}");
    assert_eq!(told[0]["at"], NOW);
    assert_eq!(
        told[0]["detail"],
        "1 pod told that a drain evicts it from 2026-11-23T09:55:00Z on"
    );
    let rounds: Vec<(&str, Vec<&str>)> = events
        .iter()
        .filter(|e| e["event"] == "round")
        .map(|e| {
            let pods = e["evictions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["name"].as_str().unwrap())
                .collect();
            (e["at"].as_str().unwrap(), pods)
        })
        .collect();
    assert_eq!(
        rounds,
        [
            (NOW, vec!["etl-early"]),
            ("2026-11-23T09:50:00Z", vec!["etl-late"]),
            ("2026-11-23T09:55:00Z", vec!["etl-new"]),
        ],
        "{timeline}"
    );
    let table = String::from_utf8(tidal(&["timeline"], "table")).unwrap();
    assert!(
        table.contains("gives notice          1 pod told that a drain evicts it from Mon 09:55 on"),
        "{table}"
    );
}
