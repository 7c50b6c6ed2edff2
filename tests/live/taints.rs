//! Closed-zone taints applied through a (fake) API server: added on the nodes of a closed zone next to
//! the taints others put there, removed when the zone opens, and left alone when already right.

use crate::support::*;
#[allow(unused_imports)]
use k8s_openapi::api::core::v1::Node;
use serde_json::{Value, json};
use tidal::{
    api::RevocableZone,
    cluster::{ClusterCache, Ingest},
    controller::taints,
    framework::zone_views,
    runtime::ClientArgs,
};

fn with_taints(node: NodeBuilder, taints: Value) -> NodeBuilder {
    node.patch(json!({"spec": {"taints": taints}}))
}

/// tidal's view of the server's nodes and zones, as the controller's cache would hold it.
fn snapshot_of(server: &FakeApiServer) -> tidal::cluster::Snapshot {
    let mut cache = ClusterCache::new();
    for node in server.list("api/v1", "nodes") {
        serde_json::from_value::<Node>(node)
            .unwrap()
            .apply_to(&mut cache, jiff::Timestamp::UNIX_EPOCH)
            .unwrap();
    }
    for zone in server.list("apis/tidal.dev/v1alpha1", "revocablezones") {
        serde_json::from_value::<RevocableZone>(zone)
            .unwrap()
            .apply_to(&mut cache, jiff::Timestamp::UNIX_EPOCH)
            .unwrap();
    }
    cache.snapshot()
}

fn taints_of(server: &FakeApiServer, node: &str) -> Value {
    server.get("nodes", "", node).unwrap()["spec"]
        .get("taints")
        .cloned()
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn taints_follow_the_zone_and_keep_everyone_elses() {
    let server = Scenario::start().await;
    let gpu = json!({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"});
    server.apply(with_taints(node("rev-1").zone("rz"), json!([gpu])));
    server.apply(with_taints(
        node("rev-2").zone("rz"),
        json!([{"key": "tidal.dev/zone-closed", "value": "old-name", "effect": "NoSchedule"}]),
    ));
    server.apply(node("std-1"));
    server.apply(zone("rz").window(&closed_window()).evict_period("1m"));
    let client = ClientArgs {
        kubeconfig: Some(server.kubeconfig("t")),
        context: None,
    }
    .client()
    .await
    .unwrap();
    let ours = json!({"key": "tidal.dev/zone-closed", "value": "rz", "effect": "NoSchedule"});

    // Closed: both zone nodes carry the taint; rev-1 keeps its GPU taint; std-1 is not touched.
    let snapshot = snapshot_of(&server);
    let views = zone_views(&snapshot, jiff::Timestamp::now()).0;
    let outcome = taints::reconcile(&client, &snapshot, &views).await;
    assert_eq!(outcome.tainted, vec!["rev-1", "rev-2"], "{outcome:?}");
    assert!(outcome.failed.is_empty(), "{outcome:?}");
    assert_eq!(taints_of(&server, "rev-1"), json!([gpu, ours]));
    assert_eq!(taints_of(&server, "rev-2"), json!([ours]));
    assert_eq!(taints_of(&server, "std-1"), Value::Null);

    // Nothing left to do.
    let snapshot = snapshot_of(&server);
    let views = zone_views(&snapshot, jiff::Timestamp::now()).0;
    assert!(taints::plan(&snapshot, &views).is_empty());

    // A stale snapshot (the change already made) is checked against the node read fresh: no write.
    let stale = taints::apply(
        &client,
        &[taints::TaintChange {
            node: "rev-2".to_owned(),
            zone: Some("rz".to_owned()),
            taints: vec![taints::zone_taint("rz")],
        }],
    )
    .await;
    assert_eq!(stale.unchanged, vec!["rev-2"]);

    // A replica that lost its lease writes nothing.
    server.update("revocablezones", "", "rz", |z| {
        z["spec"]["windows"] = json!([{"time": open_window()}]);
    });
    let snapshot = snapshot_of(&server);
    let views = zone_views(&snapshot, jiff::Timestamp::now()).0;
    let changes = taints::plan(&snapshot, &views);
    assert_eq!(changes.len(), 2);
    let refused = taints::apply_while(&client, &changes, || false).await;
    assert_eq!(refused.failed.len(), 2);
    assert_eq!(taints_of(&server, "rev-2"), json!([ours]));

    // Open: the taint goes, the GPU taint stays.
    let outcome = taints::apply(&client, &changes).await;
    assert_eq!(outcome.untainted, vec!["rev-1", "rev-2"], "{outcome:?}");
    assert_eq!(taints_of(&server, "rev-1"), json!([gpu]));
    let rev2 = taints_of(&server, "rev-2");
    assert!(rev2.is_null() || rev2 == json!([]), "{rev2}");
}

/// Through `tidal run` (taints on by default): the closed zone's node is tainted by the leader's cycle,
/// and the taint goes once the zone is edited open, without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_keeps_the_taint_in_line_with_the_zone() {
    let server = Scenario::start().await;
    server.apply(node("rev-1").zone("rz"));
    server.apply(node("std-1"));
    server.apply(zone("rz").window(&closed_window()).evict_period("1m"));
    server.apply(policy(json!({"mode": "Evict", "interval": "200ms"})).named("tdm"));
    let controller = server.controller();
    let ours = json!([{"key": "tidal.dev/zone-closed", "value": "rz", "effect": "NoSchedule"}]);

    eventually("the closed zone's node is tainted", || {
        (taints_of(&server, "rev-1") == ours).then_some(())
    })
    .await;
    assert_eq!(taints_of(&server, "std-1"), Value::Null);

    server.update("revocablezones", "", "rz", |z| {
        z["spec"]["windows"] = json!([{"time": open_window()}]);
    });
    eventually("the open zone's node is untainted", || {
        let taints = taints_of(&server, "rev-1");
        (taints.is_null() || taints == json!([])).then_some(())
    })
    .await;
    controller.stop().await;
}

/// `--zone-taints=false` (chart value `zoneTaints.enabled: false`): nodes are never patched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zone_taints_off_leaves_nodes_alone() {
    let server = Scenario::start().await;
    server.apply(node("rev-1").zone("rz"));
    server.apply(zone("rz").window(&closed_window()).evict_period("1m"));
    server.apply(policy(json!({"mode": "Evict", "interval": "200ms"})).named("tdm"));
    let controller =
        server.controller_with("a", &["--leader-elect", "false", "--zone-taints", "false"]);
    controller.wait_cycles(3.0).await;
    assert_eq!(taints_of(&server, "rev-1"), Value::Null);
    let node_writes = server
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && r.path.contains("/nodes/"))
        .count();
    assert_eq!(node_writes, 0);
    controller.stop().await;
}

