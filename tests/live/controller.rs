//! End to end: `tidal run` against the fake API server, through the same startup path as the binary.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use tidal::controller::evictor::Halt;

use crate::support::*;
use serde_json::json;

const NS: &str = "batch";

/// The cluster most tests start from: one revocable node in a closed zone, one normal node, a policy.
fn base(server: &FakeApiServer, evict_period: &str, mode: &str) {
    server.apply(node("rev-1").zone("rz"));
    server.apply(node("std-1"));
    server.apply(
        zone("rz")
            .window(&closed_window())
            .evict_period(evict_period),
    );
    server.apply(policy(json!({"mode": mode, "interval": "200ms"})).named("tdm"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_zone_is_drained_within_budget_cooldown_and_pdb() {
    let server = Scenario::start().await;
    // The accepted evictions stay invisible (as if the watch lagged): only tidal's in-flight marks
    // keep later cycles from evicting the same pods again.
    server.set_eviction_effect(EvictionEffect::Keep);
    base(&server, "1h", "Evict");
    // A job of three with maxUnavailable 1: one goes this round.
    for i in 0..3 {
        server.apply(
            pod(&format!("{NS}/job-{i}"), "rev-1")
                .preemptable()
                .owned_by("ReplicaSet", "job")
                .annotation("volcano.sh/jdb-max-unavailable", "1"),
        );
    }
    server.apply(pod(&format!("{NS}/solo"), "rev-1").preemptable());
    server.apply(
        pod(&format!("{NS}/cooling"), "rev-1")
            .preemptable()
            .just_scheduled()
            .annotation("volcano.sh/cooldown-time", "1h"),
    );
    server.apply(
        pod(&format!("{NS}/guarded"), "rev-1")
            .preemptable()
            .label("app", "db"),
    );
    server.apply(pdb(&format!("{NS}/db"), "db").min_available(1));
    // Not preemptable at all, on a revocable node: a placement violation, proposed every cycle.
    server.apply(pod(&format!("{NS}/misplaced"), "rev-1"));
    server.apply(pod(&format!("{NS}/elsewhere"), "std-1").preemptable());
    // A zone whose window cannot be read: reported, never acted on.
    server.apply(zone("broken").window("25:00-26:00").evict_period("1m"));

    let controller = server.controller();

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

    // Later cycles within the zone's evictPeriod (1h): no new round, so no new attempt on the
    // PDB-protected pod either.
    controller.wait_cycles(3.0).await;
    let guarded_attempts = |server: &FakeApiServer| {
        server
            .evictions()
            .iter()
            .filter(|e| e.name == "guarded")
            .count()
    };
    assert_eq!(
        guarded_attempts(&server),
        1,
        "no new round for the PDB-protected pod within evictPeriod"
    );

    // Rounds due every second from now on: the evicted pods still look running (the evictions stay
    // invisible), so only tidal's in-flight marks keep them from being evicted again.
    server.update("revocablezones", "", "rz", |z| {
        z["spec"]["evictPeriod"] = json!("1s");
    });
    eventually(
        "two more rounds (the guarded pod is tried again each time)",
        || (guarded_attempts(&server) >= 3).then_some(()),
    )
    .await;
    let evictions = server.evictions();
    for pod in ["misplaced", "solo"] {
        assert_eq!(
            accepted(&evictions, pod).len(),
            1,
            "{pod} evicted twice: {evictions:#?}"
        );
    }
    let jobs_evicted: usize = (0..3)
        .map(|i| accepted(&evictions, &format!("job-{i}")).len())
        .sum();
    assert_eq!(
        jobs_evicted, 1,
        "the job's in-flight pod still uses its budget: {evictions:#?}"
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

    // Events on the evicted pods, and a warning on the broken zone (with its uid, which
    // `kubectl describe` filters by).
    let events = server.list("apis/events.k8s.io/v1", "events");
    let broken_uid = broken["metadata"]["uid"].clone();
    assert!(
        events
            .iter()
            .any(|e| e["regarding"]["name"] == json!("broken")
                && e["regarding"]["uid"] == broken_uid
                && e["reason"] == json!("InvalidZone")
                && e["type"] == json!("Warning")),
        "{events:#?}"
    );
    let on = |name: &str| {
        events
            .iter()
            .any(|e| e["regarding"]["name"] == json!(name) && e["reason"] == json!("Descheduled"))
    };
    assert!(on("solo") && on("misplaced"), "{events:#?}");
    assert!(!on("guarded"));

    // Health, readiness and metrics.
    let (code, _) = http_get(controller.health_addr, "/healthz").await.unwrap();
    assert_eq!(code, 200);
    let (code, _) = http_get(controller.health_addr, "/readyz").await.unwrap();
    assert_eq!(code, 200);
    let metrics = controller.metrics().await;
    assert_eq!(metric_sum(&metrics, "tidal_leader "), 1.0, "{metrics}");
    // Every cycle observes its planning time beside the whole cycle's (a cycle still running has
    // observed the first and not yet the second).
    let plans = metric_sum(&metrics, "tidal_plan_duration_seconds_count");
    let cycles = metric_sum(&metrics, "tidal_cycle_duration_seconds_count");
    assert!(
        plans >= 1.0 && plans >= cycles && plans <= cycles + 1.0,
        "{metrics}"
    );
    // Per strategy of each policy, so that a slow strategy can be told from a slow cycle.
    assert!(
        metric_sum(
            &metrics,
            r#"tidal_strategy_duration_seconds_count{policy="tdm",strategy="tdm"}"#
        ) >= 1.0,
        "{metrics}"
    );
    // Per-zone state for a dashboard: rz is closed; the unreadable zone has no gauges.
    assert!(
        metrics.contains(r#"tidal_zone_open{zone="rz"} 0"#),
        "{metrics}"
    );
    assert!(metrics.contains(r#"tidal_zone_next_change_timestamp_seconds{zone="rz"}"#));
    assert!(
        !metrics.contains(r#"tidal_zone_open{zone="broken"}"#),
        "{metrics}"
    );
    assert_eq!(
        metric_sum(
            &metrics,
            r#"tidal_evictions_total{policy="tdm",strategy="tdm",result="evicted",zone="rz"}"#
        ),
        3.0,
        "{metrics}"
    );
    // Three 429s were answered; the cycle of the third may still be running (it counts at its end),
    // but the two before it have finished.
    assert!(metric_sum(&metrics, r#"tidal_skips_total{policy="tdm",gate="pdb"}"#) >= 2.0);
    assert_eq!(
        metric_sum(&metrics, r#"tidal_cache_objects{kind="in_flight"}"#),
        3.0
    );

    controller.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_watches_and_410_lose_no_pod_and_evict_nothing_twice() {
    let server = Scenario::start().await;
    // Accepted evictions stay invisible, so a relist that forgot tidal's in-flight marks would show.
    server.set_eviction_effect(EvictionEffect::Keep);
    // A new round every second: only the in-flight marks stand between the pods and a second eviction.
    base(&server, "1s", "Evict");
    server.apply(pod(&format!("{NS}/v1"), "rev-1"));
    server.apply(pod(&format!("{NS}/v2"), "rev-1"));
    server.apply(pod(&format!("{NS}/bystander"), "std-1"));
    let controller = server.controller();
    eventually("v1 and v2 evicted", || {
        let e = server.evictions();
        (!accepted(&e, "v1").is_empty() && !accepted(&e, "v2").is_empty()).then_some(())
    })
    .await;

    // A dropped watch: the watcher resumes from its last resourceVersion and sees what it missed.
    server.cut_watches();
    server.apply(pod(&format!("{NS}/v3"), "rev-1"));
    server.delete("pods", NS, "bystander");
    eventually("v3 evicted after the watch resumed", || {
        (!accepted(&server.evictions(), "v3").is_empty()).then_some(())
    })
    .await;

    // 410 Gone: history compacted, the watchers must relist. Changes made meanwhile are not lost.
    server.expire_watches();
    server.apply(pod(&format!("{NS}/v4"), "rev-1"));
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
    let server = Scenario::start().await;
    base(&server, "1m", "DryRun");
    server.apply(pod(&format!("{NS}/free"), "rev-1").preemptable());
    server.apply(
        pod(&format!("{NS}/guarded"), "rev-1")
            .preemptable()
            .label("app", "db"),
    );
    server.apply(pdb(&format!("{NS}/db"), "db").min_available(1));
    let controller = server.controller();

    let status = eventually("the dry-run status", || {
        let status = policy_status(&server, "tdm");
        status["planned"].is_number().then_some(status)
    })
    .await;
    assert_eq!(status["planned"], json!(2), "{status}");
    assert_eq!(status["evicted"], json!(0), "{status}");
    assert_eq!(status["skipped"]["pdb"], json!(1), "{status}");
    let message = status["conditions"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("dry run: planned 2, verified 1, refused 1, unverified 0"),
        "{message}"
    );
    assert_eq!(status["verified"], json!(1), "{status}");
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
    let kubeconfig = server.kubeconfig("reporter");
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
    assert_eq!(verified["evictions"][0]["verified"], json!(true));
    assert_eq!(verified["policies"][0]["verified"], json!(1));
    assert_eq!(verified["policies"][0]["unverified"], json!(0));
    assert!(plain["policies"][0].get("verified").is_none(), "{plain}");
    let skipped = verified["skipped"].as_array().unwrap();
    let guarded = skipped.iter().find(|s| s["name"] == "guarded").unwrap();
    assert_eq!(guarded["gate"], "pdb", "{guarded}");
    let sent: Vec<_> = server.evictions().into_iter().skip(before).collect();
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().all(|e| e.dry_run && e.user == "reporter"));

    // `tidal timeline` reads the same live cluster, simulates, and sends nothing either.
    let before = server.evictions().len();
    let timeline = run_cli(vec![
        "tidal".to_owned(),
        "timeline".into(),
        "--kubeconfig".into(),
        kubeconfig.to_str().unwrap().into(),
        "--span".into(),
        "10m".into(),
        "-o".into(),
        "json".into(),
    ])
    .await;
    assert_eq!(
        server.evictions().len(),
        before,
        "the timeline sends nothing"
    );
    let first = timeline["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "round")
        .unwrap_or_else(|| panic!("no round: {timeline:#}"));
    assert_eq!(names(&first["evictions"]), vec!["free", "guarded"]);
}

/// A DryRun plan of thousands is the plan: a bounded number is verified per cycle, the rest is
/// unverified (not abandoned), and an Evict policy planned alongside sends at once, its tokens
/// untouched by the dry runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_dry_run_plan_is_verified_within_its_budget_and_leaves_real_evictions_their_pace() {
    let server = Scenario::start().await;
    server.apply(node("rev-1").zone("rz"));
    server.apply(zone("rz").window(&closed_window()).evict_period("1m"));
    // Named to be planned first, so that its dry runs would take the tokens and the cycle's time if
    // they were not bounded apart from the real evictions.
    let mut dry = policy(json!({"mode": "DryRun", "interval": "1h"})).named("a-dry");
    dry["spec"]["namespaces"] = json!({"include": [NS]});
    server.apply(dry);
    let mut evict = policy(json!({"mode": "Evict", "interval": "1h"})).named("b-evict");
    evict["spec"]["namespaces"] = json!({"include": ["shop"]});
    server.apply(evict);
    const PLANNED: u64 = 2_000;
    const BUDGET: u64 = 15;
    for i in 0..PLANNED {
        server.apply(pod(&format!("{NS}/w-{i:04}"), "rev-1").preemptable());
    }
    for i in 0..3 {
        server.apply(pod(&format!("shop/s-{i}"), "rev-1").preemptable());
    }
    let budget = BUDGET.to_string();
    let controller = server.controller_configured(
        "a",
        &[
            "--leader-elect",
            "false",
            "--dry-run-verify-per-cycle",
            &budget,
        ],
        |config| {
            config.eviction.qps = 5.0;
            config.eviction.burst = 1;
        },
    );
    let status = eventually("the dry-run status", || {
        let status = policy_status(&server, "a-dry");
        status["planned"].is_number().then_some(status)
    })
    .await;
    assert_eq!(status["planned"], json!(PLANNED), "{status}");
    assert_eq!(status["evicted"], json!(0), "{status}");
    assert_eq!(status["verified"], json!(BUDGET), "{status}");
    assert_eq!(status["refused"], json!(0), "{status}");
    assert_eq!(status["unverified"], json!(PLANNED - BUDGET), "{status}");
    assert!(status["skipped"].get("abandoned").is_none(), "{status}");
    let message = status["conditions"][0]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "verified {BUDGET}, refused 0, unverified {}",
            PLANNED - BUDGET
        )),
        "{message}"
    );
    let real = eventually("the Evict policy's status", || {
        let status = policy_status(&server, "b-evict");
        status["evicted"].is_number().then_some(status)
    })
    .await;
    assert_eq!(real["evicted"], json!(3), "{real}");

    let metrics = eventually_async("metrics", || async {
        let (_, body) = http_get(controller.metrics_addr, "/metrics").await?;
        // The eviction counts, not only the planning time (which is exported before they are).
        body.contains(r#"tidal_evictions_total{policy="a-dry""#)
            .then_some(body)
    })
    .await;
    let series = |result: &str| {
        metric_sum(
            &metrics,
            &format!(
                r#"tidal_evictions_total{{policy="a-dry",strategy="tdm",result="{result}",zone="rz"}}"#
            ),
        )
    };
    assert_eq!(series("dry_run"), BUDGET as f64, "{metrics}");
    assert_eq!(series("unverified"), (PLANNED - BUDGET) as f64);
    assert_eq!(series("abandoned"), 0.0);
    controller.stop().await;

    // One cycle: exactly the budget went out as dry runs, and the real evictions did not queue
    // behind them (at 5 per second, the last dry run leaves about 3 s after the first).
    let evictions = server.evictions();
    let dry_runs: Vec<_> = evictions.iter().filter(|e| e.dry_run).collect();
    assert_eq!(dry_runs.len() as u64, BUDGET, "{evictions:#?}");
    let last_dry = dry_runs.iter().map(|e| e.request_index).max().unwrap();
    let real: Vec<_> = evictions.iter().filter(|e| !e.dry_run).collect();
    assert_eq!(real.len(), 3, "{evictions:#?}");
    assert!(
        real.iter().all(|e| e.request_index < last_dry),
        "real evictions waited for the dry runs: {evictions:#?}"
    );
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
    let server = Scenario::start().await;
    base(&server, "1h", "Evict");
    server.update("deschedulingpolicies", "", "tdm", |p| {
        p["spec"]["namespaces"] = json!({"include": ["other"]});
        // A long interval: only the edit itself can make the policy run again soon.
        p["spec"]["interval"] = json!("1h");
    });
    server.apply(pod(&format!("{NS}/misplaced"), "rev-1"));
    let controller = server.controller();
    policy_ran(&server, "tdm", "a first cycle").await;
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
    let server = Scenario::start().await;
    server.set_eviction_effect(EvictionEffect::Terminate);
    base(&server, "1h", "Evict");
    server.apply(pod(&format!("{NS}/misplaced"), "rev-1"));
    server.fail_evictions(&[500, 503]);
    let controller = server.controller();
    eventually("the eviction to go through", || {
        (!accepted(&server.evictions(), "misplaced").is_empty()).then_some(())
    })
    .await;
    let attempts = eviction_codes(&server, "misplaced");
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
    let server = Scenario::start().await;
    base(&server, "1s", "Evict");
    server.apply(
        pod(&format!("{NS}/bad-budget"), "rev-1")
            .preemptable()
            .annotation("volcano.sh/jdb-max-unavailable", "lots"),
    );
    let controller = server.controller();
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
    // Once, not once per cycle: nothing else in the pod's namespace writes events (the zone's, about
    // the pod that will never leave it, go to `default`).
    let event_writes = server
        .requests()
        .iter()
        .filter(|r| r.path.contains(&format!("/namespaces/{NS}/events")) && r.method != "GET")
        .count();
    assert_eq!(event_writes, 1);
    controller.stop().await;
}

/// `kubectl delete` then `kubectl apply` of the same policy: the new object runs at once, as any new
/// policy does, not an interval later, although it is at the same generation as its namesake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_deleted_and_created_again_runs_at_once() {
    let server = Scenario::start().await;
    server.apply(node("rev-1").zone("rz"));
    server.apply(zone("rz").window(&closed_window()).evict_period("1h"));
    server.apply(policy(json!({"mode": "Evict", "interval": "1h"})).named("tdm"));
    let generation = |server: &FakeApiServer| {
        server.get("deschedulingpolicies", "", "tdm").unwrap()["metadata"]["generation"].clone()
    };
    let first_generation = generation(&server);
    let controller = server.controller();
    policy_ran(&server, "tdm", "a first cycle").await;

    server.delete("deschedulingpolicies", "", "tdm");
    server.apply(policy(json!({"mode": "Evict", "interval": "1h"})).named("tdm"));
    assert_eq!(generation(&server), first_generation);
    policy_ran(&server, "tdm", "a cycle of the new policy").await;
    controller.stop().await;
}

/// `kubectl delete` then `kubectl apply` of the same zone: the new object has no status and was never
/// warned about, even if its spec, and so what tidal would write, is the same as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zone_deleted_and_created_again_gets_its_status_and_warning() {
    let server = Scenario::start().await;
    base(&server, "1h", "Evict");
    server.apply(zone("broken").window("25:00-26:00").evict_period("1m"));
    let controller = server.controller();
    let first_uid = server.get("revocablezones", "", "broken").unwrap()["metadata"]["uid"].clone();
    eventually("the first zone's warning", || {
        invalid_zone_warned(&server, &first_uid).then_some(())
    })
    .await;
    assert!(zone_status(&server, "broken")["conditions"].is_array());

    server.delete("revocablezones", "", "broken");
    server.apply(zone("broken").window("25:00-26:00").evict_period("1m"));
    let second_uid = server.get("revocablezones", "", "broken").unwrap()["metadata"]["uid"].clone();
    assert_ne!(first_uid, second_uid);
    let status = eventually("the new zone's status", || {
        let status = zone_status(&server, "broken");
        status["conditions"].is_array().then_some(status)
    })
    .await;
    assert_eq!(status["conditions"][0]["reason"], json!("InvalidWindows"));
    eventually("a warning about the new zone", || {
        invalid_zone_warned(&server, &second_uid).then_some(())
    })
    .await;
    controller.stop().await;
}

/// Whether an InvalidZone warning went to zone `broken` with this uid (which `kubectl describe`
/// filters by).
fn invalid_zone_warned(server: &FakeApiServer, uid: &serde_json::Value) -> bool {
    events_about(server, "broken", "InvalidZone")
        .iter()
        .any(|e| e["regarding"]["uid"] == *uid)
}

/// Waits until policy `name` has a status from a cycle.
async fn policy_ran(server: &FakeApiServer, name: &str, what: &str) {
    eventually(what, || {
        policy_status(server, name)["planned"]
            .is_number()
            .then_some(())
    })
    .await;
}

fn zone_status(server: &FakeApiServer, name: &str) -> serde_json::Value {
    server
        .get("revocablezones", "", name)
        .map(|z| z["status"].clone())
        .unwrap_or_default()
}

/// `tidal_evictions_total` of the `tdm` policy in zone `rz` with this result.
fn result(metrics: &str, result: &str) -> f64 {
    let series = format!(
        r#"tidal_evictions_total{{policy="tdm",strategy="tdm",result="{result}",zone="rz"}}"#
    );
    metric_sum(metrics, &series)
}

/// The status codes the evictions of pod `name` were answered with, in order.
fn eviction_codes(server: &FakeApiServer, name: &str) -> Vec<u16> {
    server
        .evictions()
        .iter()
        .filter(|e| e.name == name)
        .map(|e| e.code)
        .collect()
}

/// The controller's metrics once at least one eviction of zone `rz` ended as `outcome`.
async fn metrics_once_counted(controller: &Controller, what: &str, outcome: &str) -> String {
    eventually_async(what, || async {
        let metrics = controller.metrics().await;
        (result(&metrics, outcome) >= 1.0).then_some(metrics)
    })
    .await
}

/// A policy interval that no test outlasts: with nothing changing, the first cycle stays the only one.
fn one_cycle_only(server: &FakeApiServer) {
    server.update("deschedulingpolicies", "", "tdm", |p| {
        p["spec"]["interval"] = json!("1h");
    });
}

fn skipped(status: &serde_json::Value, gate: &str) -> u64 {
    status["skipped"][gate].as_u64().unwrap_or(0)
}

/// Volcano installed: PodGroups are watched, and a PodGroup's budget limits its job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_podgroup_budget_applies_when_the_crd_is_served() {
    let server = Scenario::start().await;
    server.serve_podgroups(true);
    base(&server, "1h", "Evict");
    server.apply(podgroup(&format!("{NS}/pg")).annotation("volcano.sh/jdb-max-unavailable", "1"));
    for i in 0..3 {
        server.apply(
            pod(&format!("{NS}/m-{i}"), "rev-1")
                .preemptable()
                .in_group("pg"),
        );
    }
    let controller = server.controller();
    let status = eventually("the first round", || {
        let status = policy_status(&server, "tdm");
        (status["evicted"] == json!(1)).then_some(status)
    })
    .await;
    assert_eq!(status["planned"], json!(1), "{status}");
    assert_eq!(skipped(&status, "budget"), 2, "{status}");
    controller.wait_cycles(2.0).await;
    let evicted: usize = (0..3)
        .map(|i| accepted(&server.evictions(), &format!("m-{i}")).len())
        .sum();
    assert_eq!(evicted, 1);
    controller.stop().await;
}

/// Volcano installed while tidal runs: PodGroups are watched from then on (their budget and
/// preemptable setting apply); uninstalled: they are forgotten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_podgroup_crd_installed_later_is_watched_and_one_removed_is_forgotten() {
    let server = Scenario::start().await;
    base(&server, "1h", "Evict");
    // Nothing to evict yet: the policy looks at another namespace.
    server.update("deschedulingpolicies", "", "tdm", |p| {
        p["spec"]["namespaces"] = json!({"include": ["other"]});
    });
    // Not preemptable by themselves: only their PodGroup says so.
    for i in 0..2 {
        server.apply(pod(&format!("{NS}/m-{i}"), "rev-1").in_group("pg"));
    }
    let controller = server.controller();
    policy_ran(&server, "tdm", "a first cycle").await;
    assert_eq!(zone_status(&server, "rz")["preemptablePods"], json!(0));

    server.serve_podgroups(true);
    server.apply(
        podgroup(&format!("{NS}/pg"))
            .annotation("volcano.sh/preemptable", "true")
            .annotation("volcano.sh/jdb-max-unavailable", "1"),
    );
    eventually("the PodGroup to be seen", || {
        (zone_status(&server, "rz")["preemptablePods"] == json!(2)).then_some(())
    })
    .await;
    server.update("deschedulingpolicies", "", "tdm", |p| {
        p["spec"]["namespaces"] = json!({"include": [NS]});
    });
    let status = eventually("a round under the PodGroup's budget", || {
        let status = policy_status(&server, "tdm");
        (status["evicted"] == json!(1)).then_some(status)
    })
    .await;
    assert_eq!(skipped(&status, "budget"), 1, "{status}");
    let evicted: usize = (0..2)
        .map(|i| accepted(&server.evictions(), &format!("m-{i}")).len())
        .sum();
    assert_eq!(evicted, 1);

    // Uninstalled (the API server drops the PodGroups with their CRD): the survivor is no longer
    // preemptable through its group.
    server.serve_podgroups(false);
    eventually("the PodGroup to be forgotten", || {
        (zone_status(&server, "rz")["preemptablePods"] == json!(0)).then_some(())
    })
    .await;
    let (code, _) = http_get(controller.health_addr, "/readyz").await.unwrap();
    assert_eq!(code, 200);
    controller.stop().await;
}

/// Starts a controller on the base cluster plus one pod to evict, and waits for the eviction: the
/// sign that every kind listed (nothing plans before) and a cycle ran.
async fn evict_one_misplaced_pod(server: &Scenario) -> Controller {
    base(server, "1h", "Evict");
    server.apply(pod(&format!("{NS}/misplaced"), "rev-1"));
    let controller = server.controller();
    eventually("the eviction, once every kind is synced", || {
        (!accepted(&server.evictions(), "misplaced").is_empty()).then_some(())
    })
    .await;
    controller
}

/// The core kinds travel in protobuf when the server speaks it (every other test here runs on it), and
/// in JSON when it does not: the same eviction either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_when_the_server_speaks_it_json_when_it_does_not() {
    for protobuf in [true, false] {
        let server = Scenario::start().await;
        server.speak_protobuf(protobuf);
        let controller = evict_one_misplaced_pod(&server).await;
        assert_eq!(
            server.protobuf_answers() > 0,
            protobuf,
            "protobuf {protobuf}: {} protobuf answers",
            server.protobuf_answers()
        );
        controller.stop().await;
    }
}

/// An error that says nothing about the CRD (a 500, a 403) is asked again; it never starts a watch
/// of a resource that does not exist, which would hold every cycle forever. (Not a 503: kube's client
/// retries those by itself.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unclear_podgroup_check_is_retried_rather_than_taken_for_a_crd() {
    let server = Scenario::start().await;
    server.fail_requests("GET", "/podgroups", &[500, 403]);
    let controller = evict_one_misplaced_pod(&server).await;
    let probes: Vec<u16> = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/podgroups"))
        .map(|r| r.code)
        .collect();
    assert_eq!(probes[..3], [500, 403, 404], "{probes:?}");
    controller.stop().await;
}

/// A failed initial list (the watch-list, then the paginated list it falls back to) is retried by the
/// watcher; planning waits for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_initial_list_is_retried_before_any_cycle() {
    let server = Scenario::start().await;
    server.fail_requests("GET", "/api/v1/pods", &[500, 500]);
    let controller = evict_one_misplaced_pod(&server).await;
    let metrics = controller.metrics().await;
    assert!(
        metric_sum(&metrics, r#"tidal_watch_errors_total{kind="Pod"}"#) >= 2.0,
        "{metrics}"
    );
    controller.stop().await;
}

/// Each cycle's summary reaches the API as its own event (an event recorder that folds repeats by
/// reason alone would keep the first cycle's numbers), on the policy's uid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_distinct_cycle_summary_is_its_own_event() {
    let server = Scenario::start().await;
    base(&server, "1s", "Evict");
    server.apply(pod(&format!("{NS}/m-0"), "rev-1"));
    let controller = server.controller();
    let has_note = |text: &str| {
        events_about(&server, "tdm", "Cycle")
            .iter()
            .any(|e| e["note"].as_str().unwrap_or_default().contains(text))
    };
    eventually("the first summary", || {
        has_note("planned 1, evicted 1").then_some(())
    })
    .await;
    server.apply(pod(&format!("{NS}/m-1"), "rev-1"));
    server.apply(pod(&format!("{NS}/m-2"), "rev-1"));
    eventually("the second, different summary", || {
        has_note("planned 2, evicted 2").then_some(())
    })
    .await;
    let uid = server.get("deschedulingpolicies", "", "tdm").unwrap()["metadata"]["uid"].clone();
    for event in events_about(&server, "tdm", "Cycle") {
        assert_eq!(event["regarding"]["uid"], uid, "{event}");
        assert_eq!(event["metadata"]["namespace"], json!("default"));
    }
    controller.stop().await;
}

/// 404 (already gone) and 409 (replaced) are final answers, not evictions: no event, no eviction
/// counted; the pods count as leaving until the watch catches up, so later rounds do not propose
/// them again. The round itself started when it was planned, and is on record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gone_and_replaced_answers_are_not_evictions_and_not_proposed_again() {
    let server = Scenario::start().await;
    base(&server, "1s", "Evict");
    // The server says so, but its watch does not (yet): the pods stay listed.
    server.fail_evictions(&[404, 409]);
    server.apply(pod(&format!("{NS}/p1"), "rev-1"));
    server.apply(pod(&format!("{NS}/p2"), "rev-1"));
    let controller = server.controller();
    let skipped_gone =
        |metrics: &str| metric_sum(metrics, r#"tidal_skips_total{policy="tdm",gate="gone"}"#);
    // Both counted (the cycle counts once its write-back is done).
    let metrics = eventually_async("both answers", || async {
        let metrics = controller.metrics().await;
        let answers = result(&metrics, "gone") + result(&metrics, "replaced");
        (answers >= 2.0 && skipped_gone(&metrics) >= 2.0).then_some(metrics)
    })
    .await;
    assert_eq!(result(&metrics, "gone"), 1.0, "{metrics}");
    assert_eq!(result(&metrics, "replaced"), 1.0, "{metrics}");
    assert_eq!(skipped_gone(&metrics), 2.0, "{metrics}");
    assert_eq!(result(&metrics, "evicted"), 0.0, "{metrics}");
    assert!(zone_status(&server, "rz")["lastEvictionRound"].is_string());

    // Later rounds (one evicts a newcomer) leave p1 and p2 alone.
    server.apply(pod(&format!("{NS}/newcomer"), "rev-1"));
    eventually("a later round", || {
        (!accepted(&server.evictions(), "newcomer").is_empty()).then_some(())
    })
    .await;
    controller.wait_cycles(2.0).await;
    let evictions = server.evictions();
    assert_eq!(real_attempts(&evictions, "p1"), 1, "{evictions:#?}");
    assert_eq!(real_attempts(&evictions, "p2"), 1, "{evictions:#?}");
    assert!(events_about(&server, "p1", "Descheduled").is_empty());
    assert!(events_about(&server, "p2", "Descheduled").is_empty());
    controller.stop().await;
}

/// The answer to an eviction is lost (client timeout) although the server evicted the pod; the
/// retry gets 404. That is this eviction, counted once: status, event, round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eviction_whose_answer_was_lost_counts_once() {
    let server = Scenario::start().await;
    base(&server, "1h", "Evict");
    one_cycle_only(&server);
    server.eviction_faults(&[EvictionFault::LateAnswer(std::time::Duration::from_secs(3))]);
    server.apply(pod(&format!("{NS}/misplaced"), "rev-1"));
    let controller = server.controller_configured("a", &["--leader-elect", "false"], |config| {
        config.eviction.request_timeout = std::time::Duration::from_millis(500)
    });
    let status = eventually("the status", || {
        let status = policy_status(&server, "tdm");
        status["planned"].is_number().then_some(status)
    })
    .await;
    assert_eq!(status["planned"], json!(1), "{status}");
    assert_eq!(status["evicted"], json!(1), "{status}");
    assert_eq!(skipped(&status, "gone"), 0, "{status}");
    let codes = eviction_codes(&server, "misplaced");
    assert_eq!(codes, vec![201, 404]);
    // The Event goes out beside the status write, not before it.
    let events = eventually("the pod's Event", || {
        let events = events_about(&server, "misplaced", "Descheduled");
        (!events.is_empty()).then_some(events)
    })
    .await;
    assert_eq!(events.len(), 1, "{events:#?}");
    assert!(events[0]["note"].as_str().unwrap().contains("unconfirmed"));
    assert!(zone_status(&server, "rz")["lastEvictionRound"].is_string());
    // Counted once the cycle ends, just after its status write.
    let metrics =
        metrics_once_counted(&controller, "the eviction counted", "evicted_unconfirmed").await;
    assert_eq!(result(&metrics, "evicted_unconfirmed"), 1.0, "{metrics}");
    assert_eq!(result(&metrics, "gone"), 0.0, "{metrics}");
    controller.stop().await;
}

/// The answer to an eviction is lost although the server evicted the pod, and every retry fails (a
/// dying API server): not a failure to count, nor a pod to evict again. It is held as leaving, and
/// once the watch shows it gone it is counted evicted (unconfirmed) once, with its Event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eviction_unanswered_to_the_last_retry_is_settled_by_the_watch() {
    let server = Scenario::start().await;
    base(&server, "1h", "Evict");
    one_cycle_only(&server);
    server.eviction_faults(&[
        EvictionFault::LateAnswer(std::time::Duration::from_secs(3)),
        EvictionFault::Code(503),
        EvictionFault::Code(503),
    ]);
    server.apply(pod(&format!("{NS}/misplaced"), "rev-1"));
    let controller = server.controller_configured("a", &["--leader-elect", "false"], |config| {
        config.eviction.request_timeout = std::time::Duration::from_millis(500);
        config.eviction.retry.max_attempts = 3;
        config.eviction.retry.initial = std::time::Duration::from_millis(10);
    });
    let metrics =
        metrics_once_counted(&controller, "the eviction settled", "evicted_unconfirmed").await;
    assert_eq!(result(&metrics, "evicted_unconfirmed"), 1.0, "{metrics}");
    assert_eq!(result(&metrics, "failed"), 0.0, "{metrics}");
    assert_eq!(result(&metrics, "unanswered"), 0.0, "{metrics}");
    let events = eventually("the pod's Event", || {
        let events = events_about(&server, "misplaced", "Descheduled");
        (!events.is_empty()).then_some(events)
    })
    .await;
    assert_eq!(events.len(), 1, "{events:#?}");
    assert!(events[0]["note"].as_str().unwrap().contains("unconfirmed"));
    let codes = eviction_codes(&server, "misplaced");
    assert_eq!(codes, vec![201, 503, 503]);
    controller.stop().await;
}

