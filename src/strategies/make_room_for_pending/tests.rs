use super::*;
use crate::cluster::ObjectKey;
use crate::testkit::*;

const PREEMPTABLE: (&str, &str) = ("volcano.sh/preemptable", "true");
const SPEC: &str = "mode: Evict\nstrategies:\n  makeRoomForPending: {}\ndefaults: {jobBudget: {maxUnavailable: 100}}\n";

fn pending(name: &str, cpu: &str, since: &str) -> PodBuilder {
    pod(name, "").requests(cpu, "1Gi").status(
        "conditions",
        serde_json::json!([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                            "lastTransitionTime": since}]),
    )
}

fn victim(name: &str, node: &str, cpu: &str) -> PodBuilder {
    pod(name, node)
        .requests(cpu, "1Gi")
        .label(PREEMPTABLE.0, PREEMPTABLE.1)
}

/// Two full 4-core nodes: n1 with preemptable pods of 1, 1 and 2 cores; n2 with 3 + 1 core.
fn full() -> Cluster {
    Cluster::new()
        .node(node("n1").allocatable("4", "16Gi", 110))
        .node(node("n2").allocatable("4", "16Gi", 110))
        .node(node("rz").allocatable("8", "16Gi", 110).zone("rz1"))
        .pod(victim("a/v1", "n1", "1"))
        .pod(victim("a/v2", "n1", "1"))
        .pod(victim("a/v3", "n1", "2"))
        .pod(victim("a/w1", "n2", "3"))
        .pod(pod("a/steady", "n2").requests("1", "1Gi"))
        .pod(victim("a/rz-pod", "rz", "8"))
}

#[test]
fn evicts_the_smallest_set_on_a_non_revocable_node() {
    let mut cluster = full().pod(pending("a/job", "3", "2026-11-22T03:00:00Z"));
    let out = cluster.plan(SPEC);
    // n1 needs v3 + one 1-core pod (2 evictions); n2 needs only w1 (1 eviction). The revocable node
    // is never used.
    assert_eq!(out.evicted(), ["a/w1"]);
    assert!(
        out.reason("a/w1")
            .contains("make room on node n2 for pending pod a/job")
    );
    let snapshot = cluster.cache.snapshot();
    let victims: Vec<_> = out
        .plan
        .evictions
        .iter()
        .map(|e| &e.candidate.pod)
        .collect();
    let pod = snapshot
        .unscheduled
        .get(&ObjectKey::new("a", "job"))
        .unwrap();
    assert!(fits_after(pod, snapshot.node("n2").unwrap(), &victims));
}

#[test]
fn the_set_is_minimal() {
    let mut cluster = full()
        .pod(pod("a/pin", "n2").requests("100m", "1Gi"))
        .pod(pending("a/job", "2", "2026-11-22T03:00:00Z"));
    // n2 has 100m over its 4 cores... n1: need 2 cores: v3 alone (not v1 + v2).
    let out = cluster.plan(SPEC);
    assert_eq!(out.evicted(), ["a/v3"]);
}

#[test]
fn nothing_happens_when_it_cannot_help_or_is_not_needed() {
    // Too big for any node even after evicting everything preemptable.
    let mut cluster = full().pod(pending("a/huge", "5", "2026-11-22T03:00:00Z"));
    assert!(cluster.plan(SPEC).evicted().is_empty());
    // Not pending long enough.
    let mut cluster = full().pod(pending("a/job", "3", "2026-11-22T03:58:00Z"));
    assert!(cluster.plan(SPEC).evicted().is_empty());
    // Preemptable pending pods never trigger it.
    let mut cluster = full()
        .pod(pending("a/job", "3", "2026-11-22T03:00:00Z").label(PREEMPTABLE.0, PREEMPTABLE.1));
    assert!(cluster.plan(SPEC).evicted().is_empty());
    // A selector no non-revocable node satisfies.
    let mut cluster = full().pod(
        pending("a/job", "3", "2026-11-22T03:00:00Z")
            .spec("nodeSelector", serde_json::json!({"gpu": "yes"})),
    );
    assert!(cluster.plan(SPEC).evicted().is_empty());
    // Fits somewhere already (a new empty node): something else keeps it pending.
    let mut cluster = full()
        .node(node("n3").allocatable("4", "16Gi", 110))
        .pod(pending("a/job", "3", "2026-11-22T03:00:00Z"));
    assert!(cluster.plan(SPEC).evicted().is_empty());
}

