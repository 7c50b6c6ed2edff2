//! The DefaultEvictor's arguments as tidal's `protections`: first the set of protections the
//! descheduler itself would apply (its `podProtections` lists, or its deprecated switches when the
//! lists are empty: never both), then each as the tidal setting that means the same.

use serde_json::{Map, Value, json};

use super::{ConvertOptions, Effect, Notes};

/// A protection of the DefaultEvictor, by the name `podProtections` uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Guard {
    LocalStorage,
    SystemCritical,
    FailedBare,
    DaemonSet,
    Pvc,
    WithoutPdb,
    ResourceClaims,
}

const GUARDS: [(&str, Guard); 7] = [
    ("PodsWithLocalStorage", Guard::LocalStorage),
    ("SystemCriticalPods", Guard::SystemCritical),
    ("FailedBarePods", Guard::FailedBare),
    ("DaemonSetPods", Guard::DaemonSet),
    ("PodsWithPVC", Guard::Pvc),
    ("PodsWithoutPDB", Guard::WithoutPdb),
    ("PodsWithResourceClaims", Guard::ResourceClaims),
];

/// On unless disabled.
const DEFAULT_ON: [Guard; 4] = [
    Guard::LocalStorage,
    Guard::SystemCritical,
    Guard::FailedBare,
    Guard::DaemonSet,
];

/// The deprecated switches, and the protection each one turns off (`evict*`) or on (`ignore*`).
const LEGACY: [(&str, Guard, bool); 6] = [
    ("evictLocalStoragePods", Guard::LocalStorage, false),
    ("evictDaemonSetPods", Guard::DaemonSet, false),
    ("evictSystemCriticalPods", Guard::SystemCritical, false),
    ("evictFailedBarePods", Guard::FailedBare, false),
    ("ignorePvcPods", Guard::Pvc, true),
    ("ignorePodsWithoutPDB", Guard::WithoutPdb, true),
];

/// Arguments copied as they are.
const COPIED: [&str; 4] = [
    "labelSelector",
    "namespaceLabelSelector",
    "minReplicas",
    "minPodAge",
];

/// What the evictor's arguments make of a profile: tidal's `protections`, and whether failed bare
/// pods may go (which tidal says on removeFailedPods).
pub(super) struct Evictor {
    pub protections: Map<String, Value>,
    pub evict_failed_bare_pods: bool,
}

pub(super) fn convert(
    args: Option<&Value>,
    options: &ConvertOptions,
    notes: &mut Notes,
) -> Evictor {
    let empty = Map::new();
    let args = args.and_then(Value::as_object).unwrap_or(&empty);
    let on = effective(args, notes);
    let has = |guard: Guard| on.contains(&guard);
    let mut out = Map::new();
    out.insert("systemCritical".into(), json!(has(Guard::SystemCritical)));
    out.insert("daemonSetPods".into(), json!(has(Guard::DaemonSet)));
    out.insert("localStoragePods".into(), json!(has(Guard::LocalStorage)));
    // Bare pods that have not failed are protected either way in the descheduler.
    out.insert("barePods".into(), json!(true));
    out.insert("pvcPods".into(), json!(has(Guard::Pvc)));
    out.insert("podsWithoutPdb".into(), json!(has(Guard::WithoutPdb)));
    out.insert(
        "resourceClaimPods".into(),
        json!(has(Guard::ResourceClaims)),
    );
    let classes =
        &args.get("podProtections").map_or(
            &Value::Null,
            |p| &p["config"]["PodsWithPVC"]["protectedStorageClasses"],
        );
    if let Some(classes) = classes.as_array().filter(|c| !c.is_empty()) {
        let names: Vec<Value> = classes
            .iter()
            .filter_map(|c| c["name"].as_str().map(|n| json!(n)))
            .collect();
        if has(Guard::Pvc) {
            out.insert("protectedStorageClasses".into(), Value::Array(names));
        } else {
            notes.push(
                Effect::Same,
                "DefaultEvictor.podProtections.config.PodsWithPVC has no effect without the \
                 PodsWithPVC protection, as in the descheduler: left out",
            );
        }
    }
    for (key, value) in args {
        if value.is_null() || LEGACY.iter().any(|(name, ..)| name == key) {
            continue;
        }
        match key.as_str() {
            "podProtections" => {}
            "nodeFit" => {
                let on = value.as_bool().unwrap_or(false);
                out.insert("nodeFit".into(), json!(on));
                if on {
                    notes.push(
                        Effect::Stricter,
                        "DefaultEvictor.nodeFit: tidal's node fit checks the pod's required \
                         anti-affinity over the node's whole topology domain, and counts the room its \
                         planned moves take: it may keep a pod the descheduler would move",
                    );
                }
            }
            "nodeSelector" => node_selector(args, value, &mut out, notes),
            "noEvictionPolicy" => match value.as_str() {
                Some("" | "Preferred") => {
                    out.insert("noEvictionPolicy".into(), json!("Preferred"));
                }
                Some("Mandatory") => {
                    out.insert("noEvictionPolicy".into(), json!("Mandatory"));
                }
                _ => notes.push(
                    Effect::Looser,
                    format!(
                        "DefaultEvictor.noEvictionPolicy {value} is not Preferred or Mandatory: \
                         tidal reads prefer-no-eviction as a preference only"
                    ),
                ),
            },
            "priorityThreshold" => {
                priority_threshold(value, has(Guard::SystemCritical), options, &mut out, notes)
            }
            copied if COPIED.contains(&copied) => {
                out.insert(key.clone(), value.clone());
            }
            _ => {
                let known = [
                    "podProtections",
                    "nodeFit",
                    "nodeSelector",
                    "noEvictionPolicy",
                ]
                .into_iter()
                .chain(["priorityThreshold"])
                .chain(COPIED)
                .chain(LEGACY.iter().map(|(name, ..)| *name));
                let hint = crate::api::validation::did_you_mean(key, known)
                    .map_or(String::new(), |k| format!(" (did you mean {k}?)"));
                notes.push(
                    Effect::Looser,
                    format!(
                        "DefaultEvictor.{key} not carried over{hint}: tidal's protections have no \
                         such setting, and an evictor setting only ever protects more"
                    ),
                )
            }
        }
    }
    let evict_failed_bare_pods = !has(Guard::FailedBare);
    Evictor {
        protections: out,
        evict_failed_bare_pods,
    }
}

