//! The webhook process's resident memory before, during and after bursts of huge admission requests,
//! and while clients leave their answers unread. Serves HTTPS on 127.0.0.1 in this process and reads
//! its own VmRSS / VmHWM from /proc (Linux only).
//!
//! `cargo bench --bench webhook_memory` (release); `cargo test --bench webhook_memory` runs the same
//! in the dev profile. `MEMORY_BUDGET_KIB=1000000` turns the memory budget off for comparison.
//! Figures are in docs/admission.md. Prints, does not assert: memory is measured and reported, not a
//! pass/fail bound.

// What the binary runs on, so that the figures are the binary's.
tidal::global_allocator!();

use std::{path::Path, sync::Arc, time::Duration};

use http_body_util::{BodyExt, Full};
use hyper::{Request, body::Bytes};
use hyper_util::rt::TokioIo;
use rcgen::{CertificateParams, KeyPair};
use rustls::{ClientConfig, RootCertStore, pki_types::ServerName};
use serde_json::{Value, json};
use tidal::{
    cluster::{ClusterCache, SharedCache},
    webhook::{
        server::{self, WebhookState},
        tls::CertStore,
    },
};
use tidal_testkit::{
    admission, fake_apiserver::FakeApiServer, flood, webhook_process::WebhookProcess,
};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsConnector;

/// Kilobytes of `field` ("VmRSS", "VmHWM") in /proc/self/status.
fn proc_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn mib(kb: u64) -> String {
    format!("{:.1} MiB", kb as f64 / 1024.0)
}

/// A pod CREATE review whose pod has `terms` required node-affinity terms and opts into one zone
/// (the largest patch per term).
fn huge_pod(terms: usize) -> Bytes {
    let terms: Vec<Value> = (0..terms)
        .map(|i| {
            json!({"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [format!("z-{i}")]}
            ]})
        })
        .collect();
    let pod = json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": "huge", "namespace": "ns",
                     "annotations": {"volcano.sh/preemptable": "true", "volcano.sh/revocable-zone": "z1"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}],
                 "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                     {"nodeSelectorTerms": terms}}}}
    });
    let review = json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {
        "uid": "e911857d-c318-4a7d-8e34-6e3a37e7b3b5",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "name": "huge", "namespace": "ns", "operation": "CREATE",
        "userInfo": {"username": "system:serviceaccount:ns:deployer"},
        "object": pod, "dryRun": false}});
    Bytes::from(serde_json::to_vec(&review).expect("review"))
}

struct Client {
    addr: std::net::SocketAddr,
    connector: TlsConnector,
}

impl Client {
    /// Sends `body` on a connection of its own and leaves the answer unread (the connection is
    /// returned to be held).
    async fn send_unread(&self, body: Bytes) -> tokio_rustls::client::TlsStream<TcpStream> {
        use tokio::io::AsyncWriteExt;
        let tcp = TcpStream::connect(self.addr).await.expect("connect");
        let mut tls = self
            .connector
            .connect(ServerName::try_from("localhost").expect("name"), tcp)
            .await
            .expect("handshake");
        let head = format!(
            "POST /mutate-pods HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n",
            body.len()
        );
        tls.write_all(head.as_bytes()).await.expect("write");
        tls.write_all(&body).await.expect("write");
        tls.flush().await.expect("flush");
        tls
    }

    /// The answer's size, or its status when it is not a success (a 408 when the machine is too
    /// slow for the request deadline, as in the dev profile).
    async fn post(&self, body: Bytes) -> Result<usize, hyper::StatusCode> {
        let tcp = TcpStream::connect(self.addr).await.expect("connect");
        let tls = self
            .connector
            .connect(ServerName::try_from("localhost").expect("name"), tcp)
            .await
            .expect("handshake");
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .expect("http");
        tokio::spawn(connection);
        let request = Request::post("/mutate-pods")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .body(Full::new(body))
            .expect("request");
        let response = sender.send_request(request).await.expect("response");
        let status = response.status();
        let body = response.into_body().collect().await.expect("body");
        if status.is_success() {
            Ok(body.to_bytes().len())
        } else {
            Err(status)
        }
    }
}

async fn start() -> Client {
    let key = KeyPair::generate().expect("key");
    let cert = CertificateParams::new(vec!["localhost".to_owned()])
        .expect("params")
        .self_signed(&key)
        .expect("cert");
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("tls.crt"), cert.pem()).expect("write");
    std::fs::write(dir.path().join("tls.key"), key.serialize_pem()).expect("write");
    let store = Arc::new(
        CertStore::load(dir.path().join("tls.crt"), dir.path().join("tls.key")).expect("load"),
    );
    let tls = Arc::new(store.server_config().expect("config"));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let mut state = WebhookState::new(
        SharedCache::from_cache(ClusterCache::default()),
        Duration::ZERO,
    );
    // MEMORY_BUDGET_KIB=1000000 turns the memory budget off, for comparison.
    if let Some(kib) = std::env::var("MEMORY_BUDGET_KIB")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        state = state.with_memory_budget(kib);
    }
    tokio::spawn(server::serve_tls(
        listener,
        tls,
        server::router(state),
        std::future::pending(),
    ));
    let mut roots = RootCertStore::empty();
    roots.add(cert.der().clone()).expect("root");
    let config = ClientConfig::builder_with_provider(tidal::webhook::tls::provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Client {
        addr,
        connector: TlsConnector::from(Arc::new(config)),
    }
}

