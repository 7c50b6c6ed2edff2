//! End to end: `tidal run` against the fake API server, through the same startup path as the binary.

mod support;

use std::collections::BTreeMap;

use serde_json::json;
use support::*;

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

    let controller = Controller::start(&server, dir.path(), "a", &["--leader-elect", "false"]);

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

    // Events on the evicted pods.
    let events = server.list("apis/events.k8s.io/v1", "events");
    let on = |name: &str| {
        events
            .iter()
            .any(|e| e["regarding"]["name"] == json!(name) && e["reason"] == json!("Evicted"))
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
