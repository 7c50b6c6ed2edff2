//! Hostile and ordinary clients for the webhook's listeners, from any loopback address (all of
//! 127.0.0.0/8 is loopback on Linux, so each address is a distinct client to the server): connections
//! that stall in the TLS handshake, idle after it, trickle their headers or their body (announcing a
//! small or the largest body), and the one request of an ordinary client, timed.

use std::{
    io,
    net::{IpAddr, SocketAddr},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use rustls::pki_types::ServerName;
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    net::TcpStream,
    task::JoinHandle,
};
use tokio_rustls::TlsConnector;

/// What a hostile connection does once open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attack {
    /// The first bytes of a TLS ClientHello, then nothing (plain HTTP: nothing at all).
    StalledHandshake,
    /// A completed TLS handshake, then nothing.
    Idle,
    /// Part of a request's headers, then nothing.
    SlowHeaders,
    /// Complete headers announcing a body, one byte of it, then nothing.
    SlowBody,
    /// Complete headers announcing a body of 6,000,000 bytes (the largest a review may be), then one
    /// byte of it a second: a client that asks the most memory of the server for the least sending.
    TrickledLargeBody,
    /// The same announcement, its first mebibyte at once, then one byte a second: a client that
    /// gets the memory for its body and then stops sending.
    StalledLargeBody,
}

impl Attack {
    pub const ALL: [Attack; 4] = [
        Attack::StalledHandshake,
        Attack::Idle,
        Attack::SlowHeaders,
        Attack::SlowBody,
    ];
}

/// A TCP connection to `target` from the loopback address `from`.
pub async fn tcp_from(target: SocketAddr, from: IpAddr) -> io::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(SocketAddr::new(from, 0))?;
    socket.connect(target).await
}

fn localhost() -> ServerName<'static> {
    ServerName::try_from("localhost").expect("a valid name")
}

/// Reads and discards until the server closes the connection (or breaks it).
async fn until_closed(mut stream: impl AsyncRead + Unpin) {
    let mut sink = [0u8; 4096];
    while let Ok(n) = stream.read(&mut sink).await {
        if n == 0 {
            return;
        }
    }
}

const SLOW_HEADERS: &[u8] = b"POST /mutate-pods HTTP/1.1\r\nhost: localhost\r\n";
const SLOW_BODY: &[u8] = b"POST /mutate-pods HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n{";
const LARGE_BODY_HEAD: &[u8] = b"POST /mutate-pods HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 6000000\r\n\r\n";

/// [`Attack::StalledLargeBody`]'s first bytes: the headers and a mebibyte of the body.
fn stalled_large_body_head() -> Vec<u8> {
    let mut head = LARGE_BODY_HEAD.to_vec();
    head.resize(head.len() + (1 << 20), b' ');
    head
}

/// Sends a byte a second after `head` until the server closes the connection (or breaks it).
async fn trickle(stream: impl AsyncRead + AsyncWrite + Unpin, head: &[u8]) -> io::Result<()> {
    let (mut reader, mut writer) = tokio::io::split(stream);
    writer.write_all(head).await?;
    writer.flush().await?;
    let mut sink = [0u8; 4096];
    loop {
        tokio::select! {
            read = reader.read(&mut sink) => {
                if matches!(read, Ok(0) | Err(_)) {
                    return Ok(());
                }
            }
            () = tokio::time::sleep(Duration::from_secs(1)) => {
                if writer.write_all(b" ").await.is_err() || writer.flush().await.is_err() {
                    return Ok(());
                }
            }
        }
    }
}

