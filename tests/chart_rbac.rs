//! The chart's controller ClusterRole grants list and watch on every kind `tidal run` watches: a kind
//! it cannot list keeps the cache unsynced, and the controller then never plans. Read from the
//! template itself (template lines dropped), so this runs without Helm; tests/chart checks the render.

use serde_json::Value;
use tidal::cluster::ObjectKind;

fn controller_rules() -> Vec<Value> {
    let template = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/charts/tidal/templates/rbac.yaml"
    ))
    .unwrap();
    // The leading comment block is a template comment spanning lines: start at the first manifest.
    let manifests = &template[template.find("apiVersion:").unwrap()..];
    let plain: String = manifests
        .lines()
        .filter(|line| !line.contains("{{"))
        .map(|line| format!("{line}\n"))
        .collect();
    let first = plain.split("\n---\n").next().unwrap();
    let role: Value = serde_saphyr::from_str(first).unwrap();
    assert_eq!(role["kind"], "ClusterRole");
    role["rules"].as_array().unwrap().clone()
}

fn grants(rules: &[Value], group: &str, resource: &str, verb: &str) -> bool {
    let has = |rule: &Value, field: &str, value: &str| {
        rule[field]
            .as_array()
            .is_some_and(|items| items.iter().any(|item| item == value))
    };
    rules.iter().any(|rule| {
        has(rule, "apiGroups", group)
            && has(rule, "resources", resource)
            && has(rule, "verbs", verb)
    })
}

#[test]
fn the_controller_may_list_and_watch_every_kind_it_watches() {
    let rules = controller_rules();
    for kind in ObjectKind::ALL {
        let (group, resource) = kind.api_resource();
        for verb in ["get", "list", "watch"] {
            assert!(
                grants(&rules, group, resource, verb),
                "charts/tidal/templates/rbac.yaml: no {verb} on {group}/{resource} ({kind:?})"
            );
        }
    }
    for resource in ["nodes", "pods"] {
        assert!(grants(&rules, "metrics.k8s.io", resource, "list"));
    }
}
