//! The CRDs tidal installs: the committed copy in the chart (and the spec definitions of the chart's
//! values schema) must match what the Rust types generate, and what they generate must be a CRD the API
//! server accepts (structural schema, status subresource, ...).

use std::{collections::BTreeSet, path::Path, process::Command};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

const COMMITTED: &str = "charts/tidal/crds/tidal-crds.yaml";
const VALUES_SCHEMA: &str = "charts/tidal/values.schema.json";

fn generated() -> Vec<CustomResourceDefinition> {
    serde_saphyr::from_multiple(&tidal::api::crds_yaml()).expect("tidal crds prints valid CRD YAML")
}

fn generated_json() -> Vec<Value> {
    generated()
        .iter()
        .map(|crd| serde_json::to_value(crd).expect("a CRD serializes"))
        .collect()
}

fn crd<'a>(crds: &'a [Value], kind: &str) -> &'a Value {
    crds.iter()
        .find(|c| c["spec"]["names"]["kind"] == kind)
        .unwrap_or_else(|| panic!("no CRD for kind {kind}"))
}

fn schema(crd: &Value) -> &Value {
    &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
}

#[test]
fn committed_crds_are_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(COMMITTED);
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{COMMITTED} is missing ({e}): run scripts/gen-crds"));
    let expected = tidal::api::crds_yaml();
    if committed != expected {
        let first_difference = committed
            .lines()
            .zip(expected.lines())
            .position(|(a, b)| a != b)
            .map_or_else(
                || "one is a prefix of the other".to_owned(),
                |n| format!("first difference at line {}", n + 1),
            );
        panic!(
            "{COMMITTED} is stale ({first_difference}): the CRD types in src/api/ changed. \
             Run scripts/gen-crds and commit the result."
        );
    }
}

#[test]
fn committed_values_schema_is_up_to_date() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(VALUES_SCHEMA);
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{VALUES_SCHEMA} is missing ({e})"));
    let expected = tidal::api::chart_schema::values_schema(&committed)
        .unwrap_or_else(|e| panic!("{VALUES_SCHEMA}: {e:#}"));
    assert!(
        committed == expected,
        "{VALUES_SCHEMA} is stale: its $defs no longer match the CRD types in src/api/. \
         Run scripts/gen-crds and commit the result."
    );
}

/// The chart's values refer to the generated definitions for every spec they carry, so none is left
/// checked only by the API server after Helm has applied part of a release.
#[test]
fn values_schema_checks_every_spec_against_the_crds() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(VALUES_SCHEMA);
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("read"))
        .expect("values.schema.json is JSON");
    let properties = &schema["properties"];
    for (pointer, definition) in [
        ("/defaultPolicy/properties/spec", "DeschedulingPolicySpec"),
        ("/policies/items/properties/spec", "DeschedulingPolicySpec"),
        ("/zones/items/properties/spec", "RevocableZoneSpec"),
    ] {
        assert_eq!(
            properties.pointer(pointer).map(|spec| &spec["$ref"]),
            Some(&Value::from(format!("#/$defs/{definition}"))),
            "{pointer}"
        );
    }
    let generated = tidal::api::chart_schema::spec_definitions();
    assert_eq!(schema["$defs"], Value::Object(generated));
}

#[test]
fn crds_command_prints_the_values_schema_with_generated_definitions() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(VALUES_SCHEMA);
    let output = Command::new(env!("CARGO_BIN_EXE_tidal"))
        .args(["crds", "--values-schema"])
        .arg(&path)
        .output()
        .expect("run tidal crds --values-schema");
    assert!(output.status.success(), "{output:?}");
    let committed = std::fs::read_to_string(&path).expect("read");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        tidal::api::chart_schema::values_schema(&committed).expect("generates")
    );
}

#[test]
fn crds_command_prints_crds_yaml() {
    let output = Command::new(env!("CARGO_BIN_EXE_tidal"))
        .arg("crds")
        .output()
        .expect("run tidal crds");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        tidal::api::crds_yaml()
    );
}

