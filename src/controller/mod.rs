//! `tidal run`: the live controller. Watches feed the shared cache; once every kind has listed, the
//! leader runs cycles when a policy's interval passes, a policy changes, or a zone changes phase, and
//! acts through the Eviction API. Followers keep their caches warm and wait for the lease.
//!
//! Entry points: [`run`] (what the binary calls) and [`client`] (shared with `tidal report`).

pub mod cycle;
pub mod hooks;
pub mod oneshot;
pub mod schedule;

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context;
use jiff::Timestamp;
use kube::{
    Client, Config,
    config::{KubeConfigOptions, Kubeconfig},
};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

pub use cycle::{CycleSettings, Runtime};
pub use hooks::{CycleContext, CycleHook};
use schedule::Scheduler;

use crate::{
    cluster::{ObjectKind, SharedCache, Snapshot},
    evictor::{Evictor, EvictorConfig},
    leader::{self, LeaderHandle, LeaseConfig},
    metrics::Metrics,
    server,
    status::StatusWriter,
    taints::{self, KeeperSettings},
    watch::{self, WatchOptions, WatchPlan},
};

/// Everything `tidal run` is configured with.
#[derive(Clone)]
pub struct ControllerConfig {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
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
    pub hooks: Vec<Arc<dyn CycleHook>>,
    /// Keep closed-zone taints between cycles too (with `taints::ZoneTaintHook` among the hooks for
    /// the cycles themselves); `None`: taints are off.
    pub zone_taints: Option<KeeperSettings>,
    pub watch: WatchOptions,
    /// How often to read metrics.k8s.io while a policy uses measured usage; `None` never reads it.
    pub usage_poll: Option<Duration>,
}

impl ControllerConfig {
    pub fn new(metrics_addr: SocketAddr, health_addr: SocketAddr) -> Self {
        ControllerConfig {
            kubeconfig: None,
            context: None,
            lease: None,
            metrics_addr,
            health_addr,
            eviction: EvictorConfig::default(),
            cycle: CycleSettings::default(),
            config_debounce: Duration::from_millis(500),
            shutdown_grace: Duration::from_secs(10),
            hooks: Vec::new(),
            zone_taints: None,
            watch: WatchOptions::default(),
            usage_poll: Some(Duration::from_secs(30)),
        }
    }
}

/// A client the standard way: an explicit `--kubeconfig`/`--context` wins; otherwise the in-cluster
/// service account, else `$KUBECONFIG` / `~/.kube/config`.
pub async fn client(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
) -> anyhow::Result<Client> {
    let config = client_config(kubeconfig, context).await?;
    Client::try_from(config).context("building the Kubernetes client")
}

/// The client evictions go through. kube retries 429, 503 and 504 by default, honouring
/// `Retry-After`; for evictions a 429 is an answer (a PDB said no) and must not be retried within the
/// cycle, and transient errors are retried by the evictor against the cycle's deadline instead.
pub fn eviction_client(config: &Config) -> anyhow::Result<Client> {
    let mut config = config.clone();
    config.default_retry = false;
    Client::try_from(config).context("building the Kubernetes client")
}

/// The client configuration, found as [`client`] describes.
pub async fn client_config(
    kubeconfig: Option<&std::path::Path>,
    context: Option<&str>,
) -> anyhow::Result<Config> {
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let file = Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(file, &options)
                .await
                .with_context(|| format!("kubeconfig {}", path.display()))?
        }
        None if context.is_some() => Config::from_kubeconfig(&options)
            .await
            .context("reading the kubeconfig")?,
        None => match Config::incluster() {
            Ok(config) => config,
            Err(_) => Config::infer()
                .await
                .context("no in-cluster service account and no usable kubeconfig")?,
        },
    };
    Ok(config)
}

/// Runs the controller until `shutdown` is cancelled (SIGTERM in the binary).
pub async fn run(config: ControllerConfig, shutdown: CancellationToken) -> anyhow::Result<()> {
    let client_config =
        client_config(config.kubeconfig.as_deref(), config.context.as_deref()).await?;
    let evictions = eviction_client(&client_config)?;
    let client = Client::try_from(client_config).context("building the Kubernetes client")?;
    run_with_clients(client, evictions, config, shutdown).await
}

