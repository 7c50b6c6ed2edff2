//! The webhook against hostile clients: pods built to amplify their patch, clients that never read
//! their answers, and floods of the admission and probe ports from eight addresses. The memory tests
//! run `tidal webhook` as a process of its own, so that its /proc figures are its alone; the flood
//! tests serve in this process with every deadline far beyond the tests' bounds, so that only the
//! listener's choice of whom to serve can let the ordinary client through.

use std::{net::IpAddr, path::Path, time::Duration};

use serde_json::{Value, json};
use tidal::{
    cluster::SharedCache,
    runtime::connections::ConnectionLimits,
    webhook::server::{self, ServeLimits, WebhookState},
};
use tidal_testkit::{
    admission,
    flood::{self, Attack, Flood},
    webhook_process::WebhookProcess,
};
use tokio::io::AsyncWriteExt;

use crate::{
    support::{Scenario, eventually_async},
    webhook::{self, cluster, created_pod, review},
};

const MIB: u64 = 1024;

fn from(last: u8) -> IpAddr {
    IpAddr::from([127, 0, 0, last])
}

/// A CREATE of the 1.24 MB pod whose split terms once made a 30.5 MB patch sent as a 110.7 MB
/// answer ([`admission::amplifying_pod`]), opted into zone `z1` or not preemptable.
fn amplifying_review(opted: bool) -> Vec<u8> {
    admission::pod_review(admission::amplifying_pod(opted))
}

async fn webhook_process(scenario: &Scenario) -> WebhookProcess {
    WebhookProcess::start(
        Path::new(env!("CARGO_BIN_EXE_tidal")),
        &scenario.kubeconfig("webhook"),
        scenario.dir(),
    )
    .await
}

/// Twelve such pods at once, half of them opted into the zone: the opted ones are refused (their split
/// cannot be written within the patch cap), the others patched with 100 short operations; every
/// answer is far under 100 KB, and the process's peak memory stays under 100 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twelve_amplifying_pods_at_once_get_small_answers_in_little_memory() {
    let scenario = Scenario::start().await;
    let hook = webhook_process(&scenario).await;
    let calls: Vec<_> = (0..12)
        .map(|n| {
            let (target, tls) = (hook.https, hook.tls.clone());
            let body = flood::post("/mutate-pods", &amplifying_review(n % 2 == 0));
            assert!(body.len() > 1_200_000);
            tokio::spawn(async move { flood::request(target, from(1), Some(&tls), &body).await })
        })
        .collect();
    for (n, call) in calls.into_iter().enumerate() {
        let (status, answer) = tokio::time::timeout(Duration::from_secs(120), call)
            .await
            .expect("answered")
            .unwrap()
            .unwrap();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
        assert!(
            answer.len() < 100_000,
            "an answer of {} bytes",
            answer.len()
        );
        let response = &serde_json::from_slice::<Value>(&answer).unwrap()["response"];
        if n % 2 == 0 {
            assert_eq!(response["allowed"], false, "{response}");
            assert!(response.get("patch").is_none());
            let message = response["status"]["message"].as_str().unwrap();
            assert!(message.contains("opts into revocable zone z1"), "{message}");
        } else {
            assert_eq!(response["allowed"], true, "{response}");
            let patch = response["patch"].as_str().expect("a base64 patch");
            assert!(
                patch.len() < 40_000,
                "a patch of {} base64 bytes",
                patch.len()
            );
        }
    }
    let peak = hook.status_kib("VmHWM");
    assert!(peak < 100 * MIB, "peak RSS {} MiB", peak / MIB);
}

/// 24 clients send such pods and never read the answer: once the webhook has answered them all,
/// what it holds for them stays under 100 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_never_read_their_answers_hold_little_memory() {
    let scenario = Scenario::start().await;
    let hook = webhook_process(&scenario).await;
    let mut held = Vec::new();
    for n in 0..24u8 {
        let body = flood::post("/mutate-pods", &amplifying_review(n % 2 == 0));
        let tcp = flood::tcp_from(hook.https, from(2 + n % 8)).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let mut tls = hook.tls.connect(name, tcp).await.unwrap();
        tls.write_all(&body).await.unwrap();
        tls.flush().await.unwrap();
        held.push(tls);
    }
    eventually_async("the webhook to answer all 24", || async {
        (hook.metric("tidal_webhook_requests_total{").await >= 24.0).then_some(())
    })
    .await;
    // Within a bound (the last decisions may still be freeing their memory when the count is in),
    // and while every answer is still unread.
    eventually_async("the webhook to hold under 100 MiB", || async {
        (hook.status_kib("VmRSS") < 100 * MIB).then_some(())
    })
    .await;
    let peak = hook.status_kib("VmHWM");
    assert!(peak < 100 * MIB, "peak RSS {} MiB", peak / MIB);
    drop(held);
}

/// A review of about `bytes` bytes: an ordinary pod with a long annotation (large
/// `last-applied-configuration` annotations make such pods common).
fn review_of_size(name: &str, bytes: usize) -> Vec<u8> {
    let pod = admission::pod(name, json!({"notes": "x".repeat(bytes)}), None);
    flood::post("/mutate-pods", &admission::pod_review(pod))
}

