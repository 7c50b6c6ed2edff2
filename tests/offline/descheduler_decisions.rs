//! `tidal convert` is never looser, checked the way the descheduler decides. Every descheduler policy
//! under `tests/fixtures/descheduler/` (its examples, the chart values of v0.33.0 to v0.36.0, the
//! README's policies, the ConfigMap, and tidal's own policies in the descheduler's format) is
//! converted with `tidal convert`: it converts, or refuses for a reason the error names. Then, for
//! each profile and each plugin it enables, a small cluster is built for that plugin: pods on either
//! side of each rule the plugin's arguments set (an age one second either side of
//! `maxPodLifeTimeSeconds`, a restart count one below the threshold, a taint the policy excludes, a
//! node that is only half full, ...). A model of the plugin, written here from the descheduler's
//! sources (`pkg/framework/plugins/*/`, v0.36) and its test cases, says how many pods of each group it
//! may evict; `DefaultEvictor` is the model of `descheduler_parity.rs`. tidal's report of the converted
//! policies on that cluster must plan (now or in a later round) no more pods of a group, by the
//! profile's policy and the plugin's strategy, than the descheduler evicts, and must plan a pod of each
//! control group the descheduler evicts, so the comparison cannot pass with a policy that does nothing.

use std::{collections::BTreeMap, path::Path};

use serde_json::{Value, json};
use tidal_testkit::objects::{node, pod};

use crate::{
    cli::tidal,
    descheduler_parity::{
        CLASS, NOW, common, evictor_protects, fixtures, in_scope, string_selector_matches,
    },
    support::{descheduler_policies_in, report_json, v1alpha1_evictor},
};

const NAMESPACE: &str = "work";
const DAY: i64 = 86_400;

fn now() -> jiff::Timestamp {
    NOW.parse().unwrap()
}

/// `seconds` before `NOW`, as the API server writes times.
fn ago(seconds: i64) -> String {
    (now() - jiff::SignedDuration::from_secs(seconds))
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn age_of(time: &Value) -> Option<i64> {
    let at: jiff::Timestamp = time.as_str()?.parse().ok()?;
    Some(now().duration_since(at).as_secs())
}

// ---------------------------------------------------------------------------------------------------
// The descheduler policies of a fixture: each enabled evicting plugin with its arguments, defaulted as
// the descheduler defaults them, and its profile's DefaultEvictor arguments.

#[derive(Clone, Debug)]
struct Plugin {
    /// The name of the DeschedulingPolicy tidal makes of the profile.
    policy: String,
    name: String,
    args: Value,
    evictor: Value,
    node_selector: Option<String>,
}

const PLUGINS: [&str; 10] = [
    "RemoveDuplicates",
    "LowNodeUtilization",
    "HighNodeUtilization",
    "RemovePodsViolatingTopologySpreadConstraint",
    "RemovePodsViolatingInterPodAntiAffinity",
    "RemovePodsViolatingNodeAffinity",
    "RemovePodsViolatingNodeTaints",
    "RemovePodsHavingTooManyRestarts",
    "PodLifeTime",
    "RemoveFailedPods",
];

/// tidal's strategy for a plugin: its name in lower camel case.
fn strategy_of(plugin: &str) -> String {
    let mut chars = plugin.chars();
    let first = chars.next().unwrap().to_ascii_lowercase();
    std::iter::once(first).chain(chars).collect()
}

fn object_name(profile: &str) -> String {
    let name: String = profile
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    name.trim_matches('-').to_owned()
}

/// The defaults of the plugins' `SetDefaults_*Args` (`defaults.go`) where they matter.
fn defaulted(plugin: &str, mut args: Value) -> Value {
    if !args.is_object() {
        args = json!({});
    }
    match plugin {
        "RemoveFailedPods" if args["minPodLifetimeSeconds"].is_null() => {
            args["minPodLifetimeSeconds"] = json!(3600);
        }
        "RemovePodsViolatingTopologySpreadConstraint" => {
            if args["constraints"].as_array().is_none_or(Vec::is_empty) {
                args["constraints"] = json!(["DoNotSchedule"]);
            }
            if args["topologyBalanceNodeFit"].is_null() {
                args["topologyBalanceNodeFit"] = json!(true);
            }
        }
        _ => {}
    }
    args
}

/// The policies in a fixture file: plain, in a ConfigMap's keys, or a chart's `deschedulerPolicy`.
fn plugins_of(path: &Path) -> Vec<Plugin> {
    let mut out = Vec::new();
    for policy in descheduler_policies_in(path) {
        if policy["apiVersion"] == "descheduler/v1alpha1" || policy.get("strategies").is_some() {
            out.extend(v1alpha1_plugins(&policy));
        } else {
            out.extend(v1alpha2_plugins(&policy));
        }
    }
    out
}

fn v1alpha2_plugins(policy: &Value) -> Vec<Plugin> {
    let node_selector = policy["nodeSelector"].as_str().map(str::to_owned);
    let mut out = Vec::new();
    for profile in policy["profiles"].as_array().into_iter().flatten() {
        let config = |plugin: &str| {
            profile["pluginConfig"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["name"] == plugin)
                .map_or(Value::Null, |c| c["args"].clone())
        };
        for extension in ["deschedule", "balance"] {
            let disabled = &profile["plugins"][extension]["disabled"];
            for plugin in profile["plugins"][extension]["enabled"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                let off = disabled
                    .as_array()
                    .is_some_and(|d| d.iter().any(|d| d == plugin || d == "*"));
                if !PLUGINS.contains(&plugin) || off {
                    continue;
                }
                out.push(Plugin {
                    policy: object_name(profile["name"].as_str().unwrap_or_default()),
                    name: plugin.to_owned(),
                    args: defaulted(plugin, config(plugin)),
                    evictor: config("DefaultEvictor"),
                    node_selector: node_selector.clone(),
                });
            }
        }
    }
    out
}

/// A v1alpha1 policy as the descheduler v0.30 upgraded it: a profile per enabled strategy, named
/// `strategy-<Name>-profile`, its `params` becoming the plugin's arguments and the evictor's.
fn v1alpha1_plugins(policy: &Value) -> Vec<Plugin> {
    let node_selector = policy["nodeSelector"].as_str().map(str::to_owned);
    let mut out = Vec::new();
    for (name, strategy) in policy["strategies"].as_object().into_iter().flatten() {
        if strategy["enabled"] != true || !PLUGINS.contains(&name.as_str()) {
            continue;
        }
        let params = &strategy["params"];
        let mut evictor = v1alpha1_evictor(policy, params);
        evictor["nodeFit"] = params["nodeFit"].clone();
        let mut args = json!({
            "namespaces": params["namespaces"],
            "labelSelector": params["labelSelector"],
        });
        match name.as_str() {
            "RemoveDuplicates" => {
                args["excludeOwnerKinds"] = params["removeDuplicates"]["excludeOwnerKinds"].clone();
            }
            "LowNodeUtilization" | "HighNodeUtilization" => {
                args = params["nodeResourceUtilizationThresholds"].clone();
                args["evictableNamespaces"] = params["namespaces"].clone();
            }
            "RemovePodsViolatingTopologySpreadConstraint" => {
                args["constraints"] = if params["includeSoftConstraints"] == true {
                    json!(["DoNotSchedule", "ScheduleAnyway"])
                } else {
                    json!(["DoNotSchedule"])
                };
            }
            "RemovePodsHavingTooManyRestarts" => {
                let restarts = &params["podsHavingTooManyRestarts"];
                args["podRestartThreshold"] = restarts["podRestartThreshold"].clone();
                args["includingInitContainers"] = restarts["includingInitContainers"].clone();
            }
            "PodLifeTime" => {
                let life = &params["podLifeTime"];
                args["maxPodLifeTimeSeconds"] = life["maxPodLifeTimeSeconds"].clone();
                let mut states: Vec<Value> = Vec::new();
                for key in ["states", "podStatusPhases"] {
                    states.extend(life[key].as_array().cloned().unwrap_or_default());
                }
                if !states.is_empty() {
                    args["states"] = Value::Array(states);
                }
            }
            "RemoveFailedPods" => {
                let failed = &params["failedPods"];
                for key in [
                    "reasons",
                    "excludeOwnerKinds",
                    "includingInitContainers",
                    "minPodLifetimeSeconds",
                ] {
                    args[key] = failed[key].clone();
                }
            }
            "RemovePodsViolatingNodeAffinity" => {
                args["nodeAffinityType"] = params["nodeAffinityType"].clone();
            }
            "RemovePodsViolatingNodeTaints" => {
                args["excludedTaints"] = params["excludedTaints"].clone();
                args["includedTaints"] = params["includedTaints"].clone();
                args["includePreferNoSchedule"] = params["includePreferNoSchedule"].clone();
            }
            _ => {}
        }
        let args = strip_nulls(args);
        out.push(Plugin {
            policy: object_name(&format!("strategy-{name}-profile")),
            name: name.clone(),
            args: defaulted(name, args),
            evictor: strip_nulls(evictor),
            node_selector: node_selector.clone(),
        });
    }
    out
}

fn strip_nulls(mut value: Value) -> Value {
    if let Some(map) = value.as_object_mut() {
        map.retain(|_, v| !v.is_null());
    }
    value
}

// ---------------------------------------------------------------------------------------------------
// The clusters. Every node carries `node=node1` (the README's top-level `nodeSelector`) and its
// hostname; every pod is owned by a controller of its own (no duplicates unless a scenario makes
// them), labelled for the README's label selectors and covered by a disruption budget.

struct Scenario {
    objects: Vec<Value>,
    groups: Vec<Group>,
}

/// Pods of a scenario and how many of them the descheduler's plugin may evict: 0 for a pod it keeps.
struct Group {
    what: String,
    pods: Vec<String>,
    evicts: usize,
    /// The descheduler evicts one of these, so tidal must plan one: the comparison is not vacuous.
    control: bool,
}

impl Group {
    fn one(what: impl Into<String>, pod: &Value, evicted: bool, control: bool) -> Group {
        Group {
            what: what.into(),
            pods: vec![key(pod)],
            evicts: usize::from(evicted),
            control: control && evicted,
        }
    }
}

fn key(pod: &Value) -> String {
    format!(
        "{}/{}",
        pod["metadata"]["namespace"].as_str().unwrap(),
        pod["metadata"]["name"].as_str().unwrap()
    )
}

fn a_node(name: &str) -> tidal_testkit::objects::NodeBuilder {
    node(name)
        .label("kubernetes.io/hostname", name)
        .label("node", "node1")
}

/// A running pod created 30 days ago, owned by `ReplicaSet rs-<name>`, with explicit conditions.
fn a_pod(namespace: &str, name: &str, node: &str) -> tidal_testkit::objects::PodBuilder {
    let created = ago(30 * DAY);
    pod(&format!("{namespace}/{name}"), node)
        .created(&created)
        .label("app", name)
        .label("component", "redis")
        .label("tier", "cache")
        .label("environment", "prod")
        .label("pdb", "yes")
        .status(
            "conditions",
            json!([
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": created},
                {"type": "Ready", "status": "True", "lastTransitionTime": created}]),
        )
        .status(
            "containerStatuses",
            json!([{"name": "main", "image": "example.com/app:1", "imageID": "", "ready": true,
                    "restartCount": 0, "state": {"running": {"startedAt": created}}}]),
        )
}

/// The namespace a plugin's pods go in: the first it includes, else `work`.
fn namespace_for(args: &Value) -> String {
    let namespaces = if args["evictableNamespaces"].is_object() {
        &args["evictableNamespaces"]
    } else {
        &args["namespaces"]
    };
    namespaces["include"][0]
        .as_str()
        .unwrap_or(NAMESPACE)
        .to_owned()
}

fn base_objects(namespace: &str) -> Vec<Value> {
    let mut objects = common();
    if !objects
        .iter()
        .any(|o| o["kind"] == "Namespace" && o["metadata"]["name"] == namespace)
    {
        objects.push(json!({"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": namespace, "labels": {"team": "a"}}}));
    }
    if namespace != NAMESPACE {
        objects.push(
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb", "namespace": namespace},
            "spec": {"maxUnavailable": 100, "selector": {"matchLabels": {"pdb": "yes"}}}}),
        );
    }
    objects
}

