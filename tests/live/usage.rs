//! Measured usage in the live controller: `tidal run` polls metrics.k8s.io while a policy's
//! lowNodeUtilization reads `usage.source: Metrics`, and plans from what it measured rather than from
//! the pods' requests.

use crate::support::*;
#[allow(unused_imports)]
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

const NS: &str = "web";

fn recent() -> String {
    (Timestamp::now() - SignedDuration::from_secs(10))
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn node_metrics(node: &str, cpu: &str, memory: &str) -> Value {
    json!({
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "NodeMetrics",
        "metadata": {"name": node},
        "timestamp": recent(),
        "window": "20s",
        "usage": {"cpu": cpu, "memory": memory},
    })
}

fn pod_metrics(name: &str, cpu: &str, memory: &str) -> Value {
    json!({
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "PodMetrics",
        "metadata": {"name": name, "namespace": NS},
        "timestamp": recent(),
        "window": "20s",
        "containers": [{"name": "main", "usage": {"cpu": cpu, "memory": memory}}],
    })
}

/// Two nodes whose requests look idle, while metrics-server says `busy` runs hot: only measured
/// usage shows that pods should move.
fn hot_node_cluster(server: &FakeApiServer) {
    server.apply(node("busy"));
    server.apply(node("idle"));
    for i in 0..4 {
        let name = format!("web-{i}");
        server.apply(pod(&format!("{NS}/{name}"), "busy").owned_by("ReplicaSet", "web"));
        server.apply(pod_metrics(&name, "1800m", "4Gi"));
    }
    server.apply(node_metrics("busy", "7500m", "20Gi"));
    server.apply(node_metrics("idle", "200m", "1Gi"));
    server.apply(json!({
        "apiVersion": "tidal.dev/v1alpha1",
        "kind": "DeschedulingPolicy",
        "metadata": {"name": "balance"},
        "spec": {
            "interval": "200ms",
            "mode": "Evict",
            "strategies": {"lowNodeUtilization": {
                "thresholds": {"cpu": 20, "memory": 20},
                "targetThresholds": {"cpu": 70, "memory": 70},
                "usage": {"source": "Metrics", "window": "5m"},
            }},
            "defaults": {"jobBudget": {"maxUnavailable": "100%"}},
        },
    }));
}

fn evicted_from_busy(server: &FakeApiServer) -> usize {
    let evictions = server.evictions();
    (0..4)
        .filter(|i| !accepted(&evictions, &format!("web-{i}")).is_empty())
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn measured_usage_drives_low_node_utilization() {
    let server = Scenario::start().await;
    hot_node_cluster(&server);
    let controller = server.controller_with(
        "a",
        &["--leader-elect", "false", "--usage-poll-interval", "100ms"],
    );
    eventually("a pod moved off the hot node", || {
        (evicted_from_busy(&server) > 0).then_some(())
    })
    .await;
    let polled = metric_sum(
        &controller.metrics().await,
        "tidal_usage_polls_total{result=\"ok\"}",
    );
    assert!(polled >= 1.0, "polls counted: {polled}");
    // 7.5 of 8 CPUs, target 70% (5.6): one 1.8-CPU pod brings it to 5.7, two to 3.9. The node's
    // samples, taken before they left, are read without them in later cycles: no third eviction.
    controller.wait_cycles(3.0).await;
    assert_eq!(evicted_from_busy(&server), 2);
    controller.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_polling_no_usage_is_invented() {
    let server = Scenario::start().await;
    hot_node_cluster(&server);
    let controller = server.controller_with(
        "a",
        &["--leader-elect", "false", "--usage-poll-interval", "0s"],
    );
    controller.wait_cycles(3.0).await;
    assert_eq!(evicted_from_busy(&server), 0);
    let metrics_reads = server
        .requests()
        .iter()
        .filter(|r| r.path.contains("metrics.k8s.io"))
        .count();
    assert_eq!(metrics_reads, 0);
    controller.stop().await;
}
