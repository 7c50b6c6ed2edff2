//! The unit tests' one kit: one clock ([`NOW`]) and one builder vocabulary for pods, nodes, zones,
//! policies, PodGroups and clusters. Every object is written as the JSON the API server would send and
//! converted by the same code the cache uses (`PodInfo::from_pod`, `NodeInfo::from_node`, ...), so fields
//! added to the slim types later do not break the tests, and plans go through the real gate chain.

use std::collections::{BTreeMap, HashSet};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use serde_json::{Value, json};

use crate::{
    api::{DeschedulingPolicy, DeschedulingPolicySpec, PodGroup, RevocableZone},
    cluster::{
        ClusterCache, NamespaceInfo, NodeInfo, ObjectKey, PdbInfo, PodGroupInfo, PodInfo,
        PolicyInfo, Resources, Snapshot, UsageSample, ZoneInfo,
    },
    framework::{Candidate, PlanContext, zone_views},
    planner::{Plan, plan_policy},
};

/// The planning instant of the tests. A zone open 08:00-20:00 UTC ([`closed_zone`]) is closed then.
pub(crate) const NOW: &str = "2026-11-22T04:00:00Z";
/// When every pod was created and scheduled unless it says otherwise: a day before [`NOW`].
pub(crate) const CREATED: &str = "2026-11-21T04:00:00Z";

pub(crate) fn ts(text: &str) -> Timestamp {
    text.parse().expect("test timestamp")
}

pub(crate) fn now() -> Timestamp {
    ts(NOW)
}

/// Merges `patch` into `base`: objects key by key, anything else replaced.
pub(crate) fn merge(base: &mut Value, patch: Value) {
    match (base, patch) {
        (Value::Object(base), Value::Object(patch)) => {
            for (key, value) in patch {
                merge(base.entry(key).or_insert(Value::Null), value);
            }
        }
        (base, patch) => *base = patch,
    }
}

fn set_map_entry(object: &mut Value, map: &str, key: &str, value: &str) {
    let meta = &mut object["metadata"];
    if !meta.get(map).is_some_and(Value::is_object) {
        meta[map] = json!({});
    }
    meta[map][key] = json!(value);
}

fn split_key(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("default", key))
}

pub(crate) struct NodeBuilder(Value);

/// A ready, schedulable node of 8 cores, 32Gi and 110 pod slots.
pub(crate) fn node(name: &str) -> NodeBuilder {
    NodeBuilder(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}]
        }
    }))
}

impl NodeBuilder {
    /// Allocatable CPU (cores or millicores), memory and pod slots.
    pub(crate) fn allocatable(mut self, cpu: &str, memory: &str, pods: u32) -> Self {
        let allocatable = &mut self.0["status"]["allocatable"];
        allocatable["cpu"] = json!(cpu);
        allocatable["memory"] = json!(memory);
        allocatable["pods"] = json!(pods.to_string());
        self
    }

    /// Allocatable amount of one resource (`cpu`, `nvidia.com/gpu`, ...).
    pub(crate) fn resource(mut self, resource: &str, amount: &str) -> Self {
        self.0["status"]["allocatable"][resource] = json!(amount);
        self
    }

    /// Member of RevocableZone `zone` (label `volcano.sh/revocable-zone`).
    pub(crate) fn zone(self, zone: &str) -> Self {
        self.label("volcano.sh/revocable-zone", zone)
    }

    pub(crate) fn label(mut self, key: &str, value: &str) -> Self {
        set_map_entry(&mut self.0, "labels", key, value);
        self
    }

    pub(crate) fn taint(mut self, key: &str, value: &str, effect: &str) -> Self {
        let spec = &mut self.0["spec"];
        if spec.get("taints").is_none() {
            spec["taints"] = json!([]);
        }
        if let Some(taints) = spec["taints"].as_array_mut() {
            taints.push(json!({"key": key, "value": value, "effect": effect}));
        }
        self
    }

    pub(crate) fn unschedulable(mut self) -> Self {
        self.0["spec"]["unschedulable"] = json!(true);
        self
    }

