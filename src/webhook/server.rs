//! The webhook's HTTP side: the axum router (admission endpoints, `/healthz`, `/readyz`), served over
//! HTTPS with rustls, plus the plain-HTTP metrics listener.

use std::{future::Future, sync::Arc, time::Duration};

use axum::{
    Router,
    body::Bytes,
    extract::{DefaultBodyLimit, State},
    http::{StatusCode, header},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
    service::TowerToHyperService,
};
use jiff::Timestamp;
use tokio::{net::TcpListener, sync::Semaphore, time::Instant};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;
use tracing::{debug, info, warn};

use super::{
    metrics::{Metrics, Outcome},
    review::{self, Attempt, Endpoint},
};
use crate::cluster::SharedCache;

/// Largest AdmissionReview accepted. Objects are at most ~1.5 MiB in etcd; a review carries one.
const BODY_LIMIT: usize = 6 * 1024 * 1024;
/// Pause between two looks at the cache while waiting for an object to arrive.
const RETRY_PAUSE: Duration = Duration::from_millis(20);
/// Time a client has to complete the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Time in-flight requests get to finish at shutdown.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// What the handlers share.
#[derive(Clone)]
pub struct WebhookState {
    pub cache: SharedCache,
    pub metrics: Arc<Metrics>,
    /// How long a request may wait for a pod, node or PodGroup that is not in the cache yet.
    pub lookup_wait: Duration,
    /// Cancelled when shutdown begins: `/readyz` fails from then on, requests are still answered.
    draining: CancellationToken,
}

impl WebhookState {
    pub fn new(cache: SharedCache, lookup_wait: Duration) -> WebhookState {
        WebhookState {
            cache,
            metrics: Arc::new(Metrics::new()),
            lookup_wait,
            draining: CancellationToken::new(),
        }
    }

    /// Cancelled once shutdown has begun (see [`drain`]).
    pub fn draining(&self) -> &CancellationToken {
        &self.draining
    }
}

/// Waits for `signal`, then reports not ready while still answering for `delay`, and returns: the
/// caller stops the listeners then. The API server keeps sending to a terminating pod until the
/// endpoint update reaches it; stopping at once would fail those calls (and with `failurePolicy:
/// Fail`, the pod creations behind them).
pub async fn drain(state: WebhookState, signal: impl Future<Output = ()>, delay: Duration) {
    signal.await;
    state.draining.cancel();
    info!(
        delay = %humantime::format_duration(delay),
        "shutting down: not ready, still answering until the endpoints are updated"
    );
    tokio::time::sleep(delay).await;
}

/// The HTTPS application: admission endpoints and probes.
pub fn router(state: WebhookState) -> Router {
    let endpoint = |endpoint: Endpoint| {
        post(
            move |State(state): State<WebhookState>, body: Bytes| async move {
                admission_response(&state, endpoint, &body).await
            },
        )
    };
    Router::new()
        .route(Endpoint::MutatePods.path(), endpoint(Endpoint::MutatePods))
        .route(
            Endpoint::ValidatePods.path(),
            endpoint(Endpoint::ValidatePods),
        )
        .route(
            Endpoint::ValidateBindings.path(),
            endpoint(Endpoint::ValidateBindings),
        )
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}

/// The metrics application (plain HTTP): `/metrics` and the same probes.
pub fn metrics_router(state: WebhookState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(state)
}

async fn healthz() -> &'static str {
    "ok\n"
}

/// Ready once every watched kind has been listed once, until shutdown begins. A later relist does
/// not count: the cache keeps its objects meanwhile, and a webhook that turns unready on every relist
/// would, with `failurePolicy: Fail`, stop pod creation cluster-wide.
async fn readyz(State(state): State<WebhookState>) -> Response {
    state.metrics.set_synced(state.cache.is_synced());
    if state.draining.is_cancelled() {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response();
    }
    match never_synced(&state) {
        None => (StatusCode::OK, "ok\n").into_response(),
        Some(waiting) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("cache not synced: waiting for {waiting}\n"),
        )
            .into_response(),
    }
}

/// The kinds never listed yet, or `None` once all have been.
fn never_synced(state: &WebhookState) -> Option<String> {
    if state.cache.is_initially_synced() {
        return None;
    }
    let kinds: Vec<&str> = state
        .cache
        .never_synced()
        .into_iter()
        .map(|k| k.as_str())
        .collect();
    Some(kinds.join(", "))
}

async fn metrics(State(state): State<WebhookState>) -> Response {
    state.metrics.set_synced(state.cache.is_synced());
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.encode(),
    )
        .into_response()
}

