//! A small, stateful Kubernetes API server for tests, served over plain HTTP on 127.0.0.1 so that tidal
//! connects to it through an ordinary kubeconfig, exactly as it would to a real cluster.
//!
//! What it implements is what tidal uses: list and watch (resourceVersions, an event log to resume
//! from, bookmarks, 410 Gone for compacted versions), the streaming watch-list (`sendInitialEvents`:
//! served by default, or refused or broken in each way a real server can, [`WatchListMode`]), get /
//! create / replace (with resourceVersion conflicts → 409) / merge, strategic-as-merge and JSON
//! patches on objects and their `/status` (generation bumps on spec changes), delete, and the pod
//! eviction subresource with dry run, uid preconditions and PodDisruptionBudgets recomputed from the
//! pods (429). Volcano PodGroups (`scheduling.volcano.sh/v1beta1`) are served only while their "CRD"
//! is installed ([`FakeApiServer::serve_podgroups`]). Fault injection: cut every watch, expire
//! resource versions (410 on re-watch), per-eviction faults (a status code, a delay before, or an
//! answer lost after the eviction was applied), and status codes for any other requests by method and
//! path. Every request and every eviction is recorded for assertions.

#![allow(dead_code)]

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    convert::Infallible,
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::State,
    http::{HeaderMap, Method, StatusCode, Uri, header},
    response::{IntoResponse, Response},
};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::{broadcast, watch};

/// How a watch-list (`watch=true&sendInitialEvents=true`) is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchListMode {
    /// As a server with the WatchList feature: every object ADDED, a bookmark annotated
    /// `k8s.io/initial-events-end`, then the live events.
    Served,
    /// Answered with this status code, as a server with the feature gate off (422, "sendInitialEvents
    /// is forbidden for watch unless the WatchList feature gate is enabled"), or a proxy's 400 or 403.
    Refused(u16),
    /// One ERROR event (500) and the end, as a 1.36 server on etcd 3.4 answers: "the required
    /// storage feature RequestWatchProgress is disabled".
    ErrorEvent,
    /// `sendInitialEvents` ignored, as a server before 1.27 does: the objects ADDED, a bookmark
    /// without the annotation, then the live events.
    Ignored,
    /// The stream ends cleanly after this many objects, before the bookmark.
    EndsEarly(usize),
    /// Bytes that are no event after this many objects.
    Corrupt(usize),
    /// The stream ends mid-event after this many objects.
    Truncated(usize),
}

/// What an accepted (non-dry-run) eviction does to the pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvictionEffect {
    /// Deleted at once (grace period 0).
    Delete,
    /// `deletionTimestamp` set: the pod terminates until [`FakeApiServer::finish_terminations`].
    Terminate,
    /// Nothing visible: as if the watch had not caught up yet. Tests in-flight bookkeeping.
    Keep,
}

/// What happens to one eviction request, in the order they arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvictionFault {
    /// Handled normally.
    None,
    /// Answered with this status code before any other check; nothing happens to the pod.
    Code(u16),
    /// Handled normally after this delay (a slow or hung API server).
    Delay(Duration),
    /// Handled normally (the pod is evicted), but the answer only leaves after this delay: with a
    /// shorter client timeout, an eviction that went through although the client saw none.
    LateAnswer(Duration),
    /// Dropped: nothing happens to the pod, and after this delay a 503 answers a client that has
    /// given up by then (a server restarting under the request). Recorded with code 503.
    NoAnswer(Duration),
}

#[derive(Clone, Debug)]
pub struct EvictionRecord {
    pub namespace: String,
    pub name: String,
    pub dry_run: bool,
    pub code: u16,
    pub body: Value,
    /// The bearer token of the caller: tests give each controller its own.
    pub user: String,
    /// Position in the request log.
    pub request_index: usize,
}

#[derive(Clone, Debug)]
pub struct RequestRecord {
    /// The answer's status code (200 for a watch that started streaming).
    pub code: u16,
    pub method: String,
    pub path: String,
    pub query: String,
    pub user: String,
    pub body: Value,
}

struct Kind {
    group_path: &'static str,
    plural: &'static str,
    kind: &'static str,
    api_version: &'static str,
    namespaced: bool,
    /// Has a status subresource: status is written only through `/status`, spec changes bump generation.
    status: bool,
}

