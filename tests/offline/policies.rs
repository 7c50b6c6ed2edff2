//! Every example tidal ships (`policies/*.yaml`, the tidal objects in `examples/demo-cluster.yaml`) must be
//! accepted by `kubectl apply`: the CRD's OpenAPI schema (as `kubectl apply --validate=strict` and the API
//! server check it), its CEL rules (evaluated with kube's client-side CEL), and tidal's own Rust types.
//! Negative cases prove each layer rejects what it should, with the message a user would see.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use kube::core::cel::ErrorKind;
use serde_json::{Value, json};
use tidal::{
    api::{DeschedulingPolicy, RevocableZone, validation::CrdValidator},
    cluster::{PolicyInfo, ZoneInfo},
};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// What each layer says about an object.
#[derive(Debug)]
struct Verdict {
    /// JSON Schema errors as `path: message`.
    schema: Vec<String>,
    /// CEL failures as `(kind, message)`.
    cel: Vec<(ErrorKind, String)>,
    /// Deserializing into tidal's Rust type, then the checks tidal makes when it loads the object.
    typed: Result<(), String>,
}

impl Verdict {
    fn accepted(&self) -> bool {
        self.schema.is_empty() && self.cel.is_empty() && self.typed.is_ok()
    }
}

fn typed(object: &Value) -> Result<(), String> {
    match object["kind"].as_str() {
        Some("DeschedulingPolicy") => {
            let policy: DeschedulingPolicy =
                serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
            PolicyInfo::from_policy(&policy)
                .map_err(|e| e.to_string())?
                .default_budget
                .map(drop)
        }
        Some("RevocableZone") => {
            let zone: RevocableZone =
                serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
            ZoneInfo::from_zone(&zone)
                .map_err(|e| e.to_string())?
                .schedule
                .map(drop)
        }
        other => Err(format!("not a tidal kind: {other:?}")),
    }
}

/// The schema and CEL layers are the ones `tidal report` applies to saved clusters (the library's
/// [`CrdValidator`]), so these tests also pin what the report refuses.
fn check(schemas: &CrdValidator, object: &Value) -> Verdict {
    let kind = object["kind"].as_str().unwrap_or_default();
    assert!(schemas.knows(kind), "no CRD for kind {kind:?}");
    let violations = schemas.validate(object).err().unwrap_or_default();
    Verdict {
        schema: violations.schema,
        cel: violations.cel,
        typed: typed(object),
    }
}

fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
        .unwrap_or_else(|e| panic!("{}: not YAML: {e}", path.display()));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

fn name(object: &Value) -> String {
    format!(
        "{} {}",
        object["kind"].as_str().unwrap_or("?"),
        object["metadata"]["name"].as_str().unwrap_or("?")
    )
}

fn assert_accepted(schemas: &CrdValidator, file: &Path, object: &Value) {
    let verdict = check(schemas, object);
    assert!(
        verdict.accepted(),
        "{}: {} is rejected: {verdict:#?}",
        file.display(),
        name(object)
    );
}

/// Applying the examples must never evict: every shipped policy is DryRun unless its file name says it
/// evicts.
#[test]
fn shipped_policies_evict_only_when_their_file_name_says_so() {
    for entry in std::fs::read_dir(repo("policies")).expect("policies/ exists") {
        let file = entry.expect("dir entry").path();
        let evicting_name = file
            .file_name()
            .is_some_and(|n| n.to_string_lossy().contains("evict"));
        for object in documents(&file) {
            if object["kind"] == "DeschedulingPolicy" && !evicting_name {
                assert_eq!(
                    object["spec"]["mode"],
                    "DryRun",
                    "{}: {} evicts, but its file name does not say so",
                    file.display(),
                    name(&object)
                );
            }
        }
    }
}