// --- PodLifeTime, RemoveFailedPods, RemovePodsHavingTooManyRestarts: a catalogue of pod states, ages
// and owners, each pod decided by the plugin's filter (`pod_lifetime.go`, `failedpods.go`,
// `toomanyrestarts.go`).

/// The states a pod of the catalogue can be in, as the kubelet writes them.
const STATES: [&str; 8] = [
    "running",
    "crashloop",
    "pending-init",
    "succeeded",
    "failed-outofcpu",
    "failed-exit2",
    "failed-init-config",
    "failed-nodeaffinity",
];

fn in_state(
    mut pod: tidal_testkit::objects::PodBuilder,
    state: &str,
    age: i64,
    restarts: (i64, i64),
) -> tidal_testkit::objects::PodBuilder {
    let at = ago(age);
    pod = pod.created(&at).status(
        "conditions",
        json!([
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": at},
            {"type": "Ready", "status": "True", "lastTransitionTime": at}]),
    );
    let terminated = |code: i64, reason: &str| json!({"terminated": {"exitCode": code, "reason": reason, "startedAt": at, "finishedAt": at}});
    let container = |state: Value| {
        json!([{"name": "main", "image": "example.com/app:1", "imageID": "", "ready": false,
                "restartCount": restarts.0, "state": state}])
    };
    let init = |state: Value| {
        json!([{"name": "init", "image": "example.com/init:1", "imageID": "", "ready": false,
                "restartCount": restarts.1, "state": state}])
    };
    pod = pod.status("initContainerStatuses", init(terminated(0, "Completed")));
    pod = pod.status(
        "containerStatuses",
        container(json!({"running": {"startedAt": at}})),
    );
    match state {
        "running" => pod,
        "crashloop" => pod.status(
            "containerStatuses",
            container(json!({"waiting": {"reason": "CrashLoopBackOff"}})),
        ),
        "pending-init" => pod
            .phase("Pending")
            .status(
                "initContainerStatuses",
                init(json!({"running": {"startedAt": at}})),
            )
            .status(
                "containerStatuses",
                container(json!({"waiting": {"reason": "PodInitializing"}})),
            ),
        "succeeded" => pod
            .phase("Succeeded")
            .status(
                "conditions",
                json!([
                {"type": "Initialized", "status": "True", "reason": "PodCompleted", "lastTransitionTime": at},
                {"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": at},
                {"type": "ContainersReady", "status": "False", "reason": "PodCompleted", "lastTransitionTime": at},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": at}]),
            )
            .status("containerStatuses", container(terminated(0, "Completed"))),
        "failed-outofcpu" => pod
            .phase("Failed")
            .status("reason", json!("OutOfcpu"))
            .status("containerStatuses", json!([])),
        "failed-exit2" => pod
            .phase("Failed")
            .status("containerStatuses", container(terminated(2, "Error"))),
        "failed-init-config" => pod
            .phase("Failed")
            .status(
                "initContainerStatuses",
                init(json!({"waiting": {"reason": "CreateContainerConfigError"}})),
            )
            .status(
                "containerStatuses",
                container(json!({"waiting": {"reason": "PodInitializing"}})),
            ),
        "failed-nodeaffinity" => pod
            .phase("Failed")
            .status("reason", json!("NodeAffinity"))
            .status("containerStatuses", container(terminated(1, "Error"))),
        other => panic!("state {other}"),
    }
}

fn statuses<'a>(pod: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    pod["status"][field].as_array().into_iter().flatten()
}

fn waiting_or_terminated_reasons(pod: &Value, field: &str) -> Vec<String> {
    statuses(pod, field)
        .flat_map(|c| {
            [
                c["state"]["waiting"]["reason"].as_str(),
                c["state"]["terminated"]["reason"].as_str(),
            ]
        })
        .flatten()
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
        .collect()
}

fn exit_codes(pod: &Value, field: &str) -> Vec<i64> {
    statuses(pod, field)
        .filter_map(|c| c["state"]["terminated"]["exitCode"].as_i64())
        .collect()
}

fn owner_kinds(pod: &Value) -> Vec<String> {
    pod["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["kind"].as_str().map(str::to_owned))
        .collect()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// `PodLifeTime`'s filter, `pod_lifetime.go`.
fn pod_lifetime_evicts(args: &Value, pod: &Value) -> bool {
    let age = age_of(&pod["metadata"]["creationTimestamp"]).unwrap();
    if let Some(max) = args["maxPodLifeTimeSeconds"].as_i64()
        && (age < 0 || age <= max)
    {
        return false;
    }
    let init = args["includingInitContainers"] == true;
    let ephemeral = args["includingEphemeralContainers"] == true;
    let states = strings(&args["states"]);
    if !states.is_empty() {
        let has = |s: &str| states.iter().any(|w| w == s);
        let mut reasons = waiting_or_terminated_reasons(pod, "containerStatuses");
        if init {
            reasons.extend(waiting_or_terminated_reasons(pod, "initContainerStatuses"));
        }
        if ephemeral {
            reasons.extend(waiting_or_terminated_reasons(
                pod,
                "ephemeralContainerStatuses",
            ));
        }
        let matched = pod["status"]["phase"].as_str().is_some_and(has)
            || pod["status"]["reason"].as_str().is_some_and(has)
            || reasons.iter().any(|r| has(r));
        if !matched {
            return false;
        }
    }
    let kinds = owner_kinds(pod);
    let include = strings(&args["ownerKinds"]["include"]);
    let exclude = strings(&args["ownerKinds"]["exclude"]);
    if !include.is_empty() {
        if !kinds.iter().any(|k| include.contains(k)) {
            return false;
        }
    } else if kinds.iter().any(|k| exclude.contains(k)) {
        return false;
    }
    if let Some(filters) = args["conditions"].as_array().filter(|f| !f.is_empty()) {
        let matches = filters.iter().any(|f| {
            statuses(pod, "conditions").any(|c| {
                let field = |name: &str| {
                    f[name]
                        .as_str()
                        .filter(|v| !v.is_empty())
                        .is_none_or(|v| c[name].as_str() == Some(v))
                };
                if !(field("type") && field("status") && field("reason")) {
                    return false;
                }
                match f["minTimeSinceLastTransitionSeconds"].as_i64() {
                    None => true,
                    Some(min) => age_of(&c["lastTransitionTime"]).is_some_and(|t| t >= min),
                }
            })
        });
        if !matches {
            return false;
        }
    }
    if let Some(codes) = args["exitCodes"].as_array().filter(|c| !c.is_empty()) {
        let mut seen = exit_codes(pod, "containerStatuses");
        if init {
            seen.extend(exit_codes(pod, "initContainerStatuses"));
        }
        if !seen.iter().any(|c| codes.contains(&json!(c))) {
            return false;
        }
    }
    true
}

/// `RemoveFailedPods`' filter, `failedpods.go` (`validateCanEvict`).
fn failed_pods_evicts(args: &Value, pod: &Value) -> bool {
    if pod["status"]["phase"] != "Failed" {
        return false;
    }
    let age = age_of(&pod["metadata"]["creationTimestamp"]).unwrap();
    if let Some(min) = args["minPodLifetimeSeconds"].as_i64()
        && age < min
    {
        return false;
    }
    let excluded = strings(&args["excludeOwnerKinds"]);
    if owner_kinds(pod).iter().any(|k| excluded.contains(k)) {
        return false;
    }
    let init = args["includingInitContainers"] == true;
    let reasons = strings(&args["reasons"]);
    if !reasons.is_empty() {
        let mut seen = waiting_or_terminated_reasons(pod, "containerStatuses");
        if let Some(reason) = pod["status"]["reason"].as_str().filter(|r| !r.is_empty()) {
            seen.push(reason.to_owned());
        }
        if init {
            seen.extend(waiting_or_terminated_reasons(pod, "initContainerStatuses"));
        }
        if !seen.iter().any(|r| reasons.contains(r)) {
            return false;
        }
    }
    if let Some(codes) = args["exitCodes"].as_array().filter(|c| !c.is_empty()) {
        let mut seen = exit_codes(pod, "containerStatuses");
        if init {
            seen.extend(exit_codes(pod, "initContainerStatuses"));
        }
        if !seen.iter().any(|c| codes.contains(&json!(c))) {
            return false;
        }
    }
    true
}

/// `RemovePodsHavingTooManyRestarts`' filter, `toomanyrestarts.go`.
fn too_many_restarts_evicts(args: &Value, pod: &Value) -> bool {
    let init = args["includingInitContainers"] == true;
    let count = |field: &str| -> i64 {
        statuses(pod, field)
            .filter_map(|c| c["restartCount"].as_i64())
            .sum()
    };
    let restarts = count("containerStatuses")
        + if init {
            count("initContainerStatuses")
        } else {
            0
        };
    if restarts < args["podRestartThreshold"].as_i64().unwrap_or(0) {
        return false;
    }
    let states = strings(&args["states"]);
    if states.is_empty() {
        return true;
    }
    let has = |s: &str| states.iter().any(|w| w == s);
    let waiting = |field: &str| {
        statuses(pod, field).any(|c| c["state"]["waiting"]["reason"].as_str().is_some_and(has))
    };
    pod["status"]["phase"].as_str().is_some_and(has)
        || waiting("containerStatuses")
        || (init && waiting("initContainerStatuses"))
}

fn catalogue(plugin: &Plugin) -> Scenario {
    let args = &plugin.args;
    let namespace = namespace_for(args);
    let mut objects = base_objects(&namespace);
    for name in ["n1", "n2", "n3"] {
        objects.push(a_node(name).into_value());
    }
    // Ages one second either side of each age the arguments name, and a month past them.
    let mut ages: Vec<i64> = vec![600, 30 * DAY];
    let threshold = |value: &Value| value.as_i64();
    if let Some(max) = threshold(&args["maxPodLifeTimeSeconds"]) {
        ages.extend([max, max + 1, max + 30 * DAY]);
    }
    if let Some(min) = threshold(&args["minPodLifetimeSeconds"]) {
        ages.extend([(min - 1).max(0), min, min + 30 * DAY]);
    }
    for filter in args["conditions"].as_array().into_iter().flatten() {
        if let Some(min) = threshold(&filter["minTimeSinceLastTransitionSeconds"]) {
            ages.extend([(min - 1).max(0), min, min + 30 * DAY]);
        }
    }
    ages.sort_unstable();
    ages.dedup();
    // Restarts (containers, init containers) either side of the threshold.
    let limit = args["podRestartThreshold"].as_i64().unwrap_or(0).max(1);
    let restart_counts = [(0, 0), (limit - 1, 0), (limit, 0), (limit - 1, 1)];
    let decide: fn(&Value, &Value) -> bool = match plugin.name.as_str() {
        "PodLifeTime" => pod_lifetime_evicts,
        "RemoveFailedPods" => failed_pods_evicts,
        "RemovePodsHavingTooManyRestarts" => too_many_restarts_evicts,
        other => panic!("{other}"),
    };
    let mut groups = Vec::new();
    let mut at = 0;
    for state in STATES {
        for &age in &ages {
            for restarts in restart_counts {
                if restarts != (0, 0) && plugin.name != "RemovePodsHavingTooManyRestarts" {
                    continue;
                }
                for owner in ["ReplicaSet", "Job"] {
                    at += 1;
                    let name = format!("{state}-{age}s-r{}-{}-{at}", restarts.0, restarts.1)
                        .to_lowercase()
                        .replace('_', "-");
                    let node = ["n1", "n2", "n3"][at % 3];
                    let pod = in_state(a_pod(&namespace, &name, node), state, age, restarts)
                        .owned_by(owner, &format!("{}-{name}", owner.to_lowercase()))
                        .into_value();
                    let evicted = decide(args, &pod);
                    groups.push(Group::one(
                        format!("{state}, {age}s old, restarts {restarts:?}, owned by a {owner}"),
                        &pod,
                        evicted,
                        true,
                    ));
                    objects.push(pod);
                }
            }
        }
    }
    Scenario { objects, groups }
}

// --- RemovePodsViolatingNodeTaints (`node_taint.go`): one node per kind of taint, a pod tolerating it
// and one that does not. Only NoSchedule taints count (PreferNoSchedule with
// `includePreferNoSchedule`), less `excludedTaints`, within `includedTaints` when given.

const TAINTS: [(&str, &str, &str); 7] = [
    ("decommissioned", "end-of-life", "NoSchedule"),
    ("dedicated", "special-user", "NoSchedule"),
    ("dedicated", "other-user", "NoSchedule"),
    ("reserved", "", "NoSchedule"),
    ("reserved", "batch", "NoSchedule"),
    ("soft", "yes", "PreferNoSchedule"),
    ("gone", "yes", "NoExecute"),
];

fn taint_counts(args: &Value, (key, value, effect): (&str, &str, &str)) -> bool {
    let listed = |list: &Value| {
        let list = strings(list);
        list.iter().any(|t| t == key)
            || (!value.is_empty() && list.contains(&format!("{key}={value}")))
    };
    let included = args["includedTaints"].is_null() || listed(&args["includedTaints"]);
    let effect_counts = effect == "NoSchedule"
        || (effect == "PreferNoSchedule" && args["includePreferNoSchedule"] == true);
    effect_counts && !listed(&args["excludedTaints"]) && included
}

fn node_taints(plugin: &Plugin) -> Scenario {
    let namespace = namespace_for(&plugin.args);
    let mut objects = base_objects(&namespace);
    objects.push(a_node("clean-1").into_value());
    objects.push(a_node("clean-2").into_value());
    let mut groups = Vec::new();
    for (at, taint) in TAINTS.into_iter().enumerate() {
        let (key, value, effect) = taint;
        let name = format!("tainted-{at}");
        objects.push(a_node(&name).taint(key, value, effect).into_value());
        let tolerating = a_pod(&namespace, &format!("tolerates-{at}"), &name)
            .spec("tolerations", json!([{"key": key, "operator": "Exists"}]))
            .into_value();
        groups.push(Group::one(
            format!("tolerates {key}={value}:{effect}"),
            &tolerating,
            false,
            false,
        ));
        objects.push(tolerating);
        let intolerant = a_pod(&namespace, &format!("intolerant-{at}"), &name).into_value();
        groups.push(Group::one(
            format!("does not tolerate {key}={value}:{effect}"),
            &intolerant,
            taint_counts(&plugin.args, taint),
            true,
        ));
        objects.push(intolerant);
    }
    Scenario { objects, groups }
}

// --- RemovePodsViolatingNodeAffinity (`node_affinity.go`): a pod is evicted when it has node
// affinity of the listed type, some node fits it (`PodFitsAnyNode`), and its own node does not match
// its required affinity (or, for the preferred type, another node weighs more).

fn node_affinity(plugin: &Plugin) -> Scenario {
    let namespace = namespace_for(&plugin.args);
    let types = strings(&plugin.args["nodeAffinityType"]);
    let required = types
        .iter()
        .any(|t| t == "requiredDuringSchedulingIgnoredDuringExecution");
    let preferred = types
        .iter()
        .any(|t| t == "preferredDuringSchedulingIgnoredDuringExecution");
    let mut objects = base_objects(&namespace);
    objects.push(a_node("ssd-1").label("disk", "ssd").into_value());
    objects.push(a_node("ssd-2").label("disk", "ssd").into_value());
    objects.push(a_node("hdd-1").label("disk", "hdd").into_value());
    let needs = |disk: &str| {
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "disk", "operator": "In", "values": [disk]}]}]}}})
    };
    let prefers = |disk: &str| {
        json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 10, "preference": {"matchExpressions": [
                {"key": "disk", "operator": "In", "values": [disk]}]}}]}})
    };
    let mut groups = Vec::new();
    let mut add = |name: &str, node: &str, affinity: Value, evicted: bool, what: &str| {
        let pod = a_pod(&namespace, name, node)
            .spec("affinity", affinity)
            .into_value();
        groups.push(Group::one(what, &pod, evicted, true));
        objects.push(pod);
    };
    add(
        "needs-ssd-on-hdd",
        "hdd-1",
        needs("ssd"),
        required,
        "requires an ssd node, runs on hdd, ssd nodes have room",
    );
    add(
        "needs-ssd-on-ssd",
        "ssd-1",
        needs("ssd"),
        false,
        "requires an ssd node and runs on one",
    );
    add(
        "needs-nvme-on-hdd",
        "hdd-1",
        needs("nvme"),
        false,
        "requires an nvme node, which no node is: no node fits it",
    );
    add(
        "prefers-ssd-on-hdd",
        "hdd-1",
        prefers("ssd"),
        preferred,
        "prefers ssd, runs on hdd",
    );
    add(
        "prefers-ssd-on-ssd",
        "ssd-1",
        prefers("ssd"),
        false,
        "prefers ssd and runs on it",
    );
    // Too big for any node: `PodFitsAnyNode` finds none.
    let big = a_pod(&namespace, "needs-ssd-too-big", "hdd-1")
        .requests("64", "1Gi")
        .spec("affinity", needs("ssd"))
        .into_value();
    groups.push(Group::one(
        "requires ssd, runs on hdd, no node has room for its requests",
        &big,
        false,
        false,
    ));
    objects.push(big);
    // A node selector is not node affinity: `PodHasNodeAffinity` is false.
    let selected = a_pod(&namespace, "selects-ssd-on-hdd", "hdd-1")
        .spec("nodeSelector", json!({"disk": "ssd"}))
        .into_value();
    groups.push(Group::one(
        "nodeSelector disk=ssd (no affinity), runs on hdd",
        &selected,
        false,
        false,
    ));
    objects.push(selected);
    Scenario { objects, groups }
}

