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
use jiff::Timestamp;
use tokio::{
    net::TcpListener,
    sync::{Semaphore, SemaphorePermit},
    time::Instant,
};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use super::{
    metrics::{Metrics, Outcome},
    review::{self, Attempt, Endpoint},
};
use crate::{
    cluster::SharedCache,
    runtime::connections::{self, ConnectionLimits},
};

/// Largest AdmissionReview accepted. Objects are at most ~1.5 MiB in etcd; a review carries one.
const BODY_LIMIT: usize = 6 * 1024 * 1024;
/// Bodies up to this size are parsed at once: real pods and bindings are far smaller.
const SMALL_BODY: usize = 256 * 1024;
/// KiB of larger bodies parsed at the same time. Parsing takes many times a body's size (a 1.86 MiB
/// pod of 20,000 affinity terms raises the peak by about 145 MiB), and tokio runs as many parses at
/// once as the node has cores, whatever the pod's CPU limit. The budget bounds what they take together:
/// with 8 workers, twelve such pods at once peak at about 354 MiB. A request that waits past the
/// request deadline gets a 408.
const LARGE_BODY_BUDGET_KIB: u32 = 8 * 1024;

/// Pause between two looks at the cache while waiting for an object to arrive.
const RETRY_PAUSE: Duration = Duration::from_millis(20);

/// What the handlers share.
#[derive(Clone)]
pub struct WebhookState {
    pub cache: SharedCache,
    pub metrics: Arc<Metrics>,
    /// How long a request may wait for a pod, node or PodGroup that is not in the cache yet.
    pub lookup_wait: Duration,
    /// Cancelled when shutdown begins: `/readyz` fails from then on, requests are still answered.
    draining: CancellationToken,
    /// KiB of large bodies being parsed at once (see [`LARGE_BODY_BUDGET_KIB`]).
    large_bodies: Arc<Semaphore>,
    large_body_budget_kib: u32,
}

impl WebhookState {
    pub fn new(cache: SharedCache, lookup_wait: Duration) -> WebhookState {
        WebhookState {
            cache,
            metrics: Arc::new(Metrics::new()),
            lookup_wait,
            draining: CancellationToken::new(),
            large_bodies: Arc::new(Semaphore::new(LARGE_BODY_BUDGET_KIB as usize)),
            large_body_budget_kib: LARGE_BODY_BUDGET_KIB,
        }
    }

    /// The same with a parse budget of `kib` KiB for large bodies instead of [`LARGE_BODY_BUDGET_KIB`]
    /// (a body larger than the budget takes all of it).
    pub fn with_large_body_budget(mut self, kib: u32) -> WebhookState {
        self.large_bodies = Arc::new(Semaphore::new(kib.max(1) as usize));
        self.large_body_budget_kib = kib.max(1);
        self
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
    let permit = large_body_permit(state, body.len()).await;
    let (status, body) = admit(state, endpoint, body).await;
    if let Some(permit) = permit {
        drop(permit);
        // The last large parse of a burst has ended: give its memory back to the system, which the
        // allocator would otherwise keep (glibc keeps freed memory in per-thread arenas: ~200 MiB
        // after a burst of huge pods, against 14 MiB fresh).
        if state.large_bodies.available_permits() == state.large_body_budget_kib as usize {
            release_free_memory();
        }
    }
    let content_type = if status == StatusCode::OK {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// Returns the allocator's free memory to the system. glibc (which the image links) only trims the top
/// of the main heap by itself; `malloc_trim` also releases free pages inside every arena. Other
/// allocators (musl's) return large blocks as they are freed, so there is nothing to do.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Waits until a body of `len` bytes may be parsed: at once when it is small, else when its size fits
/// in what the other large bodies being parsed leave of the budget.
async fn large_body_permit(state: &WebhookState, len: usize) -> Option<SemaphorePermit<'_>> {
    if len <= SMALL_BODY {
        return None;
    }
    let kib = u32::try_from(len.div_ceil(1024))
        .unwrap_or(u32::MAX)
        .min(state.large_body_budget_kib);
    // The semaphore is never closed.
    state.large_bodies.acquire_many(kib).await.ok()
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

/// Limits of the HTTPS listener: [`ConnectionLimits`] with the webhook's defaults.
pub type ServeLimits = ConnectionLimits;

/// The HTTPS listener's defaults. Every figure is stated in docs/admission.md.
///
/// - 512 connections in total, 128 per client address. An API server keeps up to 25 idle connections
///   per webhook (client-go's transport default) plus one per concurrent call, and a call takes well
///   under a millisecond here, so 128 leaves it ample room while one flooding address can take only a
///   quarter of the slots. Clients behind one address (an egress proxy, konnectivity) share its 128.
/// - 5s to complete the TLS handshake (it takes milliseconds in a cluster).
/// - 10s for the headers of the next request, idle keep-alive time included. Shorter than the API
///   server's own 90s idle timeout, so it is usually tidal that closes an idle connection; Go's
///   client reuses its most recently used connection first, so the ones that time out are those it
///   was not about to use, and it drops a connection as soon as it sees it closed.
/// - 10s from a request's headers to its answer, the body included (then 408 and close). The API
///   server gives up on a call after `timeoutSeconds` (at most 30s, the chart's 5s) anyway.
pub const WEBHOOK_LIMITS: ConnectionLimits = ConnectionLimits {
    max_connections: 512,
    max_per_peer: 128,
    handshake_timeout: Duration::from_secs(5),
    idle_timeout: Duration::from_secs(10),
    request_timeout: Duration::from_secs(10),
    drain_timeout: Duration::from_secs(10),
};

/// Serves `app` over HTTPS on `listener` until `shutdown` resolves, then lets in-flight requests
/// finish (up to a grace period).
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
    shutdown: impl Future<Output = ()>,
) {
    serve_tls_with(listener, tls, app, shutdown, WEBHOOK_LIMITS).await;
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
    connections::serve(
        listener,
        move |stream| acceptor.accept(stream),
        app,
        shutdown,
        limits,
    )
    .await;
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;

    use super::*;
    use crate::cluster::ClusterCache;

    /// Large bodies share a parse budget: while it is used up another large body waits, a small one
    /// never does, and the budget comes back when a parse ends.
    #[test]
    fn large_bodies_wait_for_the_parse_budget() {
        let state = WebhookState::new(
            SharedCache::from_cache(ClusterCache::default()),
            Duration::ZERO,
        );
        let huge = 6 * 1024 * 1024;
        let first = large_body_permit(&state, huge)
            .now_or_never()
            .expect("budget free");
        assert!(first.is_some());
        let second = large_body_permit(&state, 3 * 1024 * 1024).now_or_never();
        assert!(second.is_none(), "6 + 3 MiB in parse at once");
        assert!(
            large_body_permit(&state, 1024 * 1024)
                .now_or_never()
                .is_some(),
            "6 + 1 MiB fits in the budget"
        );
        assert!(
            large_body_permit(&state, 10 * 1024)
                .now_or_never()
                .expect("a small body never waits")
                .is_none()
        );
        drop(first);
        assert!(
            large_body_permit(&state, 3 * 1024 * 1024)
                .now_or_never()
                .is_some()
        );
    }
}