/// [`run`] with clients built by the caller (`evictions` as [`eviction_client`] makes it).
pub async fn run_with_clients(
    client: Client,
    evictions: Client,
    config: ControllerConfig,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let metrics = Arc::new(Metrics::new());
    let shared = SharedCache::new(&ObjectKind::ALL);
    let metrics_listener = server::bind(config.metrics_addr).await?;
    let health_listener = server::bind(config.health_addr).await?;

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
    background.spawn(server::serve(
        metrics_listener,
        server::metrics_router(server::MetricsState {
            metrics: metrics.clone(),
            cache: shared.clone(),
            leader: leader.clone(),
        }),
        servers_stop.clone(),
    ));
    background.spawn(server::serve(
        health_listener,
        server::health_router(shared.clone()),
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

    let identity = config
        .lease
        .as_ref()
        .map_or_else(leader::default_identity, |l| l.identity.clone());
    let mut runtime = Runtime {
        client: client.clone(),
        shared: shared.clone(),
        snapshot: Snapshot::default(),
        evictor: Evictor::new(evictions, config.eviction.clone()),
        guard: cycle::ActGuard {
            leader: leader.clone(),
            shutdown: shutdown.clone(),
            abandon,
        },
        status: StatusWriter::new(client.clone(), &identity, leader.clone(), metrics.clone()),
        metrics,
        rounds: Default::default(),
        hooks: config.hooks.clone(),
        settings: config.cycle.clone(),
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
    rt: &mut Runtime,
    config: &ControllerConfig,
    leader: LeaderHandle,
    shutdown: &CancellationToken,
) {
    const MAX_SLEEP: Duration = Duration::from_secs(30);
    let mut scheduler = Scheduler::default();
    let mut leadership = leader.clone();
    let mut changes = rt.shared.config_changes();
    loop {
        if shutdown.is_cancelled() {
            return;
        }
        if !leader.is_leader() {
            // A new term starts afresh: another replica may have acted and written meanwhile.
            scheduler.reset();
            rt.status.forget();
            rt.rounds.clear();
            tokio::select! {
                () = leadership.acquired() => info!("leading: cycles start once caches are synced"),
                () = shutdown.cancelled() => return,
            }
            continue;
        }
        if !rt.shared.is_synced() {
            // Initial lists, or a relist after a 410 / dropped watch: never plan on a partial cache.
            let waiting = rt.shared.unsynced();
            info!(?waiting, "waiting for watches to list");
            tokio::select! {
                () = rt.shared.wait_synced() => {}
                () = leadership.lost() => {}
                () = shutdown.cancelled() => return,
            }
            continue;
        }

        let now = Timestamp::now();
        let (policies, zones) = rt.clocks(now);
        if let Some(due) = scheduler.due(&policies, &zones, now) {
            info!(trigger = due.trigger.as_str(), policies = ?due.policies, "cycle");
            let finished = {
                // Past the grace period, requests on the wire are cut (see `ActGuard`) and the cycle
                // writes back what it did; that write-back gets one more grace period.
                let (abandon, grace) = (rt.guard.abandon.clone(), config.shutdown_grace);
                let write_back_over = async move {
                    abandon.cancelled().await;
                    tokio::time::sleep(grace).await;
                };
                let cycle = rt.run_cycle(&due.policies, now, due.trigger);
                tokio::pin!(cycle);
                tokio::select! {
                    _ = &mut cycle => true,
                    () = write_back_over => false,
                }
            };
            if !finished {
                warn!(
                    "shutdown: the interrupted cycle's write-back did not finish in time; giving it up"
                );
                return;
            }
            let (policies, zones) = rt.snapshot_clocks(now);
            scheduler.record(&due.policies, &policies, &zones, now);
            continue;
        }

        let wake = schedule::sleep_for(scheduler.next_wakeup(&policies, &zones), now, MAX_SLEEP);
        tokio::select! {
            () = tokio::time::sleep(wake) => {}
            changed = changes.changed() => {
                if changed.is_ok() {
                    // Let a burst of edits (or our own status writes) settle before re-planning.
                    tokio::select! {
                        () = tokio::time::sleep(config.config_debounce) => {}
                        () = shutdown.cancelled() => return,
                    }
                    changes.borrow_and_update();
                }
            }
            () = leadership.lost() => {}
            () = shutdown.cancelled() => return,
        }
    }
}

/// `run` must stay spawnable: this fails to compile if its future stops being `Send`.
#[allow(dead_code)]
fn run_is_send(config: ControllerConfig, shutdown: CancellationToken) {
    fn spawnable<T: Send>(_: T) {}
    spawnable(run(config, shutdown));
}
