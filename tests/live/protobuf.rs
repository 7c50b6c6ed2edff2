//! The protobuf list and watch through a real HTTP client, against a small server that answers with
//! the recorded API server bytes (tests/fixtures/protobuf): paging, the switch on `Content-Type`, the
//! watch resumed from the list's resourceVersion, and a truncated stream leading to a relist (the
//! paginated list forced: the recorded server has no watch-list; tests/live/watch_list.rs has that). The JSON
//! fallback is what every other live test runs: the fake API server answers JSON only.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use axum::{
    Router,
    body::Body,
    extract::{RawQuery, State},
    http::{StatusCode, header},
    response::Response,
    routing::get,
};
use k8s_pb::{
    api::core::v1 as pb,
    apimachinery::pkg::{apis::meta::v1 as pb_meta, runtime as pb_runtime},
};
use prost::Message;
use tidal::{
    cluster::{ObjectKey, ObjectKind, SharedCache},
    runtime::watch::{
        LogOnly, listwatch,
        listwatch::{InitialSync, Wire},
    },
};

use tidal_testkit::{
    fake_apiserver::FakeApiServer,
    protobuf::{envelope, fixture},
};

use crate::support::{eventually, pod};

/// Pods of the recorded page, re-encoded without the namespace the watch stream is about (so that what
/// the watch does is visible), with its continue token; and a last page: no items, no token.
fn pages() -> (Vec<u8>, Vec<u8>, String) {
    let recorded = fixture("pods-list.pb");
    let raw = pb_runtime::Unknown::decode(&recorded[4..])
        .unwrap()
        .raw
        .unwrap();
    let mut list = pb::PodList::decode(raw.as_slice()).unwrap();
    list.items
        .retain(|p| p.metadata.as_ref().and_then(|m| m.namespace.as_deref()) != Some("fixture"));
    assert_eq!(list.items.len(), LISTED);
    let first = envelope("v1", "PodList", list.encode_to_vec());
    let version = list
        .metadata
        .as_ref()
        .and_then(|m| m.resource_version.clone())
        .unwrap();
    let last = pb::PodList {
        metadata: Some(pb_meta::ListMeta {
            resource_version: Some(version.clone()),
            ..Default::default()
        }),
        items: Vec::new(),
    };
    (
        first,
        envelope("v1", "PodList", last.encode_to_vec()),
        version,
    )
}

/// Pods on the first page outside namespace `fixture`.
const LISTED: usize = 18;

#[derive(Clone)]
struct Recorded {
    queries: Arc<Mutex<Vec<String>>>,
    first: Arc<Vec<u8>>,
    last: Arc<Vec<u8>>,
    watch: Arc<Vec<u8>>,
}

async fn pods(State(state): State<Recorded>, RawQuery(query): RawQuery) -> Response {
    let query = query.unwrap_or_default();
    let watches_before = {
        let mut queries = state.queries.lock().unwrap();
        let before = queries.iter().filter(|q| q.contains("watch=true")).count();
        queries.push(query.clone());
        before
    };
    if query.contains("watch=true") {
        if watches_before > 0 {
            // Later watches stay open with nothing to say, as a quiet API server's do.
            std::future::pending::<()>().await;
        }
        return Response::builder()
            .header(
                header::CONTENT_TYPE,
                "application/vnd.kubernetes.protobuf;stream=watch",
            )
            .body(Body::from(state.watch.to_vec()))
            .unwrap();
    }
    let body = if query.contains("continue=") {
        state.last.to_vec()
    } else {
        state.first.to_vec()
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/vnd.kubernetes.protobuf")
        .body(Body::from(body))
        .unwrap()
}

async fn serve(watch: Vec<u8>) -> (SocketAddr, Recorded) {
    let (first, last, _) = pages();
    let state = Recorded {
        queries: Arc::default(),
        first: Arc::new(first),
        last: Arc::new(last),
        watch: Arc::new(watch),
    };
    let app = Router::new()
        .route("/api/v1/pods", get(pods))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, state)
}

fn client(addr: SocketAddr) -> kube::Client {
    let config = kube::Config::new(format!("http://{addr}").parse().unwrap());
    kube::Client::try_from(config).unwrap()
}

