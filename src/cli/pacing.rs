//! The eviction rate and the drain margin: `tidal run` acts with them, `tidal report` and
//! `tidal timeline` estimate drains with them, so each takes the same flags with the same defaults.

use clap::Args;

use crate::{
    controller::evictor::EvictorConfig,
    drain::{DEFAULT_MARGIN, DrainSettings, Pacing, grace_period},
};

#[derive(Clone, Debug, Args)]
pub struct PacingArgs {
    /// Eviction requests per second (sustained), shared by every policy; zones closing first go first.
    #[arg(long, value_name = "QPS", default_value_t = EvictorConfig::default().qps)]
    pub eviction_qps: f64,
    /// Eviction requests allowed in a burst above the QPS.
    #[arg(long, value_name = "N", default_value_t = EvictorConfig::default().burst)]
    pub eviction_burst: u32,
    /// Eviction requests in flight at once.
    #[arg(long, value_name = "N", default_value_t = EvictorConfig::default().concurrency)]
    pub eviction_concurrency: usize,
    /// A zone with `drainBefore: auto` starts draining this many times its estimated drain before the
    /// close (plus 30s), at most its `maxDrainBefore` ahead.
    #[arg(long, value_name = "FACTOR", default_value_t = DEFAULT_MARGIN)]
    pub drain_margin: f64,
    /// The grace period every eviction gives its pod, in seconds (sent as the Eviction's
    /// `deleteOptions.gracePeriodSeconds`; 0 kills at once). Default: each pod's own
    /// `terminationGracePeriodSeconds`. The descheduler's `gracePeriodSeconds`. Drain estimates
    /// assume it too.
    #[arg(long, value_name = "SECONDS")]
    pub eviction_grace_period_seconds: Option<u32>,
}

/// Below this a token takes so long to refill that the limit is a misconfiguration, not a pace.
const MIN_EVICTION_QPS: f64 = 0.001;

impl PacingArgs {
    pub fn check(&self) -> anyhow::Result<()> {
        if !(self.eviction_qps.is_finite() && self.eviction_qps >= MIN_EVICTION_QPS) {
            anyhow::bail!(
                "--eviction-qps must be a number of at least {MIN_EVICTION_QPS} (one request every 1000s)"
            );
        }
        if !(self.drain_margin.is_finite() && (1.0..=10.0).contains(&self.drain_margin)) {
            anyhow::bail!("--drain-margin must be a number from 1 to 10");
        }
        Ok(())
    }

    pub fn evictor(&self) -> EvictorConfig {
        EvictorConfig {
            qps: self.eviction_qps,
            burst: self.eviction_burst,
            concurrency: self.eviction_concurrency.max(1),
            grace_period_seconds: self.eviction_grace_period_seconds.map(i64::from),
            ..EvictorConfig::default()
        }
    }

    /// The drain estimate's settings, assuming [`Pacing::ASSUMED_REQUEST`] per request: an offline
    /// estimate has not seen the API server answer.
    pub fn drain_settings(&self) -> DrainSettings {
        let evictor = self.evictor();
        DrainSettings {
            margin: self.drain_margin,
            grace_period: grace_period(evictor.grace_period_seconds),
            ..DrainSettings::new(Pacing {
                qps: evictor.qps,
                burst: evictor.burst,
                concurrency: u32::try_from(evictor.concurrency).unwrap_or(u32::MAX),
                request: Pacing::ASSUMED_REQUEST,
            })
        }
    }
}
