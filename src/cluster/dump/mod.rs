//! Reading saved clusters: what `kubectl get ... -o yaml` (a `List`), multi-document YAML or JSON holds,
//! replayed into a [`ClusterCache`] through the same ingest path that watch events take.

use jiff::Timestamp;
use std::{
    collections::BTreeMap,
    fmt,
    io::{BufReader, Read},
    path::{Path, PathBuf},
};

mod stream;

use k8s_openapi::api::{
    core::v1::{Namespace, Node, PersistentVolumeClaim, Pod},
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
    cluster::{
        ClusterCache, Ingest, ObjectKey, PolicyInfo, UsageSample, ingest::decode, model::usage,
    },
};

/// The kinds tidal reads, at the one version it reads each: the same kind at another version is an
/// error rather than silently ignored, so a plan never leaves out objects the user meant it to see.
const READ_KINDS: [(&str, &str); 10] = [
    ("v1", "Pod"),
    ("v1", "Node"),
    ("v1", "Namespace"),
    ("v1", "PersistentVolumeClaim"),
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
    /// Objects read with a field tidal could not hold as it was (see `cluster::decode`), one line
    /// each, for the report's warnings.
    pub warnings: Vec<String>,
    /// PodMetrics read before their pod: applied once the pod has been read.
    pending_pod_usage: Vec<(ObjectKey, UsageSample)>,
    /// Built on the first tidal object: most dumps hold a handful of them.
    crd_validator: Option<CrdValidator>,
    /// What a policy must pass beyond its schema to be read (see [`PolicyCheck`]).
    policy_check: Option<PolicyCheck>,
    /// Where each object read so far came from, so that one given twice is named with both places.
    origins: Origins,
}

/// `kind namespace/name` of every object read, with the reading of a file (an index into `files`)
/// and the item it came from.
#[derive(Debug, Default)]
struct Origins {
    /// Each file as it is read, once per reading (a file given twice is read twice).
    files: Vec<PathBuf>,
    seen: std::collections::HashMap<String, (u32, u32)>,
}

impl Origins {
    fn reading(&mut self, path: &Path) {
        self.files.push(path.to_owned());
    }

    /// Records `name` as item `index` of the file being read; where it was read before, if it was:
    /// `None` for the file being read, else that file.
    fn seen_before(&mut self, name: &ObjectName, index: usize) -> Option<(Option<&Path>, usize)> {
        let key = format!(
            "{}\0{}\0{}",
            name.kind,
            name.namespace.as_deref().unwrap_or_default(),
            name.name.as_deref().unwrap_or_default()
        );
        let current = self.files.len().saturating_sub(1);
        let file = u32::try_from(current).unwrap_or(u32::MAX);
        let item = u32::try_from(index).unwrap_or(u32::MAX);
        match self.seen.entry(key) {
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert((file, item));
                None
            }
            std::collections::hash_map::Entry::Occupied(first) => {
                let (file, item) = *first.get();
                let path = (file as usize != current)
                    .then(|| self.files.get(file as usize).map(PathBuf::as_path))
                    .flatten();
                Some((path, item as usize))
            }
        }
    }
}

/// Checks a policy beyond what its CRD schema can (the planner's rules). A saved cluster is input the
/// user can fix, so a policy that a live controller would merely refuse to run (and warn about) stops
/// the load at the object that holds it.
pub type PolicyCheck = fn(&PolicyInfo) -> Result<(), String>;

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
    #[error(
        "{path}: larger than {limit} bytes, the most `tidal report` reads from one file \
         (raise it with --max-input-size)"
    )]
    TooLarge { path: PathBuf, limit: u64 },
}

/// How much `tidal report` reads from one file: 4 GiB, well above the 1.1 GB JSON of a
/// 150,000-pod cluster, so that `--cluster /dev/zero` ends instead of growing without bound.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 4 << 30;