// --- RemovePodsViolatingInterPodAntiAffinity (`pod_antiaffinity.go`,
// `CheckPodsWithAntiAffinityExist`): a pod whose own required anti-affinity term matches another pod
// in the term's topology domain is evicted; the pod it repels is not, nor one whose term is only
// preferred.

fn anti_affinity(plugin: &Plugin) -> Scenario {
    let namespace = namespace_for(&plugin.args);
    let mut objects = base_objects(&namespace);
    for name in ["n1", "n2", "n3"] {
        objects.push(a_node(name).into_value());
    }
    let repels = |app: &str| {
        json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}]}})
    };
    let would_rather_not = |app: &str| {
        json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100, "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}}]}})
    };
    let mut groups = Vec::new();
    let mut add = |pod: Value, evicted: bool, what: &str| {
        groups.push(Group::one(what, &pod, evicted, true));
        objects.push(pod);
    };
    add(
        a_pod(&namespace, "repels-target", "n1")
            .spec("affinity", repels("target"))
            .into_value(),
        true,
        "repels app=target on its own node",
    );
    add(
        a_pod(&namespace, "target", "n1").into_value(),
        false,
        "repelled by another pod's term, has none of its own",
    );
    add(
        a_pod(&namespace, "repels-far", "n1")
            .spec("affinity", repels("far"))
            .into_value(),
        false,
        "repels app=far, which runs on another node",
    );
    add(
        a_pod(&namespace, "far", "n2").into_value(),
        false,
        "app=far",
    );
    add(
        a_pod(&namespace, "prefers-apart", "n2")
            .spec("affinity", would_rather_not("far"))
            .into_value(),
        false,
        "preferred anti-affinity only",
    );
    Scenario { objects, groups }
}

