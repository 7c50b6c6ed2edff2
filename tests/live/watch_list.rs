//! The streaming watch-list against the fake API server, in protobuf and in JSON: it fills the cache
//! exactly as the paginated list does (and `tidal report` plans the same from it); each way a server
//! can refuse or break it ends in a cache synced through the list, never in a kind marked synced with
//! half its objects; a refusal is remembered, a passing failure is not; and a relist through it
//! removes what was deleted meanwhile.

use std::{process::Command, sync::Arc, time::Duration};

use serde_json::json;
use tidal::{
    cluster::{NodeInfo, ObjectKey, ObjectKind, PodInfo, SharedCache},
    runtime::watch::{
        self, LogOnly, WatchOptions, WatchPlan,
        listwatch::{InitialSync, Wire},
    },
};
use tidal_testkit::fake_apiserver::WatchListMode;
use tokio::task::JoinHandle;

use crate::support::{FakeApiServer, eventually, node, pdb, pod};

const CORE: [ObjectKind; 4] = [
    ObjectKind::Node,
    ObjectKind::Pod,
    ObjectKind::Namespace,
    ObjectKind::PodDisruptionBudget,
];

/// Two busy nodes (30 pods of 200m on 8 cores: 75%), two idle ones, two namespaces, a budget.
fn populate(server: &FakeApiServer) {
    for name in ["busy-1", "busy-2", "idle-1", "idle-2"] {
        server.apply(node(name));
    }
    for namespace in ["web", "batch"] {
        server.apply(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
        );
    }
    for i in 0..60 {
        let (namespace, app) = if i % 3 == 0 {
            ("web", "front")
        } else {
            ("batch", "work")
        };
        let host = if i % 2 == 0 { "busy-1" } else { "busy-2" };
        server.apply(
            pod(&format!("{namespace}/p-{i:02}"), host)
                .label("app", app)
                .owned_by("ReplicaSet", &format!("{app}-rs"))
                .patch(
                    json!({"spec": {"containers": [{"name": "main", "image": "busybox",
                    "resources": {"requests": {"cpu": "200m", "memory": "256Mi"}}}]}}),
                ),
        );
    }
    server.apply(pdb("web/front", "front").min_available(15));
}

/// A fake API server holding [`populate`]'s cluster, speaking protobuf or not, answering watch-lists
/// as `mode` says.
async fn serving(protobuf: bool, mode: WatchListMode) -> FakeApiServer {
    let server = FakeApiServer::start().await;
    server.speak_protobuf(protobuf);
    server.set_watch_list(mode);
    populate(&server);
    server
}