    pub(crate) fn not_ready(mut self) -> Self {
        self.0["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
        self
    }

    /// Merges raw JSON into the node, for the rare field no method sets.
    pub(crate) fn patch(mut self, patch: Value) -> Self {
        merge(&mut self.0, patch);
        self
    }

    /// The API object, for code that reads nodes as the API server sends them.
    pub(crate) fn object(self) -> Node {
        serde_json::from_value(self.0).expect("test node JSON")
    }

    pub(crate) fn build(self) -> NodeInfo {
        NodeInfo::from_node(&self.object()).expect("test node has a name")
    }
}

pub(crate) struct PodBuilder(Value);

/// A running pod `namespace/name` owned by ReplicaSet `rs-<name>`, on `node` (empty: pending, unscheduled),
/// created and scheduled at [`CREATED`], with one container requesting 100m CPU and 64Mi memory.
pub(crate) fn pod(key: &str, node: &str) -> PodBuilder {
    let (namespace, name) = split_key(key);
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
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}
            }]
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": CREATED}]
        }
    });
    if !node.is_empty() {
        value["spec"]["nodeName"] = json!(node);
        value["status"]["startTime"] = json!(CREATED);
    } else {
        value["status"]["phase"] = json!("Pending");
        value["status"]["conditions"] = json!([]);
    }
    PodBuilder(value)
}

impl PodBuilder {
    /// The CPU and memory requests of the (first) container.
    pub(crate) fn requests(self, cpu: &str, memory: &str) -> Self {
        self.request("cpu", cpu).request("memory", memory)
    }

    /// The request of one resource of the (first) container.
    pub(crate) fn request(mut self, resource: &str, amount: &str) -> Self {
        self.0["spec"]["containers"][0]["resources"]["requests"][resource] = json!(amount);
        self
    }

    pub(crate) fn label(mut self, key: &str, value: &str) -> Self {
        set_map_entry(&mut self.0, "labels", key, value);
        self
    }

    pub(crate) fn annotation(mut self, key: &str, value: &str) -> Self {
        set_map_entry(&mut self.0, "annotations", key, value);
        self
    }

    /// `volcano.sh/preemptable: "true"` as an annotation.
    pub(crate) fn preemptable(self) -> Self {
        self.annotation("volcano.sh/preemptable", "true")
    }

    /// Replaces the controller owner.
    pub(crate) fn owned_by(mut self, kind: &str, name: &str) -> Self {
        self.0["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "apps/v1", "kind": kind, "name": name,
            "uid": format!("uid-{kind}-{name}"), "controller": true
        }]);
        self
    }

    /// No owner at all.
    pub(crate) fn bare(mut self) -> Self {
        self.0["metadata"]["ownerReferences"] = json!([]);
        self
    }

    pub(crate) fn priority(mut self, priority: i32) -> Self {
        self.0["spec"]["priority"] = json!(priority);
        self
    }

    pub(crate) fn qos(mut self, qos: &str) -> Self {
        self.0["status"]["qosClass"] = json!(qos);
        self
    }

    pub(crate) fn phase(mut self, phase: &str) -> Self {
        self.0["status"]["phase"] = json!(phase);
        self
    }

    /// The creation time, and the start time of a pod bound to a node; the pod stays scheduled at
    /// [`CREATED`].
    pub(crate) fn created(mut self, at: &str) -> Self {
        self.0["metadata"]["creationTimestamp"] = json!(at);
        if self.0["status"].get("startTime").is_some() {
            self.0["status"]["startTime"] = json!(at);
        }
        self
    }

    /// Scheduled at `at`: the `PodScheduled` condition, replacing every other condition.
    pub(crate) fn scheduled_at(mut self, at: &str) -> Self {
        self.0["status"]["conditions"] =
            json!([{"type": "PodScheduled", "status": "True", "lastTransitionTime": at}]);
        self
    }

    pub(crate) fn image(mut self, image: &str) -> Self {
        self.0["spec"]["containers"][0]["image"] = json!(image);
        self
    }

    /// Sets a field of the spec (`nodeSelector`, `affinity`, `tolerations`, ...) to a JSON value.
    pub(crate) fn spec(mut self, field: &str, value: Value) -> Self {
        self.0["spec"][field] = value;
        self
    }

    /// Sets a field of the status (`containerStatuses`, `reason`, `conditions`, ...) to a JSON value.
    pub(crate) fn status(mut self, field: &str, value: Value) -> Self {
        self.0["status"][field] = value;
        self
    }

    pub(crate) fn terminating(mut self) -> Self {
        self.0["metadata"]["deletionTimestamp"] = json!(NOW);
        self
    }

    /// Merges raw JSON into the pod, for what no other method says (e.g. a request that does not parse).
    pub(crate) fn patch(mut self, patch: Value) -> Self {
        merge(&mut self.0, patch);
        self
    }

    /// The API object, for code that reads pods as the API server sends them.
    pub(crate) fn object(self) -> Pod {
        serde_json::from_value(self.0).expect("test pod JSON")
    }

    pub(crate) fn build(self) -> PodInfo {
        PodInfo::from_pod(&self.object()).expect("test pod has a name")
    }
}