#[test]
fn every_policy_example_is_valid() {
    let schemas = CrdValidator::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo("policies"))
        .expect("policies/ exists")
        .map(|entry| entry.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    assert!(
        files.iter().any(|f| f.ends_with("policies/tdm.yaml")),
        "policies/tdm.yaml is missing: {files:?}"
    );
    for file in &files {
        let docs = documents(file);
        assert!(!docs.is_empty(), "{}: no documents", file.display());
        for object in &docs {
            assert_eq!(
                object["apiVersion"],
                "tidal.dev/v1alpha1",
                "{}: {}",
                file.display(),
                name(object)
            );
            assert_accepted(&schemas, file, object);
        }
    }
}

#[test]
fn tdm_example_is_a_tdm_policy_with_safe_defaults() {
    let docs = documents(&repo("policies/tdm.yaml"));
    let [object] = docs.as_slice() else {
        panic!("policies/tdm.yaml should hold one policy");
    };
    let policy: DeschedulingPolicy = serde_json::from_value(object.clone()).expect("typed");
    assert!(policy.spec.strategies.tdm.is_some(), "tdm is enabled");
    assert_eq!(policy.spec.mode, tidal::api::PolicyMode::DryRun);
    assert!(
        !policy.spec.defaults.preemptable,
        "the flagship example keeps preemption opt-in"
    );
    assert!(policy.spec.defaults.cooldown.is_some());
}

#[test]
fn demo_cluster_tidal_objects_are_valid() {
    let file = repo("examples/demo-cluster.yaml");
    let schemas = CrdValidator::new();
    let mut kinds = BTreeMap::<String, usize>::new();
    for object in documents(&file) {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        if api_version.starts_with("tidal.dev/") {
            assert_accepted(&schemas, &file, &object);
            *kinds.entry(name(&object)).or_default() += 1;
        }
    }
    let zones = kinds
        .keys()
        .filter(|k| k.starts_with("RevocableZone "))
        .count();
    let policies = kinds
        .keys()
        .filter(|k| k.starts_with("DeschedulingPolicy "))
        .count();
    assert_eq!((zones, policies), (2, 1), "{kinds:?}");
}

fn base_policy() -> Value {
    json!({
        "apiVersion": "tidal.dev/v1alpha1",
        "kind": "DeschedulingPolicy",
        "metadata": {"name": "p"},
        "spec": {
            "mode": "Evict",
            "interval": "1m",
            "strategies": {"tdm": {"evictPlacementViolations": true}},
            "defaults": {"cooldown": "10m", "jobBudget": {"maxUnavailable": "25%"}, "preemptable": false},
            "limits": {"perNode": 3, "perNamespace": 5, "total": 10},
            "namespaces": {"exclude": ["kube-system"]}
        }
    })
}

fn base_zone() -> Value {
    json!({
        "apiVersion": "tidal.dev/v1alpha1",
        "kind": "RevocableZone",
        "metadata": {"name": "z"},
        "spec": {
            "windows": [{"time": "22:00-06:00"}, {"time": "00:00-00:00", "days": ["Sat", "Sun"]}],
            "timeZone": "Europe/Berlin",
            "evictPeriod": "2m",
            "drainBefore": "15m"
        },
        "status": {"open": false, "nextChange": "2026-11-23T21:00:00Z", "lastEvictionRound": null}
    })
}

/// `object` with the value at JSON pointer `pointer` replaced (or removed when `value` is `None`).
fn with(mut object: Value, pointer: &str, value: Option<Value>) -> Value {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer");
    let target = object
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("no object at {parent}"));
    match value {
        Some(value) => target.insert(key.to_owned(), value),
        None => target.remove(key),
    };
    object
}

#[test]
fn bases_are_valid() {
    let schemas = CrdValidator::new();
    for object in [base_policy(), base_zone()] {
        assert_accepted(&schemas, Path::new("<inline>"), &object);
    }
}

