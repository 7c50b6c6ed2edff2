//! `tidal run 2>&1 | head`: once no one reads the logs, the binary stops as on SIGTERM (lease handed
//! back, exit 0) instead of running on, and a SIGTERM sent after the pipe closed still stops it.
//! Writing to the closed pipe panics nowhere.

use std::{process::Stdio, time::Duration};

use serde_json::json;
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::{Child, Command},
};

use crate::support::*;

fn holder(server: &FakeApiServer) -> Option<String> {
    server
        .get("leases", "tidal-system", "tidal-controller")
        .and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_owned))
}

/// A closed zone and a policy that runs a cycle (and logs it) every 200ms.
fn busy_cluster(server: &FakeApiServer) {
    server.apply(node("rev-1").zone("rz"));
    server.apply(zone("rz").window(&closed_window()));
    server.apply(policy(json!({"mode": "Evict", "interval": "200ms"})).named("tdm"));
}

/// `tidal run` with its stderr on a pipe, once it has written its first line there.
async fn started(server: &Scenario) -> Child {
    let kubeconfig = server.kubeconfig("bin");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tidal"))
        .args(["run", "--kubeconfig"])
        .arg(&kubeconfig)
        .args(["--identity", "bin"])
        .args(["--leader-elect-resource-namespace", "tidal-system"])
        .args(["--leader-elect-lease-duration", "2s"])
        .args(["--leader-elect-renew-deadline", "1s"])
        .args(["--leader-elect-retry-period", "100ms"])
        .args(["--metrics-bind-address", &free_addr().to_string()])
        .args(["--health-probe-bind-address", &free_addr().to_string()])
        .env_remove("TIDAL_LOG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next_line().await.unwrap();
    assert!(first.is_some(), "tidal run wrote nothing");
    eventually("the lease taken", || {
        (holder(server).as_deref() == Some("bin")).then_some(())
    })
    .await;
    // The reader goes: the pipe is closed.
    drop(lines);
    child
}

async fn exit_status(child: &mut Child, what: &str) -> std::process::ExitStatus {
    tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap_or_else(|_| panic!("{what}"))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_stops_once_no_one_reads_its_logs() {
    let server = Scenario::start().await;
    busy_cluster(&server);
    let mut child = started(&server).await;
    let status = exit_status(&mut child, "still running with its stderr closed").await;
    assert!(status.success(), "{status:?}");
    assert_eq!(holder(&server), None, "the lease handed back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_controller_after_its_stderr_closed() {
    let server = Scenario::start().await;
    // Quiet: no policy, so no cycle logs before the signal does.
    server.apply(node("rev-1"));
    let mut child = started(&server).await;
    let pid = child.id().unwrap();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = exit_status(&mut child, "SIGTERM ignored after stderr closed").await;
    assert!(status.success(), "{status:?}");
}
