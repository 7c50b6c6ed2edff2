//! The webhook end to end over HTTPS on 127.0.0.1: real AdmissionReview JSON for pods and
//! pods/binding, patches applied to the pod, certificate reload, malformed bodies, readiness.

use std::{net::SocketAddr, path::Path, sync::Arc, time::Duration};

use http_body_util::{BodyExt, Full};
use hyper::{Request, StatusCode, body::Bytes};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::{Node, Pod};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::{
    ClientConfig, RootCertStore,
    pki_types::{CertificateDer, ServerName, pem::PemObject},
};
use serde_json::{Value, json};
use tidal::{
    api::RevocableZone,
    cluster::{ClusterCache, Ingest, ObjectKind, SharedCache},
    runtime::{admin, connections::ConnectionLimits},
    webhook::{
        server::{self, ServeLimits, WebhookState},
        tls::CertStore,
    },
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};
use tokio_rustls::TlsConnector;

/// A test CA and a way to issue serving certificates for `localhost` from it.
pub struct Pki {
    ca: CertifiedIssuer<'static, KeyPair>,
}

impl Pki {
    pub fn new() -> Pki {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        Pki {
            ca: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap(),
        }
    }

    /// A serving certificate and key (PEM), signed by the CA.
    pub fn issue(&self) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let params =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
        let cert = params.signed_by(&key, &self.ca).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    pub fn client(&self) -> TlsConnector {
        let mut roots = RootCertStore::empty();
        roots.add(self.ca.der().clone()).unwrap();
        let config = ClientConfig::builder_with_provider(tidal::webhook::tls::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        TlsConnector::from(Arc::new(config))
    }
}

pub fn write_pair(dir: &Path, (cert, key): &(String, String)) {
    std::fs::write(dir.join("tls.crt"), cert).unwrap();
    std::fs::write(dir.join("tls.key"), key).unwrap();
}

pub struct Webhook {
    pub addr: SocketAddr,
    pub pki: Pki,
    store: Arc<CertStore>,
    dir: tempfile::TempDir,
    pub stop: tokio::sync::oneshot::Sender<()>,
}

/// Starts the HTTPS server on 127.0.0.1 with a fresh certificate, deciding from `cache`.
async fn start(cache: SharedCache) -> Webhook {
    let state = WebhookState::new(cache, Duration::from_millis(200));
    start_with(state, server::WEBHOOK_LIMITS, std::future::pending()).await
}

/// Starts the HTTPS server for `state` with `limits`; it stops when `until` resolves (or `stop`).
pub async fn start_with(
    state: WebhookState,
    limits: ServeLimits,
    until: impl Future<Output = ()> + Send + 'static,
) -> Webhook {
    let pki = Pki::new();
    let dir = tempfile::tempdir().unwrap();
    write_pair(dir.path(), &pki.issue());
    let store =
        Arc::new(CertStore::load(dir.path().join("tls.crt"), dir.path().join("tls.key")).unwrap());
    let tls = Arc::new(store.server_config().unwrap());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server::serve_tls_with(
        listener,
        tls,
        server::router(state),
        async move {
            tokio::select! {
                _ = stopped => {}
                () = until => {}
            }
        },
        limits,
    ));
    Webhook {
        addr,
        pki,
        store,
        dir,
        stop,
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub body: Vec<u8>,
    /// The certificate the server presented.
    served: CertificateDer<'static>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// A TLS connection to the webhook, as the API server opens it.
pub async fn connect(hook: &Webhook) -> tokio_rustls::client::TlsStream<TcpStream> {
    let tcp = TcpStream::connect(hook.addr).await.unwrap();
    hook.pki
        .client()
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .expect("TLS handshake with a certificate from the test CA")
}

pub async fn call(hook: &Webhook, method: &str, path: &str, body: Vec<u8>) -> Reply {
    let tls = connect(hook).await;
    let served = tls.get_ref().1.peer_certificates().unwrap()[0].clone();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        body: body.to_vec(),
        served,
    }
}

/// An AdmissionReview as the API server sends it (admission.k8s.io/v1).
pub fn review(sub: Option<&str>, name: &str, object: Value) -> Vec<u8> {
    let kind = if sub.is_some() { "Binding" } else { "Pod" };
    let mut request = json!({
        "uid": "e911857d-c318-4a7d-8e34-6e3a37e7b3b5",
        "kind": {"group": "", "version": "v1", "kind": kind},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "requestKind": {"group": "", "version": "v1", "kind": kind},
        "requestResource": {"group": "", "version": "v1", "resource": "pods"},
        "name": name,
        "namespace": "team-a",
        "operation": "CREATE",
        "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller",
                     "uid": "3f4d", "groups": ["system:serviceaccounts", "system:authenticated"]},
        "object": object,
        "oldObject": null,
        "dryRun": false,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    });
    if let Some(sub) = sub {
        request["subResource"] = json!(sub);
        request["requestSubResource"] = json!(sub);
    }
    serde_json::to_vec(
        &json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}),
    )
    .unwrap()
}

/// Pod `team-a/<name>` as the API server hands it to a webhook on `CREATE`: defaulted, not scheduled.
pub fn created_pod(name: &str, annotations: Value, affinity: Option<Value>) -> Value {
    let mut pod = json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "team-a", "labels": {"app": "web"},
                     "annotations": annotations,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f",
                                          "uid": "9b1c", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {
            "containers": [{"name": "web", "image": "nginx:1.27", "resources": {"requests": {"cpu": "100m"}},
                            "terminationMessagePath": "/dev/termination-log", "imagePullPolicy": "IfNotPresent"}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority"
        },
        "status": {}
    });
    if let Some(affinity) = affinity {
        pod["spec"]["affinity"] = affinity;
    }
    pod
}