/// The files behind `paths` as kubectl's `-f` reads them: a folder stands for its `.yaml`, `.yml` and
/// `.json` files (not its subfolders), in name order; `-` is stdin, at most once.
fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, DumpError> {
    let mut files = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            if files.iter().any(|f: &PathBuf| f.as_os_str() == "-") {
                return Err(DumpError::Read {
                    path: path.clone(),
                    message: "stdin can be read only once".to_owned(),
                });
            }
            files.push(path.clone());
            continue;
        }
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let read_error = |e: std::io::Error| DumpError::Read {
            path: path.clone(),
            message: e.to_string(),
        };
        let mut inside: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(read_error)?
            .map(|entry| entry.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(read_error)?;
        inside.retain(|f| {
            f.is_file()
                && f.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
        });
        if inside.is_empty() {
            return Err(DumpError::Read {
                path: path.clone(),
                message: "a folder without .yaml, .yml or .json files".to_owned(),
            });
        }
        inside.sort();
        files.extend(inside);
    }
    Ok(files)
}

/// Bytes read from the file per `read` call: the input is never held whole.
const CHUNK: usize = 256 << 10;

impl Dump {
    /// Loads `paths` with the default input size cap.
    pub fn load(paths: &[PathBuf], policy_check: PolicyCheck) -> Result<Dump, DumpError> {
        Self::load_capped(paths, DEFAULT_MAX_INPUT_BYTES, policy_check)
    }

