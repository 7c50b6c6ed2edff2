//! End to end: `tidal run` against the fake API server, through the same startup path as the binary.

mod support;

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use futures::future::BoxFuture;
use serde_json::json;
use support::*;
use tidal::controller::{CycleContext, CycleHook};

/// Records what each leader cycle showed it: (zone, evicting now) pairs.
#[derive(Default)]
struct Recorder(Mutex<Vec<Vec<(String, bool)>>>);

impl CycleHook for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }

    fn run<'a>(&'a self, cycle: &'a CycleContext<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let zones = cycle
                .zones
                .values()
                .map(|z| (z.name.clone(), z.state.as_ref().is_ok_and(|s| s.evicting())))
                .collect();
            assert!(cycle.leader.is_leader());
            assert!(cycle.snapshot.node("rev-1").is_some());
            self.0.lock().unwrap().push(zones);
        })
    }
}

const NS: &str = "batch";

/// The cluster most tests start from: one revocable node in a closed zone, one normal node, a policy.
fn base(server: &FakeApiServer, evict_period: &str, mode: &str) {
    server.apply(node("rev-1", Some("rz")));
    server.apply(node("std-1", None));
    server.apply(zone("rz", &closed_window(), evict_period));
    server.apply(policy("tdm", mode, "200ms"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_zone_is_drained_within_budget_cooldown_and_pdb() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeApiServer::start().await;
    // The accepted evictions stay invisible (as if the watch lagged): only tidal's in-flight marks
    // keep later cycles from evicting the same pods again.
    server.set_eviction_effect(EvictionEffect::Keep);
    base(&server, "1h", "Evict");
    // A job of three with maxUnavailable 1: one goes this round.
    for i in 0..3 {
        server.apply(annotated(
            owned_by(preemptable(pod(NS, &format!("job-{i}"), "rev-1")), "job"),
            "volcano.sh/jdb-max-unavailable",
            "1",
        ));
    }
    server.apply(preemptable(pod(NS, "solo", "rev-1")));
    server.apply(annotated(
        just_scheduled(preemptable(pod(NS, "cooling", "rev-1"))),
        "volcano.sh/cooldown-time",
        "1h",
    ));
    server.apply(labelled(
        preemptable(pod(NS, "guarded", "rev-1")),
        "app",
        "db",
    ));
    server.apply(pdb(NS, "db", "db", 1));
    // Not preemptable at all, on a revocable node: a placement violation, proposed every cycle.
    server.apply(pod(NS, "misplaced", "rev-1"));
    server.apply(preemptable(pod(NS, "elsewhere", "std-1")));
    // A zone whose window cannot be read: reported, never acted on.
    server.apply(zone("broken", "25:00-26:00", "1m"));

    let hook = Arc::new(Recorder::default());
    let controller = Controller::start_with_hooks(
        &server,
        dir.path(),
        "a",
        &["--leader-elect", "false"],
        vec![hook.clone()],
    );

    let status = eventually("the policy status after the first cycle", || {
        let status = policy_status(&server, "tdm");
        (status["evicted"] == json!(3)).then_some(status)
    })
    .await;
    assert_eq!(status["planned"], json!(4), "{status}");
    let skipped: BTreeMap<String, u64> = serde_json::from_value(status["skipped"].clone()).unwrap();
    assert_eq!(skipped.get("pdb"), Some(&1), "{status}");
    assert_eq!(skipped.get("cooldown"), Some(&1), "{status}");
    assert_eq!(skipped.get("budget"), Some(&2), "{status}");
    assert_eq!(status["conditions"][0]["type"], "Ready");
    assert_eq!(status["conditions"][0]["status"], "True");

    let evictions = server.evictions();
    let jobs_evicted: Vec<String> = (0..3)
        .map(|i| format!("job-{i}"))
        .filter(|name| !accepted(&evictions, name).is_empty())
        .collect();
    assert_eq!(jobs_evicted.len(), 1, "budget allows one: {jobs_evicted:?}");
    assert_eq!(accepted(&evictions, "solo").len(), 1);
    assert_eq!(accepted(&evictions, "misplaced").len(), 1);
    assert_eq!(
        real_attempts(&evictions, "cooling"),
        0,
        "cooldown: never sent"
    );
    assert_eq!(real_attempts(&evictions, "elsewhere"), 0, "not in a zone");
    let guarded: Vec<_> = evictions.iter().filter(|e| e.name == "guarded").collect();
    assert_eq!(guarded.len(), 1, "429 is not retried within the cycle");
    assert_eq!(guarded[0].code, 429);

    // The body on the wire is a policy/v1 Eviction with the planned uid as precondition.
    let solo_uid = server.get("pods", NS, "solo").unwrap()["metadata"]["uid"].clone();
    assert_eq!(
        accepted(&evictions, "solo")[0].body,
        json!({
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": "solo", "namespace": NS},
            "deleteOptions": {"preconditions": {"uid": solo_uid}},
        })
    );

    // Later cycles: the zone's evictPeriod (1h) has not passed, and the violation is in flight.
    controller.wait_cycles(3.0).await;
    let evictions = server.evictions();
    for pod in ["misplaced", "solo", "job-0", "job-1", "job-2"] {
        assert!(
            accepted(&evictions, pod).len() <= 1,
            "{pod} evicted twice: {evictions:#?}"
        );
    }
    assert_eq!(accepted(&evictions, "misplaced").len(), 1);
    assert_eq!(
        evictions.iter().filter(|e| e.name == "guarded").count(),
        1,
        "no new round for the PDB-protected pod within evictPeriod"
    );

    // Zone status, including the round that makes evictPeriod hold across cycles and restarts.
    let zone = server.get("revocablezones", "", "rz").unwrap();
    assert_eq!(zone["status"]["open"], json!(false), "{zone}");
    assert_eq!(zone["status"]["nodes"], json!(1));
    assert!(zone["status"]["lastEvictionRound"].is_string(), "{zone}");
    assert!(zone["status"]["nextChange"].is_string(), "{zone}");

    let broken = server.get("revocablezones", "", "broken").unwrap();
    assert_eq!(
        broken["status"]["conditions"][0]["status"],
        json!("False"),
        "{broken}"
    );
    assert_eq!(
        broken["status"]["conditions"][0]["reason"],
        json!("InvalidWindows")
    );

    // Events on the evicted pods, and a warning on the broken zone.
    let events = server.list("apis/events.k8s.io/v1", "events");
    assert!(
        events
            .iter()
            .any(|e| e["regarding"]["name"] == json!("broken")
                && e["reason"] == json!("InvalidZone")
                && e["type"] == json!("Warning")),
        "{events:#?}"
    );
    let on = |name: &str| {
        events
            .iter()
            .any(|e| e["regarding"]["name"] == json!(name) && e["reason"] == json!("Evicted"))
    };
    assert!(on("solo") && on("misplaced"), "{events:#?}");
    assert!(!on("guarded"));

    // The cycle hook (where closed-zone taints are kept) ran every cycle with the zones' states.
    let seen = hook.0.lock().unwrap().clone();
    assert!(seen.len() >= 3, "{seen:?}");
    assert!(
        seen.iter()
            .all(|zones| zones == &vec![("broken".to_owned(), false), ("rz".to_owned(), true)]),
        "{seen:?}"
    );

    // Health, readiness and metrics.
    let (code, _) = http_get(controller.health_addr, "/healthz").await.unwrap();
    assert_eq!(code, 200);
    let (code, _) = http_get(controller.health_addr, "/readyz").await.unwrap();
    assert_eq!(code, 200);
    let metrics = controller.metrics().await;
    assert_eq!(metric_sum(&metrics, "tidal_leader "), 1.0, "{metrics}");
    assert_eq!(
        metric_sum(
            &metrics,
            r#"tidal_evictions_total{policy="tdm",strategy="tdm",result="evicted",zone="rz"}"#
        ),
        3.0,
        "{metrics}"
    );
    assert_eq!(
        metric_sum(&metrics, r#"tidal_skips_total{policy="tdm",gate="pdb"}"#),
        1.0
    );
    assert_eq!(
        metric_sum(&metrics, r#"tidal_cache_objects{kind="in_flight"}"#),
        3.0
    );

    controller.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_watches_and_410_lose_no_pod_and_evict_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeApiServer::start().await;
    // Accepted evictions stay invisible, so a relist that forgot tidal's in-flight marks would show.
    server.set_eviction_effect(EvictionEffect::Keep);
    // A new round every second: only the in-flight marks stand between the pods and a second eviction.
    base(&server, "1s", "Evict");
    server.apply(pod(NS, "v1", "rev-1"));
    server.apply(pod(NS, "v2", "rev-1"));
    server.apply(pod(NS, "bystander", "std-1"));
    let controller = Controller::start(&server, dir.path(), "a", &["--leader-elect", "false"]);
    eventually("v1 and v2 evicted", || {
        let e = server.evictions();
        (!accepted(&e, "v1").is_empty() && !accepted(&e, "v2").is_empty()).then_some(())
    })
    .await;

    // A dropped watch: the watcher resumes from its last resourceVersion and sees what it missed.
    server.cut_watches();
    server.apply(pod(NS, "v3", "rev-1"));
    server.delete("pods", NS, "bystander");
    eventually("v3 evicted after the watch resumed", || {
        (!accepted(&server.evictions(), "v3").is_empty()).then_some(())
    })
    .await;

    // 410 Gone: history compacted, the watchers must relist. Changes made meanwhile are not lost.
    server.expire_watches();
    server.apply(pod(NS, "v4", "rev-1"));
    server.delete("pods", NS, "v1");
    eventually("v4 evicted after the relist", || {
        (!accepted(&server.evictions(), "v4").is_empty()).then_some(())
    })
    .await;
    controller.wait_cycles(3.0).await;

    let evictions = server.evictions();
    for name in ["v1", "v2", "v3", "v4"] {
        assert_eq!(
            real_attempts(&evictions, name),
            1,
            "{name} evicted more than once: {evictions:#?}"
        );
    }
    let metrics = controller.metrics().await;
    // The cache matches the server: v1 and the bystander are gone, v2..v4 are there (and in flight).
    let server_pods = server.list("api/v1", "pods").len() as f64;
    assert_eq!(server_pods, 3.0);
    assert_eq!(
        metric_sum(&metrics, r#"tidal_cache_objects{kind="pods"}"#),
        server_pods,
        "{metrics}"
    );
    assert_eq!(
        metric_sum(&metrics, r#"tidal_cache_objects{kind="in_flight"}"#),
        3.0
    );
    assert!(
        metric_sum(&metrics, r#"tidal_watch_relists_total{kind="Pod"}"#) >= 2.0,
        "initial list and the relist after 410: {metrics}"
    );
    assert!(
        metric_sum(&metrics, "tidal_watch_errors_total") >= 1.0,
        "{metrics}"
    );
    controller.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_policy_sends_only_dry_runs_and_fills_status_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeApiServer::start().await;
    base(&server, "1m", "DryRun");
    server.apply(preemptable(pod(NS, "free", "rev-1")));
    server.apply(labelled(
        preemptable(pod(NS, "guarded", "rev-1")),
        "app",
        "db",
    ));
    server.apply(pdb(NS, "db", "db", 1));
    let controller = Controller::start(&server, dir.path(), "a", &["--leader-elect", "false"]);

    let status = eventually("the dry-run status", || {
        let status = policy_status(&server, "tdm");
        status["planned"].is_number().then_some(status)
    })
    .await;
    assert_eq!(status["planned"], json!(2), "{status}");
    assert_eq!(status["evicted"], json!(0), "{status}");
    assert_eq!(status["skipped"]["pdb"], json!(1), "{status}");
    let message = status["conditions"][0]["message"].as_str().unwrap();
    assert!(message.contains("would evict (dry run) 1"), "{message}");
    controller.wait_cycles(2.0).await;
    controller.stop().await;

    let evictions = server.evictions();
    assert!(!evictions.is_empty());
    assert!(
        evictions.iter().all(|e| e.dry_run),
        "only dry runs: {evictions:#?}"
    );
    assert!(
        evictions
            .iter()
            .all(|e| e.body["deleteOptions"]["dryRun"] == json!(["All"]))
    );
    assert!(server.get("pods", NS, "free").is_some(), "nothing deleted");
    // No round is recorded in dry-run mode: the zone stays due, the plan stays what it would do.
    let zone = server.get("revocablezones", "", "rz").unwrap();
    assert!(zone["status"]["lastEvictionRound"].is_null(), "{zone}");

    // `tidal report` against the same live cluster: one cycle, no eviction sent...
    let kubeconfig = server.kubeconfig(dir.path(), "reporter");
    let report = |verify: bool| {
        let mut argv = vec![
            "tidal".to_owned(),
            "report".into(),
            "--kubeconfig".into(),
            kubeconfig.to_str().unwrap().into(),
            "-o".into(),
            "json".into(),
        ];
        if verify {
            argv.push("--verify".into());
        }
        argv
    };
    let before = server.evictions().len();
    let plain = run_cli(report(false)).await;
    assert_eq!(server.evictions().len(), before, "report sends nothing");
    let names = |list: &serde_json::Value| -> Vec<String> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&plain["evictions"]), vec!["free", "guarded"]);
    // ...and with --verify, a server-side dry run per eviction moves the PDB refusal to skipped.
    let verified = run_cli(report(true)).await;
    assert_eq!(names(&verified["evictions"]), vec!["free"]);
    let skipped = verified["skipped"].as_array().unwrap();
    let guarded = skipped.iter().find(|s| s["name"] == "guarded").unwrap();
    assert_eq!(guarded["gate"], "pdb", "{guarded}");
    let sent: Vec<_> = server.evictions().into_iter().skip(before).collect();
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().all(|e| e.dry_run && e.user == "reporter"));
}

/// Runs the CLI's live path (what `main` does for commands that talk to a cluster) and parses JSON.
async fn run_cli(argv: Vec<String>) -> serde_json::Value {
    use clap::Parser;
    let cli = tidal::cli::Cli::try_parse_from(argv).unwrap();
    let out = tidal::cli::run_live(&cli.command, Default::default())
        .await
        .unwrap()
        .unwrap();
    serde_json::from_str(&out).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_edit_takes_effect_without_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeApiServer::start().await;
    base(&server, "1h", "Evict");
    server.update("deschedulingpolicies", "", "tdm", |p| {
        p["spec"]["namespaces"] = json!({"include": ["other"]});
        // A long interval: only the edit itself can make the policy run again soon.
        p["spec"]["interval"] = json!("1h");
    });
    server.apply(pod(NS, "misplaced", "rev-1"));
    let controller = Controller::start(&server, dir.path(), "a", &["--leader-elect", "false"]);
    eventually("a first cycle", || {
        policy_status(&server, "tdm")["planned"]
            .is_number()
            .then_some(())
    })
    .await;
    assert_eq!(policy_status(&server, "tdm")["planned"], json!(0));
    assert!(server.evictions().is_empty());

    server.update("deschedulingpolicies", "", "tdm", |p| {
        p["spec"]["namespaces"] = json!({"include": [NS]});
    });
    eventually("the edited policy evicts", || {
        (!accepted(&server.evictions(), "misplaced").is_empty()).then_some(())
    })
    .await;
    // The cycle that evicted writes its status (and counts itself) once its evictions are done.
    let status = eventually("the status of the edited policy", || {
        let status = policy_status(&server, "tdm");
        (status["evicted"] == json!(1)).then_some(status)
    })
    .await;
    assert_eq!(status["observedGeneration"], json!(3), "{status}");
    eventually_async("a cycle started by the edit", || async {
        let metrics = controller.metrics().await;
        (metric_sum(&metrics, r#"tidal_cycles_total{trigger="config"}"#) >= 1.0).then_some(())
    })
    .await;
    controller.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_errors_are_retried_within_the_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeApiServer::start().await;
    server.set_eviction_effect(EvictionEffect::Terminate);
    base(&server, "1h", "Evict");
    server.apply(pod(NS, "misplaced", "rev-1"));
    server.fail_evictions(&[500, 503]);
    let controller = Controller::start(&server, dir.path(), "a", &["--leader-elect", "false"]);
    eventually("the eviction to go through", || {
        (!accepted(&server.evictions(), "misplaced").is_empty()).then_some(())
    })
    .await;
    let attempts: Vec<u16> = server
        .evictions()
        .iter()
        .filter(|e| e.name == "misplaced")
        .map(|e| e.code)
        .collect();
    assert_eq!(attempts, vec![500, 503, 201]);
    let status = eventually("status", || {
        let s = policy_status(&server, "tdm");
        (s["evicted"] == json!(1)).then_some(s)
    })
    .await;
    assert!(status["skipped"].get("error").is_none(), "{status}");
    // The pod now terminates (deletionTimestamp): later cycles leave it alone, then it is gone.
    controller.wait_cycles(2.0).await;
    server.finish_terminations();
    controller.wait_cycles(2.0).await;
    assert_eq!(real_attempts(&server.evictions(), "misplaced"), 3);
    controller.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_with_an_unreadable_budget_is_not_evicted_and_warned_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeApiServer::start().await;
    base(&server, "1s", "Evict");
    server.apply(annotated(
        preemptable(pod(NS, "bad-budget", "rev-1")),
        "volcano.sh/jdb-max-unavailable",
        "lots",
    ));
    let controller = Controller::start(&server, dir.path(), "a", &["--leader-elect", "false"]);
    controller.wait_cycles(4.0).await;

    assert_eq!(real_attempts(&server.evictions(), "bad-budget"), 0);
    let status = policy_status(&server, "tdm");
    assert_eq!(status["skipped"]["invalid"], json!(1), "{status}");
    let events = server.list("apis/events.k8s.io/v1", "events");
    let warnings: Vec<_> = events
        .iter()
        .filter(|e| e["regarding"]["name"] == json!("bad-budget"))
        .collect();
    assert_eq!(warnings.len(), 1, "{events:#?}");
    assert_eq!(warnings[0]["type"], json!("Warning"));
    assert_eq!(warnings[0]["reason"], json!("InvalidAnnotation"));
    let note = warnings[0]["note"].as_str().unwrap();
    assert!(
        note.contains("volcano.sh/jdb-max-unavailable") && note.contains("lots"),
        "{note}"
    );
    // Once, not once per cycle: nothing else in this cluster writes events.
    let event_writes = server
        .requests()
        .iter()
        .filter(|r| r.path.contains("/events") && r.method != "GET")
        .count();
    assert_eq!(event_writes, 1);
    controller.stop().await;
}
