//! `descheduler/v1alpha1` policies, upgraded to `descheduler/v1alpha2` the way the descheduler did it
//! before it dropped v1alpha1 (v0.30's `V1alpha1ToInternal`): each enabled strategy becomes a profile
//! of its own, named `strategy-<Name>-profile`, with a DefaultEvictor made of the top-level switches
//! and the strategy's `nodeFit` and priority threshold.

use serde_json::{Map, Value, json};

use super::{API_VERSION, Effect, KIND, Notes};

/// The strategies of v1alpha1, balancing or not (which extension point their plugin runs in).
const STRATEGIES: [(&str, bool); 10] = [
    ("RemoveDuplicates", true),
    ("LowNodeUtilization", true),
    ("HighNodeUtilization", true),
    ("RemovePodsViolatingTopologySpreadConstraint", true),
    ("RemovePodsViolatingInterPodAntiAffinity", false),
    ("RemovePodsViolatingNodeAffinity", false),
    ("RemovePodsViolatingNodeTaints", false),
    ("RemovePodsHavingTooManyRestarts", false),
    ("PodLifeTime", false),
    ("RemoveFailedPods", false),
];

/// `params` keys v1alpha1 knows.
const PARAMS: [&str; 15] = [
    "nodeResourceUtilizationThresholds",
    "nodeAffinityType",
    "podsHavingTooManyRestarts",
    "podLifeTime",
    "removeDuplicates",
    "failedPods",
    "includeSoftConstraints",
    "namespaces",
    "thresholdPriority",
    "thresholdPriorityClassName",
    "labelSelector",
    "nodeFit",
    "includePreferNoSchedule",
    "excludedTaints",
    "includedTaints",
];

pub(super) fn to_v1alpha2(policy: &Value, notes: &mut Notes) -> Result<Value, String> {
    let mut out = json!({"apiVersion": API_VERSION, "kind": KIND});
    for key in [
        "nodeSelector",
        "maxNoOfPodsToEvictPerNode",
        "maxNoOfPodsToEvictPerNamespace",
    ] {
        if let Some(value) = policy.get(key).filter(|v| !v.is_null()) {
            out[key] = value.clone();
        }
    }
    const EVICTOR: [&str; 5] = [
        "evictLocalStoragePods",
        "evictDaemonSetPods",
        "evictSystemCriticalPods",
        "ignorePvcPods",
        "evictFailedBarePods",
    ];
    for (key, value) in policy.as_object().into_iter().flatten() {
        let known = ["apiVersion", "kind", "strategies"].contains(&key.as_str())
            || out.get(key).is_some()
            || EVICTOR.contains(&key.as_str());
        if !known && !value.is_null() {
            notes.push(
                Effect::Looser,
                format!("{key} not carried over: v1alpha1 has no such setting tidal knows"),
            );
        }
    }
    let mut profiles = Vec::new();
    for (name, strategy) in policy["strategies"].as_object().into_iter().flatten() {
        if strategy["enabled"] != true {
            continue;
        }
        let Some((_, balance)) = STRATEGIES.iter().find(|(s, _)| s == name) else {
            notes.push(
                Effect::Stricter,
                format!("strategy {name} not carried over: tidal has no such strategy"),
            );
            continue;
        };
        let params = strategy["params"].as_object().cloned().unwrap_or_default();
        for key in params.keys() {
            if !PARAMS.contains(&key.as_str()) {
                notes.push(
                    Effect::Looser,
                    format!("strategy {name}: params.{key} not carried over: no such parameter"),
                );
            }
        }
        let mut evictor = Map::new();
        for key in EVICTOR {
            if let Some(value) = policy.get(key).filter(|v| !v.is_null()) {
                evictor.insert(key.to_owned(), value.clone());
            }
        }
        if name != "PodLifeTime" && params.get("nodeFit") == Some(&json!(true)) {
            evictor.insert("nodeFit".into(), json!(true));
        }
        match (
            params.get("thresholdPriority").filter(|v| !v.is_null()),
            strategy["params"]["thresholdPriorityClassName"]
                .as_str()
                .filter(|n| !n.is_empty()),
        ) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "strategy {name}: set thresholdPriority or thresholdPriorityClassName, not \
                     both (the descheduler refuses it too)"
                ));
            }
            (Some(value), None) => {
                evictor.insert("priorityThreshold".into(), json!({"value": value}));
            }
            (None, Some(class)) => {
                evictor.insert("priorityThreshold".into(), json!({"name": class}));
            }
            (None, None) => {}
        }
        let extension = if *balance { "balance" } else { "deschedule" };
        profiles.push(json!({
            "name": format!("strategy-{name}-profile"),
            "pluginConfig": [
                {"name": "DefaultEvictor", "args": evictor},
                {"name": name, "args": plugin_args(name, &strategy["params"], notes)},
            ],
            "plugins": {extension: {"enabled": [name]}},
        }));
    }
    out["profiles"] = Value::Array(profiles);
    Ok(out)
}