pub(crate) struct ZoneBuilder(Value);

/// A RevocableZone with no windows yet; nodes join it with [`NodeBuilder::zone`].
pub(crate) fn zone(name: &str) -> ZoneBuilder {
    ZoneBuilder(json!({
        "apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone",
        "metadata": {"name": name}, "spec": {"windows": []},
    }))
}

/// Zone `name` open 08:00-20:00 UTC: closed at [`NOW`].
pub(crate) fn closed_zone(name: &str) -> ZoneBuilder {
    zone(name).window("08:00-20:00")
}

/// Zone `name` open all day.
pub(crate) fn open_zone(name: &str) -> ZoneBuilder {
    zone(name).window("00:00-00:00")
}

impl ZoneBuilder {
    /// Adds a window open `"HH:MM-HH:MM"` (in the zone's time zone, UTC unless set).
    pub(crate) fn window(mut self, time: &str) -> Self {
        if let Some(windows) = self.0["spec"]["windows"].as_array_mut() {
            windows.push(json!({"time": time}));
        }
        self
    }

    /// Merges `patch` into the spec.
    pub(crate) fn spec(mut self, patch: Value) -> Self {
        merge(&mut self.0["spec"], patch);
        self
    }

    pub(crate) fn status(mut self, status: Value) -> Self {
        self.0["status"] = status;
        self
    }

    /// The API object, for code that reads zones as the API server sends them.
    pub(crate) fn object(self) -> RevocableZone {
        serde_json::from_value(self.0).expect("test zone JSON")
    }

    pub(crate) fn build(self) -> ZoneInfo {
        ZoneInfo::from_zone(&self.object()).expect("test zone has a name")
    }
}

pub(crate) struct PodGroupBuilder(Value);

/// A Volcano PodGroup `namespace/name` with `minMember: 1`.
pub(crate) fn podgroup(key: &str) -> PodGroupBuilder {
    let (namespace, name) = split_key(key);
    PodGroupBuilder(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace}, "spec": {"minMember": 1},
    }))
}

impl PodGroupBuilder {
    pub(crate) fn label(mut self, key: &str, value: &str) -> Self {
        set_map_entry(&mut self.0, "labels", key, value);
        self
    }

    pub(crate) fn annotation(mut self, key: &str, value: &str) -> Self {
        set_map_entry(&mut self.0, "annotations", key, value);
        self
    }

    pub(crate) fn build(self) -> PodGroupInfo {
        let group: PodGroup = serde_json::from_value(self.0).expect("test PodGroup JSON");
        PodGroupInfo::from_podgroup(&group).expect("test PodGroup has a name")
    }
}

