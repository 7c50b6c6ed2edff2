//! Reviews and probes answered during floods from eight addresses, against `tidal webhook` as its
//! own process (the release build under `cargo bench`) and the fake API server.
//!
//! - The admission port: 8 addresses × 150 workers, each reconnecting as soon as its connection is
//!   closed, taking in turn stalled TLS handshakes, idle TLS connections, trickled headers and
//!   trickled bodies; meanwhile one review a second, each on a fresh connection from a ninth address.
//! - The plain-HTTP probe port: 8 addresses × 30 reconnecting workers that never finish their
//!   headers; meanwhile one `GET /readyz` a second from a ninth address.
//! - The admission port again: 8 addresses × 16 reconnecting workers that each announce a 6 MB body
//!   and send one byte of it a second; then as many that send its first mebibyte before trickling.
//!   Meanwhile a review of 300 KB and one of 5 MB a second, in turn, from a ninth address, and the
//!   webhook's peak memory over each flood.
//!
//! Prints, for each, how many were sent, the p50, p99 and max latency, how many took over 1s and 5s,
//! and how many got no answer within 20s. `FLOOD_SECS` (default 40) sets the length of each flood,
//! `FLOODS=large` runs only the last two;
//! `TIDAL_BIN` runs another build of the binary. Figures are in docs/admission.md.

use std::{
    net::{IpAddr, SocketAddr},
    path::PathBuf,
    time::{Duration, Instant},
};

use serde_json::json;
use tidal_testkit::{
    admission,
    fake_apiserver::FakeApiServer,
    flood::{self, Attack, Flood},
    webhook_process::WebhookProcess,
};
use tokio_rustls::TlsConnector;

const LEGIT: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 10));
const NO_ANSWER: Duration = Duration::from_secs(20);

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let seconds: u64 = std::env::var("FLOOD_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let binary = std::env::var("TIDAL_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_BIN_EXE_tidal")));
    let server = FakeApiServer::start().await;
    let dir = tempfile::tempdir().expect("a scratch folder");
    let hook = WebhookProcess::start(
        &binary,
        &server.kubeconfig(dir.path(), "webhook"),
        dir.path(),
    )
    .await;
    println!("{} against {}", binary.display(), hook.https);

    let which = std::env::var("FLOODS").unwrap_or_default();
    if which != "large" {
        slot_floods(&hook, seconds).await;
    }
    large_body_floods(&hook, seconds).await;
}

