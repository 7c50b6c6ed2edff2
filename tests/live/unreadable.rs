//! One object the API server serves but tidal cannot read (a wrong type where a list belongs) is left
//! out and counted; its kind's watch goes on, the controller becomes ready and acts on the rest.

use serde_json::json;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_object_is_skipped_and_counted_not_fatal_for_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    let server = FakeApiServer::start().await;
    server.apply(node("rev-1", Some("rz")));
    server.apply(zone("rz", &closed_window(), "1s"));
    server.apply(policy("tdm", "Evict", "200ms"));
    server.apply(preemptable(pod("batch", "good", "rev-1")));
    // Neither can be decoded: windows must be a list, containers a list of containers.
    let mut bad_zone = zone("bad", &closed_window(), "1s");
    bad_zone["spec"]["windows"] = json!(5);
    server.apply(bad_zone);
    let mut bad_pod = preemptable(pod("batch", "bad", "rev-1"));
    bad_pod["spec"]["containers"] = json!("not a list");
    server.apply(bad_pod);

    let controller = Controller::start(&server, dir.path(), "a", &["--leader-elect", "false"]);
    eventually("the readable pod evicted", || {
        (!accepted(&server.evictions(), "good").is_empty()).then_some(())
    })
    .await;
    let (code, _) = http_get(controller.health_addr, "/readyz").await.unwrap();
    assert_eq!(code, 200);
    assert_eq!(real_attempts(&server.evictions(), "bad"), 0);
    let metrics = controller.metrics().await;
    for kind in ["RevocableZone", "Pod"] {
        let line = format!(r#"tidal_watch_unreadable_objects_total{{kind="{kind}"}}"#);
        assert!(metric_sum(&metrics, &line) >= 1.0, "{kind}: {metrics}");
    }
    controller.stop().await;
}