/// A Binding created through the legacy `POST /api/v1/namespaces/{ns}/bindings`: resource
/// `bindings`, no subresource.
fn legacy_binding_review(name: &str, object: Value) -> Vec<u8> {
    let mut review: Value = serde_json::from_slice(&review(Some("binding"), name, object)).unwrap();
    let request = review["request"].as_object_mut().unwrap();
    request.remove("subResource");
    request.remove("requestSubResource");
    let resource = json!({"group": "", "version": "v1", "resource": "bindings"});
    request.insert("resource".to_owned(), resource.clone());
    request.insert("requestResource".to_owned(), resource);
    serde_json::to_vec(&review).unwrap()
}

fn binding(pod: &str, node: &str) -> Value {
    json!({"kind": "Binding", "apiVersion": "v1",
           "metadata": {"name": pod, "namespace": "team-a", "uid": "c0ffee"},
           "target": {"kind": "Node", "apiVersion": "v1", "name": node}})
}

/// Two ordinary nodes and two revocable ones in zone `nightly`, which is always open or always
/// closed depending on `open`; the pods given are in the cache too.
pub fn cluster(open: bool, pods: &[Value]) -> ClusterCache {
    let mut cache = ClusterCache::new();
    for (name, zone) in [
        ("std-1", None),
        ("std-2", None),
        ("rev-1", Some("nightly")),
        ("rev-2", Some("nightly")),
    ] {
        let mut node =
            json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}});
        if let Some(zone) = zone {
            node["metadata"]["labels"]["volcano.sh/revocable-zone"] = json!(zone);
        }
        serde_json::from_value::<Node>(node)
            .unwrap()
            .apply_to(&mut cache, jiff::Timestamp::UNIX_EPOCH)
            .unwrap();
    }
    let windows = if open {
        json!([{"time": "00:00-00:00"}])
    } else {
        // One minute, six hours from now: closed for as long as any test runs.
        let start = jiff::Timestamp::now()
            .to_zoned(jiff::tz::TimeZone::UTC)
            .time()
            .wrapping_add(jiff::SignedDuration::from_hours(6));
        let end = start.wrapping_add(jiff::SignedDuration::from_mins(1));
        let hhmm = |t: jiff::civil::Time| format!("{:02}:{:02}", t.hour(), t.minute());
        json!([{"time": format!("{}-{}", hhmm(start), hhmm(end))}])
    };
    serde_json::from_value::<RevocableZone>(json!({
        "apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone",
        "metadata": {"name": "nightly"}, "spec": {"windows": windows, "timeZone": "UTC"}
    }))
    .unwrap()
    .apply_to(&mut cache, jiff::Timestamp::UNIX_EPOCH)
    .unwrap();
    for pod in pods {
        serde_json::from_value::<Pod>(pod.clone())
            .unwrap()
            .apply_to(&mut cache, jiff::Timestamp::UNIX_EPOCH)
            .unwrap();
    }
    cache
}

/// Applies the response's JSON patch to `object`. The patch is a Go `[]byte`, which JSON carries as a
/// base64 string.
pub fn apply_patch(response: &Value, object: &Value) -> Value {
    use base64::Engine;
    let encoded = response["response"]["patch"]
        .as_str()
        .expect("the response carries a patch as a base64 string");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .expect("base64");
    let patch: json_patch::Patch = serde_json::from_slice(&bytes).unwrap();
    let mut patched = object.clone();
    json_patch::patch(&mut patched, &patch).unwrap();
    patched
}

/// Creates pod `name` with `annotations` through `/mutate-pods`; asserts it is admitted unchanged and
/// returns the first warning.
async fn admitted_unchanged(hook: &Webhook, name: &str, annotations: Value) -> String {
    let object = created_pod(name, annotations, None);
    let response = call(hook, "POST", "/mutate-pods", review(None, name, object))
        .await
        .json();
    assert_eq!(response["response"]["allowed"], true, "{response}");
    assert!(response["response"].get("patch").is_none(), "{response}");
    response["response"]["warnings"][0]
        .as_str()
        .unwrap()
        .to_owned()
}

const REQUIRED: &str = "requiredDuringSchedulingIgnoredDuringExecution";
const PREFERRED: &str = "preferredDuringSchedulingIgnoredDuringExecution";

