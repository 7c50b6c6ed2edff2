//! The webhook's HTTP side: the axum router (admission endpoints, `/healthz`, `/readyz`), served over
//! HTTPS with rustls, plus the plain-HTTP metrics listener; and the memory budget that large bodies
//! and answers share.

use std::{
    convert::Infallible,
    future::Future,
    net::IpAddr,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::{DefaultBodyLimit, FromRequest, Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware,
    response::{IntoResponse, Response},
    routing::{get, post},
};
use http_body_util::BodyExt;
use hyper::body::{Frame, SizeHint};
use jiff::Timestamp;
use tokio::{
    net::TcpListener,
    sync::{OwnedSemaphorePermit, Semaphore},
    time::Instant,
};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use super::{
    intake::{self, Arrival, Intake},
    metrics::{Metrics, Outcome},
    review::{self, Attempt, Endpoint},
};
use crate::{
    cluster::SharedCache,
    runtime::connections::{self, ConnectionLimits, RequestOrigin},
};

/// Largest AdmissionReview accepted. Objects are at most ~1.5 MiB in etcd; a review carries one.
const BODY_LIMIT: usize = 6 * 1024 * 1024;
/// Bodies up to this size are read and parsed at once: real pods and bindings are far smaller.
const SMALL_BODY: usize = 256 * 1024;
/// Answers up to this size are written without a share of the budget: a denial or an ordinary pod's
/// patch is well under a kilobyte, and a connection holds at most this plus hyper's and rustls'
/// buffers outside the budget.
const SMALL_ANSWER: usize = 16 * 1024;
/// Pieces in which a large answer is handed to hyper. Copied out, so that what hyper buffers while
/// a slow client reads does not keep the whole answer alive after its share has been given back.
const ANSWER_PIECE: usize = 16 * 1024;
/// Bytes lent at once to large bodies while they arrive (and until they are decided): four of the
/// largest. See [`intake`] for who gets them.
const INTAKE_BYTES: usize = 4 * BODY_LIMIT;
/// KiB of memory lent at once to parsing large bodies (from when they have arrived until they are
/// decided) and to large answers (until they are written or their connection is dropped). tokio runs as many
/// decisions at once as the node has cores, whatever the pod's CPU limit, and huge requests would
/// each take many times their size: twelve 1.86 MiB pods at once peaked at 920 MiB with no budget.
/// A request that waits past the request deadline gets a 408.
const MEMORY_BUDGET_KIB: u32 = 32 * 1024;
/// What reading a body takes, as a multiple of its size: the body, the object's text, and the typed
/// object. Counted in bytes asked of the allocator, a pod of 100 affinity terms of 1,800 values took
/// 5.3 times its size, one of 20,000 terms 6 times; the allocator's own overhead on small strings
/// makes it about 8 in resident memory.
const READ_COST: usize = 8;

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
    /// Memory for parsing large bodies, and for large answers (see [`MEMORY_BUDGET_KIB`]).
    budget: Arc<Budget>,
    /// Memory for large bodies while they arrive (see [`INTAKE_BYTES`]).
    intake: Arc<Intake>,
}

impl WebhookState {
    pub fn new(cache: SharedCache, lookup_wait: Duration) -> WebhookState {
        WebhookState {
            cache,
            metrics: Arc::new(Metrics::new()),
            lookup_wait,
            draining: CancellationToken::new(),
            budget: Budget::new(MEMORY_BUDGET_KIB),
            intake: Intake::new(INTAKE_BYTES),
        }
    }

    /// The same with a memory budget of `kib` KiB instead of [`MEMORY_BUDGET_KIB`] (a request that
    /// would take more takes all of it).
    pub fn with_memory_budget(mut self, kib: u32) -> WebhookState {
        self.budget = Budget::new(kib);
        self
    }

    /// The same with `bytes` for large bodies while they arrive instead of [`INTAKE_BYTES`].
    pub fn with_intake(mut self, bytes: usize) -> WebhookState {
        self.intake = Intake::new(bytes);
        self
    }

    /// Bytes lent out now to large bodies while they arrive.
    pub fn intake_held(&self) -> usize {
        self.intake.held()
    }

    /// KiB of the memory budget not lent out now.
    pub fn budget_available_kib(&self) -> usize {
        self.budget.permits.available_permits()
    }

    /// Cancelled once shutdown has begun (see [`drain`]).
    pub fn draining(&self) -> &CancellationToken {
        &self.draining
    }
}

