//! High availability end to end: several `tidal run` replicas against one fake API server, electing a
//! leader on a Lease. Only the holder of the lease may evict; failover works on release and on crash.

use std::time::Duration;

use crate::support::*;
use serde_json::{Value, json};

const NS: &str = "batch";

fn holder(server: &FakeApiServer) -> Option<String> {
    server
        .get("leases", "tidal-system", "tidal-controller")
        .and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_owned))
}

/// Replays the request log: every successful lease write sets the holder; every eviction must come
/// from the holder of that moment.
fn assert_only_holders_evicted(server: &FakeApiServer) {
    let mut current: Option<String> = None;
    for (index, request) in server.requests().iter().enumerate() {
        let lease_write =
            request.path.ends_with("/leases") || request.path.ends_with("/leases/tidal-controller");
        if lease_write && matches!(request.method.as_str(), "POST" | "PUT") {
            if (200..300).contains(&request.code) {
                current = request.body["spec"]["holderIdentity"]
                    .as_str()
                    .map(str::to_owned);
            }
        } else if request.path.ends_with("/eviction") {
            assert_eq!(
                current.as_deref(),
                Some(request.user.as_str()),
                "request {index}: {} evicted while {current:?} held the lease",
                request.user
            );
        }
    }
}

/// A revocable node in a closed zone with this `evictPeriod`, and a TDM policy running every 200ms.
fn one_closed_zone(server: &FakeApiServer, evict_period: &str) {
    server.apply(node("rev-1").zone("rz"));
    server.apply(
        zone("rz")
            .window(&closed_window())
            .evict_period(evict_period),
    );
    server.apply(policy(json!({"mode": "Evict", "interval": "200ms"})).named("tdm"));
}

