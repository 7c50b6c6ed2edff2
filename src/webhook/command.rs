//! `tidal webhook`: the admission webhook process. Its own cache of nodes, pods, zones and PodGroups
//! is fed by watches; requests are answered from it.

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::Context;
use clap::Args;
use tokio_util::sync::CancellationToken;
use tracing::{error, info};

use super::{
    server::{self, WebhookState},
    tls::CertStore,
};
use crate::{
    api::GoDuration,
    cluster::{ObjectKind, SharedCache},
    runtime::{
        ClientArgs, LogFormat, admin,
        watch::{self, WatchObserver, WatchPlan},
    },
};

/// The kinds the webhook decides from.
pub const WATCHED: [ObjectKind; 4] = [
    ObjectKind::Node,
    ObjectKind::Pod,
    ObjectKind::RevocableZone,
    ObjectKind::PodGroup,
];

#[derive(Debug, Clone, Args)]
pub struct WebhookArgs {
    /// PEM certificate (chain) served on --listen. Reloaded when the file changes.
    #[arg(long, value_name = "FILE")]
    pub tls_cert: PathBuf,
    /// PEM private key of --tls-cert. Reloaded when the file changes.
    #[arg(long, value_name = "FILE")]
    pub tls_key: PathBuf,
    /// HTTPS address: /mutate-pods, /validate-pods, /validate-bindings, /healthz, /readyz.
    #[arg(long, default_value = "0.0.0.0:8443")]
    pub listen: SocketAddr,
    /// Plain HTTP address for /metrics (and /healthz, /readyz).
    #[arg(
        long = "metrics-bind-address",
        alias = "metrics-addr",
        default_value = "0.0.0.0:8080"
    )]
    pub metrics_addr: SocketAddr,
    #[command(flatten)]
    pub client: ClientArgs,
    /// Log format on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// How long a request may wait for a pod, node or PodGroup that tidal's watches have not delivered
    /// yet (the scheduler may bind a pod before the webhook sees it). Keep well under the webhook's
    /// timeoutSeconds.
    #[arg(long, default_value = "1s", value_parser = go_duration)]
    pub lookup_wait: Duration,
    /// How often the certificate files are checked for changes.
    #[arg(long, default_value = "10s", value_parser = positive_duration)]
    pub cert_reload_interval: Duration,
    /// On SIGTERM, how long to keep answering (with /readyz failing) before stopping, so that the
    /// API server stops sending to this pod first. Keep the pod's terminationGracePeriodSeconds
    /// above this plus 10s (the time in-flight requests get to finish).
    #[arg(long, default_value = "5s", value_parser = go_duration)]
    pub shutdown_delay: Duration,
}

/// A Go duration (`1s`, `1m30s`, `500ms`), parsed as every other command's duration flags are.
fn go_duration(text: &str) -> Result<Duration, String> {
    text.parse::<GoDuration>()
        .map(|d| d.as_std())
        .map_err(|e| e.to_string())
}

/// A duration above zero (a zero interval would make the poll loop spin, and tokio refuses it).
fn positive_duration(text: &str) -> Result<Duration, String> {
    match go_duration(text)? {
        duration if duration.is_zero() => Err("must be more than zero".to_owned()),
        duration => Ok(duration),
    }
}

/// Runs the webhook until `shutdown` is cancelled (SIGTERM, Ctrl-C).
pub async fn serve(args: WebhookArgs, shutdown: CancellationToken) -> anyhow::Result<()> {
    // Only ring is compiled in; installing it explicitly keeps rustls from guessing.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let certs = Arc::new(
        CertStore::load(&args.tls_cert, &args.tls_key)
            .context("loading the webhook certificate")?,
    );
    let tls = Arc::new(certs.server_config()?);
    let client = args.client.client().await?;

    let cache = SharedCache::new(&WATCHED);
    let state = WebhookState::new(cache.clone(), args.lookup_wait);
    let observer: Arc<dyn WatchObserver> = state.metrics.clone();
    let plan = WatchPlan {
        kinds: WATCHED.to_vec(),
    };
    for task in watch::start(client, cache.clone(), &plan, observer).await {
        tokio::spawn(task);
    }
    {
        let cache = cache.clone();
        tokio::spawn(async move {
            cache.wait_initially_synced().await;
            info!("cache synced: admission checks active");
        });
    }
    {
        let metrics = state.metrics.clone();
        tokio::spawn(
            Arc::clone(&certs).watch(args.cert_reload_interval, move || metrics.cert_reloaded()),
        );
    }

    let https = admin::bind(args.listen).await?;
    let plain = admin::bind(args.metrics_addr).await?;
    info!(listen = %args.listen, metrics = %args.metrics_addr, "tidal webhook serving");

    // Both listeners stop only once the drain after the signal is over.
    let stop = CancellationToken::new();
    {
        let (state, stop) = (state.clone(), stop.clone());
        let signal = shutdown.clone().cancelled_owned();
        tokio::spawn(async move {
            server::drain(state, signal, args.shutdown_delay).await;
            stop.cancel();
        });
    }
    let metrics_server = tokio::spawn(admin::serve(
        plain,
        server::metrics_router(state.clone()),
        stop.clone(),
    ));
    let https_server = tokio::spawn(server::serve_tls(
        https,
        tls,
        server::router(state),
        stop.clone().cancelled_owned(),
    ));
    stop.cancelled().await;
    info!("stopping the listeners");
    if let Err(error) = https_server.await {
        error!(%error, "HTTPS server task failed");
    }
    if let Err(error) = metrics_server.await {
        error!(%error, "metrics server task failed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: WebhookArgs,
    }

    fn parse(extra: &[&str]) -> Result<WebhookArgs, clap::Error> {
        let base = ["tidal-webhook", "--tls-cert=c.pem", "--tls-key=k.pem"];
        Cli::try_parse_from(base.iter().chain(extra)).map(|cli| cli.args)
    }

    #[test]
    fn a_zero_cert_reload_interval_is_refused() {
        let error = parse(&["--cert-reload-interval=0s"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("must be more than zero"), "{error}");
        assert!(parse(&["--cert-reload-interval=nope"]).is_err());
        let args = parse(&["--cert-reload-interval=1s"]).unwrap();
        assert_eq!(args.cert_reload_interval, Duration::from_secs(1));
    }

    #[test]
    fn shutdown_delay_defaults_to_five_seconds_and_may_be_zero() {
        assert_eq!(parse(&[]).unwrap().shutdown_delay, Duration::from_secs(5));
        assert_eq!(
            parse(&["--shutdown-delay=0s"]).unwrap().shutdown_delay,
            Duration::ZERO
        );
    }

    /// One duration syntax for every command: Go's, as `tidal run` and the CRDs take it.
    #[test]
    fn durations_are_go_durations_as_in_tidal_run() {
        let args = parse(&["--lookup-wait=1m30s", "--shutdown-delay=500ms"]).unwrap();
        assert_eq!(args.lookup_wait, Duration::from_secs(90));
        assert_eq!(args.shutdown_delay, Duration::from_millis(500));
        assert!(parse(&["--lookup-wait=1 sec"]).is_err());
    }

    #[test]
    fn the_metrics_flag_has_the_controller_runtime_name_and_the_old_alias() {
        let new = parse(&["--metrics-bind-address=127.0.0.1:9100"]).unwrap();
        let old = parse(&["--metrics-addr=127.0.0.1:9100"]).unwrap();
        assert_eq!(new.metrics_addr, old.metrics_addr);
        assert_eq!(new.metrics_addr.port(), 9100);
    }
}
