//! Reading saved clusters: what `kubectl get ... -o yaml` (a `List`), multi-document YAML or JSON holds,
//! replayed into a [`ClusterCache`] through the same ingest path that watch events take.

use jiff::Timestamp;
use std::{
    collections::BTreeMap,
    fmt,
    path::{Path, PathBuf},
};

use k8s_openapi::api::{
    core::v1::{Namespace, Node, Pod},
    policy::v1::PodDisruptionBudget,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{
    api::{
        DeschedulingPolicy, PodGroup, RevocableZone,
        usage::{NodeMetrics, PodMetrics},
        validation::CrdValidator,
    },
    cluster::{ClusterCache, Ingest, ObjectKey, UsageSample, usage},
    planner,
};

/// The kinds tidal reads, at the one version it reads each: the same kind at another version is an
/// error rather than silently ignored, so a plan never leaves out objects the user meant it to see.
const READ_KINDS: [(&str, &str); 9] = [
    ("v1", "Pod"),
    ("v1", "Node"),
    ("v1", "Namespace"),
    ("policy/v1", "PodDisruptionBudget"),
    ("scheduling.volcano.sh/v1beta1", "PodGroup"),
    ("metrics.k8s.io/v1beta1", "NodeMetrics"),
    ("metrics.k8s.io/v1beta1", "PodMetrics"),
    ("tidal.dev/v1alpha1", "RevocableZone"),
    ("tidal.dev/v1alpha1", "DeschedulingPolicy"),
];

/// A cluster read from files.
#[derive(Debug, Default)]
pub struct Dump {
    pub cache: ClusterCache,
    /// Objects of kinds tidal does not read (ReplicaSets, Deployments, ...), by `apiVersion kind`.
    pub ignored: BTreeMap<String, usize>,
    pub objects: usize,
    /// PodMetrics read before their pod: applied once the pod has been read.
    pending_pod_usage: Vec<(ObjectKey, UsageSample)>,
    /// Built on the first tidal object: most dumps hold a handful of them.
    crd_validator: Option<CrdValidator>,
}

#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    // The source's text is already in the message: do not expose it again as a cause.
    #[error("{path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{path}: not valid YAML or JSON: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error("{path}: {object}: {message}")]
    Object {
        path: PathBuf,
        object: String,
        message: String,
    },
}

impl Dump {
    pub fn load(paths: &[PathBuf]) -> Result<Dump, DumpError> {
        let mut dump = Dump::default();
        for path in paths {
            let text = std::fs::read_to_string(path).map_err(|e| DumpError::Read {
                path: path.clone(),
                message: e.to_string(),
            })?;
            dump.add_text(path, &text)?;
        }
        Ok(dump)
    }

    /// Adds the objects in `text` (read from `path`, which is only used in messages).
    pub fn add_text(&mut self, path: &Path, text: &str) -> Result<(), DumpError> {
        let syntax = |message: String| DumpError::Syntax {
            path: path.to_owned(),
            message,
        };
        let documents = parse_documents(text).map_err(syntax)?;
        if documents.is_empty() {
            return Err(syntax("holds no Kubernetes objects".to_owned()));
        }
        let mut items = Vec::new();
        for document in documents {
            flatten_lists(document, &mut items).map_err(syntax)?;
        }
        for (index, item) in items.into_iter().enumerate() {
            self.add_object(item)
                .map_err(|(object, message)| DumpError::Object {
                    path: path.to_owned(),
                    object: format!("item {} ({object})", index + 1),
                    message,
                })?;
        }
        let cache = &mut self.cache;
        self.pending_pod_usage.retain(|(key, sample)| {
            if cache.pod(key).is_none() {
                return true;
            }
            cache.record_pod_usage(key, sample.clone());
            false
        });
        Ok(())
    }