const KINDS: &[Kind] = &[
    Kind {
        group_path: "api/v1",
        plural: "pods",
        kind: "Pod",
        api_version: "v1",
        namespaced: true,
        status: true,
    },
    Kind {
        group_path: "api/v1",
        plural: "nodes",
        kind: "Node",
        api_version: "v1",
        namespaced: false,
        status: true,
    },
    Kind {
        group_path: "api/v1",
        plural: "namespaces",
        kind: "Namespace",
        api_version: "v1",
        namespaced: false,
        status: false,
    },
    Kind {
        group_path: "api/v1",
        plural: "persistentvolumeclaims",
        kind: "PersistentVolumeClaim",
        api_version: "v1",
        namespaced: true,
        status: true,
    },
    Kind {
        group_path: "api/v1",
        plural: "events",
        kind: "Event",
        api_version: "v1",
        namespaced: true,
        status: false,
    },
    Kind {
        group_path: "apis/policy/v1",
        plural: "poddisruptionbudgets",
        kind: "PodDisruptionBudget",
        api_version: "policy/v1",
        namespaced: true,
        status: true,
    },
    Kind {
        group_path: "apis/scheduling.volcano.sh/v1beta1",
        plural: "podgroups",
        kind: "PodGroup",
        api_version: "scheduling.volcano.sh/v1beta1",
        namespaced: true,
        status: true,
    },
    Kind {
        group_path: "apis/coordination.k8s.io/v1",
        plural: "leases",
        kind: "Lease",
        api_version: "coordination.k8s.io/v1",
        namespaced: true,
        status: false,
    },
    Kind {
        group_path: "apis/events.k8s.io/v1",
        plural: "events",
        kind: "Event",
        api_version: "events.k8s.io/v1",
        namespaced: true,
        status: false,
    },
    Kind {
        group_path: "apis/tidal.dev/v1alpha1",
        plural: "revocablezones",
        kind: "RevocableZone",
        api_version: "tidal.dev/v1alpha1",
        namespaced: false,
        status: true,
    },
    Kind {
        group_path: "apis/tidal.dev/v1alpha1",
        plural: "deschedulingpolicies",
        kind: "DeschedulingPolicy",
        api_version: "tidal.dev/v1alpha1",
        namespaced: false,
        status: true,
    }, // metrics-server's read-only API, served here like any other list (tests put the samples in).
    Kind {
        group_path: "apis/metrics.k8s.io/v1beta1",
        plural: "nodes",
        kind: "NodeMetrics",
        api_version: "metrics.k8s.io/v1beta1",
        namespaced: false,
        status: false,
    },
    Kind {
        group_path: "apis/metrics.k8s.io/v1beta1",
        plural: "pods",
        kind: "PodMetrics",
        api_version: "metrics.k8s.io/v1beta1",
        namespaced: true,
        status: false,
    },
];

fn kind_by_path(group_path: &str, plural: &str) -> Option<&'static Kind> {
    KINDS
        .iter()
        .find(|k| k.group_path == group_path && k.plural == plural)
}

fn kind_by_type(api_version: &str, kind: &str) -> Option<&'static Kind> {
    KINDS
        .iter()
        .find(|k| k.api_version == api_version && k.kind == kind)
}

fn resource_id(kind: &Kind) -> String {
    format!("{}/{}", kind.group_path, kind.plural)
}

struct LogEntry {
    rv: u64,
    resource: String,
    namespace: String,
    type_: &'static str,
    object: Value,
}

#[derive(Default)]
struct Faults {
    /// Faults of the next evictions, in order.
    evictions: VecDeque<EvictionFault>,
    eviction_delay: Duration,
    /// Status codes for other requests: (method, path fragment, codes left).
    requests: Vec<(String, String, VecDeque<u16>)>,
}

impl Faults {
    /// The injected answer for a (non-watch) request, if one is due.
    fn for_request(&mut self, method: &str, path: &str) -> Option<u16> {
        self.requests
            .iter_mut()
            .find(|(m, fragment, codes)| {
                m == method && path.contains(fragment.as_str()) && !codes.is_empty()
            })
            .and_then(|(_, _, codes)| codes.pop_front())
    }
}

struct Store {
    rv: u64,
    /// Watches from a resourceVersion below this get 410 Gone.
    compacted: u64,
    uids: u64,
    objects: BTreeMap<(String, String, String), Value>,
    log: Vec<Arc<LogEntry>>,
    evictions: Vec<EvictionRecord>,
    requests: Vec<RequestRecord>,
    faults: Faults,
    effect: EvictionEffect,
}