/// Between cycles, and with no DeschedulingPolicy at all (the chart's default): a node labelled into
/// a closed zone is tainted, a taint removed by hand comes back, and a failed patch is retried soon
/// rather than at the zone's next transition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn taints_follow_node_changes_and_failed_patches_are_retried_without_policies() {
    let server = Scenario::start().await;
    server.apply(node("rev-1").zone("rz"));
    server.apply(node("std-1"));
    server.apply(zone("rz").window(&closed_window()).evict_period("1m"));
    server.fail_requests("PATCH", "/nodes/rev-1", &[500, 500, 500]);
    let controller = server.controller();
    let ours = json!([{"key": "tidal.dev/zone-closed", "value": "rz", "effect": "NoSchedule"}]);

    eventually("the node tainted despite failed patches", || {
        (taints_of(&server, "rev-1") == ours).then_some(())
    })
    .await;
    let failed = server
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH" && r.path.ends_with("/nodes/rev-1") && r.code == 500)
        .count();
    assert_eq!(failed, 3);

    server.update("nodes", "", "std-1", |n| {
        n["metadata"]["labels"]["volcano.sh/revocable-zone"] = json!("rz");
    });
    eventually("the node labelled into the closed zone is tainted", || {
        (taints_of(&server, "std-1") == ours).then_some(())
    })
    .await;

    server.update("nodes", "", "rev-1", |n| {
        n["spec"]["taints"] = Value::Null;
    });
    eventually("the taint removed by hand comes back", || {
        (taints_of(&server, "rev-1") == ours).then_some(())
    })
    .await;
    controller.stop().await;
}
