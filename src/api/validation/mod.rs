//! The checks `kubectl apply` gets from the API server for tidal's own kinds: the CRD's OpenAPI schema
//! and its CEL rules. Saved clusters never pass through an API server, so `tidal report` runs them
//! itself: a dump is refused exactly where `kubectl apply` would have refused the object.

mod sentences;

use std::{collections::BTreeMap, fmt};

use kube::core::cel::{ErrorKind, Validator};
use serde_json::{Value, json};

/// Validates objects of tidal's kinds against the CRDs generated from the Rust types.
pub struct CrdValidator {
    kinds: BTreeMap<String, KindSchema>,
}

struct KindSchema {
    /// The CRD's `openAPIV3Schema`, which carries the CEL rules.
    raw: Value,
    /// `raw` as the JSON Schema `schema` was compiled from, to name the fields an object may have.
    draft: Value,
    schema: jsonschema::Validator,
}

/// Everything wrong with one object, by layer.
#[derive(Debug, Default)]
pub struct Violations {
    /// OpenAPI schema errors, each a sentence that starts with the field (`spec.windows[0].time is
    /// "25:00-26:00": write ...`).
    pub schema: Vec<String>,
    /// CEL rule failures as `path: message`.
    pub cel: Vec<(ErrorKind, String)>,
    /// What a person is told: the schema's sentences, then the CEL failures that add to them.
    shown: Vec<String>,
}

impl Violations {
    pub fn is_empty(&self) -> bool {
        self.schema.is_empty() && self.cel.is_empty()
    }
}

/// `kubectl apply would refuse it: spec.evictPeriod is "-1m": write ...`; several, one a line.
impl fmt::Display for Violations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("kubectl apply would refuse it:")?;
        match self.shown.as_slice() {
            [one] => write!(f, " {one}"),
            several => several.iter().try_for_each(|s| write!(f, "\n  - {s}")),
        }
    }
}

impl fmt::Debug for CrdValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CrdValidator")
            .field("kinds", &self.kinds.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Default for CrdValidator {
    fn default() -> Self {
        Self::new()
    }
}

impl CrdValidator {
    pub fn new() -> Self {
        let kinds = super::crds()
            .into_iter()
            .map(|crd| {
                let kind = crd.spec.names.kind.clone();
                let crd = serde_json::to_value(&crd).expect("a CRD always serializes to JSON");
                let raw = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone();
                let mut draft = to_json_schema(&raw);
                // The API server checks apiVersion, kind and metadata itself; declare them so that strict
                // field checking does not trip on them.
                if let Some(properties) = draft["properties"].as_object_mut() {
                    properties.insert("apiVersion".into(), json!({"type": "string"}));
                    properties.insert("kind".into(), json!({"type": "string"}));
                    properties.insert("metadata".into(), json!({"type": "object"}));
                }
                // Our own generated schema: failing to compile it is a bug caught by the tests, not input.
                let schema = jsonschema::options()
                    .should_validate_formats(true)
                    .should_ignore_unknown_formats(true)
                    .build(&draft)
                    .unwrap_or_else(|e| panic!("{kind}: generated schema does not compile: {e}"));
                (kind, KindSchema { raw, draft, schema })
            })
            .collect();
        CrdValidator { kinds }
    }

    /// The kinds this validator knows (`RevocableZone`, `DeschedulingPolicy`).
    pub fn knows(&self, kind: &str) -> bool {
        self.kinds.contains_key(kind)
    }

    /// Checks `object` (of a kind [`Self::knows`]) as the API server would on `kubectl apply`.
    pub fn validate(&self, object: &Value) -> Result<(), Violations> {
        let kind = object["kind"].as_str().unwrap_or_default();
        let Some(kind_schema) = self.kinds.get(kind) else {
            let wrong = format!("kind {kind:?} is not one of tidal's kinds");
            return Err(Violations {
                schema: vec![wrong.clone()],
                cel: Vec::new(),
                shown: vec![wrong],
            });
        };
        let mut refused_fields = Vec::new();
        let mut violations = Violations::default();
        for error in kind_schema.schema.iter_errors(object) {
            refused_fields.push(display_path(&error.instance_path().to_string()));
            violations
                .schema
                .extend(sentences::schema_sentences(&kind_schema.draft, &error));
        }
        violations.shown = violations.schema.clone();
        if let Err(errors) = Validator::new().validate(&kind_schema.raw, object, None) {
            for error in errors {
                violations
                    .shown
                    .extend(sentences::cel_sentence(&error, &refused_fields));
                violations.cel.push((error.kind.clone(), error.to_string()));
            }
        }
        if violations.is_empty() {
            Ok(())
        } else {
            Err(violations)
        }
    }
}

/// The name among `known` that `wanted` most likely misspells: the same but for case, else one within a
/// few edits.
pub fn did_you_mean<'a>(wanted: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let wanted = wanted.to_lowercase();
    known
        .map(|name| (strsim::levenshtein(&wanted, &name.to_lowercase()), name))
        .filter(|(distance, name)| *distance <= (name.len() / 3).max(2))
        .min()
        .map(|(_, name)| name)
}