struct Inner {
    store: Mutex<Store>,
    /// Whether the PodGroup "CRD" is installed.
    podgroups: AtomicBool,
    /// Whether the core kinds are served in protobuf to clients that ask for it, as a real API server
    /// does. Off: JSON whatever the client asks (a server or proxy without protobuf).
    protobuf: AtomicBool,
    /// Lists and watches answered in protobuf so far.
    protobuf_answers: std::sync::atomic::AtomicUsize,
    watch_list: Mutex<WatchListMode>,
    events: broadcast::Sender<Arc<LogEntry>>,
    cut: watch::Sender<u64>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub struct FakeApiServer {
    pub addr: SocketAddr,
    inner: Arc<Inner>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeApiServer {
    pub async fn start() -> FakeApiServer {
        let (events, _) = broadcast::channel(4096);
        let inner = Arc::new(Inner {
            store: Mutex::new(Store {
                rv: 1,
                compacted: 0,
                uids: 0,
                objects: BTreeMap::new(),
                log: Vec::new(),
                evictions: Vec::new(),
                requests: Vec::new(),
                faults: Faults::default(),
                effect: EvictionEffect::Delete,
            }),
            podgroups: AtomicBool::new(false),
            protobuf: AtomicBool::new(true),
            protobuf_answers: Default::default(),
            watch_list: Mutex::new(WatchListMode::Served),
            events,
            cut: watch::Sender::new(0),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new().fallback(handle).with_state(inner.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        FakeApiServer { addr, inner, task }
    }

    /// Writes a kubeconfig that points at this server and authenticates with `token`.
    pub fn kubeconfig(&self, dir: &Path, token: &str) -> PathBuf {
        let path = dir.join(format!("kubeconfig-{token}"));
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: http://{}\n\
             users:\n- name: {token}\n  user:\n    token: {token}\ncontexts:\n- name: fake\n  context:\n    \
             cluster: fake\n    user: {token}\n    namespace: default\ncurrent-context: fake\n",
            self.addr
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Creates or replaces an object given as JSON (kind from its apiVersion/kind).
    pub fn apply(&self, object: impl Into<Value>) {
        let object: Value = object.into();
        let kind = kind_by_type(
            object["apiVersion"].as_str().unwrap(),
            object["kind"].as_str().unwrap(),
        )
        .expect("a kind the fake serves");
        let ns = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let name = object["metadata"]["name"].as_str().unwrap().to_owned();
        let mut store = self.inner.lock();
        let key = (resource_id(kind), ns, name);
        match store.objects.get(&key).cloned() {
            None => {
                let _ = store.create(&self.inner, kind, object);
            }
            Some(mut current) => {
                // Like `kubectl apply` of a full object: spec and metadata replaced, status too.
                let rv = current["metadata"]["resourceVersion"].clone();
                let generation = current["metadata"]["generation"].clone();
                let uid = current["metadata"]["uid"].clone();
                current = object;
                current["metadata"]["resourceVersion"] = rv;
                current["metadata"]["generation"] = generation;
                current["metadata"]["uid"] = uid;
                store.write_object(&self.inner, kind, key, current, true);
            }
        }
    }

    /// Changes an object in place (as an editor would); spec changes bump its generation.
    pub fn update(&self, plural: &str, ns: &str, name: &str, change: impl FnOnce(&mut Value)) {
        let kind = KINDS.iter().find(|k| k.plural == plural).unwrap();
        let mut store = self.inner.lock();
        let key = (resource_id(kind), ns.to_owned(), name.to_owned());
        let mut object = store.objects.get(&key).cloned().expect("object exists");
        change(&mut object);
        store.write_object(&self.inner, kind, key, object, true);
    }

    pub fn get(&self, plural: &str, ns: &str, name: &str) -> Option<Value> {
        let kind = KINDS.iter().find(|k| k.plural == plural).unwrap();
        self.inner
            .lock()
            .objects
            .get(&(resource_id(kind), ns.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Every object of a resource (by group path and plural, e.g. `apis/events.k8s.io/v1`, `events`).
    pub fn list(&self, group_path: &str, plural: &str) -> Vec<Value> {
        let id = format!("{group_path}/{plural}");
        self.inner
            .lock()
            .objects
            .iter()
            .filter(|((r, _, _), _)| *r == id)
            .map(|(_, v)| v.clone())
            .collect()
    }

    pub fn delete(&self, plural: &str, ns: &str, name: &str) {
        let kind = KINDS.iter().find(|k| k.plural == plural).unwrap();
        let mut store = self.inner.lock();
        store.remove(
            &self.inner,
            kind,
            &(resource_id(kind), ns.to_owned(), name.to_owned()),
        );
    }

    /// Removes an object without a watch event, as a deletion behind a compacted history: only a
    /// relist can tell that it is gone.
    pub fn forget(&self, plural: &str, ns: &str, name: &str) {
        let kind = KINDS.iter().find(|k| k.plural == plural).unwrap();
        let removed =
            self.inner
                .lock()
                .objects
                .remove(&(resource_id(kind), ns.to_owned(), name.to_owned()));
        assert!(removed.is_some(), "{plural} {ns}/{name} exists");
    }

    /// Deletes every pod that is terminating (the kubelet finished).
    pub fn finish_terminations(&self) {
        let kind = kind_by_path("api/v1", "pods").unwrap();
        let mut store = self.inner.lock();
        let terminating: Vec<_> = store
            .objects
            .iter()
            .filter(|((r, _, _), v)| {
                *r == resource_id(kind) && !v["metadata"]["deletionTimestamp"].is_null()
            })
            .map(|(k, _)| k.clone())
            .collect();
        for key in terminating {
            store.remove(&self.inner, kind, &key);
        }
    }

    pub fn evictions(&self) -> Vec<EvictionRecord> {
        self.inner.lock().evictions.clone()
    }

    pub fn requests(&self) -> Vec<RequestRecord> {
        self.inner.lock().requests.clone()
    }

    pub fn set_eviction_effect(&self, effect: EvictionEffect) {
        self.inner.lock().effect = effect;
    }

    /// The next evictions answer these status codes (e.g. 500, 503), one each, in order.
    pub fn fail_evictions(&self, codes: &[u16]) {
        let faults: Vec<EvictionFault> = codes.iter().map(|c| EvictionFault::Code(*c)).collect();
        self.eviction_faults(&faults);
    }

    /// The next evictions meet these faults, one each, in order.
    pub fn eviction_faults(&self, faults: &[EvictionFault]) {
        self.inner.lock().faults.evictions.extend(faults);
    }

    /// The next requests with this method whose path (and query) contains `fragment` answer these
    /// status codes, one each, in order. Plain watches are left alone; a watch-list is a list here.
    pub fn fail_requests(&self, method: &str, fragment: &str, codes: &[u16]) {
        self.inner.lock().faults.requests.push((
            method.to_owned(),
            fragment.to_owned(),
            codes.iter().copied().collect(),
        ));
    }

    /// Installs or removes the PodGroup CRD. Removing it drops every PodGroup without a watch event
    /// and ends open watches (the API server's watchers of a deleted CRD need not see the deletes);
    /// until it is installed, PodGroup requests answer 404.
    /// Serve pods, nodes, namespaces and PDBs in protobuf when asked (the default), or JSON only.
    pub fn speak_protobuf(&self, on: bool) {
        self.inner.protobuf.store(on, Ordering::SeqCst);
    }

    /// How watch-lists are answered from now on (default: [`WatchListMode::Served`]).
    pub fn set_watch_list(&self, mode: WatchListMode) {
        *self
            .inner
            .watch_list
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = mode;
    }

    /// Lists and watches answered in protobuf so far.
    pub fn protobuf_answers(&self) -> usize {
        self.inner.protobuf_answers.load(Ordering::SeqCst)
    }

    pub fn serve_podgroups(&self, served: bool) {
        self.inner.podgroups.store(served, Ordering::SeqCst);
        if !served {
            let kind = kind_by_path("apis/scheduling.volcano.sh/v1beta1", "podgroups").unwrap();
            let mut store = self.inner.lock();
            let keys: Vec<_> = store
                .objects
                .keys()
                .filter(|(r, _, _)| *r == resource_id(kind))
                .cloned()
                .collect();
            for key in keys {
                store.objects.remove(&key);
            }
            drop(store);
            self.cut_watches();
        }
    }

    pub fn set_eviction_delay(&self, delay: Duration) {
        self.inner.lock().faults.eviction_delay = delay;
    }

    /// Ends every open watch stream, as a restarted API server or a broken connection would.
    pub fn cut_watches(&self) {
        self.inner.cut.send_modify(|n| *n += 1);
    }

    /// Forgets the event history: every watch resuming from an older resourceVersion gets 410 Gone and
    /// has to relist. Open watches are cut so that they resume at once.
    pub fn expire_watches(&self) {
        {
            let mut store = self.inner.lock();
            store.rv += 1;
            store.compacted = store.rv;
            store.log.clear();
        }
        self.cut_watches();
    }
}

impl Store {
    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    fn record(&mut self, inner: &Inner, kind: &Kind, type_: &'static str, object: &Value) {
        let entry = Arc::new(LogEntry {
            rv: self.rv,
            resource: resource_id(kind),
            namespace: object["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            type_,
            object: object.clone(),
        });
        self.log.push(entry.clone());
        // Sent under the lock, so that a watch subscribing under the lock never misses or repeats one.
        let _ = inner.events.send(entry);
    }

    fn create(
        &mut self,
        inner: &Inner,
        kind: &Kind,
        mut object: Value,
    ) -> Result<Value, Box<Response>> {
        object["apiVersion"] = json!(kind.api_version);
        object["kind"] = json!(kind.kind);
        if object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
        {
            let prefix = object["metadata"]["generateName"]
                .as_str()
                .unwrap_or("obj-")
                .to_owned();
            self.uids += 1;
            object["metadata"]["name"] = json!(format!("{prefix}{}", self.uids));
        }
        let ns = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let key = (resource_id(kind), ns, name.clone());
        if self.objects.contains_key(&key) {
            return Err(Box::new(status_response(
                409,
                "AlreadyExists",
                &format!("{} \"{name}\" already exists", kind.plural),
            )));
        }
        if object["metadata"]["uid"].is_null() {
            self.uids += 1;
            object["metadata"]["uid"] = json!(format!("uid-{}", self.uids));
        }
        if object["metadata"]["creationTimestamp"].is_null() {
            object["metadata"]["creationTimestamp"] = json!(now_time());
        }
        object["metadata"]["generation"] = json!(1);
        let rv = self.next_rv();
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        self.objects.insert(key, object.clone());
        self.record(inner, kind, "ADDED", &object);
        Ok(object)
    }

    /// Stores a new version of an existing object; with `bump`, a changed spec increments generation.
    fn write_object(
        &mut self,
        inner: &Inner,
        kind: &Kind,
        key: (String, String, String),
        mut object: Value,
        bump: bool,
    ) -> Value {
        let old = self.objects.get(&key).cloned().unwrap_or(Value::Null);
        let generation = old["metadata"]["generation"].as_i64().unwrap_or(1);
        let spec_changed = old.get("spec") != object.get("spec");
        object["metadata"]["generation"] = json!(if bump && spec_changed {
            generation + 1
        } else {
            generation
        });
        object["apiVersion"] = json!(kind.api_version);
        object["kind"] = json!(kind.kind);
        let rv = self.next_rv();
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        self.objects.insert(key, object.clone());
        self.record(inner, kind, "MODIFIED", &object);
        object
    }

    fn remove(
        &mut self,
        inner: &Inner,
        kind: &Kind,
        key: &(String, String, String),
    ) -> Option<Value> {
        let mut object = self.objects.remove(key)?;
        let rv = self.next_rv();
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        self.record(inner, kind, "DELETED", &object);
        Some(object)
    }
}

fn now_time() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn status_response(code: u16, reason: &str, message: &str) -> Response {
    status_with_details(code, reason, message, Value::Null)
}

fn status_with_details(code: u16, reason: &str, message: &str, details: Value) -> Response {
    let mut body = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": if code < 400 { "Success" } else { "Failure" },
        "message": message,
        "reason": reason,
        "code": code,
    });
    if !details.is_null() {
        body["details"] = details;
    }
    json_response(code, &body)
}

fn json_response(code: u16, body: &Value) -> Response {
    (
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn query_map(uri: &Uri) -> HashMap<String, String> {
    uri.query()
        .map(|q| {
            url_pairs(q)
                .into_iter()
                .collect::<HashMap<String, String>>()
        })
        .unwrap_or_default()
}

fn url_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (k.to_owned(), v.replace("%2F", "/").replace("%3D", "="))
        })
        .collect()
}

struct Target {
    kind: &'static Kind,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
}

fn parse_path(path: &str) -> Option<Target> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group_path, rest) = match segments.as_slice() {
        ["api", "v1", rest @ ..] => ("api/v1".to_owned(), rest),
        ["apis", group, version, rest @ ..] => (format!("apis/{group}/{version}"), rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some((*ns).to_owned()), rest),
        _ => (None, rest),
    };
    let (plural, name, subresource) = match rest {
        [plural] => (*plural, None, None),
        [plural, name] => (*plural, Some((*name).to_owned()), None),
        [plural, name, sub] => (*plural, Some((*name).to_owned()), Some((*sub).to_owned())),
        _ => return None,
    };
    let kind = kind_by_path(&group_path, plural)?;
    Some(Target {
        kind,
        namespace,
        name,
        subresource,
    })
}

async fn handle(
    State(inner): State<Arc<Inner>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let user = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default()
        .to_owned();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let request_index = {
        let mut store = inner.lock();
        store.requests.push(RequestRecord {
            code: 0,
            method: method.to_string(),
            path: uri.path().to_owned(),
            query: uri.query().unwrap_or_default().to_owned(),
            user: user.clone(),
            body: body.clone(),
        });
        store.requests.len() - 1
    };
    // A watch-list is an initial list: faults meant for lists reach it too; plain watches never.
    let watching = uri
        .query()
        .is_some_and(|q| q.contains("watch=true") && !q.contains("sendInitialEvents=true"));
    let injected = if watching {
        None
    } else {
        let target = match uri.query() {
            Some(query) => format!("{}?{query}", uri.path()),
            None => uri.path().to_owned(),
        };
        inner.lock().faults.for_request(method.as_str(), &target)
    };
    let response = match injected {
        Some(code) => status_response(code, "InternalError", "injected failure"),
        None => route(&inner, &method, &uri, &headers, body, user, request_index).await,
    };
    if let Some(record) = inner.lock().requests.get_mut(request_index) {
        record.code = response.status().as_u16();
    }
    response
}

async fn route(
    inner: &Arc<Inner>,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Value,
    user: String,
    request_index: usize,
) -> Response {
    let target = parse_path(uri.path()).filter(|target| {
        target.kind.plural != "podgroups" || inner.podgroups.load(Ordering::SeqCst)
    });
    let Some(target) = target else {
        return status_response(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
    };
    let query = query_map(uri);
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    match (method, &target.name, target.subresource.as_deref()) {
        (&Method::GET, None, None) if query.get("watch").map(String::as_str) == Some("true") => {
            let protobuf = wants_protobuf(inner, &target, headers);
            watch_response(inner, &target, &query, protobuf)
        }
        (&Method::GET, None, None) => list(inner, &target, wants_protobuf(inner, &target, headers)),
        (&Method::POST, None, None) => {
            let mut object = body;
            if let Some(ns) = &target.namespace {
                object["metadata"]["namespace"] = json!(ns);
            }
            let mut store = inner.lock();
            match store.create(inner, target.kind, object) {
                Ok(created) => json_response(201, &created),
                Err(response) => *response,
            }
        }
        (&Method::POST, Some(name), Some("eviction")) if target.kind.plural == "pods" => {
            let (fault, delay) = {
                let mut store = inner.lock();
                let fault = store
                    .faults
                    .evictions
                    .pop_front()
                    .unwrap_or(EvictionFault::None);
                (fault, store.faults.eviction_delay)
            };
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            match fault {
                EvictionFault::Code(code) => {
                    let mut store = inner.lock();
                    store.evictions.push(EvictionRecord {
                        namespace: target.namespace.clone().unwrap_or_default(),
                        name: name.clone(),
                        dry_run: query.get("dryRun").map(String::as_str) == Some("All"),
                        code,
                        body,
                        user,
                        request_index,
                    });
                    status_response(code, "InternalError", "injected failure")
                }
                EvictionFault::Delay(delay) => {
                    tokio::time::sleep(delay).await;
                    evict(inner, &target, name, &query, body, user, request_index)
                }
                EvictionFault::LateAnswer(delay) => {
                    let response = evict(inner, &target, name, &query, body, user, request_index);
                    tokio::time::sleep(delay).await;
                    response
                }
                EvictionFault::NoAnswer(delay) => {
                    inner.lock().evictions.push(EvictionRecord {
                        namespace: target.namespace.clone().unwrap_or_default(),
                        name: name.clone(),
                        dry_run: query.get("dryRun").map(String::as_str) == Some("All"),
                        code: 503,
                        body,
                        user,
                        request_index,
                    });
                    tokio::time::sleep(delay).await;
                    status_response(503, "ServiceUnavailable", "the answer nobody waited for")
                }
                EvictionFault::None => {
                    evict(inner, &target, name, &query, body, user, request_index)
                }
            }
        }
        (&Method::GET, Some(name), None | Some("status")) => {
            let store = inner.lock();
            match store.objects.get(&key_of(&target, name)) {
                Some(object) => json_response(200, object),
                None => not_found(&target, name),
            }
        }
        (&Method::PUT, Some(name), sub @ (None | Some("status"))) => {
            replace(inner, &target, name, body, sub.is_some())
        }
        (&Method::PATCH, Some(name), sub @ (None | Some("status"))) => {
            patch(inner, &target, name, body, &content_type, sub.is_some())
        }
        (&Method::DELETE, Some(name), None) => {
            let mut store = inner.lock();
            match store.remove(inner, target.kind, &key_of(&target, name)) {
                Some(object) => json_response(200, &object),
                None => not_found(&target, name),
            }
        }
        _ => status_response(405, "MethodNotAllowed", "not supported by the fake"),
    }
}

fn key_of(target: &Target, name: &str) -> (String, String, String) {
    (
        resource_id(target.kind),
        target.namespace.clone().unwrap_or_default(),
        name.to_owned(),
    )
}

fn not_found(target: &Target, name: &str) -> Response {
    status_response(
        404,
        "NotFound",
        &format!("{} \"{name}\" not found", target.kind.plural),
    )
}

fn in_scope(target: &Target, resource: &str, namespace: &str) -> bool {
    resource == resource_id(target.kind)
        && target.namespace.as_deref().is_none_or(|ns| ns == namespace)
}

/// The client asked for protobuf, the kind is served in it, and protobuf is on.
fn wants_protobuf(inner: &Inner, target: &Target, headers: &HeaderMap) -> bool {
    let asked = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains(PROTOBUF));
    let answered = asked
        && inner.protobuf.load(Ordering::SeqCst)
        && crate::protobuf::KINDS.contains(&target.kind.plural);
    if answered {
        inner.protobuf_answers.fetch_add(1, Ordering::SeqCst);
    }
    answered
}

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

fn list(inner: &Inner, target: &Target, protobuf: bool) -> Response {
    let store = inner.lock();
    let items: Vec<Value> = store
        .objects
        .iter()
        .filter(|((r, ns, _), _)| in_scope(target, r, ns))
        .map(|(_, v)| v.clone())
        .collect();
    if protobuf {
        let kind = target.kind;
        if let Some(body) = crate::protobuf::list(
            kind.plural,
            kind.api_version,
            kind.kind,
            &items,
            &store.rv.to_string(),
        ) {
            return ([(header::CONTENT_TYPE, PROTOBUF)], Body::from(body)).into_response();
        }
    }
    json_response(
        200,
        &json!({
            "apiVersion": target.kind.api_version,
            "kind": format!("{}List", target.kind.kind),
            "metadata": {"resourceVersion": store.rv.to_string()},
            "items": items,
        }),
    )
}

fn watch_line(type_: &str, object: &Value) -> Bytes {
    let mut line = json!({"type": type_, "object": object}).to_string();
    line.push('\n');
    Bytes::from(line)
}

fn watch_response(
    inner: &Arc<Inner>,
    target: &Target,
    query: &HashMap<String, String>,
    protobuf: bool,
) -> Response {
    let kind = target.kind;
    // One event on the wire: a JSON line, or a protobuf frame.
    let watch_line = move |type_: &str, object: &Value| -> Bytes {
        if protobuf {
            let enveloped = if type_ == "ERROR" {
                Some(crate::protobuf::status(
                    object["code"].as_i64().unwrap_or(500) as i32,
                    object["reason"].as_str().unwrap_or_default(),
                    object["message"].as_str().unwrap_or_default(),
                ))
            } else {
                crate::protobuf::object(kind.plural, kind.api_version, kind.kind, object)
            };
            if let Some(enveloped) = enveloped {
                return Bytes::from(crate::protobuf::frame(type_, enveloped));
            }
        }
        watch_line(type_, object)
    };
    let content_type = if protobuf {
        "application/vnd.kubernetes.protobuf;stream=watch"
    } else {
        "application/json"
    };
    let since = query.get("resourceVersion").cloned().unwrap_or_default();
    let bookmarks = query.get("allowWatchBookmarks").map(String::as_str) == Some("true");
    let watch_list = query.get("sendInitialEvents").map(String::as_str) == Some("true");
    let mode = *inner.watch_list.lock().unwrap_or_else(|p| p.into_inner());
    if watch_list {
        // As the API server validates a watch-list's options.
        if query.get("resourceVersionMatch").map(String::as_str) != Some("NotOlderThan") {
            return status_response(
                422,
                "Invalid",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            );
        }
        if let WatchListMode::Refused(code) = mode {
            return status_response(
                code,
                "Invalid",
                "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: \
                 sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            );
        }
        if mode == WatchListMode::ErrorEvent {
            let error = json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "a watch stream was requested by the client but the required storage \
                            feature RequestWatchProgress is disabled",
                "reason": "InternalError", "code": 500
            });
            let body = Body::from(watch_line("ERROR", &error));
            return ([(header::CONTENT_TYPE, content_type)], body).into_response();
        }
    }
    let mut cut = inner.cut.subscribe();
    cut.borrow_and_update();
    // A watch-list that breaks off: its last bytes, and no live events after them.
    let mut broken: Option<Bytes> = None;
    let (backlog, receiver) = {
        let store = inner.lock();
        let receiver = inner.events.subscribe();
        let mut lines = Vec::new();
        if watch_list || since.is_empty() || since == "0" {
            for ((r, ns, _), object) in &store.objects {
                if in_scope(target, r, ns) {
                    lines.push(watch_line("ADDED", object));
                }
            }
        } else {
            let since: u64 = since.parse().unwrap_or(0);
            if since < store.compacted {
                let gone = json!({
                    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": format!("too old resource version: {since} ({})", store.compacted),
                    "reason": "Expired", "code": 410
                });
                let body = Body::from(watch_line("ERROR", &gone));
                return ([(header::CONTENT_TYPE, content_type)], body).into_response();
            }
            for entry in &store.log {
                if entry.rv > since && in_scope(target, &entry.resource, &entry.namespace) {
                    lines.push(watch_line(entry.type_, &entry.object));
                }
            }
        }
        let mut bookmark = json!({
            "apiVersion": target.kind.api_version,
            "kind": target.kind.kind,
            "metadata": {"resourceVersion": store.rv.to_string()},
        });
        let served = watch_list && mode == WatchListMode::Served;
        if served {
            bookmark["metadata"]["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        match mode {
            WatchListMode::EndsEarly(n) if watch_list => {
                lines.truncate(n);
                broken = Some(Bytes::new());
            }
            WatchListMode::Corrupt(n) if watch_list => {
                lines.truncate(n);
                broken = Some(if protobuf {
                    Bytes::from([8u32.to_be_bytes().as_slice(), &[0xFF; 8]].concat())
                } else {
                    Bytes::from_static(b"{\"type\": \"ADDED\", \"object\": nonsense}\n")
                });
            }
            WatchListMode::Truncated(n) if watch_list => {
                lines.truncate(n);
                let whole = watch_line("BOOKMARK", &bookmark);
                broken = Some(whole.slice(..whole.len() / 2));
            }
            _ if served || bookmarks => lines.push(watch_line("BOOKMARK", &bookmark)),
            _ => {}
        }
        (lines, receiver)
    };
    if let Some(last) = broken {
        let stream =
            futures::stream::iter(backlog.into_iter().chain([last])).map(Ok::<_, Infallible>);
        return (
            [(header::CONTENT_TYPE, content_type)],
            Body::from_stream(stream),
        )
            .into_response();
    }
    let resource = resource_id(target.kind);
    let namespace = target.namespace.clone();
    let live = futures::stream::unfold(receiver, |mut receiver| async move {
        // A lagging watcher is cut off, as the API server does; it resumes from its last version.
        receiver.recv().await.ok().map(|entry| (entry, receiver))
    })
    .filter_map(move |entry| {
        let wanted = entry.resource == resource
            && namespace.as_deref().is_none_or(|ns| ns == entry.namespace);
        futures::future::ready(wanted.then(|| watch_line(entry.type_, &entry.object)))
    });
    let stream = futures::stream::iter(backlog)
        .chain(live)
        .take_until(async move {
            let _ = cut.changed().await;
        })
        .map(Ok::<_, Infallible>);
    (
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(stream),
    )
        .into_response()
}

fn replace(inner: &Inner, target: &Target, name: &str, body: Value, status: bool) -> Response {
    let mut store = inner.lock();
    let key = key_of(target, name);
    let Some(current) = store.objects.get(&key).cloned() else {
        return not_found(target, name);
    };
    let sent_rv = body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default();
    if !sent_rv.is_empty() && Some(sent_rv) != current["metadata"]["resourceVersion"].as_str() {
        return status_response(
            409,
            "Conflict",
            &format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; \
                 please apply your changes to the latest version and try again",
                target.kind.plural
            ),
        );
    }
    let updated = merge_scoped(target.kind, &current, body, status);
    let written = store.write_object(inner, target.kind, key, updated, !status);
    json_response(200, &written)
}

/// Keeps the parts a request may not change: status through the main resource, everything but status
/// through `/status`, and identity fields always.
fn merge_scoped(kind: &Kind, current: &Value, mut proposed: Value, status: bool) -> Value {
    if kind.status {
        if status {
            let mut next = current.clone();
            next["status"] = proposed.get("status").cloned().unwrap_or(Value::Null);
            return next;
        }
        proposed["status"] = current.get("status").cloned().unwrap_or(Value::Null);
        if proposed["status"].is_null()
            && let Some(map) = proposed.as_object_mut()
        {
            map.remove("status");
        }
    }
    for field in ["uid", "creationTimestamp", "deletionTimestamp"] {
        proposed["metadata"][field] = current["metadata"][field].clone();
        if proposed["metadata"][field].is_null()
            && let Some(meta) = proposed["metadata"].as_object_mut()
        {
            meta.remove(field);
        }
    }
    proposed
}

fn patch(
    inner: &Inner,
    target: &Target,
    name: &str,
    body: Value,
    content_type: &str,
    status: bool,
) -> Response {
    let mut store = inner.lock();
    let key = key_of(target, name);
    let Some(current) = store.objects.get(&key).cloned() else {
        return not_found(target, name);
    };
    let mut patched = current.clone();
    if content_type.starts_with("application/json-patch+json") {
        let Ok(patch) = serde_json::from_value::<json_patch::Patch>(body) else {
            return status_response(400, "BadRequest", "invalid JSON patch");
        };
        if let Err(error) = json_patch::patch(&mut patched, &patch) {
            return status_response(422, "Invalid", &error.to_string());
        }
    } else if content_type.starts_with("application/merge-patch+json") {
        json_patch::merge(&mut patched, &body);
    } else if content_type.starts_with("application/strategic-merge-patch+json") {
        let mut body = body;
        merge_conditions_by_type(&current, &mut body);
        json_patch::merge(&mut patched, &body);
    } else {
        return status_response(
            415,
            "UnsupportedMediaType",
            "patch type not supported by the fake",
        );
    }
    // As the API server's metadata validation: a uid is never changed, so a patch naming another
    // uid (a namesake's) fails.
    if patched["metadata"]["uid"] != current["metadata"]["uid"] {
        return status_response(
            422,
            "Invalid",
            "metadata.uid: Invalid value: field is immutable",
        );
    }
    let updated = merge_scoped(target.kind, &current, patched, status);
    let written = store.write_object(inner, target.kind, key, updated, !status);
    json_response(200, &written)
}

/// What a strategic merge patch does with `status.conditions` (a list merged by `type`): the patch's
/// conditions replace those of their type and the others stay. A JSON merge patch would replace the
/// whole list.
fn merge_conditions_by_type(current: &Value, body: &mut Value) {
    let (Some(known), Some(patched)) = (
        current["status"]["conditions"].as_array(),
        body["status"]["conditions"].as_array(),
    ) else {
        return;
    };
    let mut merged = known.clone();
    for condition in patched {
        match merged.iter_mut().find(|c| c["type"] == condition["type"]) {
            Some(same_type) => json_patch::merge(same_type, condition),
            None => merged.push(condition.clone()),
        }
    }
    body["status"]["conditions"] = Value::Array(merged);
}

fn labels_match(selector: &Value, labels: &Value) -> bool {
    if selector.is_null() {
        return false;
    }
    let label = |key: &str| labels.get(key).and_then(Value::as_str);
    let match_labels = selector["matchLabels"].as_object();
    let ok_labels = match_labels.is_none_or(|m| m.iter().all(|(k, v)| label(k) == v.as_str()));
    let ok_expressions = selector["matchExpressions"]
        .as_array()
        .is_none_or(|expressions| {
            expressions.iter().all(|e| {
                let key = e["key"].as_str().unwrap_or_default();
                let values: Vec<&str> = e["values"]
                    .as_array()
                    .map(|v| v.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                match e["operator"].as_str() {
                    Some("In") => label(key).is_some_and(|v| values.contains(&v)),
                    Some("NotIn") => label(key).is_none_or(|v| !values.contains(&v)),
                    Some("Exists") => label(key).is_some(),
                    Some("DoesNotExist") => label(key).is_none(),
                    _ => false,
                }
            })
        });
    ok_labels && ok_expressions
}

/// `intOrString` against a total, percentages rounded up (as the disruption controller does).
fn scaled(value: &Value, total: i64) -> i64 {
    match value {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => s
            .strip_suffix('%')
            .and_then(|p| p.parse::<i64>().ok())
            .map(|p| (p * total + 99) / 100)
            .unwrap_or(0),
        _ => 0,
    }
}

/// `disruptionsAllowed` of a PDB, recomputed from the pods it selects.
fn disruptions_allowed(store: &Store, pdb: &Value, namespace: &str) -> (i64, i64, i64) {
    let pods: Vec<&Value> = store
        .objects
        .iter()
        .filter(|((r, ns, _), pod)| {
            r == "api/v1/pods"
                && ns == namespace
                && labels_match(&pdb["spec"]["selector"], &pod["metadata"]["labels"])
        })
        .map(|(_, pod)| pod)
        .collect();
    let expected = pods.len() as i64;
    let healthy = pods
        .iter()
        .filter(|p| {
            p["status"]["phase"].as_str() == Some("Running")
                && p["metadata"]["deletionTimestamp"].is_null()
        })
        .count() as i64;
    let spec = &pdb["spec"];
    let desired_healthy = if !spec["minAvailable"].is_null() {
        scaled(&spec["minAvailable"], expected)
    } else {
        expected - scaled(&spec["maxUnavailable"], expected)
    };
    (healthy - desired_healthy, desired_healthy, healthy)
}

fn evict(
    inner: &Inner,
    target: &Target,
    name: &str,
    query: &HashMap<String, String>,
    body: Value,
    user: String,
    request_index: usize,
) -> Response {
    let mut store = inner.lock();
    let namespace = target.namespace.clone().unwrap_or_default();
    let dry_run = query.get("dryRun").map(String::as_str) == Some("All")
        || body["deleteOptions"]["dryRun"]
            .as_array()
            .is_some_and(|d| d.iter().any(|v| v == "All"));
    let record = |store: &mut Store, code: u16| {
        store.evictions.push(EvictionRecord {
            namespace: namespace.clone(),
            name: name.to_owned(),
            dry_run,
            code,
            body: body.clone(),
            user: user.clone(),
            request_index,
        });
    };
    let key = key_of(target, name);
    let Some(pod) = store.objects.get(&key).cloned() else {
        record(&mut store, 404);
        return not_found(target, name);
    };
    if let Some(uid) = body["deleteOptions"]["preconditions"]["uid"].as_str()
        && Some(uid) != pod["metadata"]["uid"].as_str()
    {
        record(&mut store, 409);
        return status_response(
            409,
            "Conflict",
            "Precondition failed: UID in precondition does not match the UID in the object",
        );
    }
    if pod["metadata"]["deletionTimestamp"].is_null() {
        let pdbs: Vec<Value> = store
            .objects
            .iter()
            .filter(|((r, ns, _), pdb)| {
                r == "apis/policy/v1/poddisruptionbudgets"
                    && *ns == namespace
                    && labels_match(&pdb["spec"]["selector"], &pod["metadata"]["labels"])
            })
            .map(|(_, pdb)| pdb.clone())
            .collect();
        if pdbs.len() > 1 {
            record(&mut store, 500);
            return status_response(
                500,
                "InternalError",
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            );
        }
        if let Some(pdb) = pdbs.first() {
            let (allowed, desired, healthy) = disruptions_allowed(&store, pdb, &namespace);
            if allowed < 1 {
                record(&mut store, 429);
                let pdb_name = pdb["metadata"]["name"].as_str().unwrap_or_default();
                return status_with_details(
                    429,
                    "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                    json!({"causes": [{
                        "reason": "DisruptionBudget",
                        "message": format!("The disruption budget {pdb_name} needs {desired} healthy pods and has {healthy} currently"),
                    }]}),
                );
            }
        }
        if !dry_run {
            let kind = target.kind;
            match store.effect {
                EvictionEffect::Delete => {
                    store.remove(inner, kind, &key);
                }
                EvictionEffect::Terminate => {
                    let mut pod = pod;
                    pod["metadata"]["deletionTimestamp"] = json!(now_time());
                    store.write_object(inner, kind, key, pod, false);
                }
                EvictionEffect::Keep => {}
            }
        }
    }
    record(&mut store, 201);
    status_response(201, "", "")
}
