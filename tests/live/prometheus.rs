//! Node usage from Prometheus (`usage.source: Prometheus`): `tidal report` asks a fake Prometheus
//! HTTP API for the policy's instant query, with the bearer token from its file, and lowNodeUtilization
//! moves one pod off the node the query says is busy.

use std::sync::{Arc, Mutex};

use axum::{
    Router,
    extract::{Query, State},
    http::{HeaderMap, StatusCode},
    routing::get,
};
use serde_json::{Value, json};

use crate::support::{Scenario, node, pod};

/// What the fake Prometheus was asked: (Authorization header, query).
type Asked = Arc<Mutex<Vec<(String, String)>>>;

async fn fake_prometheus(answer: Value) -> (std::net::SocketAddr, Asked) {
    let asked: Asked = Arc::default();
    let app = Router::new()
        .route(
            "/api/v1/query",
            get(
                |State((asked, answer)): State<(Asked, Value)>,
                 headers: HeaderMap,
                 Query(params): Query<std::collections::HashMap<String, String>>| async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    let query = params.get("query").cloned().unwrap_or_default();
                    asked.lock().unwrap().push((auth.clone(), query));
                    if auth != "Bearer secret-token" {
                        return (StatusCode::UNAUTHORIZED, "unauthorized".to_owned());
                    }
                    (StatusCode::OK, answer.to_string())
                },
            ),
        )
        .with_state((asked.clone(), answer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, asked)
}

const QUERY: &str = "avg by (instance) (instance:node_cpu:ratio)";

fn cluster(server: &Scenario) {
    for name in ["busy", "idle", "middle"] {
        server.apply(node(name));
    }
    for i in 0..3 {
        server.apply(pod(&format!("web/web-{i}"), "busy"));
    }
    server.apply(json!({
        "apiVersion": "tidal.dev/v1alpha1", "kind": "DeschedulingPolicy",
        "metadata": {"name": "by-prometheus"},
        "spec": {"mode": "DryRun", "strategies": {"lowNodeUtilization": {
            "thresholds": {"MetricResource": 20}, "targetThresholds": {"MetricResource": 50},
            "usage": {"source": "Prometheus", "query": QUERY}}}},
    }));
}

async fn report(args: Vec<String>) -> (bool, Value, String) {
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_tidal"))
            .args(&args)
            .env_remove("TIDAL_LOG")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let json = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (
        output.status.success(),
        json,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_reads_node_usage_from_prometheus_with_a_bearer_token() {
    let server = Scenario::start().await;
    cluster(&server);
    let (prometheus, asked) = fake_prometheus(json!({
        "status": "success",
        "data": {"resultType": "vector", "result": [
            {"metric": {"instance": "busy"}, "value": [1_700_000_000.0, "0.92"]},
            {"metric": {"instance": "idle"}, "value": [1_700_000_000.0, "0.05"]},
            {"metric": {"instance": "middle"}, "value": [1_700_000_000.0, "0.35"]},
        ]},
    }))
    .await;
    let token = server.dir().join("token");
    std::fs::write(&token, "secret-token\n").unwrap();
    let kubeconfig = server.kubeconfig("t");
    let args = |token: &std::path::Path| -> Vec<String> {
        vec![
            "report".into(),
            "-o".into(),
            "json".into(),
            "--kubeconfig".into(),
            kubeconfig.display().to_string(),
            "--prometheus-url".into(),
            format!("http://{prometheus}"),
            "--prometheus-token-file".into(),
            token.display().to_string(),
        ]
    };
    let (ok, report, stderr) = self::report(args(&token)).await;
    assert!(ok, "{stderr}");
    let evictions = report["evictions"].as_array().unwrap();
    assert_eq!(evictions.len(), 1, "{report}\n{stderr}");
    assert_eq!(evictions[0]["node"], "busy", "{report}");
    assert!(
        evictions[0]["reason"]
            .as_str()
            .unwrap()
            .contains("MetricResource 92% by Prometheus"),
        "{report}"
    );
    let asked = asked.lock().unwrap().clone();
    assert_eq!(
        asked,
        [("Bearer secret-token".to_owned(), QUERY.to_owned())],
        "the instant query, once, with the token"
    );

    // A token Prometheus refuses: no answer, nothing classified, nothing evicted, said in one line.
    let wrong = server.dir().join("wrong-token");
    std::fs::write(&wrong, "nope").unwrap();
    let (ok, report, stderr) = self::report(args(&wrong)).await;
    assert!(ok, "{stderr}");
    assert_eq!(report["evictions"], json!([]), "{report}");
    assert!(stderr.contains("HTTP 401"), "{stderr}");
}