/// A DryRun policy `p` running TDM with default arguments, with `patch` merged into its spec.
pub(crate) fn policy(patch: Value) -> PolicyInfo {
    let mut json = json!({
        "apiVersion": "tidal.dev/v1alpha1", "kind": "DeschedulingPolicy",
        "metadata": {"name": "p"},
        "spec": {"mode": "DryRun", "strategies": {"tdm": {}}},
    });
    merge(&mut json, json!({"spec": patch}));
    let policy: DeschedulingPolicy = serde_json::from_value(json).expect("test policy JSON");
    PolicyInfo::from_policy(&policy).expect("test policy has a name")
}

/// Policy `test` whose whole spec is given as YAML.
pub(crate) fn policy_yaml(spec_yaml: &str) -> PolicyInfo {
    let spec: DeschedulingPolicySpec = serde_saphyr::from_str(spec_yaml).unwrap();
    PolicyInfo::new("test".to_owned(), None, spec)
}

/// A cluster under test.
#[derive(Default)]
pub(crate) struct Cluster {
    pub(crate) cache: ClusterCache,
}

impl Cluster {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// One revocable node `rev-1` in the closed zone `z` and a normal node `normal-1`.
    pub(crate) fn revocable() -> Self {
        Self::new()
            .node(node("rev-1").zone("z"))
            .node(node("normal-1"))
            .zone(closed_zone("z"))
    }

    pub(crate) fn node(mut self, node: NodeBuilder) -> Self {
        self.cache.apply_node(node.build());
        self
    }

    /// Plain nodes of 10 cores, 100Gi and 110 pod slots: percentages of them read at a glance.
    pub(crate) fn standard_nodes(self, names: &[&str]) -> Self {
        names.iter().fold(self, |cluster, name| {
            cluster.node(node(name).allocatable("10", "100Gi", 110))
        })
    }

    pub(crate) fn pod(mut self, pod: PodBuilder) -> Self {
        self.cache.apply_pod(pod.build(), Timestamp::UNIX_EPOCH);
        self
    }

    pub(crate) fn pods(self, pods: impl IntoIterator<Item = PodBuilder>) -> Self {
        pods.into_iter().fold(self, Cluster::pod)
    }

    pub(crate) fn zone(mut self, zone: ZoneBuilder) -> Self {
        self.cache.apply_zone(zone.build());
        self
    }

    pub(crate) fn podgroup(mut self, group: PodGroupBuilder) -> Self {
        self.cache.apply_podgroup(group.build());
        self
    }