/// Pod `namespace/name` as the shared cache holds it, if it does.
fn cached_pod(
    shared: &SharedCache,
    namespace: &str,
    name: &str,
) -> Option<Arc<tidal::cluster::PodInfo>> {
    shared.read().pod(&ObjectKey::new(namespace, name)).cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_are_listed_page_by_page_and_watched_in_protobuf() {
    let (addr, recorded) = serve(fixture("pods-watch.pb")).await;
    let shared = SharedCache::new(&[ObjectKind::Pod]);
    let task = tokio::spawn(listwatch::mirror::<k8s_openapi::api::core::v1::Pod>(
        client(addr),
        shared.clone(),
        Arc::new(LogOnly),
        Wire::Protobuf,
        InitialSync::List,
    ));
    // The watch stream: three pods added in namespace `fixture`, web-1 relabelled, web-2 deleted.
    eventually("the watch applied", || {
        let relabelled = cached_pod(&shared, "fixture", "web-1")
            .is_some_and(|p| p.labels.get("tier") == Some("front"));
        (relabelled && cached_pod(&shared, "fixture", "web-2").is_none()).then_some(())
    })
    .await;
    assert!(shared.is_kind_synced(ObjectKind::Pod));
    assert!(cached_pod(&shared, "fixture", "web-3").is_some());
    // The listed pods, and web-1 and web-3 from the watch (web-2 came and went).
    assert_eq!(shared.read().pod_count(), LISTED + 2);

    let (_, _, version) = pages();
    let queries = recorded.queries.lock().unwrap().clone();
    assert!(queries[0].contains("limit=500") && !queries[0].contains("continue"));
    assert!(queries[1].contains("continue="), "{queries:?}");
    assert!(
        queries[2].contains("watch=true")
            && queries[2].contains(&format!("resourceVersion={version}")),
        "the watch starts at the list's resourceVersion: {queries:?}"
    );
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_watch_stream_is_never_half_applied_and_leads_to_a_relist() {
    let watch = fixture("pods-watch.pb");
    let (addr, recorded) = serve(watch[..watch.len() - 5].to_vec()).await;
    let shared = SharedCache::new(&[ObjectKind::Pod]);
    let task = tokio::spawn(listwatch::mirror::<k8s_openapi::api::core::v1::Pod>(
        client(addr),
        shared.clone(),
        Arc::new(LogOnly),
        Wire::Protobuf,
        InitialSync::List,
    ));
    eventually("a second list after the cut stream", || {
        let queries = recorded.queries.lock().unwrap();
        let lists = queries
            .iter()
            .filter(|q| !q.contains("watch=true") && !q.contains("continue="))
            .count();
        (lists >= 2).then_some(())
    })
    .await;
    eventually("the relist complete", || {
        shared.is_kind_synced(ObjectKind::Pod).then_some(())
    })
    .await;
    // The relist holds what the server lists, and none of the watched pods it does not list.
    assert_eq!(shared.read().pod_count(), LISTED);
    assert!(cached_pod(&shared, "fixture", "web-1").is_none());
    task.abort();
}

/// `TIDAL_WIRE=json` (`Wire::Json`) asks a server that speaks protobuf for JSON, and gets it: the
/// switch that measures what protobuf saves on a real API server. The default asks for protobuf.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_json_wire_never_asks_for_protobuf() {
    for wire in [Wire::Json, Wire::Protobuf] {
        let server = FakeApiServer::start().await;
        server.speak_protobuf(true);
        server.apply(pod("default/listed", "node-1"));
        let dir = tempfile::tempdir().unwrap();
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(server.kubeconfig(dir.path(), "t")).unwrap(),
            &Default::default(),
        )
        .await
        .unwrap();
        let shared = SharedCache::new(&[ObjectKind::Pod]);
        let task = tokio::spawn(listwatch::mirror::<k8s_openapi::api::core::v1::Pod>(
            kube::Client::try_from(config).unwrap(),
            shared.clone(),
            Arc::new(LogOnly),
            wire,
            InitialSync::WatchList,
        ));
        eventually("the list", || {
            (shared.is_kind_synced(ObjectKind::Pod)
                && cached_pod(&shared, "default", "listed").is_some())
            .then_some(())
        })
        .await;
        assert_eq!(
            server.protobuf_answers() == 0,
            wire == Wire::Json,
            "{wire:?}: {} protobuf answers",
            server.protobuf_answers()
        );
        task.abort();
    }
}