// --- RemoveDuplicates (`removeduplicates.go`): pods of one owner with the same images on one node are
// duplicates; with the owner's pods spread over N feasible nodes, a node keeps ceil(pods / N) of
// them.

fn duplicates(plugin: &Plugin) -> Scenario {
    let namespace = namespace_for(&plugin.args);
    let mut objects = base_objects(&namespace);
    for name in ["n1", "n2", "n3"] {
        objects.push(a_node(name).into_value());
    }
    let excluded = strings(&plugin.args["excludeOwnerKinds"]);
    let mut groups = Vec::new();
    let mut group = |what: &str, pods: Vec<Value>, evicts: usize, control: bool| {
        groups.push(Group {
            what: what.to_owned(),
            pods: pods.iter().map(key).collect(),
            evicts,
            control,
        });
        objects.extend(pods);
    };
    let owned = |name: &str, node: &str, kind: &str, owner: &str| {
        a_pod(&namespace, name, node)
            .label("app", owner)
            .owned_by(kind, owner)
    };
    let thinned = |kind: &str| usize::from(!excluded.iter().any(|k| k == kind)) * 2;
    group(
        "three pods of one ReplicaSet on n1 of three nodes: two go",
        (1..=3)
            .map(|i| owned(&format!("dup-{i}"), "n1", "ReplicaSet", "dup").into_value())
            .collect(),
        thinned("ReplicaSet"),
        true,
    );
    group(
        "three pods of one ReplicaSet, one per node",
        (1..=3)
            .map(|i| {
                owned(
                    &format!("spread-{i}"),
                    &format!("n{i}"),
                    "ReplicaSet",
                    "spread",
                )
                .into_value()
            })
            .collect(),
        0,
        false,
    );
    group(
        "two pods of one ReplicaSet on n1 with different images",
        vec![
            owned("images-1", "n1", "ReplicaSet", "images").into_value(),
            owned("images-2", "n1", "ReplicaSet", "images")
                .image("example.com/app:2")
                .into_value(),
        ],
        0,
        false,
    );
    group(
        "three pods of one Job on n2",
        (1..=3)
            .map(|i| owned(&format!("job-{i}"), "n2", "Job", "job").into_value())
            .collect(),
        thinned("Job"),
        true,
    );
    Scenario { objects, groups }
}