#[test]
fn taints_exclude_nodes_and_gates_refuse_the_whole_set() {
    let mut cluster = Cluster::new()
        .node(
            node("n1")
                .allocatable("4", "16Gi", 110)
                .taint("dedicated", "x", "NoSchedule"),
        )
        .node(node("n2").allocatable("4", "16Gi", 110))
        .pod(victim("a/v1", "n1", "4"))
        .pod(victim("a/v2", "n2", "2"))
        .pod(victim("a/v3", "n2", "2").label("volcano.sh/cooldown-time", "48h"))
        .pod(pending("a/job", "4", "2026-11-22T03:00:00Z"));
    // n1 is tainted; n2 needs v2 and v3, but v3 is in cooldown: the pool has only v2, which is not
    // enough, so nothing is evicted (not even v2).
    let out = cluster.plan(SPEC);
    assert!(out.evicted().is_empty());
    // With a total limit of 1, the set of two is refused as a whole.
    let mut cluster = Cluster::new()
        .node(node("n2").allocatable("4", "16Gi", 110))
        .pod(victim("a/v2", "n2", "2"))
        .pod(victim("a/v3", "n2", "2"))
        .pod(pending("a/job", "4", "2026-11-22T03:00:00Z"));
    let out = cluster.plan(&format!("{SPEC}limits: {{total: 1}}\n"));
    assert!(out.evicted().is_empty());
    assert_eq!(out.skipped(), ["a/v3 limit"]);
    assert!(out.detail("a/v3").contains("none made"));
}

#[test]
fn two_pending_pods_do_not_count_the_same_room() {
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("4", "16Gi", 110))
        .pod(victim("a/v1", "n1", "2"))
        .pod(victim("a/v2", "n1", "2"))
        .pod(pending("a/first", "2", "2026-11-22T02:00:00Z"))
        .pod(pending("a/second", "2", "2026-11-22T03:00:00Z"));
    let out = cluster.plan(SPEC);
    assert_eq!(
        out.evicted(),
        ["a/v1", "a/v2"],
        "one victim per pending pod"
    );
}

#[test]
fn only_a_pending_pod_triggers_it() {
    // An unbound pod that failed (or succeeded) still carries its Unschedulable condition but will
    // never run: making room for it would evict for nothing.
    let failed = |phase: &str| {
        Cluster::new()
            .node(node("n1").allocatable("4", "16Gi", 110))
            .pod(victim("a/v1", "n1", "4"))
            .pod(pending("a/job", "2", "2026-11-22T02:00:00Z").phase(phase))
    };
    assert!(failed("Failed").plan(SPEC).evicted().is_empty());
    assert!(failed("Succeeded").plan(SPEC).evicted().is_empty());
    assert_eq!(failed("Pending").plan(SPEC).evicted(), ["a/v1"]);
}

#[test]
fn room_freed_by_an_earlier_strategy_is_not_made_again() {
    // podLifeTime evicts the old 2-core pod: the pending pod will fit in the room it leaves, so the
    // preemptable pod stays (making room again would evict it too).
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("4", "16Gi", 110))
        .pod(
            pod("a/old", "n1")
                .requests("2", "1Gi")
                .created("2026-09-22T16:00:00Z"),
        )
        .pod(victim("a/spot", "n1", "2").created("2026-11-22T03:00:00Z"))
        .pod(pending("a/job", "2", "2026-11-22T02:00:00Z"));
    let out = cluster.plan(
        "mode: Evict\nstrategies:\n  podLifeTime: {maxPodLifeTimeSeconds: 86400}\n  makeRoomForPending: {}\ndefaults: {jobBudget: {maxUnavailable: 100}}\n",
    );
    assert_eq!(out.evicted(), ["a/old"]);
}

#[test]
fn a_node_running_a_pod_with_unreadable_requests_is_not_made_room_on() {
    // n1 looks as if evicting v1 would free it, but another pod's request cannot be read (above
    // tidal's 2^52 cap): the node may be full whatever is evicted.
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("4", "16Gi", 110))
        .pod(victim("a/v1", "n1", "2"))
        .pod(pod("a/huge", "n1").requests("1", "5Pi"))
        .pod(pending("a/job", "3", "2026-11-22T02:00:00Z"));
    assert!(cluster.plan(SPEC).evicted().is_empty());
}