/// The floods that compete for connection slots: the admission port, then the probe port.
async fn slot_floods(hook: &WebhookProcess, seconds: u64) {
    let review = flood::post(
        "/mutate-pods",
        &admission::pod_review(admission::pod("web-1", json!({}), None)),
    );
    let (https, tls) = (hook.https, hook.tls.clone());
    let attackers = attack(move || {
        Flood::start(
            https,
            &flood::loopback(2, 9),
            150,
            &Attack::ALL,
            Some(tls.clone()),
            true,
        )
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    let answered = once_a_second(hook.https, Some(&hook.tls), &[review], seconds).await;
    report(
        "reviews, admission port flooded by 8 x 150",
        &answered,
        attackers.stop(),
    );
    // Whatever the flood left open has closed by its deadlines before the next one starts.
    tokio::time::sleep(Duration::from_secs(12)).await;

    let plain = hook.plain;
    let attackers = attack(move || {
        Flood::start(
            plain,
            &flood::loopback(2, 9),
            30,
            &[Attack::SlowHeaders],
            None,
            true,
        )
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    let answered = once_a_second(hook.plain, None, &[flood::get("/readyz")], seconds).await;
    report(
        "/readyz, probe port flooded by 8 x 30",
        &answered,
        attackers.stop(),
    );
    // Whatever the flood left open has closed by its deadlines before the next one starts.
    tokio::time::sleep(Duration::from_secs(12)).await;
}

/// The floods that compete for the memory of large bodies.
async fn large_body_floods(hook: &WebhookProcess, seconds: u64) {
    let large = [300_000, 5_000_000].map(|bytes| {
        let pod = admission::pod("large", json!({"notes": "x".repeat(bytes)}), None);
        flood::post("/mutate-pods", &admission::pod_review(pod))
    });
    for (kind, what) in [
        (
            Attack::TrickledLargeBody,
            "announcing 6 MB bodies, a byte a second",
        ),
        (
            Attack::StalledLargeBody,
            "sending 1 MiB of 6 MB, then a byte a second",
        ),
    ] {
        let (https, tls) = (hook.https, hook.tls.clone());
        let attackers = attack(move || {
            Flood::start(https, &flood::loopback(2, 9), 16, &[kind], Some(tls), true)
        });
        tokio::time::sleep(Duration::from_secs(2)).await;
        hook.reset_peak();
        let answered = once_a_second(hook.https, Some(&hook.tls), &large, seconds).await;
        let peak_mib = hook.status_kib("VmHWM") / 1024;
        let opened = attackers.stop();
        for (size, first) in [("300 KB", 0), ("5 MB", 1)] {
            let these: Vec<_> = answered.iter().skip(first).step_by(2).copied().collect();
            report(
                &format!("{size} reviews, admission port flooded by 8 x 16 {what}"),
                &these,
                opened,
            );
        }
        println!("peak RSS over that flood: {peak_mib} MiB");
        // Whatever the flood left open has closed by its deadlines before the next one starts.
        tokio::time::sleep(Duration::from_secs(12)).await;
    }
}

/// A flood on a runtime of its own, in a thread of its own (two workers, as many as the machine
/// has cores): the ordinary client's requests are not queued behind a thousand attacking tasks in
/// this process, as the API server's are not in a cluster.
struct Attackers {
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<usize>,
}

fn attack(start: impl FnOnce() -> Flood + Send + 'static) -> Attackers {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let flood = start();
            let _ = stopped.await;
            flood.opened()
        })
    });
    Attackers { stop, thread }
}

impl Attackers {
    /// Stops the flood; how many connections it opened.
    fn stop(self) -> usize {
        let _ = self.stop.send(());
        self.thread.join().unwrap_or(0)
    }
}

/// Sends one of `requests` (in turn) once a second for `seconds`, each on a fresh connection from
/// [`LEGIT`] and waited for in a task of its own (a slow one does not delay the next); the latency of
/// each answer with status 200, `None` for the others.
async fn once_a_second(
    target: SocketAddr,
    tls: Option<&TlsConnector>,
    requests: &[Vec<u8>],
    seconds: u64,
) -> Vec<Option<Duration>> {
    let mut calls = Vec::new();
    for second in 0..seconds {
        let request = requests[second as usize % requests.len()].clone();
        let tls = tls.cloned();
        calls.push(tokio::spawn(async move {
            let started = Instant::now();
            let answer = tokio::time::timeout(
                NO_ANSWER,
                flood::request(target, LEGIT, tls.as_ref(), &request),
            )
            .await;
            match answer {
                Ok(Ok((200, _))) => Some(started.elapsed()),
                _ => None,
            }
        }));
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let mut answered = Vec::new();
    for call in calls {
        answered.push(call.await.unwrap_or(None));
    }
    answered
}

fn report(what: &str, answered: &[Option<Duration>], opened: usize) {
    let mut times: Vec<Duration> = answered.iter().flatten().copied().collect();
    times.sort();
    let at = |q: f64| {
        times
            .get(((times.len() as f64 * q).ceil() as usize).saturating_sub(1))
            .map_or("-".to_owned(), |t| format!("{t:.1?}"))
    };
    let over = |bound: Duration| times.iter().filter(|t| **t > bound).count();
    println!(
        "{what}: {} sent, p50 {}, p99 {}, max {}, over 1s {}, over 5s {}, no answer in 20s {} \
         ({opened} flood connections opened)",
        answered.len(),
        at(0.5),
        at(0.99),
        times.last().map_or("-".to_owned(), |t| format!("{t:.1?}")),
        over(Duration::from_secs(1)),
        over(Duration::from_secs(5)),
        answered.iter().filter(|a| a.is_none()).count(),
    );
}
