//! `tidal convert` never widens disruption: every descheduler policy under
//! `tests/fixtures/descheduler/` (the descheduler's own examples, README policies, ConfigMap and chart
//! values, at v0.36.0, the chart values of v0.33.0 to v0.35.1 and the v1alpha1 examples of v0.26.0;
//! see the NOTICE there) is converted, and the
//! result planned by `tidal report` on clusters that hold every kind of pod the descheduler's evictor
//! protects, in every state its plugins act on. No pod the descheduler policy protects is in the plan.
//!
//! What the descheduler protects is modelled here from its sources (`defaultevictor.go`'s `Filter` and
//! `PreEvictionFilter`, the plugins' namespace and label scopes, the top-level `nodeSelector`), apart
//! from tidal's code: a pod is protected when no profile's plugins may evict it.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use serde_json::{Value, json};

pub(crate) const NOW: &str = "2026-11-23T09:30:00Z";
const LONG_AGO: &str = "2026-10-20T09:00:00Z";
const RECENTLY: &str = "2026-11-23T09:20:00Z";
/// A PriorityClass the README's `priorityThreshold.name` example names, and its value here.
pub(crate) const CLASS: (&str, i32) = ("priorityClassName1", 10000);

use crate::{
    cli::tidal,
    support::{descheduler_policies_in, v1alpha1_evictor},
};

pub(crate) fn fixtures() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml")
            ) {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/descheduler"),
        &mut out,
    );
    out
}

// ---------------------------------------------------------------------------------------------------
// The clusters: one node overloaded and tainted, its pods violating affinity, anti-affinity, spread
// and duplicates, in every state; idle nodes to move to; a sparse node for bin packing.

/// The kinds of pod, by what protects them (or nothing: the controls).
const KINDS: [&str; 21] = [
    "plain",
    "plain-pdb",
    "mirror",
    "terminating",
    "critical",
    "high-priority",
    "daemonset",
    "daemonset-evict",
    "local-storage",
    "bare",
    "pvc-class0",
    "pvc-other",
    "pvc-missing",
    "resource-claims",
    "prefer-no-eviction",
    "young",
    "solo",
    "labeled-out",
    "redis-cache",
    "other-team",
    "namespace1",
];

const FLAVORS: [&str; 5] = ["running", "pending", "failed", "exited", "succeeded"];

fn namespace_of(kind: &str) -> &'static str {
    match kind {
        "other-team" => "elsewhere",
        "namespace1" => "namespace1",
        _ => "work",
    }
}