/// Opens one hostile connection and holds it as `attack` leaves it until the server closes it.
/// `tls`: the listener speaks TLS (with a certificate for `localhost` this connector trusts).
pub async fn attack_once(
    target: SocketAddr,
    from: IpAddr,
    attack: Attack,
    tls: Option<&TlsConnector>,
) -> io::Result<()> {
    let mut tcp = tcp_from(target, from).await?;
    let Some(tls) = tls else {
        let sent: &[u8] = match attack {
            Attack::StalledHandshake | Attack::Idle => b"",
            Attack::SlowHeaders => SLOW_HEADERS,
            Attack::SlowBody => SLOW_BODY,
            Attack::TrickledLargeBody => return trickle(tcp, LARGE_BODY_HEAD).await,
            Attack::StalledLargeBody => return trickle(tcp, &stalled_large_body_head()).await,
        };
        tcp.write_all(sent).await?;
        until_closed(tcp).await;
        return Ok(());
    };
    if attack == Attack::StalledHandshake {
        tcp.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00]).await?;
        until_closed(tcp).await;
        return Ok(());
    }
    let mut stream = tls.connect(localhost(), tcp).await?;
    let sent: &[u8] = match attack {
        Attack::SlowHeaders => SLOW_HEADERS,
        Attack::SlowBody => SLOW_BODY,
        Attack::TrickledLargeBody => return trickle(stream, LARGE_BODY_HEAD).await,
        Attack::StalledLargeBody => return trickle(stream, &stalled_large_body_head()).await,
        Attack::StalledHandshake | Attack::Idle => b"",
    };
    stream.write_all(sent).await?;
    stream.flush().await?;
    until_closed(stream).await;
    Ok(())
}

/// Hostile connections held open from several addresses; stopped when dropped.
pub struct Flood {
    workers: Vec<JoinHandle<()>>,
    opened: Arc<AtomicUsize>,
}

impl Flood {
    /// `per_address` workers on each of `addresses`, taking `attacks` in turn. Each opens its
    /// connection; with `reconnect` it opens another as soon as the server closes one, as an
    /// attacker who wants to keep the pressure on does.
    pub fn start(
        target: SocketAddr,
        addresses: &[IpAddr],
        per_address: usize,
        attacks: &[Attack],
        tls: Option<TlsConnector>,
        reconnect: bool,
    ) -> Flood {
        let opened = Arc::new(AtomicUsize::new(0));
        let mut workers = Vec::new();
        for &from in addresses {
            for at in 0..per_address {
                let attack = attacks[at % attacks.len()];
                let (tls, opened) = (tls.clone(), Arc::clone(&opened));
                workers.push(tokio::spawn(async move {
                    loop {
                        opened.fetch_add(1, Ordering::Relaxed);
                        let result = attack_once(target, from, attack, tls.as_ref()).await;
                        if !reconnect {
                            return;
                        }
                        if result.is_err() {
                            // Out of ports or refused: a breath, then again.
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                }));
            }
        }
        Flood { workers, opened }
    }

    /// Connections opened so far.
    pub fn opened(&self) -> usize {
        self.opened.load(Ordering::Relaxed)
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        for worker in &self.workers {
            worker.abort();
        }
    }
}

/// The loopback addresses 127.0.0.`first` to 127.0.0.`last`.
pub fn loopback(first: u8, last: u8) -> Vec<IpAddr> {
    (first..=last)
        .map(|n| IpAddr::from([127, 0, 0, n]))
        .collect()
}

/// Sends `request` (a complete HTTP/1.1 request that asks for `connection: close`) on a fresh
/// connection from `from`, and reads the answer to its end: its status code and body.
pub async fn request(
    target: SocketAddr,
    from: IpAddr,
    tls: Option<&TlsConnector>,
    request: &[u8],
) -> io::Result<(u16, Vec<u8>)> {
    let tcp = tcp_from(target, from).await?;
    let answer = match tls {
        Some(tls) => exchange(tls.connect(localhost(), tcp).await?, request).await?,
        None => exchange(tcp, request).await?,
    };
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| io::Error::other("no end of headers"))?;
    let status = std::str::from_utf8(&answer[..end])
        .ok()
        .and_then(|head| head.split(' ').nth(1)?.parse().ok())
        .ok_or_else(|| io::Error::other("no status line"))?;
    Ok((status, answer[end + 4..].to_vec()))
}

async fn exchange(
    mut stream: impl AsyncRead + AsyncWrite + Unpin,
    request: &[u8],
) -> io::Result<Vec<u8>> {
    stream.write_all(request).await?;
    stream.flush().await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    Ok(answer)
}

/// A `POST` of `body` to `path` asking for `connection: close`.
pub fn post(path: &str, body: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

/// A `GET` of `path` asking for `connection: close`.
pub fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n").into_bytes()
}
