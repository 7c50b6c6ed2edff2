//! The admission webhook under load, with the cache holding 5,000 nodes and 150,000 pods.
//!
//! - `decision/*` (criterion): one AdmissionReview body in, response body out (parse, decide from the
//!   cache, build and serialize the answer), for a pod CREATE mutation and for bindings to an ordinary
//!   node and to a revocable node (denied).
//! - `https/*` (criterion): the same over HTTPS on 127.0.0.1, one keep-alive connection.
//! - Then a load run printing requests/s and p50/p99/max latency, for the decision path alone and for
//!   HTTPS with several concurrent connections (the API server keeps a pool of them).
//!
//! `cargo bench --bench webhook`; figures are in docs/admission.md.

// What the binary runs on, so that the figures are the binary's.
tidal::global_allocator!();

use std::{
    collections::BTreeMap,
    hint::black_box,
    sync::Arc,
    time::{Duration, Instant},
};

use criterion::{Criterion, Throughput, criterion_group};
use http_body_util::{BodyExt, Full};
use hyper::{Request, body::Bytes};
use hyper_util::rt::TokioIo;
use jiff::Timestamp;
use k8s_openapi::{
    api::core::v1::{Container, Node, NodeSpec, Pod, PodSpec, ResourceRequirements},
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::ObjectMeta},
};
use rcgen::{CertificateParams, KeyPair};
use rustls::{ClientConfig, RootCertStore, pki_types::ServerName};
use serde_json::{Value, json};
use tidal::{
    api::RevocableZone,
    cluster::{ClusterCache, Ingest, SharedCache},
    webhook::{
        review::{self, Attempt, Endpoint},
        server::{self, WebhookState},
        tls::CertStore,
    },
};
use tokio::{
    net::{TcpListener, TcpStream},
    runtime::Runtime,
};
use tokio_rustls::TlsConnector;

const NODES: usize = 5_000;
const PODS_PER_NODE: usize = 30;
/// One node in five is revocable, spread over five zones.
const ZONES: usize = 5;

fn labels(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    )
}

fn node_name(i: usize) -> String {
    if i.is_multiple_of(5) {
        format!("rev-{i:05}")
    } else {
        format!("std-{i:05}")
    }
}

/// 5,000 nodes, 150,000 pods (one in ten preemptable), five zones open all day.
fn cluster() -> ClusterCache {
    let mut cache = ClusterCache::new();
    for i in 0..NODES {
        let name = node_name(i);
        let zone = format!("zone-{}", i % ZONES);
        let node_labels = if i.is_multiple_of(5) {
            labels(&[
                ("kubernetes.io/hostname", &name),
                ("volcano.sh/revocable-zone", &zone),
            ])
        } else {
            labels(&[("kubernetes.io/hostname", &name)])
        };
        Node {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: node_labels,
                ..ObjectMeta::default()
            },
            spec: Some(NodeSpec::default()),
            status: None,
        }
        .apply_to(&mut cache, jiff::Timestamp::UNIX_EPOCH)
        .expect("node");
        for p in 0..PODS_PER_NODE {
            let preemptable = (i * PODS_PER_NODE + p).is_multiple_of(10);
            let annotations = preemptable.then(|| labels(&[("volcano.sh/preemptable", "true")]));
            Pod {
                metadata: ObjectMeta {
                    name: Some(format!("pod-{i:05}-{p:02}")),
                    namespace: Some(format!("team-{}", p % 20)),
                    labels: labels(&[("app", "web")]),
                    annotations: annotations.flatten(),
                    ..ObjectMeta::default()
                },
                spec: Some(PodSpec {
                    node_name: Some(name.clone()),
                    containers: vec![Container {
                        name: "c".to_owned(),
                        resources: Some(ResourceRequirements {
                            requests: Some(BTreeMap::from([
                                ("cpu".to_owned(), Quantity("100m".to_owned())),
                                ("memory".to_owned(), Quantity("128Mi".to_owned())),
                            ])),
                            ..ResourceRequirements::default()
                        }),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
                status: None,
            }
            .apply_to(&mut cache, jiff::Timestamp::UNIX_EPOCH)
            .expect("pod");
        }
    }
    for z in 0..ZONES {
        serde_json::from_value::<RevocableZone>(json!({
            "apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone",
            "metadata": {"name": format!("zone-{z}")},
            "spec": {"windows": [{"time": "00:00-00:00"}]}
        }))
        .expect("zone")
        .apply_to(&mut cache, jiff::Timestamp::UNIX_EPOCH)
        .expect("zone");
    }
    cache
}

/// A realistic pod CREATE review (a ReplicaSet's pod, with the usual defaults filled in).
fn pod_create() -> Vec<u8> {
    let pod = json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"generateName": "web-5d8f9c-", "namespace": "team-3",
                     "labels": {"app": "web", "pod-template-hash": "5d8f9c"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f9c",
                                          "uid": "9b1c", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {
            "containers": [{"name": "web", "image": "nginx:1.27",
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-1a", "eu-1b"]}]}
            ]}}},
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority"
        },
        "status": {}
    });
    review(None, "", "team-3", pod)
}

