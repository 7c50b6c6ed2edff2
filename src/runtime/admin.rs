//! The plain-HTTP admin endpoints both processes serve: binding (so that a taken port fails startup),
//! serving until shutdown (with connection limits), and `/healthz` and `/readyz` (ready = every watched kind has completed its
//! list). Each process adds its own `/metrics` router.

use std::net::SocketAddr;

use anyhow::Context;
use axum::{Router, extract::State, http::StatusCode, routing::get};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::connections::{self, ConnectionLimits};
use crate::cluster::SharedCache;

pub fn health_router(cache: SharedCache) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .with_state(cache)
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

/// Serves `router` with the admin limits ([`ConnectionLimits::ADMIN`]) until `shutdown`: a flood of
/// this port (1,000 connections that never finish their headers) costs each connection 10s and at most
/// 16 of the 64 slots per client address, so the kubelet's probes keep getting through.
pub async fn serve(listener: TcpListener, router: Router, shutdown: CancellationToken) {
    serve_with(listener, router, shutdown, ConnectionLimits::ADMIN).await;
}

/// [`serve`] with explicit limits.
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    shutdown: CancellationToken,
    limits: ConnectionLimits,
) {
    connections::serve_plain(listener, router, shutdown.cancelled_owned(), limits).await;
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