#[test]
fn both_crds_are_cluster_scoped_v1alpha1_with_status() {
    let crds = generated();
    let kinds: BTreeSet<&str> = crds.iter().map(|c| c.spec.names.kind.as_str()).collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["DeschedulingPolicy", "RevocableZone"])
    );
    for crd in &crds {
        let kind = &crd.spec.names.kind;
        assert_eq!(crd.spec.group, "tidal.dev", "{kind}");
        assert_eq!(crd.spec.scope, "Cluster", "{kind}");
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some(format!("{}.tidal.dev", crd.spec.names.plural).as_str()),
            "a CRD's name must be <plural>.<group>"
        );
        assert_eq!(crd.spec.versions.len(), 1, "{kind}");
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1alpha1", "{kind}");
        assert!(version.served && version.storage, "{kind}");
        assert!(
            version
                .subresources
                .as_ref()
                .is_some_and(|s| s.status.is_some()),
            "{kind} must have the status subresource, so that status writes never touch spec"
        );
    }
    let json = generated_json();
    for value in &json {
        assert_eq!(value["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(value["kind"], "CustomResourceDefinition");
    }
    assert_eq!(
        crd(&json, "RevocableZone")["spec"]["names"]["shortNames"],
        serde_json::json!(["rz"])
    );
    assert_eq!(
        crd(&json, "DeschedulingPolicy")["spec"]["names"]["shortNames"],
        serde_json::json!(["dsp"])
    );
}

#[test]
fn printer_columns() {
    let crds = generated();
    let columns = |kind: &str| -> Vec<(String, String, String)> {
        let crd = crds
            .iter()
            .find(|c| c.spec.names.kind == kind)
            .expect("crd");
        crd.spec.versions[0]
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| (c.name.clone(), c.type_.clone(), c.json_path.clone()))
            .collect()
    };
    let zone = columns("RevocableZone");
    let zone_names: Vec<&str> = zone.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(
        zone_names,
        [
            "Windows",
            "Time-Zone",
            "Ready",
            "Open",
            "Draining",
            "Nodes",
            "Remaining",
            "Empty-By",
            "On-Track",
            "Next-Change",
            "Age"
        ],
    );
    // The drain's ETA is a future instant too.
    assert!(zone.contains(&(
        "Empty-By".into(),
        "string".into(),
        ".status.drain.expectedEmptyAt".into()
    )));
    assert!(zone.contains(&("Open".into(), "boolean".into(), ".status.open".into())));
    // Never a `date` for a future instant: kubectl prints those as `<invalid>`.
    assert!(zone.contains(&(
        "Next-Change".into(),
        "string".into(),
        ".status.nextChange".into()
    )));
    for crd in &crds {
        assert_eq!(
            crd.spec.names.categories.as_deref(),
            Some(&["tidal".to_owned()][..]),
            "`kubectl get tidal` lists {}",
            crd.spec.names.kind
        );
    }
    assert!(zone.contains(&("Time-Zone".into(), "string".into(), ".spec.timeZone".into())));
    let policy = columns("DeschedulingPolicy");
    let policy_names: Vec<&str> = policy.iter().map(|c| c.0.as_str()).collect();
    assert!(
        policy_names.starts_with(&["Mode", "Interval"]),
        "{policy_names:?}"
    );
    // Every column must point at a field the schema declares, or kubectl prints <none> forever.
    for (kind, cols) in [("RevocableZone", zone), ("DeschedulingPolicy", policy)] {
        let json = generated_json();
        let root = schema(crd(&json, kind));
        for (name, _, path) in cols {
            if path.starts_with(".metadata.") {
                continue;
            }
            // A filter such as `conditions[?(@.type=="Ready")]` selects items of the list.
            let path = match path.split_once('[') {
                Some((list, rest)) => {
                    let after = rest.split_once(']').map_or("", |(_, after)| after);
                    format!("{list}.[]{after}")
                }
                None => path,
            };
            let mut node = root;
            for part in path.trim_start_matches('.').split('.') {
                node = if part == "[]" {
                    &node["items"]
                } else {
                    &node["properties"][part]
                };
                assert!(
                    !node.is_null(),
                    "{kind} column {name}: {path} is not in the schema"
                );
            }
        }
    }
}

