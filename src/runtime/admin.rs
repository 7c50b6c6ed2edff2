//! The plain-HTTP admin endpoints both processes serve: binding (so that a taken port fails startup),
//! serving until shutdown, and `/healthz` and `/readyz` (ready = every watched kind has completed its
//! list). Each process adds its own `/metrics` router.

use std::net::SocketAddr;

use anyhow::Context;
use axum::{Router, extract::State, http::StatusCode, routing::get};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

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
