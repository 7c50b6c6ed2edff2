//! The Kubernetes descheduler's policy carried over to tidal: one DeschedulingPolicy per profile, with
//! every plugin and DefaultEvictor argument tidal has. It never widens disruption: what cannot be
//! carried over exactly is named, and is either stricter in tidal (evicts less), the same for what
//! gets evicted, or looser (would evict more), which is an error unless the caller allows it.
//!
//! Reads `descheduler/v1alpha2` and `descheduler/v1alpha1` policies, on their own, in a ConfigMap (any
//! key), or in a descheduler Helm values file (`deschedulerPolicy`). Pure: `tidal convert` reads and
//! prints around it.

mod cron;
mod evictor;
pub(crate) mod selector;
mod sources;
mod v1alpha1;

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

pub(crate) use sources::{Source, policies_in};

use super::{
    DeschedulingPolicy, PolicyMode,
    validation::{CrdValidator, did_you_mean},
};

pub(crate) const API_VERSION: &str = "descheduler/v1alpha2";
pub(crate) const API_VERSION_V1ALPHA1: &str = "descheduler/v1alpha1";
pub(crate) const KIND: &str = "DeschedulerPolicy";

/// What a setting that is not carried over exactly does to what gets evicted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Effect {
    /// tidal evicts less than the descheduler would (a plugin not run, a protection kept).
    Stricter,
    /// What gets evicted is the same; only where or how it is said differs.
    Same,
    /// tidal could evict pods the descheduler would not: refused unless allowed.
    Looser,
}

/// One setting not carried over as it is, and what that does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Note {
    pub effect: Effect,
    pub text: String,
}

/// The notes of one conversion, each prefixed with where it applies.
#[derive(Debug, Default)]
pub(crate) struct Notes {
    prefix: String,
    notes: Vec<Note>,
}

impl Notes {
    /// The settings not carried over whose loss could evict more.
    fn looser(&self) -> Vec<&str> {
        self.notes
            .iter()
            .filter(|n| n.effect == Effect::Looser)
            .map(|n| n.text.as_str())
            .collect()
    }

    fn push(&mut self, effect: Effect, text: impl Into<String>) {
        let text = text.into();
        let text = if self.prefix.is_empty() {
            text
        } else {
            format!("{}: {text}", self.prefix)
        };
        self.notes.push(Note { effect, text });
    }

    fn scoped(&self, prefix: &str) -> Notes {
        Notes {
            prefix: prefix.to_owned(),
            notes: Vec::new(),
        }
    }

    fn absorb(&mut self, other: Notes) {
        self.notes.extend(other.notes);
    }
}

/// What a conversion gives: the policies (valid DeschedulingPolicies), and one note per setting that
/// is not carried over exactly.
#[derive(Debug)]
pub(crate) struct Converted {
    pub policies: Vec<DeschedulingPolicy>,
    pub notes: Vec<Note>,
}

/// How the converted policies run: tidal's own settings the descheduler keeps in flags.
#[derive(Debug, Clone)]
pub(crate) struct ConvertOptions {
    /// `DryRun` unless asked otherwise: a converted policy should be read in `tidal report` first.
    pub mode: PolicyMode,
    /// The descheduler's `--descheduling-interval`.
    pub interval: Option<String>,
    /// Convert even when a setting's loss would evict more (each one still named).
    pub allow_looser: bool,
    /// PriorityClass values by name, for `priorityThreshold.name`.
    pub priority_classes: BTreeMap<String, i32>,
    /// The name the policies' shared limits go by (`limits.shared.name`).
    pub shared_limit_name: String,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            mode: PolicyMode::DryRun,
            interval: None,
            allow_looser: false,
            priority_classes: BTreeMap::new(),
            shared_limit_name: "descheduler".to_owned(),
        }
    }
}