fn evicted_by(server: &FakeApiServer, pod: &str) -> Vec<String> {
    accepted(&server.evictions(), pod)
        .into_iter()
        .map(|e| e.user)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_lease_holder_evicts_and_standbys_take_over() {
    let server = Scenario::start().await;
    // Evicted pods terminate as on a real cluster, so a new leader sees them leaving.
    server.set_eviction_effect(EvictionEffect::Terminate);
    one_closed_zone(&server, "1s");
    server.apply(pod(&format!("{NS}/v1"), "rev-1"));

    let a = server.controller_with("a", &[]);
    eventually("a to hold the lease", || {
        (holder(&server).as_deref() == Some("a")).then_some(())
    })
    .await;
    let b = server.controller_with("b", &[]);
    eventually("v1 evicted", || {
        (!evicted_by(&server, "v1").is_empty()).then_some(())
    })
    .await;
    a.wait_cycles(3.0).await;
    assert_eq!(b.cycles().await, 0.0, "a standby runs no cycle");
    assert_eq!(metric_sum(&b.metrics().await, "tidal_leader "), 0.0);
    assert_eq!(metric_sum(&a.metrics().await, "tidal_leader "), 1.0);

    // Graceful: SIGTERM releases the lease, the standby takes over without waiting for expiry.
    a.stop().await;
    eventually("b to hold the lease", || {
        (holder(&server).as_deref() == Some("b")).then_some(())
    })
    .await;
    server.apply(pod(&format!("{NS}/v2"), "rev-1"));
    eventually("v2 evicted", || {
        (!evicted_by(&server, "v2").is_empty()).then_some(())
    })
    .await;

    // Crash: b dies without releasing; c waits out the lease on its own clock, then leads.
    let c = server.controller_with("c", &[]);
    eventually("c to poll the lease as a standby", || {
        server
            .requests()
            .iter()
            .any(|r| r.user == "c" && r.path.ends_with("/leases/tidal-controller"))
            .then_some(())
    })
    .await;
    b.kill().await;
    server.apply(pod(&format!("{NS}/v3"), "rev-1"));
    eventually("c to hold the lease", || {
        (holder(&server).as_deref() == Some("c")).then_some(())
    })
    .await;
    eventually("v3 evicted", || {
        (!evicted_by(&server, "v3").is_empty()).then_some(())
    })
    .await;
    c.wait_cycles(2.0).await;

    assert_eq!(evicted_by(&server, "v1"), vec!["a"]);
    assert_eq!(evicted_by(&server, "v2"), vec!["b"]);
    assert_eq!(evicted_by(&server, "v3"), vec!["c"]);
    for pod in ["v1", "v2", "v3"] {
        assert_eq!(real_attempts(&server.evictions(), pod), 1, "{pod}");
    }
    assert_only_holders_evicted(&server);
    let lease = server
        .get("leases", "tidal-system", "tidal-controller")
        .unwrap();
    assert_eq!(lease["spec"]["leaseTransitions"], json!(3), "{lease}");
    c.stop().await;
    assert_eq!(holder(&server), None, "released on shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_lease_is_taken_stops_at_once() {
    let server = Scenario::start().await;
    server.set_eviction_effect(EvictionEffect::Terminate);
    one_closed_zone(&server, "1h");
    let a = server.controller_with("a", &[]);
    eventually("a to lead", || {
        (holder(&server).as_deref() == Some("a")).then_some(())
    })
    .await;
    a.wait_cycles(1.0).await;

    // Someone else takes the lease (another replica whose writes won): a must stop.
    server.update(
        "leases",
        "tidal-system",
        "tidal-controller",
        |lease: &mut Value| {
            lease["spec"]["holderIdentity"] = json!("intruder");
            lease["spec"]["leaseDurationSeconds"] = json!(3600);
        },
    );
    eventually_async("a to step down", || async {
        (metric_sum(&a.metrics().await, "tidal_leader ") == 0.0).then_some(())
    })
    .await;
    server.apply(pod(&format!("{NS}/v1"), "rev-1"));
    // a keeps polling the lease (and keeps its cache fed) but never acts.
    let lease_reads = |server: &FakeApiServer| {
        server
            .requests()
            .iter()
            .filter(|r| {
                r.user == "a" && r.method == "GET" && r.path.ends_with("/leases/tidal-controller")
            })
            .count()
    };
    let before = lease_reads(&server);
    eventually("a few more lease polls", || {
        (lease_reads(&server) >= before + 5).then_some(())
    })
    .await;
    assert!(server.evictions().is_empty(), "{:#?}", server.evictions());
    assert_eq!(holder(&server).as_deref(), Some("intruder"));
    a.stop().await;
    assert_eq!(
        holder(&server).as_deref(),
        Some("intruder"),
        "a only releases its own lease"
    );
}

/// Longer than any test may take: a request held this long only ends if tidal gives up on it.
const STUCK: Duration = Duration::from_secs(3600);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_abandons_slow_requests_after_the_grace_period_and_releases_the_lease() {
    let server = Scenario::start().await;
    // An eviction that hangs.
    server.set_eviction_delay(STUCK);
    one_closed_zone(&server, "1h");
    for name in ["v1", "v2", "v3"] {
        server.apply(pod(&format!("{NS}/{name}"), "rev-1"));
    }
    let a = start_patient(&server, "200ms");
    eventually("the first eviction in flight", || {
        (sent(&server) == 1).then_some(())
    })
    .await;
    tokio::time::timeout(Duration::from_secs(120), a.stop())
        .await
        .expect("shutdown waits for the grace period, not for the stuck request");
    assert_eq!(sent(&server), 1, "nothing new is sent once stopping");
    assert_eq!(holder(&server), None, "the lease is released");
}

/// Stopping just after the server turned down a renewal (409: another write landed first, such as an
/// earlier renewal of ours abandoned in flight) still hands the lease back: the release reads the lease
/// and retries its own 409s rather than trusting what the replica last believed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_is_handed_back_when_stopping_right_after_a_renewal_was_turned_down() {
    let server = Scenario::start().await;
    server.apply(node("rev-1"));
    let a = server.controller_with("a", &[]);
    eventually("a leads", || {
        (holder(&server).as_deref() == Some("a")).then_some(())
    })
    .await;
    server.fail_requests("PUT", "leases/tidal-controller", &[409, 409, 409]);
    eventually("a renewal turned down", || {
        server
            .requests()
            .iter()
            .any(|r| r.method == "PUT" && r.path.contains("/leases/") && r.code == 409)
            .then_some(())
    })
    .await;
    a.stop().await;
    assert_eq!(holder(&server), None, "the lease is released");
}

/// A leader that sends one eviction at a time and would wait for a stuck one as long as it takes
/// (request timeout, cycle deadline): only the shutdown grace period can end it.
fn start_patient(server: &Scenario, grace: &str) -> Controller {
    server.controller_configured(
        "a",
        &[
            "--eviction-concurrency",
            "1",
            "--shutdown-grace",
            grace,
            "--cycle-timeout",
            "1h",
        ],
        |config| config.eviction.request_timeout = STUCK,
    )
}

fn sent(server: &FakeApiServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/eviction"))
        .count()
}

/// SIGTERM in the middle of a round: what was evicted before is on record (the zone's round, the
/// pod's event) before the lease goes, so a standby does not start a new round at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_round_records_the_round_and_events_before_releasing() {
    let server = Scenario::start().await;
    server.set_eviction_effect(EvictionEffect::Terminate);
    one_closed_zone(&server, "1h");
    server.apply(pod(&format!("{NS}/v1"), "rev-1"));
    server.apply(pod(&format!("{NS}/v2"), "rev-1"));
    // The first eviction goes through, the second hangs.
    server.eviction_faults(&[EvictionFault::None, EvictionFault::Delay(STUCK)]);
    let a = start_patient(&server, "300ms");
    eventually("one eviction done, the next in flight", || {
        (sent(&server) == 2).then_some(())
    })
    .await;
    let evicted: Vec<String> = ["v1", "v2"]
        .into_iter()
        .filter(|name| !evicted_by(&server, name).is_empty())
        .map(str::to_owned)
        .collect();
    assert_eq!(evicted.len(), 1, "{:#?}", server.evictions());
    // Recorded as soon as the round's first eviction went through, not only after the cycle.
    eventually("the round on the zone while the round goes on", || {
        let zone = server.get("revocablezones", "", "rz").unwrap();
        zone["status"]["lastEvictionRound"]
            .is_string()
            .then_some(())
    })
    .await;
    tokio::time::timeout(Duration::from_secs(120), a.stop())
        .await
        .expect("stops after the grace period");

    let zone = server.get("revocablezones", "", "rz").unwrap();
    assert!(zone["status"]["lastEvictionRound"].is_string(), "{zone}");
    let events: Vec<Value> = server
        .list("apis/events.k8s.io/v1", "events")
        .into_iter()
        .filter(|e| {
            e["regarding"]["name"] == json!(evicted[0]) && e["reason"] == json!("Descheduled")
        })
        .collect();
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(holder(&server), None, "the lease is released");
    // Every write happened while a held the lease.
    let release = server
        .requests()
        .iter()
        .rposition(|r| r.method == "PUT" && r.path.ends_with("/leases/tidal-controller"))
        .unwrap();
    let last_write = server
        .requests()
        .iter()
        .rposition(|r| r.method != "GET" && !r.path.contains("/leases"))
        .unwrap();
    assert!(last_write < release, "wrote after releasing the lease");
}