/// The protections the descheduler applies (`getEffectivePodProtections`): the `podProtections` lists
/// when either is set, else the deprecated switches.
fn effective(args: &Map<String, Value>, notes: &mut Notes) -> Vec<Guard> {
    let lists = args.get("podProtections");
    let list = |name: &str| -> Vec<&str> {
        lists
            .and_then(|p| p[name].as_array())
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect()
    };
    let (disabled, enabled) = (list("defaultDisabled"), list("extraEnabled"));
    if disabled.is_empty() && enabled.is_empty() {
        let mut on = Vec::new();
        for (key, guard, turns_on) in LEGACY {
            let set = args.get(key).and_then(Value::as_bool).unwrap_or(false);
            // `evict*` turns a default protection off; `ignore*` turns an extra one on.
            if set == turns_on {
                on.push(guard);
            }
        }
        return on;
    }
    let legacy_set: Vec<&str> = LEGACY
        .iter()
        .filter(|(key, ..)| args.get(*key).is_some_and(|v| !v.is_null()))
        .map(|(key, ..)| *key)
        .collect();
    if !legacy_set.is_empty() {
        notes.push(
            Effect::Same,
            format!(
                "DefaultEvictor {} ignored: the descheduler reads only podProtections when it is \
                 set, and so does the conversion",
                legacy_set.join(", ")
            ),
        );
    }
    let name_of = |name: &str| GUARDS.iter().find(|(n, _)| *n == name).map(|(_, g)| *g);
    let mut on: Vec<Guard> = DEFAULT_ON
        .into_iter()
        .filter(|guard| !disabled.iter().any(|name| name_of(name) == Some(*guard)))
        .collect();
    for name in disabled {
        if name_of(name).is_none_or(|g| !DEFAULT_ON.contains(&g)) {
            notes.push(
                Effect::Stricter,
                format!(
                    "DefaultEvictor.podProtections.defaultDisabled: {name} is not a default \
                     protection tidal knows; every default protection stays on"
                ),
            );
        }
    }
    for name in enabled {
        match name_of(name) {
            Some(guard) => {
                if !on.contains(&guard) {
                    on.push(guard);
                }
            }
            None => notes.push(
                Effect::Looser,
                format!(
                    "DefaultEvictor.podProtections.extraEnabled: {name} not carried over: tidal \
                     has no such protection"
                ),
            ),
        }
    }
    on
}

fn node_selector(
    args: &Map<String, Value>,
    value: &Value,
    out: &mut Map<String, Value>,
    notes: &mut Notes,
) {
    let text = value.as_str().unwrap_or_default();
    if text.trim().is_empty() {
        return;
    }
    if args.get("nodeFit").and_then(Value::as_bool) != Some(true) {
        notes.push(
            Effect::Same,
            "DefaultEvictor.nodeSelector only narrows nodeFit's destinations, and nodeFit is off: \
             left out",
        );
        return;
    }
    match super::selector::parse(text) {
        Ok(selector) => {
            out.insert(
                "nodeFitNodeSelector".into(),
                serde_json::to_value(selector).unwrap_or(Value::Null),
            );
        }
        Err(error) => notes.push(
            Effect::Looser,
            format!("DefaultEvictor.nodeSelector not carried over: {error}"),
        ),
    }
}

/// The descheduler applies `priorityThreshold` only while system-critical pods are protected.
fn priority_threshold(
    value: &Value,
    system_critical: bool,
    options: &ConvertOptions,
    out: &mut Map<String, Value>,
    notes: &mut Notes,
) {
    if !system_critical {
        notes.push(
            Effect::Same,
            "DefaultEvictor.priorityThreshold has no effect while SystemCriticalPods is not \
             protected, as in the descheduler: left out",
        );
        return;
    }
    if let Some(priority) = value["value"].as_i64() {
        out.insert("priorityThreshold".into(), json!(priority));
        return;
    }
    let Some(class) = value["name"].as_str().filter(|n| !n.is_empty()) else {
        return;
    };
    match options.priority_classes.get(class) {
        Some(priority) => {
            out.insert("priorityThreshold".into(), json!(priority));
            notes.push(
                Effect::Same,
                format!(
                    "DefaultEvictor.priorityThreshold names PriorityClass {class}: its value \
                     {priority}, from --priority-class"
                ),
            );
        }
        None => notes.push(
            Effect::Looser,
            format!(
                "DefaultEvictor.priorityThreshold names PriorityClass {class}, whose value tidal \
                 cannot read offline: pass --priority-class {class}=<value> (kubectl get \
                 priorityclass {class} -o jsonpath='{{.value}}')"
            ),
        ),
    }
}