// --- RemovePodsViolatingTopologySpreadConstraint (`topologyspreadconstraint.go`): a domain above
// the ideal average by more than maxSkew gives pods to domains below it, no more than brings the skew
// within maxSkew; ScheduleAnyway constraints only when listed in `constraints`.

fn topology_spread(plugin: &Plugin) -> Scenario {
    let namespace = namespace_for(&plugin.args);
    let constraints = strings(&plugin.args["constraints"]);
    let mut objects = base_objects(&namespace);
    objects.push(a_node("a1").label("zone", "a").into_value());
    objects.push(a_node("b1").label("zone", "b").into_value());
    let spread = |app: &str, when: &str| {
        json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": when,
                "labelSelector": {"matchLabels": {"app": app}}}])
    };
    let mut groups = Vec::new();
    let mut group = |app: &str, when: &str, zones: &[&str], evicts: usize, control: bool| {
        let pods: Vec<Value> = zones
            .iter()
            .enumerate()
            .map(|(i, zone)| {
                a_pod(&namespace, &format!("{app}-{i}"), &format!("{zone}1"))
                    .label("app", app)
                    .spec("topologySpreadConstraints", spread(app, when))
                    .into_value()
            })
            .collect();
        groups.push(Group {
            what: format!("app={app} ({when}) in zones {zones:?}"),
            pods: pods.iter().map(key).collect(),
            evicts,
            control,
        });
        objects.extend(pods);
    };
    group("hard", "DoNotSchedule", &["a", "a", "a"], 1, true);
    group("even", "DoNotSchedule", &["a", "a", "b"], 0, false);
    let soft = constraints.iter().any(|c| c == "ScheduleAnyway");
    group(
        "soft",
        "ScheduleAnyway",
        &["a", "a", "a"],
        usize::from(soft),
        false,
    );
    Scenario { objects, groups }
}

