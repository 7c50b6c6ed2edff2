//! What the schema and CEL layers refused, as sentences a person acts on: the field, what it holds and
//! what it may hold (`spec.evictPeriod is "-1m": write a duration such as 90s, 5m or 1h30m ...`),
//! instead of the validators' regular expressions and evaluation traces.

use jsonschema::error::{TypeKind, ValidationErrorKind};
use kube::core::cel::ErrorKind;
use serde_json::Value;

use super::{did_you_mean, display_path};
use crate::api::{
    duration::GO_DURATION_PATTERN,
    policy::PERCENT_PATTERN,
    zone::{TIME_ZONE_PATTERN, WINDOW_PATTERN},
};

/// What a field with `pattern` may hold, in words; `None` for a pattern tidal does not know.
fn allowed_by_pattern(pattern: &str) -> Option<&'static str> {
    if pattern == GO_DURATION_PATTERN {
        Some(concat!(
            "write a duration such as 90s, 5m or 1h30m: ",
            "digits and a unit (ns, us, ms, s, m or h), no sign, no space"
        ))
    } else if pattern.starts_with("^(auto|") {
        Some(concat!(
            "write auto or a duration such as 15m or 1h30m: ",
            "digits and a unit (ns, us, ms, s, m or h), no sign, no space"
        ))
    } else if pattern == WINDOW_PATTERN {
        Some(
            "write a daily window as HH:MM-HH:MM on a 24-hour clock (00:00 to 23:59), such as \
             20:00-06:00",
        )
    } else if pattern == PERCENT_PATTERN {
        Some(
            "write a percentage from 0% to 100% such as 25%, or a number of pods such as 2 (unquoted)",
        )
    } else if pattern == TIME_ZONE_PATTERN {
        Some("write an IANA time zone name such as Europe/Berlin or UTC")
    } else {
        None
    }
}

/// `"-1m"`, `10`, `[]`: a value as the user wrote it, shortened past a line.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        format!("{}...", text.chars().take(57).collect::<String>())
    } else {
        text
    }
}

/// A schema bound as written: `0`, not `0.0`.
fn number(limit: &Value) -> String {
    match limit.as_f64() {
        Some(n) if n.fract() == 0.0 && n.abs() < 1e15 => format!("{}", n as i64),
        _ => limit.to_string(),
    }
}

/// `a, b or c`.
fn alternatives(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [first @ .., last] => format!("{} or {last}", first.join(", ")),
    }
}