/// Renewals that fail for longer than the renew deadline: the leader stops acting without waiting
/// to learn who holds the lease, and acts again once it renews.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_cannot_renew_stops_acting_until_it_can() {
    let server = Scenario::start().await;
    server.set_eviction_effect(EvictionEffect::Terminate);
    one_closed_zone(&server, "1s");
    let a = server.controller_with("a", &[]);
    eventually("a to lead", || {
        (holder(&server).as_deref() == Some("a")).then_some(())
    })
    .await;
    a.wait_cycles(1.0).await;
    // About five seconds of failing renewals (one try every 100ms), renew deadline 1s.
    server.fail_requests("GET", "/leases/tidal-controller", &[500; 50]);
    eventually_async("a to step down", || async {
        (metric_sum(&a.metrics().await, "tidal_leader ") == 0.0).then_some(())
    })
    .await;
    eventually_async("a to lead again", || async {
        (metric_sum(&a.metrics().await, "tidal_leader ") == 1.0).then_some(())
    })
    .await;
    server.apply(pod(&format!("{NS}/v1"), "rev-1"));
    eventually("v1 evicted", || {
        (evicted_by(&server, "v1") == vec!["a".to_owned()]).then_some(())
    })
    .await;
    assert_only_holders_evicted(&server);
    a.stop().await;
}