// --- LowNodeUtilization and HighNodeUtilization (`lownodeutilization.go`, `highnodeutilization.go`,
// `nodeutilization.go`), on requests: nodes of 10 CPUs, 100Gi and 10 pods, loaded far from every
// threshold of the fixtures.

fn loaded(name: &str, pods: usize, cpu: &str, memory: &str, namespace: &str) -> Vec<Value> {
    let mut out = vec![a_node(name).allocatable("10", "100Gi", 10).into_value()];
    for i in 0..pods {
        out.push(
            a_pod(namespace, &format!("{name}-{i}"), name)
                .requests(cpu, memory)
                .into_value(),
        );
    }
    out
}

/// Percent of allocatable a node of `loaded` uses: pods of `cpu` cores and `memory` Gi.
fn usage(pods: usize, cpu: f64, memory: f64) -> BTreeMap<&'static str, f64> {
    let pods = pods as f64;
    BTreeMap::from([
        ("cpu", pods * cpu * 10.0),
        ("memory", pods * memory),
        ("pods", pods * 10.0),
    ])
}

fn thresholds(value: &Value) -> BTreeMap<String, f64> {
    value
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
        .collect()
}

fn low_node_utilization(plugin: &Plugin) -> Scenario {
    let args = &plugin.args;
    assert!(
        args["useDeviationThresholds"] != true && args["metricsUtilization"].is_null(),
        "no fixture uses deviation thresholds or measured usage: {args}"
    );
    let namespace = namespace_for(args);
    let low = thresholds(&args["thresholds"]);
    let high = thresholds(&args["targetThresholds"]);
    let mut objects = base_objects(&namespace);
    // over: 8 pods of 1 CPU, 10Gi (80%); middle: 4 of 0.75, 7.5Gi (30%, 40% of pods); under: 1 of
    // 0.1, 1Gi (1%, 10% of pods).
    let over = objects.len() + 1;
    objects.extend(loaded("over", 8, "1", "10Gi", &namespace));
    let middle = objects.len() + 1;
    objects.extend(loaded("middle", 4, "750m", "7680Mi", &namespace));
    let under = objects.len() + 1;
    objects.extend(loaded("under", 1, "100m", "1Gi", &namespace));
    let keys = |from: usize, count: usize| -> Vec<String> {
        objects[from..from + count].iter().map(key).collect()
    };
    // The descheduler's eviction loop: from the overutilized node while it is above a target and the
    // underutilized node has room below the targets for every resource (`continueEvictionCond`).
    let mut source = usage(8, 1.0, 10.0);
    let mut room: BTreeMap<&str, f64> = usage(1, 0.1, 1.0)
        .into_iter()
        .filter(|(r, _)| high.contains_key(*r))
        .map(|(r, used)| (r, high[r] - used))
        .collect();
    let per_pod = usage(1, 1.0, 10.0);
    let above = |usage: &BTreeMap<&str, f64>| high.iter().any(|(r, t)| usage[r.as_str()] > *t);
    let limit = args["evictionLimits"]["node"]
        .as_u64()
        .map_or(usize::MAX, |n| n as usize);
    let mut evicts = 0;
    while evicts < 8 && evicts < limit && above(&source) && room.values().all(|r| *r > 0.0) {
        for (resource, used) in source.iter_mut() {
            *used -= per_pod[resource];
        }
        for (resource, left) in room.iter_mut() {
            *left -= per_pod[resource];
        }
        evicts += 1;
    }
    assert!(
        low.iter().all(|(r, t)| usage(1, 0.1, 1.0)[r.as_str()] < *t)
            && high
                .iter()
                .any(|(r, t)| usage(8, 1.0, 10.0)[r.as_str()] > *t)
            && !low
                .iter()
                .all(|(r, t)| usage(4, 0.75, 7.5)[r.as_str()] < *t)
            && !high
                .iter()
                .any(|(r, t)| usage(4, 0.75, 7.5)[r.as_str()] > *t),
        "the nodes are not under, over and in between for {args}"
    );
    let groups = vec![
        Group {
            what: format!("the overutilized node's pods: {evicts} go"),
            pods: keys(over, 8),
            evicts,
            control: true,
        },
        Group {
            what: "the pods of a node in between".to_owned(),
            pods: keys(middle, 4),
            evicts: 0,
            control: false,
        },
        Group {
            what: "the pod of the underutilized node".to_owned(),
            pods: keys(under, 1),
            evicts: 0,
            control: false,
        },
    ];
    Scenario { objects, groups }
}

fn high_node_utilization(plugin: &Plugin) -> Scenario {
    let args = &plugin.args;
    let namespace = namespace_for(args);
    let low = thresholds(&args["thresholds"]);
    let mut objects = base_objects(&namespace);
    let sparse = objects.len() + 1;
    objects.extend(loaded("sparse", 1, "100m", "1Gi", &namespace));
    let full = objects.len() + 1;
    objects.extend(loaded("full-1", 4, "750m", "7680Mi", &namespace));
    let full_2 = objects.len() + 1;
    objects.extend(loaded("full-2", 4, "750m", "7680Mi", &namespace));
    assert!(
        low.iter().all(|(r, t)| usage(1, 0.1, 1.0)[r.as_str()] < *t)
            && !low
                .iter()
                .all(|(r, t)| usage(4, 0.75, 7.5)[r.as_str()] < *t),
        "the nodes are not under and above for {args}"
    );
    let keys = |from: usize, count: usize| -> Vec<String> {
        objects[from..from + count].iter().map(key).collect()
    };
    let groups = vec![
        Group {
            what: "the underutilized node's pod, room elsewhere".to_owned(),
            pods: keys(sparse, 1),
            evicts: 1,
            control: true,
        },
        Group {
            what: "the pods of nodes above the thresholds".to_owned(),
            pods: [keys(full, 4), keys(full_2, 4)].concat(),
            evicts: 0,
            control: false,
        },
    ];
    Scenario { objects, groups }
}

fn scenario(plugin: &Plugin) -> Scenario {
    match plugin.name.as_str() {
        "PodLifeTime" | "RemoveFailedPods" | "RemovePodsHavingTooManyRestarts" => catalogue(plugin),
        "RemovePodsViolatingNodeTaints" => node_taints(plugin),
        "RemovePodsViolatingNodeAffinity" => node_affinity(plugin),
        "RemovePodsViolatingInterPodAntiAffinity" => anti_affinity(plugin),
        "RemoveDuplicates" => duplicates(plugin),
        "RemovePodsViolatingTopologySpreadConstraint" => topology_spread(plugin),
        "LowNodeUtilization" => low_node_utilization(plugin),
        "HighNodeUtilization" => high_node_utilization(plugin),
        other => panic!("no scenario for {other}"),
    }
}

