//! Serving an axum app over HTTP/1.1 connections with limits, for the webhook's HTTPS listener and
//! the plain-HTTP admin listeners of both processes. Every connection costs a bounded time unless its
//! client keeps sending complete requests and reading the answers: a handshake deadline, an idle
//! deadline (keep-alive time and the next request's headers), a deadline for each request's body
//! and decision, and one for writing each answer. The number of open connections is capped in total
//! and per client address, and a full listener gives the slot of a flooding address's oldest
//! unfinished connection to a client from another address (`slots`), so that a flood from a few
//! addresses cannot keep the API server's reviews or the kubelet's probes out.

mod deadline;
mod slots;

use std::{future::Future, io, net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    Router,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use hyper::body::Body as _;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::{GracefulShutdown, Watcher},
    service::TowerToHyperService,
};
use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::{TcpListener, TcpStream},
};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;
use tracing::{debug, warn};

use self::{
    deadline::{AnswerBody, Connection, RequestBody, WriteDeadline},
    slots::{Phase, Refused, Slot, Slots},
};

/// Limits of one listener.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    /// Open connections at most. When they are all taken, a new connection from an address holding
    /// at least two fewer than the largest holder takes the slot of that holder's oldest connection
    /// without a request under way; any other waits for a free slot (as long as an idle connection
    /// may last, with at most this many waiting; more are closed at once).
    pub max_connections: usize,
    /// Open connections per client IP address at most; a connection over it is closed at once. Keeps
    /// room for the other clients when one floods the port.
    pub max_per_peer: usize,
    /// Time a client has to complete the TLS handshake (no effect on plain HTTP).
    pub handshake_timeout: Duration,
    /// Time a connection may wait for the headers of its next request, idle keep-alive time included
    /// (hyper starts the clock when it starts waiting for a request, the first one included).
    pub idle_timeout: Duration,
    /// Time from a request's headers to its answer, reading the body included. A client that sends
    /// its body one byte at a time is answered 408 and disconnected when it runs out.
    pub request_timeout: Duration,
    /// Time to write an answer, from its first byte until the last has left the process. A client
    /// that does not read its answer is disconnected when it runs out, and the answer is freed.
    pub write_timeout: Duration,
    /// Time in-flight requests get to finish once the listener stops.
    pub drain_timeout: Duration,
}

impl ConnectionLimits {
    /// The plain-HTTP admin and metrics listeners: the kubelet's probes (a fresh connection each time)
    /// and a Prometheus scraper (one keep-alive connection; it retries a GET on a connection closed
    /// while idle, so a short idle deadline costs it nothing).
    pub const ADMIN: ConnectionLimits = ConnectionLimits {
        max_connections: 64,
        max_per_peer: 16,
        handshake_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(10),
        request_timeout: Duration::from_secs(10),
        write_timeout: Duration::from_secs(5),
        drain_timeout: Duration::from_secs(5),
    };

    /// How long a connection refused for a full listener waits for a slot: no longer than an idle
    /// connection may last.
    fn waiting_room_time(&self) -> Duration {
        self.idle_timeout.max(self.handshake_timeout)
    }
}

/// Largest buffer hyper keeps per connection for reading a request head or writing an answer (its
/// default is about 400 KiB): answers are handed to it in small pieces (`AnswerBody`), so a client
/// that does not read holds at most this much outside the memory budget of the webhook.
const MAX_BUF: usize = 64 * 1024;