#[tokio::test]
async fn pod_create_gets_affinity_merged_into_its_own() {
    let hook = start(SharedCache::from_cache(cluster(true, &[]))).await;

    // Without affinity: one required term.
    let plain = created_pod("web-1", json!({}), None);
    let reply = call(
        &hook,
        "POST",
        "/mutate-pods",
        review(None, "web-1", plain.clone()),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let response = reply.json();
    assert_eq!(response["kind"], "AdmissionReview");
    assert_eq!(response["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(
        response["response"]["uid"],
        "e911857d-c318-4a7d-8e34-6e3a37e7b3b5"
    );
    assert_eq!(response["response"]["allowed"], true);
    assert_eq!(response["response"]["patchType"], "JSONPatch");
    let patched = apply_patch(&response, &plain);
    assert_eq!(
        patched["spec"]["affinity"],
        json!({"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "volcano.sh/revocable-zone", "operator": "DoesNotExist"}]}]}}})
    );
    // Everything else is untouched.
    let mut without = patched.clone();
    without["spec"].as_object_mut().unwrap().remove("affinity");
    assert_eq!(without, plain);

    // With the user's own terms: ours is ANDed into each, theirs stay.
    let own = json!({"nodeAffinity": {
        REQUIRED: {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-1a"]}]},
            {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}]}
        ]},
        PREFERRED: [{"weight": 20, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}]
    }});
    let user = created_pod("web-2", json!({}), Some(own));
    let reply = call(
        &hook,
        "POST",
        "/mutate-pods",
        review(None, "web-2", user.clone()),
    )
    .await;
    let patched = apply_patch(&reply.json(), &user);
    let terms = &patched["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"];
    let rule = json!({"key": "volcano.sh/revocable-zone", "operator": "DoesNotExist"});
    assert_eq!(
        terms,
        &json!([
            {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-1a"]}, rule]},
            {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}, rule]}
        ])
    );
    assert_eq!(
        patched["spec"]["affinity"]["nodeAffinity"][PREFERRED],
        json!([{"weight": 20, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}])
    );

    // Preemptable: a preferred term toward revocable nodes, after the user's preference.
    let own = json!({"nodeAffinity": {PREFERRED: [
        {"weight": 20, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}]}});
    let spot = created_pod(
        "spot-1",
        json!({"volcano.sh/preemptable": "true"}),
        Some(own),
    );
    let reply = call(
        &hook,
        "POST",
        "/mutate-pods",
        review(None, "spot-1", spot.clone()),
    )
    .await;
    let patched = apply_patch(&reply.json(), &spot);
    assert_eq!(
        patched["spec"]["affinity"]["nodeAffinity"],
        json!({PREFERRED: [
            {"weight": 20, "preference": {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}},
            {"weight": 100, "preference": {"matchExpressions": [{"key": "volcano.sh/revocable-zone", "operator": "Exists"}]}}
        ]})
    );

    // Unparsable tidal annotation: admitted unchanged, with a warning.
    let warning = admitted_unchanged(
        &hook,
        "bad-1",
        json!({"volcano.sh/preemptable": "sometimes"}),
    )
    .await;
    assert!(
        warning.contains("volcano.sh/preemptable=\"sometimes\""),
        "{warning}"
    );
    let _ = hook.stop.send(());
}

#[tokio::test]
async fn bindings_follow_the_placement_rules() {
    let web = created_pod("web-1", json!({}), None);
    let spot = created_pod("spot-1", json!({"volcano.sh/preemptable": "true"}), None);
    let open = start(SharedCache::from_cache(cluster(
        true,
        &[web.clone(), spot.clone()],
    )))
    .await;
    let closed = start(SharedCache::from_cache(cluster(false, &[web, spot]))).await;

    let bind = |hook, pod: &str, node: &str| {
        let body = review(Some("binding"), pod, binding(pod, node));
        async move { call(hook, "POST", "/validate-bindings", body).await.json() }
    };
    // Ordinary nodes take anyone.
    assert_eq!(
        bind(&open, "web-1", "std-1").await["response"]["allowed"],
        true
    );
    // Rule 1: never a non-preemptable pod on a revocable node.
    let denied = bind(&open, "web-1", "rev-1").await;
    assert_eq!(denied["response"]["allowed"], false);
    assert_eq!(denied["response"]["status"]["code"], 403);
    let message = denied["response"]["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("team-a/web-1 is not preemptable") && message.contains("rev-1"),
        "{message}"
    );
    // Rule 2: a preemptable pod only while the zone is open.
    assert_eq!(
        bind(&open, "spot-1", "rev-2").await["response"]["allowed"],
        true
    );
    let denied = bind(&closed, "spot-1", "rev-2").await;
    assert_eq!(denied["response"]["allowed"], false);
    let message = denied["response"]["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("zone nightly is closed until"),
        "{message}"
    );

    // Pod CREATE with spec.nodeName goes through the same rules.
    let mut direct = created_pod("direct-1", json!({}), None);
    direct["spec"]["nodeName"] = json!("rev-1");
    let reply = call(
        &open,
        "POST",
        "/validate-pods",
        review(None, "direct-1", direct),
    )
    .await;
    assert_eq!(reply.json()["response"]["allowed"], false);
    let _ = open.stop.send(());
    let _ = closed.stop.send(());
}

#[tokio::test]
async fn legacy_bindings_are_judged_too() {
    let web = created_pod("web-1", json!({}), None);
    let spot = created_pod("spot-1", json!({"volcano.sh/preemptable": "true"}), None);
    let hook = start(SharedCache::from_cache(cluster(true, &[web, spot]))).await;
    let bind = |pod: &str, node: &str| legacy_binding_review(pod, binding(pod, node));

    let denied = call(&hook, "POST", "/validate-bindings", bind("web-1", "rev-1"))
        .await
        .json();
    assert_eq!(
        denied["response"]["uid"],
        "e911857d-c318-4a7d-8e34-6e3a37e7b3b5"
    );
    assert_eq!(denied["response"]["allowed"], false);
    let message = denied["response"]["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("team-a/web-1 is not preemptable"),
        "{message}"
    );
    let allowed = call(&hook, "POST", "/validate-bindings", bind("spot-1", "rev-1"))
        .await
        .json();
    assert_eq!(allowed["response"]["allowed"], true);
    assert!(allowed["response"].get("warnings").is_none(), "{allowed}");
    let _ = hook.stop.send(());
}