// ---------------------------------------------------------------------------------------------------

/// Whether the profile's evictor, the plugin's namespaces and label selector, and the top-level node
/// selector let the descheduler evict `pod` at all.
fn may_evict(plugin: &Plugin, pod: &Value, objects: &[Value]) -> bool {
    let namespaces = if plugin.args["evictableNamespaces"].is_object() {
        plugin.args["evictableNamespaces"].clone()
    } else {
        plugin.args["namespaces"].clone()
    };
    let selector = match plugin.name.as_str() {
        "LowNodeUtilization" | "HighNodeUtilization" | "RemoveDuplicates" => Value::Null,
        _ => plugin.args["labelSelector"].clone(),
    };
    if let Some(selector) = &plugin.node_selector {
        let node = pod["spec"]["nodeName"].as_str().unwrap();
        let labels = objects
            .iter()
            .find(|o| o["kind"] == "Node" && o["metadata"]["name"] == node)
            .map(|n| n["metadata"]["labels"].clone())
            .unwrap();
        if !string_selector_matches(selector, &labels) {
            return false;
        }
    }
    in_scope(&(namespaces, selector), pod) && !evictor_protects(&plugin.evictor, pod, objects)
}

/// What tidal plans on a cluster: `(policy, strategy, pod, waiting)` of each eviction, and of each
/// pod that waits for a later round (`waiting`: proposed now, held by its job's budget this round).
fn plan(cluster: &Path, converted: &Path) -> Vec<(String, String, String, bool)> {
    let report = report_json(&[
        "--now",
        NOW,
        "-f",
        cluster.to_str().unwrap(),
        "-f",
        converted.to_str().unwrap(),
    ]);
    let line = |e: &Value| {
        (
            e["policy"].as_str().unwrap().to_owned(),
            e["strategy"].as_str().unwrap().to_owned(),
            format!(
                "{}/{}",
                e["namespace"].as_str().unwrap(),
                e["name"].as_str().unwrap()
            ),
            e["waiting"] == true,
        )
    };
    let mut out: Vec<_> = report["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(line)
        .collect();
    out.extend(
        report["skipped"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["waiting"] == true)
            .map(line),
    );
    out
}

fn relative(path: &Path) -> String {
    path.strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/descheduler"))
        .unwrap()
        .display()
        .to_string()
}

/// Why a refusal is acceptable: the input is no policy tidal can run, or the error names the looser
/// settings and `--allow-looser`.
fn refusal_is_explained(stderr: &str) -> bool {
    let not_a_policy = stderr.contains("nothing to run")
        || stderr.contains("nothing to convert")
        || stderr.contains("is not YAML or JSON");
    let names_looser = stderr.contains("could evict pods the descheduler protects")
        && stderr.contains("\n  - ")
        && stderr.contains("--allow-looser");
    not_a_policy || names_looser
}

#[test]
fn no_converted_descheduler_policy_plans_a_pod_the_descheduler_plugin_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let class = format!("{}={}", CLASS.0, CLASS.1);
    let mut failures = Vec::new();
    let mut checked = BTreeMap::<String, usize>::new();
    let mut controls_planned = 0;
    let mut stricter = 0;
    let mut converted_files = Vec::new();
    for fixture in fixtures() {
        let name = relative(&fixture);
        let output = tidal(&[
            "convert",
            "-f",
            fixture.to_str().unwrap(),
            "--priority-class",
            &class,
        ]);
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(refusal_is_explained(&stderr), "{name}: {stderr}");
            continue;
        }
        converted_files.push(name.clone());
        let converted = dir.path().join("converted.yaml");
        std::fs::write(&converted, &output.stdout).unwrap();
        for plugin in plugins_of(&fixture) {
            let scenario = scenario(&plugin);
            let cluster = dir.path().join("cluster.json");
            let list = json!({"apiVersion": "v1", "kind": "List", "items": scenario.objects});
            std::fs::write(&cluster, serde_json::to_string(&list).unwrap()).unwrap();
            let strategy = strategy_of(&plugin.name);
            let planned = plan(&cluster, &converted);
            let pods: BTreeMap<String, &Value> = scenario
                .objects
                .iter()
                .filter(|o| o["kind"] == "Pod")
                .map(|p| (key(p), p))
                .collect();
            // Planned by the profile's policy and the plugin's strategy: now, or proposed now and
            // held by the budget (`waiting`).
            let by_this = |pod: &String, now_only: bool| {
                planned.iter().any(|(policy, s, p, waiting)| {
                    *policy == plugin.policy
                        && *s == strategy
                        && p == pod
                        && !(now_only && *waiting)
                })
            };
            let by_any = |pod: &String| planned.iter().any(|(_, _, p, _)| p == pod);
            let (mut controls, mut controls_met) = (0, 0);
            for group in &scenario.groups {
                let allowed: Vec<&String> = group
                    .pods
                    .iter()
                    .filter(|p| may_evict(&plugin, pods[*p], &scenario.objects))
                    .collect();
                let evicts = group.evicts.min(allowed.len());
                let proposed: Vec<&String> =
                    group.pods.iter().filter(|p| by_this(p, false)).collect();
                // A later round plans again from what is left, so only this round's evictions count
                // against a group the descheduler thins out; a pod it keeps may not even wait.
                let now: Vec<&String> = group.pods.iter().filter(|p| by_this(p, true)).collect();
                let kept_but_proposed =
                    proposed.iter().any(|p| !allowed.contains(p) || evicts == 0);
                if kept_but_proposed || now.len() > evicts {
                    failures.push(format!(
                        "{name}, profile {}, {}: {}: the descheduler evicts {evicts} of {:?} \
                         (may evict {allowed:?}), tidal's {strategy} plans {now:?} now and \
                         proposes {proposed:?}",
                        plugin.policy, plugin.name, group.what, group.pods
                    ));
                }
                if group.control && evicts > 0 {
                    controls += 1;
                    if allowed.iter().any(|p| by_any(p)) {
                        controls_met += 1;
                    }
                }
            }
            // Where tidal is stricter it may leave some controls (a cap of the policy, a finished
            // pod it does not restart), but never all of them.
            if controls > 0 && controls_met == 0 {
                failures.push(format!(
                    "{name}, profile {}, {}: the descheduler evicts a pod of {controls} control \
                     group(s), tidal plans none: {planned:?}",
                    plugin.policy, plugin.name
                ));
            } else if controls > 0 {
                controls_planned += 1;
            }
            stricter += controls - controls_met;
            *checked.entry(plugin.name.clone()).or_default() += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every plugin of the examples and charts was checked, and most checks saw a control planned.
    for plugin in PLUGINS {
        assert!(
            checked.contains_key(plugin),
            "{plugin} never checked: {checked:?}"
        );
    }
    let total: usize = checked.values().sum();
    assert!(
        controls_planned * 4 >= total * 3,
        "controls planned in {controls_planned} of {total} checks"
    );
    eprintln!(
        "{total} plugin checks, {controls_planned} with a control planned; {stricter} control \
         group(s) the descheduler evicts and tidal leaves"
    );
    for expected in [
        "v0.33.0/chart/values.yaml",
        "v0.34.0/chart/values.yaml",
        "v0.35.0/chart/values.yaml",
        "v0.35.1/chart/values.yaml",
        "v0.36.0/chart/values.yaml",
        "v0.36.0/examples/policy.yaml",
        "v0.26.0/examples/policy.yaml",
    ] {
        assert!(
            converted_files.iter().any(|f| f == expected),
            "{expected} not converted: {converted_files:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------------
// A chart's CronJob schedule: its runs counted here, apart from tidal's reading of it.

/// The values a cron field allows, within `min..=max` (names for months and days of the week).
fn cron_field(field: &str, min: u32, max: u32, names: &[&str]) -> Vec<u32> {
    let number = |text: &str| -> u32 {
        let lower = text.to_ascii_lowercase();
        match names.iter().position(|n| *n == lower) {
            Some(at) => at as u32 + min,
            None => text
                .parse()
                .unwrap_or_else(|_| panic!("cron field {field}")),
        }
    };
    let mut out = Vec::new();
    for part in field.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => (range, step.parse::<u32>().unwrap()),
            None => (part, 1),
        };
        let (from, to) = match range {
            "*" => (min, max),
            _ => match range.split_once('-') {
                Some((a, b)) => (number(a), number(b)),
                None if step > 1 => (number(range), max),
                None => (number(range), number(range)),
            },
        };
        out.extend((from..=to).step_by(step as usize));
    }
    // Sunday is 0 and 7.
    if max == 7 && out.contains(&7) {
        out.push(0);
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The longest gap, in seconds, between two runs of a five-field schedule (or a descriptor), over
/// the eight years from 2027: leap days, 31-day months and weekends all come round.
fn longest_gap(schedule: &str) -> i64 {
    let expanded = match schedule {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        other => other,
    };
    let fields: Vec<&str> = expanded.split_whitespace().collect();
    let [minute, hour, dom, month, dow] = fields.as_slice() else {
        panic!("{schedule}: five fields")
    };
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
    let minutes = cron_field(minute, 0, 59, &[]);
    let hours = cron_field(hour, 0, 23, &[]);
    let doms = cron_field(dom, 1, 31, &[]);
    let months = cron_field(month, 1, 12, &MONTHS);
    let dows = cron_field(dow, 0, 7, &DAYS);
    // Both day fields restricted: either may match (cron's rule); one `*`: the other decides.
    let day_matches = |date: jiff::civil::Date| {
        let by_dom = doms.contains(&(date.day() as u32));
        let by_dow = dows.contains(&(date.weekday().to_sunday_zero_offset() as u32));
        match (dom.starts_with('*'), dow.starts_with('*')) {
            (false, false) => by_dom || by_dow,
            (true, false) => by_dow,
            (false, true) => by_dom,
            (true, true) => true,
        }
    };
    let mut previous: Option<i64> = None;
    let mut longest = 0;
    let mut date = jiff::civil::date(2027, 1, 1);
    while date.year() < 2035 {
        if months.contains(&(date.month() as u32)) && day_matches(date) {
            let day = date
                .to_zoned(jiff::tz::TimeZone::UTC)
                .unwrap()
                .timestamp()
                .as_second();
            for &h in &hours {
                for &m in &minutes {
                    let at = day + i64::from(h) * 3600 + i64::from(m) * 60;
                    if let Some(before) = previous {
                        longest = longest.max(at - before);
                    }
                    previous = Some(at);
                }
            }
        }
        date = date.tomorrow().unwrap();
    }
    assert!(previous.is_some(), "{schedule} never runs");
    longest
}

#[test]
fn cron_fields_and_gaps_are_counted_as_cron_counts_them() {
    assert_eq!(cron_field("*/15", 0, 59, &[]), [0, 15, 30, 45]);
    assert_eq!(
        cron_field(
            "mon-fri",
            0,
            7,
            &["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
        ),
        [1, 2, 3, 4, 5]
    );
    assert_eq!(longest_gap("*/2 * * * *"), 120);
    assert_eq!(longest_gap("*/7 * * * *"), 7 * 60);
    assert_eq!(longest_gap("0 9,10 * * *"), 23 * 3600);
    // Friday 17:00 to Monday 09:00.
    assert_eq!(longest_gap("0 9-17 * * 1-5"), 64 * 3600);
    // January 31 to March 1 is the longest month-day gap: 29 days; 31 days from a 31-day month.
    assert_eq!(longest_gap("@monthly"), 31 * DAY);
}

/// Every chart version runs the descheduler as a CronJob by default; its caps hold per run, as
/// tidal's limits do per cycle. So the interval of the converted policies must be at least the
/// schedule's longest gap (else tidal would run, and evict, more often in some hour): checked for each
/// chart version's own schedule and for others put in its place. As a Deployment, the chart's
/// `deschedulingInterval` is the interval.
#[test]
fn every_chart_schedule_becomes_an_interval_no_shorter_than_its_longest_gap() {
    let dir = tempfile::tempdir().unwrap();
    let charts: Vec<_> = fixtures()
        .into_iter()
        .filter(|f| f.ends_with("chart/values.yaml"))
        .collect();
    assert!(charts.len() >= 5, "{charts:?}");
    let intervals = |text: &str| -> Vec<i64> {
        let output = {
            let path = dir.path().join("values.yaml");
            std::fs::write(&path, text).unwrap();
            tidal(&["convert", "-f", path.to_str().unwrap()])
        };
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let policies: Vec<Value> =
            serde_saphyr::from_multiple(&String::from_utf8(output.stdout).unwrap()).unwrap();
        policies
            .iter()
            .filter(|p| !p.is_null())
            .map(|p| {
                crate::convert_never_looser::go_seconds(p["spec"]["interval"].as_str().unwrap())
                    as i64
            })
            .collect()
    };
    for chart in charts {
        let name = relative(&chart);
        let text = std::fs::read_to_string(&chart).unwrap();
        let values: Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(values["kind"], "CronJob", "{name}: the chart's default");
        let default = values["schedule"].as_str().unwrap();
        let line = format!("schedule: \"{default}\"");
        assert!(text.contains(&line), "{name}");
        for schedule in [
            default,
            "0 * * * *",
            "*/7 * * * *",
            "0 */6 * * *",
            "30 2 * * 1-5",
            "*/15 9-17 * * mon-fri",
            "0 9,10 * * *",
            "@daily",
            "@weekly",
            "@monthly",
        ] {
            let gap = longest_gap(schedule);
            let got = intervals(&text.replace(&line, &format!("schedule: \"{schedule}\"")));
            assert!(!got.is_empty(), "{name}");
            for interval in got {
                assert!(
                    interval >= gap,
                    "{name} with schedule {schedule:?}: interval {interval}s, shorter than the \
                     schedule's longest gap {gap}s: tidal would run more often"
                );
            }
        }
        let every = values["deschedulingInterval"].as_str().unwrap();
        let deployment = text.replace("kind: CronJob", "kind: Deployment");
        for interval in intervals(&deployment) {
            assert_eq!(
                interval as u64,
                humantime::parse_duration(every).unwrap().as_secs(),
                "{name} as a Deployment"
            );
        }
    }
}