/// Every attempt of an eviction goes unanswered, and the server never applied it (it restarted
/// under the request). Once the pods' watch has listed again from after the attempt and shows the
/// pod running, the pod counts again at once (counted failed, once) and a later round evicts it:
/// its job's budget is not held for the whole `--in-flight-ttl`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_eviction_the_server_dropped_is_settled_by_a_relist() {
    let server = Scenario::start().await;
    base(&server, "1s", "Evict");
    server.eviction_faults(&[
        EvictionFault::NoAnswer(std::time::Duration::from_secs(3)),
        EvictionFault::Code(503),
        EvictionFault::Code(503),
    ]);
    server.apply(pod(&format!("{NS}/misplaced"), "rev-1"));
    let flags = ["--leader-elect", "false", "--in-flight-ttl", "1h"];
    let controller = server.controller_configured("a", &flags, |config| {
        config.eviction.request_timeout = std::time::Duration::from_millis(500);
        config.eviction.retry.max_attempts = 3;
        config.eviction.retry.initial = std::time::Duration::from_millis(10);
    });
    let in_flight = |metrics: &str| metric_sum(metrics, r#"tidal_cache_objects{kind="in_flight"}"#);
    // Held as leaving, neither counted nor sent again while the watch has not shown what happened.
    eventually_async("the pod held as leaving", || async {
        let metrics = controller.metrics().await;
        (in_flight(&metrics) == 1.0).then_some(())
    })
    .await;
    assert_eq!(real_attempts(&server.evictions(), "misplaced"), 3);
    server.expire_watches();
    let metrics = metrics_once_counted(&controller, "the eviction settled", "failed").await;
    assert_eq!(result(&metrics, "failed"), 1.0, "{metrics}");
    assert_eq!(result(&metrics, "evicted_unconfirmed"), 0.0, "{metrics}");
    // It counts again: a later round evicts it, this time with an answer.
    let codes = eventually("the pod evicted by a later round", || {
        let codes = eviction_codes(&server, "misplaced");
        codes.contains(&201).then_some(codes)
    })
    .await;
    assert_eq!(codes, vec![503, 503, 503, 201]);
    // One Event, for the eviction that went through.
    let events = eventually("the pod's Event", || {
        let events = events_about(&server, "misplaced", "Descheduled");
        (!events.is_empty()).then_some(events)
    })
    .await;
    assert_eq!(events.len(), 1, "{events:#?}");
    assert!(!events[0]["note"].as_str().unwrap().contains("unconfirmed"));
    controller.stop().await;
}

