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

/// Zone `z`, closing in ten minutes, with one job of `pods` pods (`batch/big-NNN`) that loses one at a
/// time, each taking its 60 s grace period to go: a close that cannot be met.
fn a_job_too_slow_for_its_close(server: &FakeApiServer, pods: usize) {
    server.set_eviction_effect(EvictionEffect::Terminate);
    server.apply(node("rev-1").zone("z"));
    server.apply(node("std-1"));
    server.apply(zone("z").window(&window_closing_in(10)).evict_period("1s"));
    server.apply(policy(json!({"mode": "Evict", "interval": "1h"})).named("tdm"));
    for i in 0..pods {
        server.apply(
            pod(&format!("{NS}/big-{i:03}"), "rev-1")
                .preemptable()
                .owned_by("ReplicaSet", "big")
                .annotation("volcano.sh/jdb-max-unavailable", "1")
                .spec("terminationGracePeriodSeconds", json!(60)),
        );
    }
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
    a_job_too_slow_for_its_close(&server, 100);
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

/// A close called at risk by one leader is not called again by the next: the warning the zone's
/// status shows was sent, whoever sent it. The call stays, and so does the single Warning Event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_leader_does_not_warn_again_about_a_close_already_called_at_risk() {
    let server = Scenario::start().await;
    a_job_too_slow_for_its_close(&server, 50);
    let first = server.controller_with("a", &["--leader-elect", "false"]);
    eventually("the close called at risk", || {
        (events_about(&server, "z", "DrainAtRisk").len() == 1).then_some(())
    })
    .await;
    first.stop().await;

    let next = server.controller_with("b", &["--leader-elect", "false"]);
    next.wait_cycles(3.0).await;
    let status = zone_status(&server, "z");
    assert_eq!(
        condition(&status, "DrainOnTrack").unwrap()["status"],
        json!("False"),
        "{status:#}"
    );
    let warnings = events_about(&server, "z", "DrainAtRisk");
    assert_eq!(warnings.len(), 1, "warned again: {warnings:#?}");
    next.stop().await;
}

/// A round the API server throttles (429 without a disruption budget behind it) is not done: what it
/// left goes seconds later, when the server takes evictions again, not one `evictPeriod` (an hour
/// here) after the round started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_the_server_throttles_is_taken_up_again_within_seconds() {
    let server = Scenario::start().await;
    server.apply(node("rev-1").zone("z"));
    server.apply(node("std-1"));
    server.apply(zone("z").window(&closed_window()).evict_period("1h"));
    server.apply(policy(json!({"mode": "Evict", "interval": "1h"})).named("tdm"));
    for i in 0..10 {
        server.apply(pod(&format!("{NS}/p-{i}"), "rev-1").preemptable());
    }
    server.fail_evictions(&[429; 4]);
    let controller = server.controller();
    eventually("every pod evicted, the throttled ones too", || {
        (accepted_with_prefix(&server, "p-") == 10).then_some(())
    })
    .await;
    let throttled = server.evictions().iter().filter(|e| e.code == 429).count();
    assert_eq!(throttled, 4);
    controller.stop().await;
}

/// A drain whose round is still going out, slowly, when the plan is made again: the plan sends the
/// queued evictions on from where the queue is, rather than planning them again at the next round
/// (`evictPeriod`, 5 minutes away, past the close). The close is met, and nothing says otherwise:
/// no `DrainAtRisk`, `DrainOnTrack` True throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_still_in_the_queue_is_planned_where_it_is_and_a_close_that_is_met_raises_no_warning()
 {
    const PODS: usize = 30;
    let server = Scenario::start().await;
    server.set_eviction_delay(Duration::from_millis(500));
    server.apply(node("rev-1").zone("z"));
    server.apply(node("std-1"));
    server.apply(
        zone("z")
            .window(&window_closing_in(4))
            .spec(json!({"drainBefore": "10m", "evictPeriod": "5m"})),
    );
    server.apply(policy(json!({"mode": "Evict", "interval": "1h"})).named("tdm"));
    for i in 0..PODS {
        server.apply(
            pod(&format!("{NS}/p-{i:02}"), "rev-1")
                .preemptable()
                .owned_by("ReplicaSet", &format!("p-{i:02}")),
        );
    }
    let controller = server.controller_with(
        "a",
        &["--leader-elect", "false", "--eviction-concurrency", "1"],
    );
    // While the round goes out (one answer every half second), the plan is made again every few
    // seconds with most of it still queued.
    let mut looked = 0;
    while accepted_with_prefix(&server, "p-") < PODS {
        let status = zone_status(&server, "z");
        if let Some(on_track) = condition(&status, "DrainOnTrack") {
            assert_eq!(on_track["status"], json!("True"), "{status:#}");
            looked += 1;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        looked > 5,
        "the status was looked at while the round went out"
    );
    // One more refresh of the plan (every 5 s while a drain is under way) with the round done.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(
        events_about(&server, "z", "DrainAtRisk"),
        Vec::<Value>::new()
    );
    controller.stop().await;
}

