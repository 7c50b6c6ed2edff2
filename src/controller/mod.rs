//! `tidal run`: the live controller. Watches feed the shared cache; once every kind has listed, the
//! leader runs cycles when a policy's interval passes, a policy changes, or a zone changes phase, and
//! acts through the Eviction API. Followers keep their caches warm and wait for the lease.
//!
//! The parts only the controller has: the cycle and its schedule, the evictor, status and events,
//! metrics, and the closed-zone taint reconciler. What it shares with the webhook (client, admin
//! server, watches, lease) is in `crate::runtime`.
//!
//! Entry point: [`run`] (what the binary calls).

pub(crate) mod cycle;
pub(crate) mod cycle_result;
pub(crate) mod cycle_timer;
pub(crate) mod drain_refresh;
pub(crate) mod drains;
pub mod evictor;
pub(crate) mod finish;
pub(crate) mod live_commands;
pub mod metrics;
pub(crate) mod notices;
pub(crate) mod status;
pub mod taints;
pub(crate) mod unanswered;
pub(crate) mod verification;

use std::{net::SocketAddr, sync::Arc, time::Duration};

use anyhow::Context;
use jiff::Timestamp;
use kube::Client;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub use cycle::{CycleRunner, CycleSettings};
use cycle_timer::CycleTimer;

use self::{
    drains::Drains,
    evictor::{EvictionQueue, Evictor, EvictorConfig},
    metrics::Metrics,
    status::StatusWriter,
    taints::KeeperSettings,
};
use crate::{
    cluster::{ObjectKind, SharedCache, Snapshot},
    runtime::{
        ClientArgs, admin, client,
        leader::{self, LeaderHandle, LeaseConfig},
        until_leading_and_synced,
        watch::{self, WatchOptions, WatchPlan},
    },
};

/// Everything `tidal run` is configured with.
#[derive(Clone)]
pub struct ControllerConfig {
    pub client: ClientArgs,
    /// `None`: no election, this process always leads (`--leader-elect=false`).
    pub lease: Option<LeaseConfig>,
    pub metrics_addr: SocketAddr,
    pub health_addr: SocketAddr,
    pub eviction: EvictorConfig,
    pub cycle: CycleSettings,
    /// After a zone or policy changes, wait this long for more edits before re-planning.
    pub config_debounce: Duration,
    /// On shutdown, in-flight requests get this long to finish before they are abandoned; writing
    /// back what the interrupted cycle did then gets as long again.
    pub shutdown_grace: Duration,
    /// Keep closed-zone taints on the nodes of closed zones (see [`taints::keep`]); `None`: off.
    pub zone_taints: Option<KeeperSettings>,
    pub watch: WatchOptions,
    /// How often to read metrics.k8s.io while a policy uses measured usage; `None` never reads it.
    /// Also how often Prometheus is asked, when it is configured.
    pub usage_poll: Option<Duration>,
    /// Where Prometheus is, for policies whose utilization strategies read it.
    pub prometheus: crate::runtime::PrometheusArgs,
    /// `auto` drains start this many times their estimated length before the close.
    pub drain_margin: f64,
}

impl ControllerConfig {
    pub fn new(metrics_addr: SocketAddr, health_addr: SocketAddr) -> Self {
        ControllerConfig {
            client: ClientArgs::default(),
            lease: None,
            metrics_addr,
            health_addr,
            eviction: EvictorConfig::default(),
            cycle: CycleSettings::default(),
            config_debounce: Duration::from_millis(500),
            shutdown_grace: Duration::from_secs(10),
            zone_taints: None,
            watch: WatchOptions::default(),
            usage_poll: Some(Duration::from_secs(30)),
            prometheus: crate::runtime::PrometheusArgs::default(),
            drain_margin: crate::drain::DEFAULT_MARGIN,
        }
    }
}

/// Runs the controller until `shutdown` is cancelled (SIGTERM in the binary).
pub async fn run(config: ControllerConfig, shutdown: CancellationToken) -> anyhow::Result<()> {
    let client_config = config.client.config().await?;
    let evictions = client::without_retries(&client_config)?;
    let client = Client::try_from(client_config).context("building the Kubernetes client")?;
    run_with_clients(client, evictions, config, shutdown).await
}