#[tokio::test]
async fn malformed_requests_get_a_clear_400() {
    let hook = start(SharedCache::from_cache(cluster(true, &[]))).await;
    for (body, expected) in [
        (b"".to_vec(), "body is empty"),
        (b"{\"request\": 42}".to_vec(), "request"),
        (
            b"\x00\xff garbage".to_vec(),
            "not an admission.k8s.io AdmissionReview",
        ),
        (
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec(),
            "no request",
        ),
    ] {
        let reply = call(&hook, "POST", "/validate-bindings", body).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST);
        let text = String::from_utf8(reply.body).unwrap();
        assert!(
            text.contains(expected),
            "{text:?} should mention {expected:?}"
        );
    }
    // The server is still there after all that.
    let reply = call(&hook, "GET", "/healthz", Vec::new()).await;
    assert_eq!(reply.status, StatusCode::OK);
    let _ = hook.stop.send(());
}

#[tokio::test]
async fn before_sync_bindings_are_admitted_with_a_warning_and_not_ready() {
    let cache = SharedCache::new(&[ObjectKind::Node, ObjectKind::Pod]);
    let hook = start(cache.clone()).await;
    let reply = call(&hook, "GET", "/readyz", Vec::new()).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(String::from_utf8_lossy(&reply.body).contains("Node, Pod"));

    let body = review(Some("binding"), "web-1", binding("web-1", "rev-1"));
    let response = call(&hook, "POST", "/validate-bindings", body.clone())
        .await
        .json();
    assert_eq!(response["response"]["allowed"], true);
    assert!(
        response["response"]["warnings"][0]
            .as_str()
            .unwrap()
            .contains("starting")
    );

    // Synced, the same binding is judged (and, the pod being unknown, waited for then let through).
    *cache.write() = cluster(true, &[created_pod("web-1", json!({}), None)]);
    cache.set_synced(ObjectKind::Node, true);
    cache.set_synced(ObjectKind::Pod, true);
    assert_eq!(
        call(&hook, "GET", "/readyz", Vec::new()).await.status,
        StatusCode::OK
    );
    let response = call(&hook, "POST", "/validate-bindings", body).await.json();
    assert_eq!(response["response"]["allowed"], false);
    let _ = hook.stop.send(());
}

/// A watcher's relist (every Init marks its kind unsynced until InitDone) keeps the previous objects
/// meanwhile: the webhook stays ready and keeps checking, instead of admitting everything unchecked
/// and, with `failurePolicy: Fail`, dropping out of the Service.
#[tokio::test]
async fn a_relist_keeps_the_webhook_ready_and_checking() {
    let cache = SharedCache::new(&[ObjectKind::Node, ObjectKind::Pod]);
    *cache.write() = cluster(true, &[created_pod("web-1", json!({}), None)]);
    cache.set_synced(ObjectKind::Node, true);
    cache.set_synced(ObjectKind::Pod, true);
    let hook = start(cache.clone()).await;
    let body = review(Some("binding"), "web-1", binding("web-1", "rev-1"));

    cache.set_synced(ObjectKind::Pod, false);
    let reply = call(&hook, "GET", "/readyz", Vec::new()).await;
    assert_eq!(
        reply.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let response = call(&hook, "POST", "/validate-bindings", body).await.json();
    assert_eq!(response["response"]["allowed"], false, "{response}");
    let _ = hook.stop.send(());
}

/// Before the first lists complete, a pod whose own label or annotation decides is mutated anyway:
/// that needs nothing from the cache. A pod whose PodGroup decides is admitted unchanged.
#[tokio::test]
async fn before_sync_pods_that_need_no_lookup_are_still_mutated() {
    let hook = start(SharedCache::new(&[ObjectKind::Node, ObjectKind::Pod])).await;
    let plain = created_pod("web-1", json!({}), None);
    let response = call(
        &hook,
        "POST",
        "/mutate-pods",
        review(None, "web-1", plain.clone()),
    )
    .await
    .json();
    let patched = apply_patch(&response, &plain);
    assert_eq!(
        patched["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"],
        json!([{"matchExpressions": [{"key": "volcano.sh/revocable-zone", "operator": "DoesNotExist"}]}])
    );

    let warning = admitted_unchanged(
        &hook,
        "job-1",
        json!({"scheduling.k8s.io/group-name": "job"}),
    )
    .await;
    assert!(warning.contains("starting"), "{warning}");
    let _ = hook.stop.send(());
}

/// A webhook over a cache holding pod `web-1`, and the sender of its shutdown signal: once signalled it
/// drains for an hour, longer than any test, so how long the requests take never matters.
async fn draining_webhook() -> (WebhookState, Webhook, tokio::sync::oneshot::Sender<()>) {
    let state = WebhookState::new(
        SharedCache::from_cache(cluster(true, &[created_pod("web-1", json!({}), None)])),
        Duration::from_millis(200),
    );
    let (signal, signalled) = tokio::sync::oneshot::channel::<()>();
    let drained = tokio::spawn(server::drain(
        state.clone(),
        async move {
            let _ = signalled.await;
        },
        Duration::from_secs(3600),
    ));
    let hook = start_with(state.clone(), server::WEBHOOK_LIMITS, async move {
        let _ = drained.await;
    })
    .await;
    (state, hook, signal)
}

/// After SIGTERM the webhook reports not ready but keeps accepting connections and answering until
/// the shutdown delay is over: the API server still sends to it until the endpoint update lands.
#[tokio::test]
async fn after_the_shutdown_signal_requests_are_answered_until_the_delay_ends() {
    let (state, hook, signal) = draining_webhook().await;
    assert_eq!(
        call(&hook, "GET", "/readyz", Vec::new()).await.status,
        StatusCode::OK
    );

    signal.send(()).unwrap();
    state.draining().cancelled().await;
    let reply = call(&hook, "GET", "/readyz", Vec::new()).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(String::from_utf8_lossy(&reply.body).contains("shutting down"));
    let body = review(Some("binding"), "web-1", binding("web-1", "rev-1"));
    let response = call(&hook, "POST", "/validate-bindings", body).await.json();
    assert_eq!(
        response["response"]["allowed"], false,
        "still judged while draining"
    );
    let _ = hook.stop.send(());
}

/// A keep-alive connection the API server opened before SIGTERM is still its connection to this pod
/// after the endpoints change: while draining, the next answer on it says `Connection: close` and the
/// server closes it after the answer, so the client drops it itself instead of racing a close at the
/// end of the delay with its next call.
#[tokio::test]
async fn while_draining_each_answer_closes_its_keep_alive_connection() {
    let (state, hook, signal) = draining_webhook().await;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(connect(&hook).await))
            .await
            .unwrap();
    let connection = tokio::spawn(connection);
    let send = async |sender: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>| {
        let request = Request::builder()
            .method("POST")
            .uri("/mutate-pods")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(review(
                None,
                "web-1",
                created_pod("web-1", json!({}), None),
            ))))
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        let close = response.headers().get("connection").cloned();
        let status = response.status();
        response.into_body().collect().await.unwrap();
        (status, close)
    };
    assert_eq!(send(&mut sender).await, (StatusCode::OK, None));
    sender.ready().await.expect("kept alive before the signal");

    signal.send(()).unwrap();
    state.draining().cancelled().await;
    let (status, close) = send(&mut sender).await;
    assert_eq!(status, StatusCode::OK, "still answered while draining");
    assert_eq!(close.as_ref().map(|v| v.to_str().unwrap()), Some("close"));
    // Only a guard against hanging: the server ends the connection once the answer is written.
    tokio::time::timeout(Duration::from_secs(30), connection)
        .await
        .expect("the connection was not closed after the answer")
        .unwrap()
        .unwrap();
    let _ = hook.stop.send(());
}

