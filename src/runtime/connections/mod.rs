//! Serving an axum app over HTTP/1.1 connections with limits, for the webhook's HTTPS listener and
//! the plain-HTTP admin listeners of both processes. Every connection costs a bounded time unless its
//! client keeps sending complete requests: a handshake deadline, an idle deadline (keep-alive time and
//! the next request's headers), and a deadline for each request's body and answer. The number of open
//! connections is capped in total and per client address, so that one flooding client cannot take
//! every slot.

use std::{
    collections::HashMap,
    future::Future,
    io,
    net::{IpAddr, SocketAddr},
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Router,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
    service::TowerToHyperService,
};
use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::{TcpListener, TcpStream},
    sync::Semaphore,
};
use tower::ServiceExt;
use tracing::{debug, warn};

/// Limits of one listener.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    /// Open connections at most; more clients wait in the listen backlog until one closes.
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
        drain_timeout: Duration::from_secs(5),
    };
}

/// Counts open connections per client address; a [`PeerSlot`] gives its place back when dropped.
#[derive(Clone, Default)]
struct Peers {
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

struct PeerSlot {
    peers: Peers,
    ip: IpAddr,
}

impl Peers {
    /// A place for one more connection from `ip`, or `None` when it already has `max`.
    fn take(&self, ip: IpAddr, max: usize) -> Option<PeerSlot> {
        // An IPv4 client on a dual-stack socket arrives as ::ffff:a.b.c.d: one client, one count.
        let ip = ip.to_canonical();
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(ip).or_insert(0);
        if *count >= max.max(1) {
            return None;
        }
        *count += 1;
        Some(PeerSlot {
            peers: self.clone(),
            ip,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self.peers.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.ip);
            }
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

/// Serves `app` on plain-HTTP connections from `listener` until `shutdown` resolves.
pub async fn serve_plain(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()>,
    limits: ConnectionLimits,
) {
    serve(
        listener,
        |stream| async move { Ok(stream) },
        app,
        shutdown,
        limits,
    )
    .await;
}

/// Serves `app` on the connections from `listener`, each set up by `handshake` (TLS, or nothing),
/// until `shutdown` resolves; then lets in-flight requests finish for up to `limits.drain_timeout`.
pub async fn serve<H, F, IO>(
    listener: TcpListener,
    handshake: H,
    app: Router,
    shutdown: impl Future<Output = ()>,
    limits: ConnectionLimits,
) where
    H: Fn(TcpStream) -> F + Clone + Send + 'static,
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
        .header_read_timeout(limits.idle_timeout);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let peers = Peers::default();
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
        let Some(peer_slot) = peers.take(peer.ip(), limits.max_per_peer) else {
            // Dropping the stream closes it; the slot is free for the next client at once.
            debug!(?local, %peer, "too many connections from this address: closed");
            continue;
        };
        let (handshake, app, builder) = (handshake.clone(), app.clone(), builder.clone());
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let _slots = (slot, peer_slot);
            serve_one(stream, peer, handshake, app, builder, watcher, limits).await;
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.drain_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        warn!(?local, "in-flight requests did not finish in time");
    }
}

async fn serve_one<H, F, IO>(
    stream: TcpStream,
    peer: SocketAddr,
    handshake: H,
    app: Router,
    builder: hyper::server::conn::http1::Builder,
    watcher: hyper_util::server::graceful::Watcher,
    limits: ConnectionLimits,
) where
    H: Fn(TcpStream) -> F,
    F: Future<Output = io::Result<IO>>,
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = match tokio::time::timeout(limits.handshake_timeout, handshake(stream)).await {
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
    let request_timeout = limits.request_timeout;
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
    let connection = builder.serve_connection(TokioIo::new(io), TowerToHyperService::new(deadline));
    if let Err(error) = watcher.watch(connection).await {
        debug!(%peer, %error, "connection ended with an error");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_counted_per_address_and_given_back() {
        let peers = Peers::default();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let first = peers.take(a, 2).unwrap();
        let second = peers.take(mapped, 2).expect("a's second connection");
        assert!(peers.take(a, 2).is_none(), "a third from the same client");
        assert!(peers.take(b, 2).is_some(), "another client is not affected");
        drop(first);
        let third = peers.take(a, 2).expect("a place was given back");
        drop((second, third));
        assert!(
            peers.open.lock().unwrap().is_empty(),
            "no address left behind"
        );
    }
}
