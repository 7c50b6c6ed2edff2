//! The Kubernetes descheduler's policy (`descheduler/v1alpha2` `DeschedulerPolicy`) carried over to
//! tidal: one DeschedulingPolicy per profile, with every plugin and DefaultEvictor argument tidal has, and
//! a list of what it could not carry. Pure: `tidal convert` reads and prints around it.

use serde_json::{Map, Value, json};

use super::{
    DeschedulingPolicy, PolicyMode,
    validation::{CrdValidator, did_you_mean},
};

pub(crate) const API_VERSION: &str = "descheduler/v1alpha2";
pub(crate) const KIND: &str = "DeschedulerPolicy";

/// What a conversion gives: the policies (valid DeschedulingPolicies), and one line per setting that
/// has no equivalent and was left out, or that changes meaning.
#[derive(Debug)]
pub(crate) struct Converted {
    pub policies: Vec<DeschedulingPolicy>,
    pub notes: Vec<String>,
}

/// How the converted policies run: tidal's own settings the descheduler keeps in flags.
#[derive(Debug, Clone)]
pub(crate) struct ConvertOptions {
    /// `DryRun` unless asked otherwise: a converted policy should be read in `tidal report` first.
    pub mode: PolicyMode,
    /// The descheduler's `--descheduling-interval`.
    pub interval: Option<String>,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            mode: PolicyMode::DryRun,
            interval: None,
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

/// DefaultEvictor arguments whose tidal protection is the same setting (possibly negated: the
/// descheduler says what may be evicted, tidal what is protected).
const EVICTOR_FLAGS: &[(&str, &str, bool)] = &[
    ("evictSystemCriticalPods", "systemCritical", true),
    ("evictLocalStoragePods", "localStoragePods", true),
    ("evictDaemonSetPods", "daemonSetPods", true),
    ("ignorePvcPods", "pvcPods", false),
    ("nodeFit", "nodeFit", false),
];

const EVICTOR_COPIED: &[&str] = &[
    "labelSelector",
    "namespaceLabelSelector",
    "minReplicas",
    "minPodAge",
];

/// `podProtections` (descheduler 0.33+): protection names and the tidal setting each one is.
const POD_PROTECTIONS: &[(&str, &str)] = &[
    ("PodsWithLocalStorage", "localStoragePods"),
    ("SystemCriticalPods", "systemCritical"),
    ("DaemonSetPods", "daemonSetPods"),
    ("PodsWithPVC", "pvcPods"),
    ("PodsWithoutPDB", "podsWithoutPdb"),
];

/// Converts a parsed `DeschedulerPolicy`. Fails when the input is not one, or when the result is not a
/// valid DeschedulingPolicy (the error then says which field).
pub(crate) fn convert(policy: &Value, options: &ConvertOptions) -> Result<Converted, String> {
    if !is_descheduler_policy(policy) {
        return Err(format!(
            "not a descheduler policy: expected apiVersion {API_VERSION} and kind {KIND}, got {} {}",
            policy["apiVersion"], policy["kind"]
        ));
    }
    if policy["apiVersion"] != API_VERSION {
        return Err(format!(
            "{} is not supported: convert it to {API_VERSION} with the descheduler first (its \
             v1alpha1 strategies map one to one onto v1alpha2 plugins)",
            policy["apiVersion"]
        ));
    }
    let mut notes = Vec::new();
    let limits = top_level_limits(policy, &mut notes);
    let profiles = policy["profiles"].as_array().cloned().unwrap_or_default();
    if profiles.is_empty() {
        return Err("the policy has no profiles: nothing to convert".to_owned());
    }
    let validator = CrdValidator::new();
    let mut policies = Vec::new();
    for (index, profile) in profiles.iter().enumerate() {
        let name = profile["name"]
            .as_str()
            .map_or_else(|| format!("profile-{index}"), dns_name);
        let mut profile_notes = Vec::new();
        let object = convert_profile(profile, &name, &limits, options, &mut profile_notes)?;
        notes.extend(
            profile_notes
                .into_iter()
                .map(|n| format!("profile {name}: {n}")),
        );
        validator.validate(&object).map_err(|violations| {
            format!("profile {name}: the result is not valid: {violations}")
        })?;
        let converted: DeschedulingPolicy = serde_json::from_value(object)
            .map_err(|e| format!("profile {name}: the result does not read back: {e}"))?;
        policies.push(converted);
    }
    Ok(Converted { policies, notes })
}

fn top_level_limits(policy: &Value, notes: &mut Vec<String>) -> Map<String, Value> {
    let mut limits = Map::new();
    for (theirs, ours) in [
        ("maxNoOfPodsToEvictPerNode", "perNode"),
        ("maxNoOfPodsToEvictPerNamespace", "perNamespace"),
        ("maxNoOfPodsToEvictTotal", "total"),
    ] {
        if let Some(value) = policy.get(theirs).filter(|v| !v.is_null()) {
            limits.insert(ours.to_owned(), value.clone());
        }
    }
    let known = [
        "apiVersion",
        "kind",
        "profiles",
        "maxNoOfPodsToEvictPerNode",
        "maxNoOfPodsToEvictPerNamespace",
        "maxNoOfPodsToEvictTotal",
    ];
    for key in policy.as_object().into_iter().flatten().map(|(k, _)| k) {
        if !known.contains(&key.as_str()) {
            notes.push(match key.as_str() {
                "nodeSelector" => "nodeSelector not carried over: tidal considers every node; \
                                   narrow a policy by namespaces and protections.labelSelector instead"
                    .to_owned(),
                "evictionFailureEventNotification" => {
                    "evictionFailureEventNotification not carried over: tidal always reports refused \
                     evictions in the policy status, metrics and logs"
                        .to_owned()
                }
                "metricsCollector" | "metricsProviders" | "prometheus" => format!(
                    "{key} not carried over: tidal reads metrics.k8s.io itself where a strategy's \
                     usage.source is Metrics (see the utilization strategies)"
                ),
                "gracePeriodSeconds" => {
                    "gracePeriodSeconds not carried over: evictions use each pod's own grace period"
                        .to_owned()
                }
                _ => format!("{key} not carried over: tidal has no such setting"),
            });
        }
    }
    limits
}

fn convert_profile(
    profile: &Value,
    name: &str,
    limits: &Map<String, Value>,
    options: &ConvertOptions,
    notes: &mut Vec<String>,
) -> Result<Value, String> {
    let configs: Vec<(&str, &Value)> = profile["pluginConfig"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| Some((c["name"].as_str()?, &c["args"])))
        .collect();
    let args_of = |plugin: &str| configs.iter().find(|(n, _)| *n == plugin).map(|(_, a)| *a);
    let mut enabled = Vec::new();
    for (extension, plugins) in profile["plugins"].as_object().into_iter().flatten() {
        for plugin in plugins["enabled"].as_array().into_iter().flatten() {
            if let Some(plugin) = plugin.as_str() {
                match extension.as_str() {
                    "deschedule" | "balance" => enabled.push(plugin.to_owned()),
                    // Filter/preEvictionFilter name the evictor; tidal's is built in.
                    "filter" | "preEvictionFilter" if plugin == "DefaultEvictor" => {}
                    _ => notes.push(format!(
                        "plugin {plugin} in {extension} not carried over: tidal has no such extension point"
                    )),
                }
            }
        }
        if plugins["disabled"]
            .as_array()
            .is_some_and(|d| !d.is_empty())
        {
            notes.push(format!(
                "plugins.{extension}.disabled ignored: a tidal strategy runs exactly when it is listed"
            ));
        }
    }
    let mut strategies = Map::new();
    for plugin in &enabled {
        let Some(mapping) = PLUGINS.iter().find(|m| m.plugin == *plugin) else {
            let known = PLUGINS.iter().map(|m| m.plugin);
            let hint = did_you_mean(plugin, known)
                .map_or(String::new(), |p| format!(" (did you mean {p}?)"));
            notes.push(format!(
                "plugin {plugin} not carried over: tidal has no such strategy{hint}"
            ));
            continue;
        };
        let args = strategy_args(mapping, args_of(plugin), notes);
        strategies.insert(mapping.strategy.to_owned(), Value::Object(args));
    }
    for (plugin, _) in &configs {
        if *plugin != "DefaultEvictor" && !enabled.iter().any(|e| e == plugin) {
            notes.push(format!(
                "pluginConfig {plugin} is not enabled in any extension point: left out, as the descheduler does"
            ));
        }
    }
    if strategies.is_empty() {
        return Err(format!(
            "profile {name} enables no plugin tidal has: nothing to run"
        ));
    }
    let protections = protections(args_of("DefaultEvictor"), &mut strategies, notes);
    let mut spec = json!({
        "mode": options.mode,
        "strategies": strategies,
    });
    if let Some(interval) = &options.interval {
        spec["interval"] = json!(interval);
    }
    if !limits.is_empty() {
        spec["limits"] = Value::Object(limits.clone());
    }
    if !protections.is_empty() {
        spec["protections"] = Value::Object(protections);
    }
    Ok(json!({
        "apiVersion": "tidal.dev/v1alpha1",
        "kind": "DeschedulingPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }))
}

fn strategy_args(
    mapping: &PluginMapping,
    args: Option<&Value>,
    notes: &mut Vec<String>,
) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, value) in args.and_then(Value::as_object).into_iter().flatten() {
        if value.is_null() {
            continue;
        }
        let Some((_, ours)) = mapping.args.iter().find(|(theirs, _)| theirs == key) else {
            notes.push(format!(
                "{}.{key} not carried over: tidal's {} has no such argument",
                mapping.plugin, mapping.strategy
            ));
            continue;
        };
        let value = match *ours {
            "usage" => match metrics_usage(value) {
                Some(usage) => usage,
                None => {
                    notes.push(format!(
                        "{}.metricsUtilization: only metrics-server usage is carried over \
                         (usage.source: Metrics); {value} was left out",
                        mapping.plugin
                    ));
                    continue;
                }
            },
            _ => value.clone(),
        };
        out.insert((*ours).to_owned(), value);
    }
    out
}

/// `metricsUtilization: {metricsServer: true}` or `{source: KubernetesMetrics}`: measured usage from
/// metrics.k8s.io. Prometheus queries have no tidal equivalent.
fn metrics_usage(value: &Value) -> Option<Value> {
    let server = value["metricsServer"] == true || value["source"] == "KubernetesMetrics";
    server.then(|| json!({"source": "Metrics"}))
}

fn protections(
    evictor: Option<&Value>,
    strategies: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, value) in evictor.and_then(Value::as_object).into_iter().flatten() {
        if value.is_null() {
            continue;
        }
        if let Some((_, ours, negated)) = EVICTOR_FLAGS.iter().find(|(theirs, ..)| theirs == key) {
            let Some(flag) = value.as_bool() else {
                notes.push(format!(
                    "DefaultEvictor.{key}: {value} is not a boolean, left out"
                ));
                continue;
            };
            out.insert((*ours).to_owned(), json!(flag != *negated));
        } else if EVICTOR_COPIED.contains(&key.as_str()) {
            out.insert(key.clone(), value.clone());
        } else if key == "priorityThreshold" {
            match value["value"].as_i64() {
                Some(priority) => {
                    out.insert("priorityThreshold".to_owned(), json!(priority));
                }
                None => notes.push(format!(
                    "DefaultEvictor.priorityThreshold {value} not carried over: tidal takes a \
                     priority value, not a PriorityClass name; set protections.priorityThreshold"
                )),
            }
        } else if key == "evictFailedBarePods" {
            match strategies.get_mut("removeFailedPods") {
                Some(Value::Object(args)) => {
                    args.insert("evictFailedBarePods".to_owned(), value.clone());
                }
                _ => notes.push(
                    "DefaultEvictor.evictFailedBarePods has no effect without RemoveFailedPods: left out"
                        .to_owned(),
                ),
            }
        } else if key == "podProtections" {
            pod_protections(value, &mut out, strategies, notes);
        } else {
            notes.push(format!(
                "DefaultEvictor.{key} not carried over: tidal's protections have no such setting"
            ));
        }
    }
    out
}

fn pod_protections(
    value: &Value,
    out: &mut Map<String, Value>,
    strategies: &mut Map<String, Value>,
    notes: &mut Vec<String>,
) {
    for (list, on) in [("defaultDisabled", false), ("extraEnabled", true)] {
        for name in value[list].as_array().into_iter().flatten() {
            let name = name.as_str().unwrap_or_default();
            if let Some((_, ours)) = POD_PROTECTIONS.iter().find(|(theirs, _)| *theirs == name) {
                out.insert((*ours).to_owned(), json!(on));
            } else if name == "FailedBarePods" && !on {
                if let Some(Value::Object(args)) = strategies.get_mut("removeFailedPods") {
                    args.insert("evictFailedBarePods".to_owned(), json!(true));
                }
            } else {
                notes.push(format!(
                    "DefaultEvictor.podProtections.{list}: {name} not carried over: tidal has no such protection"
                ));
            }
        }
    }
}

/// A profile name as an object name (lower case, `-` for anything else, at most 63 characters).
fn dns_name(name: &str) -> String {
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

    #[test]
    fn a_typical_policy_carries_over_with_its_evictor_and_limits() {
        let input = descheduler(json!({
            "name": "ProfileName",
            "pluginConfig": [
                {"name": "DefaultEvictor", "args": {
                    "evictSystemCriticalPods": true, "evictLocalStoragePods": true,
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
        let spec = serde_json::to_value(&policy.spec).unwrap();
        assert_eq!(spec["mode"], "DryRun");
        assert_eq!(spec["limits"]["perNode"], 5);
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
        assert_eq!(protections["systemCritical"], false);
        assert_eq!(protections["localStoragePods"], false);
        assert_eq!(protections["pvcPods"], true);
        assert_eq!(protections["nodeFit"], true);
        assert_eq!(protections["minReplicas"], 2);
        assert_eq!(protections["priorityThreshold"], 1000);
        assert_eq!(protections["minPodAge"], "5m0s");
        let notes = converted.notes.join("\n");
        assert!(notes.contains("nodeSelector not carried over"), "{notes}");
        assert!(
            notes.contains("pluginConfig PodLifeTime is not enabled"),
            "{notes}"
        );
    }

    #[test]
    fn what_has_no_equivalent_is_named_not_dropped_silently() {
        let input = descheduler(json!({
            "name": "p",
            "pluginConfig": [
                {"name": "DefaultEvictor", "args": {"priorityThreshold": {"name": "high"}, "ignorePodsWithoutPDB": true}},
                {"name": "RemoveDuplicates", "args": {"someNewArg": 1}},
            ],
            "plugins": {"balance": {"enabled": ["RemoveDuplicates", "RemoveDuplicatez", "Nope"]}},
        }));
        let converted = convert(&input, &ConvertOptions::default()).unwrap();
        let notes = converted.notes.join("\n");
        assert!(notes.contains("priorityThreshold"), "{notes}");
        assert!(notes.contains("ignorePodsWithoutPDB"), "{notes}");
        assert!(notes.contains("RemoveDuplicates.someNewArg"), "{notes}");
        assert!(notes.contains("did you mean RemoveDuplicates"), "{notes}");
        assert!(notes.contains("plugin Nope not carried over"), "{notes}");
    }

    #[test]
    fn evict_mode_and_interval_are_the_callers_choice() {
        let input = descheduler(json!({"name": "p",
            "plugins": {"deschedule": {"enabled": ["RemovePodsViolatingInterPodAntiAffinity"]}}}));
        let options = ConvertOptions {
            mode: PolicyMode::Evict,
            interval: Some("10m".to_owned()),
        };
        let converted = convert(&input, &options).unwrap();
        let spec = serde_json::to_value(&converted.policies[0].spec).unwrap();
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
            &json!({"apiVersion": "descheduler/v1alpha1", "kind": KIND}),
            &ConvertOptions::default(),
        )
        .unwrap_err();
        assert!(error.contains("v1alpha2"), "{error}");
        let error = convert(
            &json!({"apiVersion": "v1", "kind": "Pod"}),
            &ConvertOptions::default(),
        )
        .unwrap_err();
        assert!(error.contains("not a descheduler policy"), "{error}");
        let input =
            descheduler(json!({"name": "p", "plugins": {"balance": {"enabled": ["Nope"]}}}));
        assert!(convert(&input, &ConvertOptions::default()).is_err());
    }

    #[test]
    fn evict_failed_bare_pods_goes_to_remove_failed_pods() {
        let input = descheduler(json!({"name": "p",
            "pluginConfig": [{"name": "DefaultEvictor", "args": {"evictFailedBarePods": true}}],
            "plugins": {"deschedule": {"enabled": ["RemoveFailedPods"]}}}));
        let converted = convert(&input, &ConvertOptions::default()).unwrap();
        let spec = serde_json::to_value(&converted.policies[0].spec).unwrap();
        assert_eq!(
            spec["strategies"]["removeFailedPods"]["evictFailedBarePods"],
            true
        );
        // Without the strategy the switch means nothing: named, not silently dropped.
        let input = descheduler(json!({"name": "p",
            "pluginConfig": [{"name": "DefaultEvictor", "args": {"evictFailedBarePods": true}}],
            "plugins": {"deschedule": {"enabled": ["PodLifeTime"]}}}));
        let input = {
            let mut input = input;
            input["profiles"][0]["pluginConfig"]
                .as_array_mut()
                .unwrap()
                .push(json!({"name": "PodLifeTime", "args": {"maxPodLifeTimeSeconds": 60}}));
            input
        };
        let converted = convert(&input, &ConvertOptions::default()).unwrap();
        assert!(
            converted
                .notes
                .join("\n")
                .contains("evictFailedBarePods has no effect"),
            "{:?}",
            converted.notes
        );
    }

    #[test]
    fn profile_names_become_object_names() {
        assert_eq!(dns_name("ProfileName"), "profilename");
        assert_eq!(dns_name("my_profile 1"), "my-profile-1");
        assert_eq!(dns_name("__"), "descheduler");
    }
}