/// A client that never finishes its request headers is disconnected after the header read timeout
/// instead of holding its connection forever.
#[tokio::test]
async fn a_client_that_stalls_in_its_headers_is_disconnected() {
    let state = WebhookState::new(SharedCache::from_cache(cluster(true, &[])), Duration::ZERO);
    let limits = ServeLimits {
        idle_timeout: Duration::from_millis(100),
        ..server::WEBHOOK_LIMITS
    };
    let hook = start_with(state, limits, std::future::pending()).await;
    let mut tls = connect(&hook).await;
    tls.write_all(b"POST /mutate-pods HTTP/1.1\r\nhost: localhost\r\n")
        .await
        .unwrap();
    tls.flush().await.unwrap();
    let mut rest = Vec::new();
    // Only a guard against hanging: the server closes after 100ms.
    let closed = tokio::time::timeout(Duration::from_secs(60), tls.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the connection was never closed");
    let _ = hook.stop.send(());
}

/// Slow bodies: clients that send full headers and then trickle (or stop sending) their body hold
/// every connection slot. Each is answered 408 and disconnected at the request deadline, so a real
/// admission request behind them is served within a bounded time, not after the attackers give up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_bodies_cannot_hold_the_slots_past_the_request_deadline() {
    let state = WebhookState::new(SharedCache::from_cache(cluster(true, &[])), Duration::ZERO);
    let limits = ServeLimits {
        max_connections: 3,
        request_timeout: Duration::from_millis(300),
        ..server::WEBHOOK_LIMITS
    };
    let hook = start_with(state, limits, std::future::pending()).await;
    let mut slow = Vec::new();
    for _ in 0..3 {
        let mut tls = connect(&hook).await;
        tls.write_all(
            b"POST /mutate-pods HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{",
        )
        .await
        .unwrap();
        tls.flush().await.unwrap();
        slow.push(tls);
    }
    // Every slot is taken by a body that will never arrive; the real request still gets an answer.
    let body = review(None, "web-1", created_pod("web-1", json!({}), None));
    let answered = tokio::time::timeout(
        Duration::from_secs(30),
        call(&hook, "POST", "/mutate-pods", body),
    )
    .await
    .expect("a real request was starved by slow bodies");
    assert_eq!(answered.status, StatusCode::OK);
    // The slow clients were told why and disconnected.
    let mut answer = Vec::new();
    let read =
        tokio::time::timeout(Duration::from_secs(30), slow[0].read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "a slow client was never disconnected");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    let _ = hook.stop.send(());
}

/// Over the connection cap, a new client waits until a connection closes.
#[tokio::test]
async fn connections_over_the_cap_wait_for_a_free_slot() {
    let state = WebhookState::new(SharedCache::from_cache(cluster(true, &[])), Duration::ZERO);
    let limits = ServeLimits {
        max_connections: 1,
        ..server::WEBHOOK_LIMITS
    };
    let hook = start_with(state, limits, std::future::pending()).await;
    let first = connect(&hook).await;
    let second = Box::pin(connect(&hook));
    let mut second = second;
    // This can only pass wrongly on a very slow machine, never fail wrongly: with the cap held, the
    // second handshake cannot complete however long we wait.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), &mut second)
            .await
            .is_err(),
        "a second connection was served while the only slot was taken"
    );
    drop(first);
    drop(second.await);
    let _ = hook.stop.send(());
}