/// A pod under two PodDisruptionBudgets gets a 500 that no retry fixes: sent once, skipped as error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_under_two_budgets_is_not_retried() {
    let server = Scenario::start().await;
    base(&server, "1h", "Evict");
    one_cycle_only(&server);
    server.apply(pod(&format!("{NS}/doubly"), "rev-1").label("app", "db"));
    server.apply(pdb(&format!("{NS}/one"), "db").min_available(0));
    server.apply(pdb(&format!("{NS}/two"), "db").min_available(0));
    let controller = server.controller();
    let status = eventually("the status", || {
        let status = policy_status(&server, "tdm");
        status["planned"].is_number().then_some(status)
    })
    .await;
    assert_eq!(skipped(&status, "error"), 1, "{status}");
    assert_eq!(real_attempts(&server.evictions(), "doubly"), 1);
    controller.stop().await;
}

/// A guard whose right to act lapses after a while, as leadership does.
struct Lapsing(std::time::Duration);

impl tidal::controller::evictor::Guard for Lapsing {
    fn may_act(&self, _dry_run: bool) -> Result<(), Halt> {
        Ok(())
    }

    fn lapsed(&self) -> BoxFuture<'_, Halt> {
        Box::pin(async move {
            tokio::time::sleep(self.0).await;
            Halt::LeadershipLapsed
        })
    }
}

