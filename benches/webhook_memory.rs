//! The webhook process's resident memory before, during and after bursts of huge admission requests:
//! what a burst leaves behind once it is over, against the fresh process. Serves HTTPS on
//! 127.0.0.1 in this process and reads its own VmRSS / VmHWM from /proc (Linux only).
//!
//! `cargo bench --bench webhook_memory` (release); `cargo test --bench webhook_memory` runs the same
//! in the dev profile. `LARGE_BODY_BUDGET_KIB=1000000` turns the large-body parse budget off for
//! comparison. Figures are in docs/admission.md. Prints, does not assert: memory is measured and
//! reported, not a pass/fail bound.

use std::{sync::Arc, time::Duration};

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
    // LARGE_BODY_BUDGET_KIB=1000000 turns the parse budget off, for comparison.
    if let Some(kib) = std::env::var("LARGE_BODY_BUDGET_KIB")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        state = state.with_large_body_budget(kib);
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

/// Eight workers, as tokio starts on an eight-core node whatever the pod's CPU limit: up to eight
/// requests are parsed at once.
#[tokio::main(flavor = "multi_thread", worker_threads = 8)]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = Arc::new(start().await);
    client.post(huge_pod(1)).await.expect("a small request");
    println!(
        "fresh (one small request served): RSS {}",
        mib(proc_kb("VmRSS"))
    );
    client
        .post(huge_pod(20_000))
        .await
        .expect("one huge request");
    println!(
        "one 20,000-term pod alone: peak RSS {}, after {}",
        mib(proc_kb("VmHWM")),
        mib(proc_kb("VmRSS"))
    );
    for (terms, rounds) in [(100, 1), (20_000, 2)] {
        let body = huge_pod(terms);
        for round in 1..=rounds {
            let burst: Vec<_> = (0..12)
                .map(|_| {
                    let (client, body) = (Arc::clone(&client), body.clone());
                    tokio::spawn(async move { client.post(body).await })
                })
                .collect();
            let (mut answered, mut failed) = (0, Vec::new());
            for call in burst {
                match call.await.expect("call") {
                    Ok(size) => answered += size,
                    Err(status) => failed.push(status.as_u16()),
                }
            }
            let after = proc_kb("VmRSS");
            tokio::time::sleep(Duration::from_secs(3)).await;
            println!(
                "12 x {terms} terms ({:.2} MiB each, answers {:.2} MiB in all, failed {failed:?}), \
                 round {round}: peak RSS so far {}, right after {}, 3s later {}",
                body.len() as f64 / 1048576.0,
                answered as f64 / 1048576.0,
                mib(proc_kb("VmHWM")),
                mib(after),
                mib(proc_kb("VmRSS")),
            );
        }
    }
}
