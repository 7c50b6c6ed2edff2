//! Why a plan is what it is, end to end on the README's demo cluster through the real binary:
//! `tidal explain pod` (a pod evicted now, one its job's budget holds until the zone's next round, one
//! a gate stops, one no strategy proposes and what would stop it if one did, names that are not pods)
//! and the report's summary of what each strategy saw.

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::Value;

/// Monday, both zones closed: the instant the README runs the demo at.
const DEMO_NOW: &str = "2026-11-23T09:30:00Z";

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo-cluster.yaml")
}

fn explain(pod: &str, extra: &[&str]) -> Output {
    let demo = demo();
    Command::new(env!("CARGO_BIN_EXE_tidal"))
        .args(["explain", "pod", pod, "-f"])
        .arg(&demo)
        .args(["--now", DEMO_NOW])
        .args(extra)
        .output()
        .expect("run tidal")
}

/// The one policy's verdict, as JSON.
fn verdict(pod: &str) -> Value {
    let output = explain(pod, &["-o", "json"]);
    assert!(output.status.success(), "{pod}: {output:?}");
    let json: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(json["pod"], pod, "{json}");
    assert_eq!(json["now"], DEMO_NOW, "{json}");
    let policies = json["policies"].as_array().expect("policies");
    assert_eq!(policies.len(), 1, "{json}");
    assert_eq!(policies[0]["policy"], "revocable-zones", "{json}");
    policies[0].clone()
}

fn sentence(verdict: &Value) -> &str {
    verdict["sentence"].as_str().expect("a sentence")
}

#[test]
fn an_evicted_pod_names_the_strategy_and_its_reason() {
    let v = verdict("analytics/etl-nightly-5d9c7b8f4-s4hvk");
    assert_eq!(v["outcome"], "evict", "{v}");
    assert_eq!(v["strategy"], "tdm", "{v}");
    assert!(
        sentence(&v).contains(
            "would evict it now (DryRun: planned, never sent), for tdm: zone yarn-a closed"
        ),
        "{v}"
    );
}

#[test]
fn a_budget_held_pod_waits_for_the_zone_s_next_round() {
    let v = verdict("analytics/etl-nightly-5d9c7b8f4-7ctzq");
    // A later round takes it: the report counts it as waiting, and so does explain.
    assert_eq!(v["outcome"], "waiting", "{v}");
    assert_eq!(v["gate"], "budget", "{v}");
    // yarn-a's round starts now; evictPeriod 2m puts the next one at 09:32.
    assert_eq!(v["nextRound"], "2026-11-23T09:32:00Z", "{v}");
    let s = sentence(&v);
    assert!(s.contains("its job's budget holds it this round"), "{s}");
    assert!(
        s.contains("waits for a later round: zone yarn-a's next round (evictPeriod 2m0s), Mon 09:32 (in 2m)"),
        "{s}"
    );
    // The table says the same, in a sentence per policy.
    let output = explain("analytics/etl-nightly-5d9c7b8f4-7ctzq", &[]);
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.starts_with(
            "pod analytics/etl-nightly-5d9c7b8f4-7ctzq on yarn-a-1 at 2026-11-23T09:30:00Z, times in UTC\n"
        ),
        "{text}"
    );
    // Wrapped between words at 100 columns: the same words, no line longer.
    let body = &text[text.find("\n- ").expect(&text) + 1..];
    assert_eq!(
        body.split_whitespace().collect::<Vec<_>>(),
        format!("- {s}").split_whitespace().collect::<Vec<_>>()
    );
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    assert!(
        text.contains(" analytics/etl-nightly-5d9c7b8f4: "),
        "the name whole: {text}"
    );
}

#[test]
fn a_gate_that_stops_a_pod_is_named_with_its_detail() {
    let v = verdict("ml/resnet-train-worker-3");
    assert_eq!(v["outcome"], "skipped", "{v}");
    assert_eq!(v["gate"], "cooldown", "{v}");
    assert!(v.get("nextRound").is_none(), "{v}");
    assert!(
        sentence(&v)
            .contains("but gate cooldown stops it: cooldown 30m0s since scheduled at Mon 09:12:40"),
        "{v}"
    );
}