/// Values the schema or CEL must accept, so the checks are not simply refusing everything.
#[test]
fn edge_values_are_accepted() {
    let schemas = CrdValidator::new();
    let cases = [
        with(
            base_zone(),
            "/spec/windows",
            Some(json!([{"time": "08:00-21:00"}])),
        ),
        with(
            base_zone(),
            "/spec/windows",
            Some(
                json!([{"time": "23:59-00:00", "days": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]}]),
            ),
        ),
        with(
            base_zone(),
            "/spec/windows",
            Some(
                json!([{"time": "22:00-06:00", "days": ["Fri"]}, {"time": "22:00-06:00", "days": ["Sat"]}]),
            ),
        ),
        with(base_zone(), "/spec/drainBefore", Some(json!("23h59m"))),
        with(base_zone(), "/spec/drainBefore", None),
        with(base_zone(), "/spec/drainBefore", Some(json!("auto"))),
        with(base_zone(), "/spec/maxDrainBefore", Some(json!("23h"))),
        with(
            base_zone(),
            "/spec/budgetsAfterClose",
            Some(json!("Ignore")),
        ),
        with(base_zone(), "/spec/evictPeriod", Some(json!("1s"))),
        with(base_zone(), "/spec/timeZone", None),
        with(base_zone(), "/status", None),
        with(base_policy(), "/spec/interval", Some(json!("10s"))),
        with(base_policy(), "/spec/interval", None),
        with(
            base_policy(),
            "/spec/defaults/jobBudget",
            Some(json!({"minAvailable": 0})),
        ),
        with(
            base_policy(),
            "/spec/defaults/jobBudget",
            Some(json!({"maxUnavailable": "100%"})),
        ),
        with(
            base_policy(),
            "/spec/defaults/jobBudget",
            Some(json!({"minAvailable": 3})),
        ),
        with(base_policy(), "/spec/defaults", None),
        with(
            base_policy(),
            "/spec/namespaces",
            Some(json!({"include": ["batch"]})),
        ),
        with(
            base_policy(),
            "/spec/namespaces",
            Some(json!({"include": ["batch"], "exclude": []})),
        ),
        with(base_policy(), "/spec/strategies/tdm", Some(json!({}))),
        with(base_policy(), "/spec/mode", Some(json!("DryRun"))),
    ];
    for object in &cases {
        let verdict = check(&schemas, object);
        assert!(verdict.accepted(), "{}: {verdict:#?}", object["spec"]);
    }
}