/// 8 addresses × 16 connections announce 6 MB bodies and send a byte a second, reconnecting when
/// closed; then as many send the first mebibyte of theirs before trickling. Reviews of 300 KB and
/// 5 MB from another address are answered meanwhile (they used to wait behind the announcements
/// for the memory of large bodies until their deadline, 408), and the process stays within 160 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_reviews_get_through_clients_that_announce_large_bodies_and_trickle() {
    let scenario = Scenario::start().await;
    let hook = webhook_process(&scenario).await;
    for attack in [Attack::TrickledLargeBody, Attack::StalledLargeBody] {
        let flood = Flood::start(
            hook.https,
            &flood::loopback(2, 9),
            16,
            &[attack],
            Some(hook.tls.clone()),
            true,
        );
        eventually_async("the flood to open its connections", || async {
            (flood.opened() >= 128).then_some(())
        })
        .await;
        // Their headers and first bytes are in.
        tokio::time::sleep(Duration::from_secs(2)).await;
        for (n, size) in [300_000, 5_000_000, 300_000, 5_000_000]
            .into_iter()
            .enumerate()
        {
            let body = review_of_size(&format!("large-{n}"), size);
            let (status, answer) = tokio::time::timeout(
                Duration::from_secs(30),
                flood::request(hook.https, from(10), Some(&hook.tls), &body),
            )
            .await
            .expect("answered")
            .unwrap();
            assert_eq!(
                status,
                200,
                "{attack:?}, a review of {size} bytes: {}",
                String::from_utf8_lossy(&answer)
            );
            let response: Value = serde_json::from_slice(&answer).unwrap();
            assert_eq!(response["response"]["allowed"], true, "{response}");
        }
        drop(flood);
    }
    let peak = hook.status_kib("VmHWM");
    eprintln!("peak RSS {} MiB", peak / MIB);
    assert!(peak < 160 * MIB, "peak RSS {} MiB", peak / MIB);
}

/// Every deadline far beyond the tests' bounds.
const NEVER: Duration = Duration::from_secs(600);

/// Ample for an answer on a loaded machine; nothing compared to [`NEVER`].
const BOUND: Duration = Duration::from_secs(10);

/// 8 addresses × 16 connections (stalled handshakes, idle TLS, trickled headers, trickled bodies)
/// against 48 slots, 16 per address: the listener is full, a flooding address gets no more than its
/// share, and reviews from another address are each answered (by the slot of a flooding
/// connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviews_get_through_a_flood_from_eight_addresses() {
    let state = WebhookState::new(SharedCache::from_cache(cluster(true, &[])), Duration::ZERO);
    let limits = ServeLimits {
        max_connections: 48,
        max_per_peer: 16,
        handshake_timeout: NEVER,
        idle_timeout: NEVER,
        request_timeout: NEVER,
        write_timeout: NEVER,
        ..server::WEBHOOK_LIMITS
    };
    let hook = webhook::start_with(state, limits, std::future::pending()).await;
    let tls = hook.pki.client();
    let flood = Flood::start(
        hook.addr,
        &flood::loopback(2, 9),
        16,
        &Attack::ALL,
        Some(tls.clone()),
        false,
    );
    eventually_async("the flood to open its connections", || async {
        (flood.opened() == 128).then_some(())
    })
    .await;
    // The flood's own addresses are at their share: one more is not served. (This can only pass
    // wrongly on a very slow machine, never fail wrongly.)
    let more = tokio::time::timeout(
        Duration::from_millis(300),
        flood::request(hook.addr, from(2), Some(&tls), &flood::get("/healthz")),
    )
    .await;
    assert!(
        !matches!(more, Ok(Ok((200, _)))),
        "a flooding address was served beyond its share"
    );
    let body = flood::post(
        "/mutate-pods",
        &review(None, "web-1", created_pod("web-1", json!({}), None)),
    );
    for _ in 0..5 {
        let (status, answer) = tokio::time::timeout(
            BOUND,
            flood::request(hook.addr, from(10), Some(&tls), &body),
        )
        .await
        .expect("a review was kept out by the flood")
        .unwrap();
        assert_eq!(status, 200);
        let response: Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(response["response"]["allowed"], true);
    }
    drop(flood);
    let _ = hook.stop.send(());
}

/// The plain-HTTP port the probes use, flooded from eight addresses with 30 connections each that
/// never finish their headers (against 64 slots, 16 per address): `/readyz` from another address is
/// answered every time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_get_through_a_flood_of_the_probe_port() {
    let (addr, stop) = webhook::serve_metrics(ConnectionLimits {
        idle_timeout: NEVER,
        request_timeout: NEVER,
        write_timeout: NEVER,
        ..ConnectionLimits::ADMIN
    })
    .await;
    let flood = Flood::start(
        addr,
        &flood::loopback(2, 9),
        30,
        &[Attack::SlowHeaders],
        None,
        false,
    );
    eventually_async("the flood to open its connections", || async {
        (flood.opened() == 240).then_some(())
    })
    .await;
    for _ in 0..5 {
        let (status, answer) = tokio::time::timeout(
            BOUND,
            flood::request(addr, from(10), None, &flood::get("/readyz")),
        )
        .await
        .expect("a probe was kept out by the flood")
        .unwrap();
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    }
    drop(flood);
    stop.cancel();
}