/// Every `x-kubernetes-validations` rule in a schema, as `(path, rule, message)`.
fn cel_rules(node: &Value, path: &str, out: &mut Vec<(String, String, String)>) {
    if let Some(rules) = node
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    {
        for rule in rules {
            out.push((
                path.to_owned(),
                rule["rule"].as_str().unwrap_or_default().to_owned(),
                rule["message"].as_str().unwrap_or_default().to_owned(),
            ));
        }
    }
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            cel_rules(child, &format!("{path}.{name}"), out);
        }
    }
    if let Some(items) = node.get("items") {
        cel_rules(items, &format!("{path}[]"), out);
    }
}

#[test]
fn schemas_carry_the_cel_rules() {
    let json = generated_json();
    let rules_of = |kind: &str| {
        let mut out = Vec::new();
        cel_rules(schema(crd(&json, kind)), "", &mut out);
        out
    };
    let zone = rules_of("RevocableZone");
    let zone_messages: BTreeSet<(&str, &str)> = zone
        .iter()
        .map(|(p, _, m)| (p.as_str(), m.as_str()))
        .collect();
    assert_eq!(
        zone_messages,
        BTreeSet::from([
            (".spec", "windows must not repeat"),
            (".spec", "drainBefore must be auto or shorter than 24h"),
            (".spec", "maxDrainBefore must be shorter than 24h"),
            (".spec", "evictPeriod must be at least 1s"),
            (".spec", "evictionNotice must be shorter than 24h"),
        ])
    );
    let policy = rules_of("DeschedulingPolicy");
    let policy_messages: BTreeSet<(&str, &str)> = policy
        .iter()
        .map(|(p, _, m)| (p.as_str(), m.as_str()))
        .collect();
    for expected in [
        (".spec", "interval must be at least 10s"),
        (
            ".spec.defaults.jobBudget",
            "set exactly one of maxUnavailable and minAvailable",
        ),
        (".spec.namespaces", "set include or exclude, not both"),
    ] {
        assert!(
            policy_messages.contains(&expected),
            "missing {expected:?} in {policy_messages:?}"
        );
    }
    for (path, rule, message) in zone.iter().chain(&policy) {
        assert!(!rule.is_empty(), "{path}: rule without expression");
        assert!(
            !message.is_empty(),
            "{path}: rule {rule} has no message; users would see the raw expression"
        );
    }
}

#[test]
fn window_and_duration_fields_have_patterns() {
    let json = generated_json();
    let zone = &schema(crd(&json, "RevocableZone"))["properties"]["spec"];
    let time = &zone["properties"]["windows"]["items"]["properties"]["time"];
    assert_eq!(
        time["pattern"],
        r"^([01][0-9]|2[0-3]):[0-5][0-9]-([01][0-9]|2[0-3]):[0-5][0-9]$"
    );
    assert_eq!(zone["properties"]["windows"]["minItems"], 1);
    assert_eq!(zone["required"], serde_json::json!(["windows"]));
    let duration = tidal::api::duration::GO_DURATION_PATTERN;
    assert_eq!(
        zone["properties"]["drainBefore"]["pattern"],
        format!("^(auto|{})$", &duration[1..duration.len() - 1]),
    );
    for field in ["evictPeriod", "maxDrainBefore"] {
        assert_eq!(
            zone["properties"][field]["pattern"],
            tidal::api::duration::GO_DURATION_PATTERN,
            "{field}"
        );
    }
    let policy = &schema(crd(&json, "DeschedulingPolicy"))["properties"]["spec"];
    assert_eq!(
        policy["properties"]["interval"]["pattern"],
        tidal::api::duration::GO_DURATION_PATTERN
    );
    assert_eq!(
        policy["properties"]["defaults"]["properties"]["cooldown"]["pattern"],
        tidal::api::duration::GO_DURATION_PATTERN
    );
    let required: BTreeSet<&str> = policy["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(required.contains("mode") && required.contains("strategies"));
    assert_eq!(
        policy["properties"]["mode"]["enum"],
        serde_json::json!(["Evict", "DryRun"])
    );
    assert_eq!(
        policy["properties"]["defaults"]["properties"]["preemptable"]["default"], false,
        "preemption must be opt-in"
    );
}

/// The API server only accepts structural schemas: every node states its type, except int-or-string and
/// preserve-unknown-fields nodes; `nullable` and `default` are only allowed where a type is given.
fn assert_structural(node: &Value, path: &str) {
    let int_or_string = node.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true));
    let preserve = node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if !int_or_string && !preserve {
        assert!(
            node.get("type").and_then(Value::as_str).is_some(),
            "{path}: schema node without type is not structural: {node}"
        );
    }
    for forbidden in ["$ref", "definitions", "$defs", "oneOf", "anyOf", "allOf"] {
        assert!(
            node.get(forbidden).is_none(),
            "{path}: {forbidden} is not allowed in a structural schema unless it only restates types"
        );
    }
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            assert_structural(child, &format!("{path}.{name}"));
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = node.get(key).filter(|c| c.is_object()) {
            assert_structural(child, &format!("{path}.{key}"));
        }
    }
}

