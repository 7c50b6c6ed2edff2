use crate::testkit::*;
use serde_json::json;

fn cluster() -> Cluster {
    Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110).taint("dedicated", "gpu", "NoSchedule"))
        .node(node("n2").allocatable("4", "8Gi", 110).taint("soft", "x", "PreferNoSchedule"))
        .node(node("n3").allocatable("4", "8Gi", 110).taint("gone", "x", "NoExecute"))
        .pod(pod("a/plain", "n1").requests("100m", "1Gi"))
        .pod(pod("a/tolerant", "n1").requests("100m", "1Gi").spec(
            "tolerations",
            json!([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]),
        ))
        .pod(pod("a/wildcard", "n1").requests("100m", "1Gi").spec("tolerations", json!([{"operator": "Exists"}])))
        .pod(pod("a/soft", "n2").requests("100m", "1Gi"))
        .pod(pod("a/noexec", "n3").requests("100m", "1Gi"))
        .pod(pod("a/ds", "n1").requests("100m", "1Gi").owned_by("DaemonSet", "agent"))
        .pod(pod("a/done", "n1").requests("100m", "1Gi").phase("Succeeded"))
}

#[test]
fn evicts_only_untolerated_no_schedule_by_default() {
    let out = cluster().plan("mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints: {}\n");
    assert_eq!(out.evicted(), ["a/plain"]);
    assert_eq!(
        out.skipped(),
        ["a/ds protected"],
        "DaemonSet pods are protected"
    );
    assert!(out.reason("a/plain").contains("dedicated=gpu:NoSchedule"));
}

#[test]
fn prefer_no_schedule_on_request() {
    let out = cluster().plan(
        "mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints: {includePreferNoSchedule: true}\n",
    );
    assert_eq!(out.evicted(), ["a/plain", "a/soft"]);
}

#[test]
fn excluded_and_included_taints() {
    let out = cluster().plan(
        "mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints: {excludedTaints: [dedicated]}\n",
    );
    assert!(out.evicted().is_empty());
    let out = cluster().plan(
        "mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints: {excludedTaints: [dedicated=cpu]}\n",
    );
    assert_eq!(
        out.evicted(),
        ["a/plain"],
        "key=value excludes that value only"
    );
    let out = cluster().plan(
        "mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints:\n    includedTaints: [soft]\n    includePreferNoSchedule: true\n",
    );
    assert_eq!(out.evicted(), ["a/soft"]);
    let out = cluster().plan(
        "mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints: {includedTaints: [a], excludedTaints: [b]}\n",
    );
    assert!(out.error().is_some_and(|e| e.contains("not both")));
}

#[test]
fn daemon_set_protection_can_be_lifted() {
    let out = cluster().plan(
        "mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints: {}\nprotections: {daemonSetPods: false}\n",
    );
    assert_eq!(out.evicted(), ["a/ds", "a/plain"]);
}
