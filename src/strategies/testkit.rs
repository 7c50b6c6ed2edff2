//! Test fixtures for strategy table tests: nodes and pods built as API objects (JSON), converted through
//! the real ingest (`NodeInfo::from_node`, `PodInfo::from_pod`), planned through the real gate chain.

use std::collections::{BTreeMap, HashSet};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use serde_json::{Value, json};

use crate::{
    api::DeschedulingPolicySpec,
    cluster::{ClusterCache, NamespaceInfo, NodeInfo, PodInfo, PolicyInfo, Resources, UsageSample},
    framework,
    planner::{self, Plan},
};

pub const NOW: &str = "2026-03-02T12:00:00Z";
/// Creation time of every pod unless set: a day before [`NOW`].
pub const CREATED: &str = "2026-03-01T12:00:00Z";

pub fn now() -> Timestamp {
    NOW.parse().unwrap()
}

pub struct NodeBuilder(Value);

/// A ready, schedulable node with the given CPU (cores or millicores), memory and pod capacity.
pub fn node(name: &str, cpu: &str, memory: &str, pods: u32) -> NodeBuilder {
    NodeBuilder(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": pods.to_string()},
            "conditions": [{"type": "Ready", "status": "True"}]
        }
    }))
}

impl NodeBuilder {
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.0["metadata"]["labels"][key] = json!(value);
        self
    }

    pub fn taint(mut self, key: &str, value: &str, effect: &str) -> Self {
        let spec = &mut self.0["spec"];
        if spec.get("taints").is_none() {
            spec["taints"] = json!([]);
        }
        if let Some(taints) = spec["taints"].as_array_mut() {
            taints.push(json!({"key": key, "value": value, "effect": effect}));
        }
        self
    }

    pub fn allocatable(mut self, resource: &str, amount: &str) -> Self {
        self.0["status"]["allocatable"][resource] = json!(amount);
        self
    }

    pub fn unschedulable(mut self) -> Self {
        self.0["spec"]["unschedulable"] = json!(true);
        self
    }

    pub fn not_ready(mut self) -> Self {
        self.0["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
        self
    }

    pub fn build(self) -> NodeInfo {
        let node: Node = serde_json::from_value(self.0).unwrap();
        NodeInfo::from_node(&node).unwrap()
    }
}

pub struct PodBuilder(Value);

/// A running pod `namespace/name` owned by ReplicaSet `rs-<name>`, on `node` (empty: unscheduled), with
/// one container requesting `cpu` and `memory`.
pub fn pod(key: &str, node: &str, cpu: &str, memory: &str) -> PodBuilder {
    let (namespace, name) = key.split_once('/').unwrap_or(("default", key));
    let mut value = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": format!("uid-{namespace}-{name}"),
            "creationTimestamp": CREATED,
            "labels": {},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("rs-{name}"),
                "uid": format!("rs-uid-{name}"), "controller": true
            }]
        },
        "spec": {
            "containers": [{
                "name": "main",
                "image": "example.com/app:1",
                "resources": {"requests": {"cpu": cpu, "memory": memory}}
            }]
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": CREATED}]
        }
    });
    if !node.is_empty() {
        value["spec"]["nodeName"] = json!(node);
    } else {
        value["status"]["phase"] = json!("Pending");
        value["status"]["conditions"] = json!([]);
    }
    PodBuilder(value)
}

impl PodBuilder {
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.0["metadata"]["labels"][key] = json!(value);
        self
    }

    pub fn annotation(mut self, key: &str, value: &str) -> Self {
        let meta = &mut self.0["metadata"];
        if meta.get("annotations").is_none() {
            meta["annotations"] = json!({});
        }
        meta["annotations"][key] = json!(value);
        self
    }

    /// Replaces the controller owner.
    pub fn owner(mut self, kind: &str, name: &str) -> Self {
        self.0["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "apps/v1", "kind": kind, "name": name,
            "uid": format!("uid-{kind}-{name}"), "controller": true
        }]);
        self
    }

    pub fn bare(mut self) -> Self {
        self.0["metadata"]["ownerReferences"] = json!([]);
        self
    }

    pub fn priority(mut self, priority: i32) -> Self {
        self.0["spec"]["priority"] = json!(priority);
        self
    }

    pub fn qos(mut self, qos: &str) -> Self {
        self.0["status"]["qosClass"] = json!(qos);
        self
    }

    pub fn phase(mut self, phase: &str) -> Self {
        self.0["status"]["phase"] = json!(phase);
        self
    }

    pub fn created(mut self, at: &str) -> Self {
        self.0["metadata"]["creationTimestamp"] = json!(at);
        self
    }

    pub fn request(mut self, resource: &str, amount: &str) -> Self {
        self.0["spec"]["containers"][0]["resources"]["requests"][resource] = json!(amount);
        self
    }

    pub fn image(mut self, image: &str) -> Self {
        self.0["spec"]["containers"][0]["image"] = json!(image);
        self
    }

    /// Sets a field of the spec (`nodeSelector`, `affinity`, `tolerations`, ...) to a JSON value.
    pub fn spec(mut self, field: &str, value: Value) -> Self {
        self.0["spec"][field] = value;
        self
    }

    /// Sets a field of the status (`containerStatuses`, `reason`, `conditions`, ...) to a JSON value.
    pub fn status(mut self, field: &str, value: Value) -> Self {
        self.0["status"][field] = value;
        self
    }

    pub fn terminating(mut self) -> Self {
        self.0["metadata"]["deletionTimestamp"] = json!(NOW);
        self
    }

    pub fn build(self) -> PodInfo {
        let pod: Pod = serde_json::from_value(self.0).unwrap();
        PodInfo::from_pod(&pod).unwrap()
    }
}