/// The plugin arguments v0.30's `StrategyParamsToPluginArgs` made of a strategy's parameters.
fn plugin_args(name: &str, params: &Value, notes: &mut Notes) -> Value {
    let get = |key: &str| params.get(key).filter(|v| !v.is_null()).cloned();
    let mut args = Map::new();
    let mut put = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            args.insert(key.to_owned(), value);
        }
    };
    let namespaces = get("namespaces");
    let selector = get("labelSelector");
    let thresholds = params["nodeResourceUtilizationThresholds"].clone();
    match name {
        "LowNodeUtilization" | "HighNodeUtilization" => {
            put("evictableNamespaces", namespaces);
            put(
                "thresholds",
                Some(thresholds["thresholds"].clone()).filter(|v| !v.is_null()),
            );
            put(
                "numberOfNodes",
                Some(thresholds["numberOfNodes"].clone()).filter(|v| !v.is_null()),
            );
            if name == "LowNodeUtilization" {
                put(
                    "targetThresholds",
                    Some(thresholds["targetThresholds"].clone()).filter(|v| !v.is_null()),
                );
                put(
                    "useDeviationThresholds",
                    Some(thresholds["useDeviationThresholds"].clone()).filter(|v| !v.is_null()),
                );
            }
            if selector.is_some() {
                notes.push(
                    Effect::Same,
                    format!(
                        "strategy {name}: params.labelSelector was ignored by the descheduler too"
                    ),
                );
            }
        }
        "RemoveDuplicates" => {
            put("namespaces", namespaces);
            put(
                "excludeOwnerKinds",
                params["removeDuplicates"].get("excludeOwnerKinds").cloned(),
            );
        }
        "RemovePodsViolatingTopologySpreadConstraint" => {
            put("namespaces", namespaces);
            put("labelSelector", selector);
            let soft = params.get("includeSoftConstraints") == Some(&json!(true));
            let constraints = if soft {
                json!(["DoNotSchedule", "ScheduleAnyway"])
            } else {
                json!(["DoNotSchedule"])
            };
            put("constraints", Some(constraints));
            put("topologyBalanceNodeFit", Some(json!(true)));
        }
        "RemovePodsViolatingNodeTaints" => {
            put("namespaces", namespaces);
            put("labelSelector", selector);
            put("includePreferNoSchedule", get("includePreferNoSchedule"));
            put("excludedTaints", get("excludedTaints"));
            if let Some(included) = get("includedTaints") {
                notes.push(
                    Effect::Stricter,
                    format!(
                        "strategy {name}: params.includedTaints kept, though the descheduler's own \
                         v1alpha1 upgrade dropped it (and so evicted for every taint)"
                    ),
                );
                put("includedTaints", Some(included));
            }
        }
        "RemoveFailedPods" => {
            put("namespaces", namespaces);
            put("labelSelector", selector);
            for key in [
                "includingInitContainers",
                "minPodLifetimeSeconds",
                "excludeOwnerKinds",
                "reasons",
            ] {
                put(
                    key,
                    params["failedPods"]
                        .get(key)
                        .cloned()
                        .filter(|v| !v.is_null()),
                );
            }
        }
        "RemovePodsHavingTooManyRestarts" => {
            put("namespaces", namespaces);
            put("labelSelector", selector);
            for key in ["podRestartThreshold", "includingInitContainers"] {
                put(
                    key,
                    params["podsHavingTooManyRestarts"]
                        .get(key)
                        .cloned()
                        .filter(|v| !v.is_null()),
                );
            }
        }
        "PodLifeTime" => {
            put("namespaces", namespaces);
            put("labelSelector", selector);
            let life = &params["podLifeTime"];
            put(
                "maxPodLifeTimeSeconds",
                life.get("maxPodLifeTimeSeconds")
                    .cloned()
                    .filter(|v| !v.is_null()),
            );
            let states: Vec<Value> = ["podStatusPhases", "states"]
                .iter()
                .flat_map(|k| life[*k].as_array().cloned().unwrap_or_default())
                .collect();
            if !states.is_empty() {
                put("states", Some(Value::Array(states)));
            }
        }
        // RemovePodsViolatingInterPodAntiAffinity, RemovePodsViolatingNodeAffinity.
        _ => {
            put("namespaces", namespaces);
            put("labelSelector", selector);
            put("nodeAffinityType", get("nodeAffinityType"));
        }
    }
    Value::Object(args)
}