#[test]
fn schemas_are_structural() {
    for crd in generated_json() {
        let kind = crd["spec"]["names"]["kind"].as_str().unwrap_or_default();
        let root = schema(&crd);
        assert_eq!(root["type"], "object", "{kind}");
        assert_structural(root, kind);
    }
}

/// Every schema node under `node`, with its path (`.spec.windows[].time`, `.status.skipped{}`).
fn schema_nodes<'a>(node: &'a Value, path: String, out: &mut Vec<(String, &'a Value)>) {
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        for (name, child) in properties {
            schema_nodes(child, format!("{path}.{name}"), out);
        }
    }
    if let Some(items) = node.get("items").filter(|c| c.is_object()) {
        schema_nodes(items, format!("{path}[]"), out);
    }
    if let Some(values) = node.get("additionalProperties").filter(|c| c.is_object()) {
        schema_nodes(values, format!("{path}{{}}"), out);
    }
    out.push((path, node));
}

/// `kubectl explain` shows these: every field says what it is, in tidal's words (a type's Go doc comment
/// such as k8s-openapi's "Time is a wrapper around time.Time..." tells an operator nothing).
#[test]
fn every_field_has_a_description_of_its_own() {
    let mut missing = Vec::new();
    for crd in generated_json() {
        let kind = crd["spec"]["names"]["kind"].as_str().unwrap_or_default();
        let mut nodes = Vec::new();
        schema_nodes(schema(&crd), String::new(), &mut nodes);
        for (path, node) in nodes {
            // List items and map values are described by the field that holds them.
            let is_field = !path.is_empty() && !path.ends_with("[]") && !path.ends_with("{}");
            let description = node["description"].as_str().unwrap_or_default();
            if is_field && description.trim().is_empty() {
                missing.push(format!("{kind}{path}: no description"));
            }
            for leak in ["time.Time", "wrapper around", "+optional", "+k8s:"] {
                if description.contains(leak) {
                    missing.push(format!("{kind}{path}: leaked Go comment {description:?}"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// The API server warns `unrecognized format "uint64"` on `kubectl apply` for formats it does not know;
/// unsigned fields are declared `int64` and keep their range as bounds.
#[test]
fn integer_formats_are_ones_the_api_server_knows() {
    let known = [
        "int32",
        "int64",
        "float",
        "double",
        "date-time",
        "date",
        "duration",
        "byte",
    ];
    for crd in generated_json() {
        let kind = crd["spec"]["names"]["kind"].as_str().unwrap_or_default();
        let mut nodes = Vec::new();
        schema_nodes(schema(&crd), String::new(), &mut nodes);
        for (path, node) in nodes {
            if let Some(format) = node.get("format").and_then(Value::as_str) {
                assert!(known.contains(&format), "{kind}{path}: format {format:?}");
            }
        }
    }
    let zone = crd(&generated_json(), "RevocableZone").clone();
    let nodes = &schema(&zone)["properties"]["status"]["properties"]["nodes"];
    assert_eq!(nodes["format"], "int64");
    assert_eq!(nodes["minimum"].as_f64(), Some(0.0));
    assert_eq!(nodes["maximum"].as_f64(), Some(f64::from(u32::MAX)));
}