fn binding(pod: &str, namespace: &str, node: &str) -> Vec<u8> {
    let object = json!({"kind": "Binding", "apiVersion": "v1",
        "metadata": {"name": pod, "namespace": namespace},
        "target": {"kind": "Node", "apiVersion": "v1", "name": node}});
    review(Some("binding"), pod, namespace, object)
}

fn review(sub: Option<&str>, name: &str, namespace: &str, object: Value) -> Vec<u8> {
    let mut request = json!({
        "uid": "e911857d-c318-4a7d-8e34-6e3a37e7b3b5",
        "kind": {"group": "", "version": "v1", "kind": if sub.is_some() { "Binding" } else { "Pod" }},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "name": name, "namespace": namespace, "operation": "CREATE",
        "userInfo": {"username": "system:kube-scheduler", "groups": ["system:authenticated"]},
        "object": object, "oldObject": null, "dryRun": false,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    });
    if let Some(sub) = sub {
        request["subResource"] = json!(sub);
    }
    serde_json::to_vec(
        &json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}),
    )
    .expect("review")
}

/// The decision path, bytes to bytes, as the handler runs it once the cache is synced.
fn decide_bytes(endpoint: Endpoint, body: &[u8], shared: &SharedCache) -> Vec<u8> {
    let request = review::parse_review(body).expect("valid review");
    let answer = {
        let cache = shared.read();
        match review::decide(endpoint, &request, &cache, Timestamp::now(), true) {
            Attempt::Done(answer) => answer,
            Attempt::Retry(what) => panic!("benchmark data misses {what}"),
        }
    };
    review::response_body(&review::respond(&request, answer))
}

struct Cases {
    mutate: Vec<u8>,
    bind_plain: Vec<u8>,
    bind_revocable: Vec<u8>,
}

fn cases() -> Cases {
    Cases {
        mutate: pod_create(),
        // pod-00001-01 is not preemptable; rev-00000 is revocable.
        bind_plain: binding("pod-00001-01", "team-1", "std-00001"),
        bind_revocable: binding("pod-00001-01", "team-1", "rev-00000"),
    }
}

fn check(shared: &SharedCache, cases: &Cases) {
    let allowed = |body: &[u8], endpoint| -> bool {
        let out: Value =
            serde_json::from_slice(&decide_bytes(endpoint, body, shared)).expect("json");
        out["response"]["allowed"].as_bool().expect("allowed")
    };
    assert!(allowed(&cases.mutate, Endpoint::MutatePods));
    assert!(allowed(&cases.bind_plain, Endpoint::ValidateBindings));
    assert!(!allowed(&cases.bind_revocable, Endpoint::ValidateBindings));
}

/// A running HTTPS webhook on 127.0.0.1 and a way to open client connections to it.
struct Https {
    runtime: Runtime,
    addr: std::net::SocketAddr,
    connector: TlsConnector,
    _dir: tempfile::TempDir,
}

impl Https {
    fn start(shared: SharedCache) -> Https {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
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
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let app = server::router(WebhookState::new(shared, Duration::from_millis(500)));
        runtime.spawn(server::serve_tls(
            listener,
            tls,
            app,
            std::future::pending(),
        ));
        let mut roots = RootCertStore::empty();
        roots.add(cert.der().clone()).expect("root");
        let client = ClientConfig::builder_with_provider(tidal::webhook::tls::provider())
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        Https {
            runtime,
            addr,
            connector: TlsConnector::from(Arc::new(client)),
            _dir: dir,
        }
    }

    async fn connect(&self) -> hyper::client::conn::http1::SendRequest<Full<Bytes>> {
        let tcp = TcpStream::connect(self.addr).await.expect("connect");
        tcp.set_nodelay(true).expect("nodelay");
        let tls = self
            .connector
            .connect(ServerName::try_from("localhost").expect("name"), tcp)
            .await
            .expect("handshake");
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .expect("http");
        tokio::spawn(connection);
        sender
    }
}

async fn post(
    sender: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    path: &str,
    body: &Bytes,
) -> Bytes {
    sender.ready().await.expect("ready");
    let request = Request::post(path)
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(body.clone()))
        .expect("request");
    let response = sender.send_request(request).await.expect("response");
    assert!(response.status().is_success());
    response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes()
}

