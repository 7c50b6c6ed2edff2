//! The controller's plain-HTTP endpoints: `/metrics` on the metrics address, `/healthz` and `/readyz`
//! on the health address (ready = every watched kind has completed its list).

use std::{net::SocketAddr, sync::Arc};

use anyhow::Context;
use axum::{
    Router, extract::State, http::StatusCode, http::header, response::IntoResponse, routing::get,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::{cluster::SharedCache, leader::LeaderHandle, metrics::Metrics};

/// What `/metrics` reads; gauges that describe the present are refreshed at scrape time.
#[derive(Clone)]
pub struct MetricsState {
    pub metrics: Arc<Metrics>,
    pub cache: SharedCache,
    pub leader: LeaderHandle,
}

pub fn metrics_router(state: MetricsState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .with_state(state)
}

pub fn health_router(cache: SharedCache) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .with_state(cache)
}

async fn metrics(State(state): State<MetricsState>) -> impl IntoResponse {
    let m = &state.metrics;
    m.leader.set(i64::from(state.leader.is_leader()));
    m.synced.set(i64::from(state.cache.is_synced()));
    {
        let cache = state.cache.read();
        m.set_cache_sizes(
            cache.node_count(),
            cache.pod_count(),
            cache.evicting_count(),
        );
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        m.encode(),
    )
}

async fn ready(State(cache): State<SharedCache>) -> (StatusCode, String) {
    let unsynced = cache.unsynced();
    if unsynced.is_empty() {
        (StatusCode::OK, "ok\n".to_owned())
    } else {
        let kinds: Vec<&str> = unsynced.iter().map(|k| k.as_str()).collect();
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("waiting for the lists of: {}\n", kinds.join(", ")),
        )
    }
}

/// Binds now (so that a taken port fails startup) and serves until `shutdown`.
pub async fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))
}

pub async fn serve(listener: TcpListener, router: Router, shutdown: CancellationToken) {
    let addr = listener.local_addr().ok();
    if let Err(error) = axum::serve(listener, router)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
    {
        tracing::warn!(?addr, %error, "HTTP server stopped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn ready_only_once_every_kind_listed() {
        let cache = SharedCache::new(&[crate::cluster::ObjectKind::Pod]);
        let (code, text) = ready(State(cache.clone())).await;
        assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
        assert!(text.contains("Pod"), "{text}");
        cache.set_synced(crate::cluster::ObjectKind::Pod, true);
        assert_eq!(ready(State(cache)).await.0, StatusCode::OK);
    }
}
