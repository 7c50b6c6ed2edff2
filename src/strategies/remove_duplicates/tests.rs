use crate::testkit::*;

fn replica(name: &str, node: &str) -> PodBuilder {
    pod(name, node)
        .requests("100m", "128Mi")
        .owned_by("ReplicaSet", "web")
}

#[test]
fn keeps_a_fair_share_per_node_and_evicts_the_newest() {
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110))
        .node(node("n2").allocatable("4", "8Gi", 110))
        .node(node("n3").allocatable("4", "8Gi", 110))
        .pod(replica("a/web-1", "n1").created("2026-11-21T02:00:00Z"))
        .pod(replica("a/web-2", "n1").created("2026-11-21T03:00:00Z"))
        .pod(replica("a/web-3", "n1").created("2026-11-21T04:00:00Z"))
        .pod(replica("a/web-4", "n1").created("2026-11-21T05:00:00Z"))
        .pod(replica("a/web-5", "n2"))
        .pod(
            pod("a/other", "n1")
                .requests("100m", "128Mi")
                .owned_by("ReplicaSet", "api"),
        );
    // 5 pods over 3 nodes: at most 2 per node; n1 has 4, so its 2 newest go. The budget of a job
    // without one is 1 per round: the other replicas, tried in turn, are refused.
    let out = cluster.plan("mode: Evict\nstrategies:\n  removeDuplicates: {}\n");
    assert_eq!(out.evicted(), ["a/web-4"]);
    assert_eq!(
        out.skipped(),
        ["a/web-3 budget", "a/web-2 budget", "a/web-1 budget"]
    );
    let out = cluster.plan(
        "mode: Evict\nstrategies:\n  removeDuplicates: {}\ndefaults: {jobBudget: {maxUnavailable: 2}}\n",
    );
    assert_eq!(out.evicted(), ["a/web-4", "a/web-3"]);
}

#[test]
fn different_images_are_not_duplicates_and_excluded_kinds_stay() {
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110))
        .node(node("n2").allocatable("4", "8Gi", 110))
        .pod(replica("a/web-1", "n1"))
        .pod(replica("a/web-2", "n1").image("example.com/app:2"));
    assert!(
        cluster
            .plan("mode: Evict\nstrategies:\n  removeDuplicates: {}\n")
            .evicted()
            .is_empty()
    );
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110))
        .node(node("n2").allocatable("4", "8Gi", 110))
        .pod(replica("a/web-1", "n1"))
        .pod(replica("a/web-2", "n1").created("2026-11-21T16:00:00Z"));
    assert_eq!(
        cluster
            .plan("mode: Evict\nstrategies:\n  removeDuplicates: {}\n")
            .evicted(),
        ["a/web-2"]
    );
    assert!(
        cluster
            .plan(
                "mode: Evict\nstrategies:\n  removeDuplicates: {excludeOwnerKinds: [ReplicaSet]}\n"
            )
            .evicted()
            .is_empty()
    );
}

#[test]
fn no_eviction_without_another_feasible_node() {
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110))
        .node(
            node("n2")
                .allocatable("4", "8Gi", 110)
                .taint("dedicated", "x", "NoSchedule"),
        )
        .node(node("n3").allocatable("4", "8Gi", 110).unschedulable())
        .pod(replica("a/web-1", "n1"))
        .pod(replica("a/web-2", "n1"));
    assert!(
        cluster
            .plan("mode: Evict\nstrategies:\n  removeDuplicates: {}\n")
            .evicted()
            .is_empty()
    );
}

const WITH_NODE_FIT: &str = "mode: Evict\nstrategies:\n  removeDuplicates: {}\nprotections: {nodeFit: true}\ndefaults: {jobBudget: {maxUnavailable: 100%}}\n";

#[test]
fn under_node_fit_only_duplicates_with_somewhere_to_go_are_evicted() {
    // Four replicas on n1 over two feasible nodes: two should go, but n2 has room for one.
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110))
        .node(node("n2").allocatable("1", "8Gi", 110))
        .pod(replica("a/web-1", "n1").created("2026-11-21T02:00:00Z"))
        .pod(replica("a/web-2", "n1").created("2026-11-21T03:00:00Z"))
        .pod(replica("a/web-3", "n1").created("2026-11-21T04:00:00Z"))
        .pod(replica("a/web-4", "n1").created("2026-11-21T05:00:00Z"))
        .pod(pod("a/filler", "n2").requests("800m", "1Gi"));
    let out = cluster.plan(WITH_NODE_FIT);
    // n2 has 200m free: room for both replicas that should go.
    assert_eq!(out.evicted(), ["a/web-4", "a/web-3"]);
    let mut cluster = cluster.pod(pod("a/filler", "n2").requests("850m", "1Gi"));
    let out = cluster.plan(WITH_NODE_FIT);
    // 150m free on n2: one replica fits; the next is refused, and the others are tried in turn.
    assert_eq!(out.evicted(), ["a/web-4"]);
    assert_eq!(
        out.skipped(),
        ["a/web-3 nodefit", "a/web-2 nodefit", "a/web-1 nodefit"]
    );
}

