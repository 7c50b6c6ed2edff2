//! Draining in time, end to end: one queue for every eviction with the earliest close first, cycles
//! that do not wait for the evictions they queued, a close that cannot be met signalled by the zone's
//! status, an Event and a metric, and a round held back by budgets tried again one `evictPeriod` later.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

const NS: &str = "batch";

fn accepted_with_prefix(server: &FakeApiServer, prefix: &str) -> usize {
    server
        .evictions()
        .iter()
        .filter(|e| e.name.starts_with(prefix) && !e.dry_run && e.code == 201)
        .count()
}

fn zone_status(server: &FakeApiServer, name: &str) -> Value {
    server
        .get("revocablezones", "", name)
        .map(|z| z["status"].clone())
        .unwrap_or(Value::Null)
}

fn condition(status: &Value, type_: &str) -> Option<Value> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == json!(type_))
        .cloned()
}

/// Zone `za` drains 60 pods, slowly (one request at a time, 250 ms each); meanwhile zone `zb` closes.
/// Its round starts at once, while `za`'s evictions are still going out, and its pods overtake `za`'s
/// in the queue: `zb` is closed, `za` closes hours later. `za`'s remaining pods are shown going down
/// while its round is in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zone_that_closes_overtakes_a_drain_already_queued() {
    const SLOW: usize = 60;
    let server = Scenario::start().await;
    server.set_eviction_delay(Duration::from_millis(250));
    server.apply(node("rev-a").zone("za"));
    server.apply(node("rev-b").zone("zb"));
    server.apply(node("std-1"));
    // A fixed lead longer than the time to the close: draining from the start.
    server.apply(
        zone("za")
            .window(&open_window())
            .spec(json!({"drainBefore": "23h", "evictPeriod": "1h"})),
    );
    server.apply(zone("zb").window(&open_window()).evict_period("1h"));
    server.apply(policy(json!({"mode": "Evict", "interval": "1h"})).named("tdm"));
    for i in 0..SLOW {
        server.apply(pod(&format!("{NS}/a-{i:02}"), "rev-a").preemptable());
    }
    for i in 0..3 {
        server.apply(pod(&format!("{NS}/b-{i}"), "rev-b").preemptable());
    }
    let controller = server.controller_with(
        "a",
        &["--leader-elect", "false", "--eviction-concurrency", "1"],
    );
    eventually("za's drain under way", || {
        (accepted_with_prefix(&server, "a-") >= 1).then_some(())
    })
    .await;
    server.update("revocablezones", "", "zb", |zone| {
        zone["spec"]["windows"] = json!([{"time": closed_window()}]);
    });
    eventually("zb's pods evicted", || {
        (accepted_with_prefix(&server, "b-") == 3).then_some(())
    })
    .await;
    let za_done = accepted_with_prefix(&server, "a-");
    assert!(
        za_done < SLOW,
        "zb's evictions waited for za's whole queue ({za_done} of {SLOW} were sent first)"
    );
    assert!(zone_status(&server, "zb")["lastEvictionRound"].is_string());
    // The gauge follows za's drain while its evictions go out, not only once they are done.
    let remaining = eventually_async("za's remaining pods going down mid-round", || async {
        let metrics = controller.metrics().await;
        let remaining = metric_sum(&metrics, r#"tidal_zone_drain_remaining_pods{zone="za"}"#);
        let sent = accepted_with_prefix(&server, "a-");
        (remaining > 0.0 && remaining < SLOW as f64 && sent < SLOW).then_some(remaining)
    })
    .await;
    assert!(remaining < SLOW as f64);
    controller.stop().await;
}

/// A 100-pod job that loses one pod at a time, each taking its 60 s grace period to go, in a zone
/// that closes in ten minutes: the drain starts at once (an auto drain capped by `maxDrainBefore`),
/// and the zone's status, a Warning Event (once) and a metric say the close will be missed, naming the
/// job. The budget holds while the evicted pod terminates; once it is gone the next round comes one
/// `evictPeriod` later, not at the policy's hour-long interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_that_cannot_be_met_is_signalled_and_held_rounds_retry_after_evict_period() {
    let server = Scenario::start().await;
    server.set_eviction_effect(EvictionEffect::Terminate);
    server.apply(node("rev-1").zone("z"));
    server.apply(node("std-1"));
    server.apply(zone("z").window(&window_closing_in(10)).evict_period("1s"));
    server.apply(policy(json!({"mode": "Evict", "interval": "1h"})).named("tdm"));
    for i in 0..100 {
        server.apply(
            pod(&format!("{NS}/big-{i:03}"), "rev-1")
                .preemptable()
                .owned_by("ReplicaSet", "big")
                .annotation("volcano.sh/jdb-max-unavailable", "1")
                .spec("terminationGracePeriodSeconds", json!(60)),
        );
    }
    let controller = server.controller();
    let status = eventually("the zone's drain status", || {
        let status = zone_status(&server, "z");
        condition(&status, "DrainOnTrack")
            .filter(|c| c["status"] == json!("False"))
            .map(|_| status)
    })
    .await;
    let on_track = condition(&status, "DrainOnTrack").unwrap();
    assert_eq!(on_track["reason"], json!("CloseWillBeMissed"), "{status:#}");
    let fix = on_track["message"].as_str().unwrap();
    assert!(
        fix.contains("ReplicaSet batch/big needs 100 rounds"),
        "{fix}"
    );
    assert!(fix.contains("maxDrainBefore"), "{fix}");
    let drain = &status["drain"];
    assert!(drain["startedAt"].is_string(), "{status:#}");
    assert!(drain["marginSeconds"].as_i64().unwrap() < 0, "{status:#}");
    assert!(drain["atClose"].as_u64().unwrap() > 80, "{status:#}");
    assert!(drain["remainingPods"].as_u64().unwrap() >= 99, "{status:#}");

    let metrics = eventually_async("the at-risk gauge", || async {
        let metrics = controller.metrics().await;
        (metric_sum(&metrics, r#"tidal_zone_drain_at_risk{zone="z"}"#) == 1.0).then_some(metrics)
    })
    .await;
    assert!(
        metric_sum(&metrics, r#"tidal_zone_drain_margin_seconds{zone="z"}"#) < 0.0,
        "{metrics}"
    );
    assert_eq!(events_about(&server, "z", "DrainStarted").len(), 1);

    // One pod at a time: the first terminates (for its grace period) and holds the budget through
    // later rounds and drain refreshes.
    eventually("the first eviction", || {
        (accepted_with_prefix(&server, "big-") == 1).then_some(())
    })
    .await;
    controller.wait_cycles(2.0).await;
    assert_eq!(accepted_with_prefix(&server, "big-"), 1);
    let warnings = events_about(&server, "z", "DrainAtRisk");
    assert_eq!(warnings.len(), 1, "once per close: {warnings:#?}");
    assert_eq!(warnings[0]["type"], json!("Warning"));

    // Gone: the next round frees the next pod an evictPeriod later.
    server.finish_terminations();
    eventually("the second eviction", || {
        (accepted_with_prefix(&server, "big-") == 2).then_some(())
    })
    .await;
    controller.stop().await;
}