/// A TCP connection to `addr` from the loopback address `from` (all of 127.0.0.0/8 is loopback on
/// Linux): a distinct client address for the per-address cap.
pub async fn tcp_from(addr: SocketAddr, from: &str) -> std::io::Result<TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(from.parse().unwrap(), 0))?;
    socket.connect(addr).await
}

/// Whether the server closes `stream` (EOF or reset) before `bound`, reading and discarding whatever it
/// sends. `bound` only guards against hanging.
pub async fn closed_within(stream: &mut (impl AsyncReadExt + Unpin), bound: Duration) -> bool {
    let mut sink = Vec::new();
    tokio::time::timeout(bound, stream.read_to_end(&mut sink))
        .await
        .is_ok()
}

/// A connection idle after its TLS handshake (it never sends a request) is closed at the idle
/// deadline, not held until a long header timeout: with every slot taken by such connections, a real
/// request is answered once the deadline frees one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_tls_connections_cannot_hold_the_slots() {
    let state = WebhookState::new(SharedCache::from_cache(cluster(true, &[])), Duration::ZERO);
    let limits = ServeLimits {
        max_connections: 3,
        idle_timeout: Duration::from_millis(300),
        ..server::WEBHOOK_LIMITS
    };
    let hook = start_with(state, limits, std::future::pending()).await;
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(connect(&hook).await);
    }
    // Every slot is held by an idle connection; with the old 120s header timeout this waited 120s.
    let body = review(None, "web-1", created_pod("web-1", json!({}), None));
    let answered = tokio::time::timeout(
        Duration::from_secs(30),
        call(&hook, "POST", "/mutate-pods", body),
    )
    .await
    .expect("a real request was starved by idle TLS connections");
    assert_eq!(answered.status, StatusCode::OK);
    assert!(
        closed_within(&mut idle[0], Duration::from_secs(30)).await,
        "an idle connection was never closed"
    );
    let _ = hook.stop.send(());
}

/// A client that opens TCP connections and never completes the TLS handshake loses them at the
/// handshake deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_tls_handshakes_cannot_hold_the_slots() {
    let state = WebhookState::new(SharedCache::from_cache(cluster(true, &[])), Duration::ZERO);
    let limits = ServeLimits {
        max_connections: 3,
        handshake_timeout: Duration::from_millis(300),
        ..server::WEBHOOK_LIMITS
    };
    let hook = start_with(state, limits, std::future::pending()).await;
    let mut stalled = Vec::new();
    for _ in 0..3 {
        let mut tcp = TcpStream::connect(hook.addr).await.unwrap();
        // The first bytes of a ClientHello record, and then nothing.
        tcp.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00])
            .await
            .unwrap();
        stalled.push(tcp);
    }
    let answered = tokio::time::timeout(
        Duration::from_secs(30),
        call(&hook, "GET", "/healthz", Vec::new()),
    )
    .await
    .expect("a real request was starved by unfinished handshakes");
    assert_eq!(answered.status, StatusCode::OK);
    assert!(
        closed_within(&mut stalled[0], Duration::from_secs(30)).await,
        "an unfinished handshake was never closed"
    );
    let _ = hook.stop.send(());
}

/// One address flooding the port gets at most its share of the slots: connections over the
/// per-address cap are closed at once, and a client from another address is served while the
/// flood's connections sit idle (the idle deadline is far beyond the test's bound here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_flooding_address_cannot_take_every_slot() {
    let state = WebhookState::new(SharedCache::from_cache(cluster(true, &[])), Duration::ZERO);
    let limits = ServeLimits {
        max_connections: 6,
        max_per_peer: 2,
        idle_timeout: Duration::from_secs(600),
        ..server::WEBHOOK_LIMITS
    };
    let hook = start_with(state, limits, std::future::pending()).await;
    let mut flood = Vec::new();
    for _ in 0..20 {
        flood.push(tcp_from(hook.addr, "127.0.0.1").await.unwrap());
    }
    // The client this is about: a TLS connection from another address, answered at once.
    let tcp = tokio::time::timeout(Duration::from_secs(30), tcp_from(hook.addr, "127.0.0.2"))
        .await
        .expect("no connection from a second address")
        .unwrap();
    let tls = tokio::time::timeout(
        Duration::from_secs(30),
        hook.pki
            .client()
            .connect(ServerName::try_from("localhost").unwrap(), tcp),
    )
    .await
    .expect("the second address was starved by the first")
    .unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = Request::builder()
        .uri("/healthz")
        .header("host", "localhost")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    // Of the flood, the server kept the first two and closed the rest at once.
    let mut closed = 0;
    for tcp in &mut flood {
        if closed_within(tcp, Duration::from_millis(200)).await {
            closed += 1;
        }
    }
    assert_eq!(
        closed, 18,
        "connections over the per-address cap are closed"
    );
    let _ = hook.stop.send(());
}

/// Serves the webhook's plain-HTTP metrics and probe port on 127.0.0.1 with `limits`, until the
/// token is cancelled.
pub async fn serve_metrics(
    limits: ConnectionLimits,
) -> (SocketAddr, tokio_util::sync::CancellationToken) {
    let state = WebhookState::new(SharedCache::from_cache(cluster(true, &[])), Duration::ZERO);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(admin::serve_with(
        listener,
        server::metrics_router(state),
        stop.clone(),
        limits,
    ));
    (addr, stop)
}