    /// Loads `paths`, refusing any file larger than `max_input_bytes`. Files are streamed: each
    /// object is folded into the cache as soon as it has been read, then dropped.
    pub fn load_capped(
        paths: &[PathBuf],
        max_input_bytes: u64,
        policy_check: PolicyCheck,
    ) -> Result<Dump, DumpError> {
        let mut dump = Dump {
            policy_check: Some(policy_check),
            ..Dump::default()
        };
        for path in expand(paths)? {
            if path.as_os_str() == "-" {
                let stdin = std::io::stdin().lock();
                dump.add_reader(Path::new("<stdin>"), stdin, None, max_input_bytes)?;
                continue;
            }
            let read_error = |e: std::io::Error| DumpError::Read {
                path: path.clone(),
                message: e.to_string(),
            };
            let file = std::fs::File::open(&path).map_err(read_error)?;
            // Only a regular file's length means anything (`/dev/zero` and pipes say 0).
            let size = file
                .metadata()
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len());
            dump.add_reader(&path, file, size, max_input_bytes)?;
        }
        Ok(dump)
    }

    /// Adds the objects in `text` (read from `path`, which is only used in messages).
    pub fn add_text(&mut self, path: &Path, text: &str) -> Result<(), DumpError> {
        self.add_reader(
            path,
            text.as_bytes(),
            Some(text.len() as u64),
            DEFAULT_MAX_INPUT_BYTES,
        )
    }

    /// Adds the objects `reader` holds, JSON if it starts like JSON, else (multi-document) YAML.
    /// `size` (when known) scales the YAML parser's limits; `max_input_bytes` caps what is read.
    pub fn add_reader(
        &mut self,
        path: &Path,
        reader: impl Read,
        size: Option<u64>,
        max_input_bytes: u64,
    ) -> Result<(), DumpError> {
        self.origins.reading(path);
        let (capped, too_large) = stream::Capped::new(reader, max_input_bytes);
        let mut reader = BufReader::with_capacity(CHUNK, stream::Utf8Checked::new(capped));
        let syntax = |message: String| DumpError::Syntax {
            path: path.to_owned(),
            message,
        };
        let mut loader = Loader {
            dump: std::mem::take(self),
            path: path.to_owned(),
            documents: 0,
            items: 0,
            error: None,
        };
        let parsed = match stream::looks_like_json(&mut reader) {
            Err(e) if !too_large.get() => Err(DumpError::Read {
                path: path.to_owned(),
                message: e.to_string(),
            }),
            Err(_) => Ok(()),
            Ok(None) => Ok(()),
            Ok(Some(true)) => {
                stream::read_json(&mut reader, &mut loader).map_err(|e| syntax(e.to_string()))
            }
            Ok(Some(false)) => {
                let input_bytes = size.unwrap_or(max_input_bytes).min(max_input_bytes);
                let (back, result) =
                    stream::read_yaml(&mut reader, yaml_options(input_bytes), loader);
                loader = back;
                result.map_err(|e| syntax(yaml_error(&e, input_bytes)))
            }
        };
        *self = std::mem::take(&mut loader.dump);
        if too_large.get() {
            return Err(DumpError::TooLarge {
                path: path.to_owned(),
                limit: max_input_bytes,
            });
        }
        if let Some(error) = loader.error {
            return Err(error);
        }
        parsed?;
        if loader.documents == 0 {
            return Err(syntax("holds no Kubernetes objects".to_owned()));
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

    /// Adds one object, `index` in the file at `path` (for warnings).
    fn add_object(
        &mut self,
        item: Value,
        path: &Path,
        index: usize,
    ) -> Result<(), (ObjectName, String)> {
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
        // Metrics are samples: several of one node or pod, taken at different times, are usage over
        // time, not one object given twice.
        let object = READ_KINDS.contains(&(name.api_version.as_str(), name.kind.as_str()))
            && name.api_version != "metrics.k8s.io/v1beta1";
        if object
            && name.name.is_some()
            && let Some((file, first)) = self.origins.seen_before(&name, index)
        {
            // Which copy is the cluster as it is cannot be told: the plan would rest on a guess.
            let before = match file {
                Some(file) => format!("item {first} of {}", file.display()),
                None => format!("item {first} of this file"),
            };
            return Err((
                name,
                format!("given twice, here and as {before}: give each object once"),
            ));
        }
        let cache = &mut self.cache;
        let clamped = &mut Vec::new();
        let result = match (name.api_version.as_str(), name.kind.as_str()) {
            ("v1", "Pod") => ingest::<Pod>(cache, item, clamped),
            ("v1", "Node") => ingest::<Node>(cache, item, clamped),
            ("v1", "Namespace") => ingest::<Namespace>(cache, item, clamped),
            ("v1", "PersistentVolumeClaim") => {
                ingest::<PersistentVolumeClaim>(cache, item, clamped)
            }
            ("metrics.k8s.io/v1beta1", "NodeMetrics") => typed::<NodeMetrics>(item, clamped)
                .and_then(|m| usage::node_sample(&m))
                .map(|(node, sample)| cache.record_node_usage(&node, sample)),
            ("metrics.k8s.io/v1beta1", "PodMetrics") => typed::<PodMetrics>(item, clamped)
                .and_then(|m| usage::pod_sample(&m))
                .map(|sample| self.pending_pod_usage.push(sample)),
            ("policy/v1", "PodDisruptionBudget") => {
                ingest::<PodDisruptionBudget>(cache, item, clamped)
            }
            ("scheduling.volcano.sh/v1beta1", "PodGroup") => {
                ingest::<PodGroup>(cache, item, clamped)
            }
            ("tidal.dev/v1alpha1", "RevocableZone") => {
                ingest::<RevocableZone>(cache, item, clamped)
            }
            ("tidal.dev/v1alpha1", "DeschedulingPolicy") => {
                ingest::<DeschedulingPolicy>(cache, item, clamped)
            }
            _ if crate::api::descheduler::is_descheduler_policy(&item) => {
                return Err((
                    name.clone(),
                    format!(
                        "a Kubernetes descheduler policy is not a tidal policy: convert it with \
                         `tidal convert -f {}` and pass the result instead",
                        path.display()
                    ),
                ));
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
        let policy_check = self.policy_check;
        let config_error = match name.kind.as_str() {
            "RevocableZone" => {
                let zone = name.name.as_deref().unwrap_or_default();
                // The object is named in front of the message already.
                let named = format!("RevocableZone {zone}: ");
                self.cache
                    .zone(zone)
                    .and_then(|info| info.schedule.as_ref().err())
                    .map(|e| e.strip_prefix(&named).unwrap_or(e).to_owned())
            }
            "DeschedulingPolicy" => self
                .cache
                .policy(name.name.as_deref().unwrap_or_default())
                .zip(policy_check)
                .and_then(|(policy, check)| check(policy).err()),
            _ => None,
        };
        if let Some(error) = config_error {
            return Err((name, error));
        }
        for field in clamped.drain(..) {
            self.warnings.push(format!(
                "{}: item {index} ({name}): {field} is past the latest time tidal reads: read as {}",
                path.display(),
                Timestamp::MAX
            ));
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
            .map_err(|violations| (name.clone(), violations.to_string()))
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

fn ingest<K: Ingest>(
    cache: &mut ClusterCache,
    value: Value,
    clamped: &mut Vec<String>,
) -> Result<(), String> {
    let object: K = typed(value, clamped)?;
    // A dump is one instant without history: no pod departs while it is read, so the instant objects
    // are observed at never matters. A fixed one keeps loading deterministic.
    object
        .apply_to(cache, Timestamp::UNIX_EPOCH)
        .map_err(|unnamed| unnamed.to_string())
}

/// Folds the items the parser hands over into the dump, numbering them for messages.
struct Loader {
    dump: Dump,
    path: PathBuf,
    documents: usize,
    items: usize,
    error: Option<DumpError>,
}

impl stream::Sink for Loader {
    fn document(&mut self) {
        self.documents += 1;
    }

    fn item(&mut self, item: Value, duplicate: Option<String>) -> Result<(), stream::Stopped> {
        let object_error = |index: usize, name: &ObjectName, message: String| DumpError::Object {
            path: self.path.clone(),
            object: format!("item {index} ({name})"),
            message,
        };
        if let Some(key) = duplicate {
            let error = object_error(
                self.items + 1,
                &ObjectName::of(&item),
                format!("duplicate key {key}: refused, as the API server would"),
            );
            self.error = Some(error);
            return Err(stream::Stopped);
        }
        let mut flat = Vec::new();
        if let Err(message) = flatten_lists(item, &mut flat) {
            self.error = Some(DumpError::Syntax {
                path: self.path.clone(),
                message,
            });
            return Err(stream::Stopped);
        }
        for object in flat {
            self.items += 1;
            if let Err((name, message)) = self.dump.add_object(object, &self.path, self.items) {
                self.error = Some(object_error(self.items, &name, message));
                return Err(stream::Stopped);
            }
        }
        Ok(())
    }
}

/// The YAML parser's options. Its limits against YAML bombs are scaled to the input: a plain
/// document cannot have more nodes, events or scalar bytes than it has bytes, whatever the
/// cluster's size; only aliases (whose replays are capped at the input's size too) and nesting (a
/// fixed depth) could blow it up. The parser's defaults stop at 250,000 nodes, a few thousand pods.
/// Duplicate keys are refused by tidal's own check, which names the item.
fn yaml_options(input_bytes: u64) -> serde_saphyr::Options {
    let input_bytes = usize::try_from(input_bytes).unwrap_or(usize::MAX);
    let mut budget = serde_saphyr::Budget::default();
    // tidal caps the input itself, with a message naming the flag.
    budget.max_reader_input_bytes = None;
    budget.max_events = budget.max_events.max(input_bytes.saturating_mul(2));
    budget.max_nodes = budget.max_nodes.max(input_bytes);
    budget.max_total_scalar_bytes = budget.max_total_scalar_bytes.max(input_bytes);
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.alias_limits.max_total_replayed_events = options
        .alias_limits
        .max_total_replayed_events
        .max(input_bytes);
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::LastWins;
    options
}

/// The parser's message, and for a limit, which one and why there is no flag for it.
fn yaml_error(error: &serde_saphyr::Error, input_bytes: u64) -> String {
    let message = error.to_string();
    let mut error = error;
    while let serde_saphyr::Error::AliasError { error: inner, .. }
    | serde_saphyr::Error::WithSnippet { error: inner, .. } = error
    {
        error = inner;
    }
    let limit = match error {
        serde_saphyr::Error::Budget { breach, .. } => match breach {
            serde_saphyr::budget::BudgetBreach::Depth { .. } => {
                "the nesting depth limit (64, fixed)".to_owned()
            }
            other => format!(
                "the YAML limit {other:?} (the parser's default, raised to the input's size, \
                 {input_bytes} bytes, for larger files)"
            ),
        },
        serde_saphyr::Error::AliasReplayLimitExceeded { .. }
        | serde_saphyr::Error::AliasReplayStackDepthExceeded { .. }
        | serde_saphyr::Error::AliasExpansionLimitExceeded { .. } => {
            format!("the limit on alias expansion (scaled to the input's {input_bytes} bytes)")
        }
        // Says only "IO error": the cause says what and where (a byte that is not UTF-8).
        serde_saphyr::Error::IOError { cause } => return cause.to_string(),
        _ => return message,
    };
    format!(
        "{message}: the file hit {limit}, which protects against alias bombs and absurd nesting; \
         no flag raises it (a dump kubectl wrote never comes near it): the same objects as JSON \
         (`-o json`) are read without YAML's limits"
    )
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

/// `value` as `T`, with times beyond tidal's range read as its latest instant (noted in `clamped`).
fn typed<T: DeserializeOwned>(value: Value, clamped: &mut Vec<String>) -> Result<T, String> {
    let (object, fields) = decode::typed_lenient(value)?;
    clamped.extend(fields);
    Ok(object)
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

    fn load(text: &str) -> Result<Dump, DumpError> {
        let mut dump = Dump::default();
        dump.add_text(Path::new("c.yaml"), text).map(|()| dump)
    }

    #[test]
    fn a_yaml_dump_beyond_the_parsers_default_node_budget_loads() {
        // About 17 YAML nodes per pod: 18,000 pods are ~300,000 nodes, past the default 250,000.
        let mut text = String::from("apiVersion: v1\nkind: List\nitems:\n");
        for i in 0..18_000 {
            text.push_str(&format!(
                "- apiVersion: v1\n  kind: Pod\n  metadata: {{name: p{i}, namespace: ns}}\n  spec: {{nodeName: n1}}\n  status: {{phase: Running}}\n"
            ));
        }
        assert_eq!(load(&text).unwrap().cache.pod_count(), 18_000);
    }

    #[test]
    fn alias_bombs_are_still_refused_with_a_word_on_why() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..9 {
            let refs = vec![format!("*a{}", level - 1); 10].join(", ");
            text.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
        }
        let error = load(&text).unwrap_err().to_string();
        assert!(error.contains("alias bombs"), "{error}");
        assert!(error.contains("limit"), "{error}");
    }

    #[test]
    fn absurd_nesting_is_refused_naming_the_limit() {
        let text = format!("kind: Pod\nspec: {}{}\n", "[".repeat(200), "]".repeat(200));
        let error = load(&text).unwrap_err().to_string();
        assert!(error.contains("limit"), "{error}");
        let json = format!(
            "{{\"kind\": \"Pod\", \"spec\": {}{}}}",
            "[".repeat(200),
            "]".repeat(200)
        );
        let error = load(&json).unwrap_err().to_string();
        assert!(error.contains("recursion limit"), "{error}");
    }

    /// A byte that is not UTF-8 is named with its file, offset and line, in YAML and in JSON, wherever
    /// the parser is when it comes.
    #[test]
    fn text_that_is_not_utf8_is_refused_with_its_position() {
        let yaml = b"apiVersion: v1\nkind: List\nitems: []\n# caf\xe9\n".to_vec();
        let json = b"{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [], \"x\": \"\xff\"}"
            .to_vec();
        // Past the first buffer of the reader: the parser is under way when the byte comes.
        let mut long = b"apiVersion: v1\nkind: List\nitems: []\n".to_vec();
        long.extend(b"# comment\n".repeat(30_000));
        long.extend(b"x: \xc3\x28\n");
        for (text, offset, line) in [(yaml, 41, 4), (json, 56, 1), (long, 300_039, 30_004)] {
            let mut dump = Dump::default();
            let error = dump
                .add_reader(
                    Path::new("c.yaml"),
                    &text[..],
                    None,
                    DEFAULT_MAX_INPUT_BYTES,
                )
                .unwrap_err()
                .to_string();
            assert!(
                error.starts_with("c.yaml: ")
                    && error.contains(&format!("at byte offset {offset} (line {line})")),
                "{error}"
            );
            assert!(!error.contains("IO error"), "{error}");
        }
    }

    #[test]
    fn input_past_the_cap_is_refused_naming_the_flag() {
        let mut dump = Dump::default();
        let endless = std::io::repeat(b' ');
        let error = dump
            .add_reader(Path::new("/dev/zero"), endless, None, 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(error.contains("--max-input-size"), "{error}");
        assert!(error.contains("1048576 bytes"), "{error}");
        let zeros = std::io::repeat(0).take(3 << 20);
        let error = dump
            .add_reader(Path::new("/dev/zero"), zeros, None, 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(error.contains("/dev/zero"), "{error}");
    }

    #[test]
    fn duplicate_keys_are_refused_in_json_and_yaml_naming_key_and_item() {
        let json = r#"{"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "a",
             "labels": {"app": "x", "app": "y"}}}]}"#;
        let yaml = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: a\n  labels:\n    app: x\n    app: y\n";
        for (text, item) in [(json, "item 2"), (yaml, "item 1")] {
            let error = load(text).unwrap_err().to_string();
            for expected in [item, "Pod a/p", "duplicate key metadata.labels.app"] {
                assert!(error.contains(expected), "{expected}: {error}");
            }
        }
        let error = load(r#"{"kind": "List", "items": [], "items": []}"#)
            .unwrap_err()
            .to_string();
        assert!(error.contains("duplicate key \"items\""), "{error}");
    }

    #[test]
    fn an_object_given_twice_is_refused_naming_both_places() {
        let node = |name: &str| format!("apiVersion: v1\nkind: Node\nmetadata: {{name: {name}}}\n");
        let pod =
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: a}\nspec: {nodeName: n1}\n";
        let mut dump = Dump::default();
        dump.add_text(
            Path::new("nodes.yaml"),
            &format!("{}---\n{pod}", node("n1")),
        )
        .unwrap();
        let error = dump
            .add_text(Path::new("more.yaml"), &format!("{}---\n{pod}", node("n2")))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "more.yaml: item 2 (Pod a/p): given twice, here and as item 2 of nodes.yaml: give each \
             object once"
        );
        let error = load(&format!(
            "{}---\n{}---\n{}",
            node("n1"),
            node("n2"),
            node("n1")
        ))
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("item 3 (Node n1): given twice, here and as item 1 of this file"),
            "{error}"
        );
        // The same name in another kind or namespace is another object.
        let other = "apiVersion: v1\nkind: Pod\nmetadata: {name: n1, namespace: b}\n";
        assert!(load(&format!("{}---\n{pod}---\n{other}", node("n1"))).is_ok());
        // Usage samples of one node, taken at different times, are not one object twice.
        let sample = |at: &str| {
            format!(
                "apiVersion: metrics.k8s.io/v1beta1\nkind: NodeMetrics\nmetadata: {{name: n1}}\n\
                 timestamp: \"{at}\"\nwindow: 30s\nusage: {{cpu: 100m, memory: 1Gi}}\n"
            )
        };
        let samples = format!(
            "{}---\n{}---\n{}",
            node("n1"),
            sample("2026-03-02T11:57:00Z"),
            sample("2026-03-02T11:59:00Z")
        );
        assert!(load(&samples).is_ok(), "{:?}", load(&samples).err());
    }

    #[test]
    fn lists_stream_in_any_key_order_and_typed_lists_lend_their_kind() {
        let json = r#"{"apiVersion": "v1", "items": [
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "a"}, "spec": {"nodeName": "n1"}}
        ], "kind": "List", "metadata": {}}"#;
        let dump = load(json).unwrap();
        assert_eq!((dump.cache.node_count(), dump.cache.pod_count()), (1, 1));
        let typed = "apiVersion: v1\nitems:\n- metadata: {name: n1}\n- metadata: {name: n2}\nkind: NodeList\n";
        assert_eq!(load(typed).unwrap().cache.node_count(), 2);
    }
}