/// `/spec/windows/0` as `spec.windows[0]`, the way kubectl names fields.
fn display_path(pointer: &str) -> String {
    let mut out = String::new();
    for part in pointer.split('/').filter(|p| !p.is_empty()) {
        if part.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(part);
        }
    }
    if out.is_empty() {
        "(root)".to_owned()
    } else {
        out
    }
}

/// The OpenAPI v3 schema of a CRD translated to JSON Schema the way the API server reads it:
/// `nullable: true` admits null, `x-kubernetes-int-or-string` admits an integer or a string, and objects
/// reject fields they do not declare (kubectl's default `--validate=strict` refuses unknown fields rather
/// than letting the API server silently drop a misspelt setting).
pub(super) fn to_json_schema(node: &Value) -> Value {
    let Value::Object(map) = node else {
        return node.clone();
    };
    let mut out = serde_json::Map::new();
    for (key, value) in map {
        let converted = match key.as_str() {
            "properties" => Value::Object(
                value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, child)| (name.clone(), to_json_schema(child)))
                    .collect(),
            ),
            "items" | "additionalProperties" => to_json_schema(value),
            _ => value.clone(),
        };
        out.insert(key.clone(), converted);
    }
    let nullable = map.get("nullable") == Some(&Value::Bool(true));
    if map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        let mut types = vec![json!({"type": "integer"}), json!({"type": "string"})];
        if nullable {
            types.push(json!({"type": "null"}));
        }
        out.insert("anyOf".into(), Value::Array(types));
    } else if nullable && let Some(Value::String(ty)) = map.get("type") {
        out.insert("type".into(), json!([ty, "null"]));
    }
    // The API server refuses a `set` list with repeated items; structural schemas may not say
    // `uniqueItems` themselves, so the translation adds it.
    if map.get("x-kubernetes-list-type") == Some(&Value::String("set".into())) {
        out.insert("uniqueItems".into(), Value::Bool(true));
    }
    if map.contains_key("properties") && !map.contains_key("additionalProperties") {
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_like_kubectl_fields() {
        assert_eq!(display_path("/spec/windows/0/time"), "spec.windows[0].time");
        assert_eq!(display_path(""), "(root)");
    }

    #[test]
    fn each_layer_refuses_what_it_owns() {
        let validator = CrdValidator::new();
        let zone = |spec: Value| {
            json!({"apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone",
                   "metadata": {"name": "z"}, "spec": spec})
        };
        assert!(
            validator
                .validate(&zone(json!({"windows": [{"time": "08:00-20:00"}]})))
                .is_ok()
        );
        let pattern = validator
            .validate(&zone(json!({"windows": [{"time": "8-20"}]})))
            .unwrap_err();
        assert!(
            pattern
                .schema
                .iter()
                .any(|e| e.starts_with("spec.windows[0].time")),
            "{pattern:?}"
        );
        let unknown = validator
            .validate(&zone(
                json!({"windows": [{"time": "08:00-20:00"}], "timezone": "UTC"}),
            ))
            .unwrap_err();
        assert!(unknown.to_string().contains("timezone"), "{unknown}");
        let cel = validator
            .validate(&zone(
                json!({"windows": [{"time": "08:00-20:00"}], "drainBefore": "30h"}),
            ))
            .unwrap_err();
        assert!(
            cel.cel
                .iter()
                .any(|(_, m)| m.contains("drainBefore must be auto or shorter than 24h")),
            "{cel:?}"
        );
    }

    #[test]
    fn an_unknown_field_names_the_declared_one_it_likely_means() {
        let validator = CrdValidator::new();
        let policy = json!({"apiVersion": "tidal.dev/v1alpha1", "kind": "DeschedulingPolicy",
            "metadata": {"name": "p"},
            "spec": {"mode": "DryRun", "strategies": {"LowNodeUtilization": {}},
                     "namespaces": {"exclude": ["kube-system"]}, "protection": {}}});
        let error = validator.validate(&policy).unwrap_err().to_string();
        assert!(
            error.contains(
                r#"spec.strategies has no field "LowNodeUtilization": did you mean "lowNodeUtilization"?"#
            ),
            "{error}"
        );
        assert!(
            error.contains(r#"spec has no field "protection": did you mean "protections"?"#),
            "{error}"
        );
        // Nothing close: no guess.
        let zone = json!({"apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone",
            "metadata": {"name": "z"},
            "spec": {"windows": [{"time": "08:00-20:00"}], "yarnQueue": "a"}});
        let error = validator.validate(&zone).unwrap_err().to_string();
        assert!(!error.contains("did you mean"), "{error}");
        assert!(error.contains("its fields are "), "{error}");
    }

    /// Each refusal is a sentence naming the field, what it holds and what it may hold: no regular
    /// expression, no CEL trace, and no rule failure that only repeats a refused value.
    #[test]
    fn refusals_read_as_sentences_naming_the_field_and_what_is_allowed() {
        let validator = CrdValidator::new();
        let zone = |spec: Value| {
            json!({"apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone",
                   "metadata": {"name": "z"}, "spec": spec})
        };
        let policy = |spec: Value| {
            json!({"apiVersion": "tidal.dev/v1alpha1", "kind": "DeschedulingPolicy",
                   "metadata": {"name": "p"}, "spec": spec})
        };
        let said = |object: Value| validator.validate(&object).unwrap_err().to_string();
        let cases = [
            (
                said(zone(json!({"windows": [{"time": "25:00-26:00"}]}))),
                r#"kubectl apply would refuse it: spec.windows[0].time is "25:00-26:00": write a daily window as HH:MM-HH:MM on a 24-hour clock (00:00 to 23:59), such as 20:00-06:00"#,
            ),
            (
                said(zone(
                    json!({"windows": [{"time": "20:00-06:00"}], "evictPeriod": "-1m"}),
                )),
                r#"kubectl apply would refuse it: spec.evictPeriod is "-1m": write a duration such as 90s, 5m or 1h30m: digits and a unit (ns, us, ms, s, m or h), no sign, no space"#,
            ),
            (
                said(policy(
                    json!({"mode": "DryRun", "interval": "5x", "strategies": {"tdm": {}}}),
                )),
                r#"kubectl apply would refuse it: spec.interval is "5x": write a duration such as 90s, 5m or 1h30m: digits and a unit (ns, us, ms, s, m or h), no sign, no space"#,
            ),
            (
                said(policy(
                    json!({"mode": "DryRun", "strategies": {"lowNodeUtilization": {
                    "thresold": {"cpu": 20}, "thresholds": {"cpu": 20},
                    "targetThresholds": {"cpu": 50}}}}),
                )),
                r#"kubectl apply would refuse it: spec.strategies.lowNodeUtilization has no field "thresold": did you mean "thresholds"?"#,
            ),
            (
                said(policy(json!({"mode": "Dryrun", "strategies": {"tdm": {}}}))),
                r#"kubectl apply would refuse it: spec.mode is "Dryrun": write Evict or DryRun (did you mean DryRun?)"#,
            ),
            (
                said(policy(
                    json!({"strategies": {"tdm": {}}, "limits": {"total": -1}}),
                )),
                "kubectl apply would refuse it:\n  - spec.mode is required: write Evict or DryRun\n  \
                 - spec.limits.total is -1: write 0 or more",
            ),
        ];
        for (said, expected) in cases {
            assert_eq!(said, expected);
        }
        // A rule over a value the schema refused adds nothing; one that says something else stays.
        let both = said(policy(json!({"mode": "DryRun", "strategies": {"tdm": {}},
            "defaults": {"jobBudget": {"maxUnavailable": "1", "minAvailable": 2}}})));
        assert!(
            both.ends_with(
                "spec.defaults.jobBudget: set exactly one of maxUnavailable and minAvailable"
            ),
            "{both}"
        );
        assert!(
            both.contains(r#"maxUnavailable is "1": write a percentage"#),
            "{both}"
        );
    }

    #[test]
    fn did_you_mean_ignores_case_and_small_typos() {
        let known = ["removeDuplicates", "podLifeTime", "tdm"];
        let guess = |w| did_you_mean(w, known.into_iter());
        assert_eq!(guess("RemoveDuplicates"), Some("removeDuplicates"));
        assert_eq!(guess("podLifetime"), Some("podLifeTime"));
        assert_eq!(guess("PodLifeTime"), Some("podLifeTime"));
        assert_eq!(guess("tmd"), Some("tdm"));
        assert_eq!(guess("lowNodeUtilization"), None);
    }
}