    fn add_object(&mut self, item: Value) -> Result<(), (ObjectName, String)> {
        let name = ObjectName::of(&item);
        if !item.is_object() {
            return Err((name, "not a Kubernetes object".to_owned()));
        }
        if name.api_version.is_empty() || name.kind.is_empty() {
            return Err((name, "an object needs both apiVersion and kind".to_owned()));
        }
        if name.api_version.starts_with("tidal.dev/") {
            self.validate_tidal_object(&name, &item)?;
        }
        let cache = &mut self.cache;
        let result = match (name.api_version.as_str(), name.kind.as_str()) {
            ("v1", "Pod") => ingest::<Pod>(cache, item),
            ("v1", "Node") => ingest::<Node>(cache, item),
            ("v1", "Namespace") => ingest::<Namespace>(cache, item),
            ("metrics.k8s.io/v1beta1", "NodeMetrics") => typed::<NodeMetrics>(item)
                .and_then(|m| usage::node_sample(&m))
                .map(|(node, sample)| cache.record_node_usage(&node, sample)),
            ("metrics.k8s.io/v1beta1", "PodMetrics") => typed::<PodMetrics>(item)
                .and_then(|m| usage::pod_sample(&m))
                .map(|sample| self.pending_pod_usage.push(sample)),
            ("policy/v1", "PodDisruptionBudget") => ingest::<PodDisruptionBudget>(cache, item),
            ("scheduling.volcano.sh/v1beta1", "PodGroup") => ingest::<PodGroup>(cache, item),
            ("tidal.dev/v1alpha1", "RevocableZone") => ingest::<RevocableZone>(cache, item),
            ("tidal.dev/v1alpha1", "DeschedulingPolicy") => {
                ingest::<DeschedulingPolicy>(cache, item)
            }
            _ => {
                if let Some((read_as, _)) = READ_KINDS.iter().find(|(_, kind)| *kind == name.kind) {
                    return Err((
                        name.clone(),
                        format!(
                            "tidal reads {} as {read_as}, not {}",
                            name.kind, name.api_version
                        ),
                    ));
                }
                *self
                    .ignored
                    .entry(format!("{} {}", name.api_version, name.kind))
                    .or_default() += 1;
                return Ok(());
            }
        };
        result.map_err(|message| (name.clone(), message))?;
        // A saved cluster is input the user can fix, so configuration that a live controller would merely
        // refuse to act on (and warn about) stops the run here.
        let config_error = match name.kind.as_str() {
            "RevocableZone" => self
                .cache
                .zone(name.name.as_deref().unwrap_or_default())
                .and_then(|zone| zone.schedule.as_ref().err().cloned()),
            "DeschedulingPolicy" => self
                .cache
                .policy(name.name.as_deref().unwrap_or_default())
                .and_then(|policy| planner::runnable_strategies(policy).err()),
            _ => None,
        };
        if let Some(error) = config_error {
            return Err((name, error));
        }
        self.objects += 1;
        Ok(())
    }
}

impl Dump {
    /// What `kubectl apply` would have refused (CRD schema and CEL rules) is refused here too.
    fn validate_tidal_object(
        &mut self,
        name: &ObjectName,
        item: &Value,
    ) -> Result<(), (ObjectName, String)> {
        let validator = self.crd_validator.get_or_insert_with(CrdValidator::new);
        if !validator.knows(&name.kind) || name.api_version != "tidal.dev/v1alpha1" {
            return Err((
                name.clone(),
                format!(
                    "tidal.dev has no {} {}: tidal reads RevocableZone and DeschedulingPolicy as \
                     tidal.dev/v1alpha1",
                    name.api_version, name.kind
                ),
            ));
        }
        validator
            .validate(item)
            .map_err(|violations| (name.clone(), format!("rejected by the CRD: {violations}")))
    }

    /// Objects of kinds tidal does not read, as one line for the report, e.g.
    /// `ignored 7 objects tidal does not read: apps/v1 Deployment (2), apps/v1 ReplicaSet (5)`.
    pub fn ignored_note(&self) -> Option<String> {
        if self.ignored.is_empty() {
            return None;
        }
        let total: usize = self.ignored.values().sum();
        let kinds: Vec<String> = self
            .ignored
            .iter()
            .map(|(kind, count)| format!("{kind} ({count})"))
            .collect();
        Some(format!(
            "ignored {total} object(s) tidal does not read: {}",
            kinds.join(", ")
        ))
    }
}

fn ingest<K: Ingest>(cache: &mut ClusterCache, value: Value) -> Result<(), String> {
    let object: K = typed(value)?;
    // A dump is one instant without history: no pod departs while it is read, so the instant objects
    // are observed at never matters. A fixed one keeps loading deterministic.
    object.apply_to(cache, Timestamp::UNIX_EPOCH)
}

/// JSON if the text starts like JSON, else (multi-document) YAML.
fn parse_documents(text: &str) -> Result<Vec<Value>, String> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let value: Value = serde_json::from_str(trimmed).map_err(|e| e.to_string())?;
        return Ok(match value {
            Value::Array(items) => items,
            other => vec![other],
        });
    }
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(yaml_budget(text.len()));
    let documents: Vec<Value> =
        serde_saphyr::from_multiple_with_options(text, options).map_err(|e| {
            let error = e.to_string();
            if error.contains("budget") {
                format!(
                    "{error}: the file exceeds tidal's YAML limits (scaled to the file's size, against \
                     alias bombs and absurd nesting); the same objects as JSON (`-o json`) have none"
                )
            } else {
                error
            }
        })?;
    Ok(documents.into_iter().filter(|d| !d.is_null()).collect())
}

