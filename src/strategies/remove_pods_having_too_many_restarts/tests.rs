use crate::testkit::*;
use serde_json::json;

fn statuses(restarts: &[i32], waiting: Option<&str>) -> serde_json::Value {
    json!(restarts
        .iter()
        .map(|r| {
            let state = match waiting {
                Some(reason) => json!({"waiting": {"reason": reason}}),
                None => json!({"running": {}}),
            };
            json!({"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": r, "state": state})
        })
        .collect::<Vec<_>>())
}

fn cluster() -> Cluster {
    Cluster::new()
        .node(node("n1").allocatable("4", "8Gi", 110))
        .pod(
            pod("a/many", "n1")
                .requests("100m", "1Gi")
                .status("containerStatuses", statuses(&[3, 2], None)),
        )
        .pod(
            pod("a/few", "n1")
                .requests("100m", "1Gi")
                .status("containerStatuses", statuses(&[4], None)),
        )
        .pod(
            pod("a/crashing", "n1")
                .requests("100m", "1Gi")
                .phase("Running")
                .status(
                    "containerStatuses",
                    statuses(&[9], Some("CrashLoopBackOff")),
                ),
        )
        .pod(
            pod("a/init", "n1")
                .requests("100m", "1Gi")
                .status("containerStatuses", statuses(&[1], None))
                .status("initContainerStatuses", statuses(&[8], None)),
        )
}

#[test]
fn threshold_counts_app_containers_and_optionally_init_containers() {
    let out = cluster().plan(
        "mode: Evict\nstrategies:\n  removePodsHavingTooManyRestarts: {podRestartThreshold: 5}\n",
    );
    assert_eq!(out.evicted(), ["a/crashing", "a/many"]);
    let out = cluster().plan(
        "mode: Evict\nstrategies:\n  removePodsHavingTooManyRestarts: {podRestartThreshold: 5, includingInitContainers: true}\n",
    );
    assert_eq!(out.evicted(), ["a/crashing", "a/init", "a/many"]);
}

#[test]
fn states_filter() {
    let out = cluster().plan(
        "mode: Evict\nstrategies:\n  removePodsHavingTooManyRestarts: {podRestartThreshold: 5, states: [CrashLoopBackOff]}\n",
    );
    assert_eq!(out.evicted(), ["a/crashing"]);
}

#[test]
fn zero_threshold_is_refused() {
    let out = cluster().plan(
        "mode: Evict\nstrategies:\n  removePodsHavingTooManyRestarts: {podRestartThreshold: 0}\n",
    );
    assert!(out.plan.evictions.is_empty());
    assert!(
        out.error()
            .is_some_and(|e| e.contains("podRestartThreshold"))
    );
}