/// Where a request came from and when it runs out of time: in every request's extensions, for
/// handlers that share something between clients (the webhook's memory for large bodies).
#[derive(Clone, Copy, Debug)]
pub struct RequestOrigin {
    pub peer: SocketAddr,
    /// When the request is answered 408 if it has not been answered yet.
    pub deadline: tokio::time::Instant,
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

/// Serves `app` on plain-HTTP connections from `listener` until `shutdown` resolves.
pub async fn serve_plain(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()>,
    limits: ConnectionLimits,
) {
    serve(
        listener,
        None::<fn(TcpStream) -> std::future::Ready<io::Result<TcpStream>>>,
        app,
        shutdown,
        limits,
    )
    .await;
}

/// Serves `app` on the connections from `listener`, each set up by `handshake` (TLS; `None` for
/// plain HTTP), until `shutdown` resolves; then lets in-flight requests finish for up to
/// `limits.drain_timeout`.
pub async fn serve<H, F, IO>(
    listener: TcpListener,
    handshake: Option<H>,
    app: Router,
    shutdown: impl Future<Output = ()>,
    limits: ConnectionLimits,
) where
    H: Fn(TcpStream) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = io::Result<IO>> + Send,
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let local = listener.local_addr().ok();
    let graceful = GracefulShutdown::new();
    // HTTP/1.1 with keep-alive (no HTTP/2: the API server's webhook client uses HTTP/1.1 when not
    // offered h2, and one multiplexed connection would send all of its calls to one replica).
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.idle_timeout)
        .max_buf_size(MAX_BUF);
    let server = Arc::new(Server {
        handshake,
        app,
        builder,
        limits,
        slots: Slots::new(limits.max_connections, limits.max_per_peer),
        waiting_room: Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1))),
        stopping: CancellationToken::new(),
    });
    let mut full = FullReport::default();
    tokio::pin!(shutdown);
    loop {
        full.say_if_due(local, &server.slots);
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    warn!(?local, %error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let first = if server.handshake.is_some() {
            Phase::Handshake
        } else {
            Phase::Waiting
        };
        match server.slots.admit(peer.ip(), first) {
            Ok(slot) => {
                let (server, watcher) = (Arc::clone(&server), graceful.watcher());
                tokio::spawn(async move { server.serve_one(stream, peer, slot, watcher).await });
            }
            Err(Refused::PerAddress) => {
                // Dropping the stream closes it.
                debug!(?local, %peer, "too many connections from this address: closed");
                full.closed += 1;
            }
            Err(Refused::Full) => match Arc::clone(&server.waiting_room).try_acquire_owned() {
                Ok(place) => {
                    full.waited += 1;
                    let (server, watcher) = (Arc::clone(&server), graceful.watcher());
                    tokio::spawn(async move {
                        let slot = server.wait_for_slot(peer, first).await;
                        drop(place);
                        if let Some(slot) = slot {
                            server.serve_one(stream, peer, slot, watcher).await;
                        }
                    });
                }
                Err(_) => {
                    debug!(?local, %peer, "no slot and no room to wait: closed");
                    full.closed += 1;
                }
            },
        }
    }
    drop(listener);
    server.stopping.cancel();
    if tokio::time::timeout(limits.drain_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        warn!(?local, "in-flight requests did not finish in time");
    }
}

/// What a full listener did, said at most once a minute: a flood is visible in the logs without
/// a line per connection.
#[derive(Default)]
struct FullReport {
    waited: u64,
    closed: u64,
    last: Option<tokio::time::Instant>,
}

impl FullReport {
    const EVERY: Duration = Duration::from_secs(60);

    fn say_if_due(&mut self, local: Option<SocketAddr>, slots: &Slots) {
        let now = tokio::time::Instant::now();
        if self.last.is_some_and(|last| now < last + Self::EVERY) {
            return;
        }
        let taken = slots.take_count();
        if taken + self.waited + self.closed > 0 {
            warn!(
                ?local,
                taken,
                waited = self.waited,
                closed = self.closed,
                "connection limits reached since the last report: slots taken from the \
                 addresses holding the most for others, connections made to wait for a slot, \
                 connections closed at once (per-address cap, or no room to wait)"
            );
        }
        (self.waited, self.closed, self.last) = (0, 0, Some(now));
    }
}

/// What every connection of a listener shares.
struct Server<H> {
    /// The TLS handshake; `None` for plain HTTP.
    handshake: Option<H>,
    app: Router,
    builder: hyper::server::conn::http1::Builder,
    limits: ConnectionLimits,
    slots: Slots,
    /// Places for the connections waiting for a slot.
    waiting_room: Arc<tokio::sync::Semaphore>,
    /// Cancelled when the listener stops: waiting connections are closed.
    stopping: CancellationToken,
}