/// Waits for `signal`, then reports not ready while still answering for `delay` (each answer closing
/// its connection, see [`close_when_draining`]), and returns: the caller stops the listeners then. The API server keeps sending to a terminating pod until the
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
            move |State(state): State<WebhookState>, request: Request| async move {
                admission_response(&state, endpoint, request).await
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
        .layer(middleware::map_response_with_state(
            state.clone(),
            close_when_draining,
        ))
        .with_state(state)
}

/// While shutting down, every answer tells the client to close its connection. The API server keeps
/// sending to this pod on the keep-alive connections it already has, whatever the endpoints say, so
/// closing them at the end of the delay would race its next call on them (a POST is never retried:
/// the call fails, and `failurePolicy` decides the pod). Closed after an answer, a connection is
/// dropped by the client itself, and its next call goes through the Service to a ready replica.
async fn close_when_draining(
    State(state): State<WebhookState>,
    mut response: Response,
) -> Response {
    if state.draining.is_cancelled() {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
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

async fn admission_response(
    state: &WebhookState,
    endpoint: Endpoint,
    request: Request,
) -> Response {
    // The API server always sends Content-Length; a body without one is read as a large one.
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|length| length > BODY_LIMIT) {
        return too_large();
    }
    let (body, arrival) = match declared {
        Some(length) if length <= SMALL_BODY => match Bytes::from_request(request, state).await {
            Ok(body) => (body, None),
            Err(rejection) => return rejection.into_response(),
        },
        _ => match read_large(state, request, declared.unwrap_or(BODY_LIMIT)).await {
            Ok((body, arrival)) => (body, Some(arrival)),
            Err(refusal) => return refusal,
        },
    };
    // Parsing a large body takes many times its size: it waits for its share of the budget once
    // the body is in, so that it waits only for other parses, never for a client.
    let parse_share = if body.len() > SMALL_BODY {
        Some(state.budget.share(body.len() * READ_COST, true).await)
    } else {
        None
    };
    let (status, answer) = admit(state, endpoint, &body).await;
    drop(body);
    drop(arrival);
    let content_type = if status == StatusCode::OK {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    let body = held_answer(state, answer, parse_share).await;
    (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// Reads a body that may be large (`length` bytes at most) while holding its share of the intake
/// (see [`intake`]): answered 408 when another body takes the share, 413 past `length`.
async fn read_large(
    state: &WebhookState,
    request: Request,
    length: usize,
) -> Result<(Bytes, Arrival), Response> {
    let (address, deadline) = match request.extensions().get::<RequestOrigin>() {
        Some(origin) => (origin.peer.ip(), origin.deadline),
        // Served without the listener (the router driven directly): one client, the usual deadline.
        None => (
            IpAddr::from([0, 0, 0, 0]),
            Instant::now() + WEBHOOK_LIMITS.request_timeout,
        ),
    };
    let mut arrival = state.intake.arrival(address, deadline, length);
    let mut body = request.into_body();
    let mut received = Vec::with_capacity(length.min(intake::STEP));
    loop {
        let frame = tokio::select! {
            frame = body.frame() => frame,
            () = arrival.cut_off().cancelled() => return Err(cut_off(state)),
        };
        let Some(frame) = frame else { break };
        let Ok(frame) = frame else {
            return Err(
                (StatusCode::BAD_REQUEST, "request body could not be read\n").into_response(),
            );
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if received.len() + data.len() > length {
            return Err(too_large());
        }
        received.extend_from_slice(&data);
        if arrival.arrived(received.len()).await.is_err() {
            return Err(cut_off(state));
        }
        if arrival.holding() && received.capacity() < length {
            // Its share is the whole length: one allocation, not a series of doublings.
            received.reserve_exact(length - received.len());
        }
    }
    Ok((Bytes::from(received), arrival))
}

/// 413: the body is over [`BODY_LIMIT`].
fn too_large() -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        [(header::CONNECTION, "close")],
        "request body larger than 6 MiB\n",
    )
        .into_response()
}

/// 408, and the connection closes (its body will not be read to its end): a body arriving too
/// slowly lost its share of the intake to one that arrives.
fn cut_off(state: &WebhookState) -> Response {
    state.metrics.body_cut_off();
    debug!("large body arriving too slowly: cut off for another body");
    (
        StatusCode::REQUEST_TIMEOUT,
        [(header::CONNECTION, "close")],
        "request body arriving too slowly: its memory was given to another request\n",
    )
        .into_response()
}

/// The answer's body. A large answer holds a share of the budget until it has been handed over in
/// full (written, but for what hyper and rustls buffer) or its connection has been dropped: taken
/// from the parse's share when there is one, else waited for.
async fn held_answer(state: &WebhookState, answer: Vec<u8>, parse_share: Option<Share>) -> Body {
    if answer.len() <= SMALL_ANSWER {
        return Body::from(answer);
    }
    let kib = kib_of(answer.len(), &state.budget);
    let share = match parse_share.and_then(|mut parse| parse.split(kib)) {
        Some(share) => share,
        None => state.budget.share(answer.len(), false).await,
    };
    Body::new(HeldAnswer {
        rest: Bytes::from(answer),
        share: Some(share),
    })
}

/// KiB of `bytes`, as taken from `budget` (at most all of it).
fn kib_of(bytes: usize, budget: &Budget) -> u32 {
    u32::try_from(bytes.div_ceil(1024))
        .unwrap_or(u32::MAX)
        .clamp(1, budget.total)
}

/// Memory lent to large bodies and answers, in KiB.
struct Budget {
    permits: Arc<Semaphore>,
    total: u32,
    /// A large body was parsed since the allocator's free memory was last given back.
    trim_due: AtomicBool,
}

impl Budget {
    fn new(kib: u32) -> Arc<Budget> {
        let total = kib.max(1);
        Arc::new(Budget {
            permits: Arc::new(Semaphore::new(total as usize)),
            total,
            trim_due: AtomicBool::new(false),
        })
    }

    /// Waits for a share for `bytes` (at most the whole budget). `parse`: for a large body, whose
    /// parse leaves memory in the allocator's arenas.
    async fn share(self: &Arc<Self>, bytes: usize, parse: bool) -> Share {
        let kib = kib_of(bytes, self);
        // The semaphore is never closed.
        let permit = Arc::clone(&self.permits).acquire_many_owned(kib).await.ok();
        if parse {
            self.trim_due.store(true, Ordering::Relaxed);
        }
        Share {
            permit,
            budget: Arc::clone(self),
        }
    }
}

/// A share of the budget, given back when dropped.
struct Share {
    permit: Option<OwnedSemaphorePermit>,
    budget: Arc<Budget>,
}

impl Share {
    /// `kib` of this share as a share of its own (`None` when this one holds less).
    fn split(&mut self, kib: u32) -> Option<Share> {
        let permit = self.permit.as_mut()?.split(kib as usize)?;
        Some(Share {
            permit: Some(permit),
            budget: Arc::clone(&self.budget),
        })
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        drop(self.permit.take());
        // The last large body and answer of a burst are done: give their memory back to the
        // system now, which the allocator would otherwise keep for a while (glibc kept ~200 MiB in
        // its per-thread arenas after a burst of huge pods, against 14 MiB fresh).
        if self.budget.permits.available_permits() == self.budget.total as usize
            && self.budget.trim_due.swap(false, Ordering::Relaxed)
        {
            crate::runtime::allocator::release_free_memory();
        }
    }
}

/// A large answer and its share of the budget: handed to hyper in pieces copied out of it, and the
/// share given back with the answer once the last piece has been handed over.
struct HeldAnswer {
    rest: Bytes,
    share: Option<Share>,
}

impl hyper::body::Body for HeldAnswer {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.rest.is_empty() {
            self.share = None;
            return Poll::Ready(None);
        }
        let len = self.rest.len().min(ANSWER_PIECE);
        let piece = self.rest.split_to(len);
        let piece = Bytes::copy_from_slice(&piece);
        if self.rest.is_empty() {
            self.rest = Bytes::new();
            self.share = None;
        }
        Poll::Ready(Some(Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.rest.len() as u64)
    }
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
    (StatusCode::OK, review::response_body(&response))
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
/// - 5s to write an answer (the API server reads it at once; an answer is at most about 90 KiB).
/// - Full, a client from an address holding at least two connections fewer than the largest holder
///   takes the slot of that holder's oldest connection without a request under way, so that a flood
///   from a few addresses cannot keep the API server out (`runtime::connections`).
pub const WEBHOOK_LIMITS: ConnectionLimits = ConnectionLimits {
    max_connections: 512,
    max_per_peer: 128,
    handshake_timeout: Duration::from_secs(5),
    idle_timeout: Duration::from_secs(10),
    request_timeout: Duration::from_secs(10),
    write_timeout: Duration::from_secs(5),
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
        Some(move |stream| acceptor.accept(stream)),
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

    /// Large bodies share the budget: while it is used up another large body waits, and the budget
    /// comes back when a share is dropped. A large answer takes its share out of its parse's.
    #[test]
    fn large_bodies_wait_for_the_budget() {
        let budget = Budget::new(8 * 1024);
        let mib = 1024 * 1024;
        let first = budget
            .share(6 * mib, true)
            .now_or_never()
            .expect("budget free");
        assert!(
            budget.share(3 * mib, true).now_or_never().is_none(),
            "6 + 3 MiB at once"
        );
        let mut parse = budget
            .share(mib, true)
            .now_or_never()
            .expect("6 + 1 MiB fits");
        let answer = parse.split(100).expect("100 KiB out of 1 MiB");
        drop(parse);
        assert_eq!(budget.permits.available_permits(), 2 * 1024 - 100);
        drop(first);
        assert!(budget.share(3 * mib, true).now_or_never().is_some());
        drop(answer);
        assert_eq!(budget.permits.available_permits(), 8 * 1024);
        // More than the whole budget takes all of it, no more.
        let all = budget
            .share(BODY_LIMIT * READ_COST, true)
            .now_or_never()
            .unwrap();
        assert_eq!(budget.permits.available_permits(), 0);
        drop(all);
    }

    /// A body announced over the limit is refused before it is read; a large review is read,
    /// answered, and gives its memory back; a body without a length past the limit is refused.
    #[tokio::test]
    async fn large_bodies_are_read_within_the_limit_and_give_their_memory_back() {
        use tower::ServiceExt;
        let state = WebhookState::new(
            SharedCache::from_cache(crate::cluster::ClusterCache::default()),
            Duration::ZERO,
        );
        let app = router(state.clone());
        let post = |length: Option<usize>, body: Body| {
            let mut request = Request::post(Endpoint::MutatePods.path());
            if let Some(length) = length {
                request = request.header(header::CONTENT_LENGTH, length);
            }
            request.body(body).unwrap()
        };
        let over = app
            .clone()
            .oneshot(post(Some(BODY_LIMIT + 1), Body::empty()))
            .await
            .unwrap();
        assert_eq!(over.status(), StatusCode::PAYLOAD_TOO_LARGE);

        let pod = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "large", "namespace": "team-a",
                         "annotations": {"notes": "x".repeat(300_000)}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}
        });
        let review = serde_json::to_vec(&serde_json::json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u-1", "operation": "CREATE", "namespace": "team-a",
                        "kind": {"group": "", "version": "v1", "kind": "Pod"},
                        "resource": {"group": "", "version": "v1", "resource": "pods"},
                        "userInfo": {"username": "u"}, "object": pod}
        }))
        .unwrap();
        // Sent in pieces, as over a connection.
        let pieces: Vec<Result<Bytes, Infallible>> = review
            .chunks(16 * 1024)
            .map(|piece| Ok(Bytes::copy_from_slice(piece)))
            .collect();
        let body = Body::from_stream(futures::stream::iter(pieces));
        let answer = app
            .clone()
            .oneshot(post(Some(review.len()), body))
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(state.intake_held(), 0);

        let endless =
            futures::stream::repeat_with(|| Ok::<_, Infallible>(Bytes::from(vec![b' '; 1 << 20])));
        let refused = app
            .oneshot(post(None, Body::from_stream(endless)))
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(state.intake_held(), 0);
    }

    /// Polls `check` until it holds; fails after a generous bound (a guard against hanging, not a
    /// timing assertion).
    async fn eventually(what: &str, check: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !check() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A client asks for a large answer and never reads it: the answer holds its share of the budget
    /// while it waits, and the write deadline ends the connection, which frees the answer and gives
    /// the share back (every other deadline is far beyond the test's bound).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_unread_answer_holds_its_share_until_the_write_deadline() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        const ANSWER: usize = 64 << 20;
        let state = WebhookState::new(
            SharedCache::from_cache(crate::cluster::ClusterCache::default()),
            Duration::ZERO,
        );
        let answering = state.clone();
        let app = Router::new().route(
            "/large",
            get(move || {
                let state = answering.clone();
                async move { held_answer(&state, vec![b'x'; ANSWER], None).await }
            }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let never = Duration::from_secs(600);
        let limits = ConnectionLimits {
            idle_timeout: never,
            request_timeout: never,
            write_timeout: Duration::from_millis(300),
            ..ConnectionLimits::ADMIN
        };
        tokio::spawn(connections::serve_plain(
            listener,
            app,
            std::future::pending(),
            limits,
        ));
        let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"GET /large HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let whole = MEMORY_BUDGET_KIB as usize;
        eventually("the answer to take its share", || {
            state.budget_available_kib() < whole
        })
        .await;
        eventually("the write deadline to give the share back", || {
            state.budget_available_kib() == whole
        })
        .await;
        let mut received = Vec::new();
        let _ = client.read_to_end(&mut received).await;
        assert!(received.len() < ANSWER, "the whole answer was written");
    }
}
