use crate::testkit::*;
use serde_json::json;

fn cluster() -> Cluster {
    Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110))
        .pod(pod("a/week", "n1").requests("100m", "1Gi").created("2026-11-15T04:00:00Z"))
        .pod(pod("a/day", "n1").requests("100m", "1Gi"))
        .pod(pod("a/hour", "n1").requests("100m", "1Gi").created("2026-11-22T03:00:00Z"))
        .pod(
            pod("a/oom", "n1").requests("100m", "1Gi")
                .created("2026-11-17T04:00:00Z")
                .status(
                    "containerStatuses",
                    json!([{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 1,
                            "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]),
                ),
        )
        .pod(
            pod("a/done", "n1").requests("100m", "1Gi")
                .phase("Succeeded")
                .owned_by("Job", "batch")
                .status(
                    "conditions",
                    json!([{"type": "Ready", "status": "False", "reason": "PodCompleted",
                            "lastTransitionTime": "2026-11-21T22:00:00Z"}]),
                ),
        )
}

#[test]
fn evicts_pods_older_than_the_maximum_oldest_first() {
    let out =
        cluster().plan("mode: Evict\nstrategies:\n  podLifeTime: {maxPodLifeTimeSeconds: 7200}\n");
    // Each ReplicaSet has one pod: the budget allows one per job, so all go.
    assert_eq!(out.evicted(), ["a/week", "a/oom", "a/day", "a/done"]);
    assert!(out.reason("a/week").contains("age 7d0h > 2h0m"));
}

#[test]
fn states_exit_codes_and_owner_kinds() {
    let out = cluster().plan(
        "mode: Evict\nstrategies:\n  podLifeTime: {maxPodLifeTimeSeconds: 7200, states: [OOMKilled, Succeeded]}\n",
    );
    assert_eq!(out.evicted(), ["a/oom", "a/done"]);
    let out = cluster().plan("mode: Evict\nstrategies:\n  podLifeTime: {exitCodes: [137]}\n");
    assert_eq!(out.evicted(), ["a/oom"]);
    let out = cluster().plan(
        "mode: Evict\nstrategies:\n  podLifeTime: {maxPodLifeTimeSeconds: 7200, ownerKinds: {exclude: [Job]}}\n",
    );
    assert_eq!(out.evicted(), ["a/week", "a/oom", "a/day"]);
}

#[test]
fn conditions_with_time_since_transition() {
    let spec = |secs: u64| {
        format!(
            "mode: Evict\nstrategies:\n  podLifeTime:\n    states: [Succeeded]\n    conditions:\n    - {{reason: PodCompleted, minTimeSinceLastTransitionSeconds: {secs}}}\n"
        )
    };
    assert_eq!(cluster().plan(&spec(3600)).evicted(), ["a/done"]);
    assert!(cluster().plan(&spec(8 * 3600)).evicted().is_empty());
}

#[test]
fn needs_a_criterion() {
    let out = cluster().plan("mode: Evict\nstrategies:\n  podLifeTime: {}\n");
    assert!(out.error().is_some_and(|e| e.contains("at least one")));
}