fn pod(kind: &str, flavor: &str, node: &str, cpu: &str, memory: &str) -> Value {
    let name = format!("{kind}-{flavor}-{node}");
    let owner = if kind == "solo" {
        format!("rs-solo-{flavor}-{node}")
    } else {
        format!("rs-{kind}")
    };
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": namespace_of(kind), "uid": format!("uid-{name}"),
            "creationTimestamp": LONG_AGO,
            "labels": {"app": kind, "anti": "yes"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                 "uid": format!("uid-{owner}"), "controller": true}],
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "main", "image": "example.com/app:1",
                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "disk", "operator": "In", "values": ["ssd"]}]}]}},
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"anti": "yes"}},
                    "topologyKey": "kubernetes.io/hostname"}]},
            },
            "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": kind}}}],
        },
        "status": {
            "phase": "Running", "startTime": LONG_AGO,
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": LONG_AGO}],
            "containerStatuses": [{"name": "main", "image": "example.com/app:1", "imageID": "",
                "ready": false, "restartCount": 200,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}}}],
        },
    });
    match flavor {
        "pending" => {
            pod["status"]["phase"] = json!("Pending");
            pod["status"]["containerStatuses"][0]["restartCount"] = json!(0);
            pod["status"]["containerStatuses"][0]["state"] =
                json!({"waiting": {"reason": "PodInitializing"}});
        }
        "failed" => {
            pod["status"]["phase"] = json!("Failed");
            pod["status"]["reason"] = json!("OutOfcpu");
        }
        "exited" => {
            pod["status"]["phase"] = json!("Failed");
            pod["status"]["containerStatuses"][0]["state"] = json!({"terminated": {
                "exitCode": 1, "reason": "Error", "finishedAt": LONG_AGO}});
        }
        "succeeded" => {
            pod["status"]["phase"] = json!("Succeeded");
            pod["status"]["conditions"] = json!([
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": LONG_AGO},
                {"type": "Ready", "status": "False", "reason": "PodCompleted",
                 "lastTransitionTime": LONG_AGO}]);
            pod["status"]["containerStatuses"][0]["state"] = json!({"terminated": {
                "exitCode": 0, "reason": "Completed", "finishedAt": LONG_AGO}});
        }
        _ => {}
    }
    let volume =
        |claim: &str| json!([{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]);
    match kind {
        "plain-pdb" => pod["metadata"]["labels"]["pdb"] = json!("yes"),
        "mirror" => {
            pod["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "x",
                                                    "kubernetes.io/config.source": "file"});
            pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Node", "name": node, "uid": "n", "controller": true}]);
        }
        "terminating" => pod["metadata"]["deletionTimestamp"] = json!(RECENTLY),
        "critical" => {
            pod["spec"]["priority"] = json!(2_000_000_000);
            pod["spec"]["priorityClassName"] = json!("system-cluster-critical");
        }
        "high-priority" => pod["spec"]["priority"] = json!(10000),
        "daemonset" | "daemonset-evict" => {
            pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1",
                "kind": "DaemonSet", "name": "ds", "uid": "uid-ds", "controller": true}]);
            if kind == "daemonset-evict" {
                pod["metadata"]["annotations"] =
                    json!({"descheduler.alpha.kubernetes.io/evict": "true"});
            }
        }
        "local-storage" => pod["spec"]["volumes"] = json!([{"name": "tmp", "emptyDir": {}}]),
        "bare" => pod["metadata"]["ownerReferences"] = json!([]),
        "pvc-class0" => pod["spec"]["volumes"] = volume("claim-class0"),
        "pvc-other" => pod["spec"]["volumes"] = volume("claim-other"),
        "pvc-missing" => pod["spec"]["volumes"] = volume("claim-gone"),
        "resource-claims" => {
            pod["spec"]["resourceClaims"] = json!([{"name": "gpu", "resourceClaimName": "gpu-0"}])
        }
        "prefer-no-eviction" => {
            pod["metadata"]["annotations"] =
                json!({"descheduler.alpha.kubernetes.io/prefer-no-eviction": ""})
        }
        "young" => {
            pod["metadata"]["creationTimestamp"] = json!(RECENTLY);
            pod["status"]["startTime"] = json!(RECENTLY);
            pod["status"]["conditions"][0]["lastTransitionTime"] = json!(RECENTLY);
        }
        "redis-cache" => {
            pod["metadata"]["labels"] = json!({"app": kind, "anti": "yes", "component": "redis", "tier": "cache", "environment": "prod"})
        }
        _ => {}
    }
    pod
}

fn node(name: &str, labels: Value, taints: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": labels},
           "spec": {"taints": taints},
           "status": {"allocatable": {"cpu": "10", "memory": "100Gi", "pods": "110"},
                      "conditions": [{"type": "Ready", "status": "True"}]}})
}

pub(crate) fn common() -> Vec<Value> {
    let mut objects = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "work", "labels": {"team": "a"}}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "namespace1", "labels": {"team": "a"}}}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "elsewhere", "labels": {"team": "b"}}}),
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": "pdb", "namespace": "work"},
               "spec": {"maxUnavailable": 100, "selector": {"matchLabels": {"pdb": "yes"}}}}),
    ];
    for (claim, class) in [
        ("claim-class0", "storage-class-0"),
        ("claim-other", "other"),
    ] {
        objects.push(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": "work"},
            "spec": {"storageClassName": class}}));
    }
    objects
}

/// The overloaded, tainted node `hot` (every kind in every state), idle nodes to move to, and a
/// node outside `node=node1`.
fn hot_cluster() -> Vec<Value> {
    let mut objects = common();
    objects.push(node(
        "hot",
        json!({"node": "node1", "zone": "a", "kubernetes.io/hostname": "hot"}),
        json!([{"key": "decommissioned", "value": "end-of-life", "effect": "NoSchedule"}]),
    ));
    objects.push(node(
        "outside",
        json!({"zone": "a", "kubernetes.io/hostname": "outside"}),
        json!([{"key": "decommissioned", "value": "end-of-life", "effect": "NoSchedule"}]),
    ));
    for i in 0..4 {
        let name = format!("cool-{i}");
        objects.push(node(
            &name,
            json!({"node": "node1", "zone": "b", "disk": "ssd", "kubernetes.io/hostname": name}),
            json!([]),
        ));
    }
    for kind in KINDS {
        for flavor in FLAVORS {
            objects.push(pod(kind, flavor, "hot", "180m", "2Gi"));
        }
    }
    objects.push(pod("plain", "running", "outside", "100m", "1Gi"));
    objects
}

