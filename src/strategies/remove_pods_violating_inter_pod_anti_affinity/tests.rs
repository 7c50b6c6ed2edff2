use crate::testkit::*;
use serde_json::json;

fn repels(app: &str, key: &str) -> serde_json::Value {
    json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key
    }]}})
}

/// A pod labelled `app=<app>` that repels its own app on its host.
fn repelling(name: &str, node: &str, cpu: &str, app: &str) -> PodBuilder {
    pod(name, node)
        .requests(cpu, "1Gi")
        .label("app", app)
        .spec("affinity", repels(app, "kubernetes.io/hostname"))
}

#[test]
fn of_two_pods_that_repel_each_other_only_the_lower_priority_one_goes() {
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110).label("zone", "a"))
        .node(node("n2").allocatable("4", "8Gi", 110).label("zone", "a"))
        .pod(repelling("a/db-1", "n1", "100m", "db").priority(100))
        .pod(repelling("a/db-2", "n1", "100m", "db").priority(50))
        .pod(repelling("a/db-3", "n2", "100m", "db"))
        // In another namespace: the default term scope is the pod's own namespace.
        .pod(pod("b/db", "n2").requests("100m", "1Gi").label("app", "db"));
    let out =
        cluster.plan("mode: Evict\nstrategies:\n  removePodsViolatingInterPodAntiAffinity: {}\n");
    assert_eq!(out.evicted(), ["a/db-2"]);
    assert!(out.reason("a/db-2").contains("violated by a/db-1"));
}

#[test]
fn wider_topology_and_namespace_selectors() {
    let term = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "zone",
        "namespaceSelector": {"matchLabels": {"team": "blue"}}
    }]}});
    let mut cluster = Cluster::new()
        .namespace("a", &[("team", "red")])
        .namespace("b", &[("team", "blue")])
        .node(node("n1").allocatable("4", "8Gi", 110).label("zone", "z1"))
        .node(node("n2").allocatable("4", "8Gi", 110).label("zone", "z1"))
        .node(node("n3").allocatable("4", "8Gi", 110).label("zone", "z2"))
        .pod(
            pod("a/web", "n1")
                .requests("100m", "1Gi")
                .spec("affinity", term.clone()),
        )
        .pod(
            pod("a/web-far", "n3")
                .requests("100m", "1Gi")
                .spec("affinity", term),
        )
        .pod(
            pod("b/cache", "n2")
                .requests("100m", "1Gi")
                .label("app", "cache"),
        );
    let out =
        cluster.plan("mode: Evict\nstrategies:\n  removePodsViolatingInterPodAntiAffinity: {}\n");
    assert_eq!(out.evicted(), ["a/web"]);
}

#[test]
fn a_pod_evicted_by_an_earlier_strategy_no_longer_violates() {
    // podLifeTime runs first and evicts the old pod of the pair: the young one then repels
    // nothing and stays (counting the evicted pod would send both).
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110))
        .node(node("n2").allocatable("4", "8Gi", 110))
        .pod(repelling("a/a-old", "n1", "100m", "x").created("2026-09-22T16:00:00Z"))
        .pod(repelling("a/b-young", "n1", "100m", "x").created("2026-11-22T03:00:00Z"));
    let out = cluster.plan(
        "mode: Evict\nstrategies:\n  podLifeTime: {maxPodLifeTimeSeconds: 86400}\n  removePodsViolatingInterPodAntiAffinity: {}\n",
    );
    assert_eq!(out.evicted(), ["a/a-old"]);
    assert_eq!(
        out.plan.evictions[0].candidate.strategy.name(),
        "podLifeTime"
    );
}

#[test]
fn under_node_fit_a_pod_with_nowhere_to_go_stays_and_its_partner_goes() {
    // db-2 (lower priority) violates, but no other node has room for it; nodeFit refuses it, and
    // it still counts against db-1, which fits n2 and goes instead.
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110))
        .node(node("n2").allocatable("1", "8Gi", 110))
        .pod(repelling("a/db-1", "n1", "500m", "db").priority(100))
        .pod(repelling("a/db-2", "n1", "2", "db").priority(50));
    let out = cluster.plan(
        "mode: Evict\nstrategies:\n  removePodsViolatingInterPodAntiAffinity: {}\nprotections: {nodeFit: true}\ndefaults: {jobBudget: {maxUnavailable: 100%}}\n",
    );
    assert_eq!(out.skipped(), ["a/db-2 nodefit"]);
    assert_eq!(out.evicted(), ["a/db-1"]);
}
