//! The chart's ClusterRoles grant list and watch on every kind the matching process watches: a kind it
//! cannot list keeps the cache unsynced, and the controller then never plans, the webhook is never ready.
//! The webhook's role grants nothing else. Read from the template itself (template lines dropped), so this
//! runs without Helm; tests/chart checks the render.

use serde_json::Value;
use tidal::{cluster::ObjectKind, webhook::command::WATCHED};

/// The rules of the ClusterRole whose name is given by the helper `name_helper`.
fn cluster_role_rules(name_helper: &str) -> Vec<Value> {
    let template = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/charts/tidal/templates/rbac.yaml"
    ))
    .unwrap();
    // The leading comment block is a template comment spanning lines: start at the first manifest.
    let manifests = &template[template.find("apiVersion:").unwrap()..];
    let raw = manifests
        .split("\n---\n")
        .find(|doc| {
            doc.contains("\nkind: ClusterRole\n")
                && doc.contains(&format!("name: {{{{ include \"{name_helper}\" . }}}}"))
        })
        .unwrap_or_else(|| panic!("no ClusterRole named by {name_helper} in rbac.yaml"));
    let plain: String = raw
        .lines()
        .filter(|line| !line.contains("{{"))
        .map(|line| format!("{line}\n"))
        .collect();
    let role: Value = serde_saphyr::from_str(&plain).unwrap();
    assert_eq!(role["kind"], "ClusterRole");
    role["rules"].as_array().unwrap().clone()
}

fn strings(rule: &Value, field: &str) -> Vec<String> {
    rule[field]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item.as_str().map(str::to_owned))
        .collect()
}

fn grants(rules: &[Value], group: &str, resource: &str, verb: &str) -> bool {
    rules.iter().any(|rule| {
        strings(rule, "apiGroups").iter().any(|g| g == group)
            && strings(rule, "resources").iter().any(|r| r == resource)
            && strings(rule, "verbs").iter().any(|v| v == verb)
    })
}

fn assert_reads(rules: &[Value], kinds: &[ObjectKind], role: &str) {
    for kind in kinds {
        let (group, resource) = kind.api_resource();
        for verb in ["get", "list", "watch"] {
            assert!(
                grants(rules, group, resource, verb),
                "charts/tidal/templates/rbac.yaml, {role}: no {verb} on {group}/{resource} ({kind:?})"
            );
        }
    }
}

#[test]
fn the_controller_may_list_and_watch_every_kind_it_watches() {
    let rules = cluster_role_rules("tidal.controller.fullname");
    assert_reads(&rules, &ObjectKind::ALL, "controller");
    // Behind controller.measuredUsage.enabled in the template.
    for resource in ["nodes", "pods"] {
        assert!(grants(&rules, "metrics.k8s.io", resource, "list"));
    }
}

#[test]
fn the_webhook_may_read_exactly_the_kinds_it_watches() {
    let rules = cluster_role_rules("tidal.webhook.fullname");
    assert_reads(&rules, &WATCHED, "webhook");
    let watched: Vec<(&str, &str)> = WATCHED.iter().map(|k| k.api_resource()).collect();
    for rule in &rules {
        assert_eq!(
            strings(rule, "verbs"),
            ["get", "list", "watch"],
            "the webhook only reads: {rule}"
        );
        for group in strings(rule, "apiGroups") {
            for resource in strings(rule, "resources") {
                assert!(
                    watched.contains(&(group.as_str(), resource.as_str())),
                    "the webhook may read {group}/{resource}, which it does not watch"
                );
            }
        }
    }
}

/// Events: the controller writes events.k8s.io/v1 Events only (src/controller/status/events.rs creates
/// them, and patches one to extend its series), so it may create and patch those and nothing else about
/// events: not read them, not delete them, not the core/v1 Events API.
#[test]
fn the_controller_may_only_create_and_patch_events_k8s_io_events() {
    let rules = cluster_role_rules("tidal.controller.fullname");
    let events: Vec<&Value> = rules
        .iter()
        .filter(|rule| strings(rule, "resources").iter().any(|r| r == "events"))
        .collect();
    assert_eq!(events.len(), 1, "one rule about events: {events:?}");
    assert_eq!(strings(events[0], "apiGroups"), ["events.k8s.io"]);
    assert_eq!(strings(events[0], "verbs"), ["create", "patch"]);
}