/// The names of the fields `schema` declares.
fn fields(schema: Option<&Value>) -> Vec<String> {
    schema
        .and_then(|s| s["properties"].as_object())
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The values `schema` allows when it lists them.
fn options(schema: Option<&Value>) -> Vec<String> {
    schema
        .and_then(|s| s["enum"].as_array())
        .map(|values| {
            values
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A JSON type in words.
fn type_words(kind: &TypeKind) -> String {
    let one = |t: &jsonschema::JsonType| match t.to_string().as_str() {
        "string" => "a string".to_owned(),
        "boolean" => "true or false".to_owned(),
        "integer" => "a whole number".to_owned(),
        "number" => "a number".to_owned(),
        "array" => "a list".to_owned(),
        "object" => "a mapping of fields".to_owned(),
        "null" => "nothing (null)".to_owned(),
        other => other.to_owned(),
    };
    match kind {
        TypeKind::Single(t) => one(t),
        TypeKind::Multiple(set) => {
            let words: Vec<String> = set.iter().map(|t| one(&t)).collect();
            alternatives(&words)
        }
    }
}

/// What the value is, in words, for a type error: `10, a number`.
fn value_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// The schema error `error` as sentences (one per unknown field; one otherwise). `draft` is the
/// JSON Schema the error's schema path points into.
pub(super) fn schema_sentences(draft: &Value, error: &jsonschema::ValidationError) -> Vec<String> {
    let field = display_path(&error.instance_path().to_string());
    let value = error.instance();
    // The schema of the field: the error's keyword is the last step of its schema path.
    let keyword_path = error.schema_path().to_string();
    let schema = keyword_path
        .rsplit_once('/')
        .and_then(|(parent, _)| draft.pointer(parent));
    let pattern_words = || {
        schema
            .and_then(|s| s["pattern"].as_str())
            .and_then(allowed_by_pattern)
    };
    let sentence = match error.kind() {
        ValidationErrorKind::Pattern { pattern } => match allowed_by_pattern(pattern) {
            Some(allowed) => format!("{field} is {}: {allowed}", shown(value)),
            None => format!(
                "{field} is {}: write a value that matches {pattern}",
                shown(value)
            ),
        },
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let declared = fields(schema);
            return unexpected
                .iter()
                .map(|name| {
                    let guess = did_you_mean(name, declared.iter().map(String::as_str));
                    match guess {
                        Some(meant) => {
                            format!("{field} has no field {name:?}: did you mean {meant:?}?")
                        }
                        None => format!(
                            "{field} has no field {name:?}: its fields are {}",
                            declared.join(", ")
                        ),
                    }
                })
                .collect();
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            let required = schema.and_then(|s| s["properties"].get(name));
            let path = if field == "(root)" {
                name.to_owned()
            } else {
                format!("{field}.{name}")
            };
            let (values, names) = (options(required), fields(required));
            if !values.is_empty() {
                format!("{path} is required: write {}", alternatives(&values))
            } else if !names.is_empty() {
                format!(
                    "{path} is required, with at least one of {}",
                    names.join(", ")
                )
            } else {
                format!("{path} is required")
            }
        }
        ValidationErrorKind::Enum { .. } => {
            let values = options(schema);
            let guess = value
                .as_str()
                .and_then(|v| did_you_mean(v, values.iter().map(String::as_str)))
                .map_or(String::new(), |meant| format!(" (did you mean {meant}?)"));
            format!(
                "{field} is {}: write {}{guess}",
                shown(value),
                alternatives(&values)
            )
        }
        ValidationErrorKind::Type { kind } => {
            let wanted = pattern_words()
                .map_or_else(|| format!("write {}", type_words(kind)), ToOwned::to_owned);
            format!(
                "{field} is {}, {}: {wanted}",
                shown(value),
                value_kind(value)
            )
        }
        ValidationErrorKind::AnyOf { .. } => {
            let wanted = pattern_words().map_or_else(
                || "write a whole number or a string".to_owned(),
                ToOwned::to_owned,
            );
            format!("{field} is {}: {wanted}", shown(value))
        }
        ValidationErrorKind::Minimum { limit } => {
            format!(
                "{field} is {}: write {} or more",
                shown(value),
                number(limit)
            )
        }
        ValidationErrorKind::Maximum { limit } => {
            format!(
                "{field} is {}: write {} or less",
                shown(value),
                number(limit)
            )
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!(
                "{field} is {}: write more than {}",
                shown(value),
                number(limit)
            )
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!(
                "{field} is {}: write less than {}",
                shown(value),
                number(limit)
            )
        }
        ValidationErrorKind::MinItems { limit } => {
            if value.as_array().is_some_and(Vec::is_empty) {
                format!("{field} is empty: give at least {limit}")
            } else {
                format!("{field} lists too few: give at least {limit}")
            }
        }
        ValidationErrorKind::MaxItems { limit } => {
            format!("{field} lists too many: give at most {limit}")
        }
        ValidationErrorKind::MinLength { limit } => {
            format!(
                "{field} is {}: write at least {limit} character(s)",
                shown(value)
            )
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!(
                "{field} is {}: write at most {limit} characters",
                shown(value)
            )
        }
        ValidationErrorKind::MinProperties { limit } => {
            let names = fields(schema);
            if names.is_empty() {
                format!("{field} is empty: give at least {limit} field(s)")
            } else {
                format!(
                    "{field} is empty: give at least {limit} of {}",
                    names.join(", ")
                )
            }
        }
        ValidationErrorKind::UniqueItems => {
            format!("{field} lists a value twice: give each once")
        }
        _ => format!("{field}: {error}"),
    };
    vec![sentence]
}

/// A CEL failure, `None` when it only repeats what the schema said: a rule that could not be
/// evaluated on a value the schema already refused, or a rule over a field the schema refused.
pub(super) fn cel_sentence(
    error: &kube::core::cel::ValidationError,
    schema_fields: &[String],
) -> Option<String> {
    let refused_here = |field: &str| {
        let path = if error.field_path.is_empty() {
            field.to_owned()
        } else {
            format!("{}.{field}", error.field_path)
        };
        schema_fields
            .iter()
            .any(|refused| refused == &path || refused.starts_with(&format!("{path}.")))
    };
    // The fields whose values the rule reads; `has(self.x)` asks only whether one is set, which the
    // schema's refusal of its value does not answer.
    let mentioned: Vec<&str> = error
        .rule
        .match_indices("self.")
        .filter(|(at, _)| !error.rule[..*at].ends_with("has("))
        .map(|(at, _)| {
            let rest = &error.rule[at + "self.".len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect();
    match error.kind {
        ErrorKind::ValidationFailure if mentioned.iter().any(|f| refused_here(f)) => None,
        ErrorKind::ValidationFailure => Some(if error.field_path.is_empty() {
            error.message.clone()
        } else {
            format!("{}: {}", error.field_path, error.message)
        }),
        _ if !schema_fields.is_empty() => None,
        _ => Some(format!(
            "{}: the rule {} could not be checked: {}",
            if error.field_path.is_empty() {
                "(root)"
            } else {
                &error.field_path
            },
            error.rule,
            error.message
        )),
    }
}