/// [`run`] with clients built by the caller (`evictions` as [`client::without_retries`] makes it).
pub async fn run_with_clients(
    client: Client,
    evictions: Client,
    config: ControllerConfig,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let metrics = Arc::new(Metrics::new());
    let shared = SharedCache::new(&ObjectKind::ALL);
    let metrics_listener = admin::bind(config.metrics_addr).await?;
    let health_listener = admin::bind(config.health_addr).await?;

    // The election stops only after the control loop has returned: its last cycle finished (what it
    // did written back) or was given up after the grace periods. Requests given up on may still be
    // applied by the API server after the lease is released; that is what the margin between lease
    // duration and renew deadline is for.
    let election_stop = CancellationToken::new();
    let (leader, election) = match &config.lease {
        Some(lease) => {
            info!(identity = %lease.identity, lease = %format!("{}/{}", lease.namespace, lease.name), "leader election on");
            let (handle, task) =
                leader::spawn(client.clone(), lease.clone(), election_stop.clone());
            (handle, Some(AbortOnDrop(task)))
        }
        None => (LeaderHandle::always(), None),
    };

    let servers_stop = CancellationToken::new();
    let mut background = JoinSet::new();
    background.spawn(admin::serve(
        metrics_listener,
        metrics::router(metrics::MetricsState {
            metrics: metrics.clone(),
            cache: shared.clone(),
            leader: leader.clone(),
        }),
        servers_stop.clone(),
    ));
    background.spawn(admin::serve(
        health_listener,
        admin::health_router(shared.clone()),
        servers_stop.clone(),
    ));
    for task in watch::start_with(
        client.clone(),
        shared.clone(),
        &WatchPlan::controller(),
        metrics.clone(),
        &config.watch,
    )
    .await
    {
        background.spawn(task);
    }
    if let Some(interval) = config.usage_poll {
        background.spawn(watch::usage::poll(
            client.clone(),
            shared.clone(),
            interval,
            metrics.clone(),
        ));
        if let Some(prometheus) = config.prometheus.client()? {
            background.spawn(crate::runtime::prometheus::poll(
                prometheus,
                shared.clone(),
                interval,
            ));
        }
    }

    if let Some(settings) = &config.zone_taints {
        background.spawn(taints::keep(
            client.clone(),
            shared.clone(),
            leader.clone(),
            shutdown.clone(),
            settings.clone(),
        ));
    }
    let abandon = CancellationToken::new();
    background.spawn({
        let (shutdown, abandon, grace) = (shutdown.clone(), abandon.clone(), config.shutdown_grace);
        async move {
            shutdown.cancelled().await;
            tokio::time::sleep(grace).await;
            abandon.cancel();
        }
    });

    let guard = Arc::new(cycle::ActGuard {
        leader: leader.clone(),
        shutdown: shutdown.clone(),
        abandon,
    });
    let evictor = Evictor::new(evictions, config.eviction.clone());
    let queue = EvictionQueue::new();
    background.spawn({
        let (queue, evictor, guard) = (queue.clone(), evictor.clone(), Arc::clone(&guard));
        let (shared, stop) = (shared.clone(), servers_stop.clone());
        async move { queue.dispatch(evictor, guard, shared, stop).await }
    });

    let identity = config
        .lease
        .as_ref()
        .map_or_else(leader::default_identity, |l| l.identity.clone());
    let mut runtime = CycleRunner {
        client: client.clone(),
        shared: shared.clone(),
        snapshot: Snapshot::default(),
        evictor: evictor.clone(),
        queue: queue.clone(),
        guard: Arc::clone(&guard),
        status: Arc::new(StatusWriter::new(
            client.clone(),
            &identity,
            leader.clone(),
            metrics.clone(),
        )),
        metrics,
        settings: config.cycle.clone(),
        warned: Default::default(),
        last_verified: Default::default(),
        drains: Drains::new(config.drain_margin),
        notifier: notices::Notifier::default(),
        finishing: JoinSet::new(),
        unanswered: Arc::default(),
    };
    control_loop(&mut runtime, &config, leader, &shutdown).await;

    info!("stopping: releasing the lease");
    election_stop.cancel();
    if let Some(mut election) = election {
        let _ = (&mut election.0).await;
    }
    servers_stop.cancel();
    background.abort_all();
    while background.join_next().await.is_some() {}
    Ok(())
}

/// Aborts the task when dropped: if `run` itself is dropped (its task aborted), the election must not
/// go on renewing a lease that nobody acts on.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn control_loop(
    rt: &mut CycleRunner,
    config: &ControllerConfig,
    leader: LeaderHandle,
    shutdown: &CancellationToken,
) {
    const MAX_SLEEP: Duration = Duration::from_secs(30);
    let mut timer = CycleTimer::default();
    let mut leadership = leader.clone();
    let mut changes = rt.shared.config_changes();
    loop {
        let shared = rt.shared.clone();
        let following = || {
            timer.reset();
            rt.drains.reset();
            rt.notifier.reset();
            rt.status.forget();
        };
        if !until_leading_and_synced("cycles", &leader, &shared, shutdown, following).await {
            break;
        }

        let now = Timestamp::now();
        rt.settle_unanswered(now);
        rt.refresh_drains(now, false).await;
        let (policies, zones) = rt.clocks(now);
        if let Some(due) = timer.due(&policies, &zones, now) {
            info!(trigger = due.trigger.as_str(), policies = ?due.policies, "cycle");
            // Returns once the evictions are queued: the next zone change is acted on while they
            // go out.
            rt.run_cycle(&due.policies, now, due.trigger).await;
            let (policies, zones) = rt.snapshot_clocks(now);
            timer.record(&due.policies, &policies, &zones, now);
            continue;
        }

        let next = [
            timer.next_wakeup(&policies, &zones),
            Some(rt.drains.next_refresh(now)),
            (!rt.unanswered.is_empty()).then(|| now + unanswered::RECHECK),
        ]
        .into_iter()
        .flatten()
        .min();
        let wake = cycle_timer::sleep_for(next, now, MAX_SLEEP);
        tokio::select! {
            () = tokio::time::sleep(wake) => {}
            changed = changes.changed() => {
                if changed.is_ok() {
                    // Let a burst of edits (or our own status writes) settle before re-planning.
                    tokio::select! {
                        () = tokio::time::sleep(config.config_debounce) => {}
                        () = shutdown.cancelled() => break,
                    }
                    changes.borrow_and_update();
                }
            }
            () = leadership.lost() => {}
            () = shutdown.cancelled() => break,
        }
    }
    // Past the grace period requests on the wire are cut (see `ActGuard`) and every cycle writes
    // back what it did: what was evicted must be on record before the lease goes to a standby. The
    // write-backs get one more grace period.
    if !rt.finish_all(config.shutdown_grace.saturating_mul(2)).await {
        warn!(
            "shutdown: the write-back of cycles still finishing did not end in time; giving it up"
        );
    }
}

/// `run` must stay spawnable: this fails to compile if its future stops being `Send`.
#[allow(dead_code)]
fn run_is_send(config: ControllerConfig, shutdown: CancellationToken) {
    fn spawnable<T: Send>(_: T) {}
    spawnable(run(config, shutdown));
}