/// A close called at risk (a job that may lose one pod at a time) is called so once, and the call is
/// withdrawn when the plan expects the close met again (the job's PodGroup lets it lose them all at
/// once): a Normal `DrainOnTrack` Event, and the condition True again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_called_at_risk_is_withdrawn_once_it_will_be_met() {
    let server = Scenario::start().await;
    server.serve_podgroups(true);
    server.set_eviction_effect(EvictionEffect::Terminate);
    server.apply(node("rev-1").zone("z"));
    server.apply(node("std-1"));
    server.apply(zone("z").window(&window_closing_in(10)).evict_period("1s"));
    server.apply(policy(json!({"mode": "Evict", "interval": "1h"})).named("tdm"));
    server.apply(podgroup(&format!("{NS}/big")).annotation("volcano.sh/jdb-max-unavailable", "1"));
    for i in 0..40 {
        server.apply(
            pod(&format!("{NS}/big-{i:02}"), "rev-1")
                .preemptable()
                .owned_by("ReplicaSet", "big")
                .in_group("big")
                .spec("terminationGracePeriodSeconds", json!(60)),
        );
    }
    let controller = server.controller();
    eventually("the close called at risk", || {
        (events_about(&server, "z", "DrainAtRisk").len() == 1).then_some(())
    })
    .await;
    server.update("podgroups", NS, "big", |group| {
        group["metadata"]["annotations"]["volcano.sh/jdb-max-unavailable"] = json!("100%");
    });

    let back = eventually("the call withdrawn", || {
        events_about(&server, "z", "DrainOnTrack")
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(back["type"], json!("Normal"), "{back:#}");
    let note = back["note"].as_str().unwrap();
    assert!(note.contains("expected done by the close"), "{note}");
    let status = eventually("the condition True again", || {
        let status = zone_status(&server, "z");
        condition(&status, "DrainOnTrack")
            .filter(|c| c["status"] == json!("True"))
            .map(|_| status)
    })
    .await;
    assert!(
        status["drain"]["marginSeconds"].as_i64().unwrap() > 0,
        "{status:#}"
    );
    controller.wait_cycles(1.0).await;
    assert_eq!(events_about(&server, "z", "DrainAtRisk").len(), 1);
    controller.stop().await;
}

/// How long pods take to go is measured from their eviction's answer, not from when the eviction
/// was queued: eight pods gone a fifth of a second after their evictions, which are answered half a
/// second apart one at a time, are learned to take well under a second (not the up to 4 s they
/// also waited in the queue). A ninth pod in its cooldown keeps the estimate saying what it assumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn termination_is_learned_from_the_eviction_s_answer() {
    let server = Scenario::start().await;
    server.set_eviction_delay(Duration::from_millis(500));
    server.set_eviction_effect(EvictionEffect::Terminate);
    server.apply(node("rev-1").zone("z"));
    server.apply(node("std-1"));
    server.apply(zone("z").window(&closed_window()).evict_period("1h"));
    server.apply(policy(json!({"mode": "Evict", "interval": "1h"})).named("tdm"));
    for i in 0..8 {
        server.apply(
            pod(&format!("{NS}/p-{i}"), "rev-1")
                .preemptable()
                .owned_by("ReplicaSet", &format!("p-{i}"))
                .spec("terminationGracePeriodSeconds", json!(30)),
        );
    }
    server.apply(
        pod(&format!("{NS}/cooling"), "rev-1")
            .preemptable()
            .owned_by("ReplicaSet", "cooling")
            .just_scheduled()
            .annotation("volcano.sh/cooldown-time", "1h"),
    );
    let controller = server.controller_with(
        "a",
        &["--leader-elect", "false", "--eviction-concurrency", "1"],
    );
    // Each evicted pod terminates for a fifth of a second after its answer.
    let mut gone = 0;
    while gone < 8 {
        let accepted = accepted_with_prefix(&server, "p-");
        if accepted > gone {
            tokio::time::sleep(Duration::from_millis(200)).await;
            server.finish_terminations();
            gone = accepted;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let summary = eventually("the summary once the eight are gone", || {
        let status = zone_status(&server, "z");
        let summary = status["drain"]["summary"].as_str()?.to_owned();
        (accepted_with_prefix(&server, "p-") == 8 && status["drain"]["remainingPods"] == json!(1))
            .then_some(summary)
    })
    .await;
    assert!(summary.contains("pods gone 0s after eviction"), "{summary}");
    controller.stop().await;
}

/// A draining zone that closes in half an hour, with three pods started a minute ago: `long`'s deadline
/// ends it after the close (evicted at once); `ends`'s and `overstays`'s end them 40 seconds from now,
/// well before it (left to finish). `ends` does end, as its kubelet would end it; `overstays` is still
/// running past its end, and is evicted then, still long before the close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_that_ends_before_the_close_finishes_and_one_that_overstays_is_evicted() {
    let server = Scenario::start().await;
    server.apply(node("rev-1").zone("z"));
    server.apply(node("std-1"));
    server.apply(
        zone("z")
            .window(&window_closing_in(30))
            .spec(json!({"drainBefore": "23h", "evictPeriod": "1s"})),
    );
    server.apply(policy(json!({"mode": "Evict", "interval": "1h"})).named("tdm"));
    // Whole seconds: the deadlines count from the start as the API server writes it.
    let started = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second() - 60).unwrap();
    let started_text = started.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    // `ends` has a grace period of 10 s: the test ends it at its end, well before it would count as
    // overstaying; `overstays` has none, so that it overstays at once.
    let with_deadline = |name: &str, seconds: i64| {
        let grace = if name == "ends" { 10 } else { 0 };
        pod(&format!("{NS}/{name}"), "rev-1")
            .preemptable()
            .owned_by("Job", name)
            .created(&started_text)
            .spec("terminationGracePeriodSeconds", json!(grace))
            .spec("activeDeadlineSeconds", json!(seconds))
    };
    let end = jiff::Timestamp::from_second(started.as_second() + 100).unwrap();
    server.apply(with_deadline("long", 4_000));
    server.apply(with_deadline("ends", 100));
    server.apply(with_deadline("overstays", 100));
    let controller = server.controller();

    eventually("long evicted", || {
        (!accepted(&server.evictions(), "long").is_empty()).then_some(())
    })
    .await;
    // Until their end, the two are left alone, round after round.
    while jiff::Timestamp::now() < end {
        let evictions = server.evictions();
        assert_eq!(
            real_attempts(&evictions, "ends"),
            0,
            "evicted before its end"
        );
        assert_eq!(
            real_attempts(&evictions, "overstays"),
            0,
            "evicted before its end"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // At its end, `ends` ends (its kubelet marks it failed: DeadlineExceeded).
    server.apply(with_deadline("ends", 100).phase("Failed"));

    eventually("overstays evicted once it outstayed its end", || {
        (!accepted(&server.evictions(), "overstays").is_empty()).then_some(())
    })
    .await;
    assert_eq!(
        real_attempts(&server.evictions(), "ends"),
        0,
        "a pod that ended by itself is never evicted"
    );
    // Both evicted pods are Jobs' and had run over a minute: their work is counted as thrown away.
    let lost = metric_sum(
        &controller.metrics().await,
        "tidal_drain_work_lost_seconds_total",
    );
    assert!(lost >= 160.0, "{lost} pod-seconds");
    controller.stop().await;
}

/// A gang of four (PodGroup minMember 4) under a budget of one pod at a time, on a closed zone beside
/// a ReplicaSet under the same budget: one worker evicted and Volcano gives up the gang's work, so
/// the first round takes all four, while the ReplicaSet loses one pod per round, each once the last
/// one is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gang_goes_whole_in_one_round_while_another_job_loses_one_pod_a_round() {
    let server = Scenario::start().await;
    server.serve_podgroups(true);
    server.set_eviction_effect(EvictionEffect::Terminate);
    server.apply(node("rev-1").zone("z"));
    server.apply(node("std-1"));
    server.apply(zone("z").window(&closed_window()).evict_period("1s"));
    server.apply(policy(json!({"mode": "Evict", "interval": "1h"})).named("tdm"));
    server.apply(
        podgroup(&format!("{NS}/train"))
            .patch(json!({"spec": {"minMember": 4}}))
            .annotation("volcano.sh/jdb-max-unavailable", "1"),
    );
    for i in 0..4 {
        server.apply(
            pod(&format!("{NS}/train-{i}"), "rev-1")
                .preemptable()
                .owned_by("Job", "train")
                .in_group("train"),
        );
        server.apply(
            pod(&format!("{NS}/etl-{i}"), "rev-1")
                .preemptable()
                .owned_by("ReplicaSet", "etl")
                .annotation("volcano.sh/jdb-max-unavailable", "1"),
        );
    }
    let controller = server.controller();
    eventually("the gang evicted", || {
        (accepted_with_prefix(&server, "train-") == 4).then_some(())
    })
    .await;
    // Rounds come every second; the ReplicaSet's evicted pod still terminates and holds its budget.
    controller.wait_cycles(3.0).await;
    assert_eq!(accepted_with_prefix(&server, "etl-"), 1);
    assert_eq!(accepted_with_prefix(&server, "train-"), 4);
    let events = events_about(&server, "train-3", "Descheduled");
    assert_eq!(events.len(), 1, "{events:#?}");

    server.finish_terminations();
    eventually("the next etl pod, a round later", || {
        (accepted_with_prefix(&server, "etl-") == 2).then_some(())
    })
    .await;
    assert_eq!(accepted_with_prefix(&server, "train-"), 4);
    controller.stop().await;
}

/// Nodes `rev-1` (in zone `z`) and `std-1`; zone `z` closing in half an hour and draining now, a round
/// a second, giving `notice` of notice; a TDM policy that evicts.
fn draining_zone_with_notice(server: &FakeApiServer, notice: &str) {
    server.apply(node("rev-1").zone("z"));
    server.apply(node("std-1"));
    server.apply(zone("z").window(&window_closing_in(30)).spec(json!({
        "drainBefore": "23h",
        "evictPeriod": "1s",
        "evictionNotice": notice,
    })));
    server.apply(policy(json!({"mode": "Evict", "interval": "1h"})).named("tdm"));
}

/// A zone that asks for 8 s of notice, draining now: its pods are told first (the condition, the
/// annotations, an Event) and none is evicted sooner than 8 s after its notice. `stale` carries a
/// notice from before the window opened (an earlier close's): it is told again and waits as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_are_told_before_their_eviction_and_none_goes_before_its_notice_has_run() {
    const NOTICE: i64 = 8;
    let server = Scenario::start().await;
    draining_zone_with_notice(&server, &format!("{NOTICE}s"));
    let two_hours_ago = (jiff::Timestamp::now() - jiff::SignedDuration::from_hours(2))
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    for name in ["first", "second", "stale"] {
        let mut pod = pod(&format!("{NS}/{name}"), "rev-1")
            .preemptable()
            .owned_by("Job", name);
        if name == "stale" {
            pod = pod.patch(json!({"status": {"conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": two_hours_ago},
                {"type": "tidal.dev/EvictionNotice", "status": "True", "lastTransitionTime": two_hours_ago},
            ]}}));
        }
        server.apply(pod);
    }
    let controller = server.controller();

    let told_at = |name: &str| -> Option<jiff::Timestamp> {
        let pod = server.get("pods", NS, name)?;
        let notice = pod["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "tidal.dev/EvictionNotice" && c["status"] == "True")?
            .clone();
        let at: jiff::Timestamp = notice["lastTransitionTime"].as_str()?.parse().ok()?;
        (at > jiff::Timestamp::now() - jiff::SignedDuration::from_mins(5)).then_some(at)
    };
    let told: Vec<jiff::Timestamp> = eventually("every pod told", || {
        ["first", "second", "stale"]
            .iter()
            .map(|name| told_at(name))
            .collect()
    })
    .await;
    let last_told = *told.iter().max().unwrap();
    // Until the notices have run, nothing goes, round after round.
    while jiff::Timestamp::now() < last_told + jiff::SignedDuration::from_secs(NOTICE - 1) {
        let evictions = server.evictions();
        for (name, at) in ["first", "second", "stale"].iter().zip(&told) {
            if jiff::Timestamp::now() < *at + jiff::SignedDuration::from_secs(NOTICE) {
                assert_eq!(
                    real_attempts(&evictions, name),
                    0,
                    "{name} evicted before its notice ran"
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for (name, at) in ["first", "second", "stale"].iter().zip(&told) {
        let pod = server.get("pods", NS, name).unwrap();
        // The strategic merge keeps the pod's other conditions.
        let types: Vec<&str> = pod["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["type"].as_str())
            .collect();
        assert!(types.contains(&"PodScheduled"), "{name}: {types:?}");
        let annotations = &pod["metadata"]["annotations"];
        let after: jiff::Timestamp = annotations["tidal.dev/evict-after"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: {annotations}"))
            .parse()
            .unwrap();
        assert_eq!(
            after,
            *at + jiff::SignedDuration::from_secs(NOTICE),
            "{name}"
        );
        assert!(
            annotations["tidal.dev/evict-by"].is_string(),
            "{name}: {annotations}"
        );
        let events = events_about(&server, name, "EvictionNotice");
        assert_eq!(events.len(), 1, "{name}: {events:#?}");
    }
    eventually("all three evicted once told long enough", || {
        ["first", "second", "stale"]
            .iter()
            .all(|name| !accepted(&server.evictions(), name).is_empty())
            .then_some(())
    })
    .await;
    let metrics = controller.metrics().await;
    assert_eq!(
        metric_sum(
            &metrics,
            "tidal_eviction_notices_total{zone=\"z\",result=\"given\"}"
        ),
        3.0,
        "{metrics}"
    );
    controller.stop().await;
}

/// The notice of `first` cannot be written (403, as without the chart's `evictionNotice.enabled`):
/// it is not evicted, the zone gets one Warning that says what to grant, and once the writes go
/// through it is told and then evicted like `second`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_that_cannot_be_told_stays_and_the_zone_says_what_to_grant() {
    let server = Scenario::start().await;
    draining_zone_with_notice(&server, "2s");
    for name in ["first", "second"] {
        server.apply(
            pod(&format!("{NS}/{name}"), "rev-1")
                .preemptable()
                .owned_by("Job", name),
        );
    }
    // Refused for a while: the refresh tries it again every few seconds.
    server.fail_requests("PATCH", "/pods/first/status", &[403, 403]);
    let controller = server.controller();
    eventually("second evicted after its notice", || {
        (!accepted(&server.evictions(), "second").is_empty()).then_some(())
    })
    .await;
    assert_eq!(
        real_attempts(&server.evictions(), "first"),
        0,
        "evicted untold"
    );
    let warnings = server
        .list("apis/events.k8s.io/v1", "events")
        .into_iter()
        .filter(|e| e["reason"] == "EvictionNoticeForbidden")
        .collect::<Vec<_>>();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert_eq!(warnings[0]["regarding"]["name"], "z");
    assert!(
        warnings[0]["note"]
            .as_str()
            .unwrap()
            .contains("evictionNotice.enabled=true"),
        "{}",
        warnings[0]["note"]
    );
    eventually("first told and evicted once the writes go through", || {
        (!accepted(&server.evictions(), "first").is_empty()).then_some(())
    })
    .await;
    let metrics = controller.metrics().await;
    assert_eq!(
        metric_sum(
            &metrics,
            "tidal_eviction_notices_total{zone=\"z\",result=\"failed\"}"
        ),
        2.0,
        "{metrics}"
    );
    controller.stop().await;
}

/// An open zone far from its close, and a pod still carrying a notice from before the window opened
/// (its eviction then did not happen): the notice is taken back, condition `False` and annotations
/// gone, so the workload reading it knows it stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_for_an_earlier_close_is_taken_back_once_the_zone_is_open() {
    let server = Scenario::start().await;
    server.apply(node("rev-1").zone("z"));
    server.apply(node("std-1"));
    server.apply(
        zone("z")
            .window(&open_window())
            .spec(json!({"evictionNotice": "10m", "drainBefore": "10m"})),
    );
    server.apply(policy(json!({"mode": "Evict", "interval": "1h"})).named("tdm"));
    let yesterday = (jiff::Timestamp::now() - jiff::SignedDuration::from_hours(20))
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    server.apply(
        pod(&format!("{NS}/kept"), "rev-1")
            .preemptable()
            .owned_by("Job", "kept")
            .annotation("tidal.dev/evict-after", &yesterday)
            .annotation("tidal.dev/evict-by", &yesterday)
            .patch(json!({"status": {"conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": yesterday},
                {"type": "tidal.dev/EvictionNotice", "status": "True", "lastTransitionTime": yesterday},
            ]}})),
    );
    let controller = server.controller();
    // The condition is written first, the annotations right after: wait for both.
    let pod = eventually("the notice taken back", || {
        let pod = server.get("pods", NS, "kept")?;
        let notice = pod["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "tidal.dev/EvictionNotice")?
            .clone();
        let annotations = &pod["metadata"]["annotations"];
        let gone = annotations.get("tidal.dev/evict-after").is_none()
            && annotations.get("tidal.dev/evict-by").is_none();
        (notice["status"] == "False" && gone).then_some(pod)
    })
    .await;
    let annotations = &pod["metadata"]["annotations"];
    assert_eq!(
        annotations["volcano.sh/preemptable"], "true",
        "{annotations}"
    );
    assert!(
        server.evictions().iter().all(|e| e.dry_run),
        "nothing evicted"
    );
    controller.stop().await;
}