/// Bin packing: a sparse node with every kind running, and fuller nodes to pack onto.
fn sparse_cluster() -> Vec<Value> {
    let mut objects = common();
    objects.push(node(
        "sparse",
        json!({"node": "node1", "zone": "a", "disk": "ssd", "kubernetes.io/hostname": "sparse"}),
        json!([]),
    ));
    for i in 0..3 {
        let name = format!("full-{i}");
        objects.push(node(
            &name,
            json!({"node": "node1", "zone": "b", "disk": "ssd", "kubernetes.io/hostname": name}),
            json!([]),
        ));
        let mut filler = pod("plain", "running", &name, "5", "50Gi");
        filler["metadata"]["name"] = json!(format!("filler-{i}"));
        filler["metadata"]["labels"] = json!({"app": "filler"});
        filler["spec"]["affinity"] = Value::Null;
        filler["spec"]["topologySpreadConstraints"] = Value::Null;
        objects.push(filler);
    }
    for kind in KINDS {
        objects.push(pod(kind, "running", "sparse", "50m", "256Mi"));
    }
    objects
}

// ---------------------------------------------------------------------------------------------------
// What the descheduler protects, modelled from its sources.

pub(crate) fn selector_matches(selector: &Value, labels: &Value) -> bool {
    let label = |key: &str| labels[key].as_str();
    let matched = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k) == v.as_str());
    let expressions = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|e| {
            let key = e["key"].as_str().unwrap();
            let values: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match e["operator"].as_str().unwrap() {
                "In" => label(key).is_some_and(|v| values.contains(&v)),
                "NotIn" => label(key).is_none_or(|v| !values.contains(&v)),
                "Exists" => label(key).is_some(),
                "DoesNotExist" => label(key).is_none(),
                other => panic!("operator {other}"),
            }
        });
    matched && expressions
}

/// `k=v,k2=v2`, the only form the fixtures use.
pub(crate) fn string_selector_matches(selector: &str, labels: &Value) -> bool {
    selector
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .all(|part| {
            let (key, value) = part.split_once('=').expect("k=v");
            labels[key.trim()].as_str() == Some(value.trim())
        })
}

/// A profile as the descheduler runs it: its evictor's arguments and its plugins' scopes.
struct Profile {
    evictor: Value,
    /// Per enabled plugin: its namespaces (include/exclude) and label selector.
    scopes: Vec<(Value, Value)>,
}

struct Policy {
    node_selector: Option<String>,
    profiles: Vec<Profile>,
}