/// The plain-HTTP metrics port (it also serves the probes) has the same kind of limits: connections
/// that never finish their headers are closed at the idle deadline, one address gets only its share,
/// and the kubelet's probe from another address gets through a flood of 300 connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_port_survives_a_flood_of_unfinished_headers() {
    let (addr, stop) = serve_metrics(ConnectionLimits {
        idle_timeout: Duration::from_millis(300),
        ..ConnectionLimits::ADMIN
    })
    .await;
    let mut flood = Vec::new();
    for _ in 0..300 {
        let mut tcp = tcp_from(addr, "127.0.0.1").await.unwrap();
        let _ = tcp.write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\n").await;
        flood.push(tcp);
    }
    let probe = async {
        let mut tcp = tcp_from(addr, "127.0.0.3").await.unwrap();
        tcp.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        tcp.read_to_end(&mut answer).await.unwrap();
        String::from_utf8_lossy(&answer).into_owned()
    };
    let answer = tokio::time::timeout(Duration::from_secs(30), probe)
        .await
        .expect("the probe was starved by the flood");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Every flood connection ends: over the cap at once, the rest at the idle deadline.
    for tcp in &mut flood {
        assert!(
            closed_within(tcp, Duration::from_secs(30)).await,
            "a connection with unfinished headers stayed open"
        );
    }
    stop.cancel();
}

#[tokio::test]
async fn a_pod_that_reaches_the_cache_late_is_still_judged() {
    let cache = SharedCache::from_cache(cluster(true, &[]));
    let hook = start(cache.clone()).await;
    let late = {
        let cache = cache.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            serde_json::from_value::<Pod>(created_pod("web-9", json!({}), None))
                .unwrap()
                .apply_to(&mut cache.write(), jiff::Timestamp::UNIX_EPOCH)
                .unwrap();
        })
    };
    let body = review(Some("binding"), "web-9", binding("web-9", "rev-1"));
    let response = call(&hook, "POST", "/validate-bindings", body).await.json();
    late.await.unwrap();
    assert_eq!(response["response"]["allowed"], false);
    let _ = hook.stop.send(());
}

#[tokio::test]
async fn certificate_is_reloaded_when_the_files_change() {
    let hook = start(SharedCache::from_cache(cluster(true, &[]))).await;
    let first = call(&hook, "GET", "/healthz", Vec::new()).await.served;
    assert_eq!(Some(&first), hook.store.current_certificate().as_ref());

    // Nothing changed: nothing reloaded.
    assert!(!hook.store.reload_if_changed().unwrap());

    // A half-written rotation (certificate without its key) is refused; the old pair keeps serving.
    let (new_cert, new_key) = hook.pki.issue();
    std::fs::write(hook.dir.path().join("tls.crt"), &new_cert).unwrap();
    let error = hook.store.reload_if_changed().unwrap_err().to_string();
    assert!(error.contains("do not belong together"), "{error}");
    assert_eq!(
        call(&hook, "GET", "/healthz", Vec::new()).await.served,
        first
    );

    // The key arrives: the next check swaps the pair in and new connections get it.
    std::fs::write(hook.dir.path().join("tls.key"), &new_key).unwrap();
    assert!(hook.store.reload_if_changed().unwrap());
    let second = call(&hook, "GET", "/healthz", Vec::new()).await.served;
    assert_ne!(second, first);

    // Garbage in the files is refused too.
    std::fs::write(hook.dir.path().join("tls.crt"), "not a certificate").unwrap();
    assert!(hook.store.reload_if_changed().is_err());
    assert_eq!(
        call(&hook, "GET", "/healthz", Vec::new()).await.served,
        second
    );

    // The polling task does the same on its own.
    let watcher = tokio::spawn(Arc::clone(&hook.store).watch(Duration::from_millis(20), || {}));
    write_pair(hook.dir.path(), &hook.pki.issue());
    let mut third = second.clone();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        third = call(&hook, "GET", "/healthz", Vec::new()).await.served;
        if third != second {
            break;
        }
    }
    watcher.abort();
    assert_ne!(
        third, second,
        "the watcher never picked up the new certificate"
    );
    let _ = hook.stop.send(());
}

#[test]
fn loading_reports_which_file_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let missing =
        CertStore::load(dir.path().join("nope.crt"), dir.path().join("nope.key")).unwrap_err();
    // The I/O error is said once, as the cause, where `tidal` prints the chain (`{:#}`).
    let cause = std::error::Error::source(&missing).unwrap().to_string();
    let missing = format!("{:#}", anyhow::Error::from(missing));
    assert!(missing.contains("nope.crt"), "{missing}");
    assert_eq!(missing.matches(&cause).count(), 1, "{missing}");
    let pki = Pki::new();
    let (cert, _) = pki.issue();
    std::fs::write(dir.path().join("tls.crt"), cert).unwrap();
    std::fs::write(dir.path().join("tls.key"), "-----BEGIN PRIVATE KEY-----\n").unwrap();
    let bad = CertStore::load(dir.path().join("tls.crt"), dir.path().join("tls.key"))
        .unwrap_err()
        .to_string();
    assert!(bad.contains("tls.key"), "{bad}");
}