#[test]
fn a_pod_no_strategy_proposes_says_what_would_stop_it() {
    let v = verdict("monitoring/node-exporter-8kq2v");
    assert_eq!(v["outcome"], "notProposed", "{v}");
    let s = sentence(&v);
    assert!(
        s.contains("none of its strategies (tdm) proposes it"),
        "{s}"
    );
    assert!(
        s.contains("namespace monitoring is outside the policy's namespaces"),
        "{s}"
    );
    assert!(s.contains("gate protected: system-critical"), "{s}");
    // Nothing in its way but the strategies: said as such.
    let v = verdict("shop/web-7c9f8d6b54-4xj9p");
    assert!(
        sentence(&v).ends_with("Were one to, no gate would stop it."),
        "{v}"
    );
    // A finished pod is said to be finished.
    let v = verdict("analytics/etl-compaction-29413770-q8w2n");
    assert!(sentence(&v).contains("It has finished (Succeeded)"), "{v}");
}

#[test]
fn names_that_are_not_pods_are_refused_with_a_hint() {
    let output = explain("shop/web-7c9f8d6b54-4xj9q", &[]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "no pod shop/web-7c9f8d6b54-4xj9q in the input; did you mean shop/web-7c9f8d6b54-4xj9p?"
        ),
        "{stderr}"
    );
    // A name alone is in `default`, as kubectl's; the pod is found where it is.
    let output = explain("web-7c9f8d6b54-4xj9p", &[]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "no pod default/web-7c9f8d6b54-4xj9p in the input; it is in shop/web-7c9f8d6b54-4xj9p \
             (-n NAMESPACE)"
        ),
        "{stderr}"
    );
}

