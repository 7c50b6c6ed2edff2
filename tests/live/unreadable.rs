//! One object the API server serves but tidal cannot read (a wrong type where a list belongs) is left
//! out and counted; its kind's watch goes on, the controller becomes ready and acts on the rest.

use serde_json::json;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_object_is_skipped_and_counted_not_fatal_for_its_kind() {
    let server = Scenario::start().await;
    server.apply(node("rev-1").zone("rz"));
    server.apply(zone("rz").window(&closed_window()).evict_period("1s"));
    server.apply(policy(json!({"mode": "Evict", "interval": "200ms"})).named("tdm"));
    server.apply(pod("batch/good", "rev-1").preemptable());
    // Neither can be decoded: windows must be a list, containers a list of containers.
    let mut bad_zone = zone("bad").window(&closed_window()).evict_period("1s");
    bad_zone["spec"]["windows"] = json!(5);
    server.apply(bad_zone);
    let mut bad_pod = pod("batch/bad", "rev-1").preemptable();
    bad_pod["spec"]["containers"] = json!("not a list");
    server.apply(bad_pod);

    let controller = server.controller();
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
    // A Warning Event on each, with its uid (`kubectl describe` filters by it), once.
    let events = eventually("warnings on the unreadable objects", || {
        let events = server.list("apis/events.k8s.io/v1", "events");
        let warned = |name: &str| {
            events
                .iter()
                .filter(|e| {
                    e["regarding"]["name"] == json!(name) && e["reason"] == json!("Unreadable")
                })
                .count()
        };
        (warned("bad") >= 2).then_some(events)
    })
    .await;
    let zone_uid = server.get("revocablezones", "", "bad").unwrap()["metadata"]["uid"].clone();
    let on_zone: Vec<_> = events
        .iter()
        .filter(|e| {
            e["regarding"]["kind"] == json!("RevocableZone") && e["reason"] == json!("Unreadable")
        })
        .collect();
    assert_eq!(on_zone.len(), 1, "{on_zone:#?}");
    assert_eq!(on_zone[0]["regarding"]["uid"], zone_uid);
    assert_eq!(on_zone[0]["type"], json!("Warning"));
    let on_pod = events
        .iter()
        .find(|e| e["regarding"]["kind"] == json!("Pod") && e["reason"] == json!("Unreadable"))
        .expect("a warning on the pod");
    assert_eq!(on_pod["regarding"]["namespace"], json!("batch"));
    // Later cycles do not repeat them.
    controller
        .wait_cycles(controller.cycles().await + 3.0)
        .await;
    let again = server
        .list("apis/events.k8s.io/v1", "events")
        .iter()
        .filter(|e| e["reason"] == json!("Unreadable"))
        .count();
    assert_eq!(again, 2);
    controller.stop().await;
}