/// The binary itself: SIGTERM stops it cleanly (exit 0) and hands the lease back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_releases_its_lease_on_sigterm() {
    let server = Scenario::start().await;
    one_closed_zone(&server, "1h");
    server.apply(pod(&format!("{NS}/v1"), "rev-1"));
    let kubeconfig = server.kubeconfig("bin");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_tidal"))
        .args(["run", "--kubeconfig"])
        .arg(&kubeconfig)
        .args([
            "--identity",
            "bin",
            "--leader-elect-resource-namespace",
            "tidal-system",
        ])
        .args([
            "--leader-elect-lease-duration",
            "2s",
            "--leader-elect-renew-deadline",
            "1s",
            "--leader-elect-retry-period",
            "100ms",
        ])
        .args(["--metrics-bind-address", &free_addr().to_string()])
        .args(["--health-probe-bind-address", &free_addr().to_string()])
        .args(["--log-format", "json"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    eventually("the binary to evict v1", || {
        (evicted_by(&server, "v1") == vec!["bin".to_owned()]).then_some(())
    })
    .await;
    assert_eq!(holder(&server).as_deref(), Some("bin"));
    let pid = child.id().unwrap();
    let killed = std::process::Command::new("sh")
        .args(["-c", &format!("kill -TERM {pid}")])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait())
        .await
        .expect("the binary stops on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(holder(&server), None, "released on SIGTERM");
}

/// `evictPeriod` holds across a restart: the next controller's first round waits for the period to
/// pass from the round the stopped one recorded (kept to the microsecond: see the status writer's
/// tests), however soon it starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rounds_across_a_restart_are_never_closer_than_evict_period() {
    const PERIOD: Duration = Duration::from_secs(3);
    let server = Scenario::start().await;
    one_closed_zone(&server, "3s");
    // One job of three that may lose one pod a round: one round per eviction.
    for i in 0..3 {
        server.apply(
            pod(&format!("{NS}/job-{i}"), "rev-1")
                .preemptable()
                .owned_by("ReplicaSet", "job")
                .annotation("volcano.sh/jdb-max-unavailable", "1"),
        );
    }
    let evictions = |server: &FakeApiServer| {
        server
            .evictions()
            .iter()
            .filter(|e| !e.dry_run && (200..300).contains(&e.code))
            .count()
    };
    let a = server.controller_with("a", &["--leader-elect", "false"]);
    eventually("the first round", || {
        (evictions(&server) == 1).then_some(())
    })
    .await;
    let round = eventually("the first round on record", || {
        let zone = server.get("revocablezones", "", "rz")?;
        zone["status"]["lastEvictionRound"]
            .as_str()
            .and_then(|at| at.parse::<jiff::Timestamp>().ok())
    })
    .await;
    a.stop().await;
    assert_eq!(evictions(&server), 1, "{:#?}", server.evictions());

    let earliest = round + jiff::SignedDuration::try_from(PERIOD).unwrap();
    let b = server.controller_with("b", &["--leader-elect", "false"]);
    // Seen done at `now` means done by `now`: seen before `earliest`, the round came early.
    loop {
        let now = jiff::Timestamp::now();
        if evictions(&server) >= 2 {
            assert!(
                now >= earliest,
                "the next round was done by {now}, before {earliest} (last round {round} + {PERIOD:?})"
            );
            break;
        }
        assert!(
            now < earliest + jiff::SignedDuration::from_secs(30),
            "no second round"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    b.stop().await;
}