/// The YAML parser's limits against YAML bombs, scaled to the input: a plain document cannot have
/// more nodes, events or scalar bytes than it has bytes, whatever the cluster's size; only aliases
/// (capped absolutely) and nesting (a fixed depth) could blow it up. The parser's defaults stop at
/// 250,000 nodes, a few thousand pods.
fn yaml_budget(input_bytes: usize) -> serde_saphyr::Budget {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_reader_input_bytes =
        Some(input_bytes.max(budget.max_reader_input_bytes.unwrap_or(0)));
    budget.max_events = budget.max_events.max(input_bytes.saturating_mul(2));
    budget.max_nodes = budget.max_nodes.max(input_bytes);
    budget.max_total_scalar_bytes = budget.max_total_scalar_bytes.max(input_bytes);
    budget
}

/// Expands `kind: List` (and `PodList`, `NodeList`, ...) into their items, recursively. Items of a typed
/// list (`NodeMetricsList` from `kubectl get --raw`) carry no kind of their own: they get the list's.
fn flatten_lists(value: Value, out: &mut Vec<Value>) -> Result<(), String> {
    let list_kind = value
        .get("kind")
        .and_then(Value::as_str)
        .and_then(|kind| kind.strip_suffix("List"))
        .map(str::to_owned);
    match (list_kind, value) {
        (Some(item_kind), Value::Object(mut map)) => {
            let api_version = map.get("apiVersion").cloned();
            let items = match map.remove("items") {
                Some(Value::Array(items)) => items,
                // `kubectl get` of nothing writes `items: []`; some tools drop the key or write null.
                None | Some(Value::Null) => Vec::new(),
                Some(other) => {
                    return Err(format!(
                        "a {item_kind}List's items must be a list, not {other}"
                    ));
                }
            };
            for mut item in items {
                if let Value::Object(fields) = &mut item
                    && !item_kind.is_empty()
                    && !fields.contains_key("kind")
                {
                    fields.insert("kind".to_owned(), Value::String(item_kind.clone()));
                    if let Some(api_version) = &api_version {
                        fields
                            .entry("apiVersion")
                            .or_insert_with(|| api_version.clone());
                    }
                }
                flatten_lists(item, out)?;
            }
        }
        (_, value) => out.push(value),
    }
    Ok(())
}

fn typed<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            e.into_inner().to_string()
        } else {
            format!("{path}: {}", e.into_inner())
        }
    })
}

/// `Pod shop/web-1` for messages, read before the object is typed (so it works on malformed objects).
#[derive(Clone, Debug)]
struct ObjectName {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: Option<String>,
}

impl ObjectName {
    fn of(value: &Value) -> Self {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let meta = value.get("metadata");
        ObjectName {
            api_version: text(value.get("apiVersion")).unwrap_or_default(),
            kind: text(value.get("kind")).unwrap_or_default(),
            namespace: text(meta.and_then(|m| m.get("namespace"))),
            name: text(meta.and_then(|m| m.get("name"))),
        }
    }
}

impl fmt::Display for ObjectName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name.as_deref().unwrap_or("<no name>");
        let kind = if self.kind.is_empty() {
            "<no kind>"
        } else {
            &self.kind
        };
        match &self.namespace {
            Some(namespace) => write!(f, "{kind} {namespace}/{name}"),
            None => write!(f, "{kind} {name}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_yaml_dump_beyond_the_parsers_default_node_budget_loads() {
        // About 17 YAML nodes per pod: 18,000 pods are ~300,000 nodes, past the default 250,000.
        let mut text = String::from("apiVersion: v1\nkind: List\nitems:\n");
        for i in 0..18_000 {
            text.push_str(&format!(
                "- apiVersion: v1\n  kind: Pod\n  metadata: {{name: p{i}, namespace: ns}}\n  spec: {{nodeName: n1}}\n  status: {{phase: Running}}\n"
            ));
        }
        let documents = parse_documents(&text).unwrap();
        assert_eq!(documents[0]["items"].as_array().unwrap().len(), 18_000);
    }

    #[test]
    fn alias_bombs_are_still_refused_with_a_word_on_why() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..9 {
            let refs = vec![format!("*a{}", level - 1); 10].join(", ");
            text.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
        }
        let error = parse_documents(&text).unwrap_err();
        assert!(error.contains("YAML limits"), "{error}");
    }
}