impl<H, F, IO> Server<H>
where
    H: Fn(TcpStream) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = io::Result<IO>> + Send,
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    /// A slot for a connection refused for a full listener, once one is free; `None` when the
    /// waiting time is over, the address has reached its cap meanwhile, or the listener stops.
    async fn wait_for_slot(&self, peer: SocketAddr, first: Phase) -> Option<Slot> {
        let deadline = tokio::time::Instant::now() + self.limits.waiting_room_time();
        loop {
            let freed = self.slots.freed();
            tokio::pin!(freed);
            // Registered before trying, so that a slot given back in between is not missed.
            freed.as_mut().enable();
            match self.slots.admit(peer.ip(), first) {
                Ok(slot) => return Some(slot),
                Err(Refused::PerAddress) => return None,
                Err(Refused::Full) => {}
            }
            tokio::select! {
                () = freed => {}
                () = tokio::time::sleep_until(deadline) => {
                    debug!(%peer, "no slot came free in time: closed");
                    return None;
                }
                () = self.stopping.cancelled() => return None,
            }
        }
    }

    async fn serve_one(
        self: Arc<Self>,
        stream: TcpStream,
        peer: SocketAddr,
        slot: Slot,
        watcher: Watcher,
    ) {
        let taken = slot.taken().clone();
        tokio::select! {
            () = self.serve_connection(stream, peer, slot, watcher) => {}
            () = taken.cancelled() => debug!(%peer, "slot given to another client's connection: closed"),
        }
    }

    async fn serve_connection(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        slot: Slot,
        watcher: Watcher,
    ) {
        let connection = Arc::new(Connection::new(slot));
        match &self.handshake {
            None => {
                self.serve_http(stream, peer, connection, watcher).await;
            }
            Some(handshake) => {
                let io =
                    match tokio::time::timeout(self.limits.handshake_timeout, handshake(stream))
                        .await
                    {
                        Ok(Ok(io)) => io,
                        Ok(Err(error)) => {
                            debug!(%peer, %error, "handshake failed");
                            return;
                        }
                        Err(_) => {
                            debug!(%peer, "handshake timed out");
                            return;
                        }
                    };
                connection.slot.enter(Phase::Waiting);
                self.serve_http(io, peer, connection, watcher).await;
            }
        }
    }

    async fn serve_http<S>(
        &self,
        io: S,
        peer: SocketAddr,
        connection: Arc<Connection>,
        watcher: Watcher,
    ) where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let limits = self.limits;
        let app = self.app.clone();
        let io = WriteDeadline::new(io, Arc::clone(&connection), limits.write_timeout);
        let service =
            tower::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                let (app, connection) = (app.clone(), Arc::clone(&connection));
                async move {
                    connection.slot.enter(if request.body().is_end_stream() {
                        Phase::Busy
                    } else {
                        Phase::Body
                    });
                    let body_of = Arc::clone(&connection);
                    let mut request =
                        request.map(|body| axum::body::Body::new(RequestBody::new(body, body_of)));
                    request.extensions_mut().insert(RequestOrigin {
                        peer,
                        deadline: tokio::time::Instant::now() + limits.request_timeout,
                    });
                    let response =
                        match tokio::time::timeout(limits.request_timeout, app.oneshot(request))
                            .await
                        {
                            Ok(Ok(answer)) => answer,
                            Ok(Err(never)) => match never {},
                            Err(_) => request_timed_out(),
                        };
                    connection.answering(limits.write_timeout);
                    Ok::<_, std::convert::Infallible>(
                        response.map(|body| AnswerBody::new(body, connection)),
                    )
                }
            });
        let served = self
            .builder
            .serve_connection(TokioIo::new(io), TowerToHyperService::new(service));
        if let Err(error) = watcher.watch(served).await {
            debug!(%peer, %error, "connection ended with an error");
        }
    }
}
