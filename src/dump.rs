//! Reading saved clusters: what `kubectl get ... -o yaml` (a `List`), multi-document YAML or JSON holds,
//! replayed into a [`ClusterCache`] through the same ingest path that watch events take.

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
        metrics::{NodeMetrics, PodMetrics},
    },
    cluster::{ClusterCache, Ingest, ObjectKey, UsageSample, metrics},
};

/// A cluster read from files.
#[derive(Debug, Default)]
pub struct Dump {
    pub cache: ClusterCache,
    /// Objects of kinds tidal does not read (ReplicaSets, Deployments, ...), by `apiVersion kind`.
    pub ignored: BTreeMap<String, usize>,
    pub objects: usize,
    /// PodMetrics read before their pod: applied once the pod has been read.
    pending_pod_usage: Vec<(ObjectKey, UsageSample)>,
}

#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
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
            let text = std::fs::read_to_string(path).map_err(|source| DumpError::Read {
                path: path.clone(),
                source,
            })?;
            dump.add_text(path, &text)?;
        }
        Ok(dump)
    }

    /// Adds the objects in `text` (read from `path`, which is only used in messages).
    pub fn add_text(&mut self, path: &Path, text: &str) -> Result<(), DumpError> {
        let documents = parse_documents(text).map_err(|message| DumpError::Syntax {
            path: path.to_owned(),
            message,
        })?;
        let mut items = Vec::new();
        for document in documents {
            flatten_lists(document, &mut items);
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
        let cache = &mut self.cache;
        let result = match (name.api_version.as_str(), name.kind.as_str()) {
            ("v1", "Pod") => ingest::<Pod>(cache, item),
            ("v1", "Node") => ingest::<Node>(cache, item),
            ("v1", "Namespace") => ingest::<Namespace>(cache, item),
            ("metrics.k8s.io/v1beta1", "NodeMetrics") => typed::<NodeMetrics>(item)
                .and_then(|m| metrics::node_sample(&m))
                .map(|(node, sample)| cache.record_node_usage(&node, sample)),
            ("metrics.k8s.io/v1beta1", "PodMetrics") => typed::<PodMetrics>(item)
                .and_then(|m| metrics::pod_sample(&m))
                .map(|sample| self.pending_pod_usage.push(sample)),
            ("policy/v1", "PodDisruptionBudget") => ingest::<PodDisruptionBudget>(cache, item),
            ("scheduling.volcano.sh/v1beta1", "PodGroup") => ingest::<PodGroup>(cache, item),
            ("tidal.dev/v1alpha1", "RevocableZone") => ingest::<RevocableZone>(cache, item),
            ("tidal.dev/v1alpha1", "DeschedulingPolicy") => {
                ingest::<DeschedulingPolicy>(cache, item)
            }
            _ => {
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
                .and_then(|policy| policy.default_budget.as_ref().err().cloned()),
            _ => None,
        };
        if let Some(error) = config_error {
            return Err((name, error));
        }
        self.objects += 1;
        Ok(())
    }
}

fn ingest<K: Ingest>(cache: &mut ClusterCache, value: Value) -> Result<(), String> {
    let object: K = typed(value)?;
    object.apply_to(cache)
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
    let documents: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| e.to_string())?;
    Ok(documents.into_iter().filter(|d| !d.is_null()).collect())
}

/// Expands `kind: List` (and `PodList`, `NodeList`, ...) into their items, recursively. Items of a typed
/// list (`NodeMetricsList` from `kubectl get --raw`) carry no kind of their own: they get the list's.
fn flatten_lists(value: Value, out: &mut Vec<Value>) {
    let list_kind = value
        .get("kind")
        .and_then(Value::as_str)
        .and_then(|kind| kind.strip_suffix("List"))
        .map(str::to_owned);
    match (list_kind, value) {
        (Some(item_kind), Value::Object(mut map)) => {
            let api_version = map.get("apiVersion").cloned();
            if let Some(Value::Array(items)) = map.remove("items") {
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
                    flatten_lists(item, out);
                }
            }
        }
        (_, value) => out.push(value),
    }
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
            kind: text(value.get("kind")).unwrap_or_else(|| "<no kind>".to_owned()),
            namespace: text(meta.and_then(|m| m.get("namespace"))),
            name: text(meta.and_then(|m| m.get("name"))),
        }
    }
}

impl fmt::Display for ObjectName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name.as_deref().unwrap_or("<no name>");
        match &self.namespace {
            Some(namespace) => write!(f, "{} {namespace}/{name}", self.kind),
            None => write!(f, "{} {name}", self.kind),
        }
    }
}