/// Starts a new peak: the kernel's high-water mark (VmHWM) is reset to the current RSS.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Eight workers, as tokio starts on an eight-core node whatever the pod's CPU limit: up to eight
/// requests are decided at once. Every request body is built before the peak is reset, so that the
/// peaks are the server's (and the client's TLS), not the building of the bodies.
#[tokio::main(flavor = "multi_thread", worker_threads = 8)]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = Arc::new(start().await);
    client.post(huge_pod(1)).await.expect("a small request");
    println!(
        "fresh (one small request served): RSS {}",
        mib(proc_kb("VmRSS"))
    );
    let body = huge_pod(20_000);
    reset_peak();
    client.post(body).await.expect("one huge request");
    println!(
        "one 20,000-term pod alone: peak RSS {}, after {}",
        mib(proc_kb("VmHWM")),
        mib(proc_kb("VmRSS"))
    );
    for (terms, rounds) in [(100, 1), (20_000, 2)] {
        let body = huge_pod(terms);
        for round in 1..=rounds {
            let bodies = vec![body.clone(); 12];
            burst(
                &client,
                &format!("12 x {terms} terms, round {round}"),
                bodies,
            )
            .await;
        }
    }
    // The pod of 100 terms of 1,800 values, half of the burst opted into a zone (refused), half not
    // (patched with 100 operations).
    let amplifying: Vec<Bytes> = (0..24)
        .map(|n| Bytes::from(admission::pod_review(admission::amplifying_pod(n % 2 == 0))))
        .collect();
    burst(&client, "12 x 1,800-value pods", amplifying[..12].to_vec()).await;
    // 24 clients that send one and never read the answer.
    reset_peak();
    let mut unread = Vec::new();
    for body in &amplifying {
        unread.push(client.send_unread(body.clone()).await);
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    println!(
        "24 x 1,800-value pods, answers unread for 3s: peak RSS {}, now {}",
        mib(proc_kb("VmHWM")),
        mib(proc_kb("VmRSS")),
    );
    drop(unread);
    drop(amplifying);
    process().await;
}

/// The same requests against `tidal webhook` as its own process (this bench's build of the binary),
/// whose figures are the server's alone: the client's bodies and buffers are in this process.
async fn process() {
    let server = FakeApiServer::start().await;
    let dir = tempfile::tempdir().expect("a scratch folder");
    let hook = WebhookProcess::start(
        Path::new(env!("CARGO_BIN_EXE_tidal")),
        &server.kubeconfig(dir.path(), "webhook"),
        dir.path(),
    )
    .await;
    println!(
        "tidal webhook as its own process, fresh: RSS {}",
        mib(hook.status_kib("VmRSS"))
    );
    let send = |body: Vec<u8>| {
        let (target, tls) = (hook.https, hook.tls.clone());
        let request = flood::post("/mutate-pods", &body);
        tokio::spawn(async move {
            flood::request(target, [127, 0, 0, 1].into(), Some(&tls), &request).await
        })
    };
    for (what, body) in [
        ("a 20,000-term pod", huge_pod(20_000).to_vec()),
        (
            "a 1,800-value pod",
            admission::pod_review(admission::amplifying_pod(false)),
        ),
    ] {
        let started = hook.status_kib("VmRSS");
        hook.reset_peak();
        let calls: Vec<_> = (0..12).map(|_| send(body.clone())).collect();
        let mut statuses = Vec::new();
        for call in calls {
            statuses.push(call.await.expect("call").map_or(0, |(status, _)| status));
        }
        println!(
            "12 x {what} at once (statuses {statuses:?}): peak RSS {} (from {}), after {}",
            mib(hook.status_kib("VmHWM")),
            mib(started),
            mib(hook.status_kib("VmRSS")),
        );
    }
    let before = hook.metric("tidal_webhook_requests_total{").await;
    hook.reset_peak();
    let mut unread = Vec::new();
    for n in 0..24u8 {
        let body = admission::pod_review(admission::amplifying_pod(n % 2 == 0));
        let tcp = flood::tcp_from(hook.https, [127, 0, 0, 2 + n % 8].into())
            .await
            .expect("connect");
        let mut tls = hook
            .tls
            .connect(ServerName::try_from("localhost").expect("name"), tcp)
            .await
            .expect("handshake");
        tls.write_all(&flood::post("/mutate-pods", &body))
            .await
            .expect("write");
        tls.flush().await.expect("flush");
        unread.push(tls);
    }
    while hook.metric("tidal_webhook_requests_total{").await < before + 24.0 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    println!(
        "24 x a 1,800-value pod, answers unread, 1s after the last was answered: RSS {}, peak {}",
        mib(hook.status_kib("VmRSS")),
        mib(hook.status_kib("VmHWM")),
    );
    drop(unread);
}

/// The requests of `bodies` at once; prints the peak and the memory afterwards.
async fn burst(client: &Arc<Client>, what: &str, bodies: Vec<Bytes>) {
    let size = bodies[0].len();
    reset_peak();
    let calls: Vec<_> = bodies
        .into_iter()
        .map(|body| {
            let client = Arc::clone(client);
            tokio::spawn(async move { client.post(body).await })
        })
        .collect();
    let (mut answered, mut failed) = (0, Vec::new());
    for call in calls {
        match call.await.expect("call") {
            Ok(size) => answered += size,
            Err(status) => failed.push(status.as_u16()),
        }
    }
    let after = proc_kb("VmRSS");
    tokio::time::sleep(Duration::from_secs(3)).await;
    println!(
        "{what} ({:.2} MiB each, answers {:.2} MiB in all, failed {failed:?}): peak RSS {}, \
         right after {}, 3s later {}",
        size as f64 / 1048576.0,
        answered as f64 / 1048576.0,
        mib(proc_kb("VmHWM")),
        mib(after),
        mib(proc_kb("VmRSS")),
    );
}