const EVICTING_PLUGINS: [&str; 10] = [
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

fn descheduler_policies(path: &Path) -> Vec<Policy> {
    descheduler_policies_in(path)
        .iter()
        .map(read_policy)
        .collect()
}

fn read_policy(policy: &Value) -> Policy {
    let node_selector = policy["nodeSelector"].as_str().map(str::to_owned);
    let mut profiles = Vec::new();
    if policy["apiVersion"] == "descheduler/v1alpha1" {
        for (name, strategy) in policy["strategies"].as_object().into_iter().flatten() {
            if strategy["enabled"] != true || !EVICTING_PLUGINS.contains(&name.as_str()) {
                continue;
            }
            let params = &strategy["params"];
            let evictor = v1alpha1_evictor(policy, params);
            let selector = if [
                "LowNodeUtilization",
                "HighNodeUtilization",
                "RemoveDuplicates",
            ]
            .contains(&name.as_str())
            {
                Value::Null
            } else {
                params["labelSelector"].clone()
            };
            profiles.push(Profile {
                evictor,
                scopes: vec![(params["namespaces"].clone(), selector)],
            });
        }
        return Policy {
            node_selector,
            profiles,
        };
    }
    for profile in policy["profiles"].as_array().into_iter().flatten() {
        let config = |plugin: &str| {
            profile["pluginConfig"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["name"] == plugin)
                .map_or(Value::Null, |c| c["args"].clone())
        };
        let mut scopes = Vec::new();
        for extension in ["deschedule", "balance"] {
            for plugin in profile["plugins"][extension]["enabled"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let plugin = plugin.as_str().unwrap_or_default();
                if !EVICTING_PLUGINS.contains(&plugin) {
                    continue;
                }
                let args = config(plugin);
                let namespaces = if args["evictableNamespaces"].is_null() {
                    args["namespaces"].clone()
                } else {
                    args["evictableNamespaces"].clone()
                };
                scopes.push((namespaces, args["labelSelector"].clone()));
            }
        }
        if !scopes.is_empty() {
            profiles.push(Profile {
                evictor: config("DefaultEvictor"),
                scopes,
            });
        }
    }
    Policy {
        node_selector,
        profiles,
    }
}

/// The DefaultEvictor's protections in force (`getEffectivePodProtections`).
fn effective_protections(args: &Value) -> BTreeSet<&'static str> {
    let list = |name: &str| -> Vec<String> {
        args["podProtections"][name]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    let (disabled, enabled) = (list("defaultDisabled"), list("extraEnabled"));
    let all = [
        "PodsWithLocalStorage",
        "SystemCriticalPods",
        "FailedBarePods",
        "DaemonSetPods",
        "PodsWithPVC",
        "PodsWithoutPDB",
        "PodsWithResourceClaims",
    ];
    let mut on = BTreeSet::new();
    if disabled.is_empty() && enabled.is_empty() {
        let set = |key: &str| args[key] == true;
        for (key, name, turns_on) in [
            ("evictLocalStoragePods", "PodsWithLocalStorage", false),
            ("evictDaemonSetPods", "DaemonSetPods", false),
            ("evictSystemCriticalPods", "SystemCriticalPods", false),
            ("evictFailedBarePods", "FailedBarePods", false),
            ("ignorePvcPods", "PodsWithPVC", true),
            ("ignorePodsWithoutPDB", "PodsWithoutPDB", true),
        ] {
            if set(key) == turns_on {
                on.insert(name);
            }
        }
        return on;
    }
    for name in [
        "PodsWithLocalStorage",
        "SystemCriticalPods",
        "FailedBarePods",
        "DaemonSetPods",
    ] {
        if !disabled.iter().any(|d| d == name) {
            on.insert(name);
        }
    }
    for name in enabled {
        if let Some(known) = all.iter().find(|a| **a == name) {
            on.insert(known);
        }
    }
    on
}

/// `Filter` then the namespace part of `PreEvictionFilter`: whether the evictor protects `pod`.
pub(crate) fn evictor_protects(args: &Value, pod: &Value, cluster: &[Value]) -> bool {
    let meta = &pod["metadata"];
    let annotations = &meta["annotations"];
    let protections = effective_protections(args);
    let on = |name: &str| protections.contains(name);
    let namespace_ok = || {
        let selector = &args["namespaceLabelSelector"];
        if selector.is_null() {
            return true;
        }
        cluster
            .iter()
            .find(|o| o["kind"] == "Namespace" && o["metadata"]["name"] == meta["namespace"])
            .is_some_and(|ns| selector_matches(selector, &ns["metadata"]["labels"]))
    };
    if annotations
        .get("descheduler.alpha.kubernetes.io/evict")
        .is_some()
    {
        return !namespace_ok();
    }
    if args["noEvictionPolicy"] == "Mandatory"
        && annotations
            .get("descheduler.alpha.kubernetes.io/prefer-no-eviction")
            .is_some()
    {
        return true;
    }
    if annotations.get("kubernetes.io/config.mirror").is_some()
        || annotations["kubernetes.io/config.source"]
            .as_str()
            .is_some_and(|s| s != "api")
        || !meta["deletionTimestamp"].is_null()
    {
        return true;
    }
    let priority = pod["spec"]["priority"].as_i64();
    if on("SystemCriticalPods") {
        if priority.is_some_and(|p| p >= 2_000_000_000) {
            return true;
        }
        if let Some(threshold) = args["priorityThreshold"]["value"].as_i64()
            && priority.is_some_and(|p| p >= threshold)
        {
            return true;
        }
        if args["priorityThreshold"]["name"] == CLASS.0
            && priority.is_some_and(|p| p >= i64::from(CLASS.1))
        {
            return true;
        }
    }
    let owners = meta["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let failed = pod["status"]["phase"] == "Failed";
    if owners.is_empty() && (on("FailedBarePods") || !failed) {
        return true;
    }
    let volumes = pod["spec"]["volumes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if on("PodsWithLocalStorage")
        && volumes
            .iter()
            .any(|v| !v["emptyDir"].is_null() || !v["hostPath"].is_null())
    {
        return true;
    }
    if on("DaemonSetPods") && owners.iter().any(|o| o["kind"] == "DaemonSet") {
        return true;
    }
    if on("PodsWithPVC") {
        let classes: Vec<&str> =
            args["podProtections"]["config"]["PodsWithPVC"]["protectedStorageClasses"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["name"].as_str())
                .collect();
        for volume in &volumes {
            let Some(claim) = volume["persistentVolumeClaim"]["claimName"].as_str() else {
                continue;
            };
            if classes.is_empty() {
                return true;
            }
            let class = cluster
                .iter()
                .find(|o| o["kind"] == "PersistentVolumeClaim" && o["metadata"]["name"] == claim)
                .and_then(|c| c["spec"]["storageClassName"].as_str());
            if class.is_none_or(|c| classes.contains(&c)) {
                return true;
            }
        }
    }
    if on("PodsWithoutPDB") {
        let covered = cluster.iter().any(|o| {
            o["kind"] == "PodDisruptionBudget"
                && o["metadata"]["namespace"] == meta["namespace"]
                && selector_matches(&o["spec"]["selector"], &meta["labels"])
        });
        if !covered {
            return true;
        }
    }
    if on("PodsWithResourceClaims")
        && pod["spec"]["resourceClaims"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
    {
        return true;
    }
    if !args["labelSelector"].is_null()
        && !selector_matches(&args["labelSelector"], &meta["labels"])
    {
        return true;
    }
    if let Some(min) = args["minReplicas"].as_u64().filter(|m| *m > 1)
        && owners.len() == 1
    {
        let uid = &owners[0]["uid"];
        let replicas = cluster
            .iter()
            .filter(|o| o["kind"] == "Pod")
            .filter(|o| {
                o["metadata"]["ownerReferences"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|r| r["uid"] == *uid))
            })
            .count();
        if (replicas as u64) < min {
            return true;
        }
    }
    if let Some(min_age) = args["minPodAge"].as_str() {
        let min = humantime::parse_duration(min_age).unwrap();
        let old_enough = pod["status"]["startTime"].as_str().is_some_and(|start| {
            let start: jiff::Timestamp = start.parse().unwrap();
            let now: jiff::Timestamp = NOW.parse().unwrap();
            now.duration_since(start).as_secs() >= min.as_secs() as i64
        });
        if !old_enough {
            return true;
        }
    }
    !namespace_ok()
}

pub(crate) fn in_scope(scope: &(Value, Value), pod: &Value) -> bool {
    let (namespaces, selector) = scope;
    let namespace = pod["metadata"]["namespace"].as_str().unwrap();
    let listed = |key: &str| -> Vec<&str> {
        namespaces[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect()
    };
    let (include, exclude) = (listed("include"), listed("exclude"));
    if !include.is_empty() && !include.contains(&namespace) {
        return false;
    }
    if exclude.contains(&namespace) {
        return false;
    }
    selector.is_null() || selector_matches(selector, &pod["metadata"]["labels"])
}

/// Pods of `cluster` the descheduler policy would never evict.
fn protected_pods(policy: &Policy, cluster: &[Value]) -> BTreeSet<String> {
    let nodes: BTreeMap<&str, &Value> = cluster
        .iter()
        .filter(|o| o["kind"] == "Node")
        .map(|n| {
            (
                n["metadata"]["name"].as_str().unwrap(),
                &n["metadata"]["labels"],
            )
        })
        .collect();
    cluster
        .iter()
        .filter(|o| o["kind"] == "Pod")
        .filter(|pod| {
            let node = pod["spec"]["nodeName"].as_str().unwrap();
            if let Some(selector) = &policy.node_selector
                && !string_selector_matches(selector, nodes[node])
            {
                return true;
            }
            policy.profiles.iter().all(|profile| {
                evictor_protects(&profile.evictor, pod, cluster)
                    || profile.scopes.iter().all(|scope| !in_scope(scope, pod))
            })
        })
        .map(|pod| {
            format!(
                "{}/{}",
                pod["metadata"]["namespace"].as_str().unwrap(),
                pod["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------------

fn write_cluster(dir: &Path, name: &str, objects: &[Value]) -> PathBuf {
    let path = dir.join(name);
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    std::fs::write(&path, serde_json::to_string(&list).unwrap()).unwrap();
    path
}

fn planned(cluster: &Path, converted: &Path) -> BTreeSet<String> {
    let output = tidal(&[
        "report",
        "--now",
        NOW,
        "-o",
        "json",
        "-f",
        cluster.to_str().unwrap(),
        "-f",
        converted.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    for policy in report["policies"].as_array().unwrap() {
        assert!(policy["error"].is_null(), "{report}");
    }
    report["evictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{}/{}",
                e["namespace"].as_str().unwrap(),
                e["name"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn no_converted_descheduler_policy_evicts_a_pod_the_descheduler_protects() {
    let dir = tempfile::tempdir().unwrap();
    let clusters = [("hot", hot_cluster()), ("sparse", sparse_cluster())];
    let files: Vec<(&str, PathBuf, &Vec<Value>)> = clusters
        .iter()
        .map(|(name, objects)| {
            (
                *name,
                write_cluster(dir.path(), &format!("{name}.json"), objects),
                objects,
            )
        })
        .collect();
    let class = format!("{}={}", CLASS.0, CLASS.1);
    let mut converted_any = 0;
    let mut evicting = Vec::new();
    let mut refused = Vec::new();
    for fixture in fixtures() {
        let name = fixture
            .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/descheduler"))
            .unwrap()
            .display()
            .to_string();
        let output = tidal(&[
            "convert",
            "-f",
            fixture.to_str().unwrap(),
            "--priority-class",
            &class,
        ]);
        if !output.status.success() {
            // Refused: nothing converted, nothing evicted. Only for these reasons.
            let stderr = String::from_utf8_lossy(&output.stderr).to_string();
            // The README's fragments with `...` placeholders do not parse, for the descheduler
            // either.
            assert!(
                stderr.contains("nothing to run")
                    || stderr.contains("nothing to convert")
                    || stderr.contains("is not YAML or JSON"),
                "{name}: {stderr}"
            );
            refused.push(name);
            continue;
        }
        converted_any += 1;
        let converted = dir.path().join("converted.yaml");
        std::fs::write(&converted, &output.stdout).unwrap();
        let policies = descheduler_policies(&fixture);
        let mut evicted_here = 0;
        for (cluster, path, objects) in &files {
            let plan = planned(path, &converted);
            evicted_here += plan.len();
            for policy in &policies {
                let protected = protected_pods(policy, objects);
                let wrong: Vec<&String> = plan.intersection(&protected).collect();
                assert!(
                    wrong.is_empty(),
                    "{name} on the {cluster} cluster: tidal plans to evict {wrong:?}, which the \
                     descheduler policy protects\n{}",
                    String::from_utf8_lossy(&output.stdout)
                );
            }
        }
        if evicted_here > 0 {
            evicting.push(name);
        }
    }
    assert!(
        converted_any >= 25,
        "{converted_any} converted; refused: {refused:?}"
    );
    // Not vacuous: most converted policies do evict something on these clusters.
    assert!(
        evicting.len() * 4 >= converted_any * 3,
        "only {evicting:?} evict anything of {converted_any}"
    );
}

/// `noEvictionPolicy: Mandatory` with PodLifeTime must protect a pod annotated
/// `prefer-no-eviction` in tidal's plan too.
#[test]
fn mandatory_no_eviction_carries_over() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n- name: p\n  pluginConfig:\n  - name: DefaultEvictor\n    args: {noEvictionPolicy: Mandatory}\n  - name: PodLifeTime\n    args: {maxPodLifeTimeSeconds: 60}\n  plugins:\n    deschedule:\n      enabled: [PodLifeTime]\n",
    )
    .unwrap();
    let output = tidal(&["convert", "-f", policy.to_str().unwrap()]);
    assert!(output.status.success(), "{output:?}");
    let converted = dir.path().join("converted.yaml");
    std::fs::write(&converted, &output.stdout).unwrap();
    let cluster = write_cluster(dir.path(), "hot.json", &hot_cluster());
    let plan = planned(&cluster, &converted);
    // One pod per workload per round (no budget): one of each workload's pods, none of the
    // annotated workload's.
    assert!(
        plan.iter().any(|p| p.starts_with("work/plain-")),
        "{plan:?}"
    );
    assert!(
        !plan.iter().any(|p| p.contains("prefer-no-eviction")),
        "{plan:?}"
    );
}