fn benches(c: &mut Criterion) {
    let built = Instant::now();
    let shared = SharedCache::from_cache(cluster());
    eprintln!(
        "cache: {} nodes, {} pods, built in {:.1?}",
        shared.read().node_count(),
        shared.read().pod_count(),
        built.elapsed()
    );
    let cases = cases();
    check(&shared, &cases);

    let mut group = c.benchmark_group("decision");
    group.throughput(Throughput::Elements(1));
    for (name, endpoint, body) in [
        ("mutate_pod_create", Endpoint::MutatePods, &cases.mutate),
        (
            "binding_ordinary_node",
            Endpoint::ValidateBindings,
            &cases.bind_plain,
        ),
        (
            "binding_revocable_denied",
            Endpoint::ValidateBindings,
            &cases.bind_revocable,
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| black_box(decide_bytes(endpoint, black_box(body), &shared)))
        });
    }
    group.finish();

    let https = Https::start(shared.clone());
    let mut sender = https.runtime.block_on(https.connect());
    let mut group = c.benchmark_group("https");
    group.throughput(Throughput::Elements(1));
    for (name, path, body) in [
        ("mutate_pod_create", "/mutate-pods", &cases.mutate),
        (
            "binding_revocable_denied",
            "/validate-bindings",
            &cases.bind_revocable,
        ),
    ] {
        let body = Bytes::from(body.clone());
        group.bench_function(name, |b| {
            b.iter(|| https.runtime.block_on(post(&mut sender, path, &body)))
        });
    }
    group.finish();
    drop(sender);

    // `cargo bench` passes --bench; `cargo test --benches` only smoke-runs the criterion groups.
    if std::env::args().any(|a| a == "--bench") {
        load_report(&shared, &cases, &https);
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn summary(label: &str, mut latencies: Vec<Duration>, wall: Duration) {
    latencies.sort();
    println!(
        "{label:<48} {:>9.0} req/s   p50 {:>8.1?}   p99 {:>8.1?}   max {:>8.1?}   ({} requests)",
        latencies.len() as f64 / wall.as_secs_f64(),
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or_default(),
        latencies.len()
    );
}

/// Requests/s and latency percentiles, which criterion does not report.
fn load_report(shared: &SharedCache, cases: &Cases, https: &Https) {
    println!("\nload (5,000 nodes, 150,000 pods in the cache; mixed 1/3 mutate, 2/3 bindings):");
    let mix: Vec<(Endpoint, &'static str, Bytes)> = vec![
        (
            Endpoint::MutatePods,
            "/mutate-pods",
            Bytes::from(cases.mutate.clone()),
        ),
        (
            Endpoint::ValidateBindings,
            "/validate-bindings",
            Bytes::from(cases.bind_plain.clone()),
        ),
        (
            Endpoint::ValidateBindings,
            "/validate-bindings",
            Bytes::from(cases.bind_revocable.clone()),
        ),
    ];

    // The decision path alone, one thread.
    let requests = 60_000;
    let mut latencies = Vec::with_capacity(requests);
    let started = Instant::now();
    for i in 0..requests {
        let (endpoint, _, body) = &mix[i % mix.len()];
        let t = Instant::now();
        black_box(decide_bytes(*endpoint, body, shared));
        latencies.push(t.elapsed());
    }
    summary("decision path, 1 thread", latencies, started.elapsed());

    // HTTPS on 127.0.0.1 with several keep-alive connections, client and server on the same 2 cores.
    for connections in [1usize, 8, 32] {
        let per_connection = 12_000 / connections;
        let (latencies, wall) = https.runtime.block_on(async {
            let started = Instant::now();
            let mut tasks = Vec::new();
            for c in 0..connections {
                let mut sender = https.connect().await;
                let mix = mix.clone();
                tasks.push(tokio::spawn(async move {
                    let mut latencies = Vec::with_capacity(per_connection);
                    for i in 0..per_connection {
                        let (_, path, body) = &mix[(i + c) % mix.len()];
                        let t = Instant::now();
                        black_box(post(&mut sender, path, body).await);
                        latencies.push(t.elapsed());
                    }
                    latencies
                }));
            }
            let mut all = Vec::new();
            for task in tasks {
                all.extend(task.await.expect("client task"));
            }
            (all, started.elapsed())
        });
        summary(
            &format!("HTTPS round trip, {connections} connection(s)"),
            latencies,
            wall,
        );
    }
}

criterion_group! {
    name = webhook;
    config = Criterion::default()
        .sample_size(50)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = benches
}

fn main() {
    webhook();
    Criterion::default().configure_from_args().final_summary();
}
