//! `tidal report` against a cluster it cannot reach: a short error that names the address and the way
//! out, in seconds, not a page of retry logs after the full list timeout.

use std::{net::SocketAddr, process::Command};

use crate::support::free_addr;

fn kubeconfig(dir: &std::path::Path, server: SocketAddr) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: x\n\
             clusters: [{{name: c, cluster: {{server: \"https://{server}\", insecure-skip-tls-verify: true}}}}]\n\
             contexts: [{{name: x, context: {{cluster: c, user: u}}}}]\n\
             users: [{{name: u, user: {{token: t}}}}]\n"
        ),
    )
    .unwrap();
    path
}

fn report(args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_tidal"))
        .arg("report")
        .args(args)
        .envs(env.iter().copied())
        .env_remove("TIDAL_LOG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_refused_connection_is_one_line_naming_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = free_addr();
    let config = kubeconfig(dir.path(), server);
    // Without the reachability check the lists would retry for the whole timeout, with a log line each.
    let (ok, stderr) = report(
        &["--kubeconfig", config.to_str().unwrap(), "--timeout", "20s"],
        &[],
    );
    assert!(!ok);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cannot reach the Kubernetes API server"),
        "{stderr}"
    );
    assert!(stderr.contains(&server.to_string()), "{stderr}");
    assert!(stderr.contains("--cluster FILE"), "{stderr}");
}

#[test]
fn a_silent_server_fails_within_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    // Accepts TCP connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let config = kubeconfig(dir.path(), listener.local_addr().unwrap());
    let (ok, stderr) = report(
        &["--kubeconfig", config.to_str().unwrap(), "--timeout", "2s"],
        &[],
    );
    assert!(!ok);
    assert!(stderr.contains("no answer within 2s"), "{stderr}");
    drop(listener);
}

#[test]
fn no_kubeconfig_says_where_it_looked_once() {
    let (ok, stderr) = report(&[], &[("KUBECONFIG", "/nonexistent/kubeconfig")]);
    assert!(!ok);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(
        stderr.matches("No such file").count(),
        1,
        "the cause is said once: {stderr}"
    );
    assert!(stderr.contains("/nonexistent/kubeconfig"), "{stderr}");
    assert!(stderr.contains("--kubeconfig FILE"), "{stderr}");
}

#[test]
fn an_unknown_context_names_the_ones_there_are() {
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), free_addr());
    let (ok, stderr) = report(
        &["--kubeconfig", config.to_str().unwrap(), "--context", "y"],
        &[],
    );
    assert!(!ok);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(r#"no context "y" in the kubeconfig (it has: x)"#),
        "{stderr}"
    );
}