/// An eviction request never outlives the cycle's deadline nor the guard, however long the request
/// timeout: a hung API server cannot hold a cycle, nor keep a request open past leadership.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_ends_at_the_deadline_or_when_leadership_lapses() {
    use std::time::Duration;
    use tidal::controller::evictor::{Always, EvictionRequest, Evictor, EvictorConfig, Outcome};
    use tokio::time::Instant;

    let server = Scenario::start().await;
    server.apply(pod(&format!("{NS}/stuck"), "rev-1"));
    // Far longer than the test is allowed to take.
    server.set_eviction_delay(Duration::from_secs(3600));
    let kubeconfig = server.kubeconfig("t");
    let config = tidal::runtime::ClientArgs {
        kubeconfig: Some(kubeconfig),
        context: None,
    }
    .config()
    .await
    .unwrap();
    let evictor = Evictor::new(
        tidal::runtime::client::without_retries(&config).unwrap(),
        EvictorConfig {
            request_timeout: Duration::from_secs(3600),
            ..EvictorConfig::default()
        },
    );
    let request = EvictionRequest {
        pod: tidal::cluster::ObjectKey::new(NS, "stuck"),
        uid: String::new(),
        dry_run: false,
    };
    let bound = Duration::from_secs(60);

    let deadline = Instant::now() + Duration::from_millis(300);
    let outcome = tokio::time::timeout(bound, evictor.evict(&request, deadline, &Always))
        .await
        .expect("the attempt ends at the cycle's deadline");
    // Sent and never answered: the server may have applied it, so it is not taken for a failure.
    assert!(matches!(outcome, Outcome::Unanswered { .. }), "{outcome:?}");

    let far = Instant::now() + Duration::from_secs(3600);
    let guard = Lapsing(Duration::from_millis(300));
    let outcome = tokio::time::timeout(bound, evictor.evict(&request, far, &guard))
        .await
        .expect("the attempt ends when leadership lapses");
    assert_eq!(outcome, Outcome::Abandoned("leadership lapsed".to_owned()));
}