/// Whether a parsed document is a descheduler policy (of any version), so that readers of tidal's own
/// objects can point at `tidal convert` instead of ignoring it.
pub(crate) fn is_descheduler_policy(object: &Value) -> bool {
    object["kind"] == KIND
        && object["apiVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("descheduler/"))
}

/// A descheduler plugin and the tidal strategy it becomes.
struct PluginMapping {
    plugin: &'static str,
    strategy: &'static str,
    /// Plugin arguments with their tidal name (most are spelt the same).
    args: &'static [(&'static str, &'static str)],
}

const COMMON: [(&str, &str); 2] = [
    ("namespaces", "namespaces"),
    ("labelSelector", "labelSelector"),
];

const PLUGINS: &[PluginMapping] = &[
    PluginMapping {
        plugin: "RemoveDuplicates",
        strategy: "removeDuplicates",
        args: &[
            ("excludeOwnerKinds", "excludeOwnerKinds"),
            ("namespaces", "namespaces"),
        ],
    },
    PluginMapping {
        plugin: "LowNodeUtilization",
        strategy: "lowNodeUtilization",
        args: &[
            ("thresholds", "thresholds"),
            ("targetThresholds", "targetThresholds"),
            ("useDeviationThresholds", "useDeviationThresholds"),
            ("numberOfNodes", "numberOfNodes"),
            ("evictableNamespaces", "namespaces"),
            ("evictionLimits", "evictionLimits"),
            ("metricsUtilization", "usage"),
        ],
    },
    PluginMapping {
        plugin: "HighNodeUtilization",
        strategy: "highNodeUtilization",
        args: &[
            ("thresholds", "thresholds"),
            ("numberOfNodes", "numberOfNodes"),
            ("evictableNamespaces", "namespaces"),
            ("metricsUtilization", "usage"),
            ("evictionModes", "evictionModes"),
        ],
    },
    PluginMapping {
        plugin: "RemovePodsViolatingInterPodAntiAffinity",
        strategy: "removePodsViolatingInterPodAntiAffinity",
        args: &COMMON,
    },
    PluginMapping {
        plugin: "RemovePodsViolatingNodeAffinity",
        strategy: "removePodsViolatingNodeAffinity",
        args: &[
            ("nodeAffinityType", "nodeAffinityType"),
            ("namespaces", "namespaces"),
            ("labelSelector", "labelSelector"),
        ],
    },
    PluginMapping {
        plugin: "RemovePodsViolatingNodeTaints",
        strategy: "removePodsViolatingNodeTaints",
        args: &[
            ("excludedTaints", "excludedTaints"),
            ("includedTaints", "includedTaints"),
            ("includePreferNoSchedule", "includePreferNoSchedule"),
            ("namespaces", "namespaces"),
            ("labelSelector", "labelSelector"),
        ],
    },
    PluginMapping {
        plugin: "RemovePodsViolatingTopologySpreadConstraint",
        strategy: "removePodsViolatingTopologySpreadConstraint",
        args: &[
            ("constraints", "constraints"),
            ("topologyBalanceNodeFit", "topologyBalanceNodeFit"),
            ("namespaces", "namespaces"),
            ("labelSelector", "labelSelector"),
        ],
    },
    PluginMapping {
        plugin: "RemovePodsHavingTooManyRestarts",
        strategy: "removePodsHavingTooManyRestarts",
        args: &[
            ("podRestartThreshold", "podRestartThreshold"),
            ("includingInitContainers", "includingInitContainers"),
            ("states", "states"),
            ("namespaces", "namespaces"),
            ("labelSelector", "labelSelector"),
        ],
    },
    PluginMapping {
        plugin: "PodLifeTime",
        strategy: "podLifeTime",
        args: &[
            ("maxPodLifeTimeSeconds", "maxPodLifeTimeSeconds"),
            ("states", "states"),
            ("conditions", "conditions"),
            ("exitCodes", "exitCodes"),
            ("ownerKinds", "ownerKinds"),
            ("includingInitContainers", "includingInitContainers"),
            (
                "includingEphemeralContainers",
                "includingEphemeralContainers",
            ),
            ("namespaces", "namespaces"),
            ("labelSelector", "labelSelector"),
        ],
    },
    PluginMapping {
        plugin: "RemoveFailedPods",
        strategy: "removeFailedPods",
        args: &[
            ("excludeOwnerKinds", "excludeOwnerKinds"),
            ("minPodLifetimeSeconds", "minPodLifetimeSeconds"),
            ("reasons", "reasons"),
            ("exitCodes", "exitCodes"),
            ("includingInitContainers", "includingInitContainers"),
            ("namespaces", "namespaces"),
            ("labelSelector", "labelSelector"),
        ],
    },
];

/// Converts a parsed `DeschedulerPolicy`. Fails when the input is not one, when a setting's loss
/// would evict more and `options.allow_looser` is off (the error lists every such setting), or when
/// the result is not a valid DeschedulingPolicy (the error then says which field).
pub(crate) fn convert(policy: &Value, options: &ConvertOptions) -> Result<Converted, String> {
    if !is_descheduler_policy(policy) {
        return Err(format!(
            "not a descheduler policy: expected apiVersion {API_VERSION} and kind {KIND}, got {} {}",
            policy["apiVersion"], policy["kind"]
        ));
    }
    let mut notes = Notes::default();
    let upgraded;
    let policy = match policy["apiVersion"].as_str() {
        Some(API_VERSION) => policy,
        Some(API_VERSION_V1ALPHA1) => {
            upgraded = v1alpha1::to_v1alpha2(policy, &mut notes)?;
            &upgraded
        }
        _ => {
            return Err(format!(
                "{} is not a version tidal reads: it reads {API_VERSION} and {API_VERSION_V1ALPHA1}",
                policy["apiVersion"]
            ));
        }
    };
    let profiles = policy["profiles"].as_array().cloned().unwrap_or_default();
    if profiles.is_empty() && policy.get("profiles").is_none() {
        let keys = policy
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k.as_str());
        if let Some(key) = keys
            .clone()
            .find(|k| did_you_mean(k, ["profiles"].into_iter()).is_some())
        {
            return Err(format!(
                "the policy has no profiles: it has `{key}:` (did you mean profiles?)"
            ));
        }
    }
    if profiles.is_empty() {
        if policy.get("strategies").is_some() {
            return Err(format!(
                "the policy has `strategies:`, which is {API_VERSION_V1ALPHA1} (the descheduler's \
                 charts up to v0.26 wrote it), under apiVersion {API_VERSION}, which has profiles \
                 instead: set apiVersion {API_VERSION_V1ALPHA1} (in Helm values, \
                 deschedulerPolicyAPIVersion: {API_VERSION_V1ALPHA1})"
            ));
        }
        return Err("the policy has no profiles: nothing to convert".to_owned());
    }
    let top = top_level(policy, profiles.len(), options, &mut notes)?;
    let validator = CrdValidator::new();
    let mut policies = Vec::new();
    let mut names = Vec::new();
    for (index, profile) in profiles.iter().enumerate() {
        let mut name = profile["name"]
            .as_str()
            .map_or_else(|| format!("profile-{index}"), dns_name);
        while names.contains(&name) {
            name = format!("{name}-{}", index + 1);
        }
        names.push(name.clone());
        let mut profile_notes = notes.scoped(&format!("profile {name}"));
        for key in profile.as_object().into_iter().flatten().map(|(k, _)| k) {
            if !PROFILE_FIELDS.contains(&key.as_str()) {
                let hint = did_you_mean(key, PROFILE_FIELDS.into_iter())
                    .map_or(String::new(), |k| format!(" (did you mean {k}?)"));
                profile_notes.push(
                    Effect::Looser,
                    format!("{key} is not a field of a profile{hint}: not read"),
                );
            }
        }
        let Some(object) = convert_profile(profile, &name, &top, options, &mut profile_notes)?
        else {
            notes.absorb(profile_notes);
            continue;
        };
        notes.absorb(profile_notes);
        validator.validate(&object).map_err(|violations| {
            // A setting not carried over is the likelier cause (a misspelt argument): say it too.
            let looser = notes.looser();
            let because = if looser.is_empty() {
                String::new()
            } else {
                format!("\n  - {}", looser.join("\n  - "))
            };
            format!("profile {name}: the result is not valid: {violations}{because}")
        })?;
        let converted: DeschedulingPolicy = serde_json::from_value(object)
            .map_err(|e| format!("profile {name}: the result does not read back: {e}"))?;
        policies.push(converted);
    }
    if policies.is_empty() {
        return Err(format!(
            "no profile enables a plugin tidal has: nothing to run ({})",
            notes
                .notes
                .iter()
                .map(|n| n.text.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let looser = notes.looser();
    if !looser.is_empty() && !options.allow_looser {
        return Err(format!(
            "{} setting(s) cannot be carried over, and without them tidal could evict pods the \
             descheduler protects:\n  - {}\nFix them, or pass --allow-looser to convert anyway",
            looser.len(),
            looser.join("\n  - ")
        ));
    }
    Ok(Converted {
        policies,
        notes: notes.notes,
    })
}

/// The fields of a profile, as the descheduler reads them.
const PROFILE_FIELDS: [&str; 3] = ["name", "pluginConfig", "plugins"];

/// What the top level of a policy gives every profile.
struct TopLevel {
    /// `limits` of each policy: the caps themselves for one profile, shared ones for several.
    limits: Map<String, Value>,
    node_selector: Option<Value>,
}

fn top_level(
    policy: &Value,
    profiles: usize,
    options: &ConvertOptions,
    notes: &mut Notes,
) -> Result<TopLevel, String> {
    let mut caps = Map::new();
    for (theirs, ours) in [
        ("maxNoOfPodsToEvictPerNode", "perNode"),
        ("maxNoOfPodsToEvictPerNamespace", "perNamespace"),
        ("maxNoOfPodsToEvictTotal", "total"),
    ] {
        if let Some(value) = policy.get(theirs).filter(|v| !v.is_null()) {
            caps.insert(ours.to_owned(), value.clone());
        }
    }
    // The descheduler counts its caps across all profiles at once: with several profiles the
    // converted policies share them (`limits.shared`) rather than each getting the whole cap.
    let limits = if profiles > 1 && !caps.is_empty() {
        let mut shared = caps;
        shared.insert("name".into(), json!(options.shared_limit_name));
        let mut limits = Map::new();
        limits.insert("shared".into(), Value::Object(shared));
        limits
    } else {
        caps
    };
    let node_selector = match policy["nodeSelector"]
        .as_str()
        .filter(|s| !s.trim().is_empty())
    {
        None => None,
        Some(text) => Some(
            serde_json::to_value(selector::parse(text).map_err(|e| format!("nodeSelector {e}"))?)
                .map_err(|e| e.to_string())?,
        ),
    };
    const KNOWN: [&str; 6] = [
        "apiVersion",
        "kind",
        "profiles",
        "maxNoOfPodsToEvictPerNode",
        "maxNoOfPodsToEvictPerNamespace",
        "maxNoOfPodsToEvictTotal",
    ];
    for (key, value) in policy.as_object().into_iter().flatten() {
        if KNOWN.contains(&key.as_str()) || key == "nodeSelector" || value.is_null() {
            continue;
        }
        match key.as_str() {
            "evictionFailureEventNotification" => notes.push(
                Effect::Same,
                "evictionFailureEventNotification: tidal always reports refused evictions (policy \
                 status, Warning Events, metrics, logs)",
            ),
            "metricsCollector" => notes.push(
                Effect::Same,
                "metricsCollector: tidal reads metrics.k8s.io itself where a strategy's \
                 usage.source is Metrics",
            ),
            "metricsProviders" => metrics_providers(value, notes),
            "gracePeriodSeconds" => notes.push(
                Effect::Same,
                format!(
                    "gracePeriodSeconds {value}: a setting of the controller in tidal, not of a \
                     policy: run `tidal run --eviction-grace-period-seconds={value}` (chart: \
                     controller.eviction.gracePeriodSeconds: {value})"
                ),
            ),
            "tracing" => notes.push(
                Effect::Same,
                "tracing: tidal does not export traces; its logs, Events and metrics say what each \
                 cycle did",
            ),
            _ => notes.push(
                Effect::Looser,
                format!(
                    "{key} not carried over: tidal has no such setting, and cannot tell whether \
                     it limited evictions"
                ),
            ),
        }
    }
    Ok(TopLevel {
        limits,
        node_selector,
    })
}

fn metrics_providers(value: &Value, notes: &mut Notes) {
    for provider in value.as_array().into_iter().flatten() {
        match provider["source"].as_str() {
            Some("KubernetesMetrics") => notes.push(
                Effect::Same,
                "metricsProviders KubernetesMetrics: tidal reads metrics.k8s.io itself where a \
                 strategy's usage.source is Metrics",
            ),
            Some("Prometheus") => {
                let url = provider["prometheus"]["url"].as_str().unwrap_or("<url>");
                let secret = &provider["prometheus"]["authToken"]["secretReference"];
                let token = match (secret["namespace"].as_str(), secret["name"].as_str()) {
                    (Some(ns), Some(name)) => format!(
                        ", and the token of Secret {ns}/{name} (key prometheusAuthToken) as a file: \
                         --prometheus-token-file (chart: controller.prometheus.tokenSecret.name: \
                         {name}, a Secret in tidal's namespace)"
                    ),
                    _ => String::new(),
                };
                notes.push(
                    Effect::Same,
                    format!(
                        "metricsProviders Prometheus: a setting of the controller in tidal: run \
                         `tidal run --prometheus-url={url}` (chart: controller.prometheus.url: \
                         {url}){token}; \
                         without it the strategies reading Prometheus evict nothing"
                    ),
                );
            }
            other => notes.push(
                Effect::Same,
                format!(
                    "metricsProviders source {}: tidal knows no such source; strategies that \
                     would read it are not carried over",
                    other.unwrap_or("(none)")
                ),
            ),
        }
    }
}

/// The extension points whose plugins evict (tidal's strategies).
const EVICTING: [&str; 2] = ["deschedule", "balance"];

/// The policy of one profile, or `None` when it enables nothing tidal runs (named in the notes).
fn convert_profile(
    profile: &Value,
    name: &str,
    top: &TopLevel,
    options: &ConvertOptions,
    notes: &mut Notes,
) -> Result<Option<Value>, String> {
    let configs: Vec<(&str, &Value)> = profile["pluginConfig"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| Some((c["name"].as_str()?, &c["args"])))
        .collect();
    let args_of = |plugin: &str| configs.iter().find(|(n, _)| *n == plugin).map(|(_, a)| *a);
    let mut enabled = Vec::new();
    for (extension, plugins) in profile["plugins"].as_object().into_iter().flatten() {
        let disabled: Vec<&str> = plugins["disabled"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        for plugin in plugins["enabled"].as_array().into_iter().flatten() {
            let Some(plugin) = plugin.as_str() else {
                continue;
            };
            let extension = extension.to_ascii_lowercase();
            if disabled.contains(&plugin) || disabled.contains(&"*") {
                notes.push(
                    Effect::Same,
                    format!("plugin {plugin} is both enabled and disabled in {extension}: not run, as in the descheduler"),
                );
                continue;
            }
            match extension.as_str() {
                e if EVICTING.contains(&e) => enabled.push(plugin.to_owned()),
                // tidal's protections are the DefaultEvictor.
                "filter" | "preevictionfilter" if plugin == "DefaultEvictor" => {}
                "filter" | "preevictionfilter" => notes.push(
                    Effect::Looser,
                    format!(
                        "plugin {plugin} in {extension} not carried over: a filter only ever \
                         protects pods, and tidal has no such filter"
                    ),
                ),
                _ => notes.push(
                    Effect::Same,
                    format!(
                        "plugin {plugin} in {extension} not carried over: sorting changes the \
                         order, not which pods may go"
                    ),
                ),
            }
        }
        if disabled.contains(&"DefaultEvictor") {
            notes.push(
                Effect::Stricter,
                format!(
                    "DefaultEvictor disabled in {extension}: tidal keeps the protections it \
                     converts from the evictor's arguments"
                ),
            );
        }
    }
    let mut strategies = Map::new();
    for plugin in &enabled {
        let Some(mapping) = PLUGINS.iter().find(|m| m.plugin == *plugin) else {
            let known = PLUGINS.iter().map(|m| m.plugin);
            let hint = did_you_mean(plugin, known)
                .map_or(String::new(), |p| format!(" (did you mean {p}?)"));
            notes.push(
                Effect::Stricter,
                format!("plugin {plugin} not carried over: tidal has no such strategy, so nothing runs in its place{hint}"),
            );
            continue;
        };
        if let Some(mut args) = strategy_args(mapping, args_of(plugin), notes)
            && descheduler_defaults(mapping, &mut args, notes)
        {
            strategies.insert(mapping.strategy.to_owned(), Value::Object(args));
        }
    }
    for (plugin, _) in &configs {
        if *plugin != "DefaultEvictor" && !enabled.iter().any(|e| e == plugin) {
            notes.push(
                Effect::Same,
                format!("pluginConfig {plugin} is not enabled in any extension point: left out, as the descheduler does"),
            );
        }
    }
    if strategies.is_empty() {
        notes.push(
            Effect::Stricter,
            "enables no plugin tidal runs: no policy made for it",
        );
        return Ok(None);
    }
    let evictor = evictor::convert(args_of("DefaultEvictor"), options, notes);
    if evictor.evict_failed_bare_pods {
        if let Some(Value::Object(args)) = strategies.get_mut("removeFailedPods") {
            args.insert("evictFailedBarePods".to_owned(), json!(true));
        }
        let others = strategies.keys().any(|s| s != "removeFailedPods");
        if others {
            notes.push(
                Effect::Stricter,
                "failed bare pods (FailedBarePods not protected): in tidal only removeFailedPods \
                 evicts them; the other strategies leave them",
            );
        }
    }
    let mut spec = json!({
        "mode": options.mode,
        "strategies": strategies,
    });
    if let Some(interval) = &options.interval {
        spec["interval"] = json!(interval);
    }
    if !top.limits.is_empty() {
        spec["limits"] = Value::Object(top.limits.clone());
    }
    spec["protections"] = Value::Object(evictor.protections);
    if let Some(selector) = &top.node_selector {
        spec["nodeSelector"] = selector.clone();
    }
    Ok(Some(json!({
        "apiVersion": "tidal.dev/v1alpha1",
        "kind": "DeschedulingPolicy",
        "metadata": {"name": name},
        "spec": spec,
    })))
}

/// The strategy's arguments, or `None` when the strategy cannot run as the descheduler's plugin would
/// (named in the notes; not running it is stricter).
fn strategy_args(
    mapping: &PluginMapping,
    args: Option<&Value>,
    notes: &mut Notes,
) -> Option<Map<String, Value>> {
    let mut out = Map::new();
    for (key, value) in args.and_then(Value::as_object).into_iter().flatten() {
        if value.is_null() {
            continue;
        }
        let Some((_, ours)) = mapping.args.iter().find(|(theirs, _)| theirs == key) else {
            let hint = did_you_mean(key, mapping.args.iter().map(|(theirs, _)| *theirs))
                .map_or(String::new(), |k| format!(" (did you mean {k}?)"));
            notes.push(
                Effect::Looser,
                format!(
                    "{}.{key} not carried over{hint}: tidal's {} has no such argument, and a \
                     plugin's argument usually narrows what it evicts",
                    mapping.plugin, mapping.strategy
                ),
            );
            continue;
        };
        let value = match *ours {
            "usage" => match metrics_usage(value) {
                Ok(usage) => usage,
                Err(why) => {
                    notes.push(
                        Effect::Stricter,
                        format!(
                            "plugin {} not carried over: {why}, so nothing runs in its place",
                            mapping.plugin
                        ),
                    );
                    return None;
                }
            },
            _ => value.clone(),
        };
        out.insert((*ours).to_owned(), value);
    }
    Some(out)
}

/// Where the descheduler's defaults or rules for a plugin differ from tidal's strategy, its own
/// written out: `false` when the plugin does not run in the descheduler (named in the notes).
fn descheduler_defaults(
    mapping: &PluginMapping,
    args: &mut Map<String, Value>,
    notes: &mut Notes,
) -> bool {
    match mapping.plugin {
        // `SetDefaults_RemoveFailedPodsArgs`: an hour unless set; tidal's default is no minimum.
        "RemoveFailedPods" if !args.contains_key("minPodLifetimeSeconds") => {
            args.insert("minPodLifetimeSeconds".to_owned(), json!(3600));
            notes.push(
                Effect::Same,
                "RemoveFailedPods.minPodLifetimeSeconds not set: the descheduler's default, 3600, \
                 written out (tidal's default is none)",
            );
        }
        "RemovePodsViolatingNodeAffinity" => {
            let types = args.get("nodeAffinityType").and_then(Value::as_array);
            if types.is_none_or(Vec::is_empty) {
                notes.push(
                    Effect::Stricter,
                    "plugin RemovePodsViolatingNodeAffinity not carried over: without \
                     nodeAffinityType the descheduler refuses the policy (\"nodeAffinityType needs \
                     to be set\"), so nothing runs in its place",
                );
                return false;
            }
            // The descheduler looks only at pods with node affinity terms, never at a node
            // selector alone (`PodHasNodeAffinity`).
            args.insert("nodeSelectorAsRequired".to_owned(), json!(false));
        }
        _ => {}
    }
    true
}

/// `metricsUtilization`: `{metricsServer: true}` or `{source: KubernetesMetrics}` is measured usage
/// from metrics.k8s.io (tidal's `Metrics`).
fn metrics_usage(value: &Value) -> Result<Value, String> {
    let server = value["metricsServer"] == true || value["source"] == "KubernetesMetrics";
    if server {
        return Ok(json!({"source": "Metrics"}));
    }
    match value["source"].as_str() {
        None | Some("") => Ok(json!({"source": "Requests"})),
        Some("Prometheus") => match value["prometheus"]["query"].as_str() {
            Some(query) if !query.trim().is_empty() => {
                Ok(json!({"source": "Prometheus", "query": query}))
            }
            _ => Err("metricsUtilization.source Prometheus without prometheus.query".to_owned()),
        },
        Some(other) => Err(format!(
            "metricsUtilization.source {other} is no source tidal reads"
        )),
    }
}

/// A profile name as an object name (lower case, `-` for anything else, at most 63 characters).
pub(crate) fn dns_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    out.truncate(63);
    let trimmed = out.trim_matches('-');
    if trimmed.is_empty() {
        "descheduler".to_owned()
    } else {
        trimmed.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descheduler(profile: Value) -> Value {
        json!({"apiVersion": API_VERSION, "kind": KIND,
               "maxNoOfPodsToEvictPerNode": 5, "nodeSelector": "pool=batch",
               "profiles": [profile]})
    }

    fn texts(converted: &Converted) -> String {
        converted
            .notes
            .iter()
            .map(|n| format!("{:?}: {}", n.effect, n.text))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn spec(converted: &Converted, at: usize) -> Value {
        serde_json::to_value(&converted.policies[at].spec).unwrap()
    }

    fn allowing_looser() -> ConvertOptions {
        ConvertOptions {
            allow_looser: true,
            ..ConvertOptions::default()
        }
    }

    #[test]
    fn a_typical_policy_carries_over_with_its_evictor_and_limits() {
        let input = descheduler(json!({
            "name": "ProfileName",
            "pluginConfig": [
                {"name": "DefaultEvictor", "args": {
                    "evictSystemCriticalPods": false, "evictLocalStoragePods": true,
                    "ignorePvcPods": true, "nodeFit": true, "minReplicas": 2,
                    "priorityThreshold": {"value": 1000}, "minPodAge": "5m"}},
                {"name": "LowNodeUtilization", "args": {
                    "thresholds": {"cpu": 20, "memory": 20, "pods": 20},
                    "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50},
                    "evictableNamespaces": {"exclude": ["kube-system"]},
                    "metricsUtilization": {"metricsServer": true}}},
                {"name": "RemoveDuplicates", "args": {"excludeOwnerKinds": ["Job"]}},
                {"name": "PodLifeTime", "args": {"maxPodLifeTimeSeconds": 86400}},
            ],
            "plugins": {
                "balance": {"enabled": ["LowNodeUtilization", "RemoveDuplicates"]},
                "deschedule": {"enabled": ["RemovePodsViolatingNodeTaints"]},
            },
        }));
        let converted = convert(&input, &ConvertOptions::default()).unwrap();
        assert_eq!(converted.policies.len(), 1);
        let policy = &converted.policies[0];
        assert_eq!(policy.metadata.name.as_deref(), Some("profilename"));
        let spec = spec(&converted, 0);
        assert_eq!(spec["mode"], "DryRun");
        // One profile: the caps are the policy's own.
        assert_eq!(spec["limits"]["perNode"], 5);
        assert_eq!(
            spec["nodeSelector"]["matchExpressions"],
            json!([{"key": "pool", "operator": "In", "values": ["batch"]}])
        );
        let lnu = &spec["strategies"]["lowNodeUtilization"];
        assert_eq!(lnu["thresholds"]["cpu"], 20.0);
        assert_eq!(lnu["namespaces"]["exclude"], json!(["kube-system"]));
        assert_eq!(lnu["usage"]["source"], "Metrics");
        assert_eq!(
            spec["strategies"]["removeDuplicates"]["excludeOwnerKinds"],
            json!(["Job"])
        );
        assert!(spec["strategies"]["removePodsViolatingNodeTaints"].is_object());
        // Configured but not enabled: left out, as the descheduler does.
        assert!(spec["strategies"]["podLifeTime"].is_null());
        let protections = &spec["protections"];
        assert_eq!(protections["systemCritical"], true);
        assert_eq!(protections["localStoragePods"], false);
        assert_eq!(protections["pvcPods"], true);
        assert_eq!(protections["nodeFit"], true);
        assert_eq!(protections["minReplicas"], 2);
        assert_eq!(protections["priorityThreshold"], 1000);
        assert_eq!(protections["minPodAge"], "5m0s");
        let notes = texts(&converted);
        assert!(
            notes.contains("pluginConfig PodLifeTime is not enabled"),
            "{notes}"
        );
    }

    #[test]
    fn a_global_limit_stays_global_across_profiles() {
        let profile = |name: &str| json!({"name": name, "plugins": {"deschedule": {"enabled": ["RemovePodsViolatingNodeTaints"]}}});
        let input = json!({"apiVersion": API_VERSION, "kind": KIND,
            "maxNoOfPodsToEvictTotal": 5000, "maxNoOfPodsToEvictPerNode": 3,
            "profiles": [profile("a"), profile("b")]});
        let converted = convert(&input, &ConvertOptions::default()).unwrap();
        for at in 0..2 {
            let limits = &spec(&converted, at)["limits"];
            assert_eq!(
                limits,
                &json!({"shared": {"name": "descheduler", "total": 5000, "perNode": 3}}),
                "each profile shares the caps, none has them to itself"
            );
        }
    }

    #[test]
    fn what_would_evict_more_is_refused_unless_allowed() {
        let input = descheduler(json!({
            "name": "p",
            "pluginConfig": [
                {"name": "DefaultEvictor", "args": {"priorityThreshold": {"name": "high"}, "somethingNew": true}},
                {"name": "RemoveDuplicates", "args": {"someNewArg": 1}},
            ],
            "plugins": {"balance": {"enabled": ["RemoveDuplicates", "RemoveDuplicatez"]},
                        "filter": {"enabled": ["DefaultEvictor", "MyFilter"]}},
        }));
        let error = convert(&input, &ConvertOptions::default()).unwrap_err();
        for named in [
            "PriorityClass high",
            "--priority-class high=<value>",
            "DefaultEvictor.somethingNew",
            "RemoveDuplicates.someNewArg",
            "plugin MyFilter in filter",
            "--allow-looser",
        ] {
            assert!(error.contains(named), "{named}: {error}");
        }
        let converted = convert(&input, &allowing_looser()).unwrap();
        let notes = texts(&converted);
        assert!(
            notes.contains("Looser: profile p: DefaultEvictor.somethingNew"),
            "{notes}"
        );
        assert!(
            notes.contains("Stricter: profile p: plugin RemoveDuplicatez not carried over")
                && notes.contains("did you mean RemoveDuplicates"),
            "{notes}"
        );
        // With the class's value the threshold is exact.
        let mut options = allowing_looser();
        options.priority_classes.insert("high".into(), 1000);
        let converted = convert(&input, &options).unwrap();
        assert_eq!(
            spec(&converted, 0)["protections"]["priorityThreshold"],
            1000
        );
    }

    #[test]
    fn pod_protections_replace_the_deprecated_switches_as_in_the_descheduler() {
        let evictor = |args: Value| {
            let input = descheduler(json!({"name": "p",
                "pluginConfig": [{"name": "DefaultEvictor", "args": args}],
                "plugins": {"deschedule": {"enabled": ["RemovePodsViolatingNodeTaints"]}}}));
            let converted = convert(&input, &ConvertOptions::default()).unwrap();
            (
                spec(&converted, 0)["protections"].clone(),
                texts(&converted),
            )
        };
        // The lists set: the deprecated switch is ignored, so local storage stays protected.
        let (protections, notes) = evictor(json!({
            "evictLocalStoragePods": true,
            "podProtections": {"extraEnabled": ["PodsWithPVC", "PodsWithResourceClaims"],
                               "defaultDisabled": ["DaemonSetPods"],
                               "config": {"PodsWithPVC": {"protectedStorageClasses": [{"name": "fast"}]}}},
            "noEvictionPolicy": "Mandatory"}));
        assert_eq!(protections["localStoragePods"], true);
        assert_eq!(protections["daemonSetPods"], false);
        assert_eq!(protections["pvcPods"], true);
        assert_eq!(protections["protectedStorageClasses"], json!(["fast"]));
        assert_eq!(protections["resourceClaimPods"], true);
        assert_eq!(protections["noEvictionPolicy"], "Mandatory");
        assert!(notes.contains("evictLocalStoragePods ignored"), "{notes}");
        // Without the lists, the switches.
        let (protections, _) =
            evictor(json!({"evictLocalStoragePods": true, "ignorePodsWithoutPDB": true}));
        assert_eq!(protections["localStoragePods"], false);
        assert_eq!(protections["podsWithoutPdb"], true);
        assert_eq!(protections["systemCritical"], true);
        // priorityThreshold means nothing while system-critical pods are not protected.
        let (protections, notes) =
            evictor(json!({"evictSystemCriticalPods": true, "priorityThreshold": {"value": 5}}));
        assert!(
            protections.get("priorityThreshold").is_none(),
            "{protections}"
        );
        assert!(notes.contains("priorityThreshold has no effect"), "{notes}");
        // The evictor's node selector narrows node fit.
        let (protections, _) = evictor(json!({"nodeFit": true, "nodeSelector": "pool in (a,b)"}));
        assert_eq!(
            protections["nodeFitNodeSelector"]["matchExpressions"][0]["values"],
            json!(["a", "b"])
        );
    }

    #[test]
    fn prometheus_usage_carries_over_as_prometheus_never_as_requests() {
        let input = descheduler(json!({"name": "p",
            "pluginConfig": [{"name": "LowNodeUtilization", "args": {
                "thresholds": {"MetricResource": 20}, "targetThresholds": {"MetricResource": 50},
                "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": "q"}}}}],
            "plugins": {"balance": {"enabled": ["LowNodeUtilization"]},
                        "deschedule": {"enabled": ["RemovePodsViolatingNodeTaints"]}}}));
        let converted = convert(&input, &ConvertOptions::default()).unwrap();
        let spec = spec(&converted, 0);
        let lnu = &spec["strategies"]["lowNodeUtilization"];
        assert_eq!(
            lnu["usage"],
            json!({"source": "Prometheus", "query": "q", "window": "5m0s"})
        );
        assert_eq!(lnu["thresholds"]["MetricResource"], 20.0);
        // Without a query there is nothing to ask: the strategy is left out, never run on requests.
        let mut input = input;
        input["profiles"][0]["pluginConfig"][0]["args"]["metricsUtilization"]["prometheus"] =
            json!({});
        let converted = convert(&input, &ConvertOptions::default()).unwrap();
        let spec = self::spec(&converted, 0);
        assert!(spec["strategies"]["lowNodeUtilization"].is_null(), "{spec}");
        assert!(
            texts(&converted)
                .contains("Stricter: profile p: plugin LowNodeUtilization not carried over"),
            "{}",
            texts(&converted)
        );
    }

    #[test]
    fn evict_mode_and_interval_are_the_callers_choice() {
        let input = descheduler(json!({"name": "p",
            "plugins": {"deschedule": {"enabled": ["RemovePodsViolatingInterPodAntiAffinity"]}}}));
        let options = ConvertOptions {
            mode: PolicyMode::Evict,
            interval: Some("10m".to_owned()),
            ..ConvertOptions::default()
        };
        let converted = convert(&input, &options).unwrap();
        let spec = spec(&converted, 0);
        assert_eq!(spec["mode"], "Evict");
        assert_eq!(spec["interval"], "10m0s");
    }

    #[test]
    fn invalid_results_and_other_inputs_are_refused_with_the_reason() {
        // LowNodeUtilization without thresholds is not a valid tidal strategy either.
        let input = descheduler(json!({"name": "p",
            "plugins": {"balance": {"enabled": ["LowNodeUtilization"]}}}));
        let error = convert(&input, &ConvertOptions::default()).unwrap_err();
        assert!(error.contains("thresholds"), "{error}");
        let error = convert(
            &json!({"apiVersion": "descheduler/v1beta9", "kind": KIND}),
            &ConvertOptions::default(),
        )
        .unwrap_err();
        assert!(error.contains("v1alpha1"), "{error}");
        let error = convert(
            &json!({"apiVersion": "v1", "kind": "Pod"}),
            &ConvertOptions::default(),
        )
        .unwrap_err();
        assert!(error.contains("not a descheduler policy"), "{error}");
        let input =
            descheduler(json!({"name": "p", "plugins": {"balance": {"enabled": ["Nope"]}}}));
        assert!(convert(&input, &ConvertOptions::default()).is_err());
        let input = json!({"apiVersion": API_VERSION, "kind": KIND, "nodeSelector": "cores>4",
            "profiles": [{"name": "p", "plugins": {"deschedule": {"enabled": ["RemovePodsViolatingNodeTaints"]}}}]});
        let error = convert(&input, &ConvertOptions::default()).unwrap_err();
        assert!(error.contains("nodeSelector"), "{error}");
    }

    #[test]
    fn failed_bare_pods_go_to_remove_failed_pods() {
        let input = descheduler(json!({"name": "p",
            "pluginConfig": [{"name": "DefaultEvictor", "args": {"evictFailedBarePods": true}}],
            "plugins": {"deschedule": {"enabled": ["RemoveFailedPods"]}}}));
        let converted = convert(&input, &ConvertOptions::default()).unwrap();
        assert_eq!(
            spec(&converted, 0)["strategies"]["removeFailedPods"]["evictFailedBarePods"],
            true
        );
        // With another strategy the difference is named: only removeFailedPods takes them.
        let input = descheduler(json!({"name": "p",
            "pluginConfig": [
                {"name": "DefaultEvictor", "args": {"podProtections": {"defaultDisabled": ["FailedBarePods"]}}},
                {"name": "PodLifeTime", "args": {"maxPodLifeTimeSeconds": 60}}],
            "plugins": {"deschedule": {"enabled": ["PodLifeTime"]}}}));
        let converted = convert(&input, &ConvertOptions::default()).unwrap();
        assert!(
            texts(&converted).contains("Stricter: profile p: failed bare pods"),
            "{}",
            texts(&converted)
        );
    }

    #[test]
    fn v1alpha1_strategies_become_one_profile_each() {
        let input = json!({
            "apiVersion": "descheduler/v1alpha1", "kind": KIND,
            "nodeSelector": "pool=batch", "evictLocalStoragePods": true,
            "maxNoOfPodsToEvictPerNode": 10,
            "strategies": {
                "RemovePodsViolatingNodeTaints": {"enabled": true, "params": {
                    "nodeFit": true, "thresholdPriority": 100, "excludedTaints": ["dedicated"]}},
                "PodLifeTime": {"enabled": true, "params": {
                    "nodeFit": true,
                    "podLifeTime": {"maxPodLifeTimeSeconds": 86400, "podStatusPhases": ["Pending"]}}},
                "LowNodeUtilization": {"enabled": false},
            }
        });
        let converted = convert(&input, &ConvertOptions::default()).unwrap();
        let mut names: Vec<_> = converted
            .policies
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "strategy-podlifetime-profile",
                "strategy-removepodsviolatingnodetaints-profile"
            ]
        );
        let named = |name: &str| {
            let at = converted
                .policies
                .iter()
                .position(|p| p.metadata.name.as_deref() == Some(name))
                .unwrap();
            spec(&converted, at)
        };
        let life = named("strategy-podlifetime-profile");
        assert_eq!(
            life["strategies"]["podLifeTime"]["states"],
            json!(["Pending"])
        );
        assert_eq!(
            life["protections"]["nodeFit"], false,
            "never for PodLifeTime"
        );
        assert_eq!(life["protections"]["localStoragePods"], false);
        assert_eq!(life["limits"]["shared"]["perNode"], 10);
        let taints = named("strategy-removepodsviolatingnodetaints-profile");
        assert_eq!(taints["protections"]["nodeFit"], true);
        assert_eq!(taints["protections"]["priorityThreshold"], 100);
        assert_eq!(
            taints["strategies"]["removePodsViolatingNodeTaints"]["excludedTaints"],
            json!(["dedicated"])
        );
        assert!(taints["nodeSelector"].is_object());
    }

    #[test]
    fn config_maps_and_helm_values_hold_policies() {
        let policy = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  plugins:\n    deschedule:\n      enabled: [RemovePodsViolatingNodeTaints]\n";
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "descheduler-policy-configmap", "namespace": "kube-system"},
            "data": {"notes.txt": "hello", "anything.yaml": policy}});
        let found = policies_in(&config_map).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].label,
            "ConfigMap kube-system/descheduler-policy-configmap key anything.yaml"
        );
        assert!(convert(&found[0].policy, &ConvertOptions::default()).is_ok());

        let values = json!({"kind": "Deployment", "deschedulingInterval": "10m",
            "deschedulerPolicyAPIVersion": "descheduler/v1alpha2",
            "deschedulerPolicy": {"maxNoOfPodsToEvictPerNode": 2, "profiles": [
                {"name": "default", "plugins": {"deschedule": {"enabled": ["RemovePodsViolatingNodeTaints"]}}}]}});
        let found = policies_in(&values).unwrap();
        assert_eq!(found[0].interval.as_deref(), Some("10m"));
        let converted = convert(&found[0].policy, &ConvertOptions::default()).unwrap();
        assert_eq!(spec(&converted, 0)["limits"]["perNode"], 2);
        let cron = json!({"schedule": "*/2 * * * *", "deschedulerPolicy": {"profiles": []}});
        assert_eq!(
            policies_in(&cron).unwrap()[0].interval.as_deref(),
            Some("2m0s")
        );
        assert!(policies_in(&json!({"apiVersion": "v1", "kind": "Pod"})).is_err());
    }

    #[test]
    fn the_descheduler_s_own_defaults_and_rules_are_written_out() {
        let input = descheduler(json!({"name": "p",
            "pluginConfig": [{"name": "RemovePodsViolatingNodeAffinity", "args": {
                "nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"]}}],
            "plugins": {"deschedule": {"enabled": ["RemoveFailedPods", "RemovePodsViolatingNodeAffinity"]}}}));
        let converted = convert(&input, &ConvertOptions::default()).unwrap();
        let strategies = &spec(&converted, 0)["strategies"];
        // RemoveFailedPods: an hour unless set.
        assert_eq!(
            strategies["removeFailedPods"]["minPodLifetimeSeconds"],
            3600
        );
        // A node selector alone is not node affinity to the descheduler.
        assert_eq!(
            strategies["removePodsViolatingNodeAffinity"]["nodeSelectorAsRequired"],
            false
        );
        // Without nodeAffinityType the descheduler refuses the policy: nothing runs.
        let input = descheduler(json!({"name": "p",
            "plugins": {"deschedule": {"enabled": ["RemoveFailedPods", "RemovePodsViolatingNodeAffinity"]}}}));
        let converted = convert(&input, &ConvertOptions::default()).unwrap();
        assert!(spec(&converted, 0)["strategies"]["removePodsViolatingNodeAffinity"].is_null());
        assert!(
            texts(&converted).contains("nodeAffinityType needs to be set"),
            "{}",
            texts(&converted)
        );
    }

    #[test]
    fn profile_names_become_object_names() {
        assert_eq!(dns_name("ProfileName"), "profilename");
        assert_eq!(dns_name("my_profile 1"), "my-profile-1");
        assert_eq!(dns_name("__"), "descheduler");
    }
}