/// kubectl's ways of naming a pod all name the same one: `pod NAME -n NS`, `pod/NAME -n NS`,
/// `po/NS/NAME`; a namespace given twice, differently, is refused.
#[test]
fn explain_takes_a_pod_as_kubectl_does() {
    let demo = demo();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tidal"))
            .arg("explain")
            .args(args)
            .arg("-f")
            .arg(&demo)
            .args(["--now", DEMO_NOW, "-o", "json"])
            .output()
            .expect("run tidal")
    };
    let pod = "etl-nightly-5d9c7b8f4-s4hvk";
    let expected = verdict(&format!("analytics/{pod}"));
    for args in [
        vec!["pod", pod, "-n", "analytics"],
        vec!["pod", pod, "--namespace=analytics"],
        vec!["pod/etl-nightly-5d9c7b8f4-s4hvk", "-n", "analytics"],
        vec!["po/analytics/etl-nightly-5d9c7b8f4-s4hvk"],
        vec!["pods", "analytics/etl-nightly-5d9c7b8f4-s4hvk", "-v"],
    ] {
        let output = run(&args);
        assert!(output.status.success(), "{args:?}: {output:?}");
        let json: Value = serde_json::from_slice(&output.stdout).expect("JSON");
        assert_eq!(json["pod"], format!("analytics/{pod}"), "{args:?}");
        assert_eq!(json["policies"][0], expected, "{args:?}");
    }
    let output = run(&["pod", "analytics/x", "-n", "shop"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("-n says \"shop\": give one of them"),
        "{stderr}"
    );
    let output = run(&["node", "yarn-a-1"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("tidal explains pods"), "{stderr}");
}

#[test]
fn the_report_says_what_each_strategy_saw_and_why_nothing_more_moved() {
    let demo = demo();
    let lnu = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/lowNodeUtilization.yaml");
    let run = |format: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_tidal"))
            .args(["report", "-f"])
            .arg(&demo)
            .arg("-f")
            .arg(&lnu)
            .args(["--now", DEMO_NOW, "-o", format])
            .output()
            .expect("run tidal");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let json: Value = serde_json::from_str(&run("json")).unwrap();
    let lines = json["strategies"].as_array().expect("strategies");
    let line = |policy: &str| {
        lines
            .iter()
            .find(|l| l["policy"] == policy)
            .unwrap_or_else(|| panic!("{policy}: {json}"))
    };
    let tdm = line("revocable-zones");
    assert_eq!(tdm["strategy"], "tdm");
    assert_eq!(tdm["offered"], 11, "{tdm}");
    assert_eq!(tdm["evicted"], 4, "{tdm}");
    assert_eq!(
        tdm["skipped"],
        serde_json::json!({"budget": 3, "cooldown": 4})
    );
    let lnu = line("low-node-utilization");
    assert_eq!(
        (lnu["offered"].as_u64(), lnu["evicted"].as_u64()),
        (Some(1), Some(1)),
        "{lnu}"
    );
    let saw = lnu["saw"]
        .as_str()
        .expect("lowNodeUtilization says what it saw");
    for part in [
        "7 node(s): 3 underutilized (at or below cpu 20%, memory 20%, pods 20%), 4 overutilized (above cpu 50%, memory 50%, pods 50%), 0 in between",
        "15 pod(s) weighed on the overutilized nodes, 1 offered for eviction (4 protected, 10 fit no destination)",
        "no destination admits these pods: all 3 underutilized node(s) are excluded by the pod's node selector or required affinity",
    ] {
        assert!(saw.contains(part), "{part}\n{saw}");
    }
    // The table ends with the same, one entry per policy and strategy, wrapped between words.
    let table = run("table");
    let start = table.find("WHAT EACH STRATEGY SAW\n").expect(&table);
    let section = &table[start..table[start..].find("\n\n").unwrap() + start];
    let words = |text: &str| {
        text.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let expected = format!(
        "WHAT EACH STRATEGY SAW low-node-utilization lowNodeUtilization: 1 offered, 1 planned. It \
         saw {saw} revocable-zones tdm: 11 offered, 4 planned (held: budget 3, cooldown 4)"
    );
    assert_eq!(words(section), words(&expected), "{section}");
    assert!(
        section.lines().all(|l| l.chars().count() <= 100),
        "{section}"
    );
}

/// A preemptable pod not on a node yet that says it runs 11 hours: yarn-a's next window (20:00 to
/// 06:00 UTC) is 10 hours, too short, while yarn-b's (19:00 to 07:00 Berlin, 18:00 to 06:00 UTC) is
/// 12. Explain says which zone admission keeps it off, and why, in the output's time zone.
#[test]
fn a_pending_pod_is_told_which_zone_closes_before_it_could_finish() {
    let demo = std::fs::read_to_string(demo()).unwrap();
    let pending = r#"---
apiVersion: v1
kind: Pod
metadata:
  name: render-long
  namespace: analytics
  uid: 7d0b8c0e-2a51-4c55-9d6c-1f0d4e1b5a11
  creationTimestamp: "2026-11-23T09:29:00Z"
  annotations:
    volcano.sh/preemptable: "true"
    tidal.dev/expected-run-time: 11h
spec:
  containers:
  - name: render
    image: render:1
status:
  phase: Pending
"#;
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.yaml");
    std::fs::write(&cluster, format!("{demo}{pending}")).unwrap();
    let run = |extra: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_tidal"))
            .args(["explain", "pod", "analytics/render-long", "-f"])
            .arg(&cluster)
            .args(["--now", DEMO_NOW])
            .args(extra)
            .output()
            .expect("run tidal");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let json: Value = serde_json::from_str(&run(&["-o", "json"])).unwrap();
    let admission = json["admission"].as_array().expect("admission sentences");
    assert_eq!(admission.len(), 1, "{json:#}");
    let said = admission[0].as_str().unwrap();
    for part in [
        "Admission keeps it off revocable zone yarn-a: it needs 11h0m0s (expected-run-time 11h0m0s)",
        "opens at Mon 20:00 and closes at Tue 06:00",
        "10h0m0s later",
        "at least 3m0s before its close",
    ] {
        assert!(said.contains(part), "{part:?} in {said}");
    }
    let text = run(&[]);
    assert!(
        text.contains("- Admission keeps it off revocable zone yarn-a"),
        "{text}"
    );
    assert!(!text.contains("zone yarn-b:"), "{text}");
}