/// The chart's default TLS (Helm's genCA/genSignedCert: RSA, PKCS#1 key) works with the webhook's stack.
#[tokio::test]
async fn serves_the_certificate_the_chart_generates() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/helm-tls");
    let store =
        Arc::new(CertStore::load(fixtures.join("tls.crt"), fixtures.join("tls.key")).unwrap());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let state = WebhookState::new(SharedCache::from_cache(cluster(true, &[])), Duration::ZERO);
    tokio::spawn(server::serve_tls(
        listener,
        Arc::new(store.server_config().unwrap()),
        server::router(state),
        async move {
            let _ = stopped.await;
        },
    ));

    let mut roots = RootCertStore::empty();
    let ca = std::fs::read(fixtures.join("ca.crt")).unwrap();
    roots
        .add(CertificateDer::from_pem_slice(&ca).unwrap())
        .unwrap();
    let config = ClientConfig::builder_with_provider(tidal::webhook::tls::provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    // The name the API server uses for the webhook Service.
    let name = ServerName::try_from("tidal-webhook.tidal-system.svc").unwrap();
    let tls = TlsConnector::from(Arc::new(config))
        .connect(name, TcpStream::connect(addr).await.unwrap())
        .await
        .expect("the API server's view: the chart's CA trusts the chart's certificate");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(connection);
    let body = review(Some("binding"), "web-1", binding("web-1", "std-1"));
    let request = Request::post("/validate-bindings")
        .header("host", "tidal-webhook.tidal-system.svc")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let _ = stop.send(());
}

/// `tidal webhook` as its own process, its cache fed by the fake API server: zone `evening` closes
/// about an hour from now. A preemptable pod that says it runs three hours is required to stay off
/// the zone (ANDed into its own term) and denied a binding to its node, with the run time, where it
/// comes from, the close and the time left; one that runs twenty minutes gets neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_that_runs_past_the_close_is_kept_off_the_zone_by_the_webhook_process() {
    use crate::support::{Scenario, node, window_closing_in, zone};
    use tidal_testkit::{flood, webhook_process::WebhookProcess};

    let scenario = Scenario::start().await;
    scenario.apply(node("std-1"));
    scenario.apply(node("rev-1").zone("evening"));
    scenario.apply(zone("evening").window(&window_closing_in(60)));
    let own = json!({"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-1a"]}]}
    ]}}});
    let long = created_pod(
        "long-1",
        json!({"volcano.sh/preemptable": "true", "tidal.dev/expected-run-time": "3h"}),
        Some(own),
    );
    let short = created_pod(
        "short-1",
        json!({"volcano.sh/preemptable": "true", "tidal.dev/expected-run-time": "20m"}),
        None,
    );
    scenario.apply(long.clone());
    scenario.apply(short.clone());
    // Started once everything is applied: ready means every kind has been listed, these included.
    let hook = WebhookProcess::start(
        Path::new(env!("CARGO_BIN_EXE_tidal")),
        &scenario.kubeconfig("webhook"),
        scenario.dir(),
    )
    .await;
    let send = |path: &'static str, body: Vec<u8>| {
        let (target, tls) = (hook.https, hook.tls.clone());
        async move {
            let from = [127, 0, 0, 1].into();
            let (status, answer) =
                flood::request(target, from, Some(&tls), &flood::post(path, &body))
                    .await
                    .unwrap();
            assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
            serde_json::from_slice::<Value>(&answer).unwrap()
        }
    };

    let response = send("/mutate-pods", review(None, "long-1", long.clone())).await;
    assert_eq!(response["response"]["allowed"], true, "{response}");
    let patched = apply_patch(&response, &long);
    assert_eq!(
        patched["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"],
        json!([{"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-1a"]},
            {"key": "volcano.sh/revocable-zone", "operator": "NotIn", "values": ["evening"]}
        ]}])
    );
    assert_eq!(
        patched["spec"]["affinity"]["nodeAffinity"][PREFERRED][0]["preference"],
        json!({"matchExpressions": [{"key": "volcano.sh/revocable-zone", "operator": "Exists"}]})
    );
    let warning = response["response"]["warnings"][0].as_str().unwrap();
    assert!(
        warning.contains("revocable zone evening closes at"),
        "{warning}"
    );

    let response = send("/mutate-pods", review(None, "short-1", short.clone())).await;
    let patched = apply_patch(&response, &short);
    assert!(
        patched["spec"]["affinity"]["nodeAffinity"]
            .get(REQUIRED)
            .is_none(),
        "{patched}"
    );
    assert!(response["response"].get("warnings").is_none(), "{response}");

    let bind = |pod: &str| review(Some("binding"), pod, binding(pod, "rev-1"));
    let denied = send("/validate-bindings", bind("long-1")).await;
    assert_eq!(denied["response"]["allowed"], false, "{denied}");
    assert_eq!(denied["response"]["status"]["code"], 403);
    let message = denied["response"]["status"]["message"].as_str().unwrap();
    for part in [
        "pod team-a/long-1 needs 3h0m0s (expected-run-time 3h0m0s)",
        "revocable zone evening closes at ",
        " from now;",
        "may not be bound to node rev-1",
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    let allowed = send("/validate-bindings", bind("short-1")).await;
    assert_eq!(allowed["response"]["allowed"], true, "{allowed}");
    let ordinary = send(
        "/validate-bindings",
        review(Some("binding"), "long-1", binding("long-1", "std-1")),
    )
    .await;
    assert_eq!(ordinary["response"]["allowed"], true, "{ordinary}");
}