#[test]
fn replicas_evicted_by_an_earlier_strategy_leave_their_node_but_count_in_the_total() {
    // podLifeTime evicts the two oldest of four replicas on n1: the two left are within their
    // share (4 over 2 nodes: 2 per node), so removeDuplicates has nothing to do: counting only the
    // replicas left would evict the other two as well, emptying n1.
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110))
        .node(node("n2").allocatable("4", "8Gi", 110))
        .pod(replica("a/web-1", "n1").created("2026-09-22T16:00:00Z"))
        .pod(replica("a/web-2", "n1").created("2026-09-23T16:00:00Z"))
        .pod(replica("a/web-3", "n1"))
        .pod(replica("a/web-4", "n1"));
    let out = cluster.plan(
        "mode: Evict\nstrategies:\n  podLifeTime: {maxPodLifeTimeSeconds: 864000}\n  removeDuplicates: {}\ndefaults: {jobBudget: {maxUnavailable: 100%}}\n",
    );
    assert_eq!(out.evicted(), ["a/web-1", "a/web-2"]);
}

#[test]
fn feasibility_is_per_placement_and_a_pod_that_fits_nowhere_else_stays() {
    // Three replicas on n1; the newest carries a node selector no node matches (patched after it
    // was scheduled). The group could spread over three nodes, so n1 keeps one: the two others
    // go, the stuck one stays, whatever the pods are called. A plan that followed one sample pod
    // would depend on the names: named first, the stuck pod would make the whole group look
    // unplaceable (nothing evicted); named last, it would be evicted itself although it fits no
    // node.
    for stuck in ["a/web-0-stuck", "a/web-9-stuck"] {
        let mut cluster = Cluster::new()
            .node(node("n1").allocatable("4", "8Gi", 110))
            .node(node("n2").allocatable("4", "8Gi", 110))
            .node(node("n3").allocatable("4", "8Gi", 110))
            .pod(replica("a/web-1", "n1").created("2026-11-21T02:00:00Z"))
            .pod(replica("a/web-2", "n1").created("2026-11-21T03:00:00Z"))
            .pod(
                replica(stuck, "n1")
                    .created("2026-11-21T04:00:00Z")
                    .spec("nodeSelector", serde_json::json!({"disk": "none"})),
            );
        let out = cluster.plan(
            "mode: Evict\nstrategies:\n  removeDuplicates: {}\ndefaults: {jobBudget: {maxUnavailable: 100%}}\n",
        );
        assert_eq!(out.evicted(), ["a/web-2", "a/web-1"], "{stuck}");
        assert!(
            out.reason("a/web-2")
                .contains("3 pods over 3 feasible nodes"),
            "{}",
            out.reason("a/web-2")
        );
    }
}

#[test]
fn duplicates_spread_only_over_nodes_tidals_placement_rules_allow() {
    // Two non-preemptable replicas on n1; the only other node is revocable: nowhere to spread.
    let mut cluster = Cluster::new()
        .zone(zone("rz").window("00:00-00:00"))
        .node(node("n1").allocatable("4", "8Gi", 110))
        .node(node("rev").allocatable("4", "8Gi", 110).zone("rz"))
        .pod(replica("a/web-1", "n1"))
        .pod(replica("a/web-2", "n1"));
    let plan = "mode: Evict\nstrategies:\n  removeDuplicates: {}\n";
    assert!(cluster.plan(plan).evicted().is_empty());
    // Preemptable ones may use the open zone's node.
    let mut cluster = cluster
        .pod(replica("a/web-1", "n1").annotation("volcano.sh/preemptable", "true"))
        .pod(
            replica("a/web-2", "n1")
                .annotation("volcano.sh/preemptable", "true")
                .created("2026-11-21T16:00:00Z"),
        );
    assert_eq!(cluster.plan(plan).evicted(), ["a/web-2"]);
}