async fn client(server: &FakeApiServer, dir: &std::path::Path) -> kube::Client {
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(server.kubeconfig(dir, "t")).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// Mirrors `kinds` from `server` as `tidal run` does, with the given wire and initial sync.
async fn mirror(
    server: &FakeApiServer,
    kinds: &[ObjectKind],
    wire: Wire,
    initial_sync: InitialSync,
) -> (SharedCache, Vec<JoinHandle<()>>) {
    let dir = tempfile::tempdir().unwrap();
    let shared = SharedCache::new(kinds);
    let options = WatchOptions {
        crd_recheck: Duration::from_secs(60),
        wire,
        initial_sync,
    };
    let plan = WatchPlan {
        kinds: kinds.to_vec(),
    };
    let tasks = watch::start_with(
        client(server, dir.path()).await,
        shared.clone(),
        &plan,
        Arc::new(LogOnly),
        &options,
    )
    .await;
    (shared, tasks.into_iter().map(tokio::spawn).collect())
}

/// What the cache holds of the core kinds, comparable.
#[derive(Debug, PartialEq)]
struct Mirrored {
    keys: Vec<Vec<ObjectKey>>,
    pods: Vec<PodInfo>,
    nodes: Vec<NodeInfo>,
}

fn mirrored(shared: &SharedCache) -> Mirrored {
    let cache = shared.read();
    let keys: Vec<Vec<ObjectKey>> = CORE
        .iter()
        .map(|k| {
            let mut keys = cache.object_keys(*k);
            keys.sort();
            keys
        })
        .collect();
    let pods = keys[1]
        .iter()
        .map(|key| PodInfo::clone(cache.pod(key).unwrap()))
        .collect();
    let nodes = keys[0]
        .iter()
        .map(|key| NodeInfo::clone(cache.node(&key.name).unwrap()))
        .collect();
    Mirrored { keys, pods, nodes }
}

async fn synced(shared: &SharedCache) {
    eventually("the core kinds synced", || {
        shared.unsynced().is_empty().then_some(())
    })
    .await;
}

/// Requests for pods: (watch-lists, paginated lists).
fn pod_requests(server: &FakeApiServer) -> (usize, usize) {
    let requests: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/v1/pods")
        .collect();
    let watch_lists = requests
        .iter()
        .filter(|r| r.query.contains("sendInitialEvents=true"))
        .count();
    let lists = requests
        .iter()
        .filter(|r| r.query.contains("limit=500") && !r.query.contains("continue="))
        .count();
    (watch_lists, lists)
}

fn stop(tasks: Vec<JoinHandle<()>>) {
    for task in tasks {
        task.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_list_fills_the_cache_as_the_paginated_list_does() {
    for (wire, protobuf) in [
        (Wire::Protobuf, true),
        (Wire::Json, false),
        (Wire::Protobuf, false),
    ] {
        let server = serving(protobuf, WatchListMode::Served).await;
        let (streamed, tasks) = mirror(&server, &CORE, wire, InitialSync::WatchList).await;
        synced(&streamed).await;
        stop(tasks);
        let (listed, tasks) = mirror(&server, &CORE, wire, InitialSync::List).await;
        synced(&listed).await;
        stop(tasks);

        let from_stream = mirrored(&streamed);
        assert_eq!(from_stream.pods.len(), 60);
        assert_eq!(from_stream.nodes.len(), 4);
        assert_eq!(from_stream.keys[2].len(), 2, "namespaces");
        assert_eq!(from_stream.keys[3].len(), 1, "budgets");
        assert_eq!(
            from_stream,
            mirrored(&listed),
            "{wire:?}, protobuf {protobuf}"
        );
        // One watch-list per kind for the first, one paginated list per kind for the second.
        let requests = server.requests();
        for path in [
            "/api/v1/pods",
            "/api/v1/nodes",
            "/api/v1/namespaces",
            "/apis/policy/v1/poddisruptionbudgets",
        ] {
            let of = |what: &str| {
                requests
                    .iter()
                    .filter(|r| r.path == path && r.query.contains(what))
                    .count()
            };
            assert_eq!(of("sendInitialEvents=true"), 1, "{path}");
            assert_eq!(of("limit=500"), 1, "{path}");
        }
        assert_eq!(
            server.protobuf_answers() > 0,
            protobuf && wire == Wire::Protobuf
        );
    }
}

/// `tidal report` from the same cluster through the watch-list (the default) and through the
/// paginated list (`TIDAL_INITIAL_SYNC=list`): the same plan, line for line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tidal_report_plans_the_same_through_either_initial_sync() {
    let server = FakeApiServer::start().await;
    populate(&server);
    server.apply(json!({
        "apiVersion": "tidal.dev/v1alpha1", "kind": "DeschedulingPolicy",
        "metadata": {"name": "lnu"},
        "spec": {"mode": "DryRun", "interval": "10m", "strategies": {"lowNodeUtilization": {
            "thresholds": {"cpu": 20, "memory": 20, "pods": 20},
            "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50},
            "usage": {"source": "Requests"}}}},
    }));
    let dir = tempfile::tempdir().unwrap();
    let config = server.kubeconfig(dir.path(), "t");
    let report = |initial_sync: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_tidal"))
            .args([
                "report",
                "--policy",
                "lnu",
                "--timeout",
                "30s",
                "--kubeconfig",
            ])
            .arg(&config)
            .env("TIDAL_INITIAL_SYNC", initial_sync)
            .env_remove("TIDAL_WIRE")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    let streamed = tokio::task::block_in_place(|| report(""));
    assert_eq!(
        pod_requests(&server),
        (1, 0),
        "the default is the watch-list"
    );
    let listed = tokio::task::block_in_place(|| report("list"));
    assert_eq!(
        pod_requests(&server),
        (1, 1),
        "TIDAL_INITIAL_SYNC=list lists"
    );
    assert!(
        streamed.contains("EVICTIONS (2)"),
        "a plan that evicts: {streamed}"
    );
    // The first line is the report's time.
    let plan = |report: &str| report.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(plan(&streamed), plan(&listed));
}

/// Every way a server can say no to a watch-list, or break one off before its end, leads to a cache
/// synced through the paginated list. A refusal is remembered (a relist lists at once); a failure
/// that may pass is not (a relist tries the watch-list again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_fallback_reaches_a_synced_cache_through_the_list() {
    let flavours = [
        (WatchListMode::Refused(422), true),
        (WatchListMode::Refused(400), true),
        (WatchListMode::Refused(403), true),
        (WatchListMode::ErrorEvent, true),
        (WatchListMode::Ignored, true),
        (WatchListMode::Refused(500), false),
        (WatchListMode::EndsEarly(2), false),
    ];
    for (mode, remembered) in flavours {
        for (wire, protobuf) in [(Wire::Protobuf, true), (Wire::Json, false)] {
            let what = format!("{mode:?}, {wire:?}");
            let server = serving(protobuf, mode).await;
            let (shared, tasks) =
                mirror(&server, &[ObjectKind::Pod], wire, InitialSync::WatchList).await;
            eventually(&what, || {
                shared.is_kind_synced(ObjectKind::Pod).then_some(())
            })
            .await;
            assert_eq!(shared.read().pod_count(), 60, "{what}");
            assert_eq!(pod_requests(&server), (1, 1), "{what}");

            // A relist (the watch's resourceVersion expired) while the server still does no
            // watch-list: it is asked again only if its failure may have passed.
            server.delete("pods", "web", "p-00");
            server.expire_watches();
            let again = usize::from(!remembered);
            eventually(&what, || {
                (pod_requests(&server) == (1 + again, 2)).then_some(())
            })
            .await;
            eventually(&what, || {
                (shared.is_kind_synced(ObjectKind::Pod) && shared.read().pod_count() == 59)
                    .then_some(())
            })
            .await;
            stop(tasks);
        }
    }
}

/// A watch-list that breaks off mid-way (bytes that are no event, or a stream cut inside one) after
/// some of its objects: the kind stays unsynced until a list has given the whole state, however long
/// that takes (here two failed lists first), and nothing panics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_watch_list_is_never_half_applied() {
    for mode in [WatchListMode::Corrupt(5), WatchListMode::Truncated(5)] {
        for (wire, protobuf) in [(Wire::Protobuf, true), (Wire::Json, false)] {
            let what = format!("{mode:?}, {wire:?}");
            let server = serving(protobuf, mode).await;
            server.fail_requests("GET", "/api/v1/pods?limit=500", &[500, 500]);
            let (shared, tasks) =
                mirror(&server, &[ObjectKind::Pod], wire, InitialSync::WatchList).await;
            let mut unsynced_with_some = false;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while !shared.is_kind_synced(ObjectKind::Pod) {
                let count = shared.read().pod_count();
                unsynced_with_some |= count > 0 && count < 60;
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{what}: never synced"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            assert_eq!(shared.read().pod_count(), 60, "{what}: synced with part");
            assert!(
                unsynced_with_some,
                "{what}: the broken stream's first objects were applied, unsynced"
            );
            let (watch_lists, _) = pod_requests(&server);
            assert_eq!(
                watch_lists, 3,
                "{what}: a passing failure, asked again on each try"
            );
            stop(tasks);
        }
    }
}

/// A relist through the watch-list (the watch's resourceVersion expired) removes what was deleted
/// while the watch could not see it, and leaves the kind synced with the server's state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_through_the_watch_list_removes_what_vanished() {
    for (wire, protobuf) in [(Wire::Protobuf, true), (Wire::Json, false)] {
        let server = serving(protobuf, WatchListMode::Served).await;
        let (shared, tasks) = mirror(&server, &CORE, wire, InitialSync::WatchList).await;
        synced(&shared).await;
        // The watch goes on after the initial events, on the same stream.
        server.apply(pod("web/late", "idle-1"));
        eventually("the watch saw the new pod", || {
            shared
                .read()
                .pod(&ObjectKey::new("web", "late"))
                .map(|_| ())
        })
        .await;
        assert_eq!(pod_requests(&server), (1, 0));
        let plain_watches = server
            .requests()
            .iter()
            .filter(|r| r.path == "/api/v1/pods" && r.query.contains("watch=true"))
            .count();
        assert_eq!(plain_watches, 1, "the watch-list's stream is the watch");

        // Gone without an event the watch could see (as behind a compacted history).
        server.forget("pods", "batch", "p-01");
        server.forget("nodes", "", "idle-2");
        server.expire_watches();
        eventually("the relist", || {
            (pod_requests(&server) == (2, 0)).then_some(())
        })
        .await;
        eventually("the vanished objects removed", || {
            let cache = shared.read();
            (cache.pod(&ObjectKey::new("batch", "p-01")).is_none()
                && cache.node("idle-2").is_none())
            .then_some(())
        })
        .await;
        synced(&shared).await;
        let state = mirrored(&shared);
        assert_eq!(state.pods.len(), 60, "{wire:?}: 60 + late - p-01");
        assert_eq!(state.nodes.len(), 3);
        stop(tasks);
    }
}
