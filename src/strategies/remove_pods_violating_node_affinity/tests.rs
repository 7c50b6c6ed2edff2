use crate::testkit::*;
use serde_json::json;

fn required_zone(zone: &str) -> serde_json::Value {
    json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": [zone]}]}]
    }}})
}

fn preferred_zone(zone: &str, weight: i32) -> serde_json::Value {
    json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": weight,
        "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": [zone]}]}
    }]}})
}

#[test]
fn required_affinity_evicts_only_when_another_node_fits() {
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110).label("zone", "a"))
        .node(node("n2").allocatable("4", "8Gi", 110).label("zone", "b"))
        .node(node("n3").allocatable("1", "8Gi", 110).label("zone", "c"))
        .pod(
            pod("a/wants-b", "n1")
                .requests("1", "1Gi")
                .spec("affinity", required_zone("b")),
        )
        .pod(
            pod("a/wants-a", "n1")
                .requests("1", "1Gi")
                .spec("affinity", required_zone("a")),
        )
        // Would fit zone c by selector, but n3 has no room for 2 cores: stays.
        .pod(
            pod("a/wants-c", "n1")
                .requests("2", "1Gi")
                .spec("affinity", required_zone("c")),
        )
        .pod(
            pod("a/selector-b", "n1")
                .requests("1", "1Gi")
                .spec("nodeSelector", json!({"zone": "b"})),
        );
    let out = cluster.plan("mode: Evict\nstrategies:\n  removePodsViolatingNodeAffinity: {}\n");
    assert_eq!(out.evicted(), ["a/selector-b", "a/wants-b"]);
    assert!(out.reason("a/wants-b").contains("node n2 would"));
    // The descheduler's rule: a node selector alone is not node affinity.
    let out = cluster.plan(
        "mode: Evict\nstrategies:\n  removePodsViolatingNodeAffinity: {nodeSelectorAsRequired: false}\n",
    );
    assert_eq!(out.evicted(), ["a/wants-b"]);
}

#[test]
fn a_node_where_required_anti_affinity_forbids_the_pod_is_no_destination() {
    // wants-b's only node in zone b runs db-1, which wants-b repels: it stays, as the
    // descheduler's plugin keeps it (its NodeFit checks anti-affinity).
    let mut affinity = required_zone("b");
    affinity["podAntiAffinity"] = json!({"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"
    }]});
    let cluster = || {
        Cluster::new()
            .node(node("n1").allocatable("4", "8Gi", 110).label("zone", "a"))
            .node(node("n2").allocatable("4", "8Gi", 110).label("zone", "b"))
            .pod(
                pod("a/wants-b", "n1")
                    .requests("1", "1Gi")
                    .spec("affinity", affinity.clone()),
            )
    };
    let spec = "mode: Evict\nstrategies:\n  removePodsViolatingNodeAffinity: {}\n";
    assert_eq!(cluster().plan(spec).evicted(), ["a/wants-b"]);
    let mut with_db = cluster().pod(pod("a/db-1", "n2").label("app", "db"));
    assert!(with_db.plan(spec).evicted().is_empty());
}

#[test]
fn unschedulable_tainted_and_unreadable_nodes_are_no_destination() {
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110).label("zone", "a"))
        .node(
            node("n2")
                .allocatable("4", "8Gi", 110)
                .label("zone", "b")
                .unschedulable(),
        )
        .node(
            node("n3")
                .allocatable("4", "8Gi", 110)
                .label("zone", "b")
                .taint("k", "v", "NoSchedule"),
        )
        .node(
            node("n4")
                .allocatable("4", "8Gi", 110)
                .label("zone", "b")
                .not_ready(),
        )
        // Ready and empty-looking, but running a pod whose request tidal cannot read.
        .node(node("n5").allocatable("4", "8Gi", 110).label("zone", "b"))
        .pod(pod("a/huge", "n5").requests("1", "5Pi"))
        .pod(
            pod("a/wants-b", "n1")
                .requests("1", "1Gi")
                .spec("affinity", required_zone("b")),
        );
    let out = cluster.plan("mode: Evict\nstrategies:\n  removePodsViolatingNodeAffinity: {}\n");
    assert!(out.evicted().is_empty());
}

#[test]
fn preferred_affinity_moves_to_a_strictly_better_node() {
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110).label("zone", "a"))
        .node(node("n2").allocatable("4", "8Gi", 110).label("zone", "b"))
        .pod(
            pod("a/prefers-b", "n1")
                .requests("1", "1Gi")
                .spec("affinity", preferred_zone("b", 10)),
        )
        .pod(
            pod("a/prefers-a", "n1")
                .requests("1", "1Gi")
                .spec("affinity", preferred_zone("a", 10)),
        )
        .pod(
            pod("a/prefers-c", "n1")
                .requests("1", "1Gi")
                .spec("affinity", preferred_zone("c", 10)),
        );
    let spec = "mode: Evict\nstrategies:\n  removePodsViolatingNodeAffinity:\n    nodeAffinityType: [preferredDuringSchedulingIgnoredDuringExecution]\n";
    let out = cluster.plan(spec);
    assert_eq!(out.evicted(), ["a/prefers-b"]);
    assert!(
        out.reason("a/prefers-b")
            .contains("scores 0 on node n1 but 10 on node n2")
    );
    let out = cluster.plan("mode: Evict\nstrategies:\n  removePodsViolatingNodeAffinity: {}\n");
    assert!(
        out.evicted().is_empty(),
        "preferred terms are ignored by default"
    );
}
