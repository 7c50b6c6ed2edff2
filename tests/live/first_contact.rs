//! `tidal report` on first contact with a cluster: tidal's CRDs not installed is one line at once,
//! with the command that installs them, and the report still runs (with the built-in policy); a
//! server that answers 404 for what every Kubernetes API server serves is one line, in seconds. No
//! debug structures, no line said twice.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{Scenario, node, pod};

fn report(kubeconfig: &std::path::Path) -> (bool, String, String, Duration) {
    let started = Instant::now();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tidal"))
        .args(["report", "-o", "json", "--timeout", "120s", "--kubeconfig"])
        .arg(kubeconfig)
        .env_remove("TIDAL_LOG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        started.elapsed(),
    )
}

fn no_debug_structures(stderr: &str) {
    for debug in ["Status {", "ErrorResponse", "Some(", "code: 404"] {
        assert!(!stderr.contains(debug), "{debug}: {stderr}");
    }
    let lines: Vec<&str> = stderr.lines().collect();
    let mut unique = lines.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), lines.len(), "a line said twice: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_crds_are_one_line_and_the_report_runs_without_them() {
    let server = Scenario::start().await;
    server.apply(node("n1"));
    server.apply(pod("default/web-0", "n1"));
    for resource in ["revocablezones", "deschedulingpolicies"] {
        server.fail_requests("GET", resource, &[404; 50]);
    }
    let kubeconfig = server.kubeconfig("t");
    let (ok, stdout, stderr, took) = tokio::task::spawn_blocking(move || report(&kubeconfig))
        .await
        .unwrap();
    assert!(ok, "{stderr}");
    assert!(took < Duration::from_secs(60), "took {took:?}: {stderr}");
    // Said at once, before the lists, and once. (A watch the fake server cuts while the lists finish
    // may add a line of its own, about pods.)
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(stderr.matches("tidal crds").count(), 1, "{stderr}");
    assert!(!stderr.contains("DeschedulingPolicy failed"), "{stderr}");
    assert!(
        lines[0].contains("tidal crds | kubectl apply -f -"),
        "{stderr}"
    );
    assert!(
        lines[0].contains("deschedulingpolicies.tidal.dev"),
        "{stderr}"
    );
    no_debug_structures(&stderr);
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["policies"][0]["name"], "builtin-tdm", "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_pods_is_one_line_in_seconds() {
    let server = Scenario::start().await;
    server.fail_requests("GET", "/api/v1/pods", &[404; 50]);
    let kubeconfig = server.kubeconfig("t");
    let (ok, _, stderr, took) = tokio::task::spawn_blocking(move || report(&kubeconfig))
        .await
        .unwrap();
    assert!(!ok);
    assert!(took < Duration::from_secs(60), "took {took:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("does not serve pods (404 Not Found)"),
        "{stderr}"
    );
    no_debug_structures(&stderr);
}
