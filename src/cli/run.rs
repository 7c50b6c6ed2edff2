//! `tidal run`: the controller's flags and their checks.

use std::net::SocketAddr;

use clap::{ArgAction, Args};

use super::pacing::PacingArgs;
use crate::{
    api::GoDuration,
    controller::{self, ControllerConfig, taints::KeeperSettings},
    runtime::{
        ClientArgs, LogFormat,
        leader::{self, LeaseConfig},
    },
};

/// What `tidal run` points at when it finds no cluster: the commands that plan on a saved one.
pub(super) const WITHOUT_A_CLUSTER: &str = ". Without one, `tidal report -f FILE` shows what tidal \
    would do on a saved cluster (`kubectl get \
    nodes,pods,poddisruptionbudgets,podgroups,revocablezones,deschedulingpolicies -A -o yaml > FILE`)";

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    #[command(flatten)]
    pub prometheus: crate::runtime::PrometheusArgs,
    /// Elect a leader through a Lease, so that only one replica evicts. `--leader-elect` alone means
    /// true, as in controller-runtime; `--leader-elect=false` runs a single replica without a Lease.
    #[arg(
        long,
        value_name = "BOOL",
        default_value_t = true,
        num_args = 0..=1,
        default_missing_value = "true",
        require_equals = false,
        action = ArgAction::Set
    )]
    pub leader_elect: bool,
    /// Namespace of the Lease (default: $POD_NAMESPACE, the namespace tidal runs in).
    #[arg(
        long = "leader-elect-resource-namespace",
        alias = "lease-namespace",
        value_name = "NS",
        env = "POD_NAMESPACE",
        default_value = "tidal-system"
    )]
    pub lease_namespace: String,
    /// Name of the Lease the replicas share.
    #[arg(
        long = "leader-elect-resource-name",
        alias = "lease-name",
        value_name = "NAME",
        default_value = "tidal-controller"
    )]
    pub lease_name: String,
    /// This replica's name in the Lease (default: $POD_NAME, else <hostname>_<pid>).
    #[arg(long, value_name = "ID", env = "POD_NAME")]
    pub identity: Option<String>,
    /// How long a lease stays valid without renewal; standbys wait this long before taking over.
    #[arg(
        long = "leader-elect-lease-duration",
        alias = "lease-duration",
        value_name = "DURATION",
        default_value = "15s"
    )]
    pub lease_duration: GoDuration,
    /// The leader stops acting if it could not renew for this long (less than the lease duration).
    #[arg(
        long = "leader-elect-renew-deadline",
        alias = "renew-deadline",
        value_name = "DURATION",
        default_value = "10s"
    )]
    pub renew_deadline: GoDuration,
    /// Time between lease renewals / acquisition attempts.
    #[arg(
        long = "leader-elect-retry-period",
        alias = "retry-period",
        value_name = "DURATION",
        default_value = "2s"
    )]
    pub retry_period: GoDuration,
    /// Where to serve Prometheus metrics (`/metrics`).
    #[arg(
        long = "metrics-bind-address",
        alias = "metrics-addr",
        value_name = "ADDR",
        default_value = "0.0.0.0:8080"
    )]
    pub metrics_addr: SocketAddr,
    /// Where to serve `/healthz` and `/readyz` (ready once every watched kind has listed).
    #[arg(
        long = "health-probe-bind-address",
        alias = "health-addr",
        value_name = "ADDR",
        default_value = "0.0.0.0:8081"
    )]
    pub health_addr: SocketAddr,
    #[command(flatten)]
    pub pacing: PacingArgs,
    /// Evictions not done by then (retries included) are abandoned until the next cycle.
    #[arg(long, value_name = "DURATION", default_value = "2m")]
    pub cycle_timeout: GoDuration,
    /// Server-side dry-run evictions a cycle sends to verify the plans of DryRun policies (all of
    /// them together, the longest unchecked first, so a plan larger than N is checked in turn over
    /// the cycles), paced at --eviction-qps by a bucket of their own, so they never
    /// delay real evictions. The rest of a DryRun plan is reported as planned and unverified.
    #[arg(long, value_name = "N", default_value_t = controller::cycle::DEFAULT_DRY_RUN_VERIFY_PER_CYCLE)]
    pub dry_run_verify_per_cycle: usize,
    /// A pod tidal evicted counts as leaving until it is gone, or until this long has passed.
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub in_flight_ttl: GoDuration,
    /// On SIGTERM, in-flight requests get this long before they are abandoned.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub shutdown_grace: GoDuration,
    /// Keep a `tidal.dev/zone-closed:NoSchedule` taint on the nodes of closed zones (zones can opt out
    /// with `spec.taintWhenClosed: false`). Needs `patch` on nodes.
    #[arg(long, value_name = "BOOL", env = "TIDAL_ZONE_TAINTS", default_value_t = true, action = ArgAction::Set)]
    pub zone_taints: bool,
    /// How often to read measured usage from metrics.k8s.io (metrics-server) while a policy's
    /// utilization strategy uses `usage.source: Metrics`; `0s` never reads it.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub usage_poll_interval: GoDuration,
    /// Log lines as text or as JSON objects (stderr; level from $TIDAL_LOG, default info).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl RunArgs {
    pub fn controller_config(&self) -> anyhow::Result<ControllerConfig> {
        if self.leader_elect {
            let (lease, renew, retry) = (
                self.lease_duration.as_std(),
                self.renew_deadline.as_std(),
                self.retry_period.as_std(),
            );
            if renew >= lease {
                anyhow::bail!(
                    "--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration"
                );
            }
            // A renewal every retry period must fit within the renew deadline, or leadership lapses
            // between two renewals; zero would renew in a busy loop.
            if retry.is_zero() || retry >= renew {
                anyhow::bail!(
                    "--leader-elect-retry-period must be more than zero and shorter than \
                     --leader-elect-renew-deadline"
                );
            }
        }
        self.pacing.check()?;
        let mut config = ControllerConfig::new(self.metrics_addr, self.health_addr);
        config.client = self.client.clone();
        config.lease = self.leader_elect.then(|| LeaseConfig {
            lease_duration: self.lease_duration.as_std(),
            renew_deadline: self.renew_deadline.as_std(),
            retry_period: self.retry_period.as_std(),
            ..LeaseConfig::new(
                Some(self.lease_namespace.clone())
                    .filter(|ns| !ns.is_empty())
                    .unwrap_or_else(|| "tidal-system".to_owned()),
                self.lease_name.clone(),
                self.identity
                    .clone()
                    .filter(|i| !i.is_empty())
                    .unwrap_or_else(leader::default_identity),
            )
        });
        config.eviction = self.pacing.evictor();
        config.drain_margin = self.pacing.drain_margin;
        config.cycle.timeout = self.cycle_timeout.as_std();
        config.cycle.in_flight_ttl = self.in_flight_ttl.as_std();
        config.cycle.dry_run_verify_per_cycle = self.dry_run_verify_per_cycle;
        config.shutdown_grace = self.shutdown_grace.as_std();
        config.prometheus = self.prometheus.clone();
        let usage_poll = self.usage_poll_interval.as_std();
        config.usage_poll = (!usage_poll.is_zero()).then_some(usage_poll);
        if self.zone_taints {
            config.zone_taints = Some(KeeperSettings::default());
        }
        Ok(config)
    }
}
