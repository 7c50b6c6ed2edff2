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

/// In a domain of many pods a term is tried on the pods carrying a label its selector requires; what
/// is found, and the violator named (the first in node order), are those of trying every pod.
#[test]
fn in_a_large_domain_the_first_violator_in_node_order_is_named() {
    let by_zone = |selector: serde_json::Value, namespaces: &[&str]| {
        let mut term = json!({"labelSelector": selector, "topologyKey": "zone"});
        if !namespaces.is_empty() {
            term["namespaces"] = json!(namespaces);
        }
        json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    };
    let mut cluster = Cluster::new().node(
        node("far")
            .allocatable("64", "64Gi", 110)
            .label("zone", "z2"),
    );
    for n in 1..=5 {
        cluster = cluster.node(
            node(&format!("n{n}"))
                .allocatable("64", "64Gi", 110)
                .label("zone", "z1"),
        );
    }
    for i in 0..200 {
        cluster = cluster.pod(
            pod(&format!("a/filler-{i:03}"), &format!("n{}", 1 + i / 40))
                .requests("10m", "10Mi")
                .label("app", &format!("f{}", i % 20)),
        );
    }
    let plain =
        |key: &str, node: &str, app: &str| pod(key, node).requests("10m", "10Mi").label("app", app);
    let repelling = |key: &str, node: &str, affinity: serde_json::Value| {
        pod(key, node)
            .requests("10m", "10Mi")
            .spec("affinity", affinity)
    };
    let mut cluster = cluster
        .pod(plain("a/y-1", "n3", "y"))
        .pod(plain("a/y-0", "n4", "y"))
        .pod(plain("b/z-1", "n2", "z"))
        .pod(plain("a/z-far", "far", "z"))
        .pod(repelling(
            "a/x-labels",
            "n1",
            by_zone(json!({"matchLabels": {"app": "y"}}), &[]),
        ))
        .pod(repelling(
            "a/x-in",
            "n5",
            by_zone(
                json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["none", "y"]}]}),
                &[],
            ),
        ))
        .pod(repelling(
            "a/x-other-namespace",
            "n1",
            by_zone(json!({"matchLabels": {"app": "z"}}), &["b"]),
        ))
        // Its own namespace's z pod is in another zone, b's is out of its scope.
        .pod(repelling(
            "a/x-own-namespace",
            "n1",
            by_zone(json!({"matchLabels": {"app": "z"}}), &[]),
        ));
    let out =
        cluster.plan("mode: Evict\nstrategies:\n  removePodsViolatingInterPodAntiAffinity: {}\n");
    assert_eq!(
        out.evicted(),
        ["a/x-in", "a/x-labels", "a/x-other-namespace"]
    );
    for (pod, violator) in [
        ("a/x-in", "a/y-1"),
        ("a/x-labels", "a/y-1"),
        ("a/x-other-namespace", "b/z-1"),
    ] {
        assert!(
            out.reason(pod)
                .contains(&format!("violated by {violator} (same zone=z1)")),
            "{pod}: {}",
            out.reason(pod)
        );
    }
}