/// A cluster under test.
#[derive(Default)]
pub struct Cluster {
    pub cache: ClusterCache,
}

impl Cluster {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn node(mut self, node: NodeBuilder) -> Self {
        self.cache.apply_node(node.build());
        self
    }

    /// Plain nodes of 10 cores, 100Gi and 110 pod slots: percentages of them read at a glance.
    pub fn standard_nodes(self, names: &[&str]) -> Self {
        names.iter().fold(self, |cluster, name| {
            cluster.node(node(name, "10", "100Gi", 110))
        })
    }

    pub fn pod(mut self, pod: PodBuilder) -> Self {
        self.cache
            .apply_pod(pod.build(), jiff::Timestamp::UNIX_EPOCH);
        self
    }

    pub fn namespace(mut self, name: &str, labels: &[(&str, &str)]) -> Self {
        let namespace: Namespace = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels.iter().copied().collect::<BTreeMap<_, _>>()}
        }))
        .unwrap();
        self.cache
            .apply_namespace(NamespaceInfo::from_namespace(&namespace).unwrap());
        self
    }

    /// A RevocableZone open in `window` (`"HH:MM-HH:MM"`, UTC); nodes join it with label
    /// `volcano.sh/revocable-zone`.
    pub fn zone(mut self, name: &str, window: &str) -> Self {
        let zone: crate::api::RevocableZone = serde_json::from_value(json!({
            "apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone",
            "metadata": {"name": name}, "spec": {"windows": [{"time": window}]},
        }))
        .unwrap();
        self.cache
            .apply_zone(crate::cluster::ZoneInfo::from_zone(&zone).unwrap());
        self
    }

    /// A PodDisruptionBudget in `namespace` selecting pods with `app=<app>`.
    pub fn pdb(mut self, namespace: &str, app: &str) -> Self {
        let pdb: k8s_openapi::api::policy::v1::PodDisruptionBudget = serde_json::from_value(json!({
            "metadata": {"name": format!("pdb-{app}"), "namespace": namespace},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}},
            "status": {"disruptionsAllowed": 1, "currentHealthy": 1, "desiredHealthy": 0, "expectedPods": 1}
        }))
        .unwrap();
        self.cache
            .apply_pdb(crate::cluster::PdbInfo::from_pdb(&pdb).unwrap());
        self
    }

    /// Records a measured usage of `cpu` millicores and `memory` bytes for a node, `age_secs` before NOW.
    pub fn node_usage(mut self, node: &str, cpu: i64, memory: i64, age_secs: i64) -> Self {
        self.cache
            .record_node_usage(node, sample(cpu, memory, age_secs));
        self
    }

    pub fn pod_usage(mut self, pod: &str, cpu: i64, memory: i64, age_secs: i64) -> Self {
        let (namespace, name) = pod.split_once('/').unwrap_or(("default", pod));
        let key = crate::cluster::ObjectKey::new(namespace, name);
        self.cache
            .record_pod_usage(&key, sample(cpu, memory, age_secs));
        self
    }

    /// Plans the policy whose spec is given as YAML, at [`NOW`].
    pub fn plan(&mut self, spec_yaml: &str) -> Outcome {
        let spec: DeschedulingPolicySpec = serde_saphyr::from_str(spec_yaml).unwrap();
        let policy = PolicyInfo::new("test".to_owned(), None, spec);
        let snapshot = self.cache.snapshot();
        let (zones, _) = framework::zone_views(&snapshot, now());
        let plan = planner::plan_policy(&snapshot, &policy, now(), &zones, &HashSet::new());
        Outcome { plan }
    }
}

fn sample(cpu: i64, memory: i64, age_secs: i64) -> UsageSample {
    UsageSample::new(
        now()
            .checked_sub(jiff::SignedDuration::from_secs(age_secs))
            .unwrap(),
        Some("20s"),
        Resources {
            milli_cpu: cpu,
            memory,
            ..Default::default()
        },
    )
}

pub struct Outcome {
    pub plan: Plan,
}

impl Outcome {
    /// Evicted pods as `namespace/name`, in plan order. Panics if the policy did not run: a rejected
    /// policy evicts nothing, and an assertion that nothing is evicted must not pass for that reason.
    pub fn evicted(&self) -> Vec<String> {
        if let Some(error) = &self.plan.error {
            panic!("the policy did not run: {error}");
        }
        self.plan
            .evictions
            .iter()
            .map(|e| e.candidate.pod.key.to_string())
            .collect()
    }

    /// Skipped pods as `namespace/name gate`, in plan order. Panics if the policy did not run.
    pub fn skipped(&self) -> Vec<String> {
        if let Some(error) = &self.plan.error {
            panic!("the policy did not run: {error}");
        }
        self.plan
            .skipped
            .iter()
            .map(|s| format!("{} {}", s.candidate.pod.key, s.reason))
            .collect()
    }

    /// The skip detail of one pod.
    pub fn detail(&self, pod: &str) -> String {
        self.plan
            .skipped
            .iter()
            .find(|s| s.candidate.pod.key.to_string() == pod)
            .map(|s| s.detail.clone())
            .unwrap_or_else(|| panic!("{pod} was not skipped: {:?}", self.skipped()))
    }

    /// The eviction reason of one pod.
    pub fn reason(&self, pod: &str) -> String {
        self.plan
            .evictions
            .iter()
            .find(|e| e.candidate.pod.key.to_string() == pod)
            .map(|e| e.candidate.reason.clone())
            .unwrap_or_else(|| panic!("{pod} was not evicted: {:?}", self.evicted()))
    }

    pub fn error(&self) -> Option<&str> {
        self.plan.error.as_deref()
    }
}
