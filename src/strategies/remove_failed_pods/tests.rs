use crate::testkit::*;
use serde_json::json;

fn terminated(reason: &str, code: i32) -> serde_json::Value {
    json!([{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"reason": reason, "exitCode": code}}}])
}

fn cluster() -> Cluster {
    Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110))
        .pod(pod("a/running", "n1").requests("100m", "1Gi"))
        .pod(
            pod("a/affinity", "n1")
                .requests("100m", "1Gi")
                .phase("Failed")
                .status("reason", json!("NodeAffinity")),
        )
        .pod(
            pod("a/oom", "n1")
                .requests("100m", "1Gi")
                .phase("Failed")
                .status("containerStatuses", terminated("OOMKilled", 137)),
        )
        .pod(
            pod("a/job", "n1")
                .requests("100m", "1Gi")
                .phase("Failed")
                .owned_by("Job", "nightly")
                .created("2026-11-22T03:30:00Z")
                .status("containerStatuses", terminated("Error", 1)),
        )
        .pod(
            pod("a/bare", "n1")
                .requests("100m", "1Gi")
                .phase("Failed")
                .bare(),
        )
}

#[test]
fn evicts_failed_pods_and_bare_ones_only_when_asked() {
    let out = cluster().plan("mode: Evict\nstrategies:\n  removeFailedPods: {}\n");
    assert_eq!(out.evicted(), ["a/affinity", "a/oom", "a/job"]);
    assert!(out.detail("a/bare").contains("bare pod"));
    let out = cluster()
        .plan("mode: Evict\nstrategies:\n  removeFailedPods: {evictFailedBarePods: true}\n");
    assert_eq!(out.evicted(), ["a/affinity", "a/bare", "a/oom", "a/job"]);
    // Only failed bare pods, and only for this strategy: protection barePods holds elsewhere.
    let out = cluster()
        .pod(pod("a/bare-old", "n1").requests("100m", "1Gi").bare())
        .plan(
            "mode: Evict\nstrategies:\n  removeFailedPods: {evictFailedBarePods: true}\n  \
             podLifeTime: {maxPodLifeTimeSeconds: 1}\n",
        );
    assert!(out.detail("a/bare-old").contains("bare pod"));
}

#[test]
fn filters() {
    let run = |args: &str| {
        cluster()
            .plan(&format!(
                "mode: Evict\nstrategies:\n  removeFailedPods: {args}\n"
            ))
            .evicted()
    };
    assert_eq!(
        run("{reasons: [NodeAffinity, OOMKilled]}"),
        ["a/affinity", "a/oom"]
    );
    assert_eq!(run("{exitCodes: [1]}"), ["a/job"]);
    assert_eq!(run("{excludeOwnerKinds: [Job]}"), ["a/affinity", "a/oom"]);
    assert_eq!(
        run("{minPodLifetimeSeconds: 3600}"),
        ["a/affinity", "a/oom"]
    );
}