enum Expect {
    /// The OpenAPI schema rejects it; the text appears in one of the errors.
    Schema(&'static str),
    /// A CEL rule rejects it with exactly this message.
    Cel(&'static str),
    /// tidal refuses it when it loads the object; the text appears in the error.
    Typed(&'static str),
}

#[test]
fn invalid_objects_are_rejected() {
    let schemas = CrdValidator::new();
    let cases: Vec<(&str, Value, Expect)> = vec![
        (
            "window hour 25",
            with(
                base_zone(),
                "/spec/windows",
                Some(json!([{"time": "25:00-06:00"}])),
            ),
            Expect::Schema("spec.windows[0].time"),
        ),
        (
            "window without minutes",
            with(
                base_zone(),
                "/spec/windows",
                Some(json!([{"time": "8-20"}])),
            ),
            Expect::Schema("spec.windows[0].time"),
        ),
        (
            "unknown weekday",
            with(
                base_zone(),
                "/spec/windows",
                Some(json!([{"time": "08:00-20:00", "days": ["Monday"]}])),
            ),
            Expect::Schema("spec.windows[0].days[0]"),
        ),
        (
            "no windows",
            with(base_zone(), "/spec/windows", Some(json!([]))),
            Expect::Schema("spec.windows"),
        ),
        (
            "duplicate windows",
            with(
                base_zone(),
                "/spec/windows",
                Some(json!([{"time": "22:00-06:00"}, {"time": "22:00-06:00"}])),
            ),
            Expect::Cel("windows must not repeat"),
        ),
        (
            "evictPeriod in words",
            with(base_zone(), "/spec/evictPeriod", Some(json!("5 minutes"))),
            Expect::Schema("spec.evictPeriod"),
        ),
        (
            "drainBefore of a day",
            with(base_zone(), "/spec/drainBefore", Some(json!("24h"))),
            Expect::Cel("drainBefore must be auto or shorter than 24h"),
        ),
        (
            "drainBefore neither auto nor a duration",
            with(base_zone(), "/spec/drainBefore", Some(json!("automatic"))),
            Expect::Schema("spec.drainBefore"),
        ),
        (
            "maxDrainBefore of a day",
            with(base_zone(), "/spec/maxDrainBefore", Some(json!("24h"))),
            Expect::Cel("maxDrainBefore must be shorter than 24h"),
        ),
        (
            "budgetsAfterClose of another value",
            with(base_zone(), "/spec/budgetsAfterClose", Some(json!("Skip"))),
            Expect::Schema("spec.budgetsAfterClose"),
        ),
        (
            "evictPeriod below a second",
            with(base_zone(), "/spec/evictPeriod", Some(json!("500ms"))),
            Expect::Cel("evictPeriod must be at least 1s"),
        ),
        (
            "misspelt zone field",
            with(base_zone(), "/spec/drainbefore", Some(json!("5m"))),
            Expect::Schema("drainbefore"),
        ),
        (
            "cooldown in words",
            with(
                base_policy(),
                "/spec/defaults/cooldown",
                Some(json!("5 minutes")),
            ),
            Expect::Schema("spec.defaults.cooldown"),
        ),
        (
            "both maxUnavailable and minAvailable",
            with(
                base_policy(),
                "/spec/defaults/jobBudget",
                Some(json!({"maxUnavailable": 1, "minAvailable": 2})),
            ),
            Expect::Cel("set exactly one of maxUnavailable and minAvailable"),
        ),
        (
            "empty budget",
            with(base_policy(), "/spec/defaults/jobBudget", Some(json!({}))),
            Expect::Cel("set exactly one of maxUnavailable and minAvailable"),
        ),
        (
            // The schema's `minimum: 0` refuses it at `kubectl apply`; tidal's own check is pinned here
            // for objects that bypassed the API server.
            "negative budget",
            with(
                base_policy(),
                "/spec/defaults/jobBudget",
                Some(json!({"maxUnavailable": -1})),
            ),
            Expect::Typed("must not be negative"),
        ),
        (
            "include and exclude",
            with(
                base_policy(),
                "/spec/namespaces",
                Some(json!({"include": ["a"], "exclude": ["b"]})),
            ),
            Expect::Cel("set include or exclude, not both"),
        ),
        (
            "no strategy",
            with(base_policy(), "/spec/strategies", Some(json!({}))),
            Expect::Schema("spec.strategies"),
        ),
        (
            "unknown strategy",
            with(
                base_policy(),
                "/spec/strategies",
                Some(json!({"lowNodeUtilization": {}})),
            ),
            Expect::Schema("lowNodeUtilization"),
        ),
        (
            "interval of a second",
            with(base_policy(), "/spec/interval", Some(json!("1s"))),
            Expect::Cel("interval must be at least 10s"),
        ),
        (
            "no mode",
            with(base_policy(), "/spec/mode", None),
            Expect::Schema("mode"),
        ),
        (
            "unknown mode",
            with(base_policy(), "/spec/mode", Some(json!("Delete"))),
            Expect::Schema("spec.mode"),
        ),
        (
            "negative limit",
            with(base_policy(), "/spec/limits/total", Some(json!(-1))),
            Expect::Schema("spec.limits.total"),
        ),
        (
            "preemptable as a string",
            with(
                base_policy(),
                "/spec/defaults/preemptable",
                Some(json!("yes")),
            ),
            Expect::Schema("spec.defaults.preemptable"),
        ),
    ];
    for (what, object, expect) in &cases {
        let verdict = check(&schemas, object);
        match expect {
            Expect::Schema(needle) => assert!(
                verdict.schema.iter().any(|e| e.contains(needle)),
                "{what}: the schema should reject it (mentioning {needle:?}): {verdict:#?}"
            ),
            Expect::Typed(needle) => assert!(
                verdict.typed.as_ref().is_err_and(|e| e.contains(needle)),
                "{what}: tidal should refuse it with {needle:?}: {verdict:#?}"
            ),
            Expect::Cel(message) => {
                assert!(
                    verdict
                        .cel
                        .iter()
                        .any(|(kind, text)| *kind == ErrorKind::ValidationFailure
                            && text.ends_with(message)),
                    "{what}: CEL should reject it with {message:?}: {verdict:#?}"
                );
                assert!(
                    verdict
                        .cel
                        .iter()
                        .all(|(kind, _)| *kind == ErrorKind::ValidationFailure),
                    "{what}: a rule failed to evaluate instead of deciding: {verdict:#?}"
                );
            }
        }
    }
}

/// What the schema lets through must not be looser than what tidal accepts when it loads the object, and
/// the reverse: both sides of each case agree.
#[test]
fn schema_and_rust_types_agree_on_durations_and_windows() {
    let schemas = CrdValidator::new();
    for (text, ok) in [
        ("1h30m", true),
        ("90s", true),
        ("0", true),
        ("1.5h", true),
        ("5 minutes", false),
        ("1d", false),
        ("-5m", false),
        ("5", false),
    ] {
        let object = with(base_policy(), "/spec/defaults/cooldown", Some(json!(text)));
        let verdict = check(&schemas, &object);
        assert_eq!(
            verdict.schema.is_empty(),
            ok,
            "schema on {text:?}: {verdict:#?}"
        );
        assert_eq!(
            verdict.typed.is_ok(),
            ok,
            "Rust type on {text:?}: {verdict:#?}"
        );
    }
    for (time, ok) in [
        ("00:00-23:59", true),
        ("23:00-23:00", true),
        ("24:00-06:00", false),
        ("08:60-09:00", false),
        ("8:00-09:00", false),
        ("08:00–09:00", false),
    ] {
        let object = with(base_zone(), "/spec/windows", Some(json!([{"time": time}])));
        let verdict = check(&schemas, &object);
        assert_eq!(
            verdict.schema.is_empty(),
            ok,
            "schema on {time:?}: {verdict:#?}"
        );
        assert_eq!(
            verdict.typed.is_ok(),
            ok,
            "Rust type on {time:?}: {verdict:#?}"
        );
    }
}

#[test]
fn int_or_string_budgets_are_checked_by_the_schema() {
    let schemas = CrdValidator::new();
    for (budget, ok) in [
        (json!({"maxUnavailable": 2}), true),
        (json!({"maxUnavailable": 0}), true),
        (json!({"minAvailable": "25%"}), true),
        (json!({"minAvailable": "100%"}), true),
        (json!({"maxUnavailable": -1}), false),
        (json!({"minAvailable": "150"}), false),
        (json!({"minAvailable": "150%"}), false),
        (json!({"maxUnavailable": "abc"}), false),
        (json!({"maxUnavailable": "-1%"}), false),
    ] {
        let object = with(
            base_policy(),
            "/spec/defaults/jobBudget",
            Some(budget.clone()),
        );
        let verdict = check(&schemas, &object);
        assert_eq!(
            verdict.schema.is_empty(),
            ok,
            "schema on {budget}: {verdict:#?}"
        );
        assert_eq!(verdict.typed.is_ok(), ok, "tidal on {budget}: {verdict:#?}");
        assert!(verdict.cel.is_empty(), "{budget}: {verdict:#?}");
    }
}
