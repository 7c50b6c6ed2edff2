//! Shared by the end-to-end tests: the fake API server and the object builders (from tidal-testkit),
//! and a harness that starts the controller through its real entry point (`tidal run`'s flags →
//! `controller::run`).

use std::{future::Future, net::SocketAddr, path::Path, time::Duration};

use clap::Parser;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use tidal::{
    cli::{Cli, Command},
    controller,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

pub use tidal_testkit::{
    fake_apiserver::{EvictionEffect, EvictionFault, EvictionRecord, FakeApiServer},
    objects::{NodeBuilder, node, pdb, pod, podgroup, policy, zone},
};

/// Polls `check` until it returns `Some`; fails after a generous timeout (a safety net against hangs,
/// not a performance assertion).
pub async fn eventually<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Like [`eventually`] for checks that need to await.
pub async fn eventually_async<T, F: Future<Output = Option<T>>>(
    what: &str,
    mut check: impl FnMut() -> F,
) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn free_addr() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// `GET path` over plain HTTP/1.0; returns (status code, body).
pub async fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    let code = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n")?.1.to_owned();
    Some((code, body))
}

/// Sum of the samples of a metric whose line starts with `prefix` (name plus optional label text).
pub fn metric_sum(exposition: &str, prefix: &str) -> f64 {
    exposition
        .lines()
        .filter(|line| line.starts_with(prefix))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The opening most end-to-end tests share: a fake API server and a scratch folder for kubeconfigs,
/// dropped together at the end of the test. Derefs to the server, so objects are applied to it
/// directly.
pub struct Scenario {
    server: FakeApiServer,
    dir: tempfile::TempDir,
}

impl Scenario {
    pub async fn start() -> Scenario {
        Scenario {
            server: FakeApiServer::start().await,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A kubeconfig for the server whose bearer token is `identity`.
    pub fn kubeconfig(&self, identity: &str) -> std::path::PathBuf {
        self.server.kubeconfig(self.dir.path(), identity)
    }

    /// The one controller of a test that is not about leader election: identity `a`, no lease.
    pub fn controller(&self) -> Controller {
        self.controller_with("a", &["--leader-elect", "false"])
    }

    /// `tidal run` with identity `identity` and the given extra flags.
    pub fn controller_with(&self, identity: &str, flags: &[&str]) -> Controller {
        Controller::start(&self.server, self.dir.path(), identity, flags)
    }

    /// As [`Scenario::controller_with`], with knobs that have no flag changed by `tweak`.
    pub fn controller_configured(
        &self,
        identity: &str,
        flags: &[&str],
        tweak: impl FnOnce(&mut controller::ControllerConfig),
    ) -> Controller {
        Controller::start_configured(&self.server, self.dir.path(), identity, flags, tweak)
    }
}

impl std::ops::Deref for Scenario {
    type Target = FakeApiServer;

    fn deref(&self) -> &FakeApiServer {
        &self.server
    }
}

/// A running controller.
pub struct Controller {
    pub identity: String,
    pub metrics_addr: SocketAddr,
    pub health_addr: SocketAddr,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Controller {
    /// Starts `tidal run` against `server` with the given extra flags. `identity` is also the bearer
    /// token, so the fake server can tell which controller sent a request.
    pub fn start(server: &FakeApiServer, dir: &Path, identity: &str, flags: &[&str]) -> Controller {
        Self::start_configured(server, dir, identity, flags, |_| {})
    }

    /// Starts `tidal run` as [`Controller::start`] does, then lets `tweak` change knobs that have
    /// no flag (e.g. the eviction request timeout) before the controller starts.
    pub fn start_configured(
        server: &FakeApiServer,
        dir: &Path,
        identity: &str,
        flags: &[&str],
        tweak: impl FnOnce(&mut controller::ControllerConfig),
    ) -> Controller {
        let kubeconfig = server.kubeconfig(dir, identity);
        let (metrics_addr, health_addr) = (free_addr(), free_addr());
        let mut argv: Vec<String> = [
            "tidal",
            "run",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--identity",
            identity,
            "--leader-elect-resource-namespace",
            "tidal-system",
            "--leader-elect-lease-duration",
            "2s",
            "--leader-elect-renew-deadline",
            "1s",
            "--leader-elect-retry-period",
            "100ms",
            "--eviction-qps",
            "1000",
            "--eviction-burst",
            "1000",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        argv.extend(["--metrics-bind-address".into(), metrics_addr.to_string()]);
        argv.extend([
            "--health-probe-bind-address".into(),
            health_addr.to_string(),
        ]);
        argv.extend(flags.iter().map(|s| s.to_string()));
        let cli = Cli::try_parse_from(argv).unwrap();
        let Command::Run(args) = cli.command else {
            unreachable!()
        };
        let mut config = args.controller_config().unwrap();
        // Test-only speed-ups of knobs that have no flag; everything else is the binary's own path.
        config.cycle.min_interval = Duration::from_millis(50);
        config.config_debounce = Duration::from_millis(50);
        config.eviction.request_timeout = Duration::from_secs(2);
        config.eviction.retry.initial = Duration::from_millis(20);
        config.watch.crd_recheck = Duration::from_millis(200);
        if let Some(keeper) = &mut config.zone_taints {
            keeper.debounce = Duration::from_millis(50);
            keeper.retry = Duration::from_millis(200);
        }
        tweak(&mut config);
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(controller::run(config, shutdown.clone()));
        Controller {
            identity: identity.to_owned(),
            metrics_addr,
            health_addr,
            shutdown,
            task,
        }
    }

    pub async fn metrics(&self) -> String {
        http_get(self.metrics_addr, "/metrics")
            .await
            .map(|(_, body)| body)
            .unwrap_or_default()
    }

    /// Cycles run so far, from `/metrics`.
    pub async fn cycles(&self) -> f64 {
        metric_sum(&self.metrics().await, "tidal_cycles_total")
    }

    /// Waits until `n` more cycles than now have completed.
    pub async fn wait_cycles(&self, n: f64) {
        let start = self.cycles().await;
        eventually_async("more cycles", || async {
            (self.cycles().await >= start + n).then_some(())
        })
        .await;
    }

    /// SIGTERM: stop acting, finish in-flight work, release the lease.
    pub async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap().unwrap();
    }

    /// A crash: the task is dropped without any cleanup.
    pub async fn kill(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}

// ---- object builders -------------------------------------------------------------------------

/// A daily window that does not contain the current time (UTC), so the zone is closed for hours.
pub fn closed_window() -> String {
    window_from_now(2, 3)
}

/// A daily window around the current time, open for the next hours.
pub fn open_window() -> String {
    window_from_now(-1, 3)
}

/// A daily window open since an hour ago that closes `minutes` from now (at the end of that minute).
pub fn window_closing_in(minutes: i64) -> String {
    let now = Timestamp::now();
    let hhmm = |t: Timestamp| t.strftime("%H:%M").to_string();
    format!(
        "{}-{}",
        hhmm(now - SignedDuration::from_hours(1)),
        hhmm(now + SignedDuration::from_mins(minutes))
    )
}

fn window_from_now(start_hours: i64, end_hours: i64) -> String {
    let now = Timestamp::now();
    let hhmm = |hours: i64| {
        let t = now + SignedDuration::from_hours(hours);
        t.strftime("%H:%M").to_string()
    };
    format!("{}-{}", hhmm(start_hours), hhmm(end_hours))
}

/// Events (events.k8s.io/v1) about the named object with the given reason.
pub fn events_about(server: &FakeApiServer, name: &str, reason: &str) -> Vec<Value> {
    server
        .list("apis/events.k8s.io/v1", "events")
        .into_iter()
        .filter(|e| e["regarding"]["name"] == json!(name) && e["reason"] == json!(reason))
        .collect()
}

/// Real (not dry-run) eviction requests for `name` that the server accepted.
pub fn accepted(evictions: &[EvictionRecord], name: &str) -> Vec<EvictionRecord> {
    evictions
        .iter()
        .filter(|e| e.name == name && !e.dry_run && e.code == 201)
        .cloned()
        .collect()
}

/// Real (not dry-run) eviction requests, whatever the answer.
pub fn real_attempts(evictions: &[EvictionRecord], name: &str) -> usize {
    evictions
        .iter()
        .filter(|e| e.name == name && !e.dry_run)
        .count()
}

pub fn policy_status(server: &FakeApiServer, name: &str) -> Value {
    server
        .get("deschedulingpolicies", "", name)
        .map(|p| p["status"].clone())
        .unwrap_or(Value::Null)
}