    pub(crate) fn namespace(mut self, name: &str, labels: &[(&str, &str)]) -> Self {
        let namespace: Namespace = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels.iter().copied().collect::<BTreeMap<_, _>>()}
        }))
        .unwrap();
        self.cache
            .apply_namespace(NamespaceInfo::from_namespace(&namespace).unwrap());
        self
    }

    /// A PersistentVolumeClaim `namespace/name` of StorageClass `class` (empty: none).
    pub(crate) fn claim(mut self, key: &str, class: &str) -> Self {
        let (namespace, name) = split_key(key);
        let claim: k8s_openapi::api::core::v1::PersistentVolumeClaim =
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"storageClassName": class},
            }))
            .unwrap();
        self.cache
            .apply_claim(crate::cluster::ClaimInfo::from_claim(&claim).unwrap());
        self
    }

    /// A PodDisruptionBudget in `namespace` selecting pods with `app=<app>`.
    pub(crate) fn pdb(mut self, namespace: &str, app: &str) -> Self {
        let pdb: k8s_openapi::api::policy::v1::PodDisruptionBudget = serde_json::from_value(json!({
            "metadata": {"name": format!("pdb-{app}"), "namespace": namespace},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}},
            "status": {"disruptionsAllowed": 1, "currentHealthy": 1, "desiredHealthy": 0, "expectedPods": 1}
        }))
        .unwrap();
        self.cache.apply_pdb(PdbInfo::from_pdb(&pdb).unwrap());
        self
    }

    /// Records Prometheus' answer to `query` at NOW: a value in [0, 1] per node.
    pub(crate) fn node_metric(mut self, query: &str, values: &[(&str, f64)]) -> Self {
        self.cache.record_node_metric(
            query,
            crate::cluster::MetricSample {
                at: now(),
                values: Ok(values.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect()),
            },
        );
        self
    }

    /// Records a measured usage of `cpu` millicores and `memory` bytes for a node, `age_secs` before NOW.
    pub(crate) fn node_usage(mut self, node: &str, cpu: i64, memory: i64, age_secs: i64) -> Self {
        self.cache
            .record_node_usage(node, sample(cpu, memory, age_secs));
        self
    }

    pub(crate) fn pod_usage(mut self, pod: &str, cpu: i64, memory: i64, age_secs: i64) -> Self {
        let (namespace, name) = split_key(pod);
        self.cache.record_pod_usage(
            &ObjectKey::new(namespace, name),
            sample(cpu, memory, age_secs),
        );
        self
    }

    pub(crate) fn snapshot(&mut self) -> Snapshot {
        self.cache.snapshot()
    }

    /// Plans the policy whose spec is given as YAML, at [`NOW`].
    pub(crate) fn plan(&mut self, spec_yaml: &str) -> Outcome {
        self.plan_policy(&policy_yaml(spec_yaml))
    }

    /// Plans `policy` at [`NOW`], alone in its cycle.
    pub(crate) fn plan_policy(&mut self, policy: &PolicyInfo) -> Outcome {
        let snapshot = self.snapshot();
        let (zones, _) = zone_views(&snapshot, now());
        let plan = plan_policy(&snapshot, policy, now(), &zones, &HashSet::new());
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

/// Runs `f` with the context a policy's planning would see at `now`.
pub(crate) fn with_context<R>(
    snapshot: &Snapshot,
    policy: &PolicyInfo,
    now: &str,
    planned_elsewhere: &HashSet<ObjectKey>,
    f: impl FnOnce(&PlanContext<'_>) -> R,
) -> R {
    let (zones, _) = zone_views(snapshot, ts(now));
    let ctx = PlanContext {
        snapshot,
        policy,
        now: ts(now),
        zones: &zones,
        planned_elsewhere,
    };
    f(&ctx)
}

/// `ns/name` of a candidate, an eviction or a skip.
pub(crate) fn key_of(candidate: &Candidate) -> String {
    candidate.pod.key.to_string()
}

/// A plan, read the way the tests assert on it.
pub(crate) struct Outcome {
    pub(crate) plan: Plan,
}

impl Outcome {
    /// Evicted pods as `namespace/name`, in plan order. Panics if the policy did not run: a rejected
    /// policy evicts nothing, and an assertion that nothing is evicted must not pass for that reason.
    pub(crate) fn evicted(&self) -> Vec<String> {
        if let Some(error) = &self.plan.error {
            panic!("the policy did not run: {error}");
        }
        self.plan
            .evictions
            .iter()
            .map(|e| key_of(&e.candidate))
            .collect()
    }

    /// Skipped pods as `namespace/name gate`, in plan order. Panics if the policy did not run.
    pub(crate) fn skipped(&self) -> Vec<String> {
        if let Some(error) = &self.plan.error {
            panic!("the policy did not run: {error}");
        }
        self.plan
            .skipped
            .iter()
            .map(|s| format!("{} {}", key_of(&s.candidate), s.reason))
            .collect()
    }

    /// The skip detail of one pod.
    pub(crate) fn detail(&self, pod: &str) -> String {
        self.plan
            .skipped
            .iter()
            .find(|s| key_of(&s.candidate) == pod)
            .map(|s| s.detail.clone())
            .unwrap_or_else(|| panic!("{pod} was not skipped: {:?}", self.skipped()))
    }

    /// The eviction reason of one pod.
    pub(crate) fn reason(&self, pod: &str) -> String {
        self.plan
            .evictions
            .iter()
            .find(|e| key_of(&e.candidate) == pod)
            .map(|e| e.candidate.reason.clone())
            .unwrap_or_else(|| panic!("{pod} was not evicted: {:?}", self.evicted()))
    }

    pub(crate) fn error(&self) -> Option<&str> {
        self.plan.error.as_deref()
    }
}