async fn admission_response(state: &WebhookState, endpoint: Endpoint, body: &[u8]) -> Response {
    let (status, body) = admit(state, endpoint, body).await;
    let content_type = if status == StatusCode::OK {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// Answers one AdmissionReview body: `200` with the response review, or `400` with a plain-text
/// explanation when the body is not a review. Never panics, whatever the body holds.
pub async fn admit(state: &WebhookState, endpoint: Endpoint, body: &[u8]) -> (StatusCode, Vec<u8>) {
    let started = Instant::now();
    let request = match review::parse_review(body) {
        Ok(request) => request,
        Err(error) => {
            debug!(endpoint = endpoint.as_str(), %error, "malformed admission request");
            state.metrics.observe(
                endpoint,
                Outcome::Malformed,
                started.elapsed().as_secs_f64(),
            );
            return (
                StatusCode::BAD_REQUEST,
                format!("tidal webhook: {error}\n").into_bytes(),
            );
        }
    };
    let (answer, not_ready) = match never_synced(state) {
        None => (answer_from_cache(state, endpoint, &request).await, false),
        Some(waiting) => match review::decide_without_cache(endpoint, &request, Timestamp::now()) {
            Some(answer) => (answer, false),
            None => (review::not_ready_answer(&waiting), true),
        },
    };
    let response = review::respond(&request, answer);
    let outcome = match (not_ready, response.allowed, response.patch.is_some()) {
        (true, _, _) => Outcome::NotReady,
        (false, false, _) => Outcome::Denied,
        (false, true, true) => Outcome::Patched,
        (false, true, false) => Outcome::Allowed,
    };
    if outcome == Outcome::Denied {
        info!(
            endpoint = endpoint.as_str(),
            namespace = request.namespace.as_deref().unwrap_or(""),
            name = %request.name,
            reason = %response.result.message,
            "denied"
        );
    }
    state
        .metrics
        .observe(endpoint, outcome, started.elapsed().as_secs_f64());
    (StatusCode::OK, review::response_body(response))
}

/// Decides from the cache, retrying while an object the decision needs has not arrived yet (up to
/// `lookup_wait`). The cache lock is held only for each synchronous attempt, never across a wait.
async fn answer_from_cache(
    state: &WebhookState,
    endpoint: Endpoint,
    request: &review::Request,
) -> review::Answer {
    let deadline = Instant::now() + state.lookup_wait;
    let mut waited = false;
    loop {
        let last_try = Instant::now() >= deadline;
        let attempt = {
            let cache = state.cache.read();
            review::decide(endpoint, request, &cache, Timestamp::now(), last_try)
        };
        match attempt {
            Attempt::Done(answer) => return answer,
            Attempt::Retry(missing) => {
                if !waited {
                    waited = true;
                    state.metrics.waited(endpoint);
                    debug!(endpoint = endpoint.as_str(), %missing, "waiting for the cache");
                }
                let pause = RETRY_PAUSE.min(deadline.saturating_duration_since(Instant::now()));
                tokio::time::sleep(pause).await;
            }
        }
    }
}

/// Limits of the HTTPS listener.
#[derive(Clone, Copy, Debug)]
pub struct ServeLimits {
    /// Time a client has to send a request's headers, idle keep-alive time included (hyper starts
    /// the clock when it waits for the next request). Longer than the API server's 90s idle timeout,
    /// so that it is the client that closes idle connections, never a request racing our close.
    pub header_read_timeout: Duration,
    /// Open connections at most; more clients wait in the listen backlog until one closes. Each API
    /// server keeps a few dozen connections per webhook; the cap only stops a flood from exhausting
    /// memory or file descriptors.
    pub max_connections: usize,
    /// Time from a request's headers to its answer, reading the body included. A client that sends
    /// its body one byte at a time is answered 408 and disconnected when it runs out, so a slow body
    /// holds a connection slot for seconds, not for as long as the client likes. The API server's own
    /// webhook timeout is at most 30s (10s by default) and gives up before this matters to it.
    pub request_timeout: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            header_read_timeout: Duration::from_secs(120),
            max_connections: 512,
            request_timeout: Duration::from_secs(10),
        }
    }
}

/// 408, and the connection closes: its unread body cannot be trusted to end.
fn request_timed_out() -> Response {
    (
        StatusCode::REQUEST_TIMEOUT,
        [(header::CONNECTION, "close")],
        "request not complete in time\n",
    )
        .into_response()
}

/// Serves `app` over HTTPS on `listener` until `shutdown` resolves, then lets in-flight requests
/// finish (up to a grace period).
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
    shutdown: impl Future<Output = ()>,
) {
    serve_tls_with(listener, tls, app, shutdown, ServeLimits::default()).await;
}

/// [`serve_tls`] with explicit limits.
pub async fn serve_tls_with(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
    shutdown: impl Future<Output = ()>,
    limits: ServeLimits,
) {
    let acceptor = TlsAcceptor::from(tls);
    let graceful = GracefulShutdown::new();
    // HTTP/1.1 with keep-alive: what the API server's webhook client uses when not offered h2.
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    tokio::pin!(shutdown);
    loop {
        // A slot first, then a connection: over the cap, clients wait in the backlog rather than
        // being accepted and dropped.
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(slot) => slot,
                // The semaphore is never closed.
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors and the like: back off instead of spinning.
                        warn!(%error, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (acceptor, app, builder) = (acceptor.clone(), app.clone(), builder.clone());
                let request_timeout = limits.request_timeout;
                let watcher = graceful.watcher();
                tokio::spawn(async move {
                    let _slot = slot;
                    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => tls,
                        Ok(Err(error)) => {
                            debug!(%peer, %error, "TLS handshake failed");
                            return;
                        }
                        Err(_) => {
                            debug!(%peer, "TLS handshake timed out");
                            return;
                        }
                    };
                    let deadline = tower::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                        let app = app.clone();
                        async move {
                            let request = request.map(axum::body::Body::new);
                            match tokio::time::timeout(request_timeout, app.oneshot(request)).await {
                                Ok(answer) => answer,
                                Err(_) => Ok(request_timed_out()),
                            }
                        }
                    });
                    let connection = builder.serve_connection(TokioIo::new(tls), TowerToHyperService::new(deadline));
                    if let Err(error) = watcher.watch(connection).await {
                        debug!(%peer, %error, "connection ended with an error");
                    }
                });
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    if tokio::time::timeout(DRAIN_TIMEOUT, graceful.shutdown())
        .await
        .is_err()
    {
        warn!("in-flight admission requests did not finish in time");
    }
}
