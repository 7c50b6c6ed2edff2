//! The unit tests' one kit: one clock ([`NOW`]), the object builders every test of tidal shares
//! (pods, nodes, zones, PodGroups, policies, PDBs: `testkit/src/objects.rs`), and clusters to plan
//! over. Every object is written as the JSON the API server would send and converted by the same code
//! the cache uses (`PodInfo::from_pod`, `NodeInfo::from_node`, ...), so fields added to the slim types
//! later do not break the tests, and plans go through the real gate chain.

use std::collections::{BTreeMap, HashSet};

use jiff::Timestamp;
use k8s_openapi::api::{
    core::v1::{Namespace, Node, Pod},
    policy::v1::PodDisruptionBudget,
};
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
/// Pods are created and scheduled a day before it (2026-11-21T04:00:00Z) unless they say otherwise.
pub(crate) const NOW: &str = "2026-11-22T04:00:00Z";

pub(crate) fn ts(text: &str) -> Timestamp {
    text.parse().expect("test timestamp")
}

/// An instant `seconds` after a fixed start (2027-01-15T08:00:00Z): for tests of pure decisions
/// that count time from a start of their own.
pub(crate) fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).expect("test instant")
}

/// The kit's clock, which the object builders count from: [`NOW`].
pub(crate) fn now() -> Timestamp {
    ts(NOW)
}

// The object builders are the end-to-end kit's, compiled here too so that a builder means the same in
// both (`testkit/src/objects.rs`); this kit adds what reads them into tidal's types. There they are
// the kit's public interface, and the unit tests use only part of them.
#[allow(unreachable_pub, dead_code)]
#[path = "../testkit/src/objects.rs"]
mod objects;

pub(crate) use objects::{
    NodeBuilder, PdbBuilder, PodBuilder, PodGroupBuilder, ZoneBuilder, node, pdb, pod, podgroup,
    zone,
};

impl NodeBuilder {
    /// The API object, for code that reads nodes as the API server sends them.
    pub(crate) fn object(self) -> Node {
        serde_json::from_value(self.into_value()).expect("test node JSON")
    }

    pub(crate) fn build(self) -> NodeInfo {
        NodeInfo::from_node(&self.object()).expect("test node has a name")
    }
}

impl PodBuilder {
    /// The API object, for code that reads pods as the API server sends them.
    pub(crate) fn object(self) -> Pod {
        serde_json::from_value(self.into_value()).expect("test pod JSON")
    }

    pub(crate) fn build(self) -> PodInfo {
        PodInfo::from_pod(&self.object()).expect("test pod has a name")
    }
}

impl ZoneBuilder {
    /// The API object, for code that reads zones as the API server sends them.
    pub(crate) fn object(self) -> RevocableZone {
        serde_json::from_value(self.into_value()).expect("test zone JSON")
    }

    pub(crate) fn build(self) -> ZoneInfo {
        ZoneInfo::from_zone(&self.object()).expect("test zone has a name")
    }
}

impl PodGroupBuilder {
    pub(crate) fn build(self) -> PodGroupInfo {
        let group: PodGroup =
            serde_json::from_value(self.into_value()).expect("test PodGroup JSON");
        PodGroupInfo::from_podgroup(&group).expect("test PodGroup has a name")
    }
}

impl PdbBuilder {
    pub(crate) fn build(self) -> PdbInfo {
        let pdb: PodDisruptionBudget =
            serde_json::from_value(self.into_value()).expect("test PDB JSON");
        PdbInfo::from_pdb(&pdb).expect("test PDB has a name")
    }
}

/// Zone `name` open 08:00-20:00 UTC: closed at [`NOW`].
pub(crate) fn closed_zone(name: &str) -> ZoneBuilder {
    zone(name).window("08:00-20:00")
}

/// Zone `name` open all day.
pub(crate) fn open_zone(name: &str) -> ZoneBuilder {
    zone(name).window("00:00-00:00")
}

/// [`objects::policy`] read as tidal reads it: DeschedulingPolicy `p`, in DryRun, running TDM with
/// default arguments, with `spec_patch` merged into its spec. Unit tests vary a policy only through its
/// spec, so this kit hands it over built.
pub(crate) fn policy(spec_patch: Value) -> PolicyInfo {
    let policy: DeschedulingPolicy =
        serde_json::from_value(objects::policy(spec_patch).into_value()).expect("test policy JSON");
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
        let (namespace, name) = key.split_once('/').unwrap_or(("default", key));
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

    pub(crate) fn pdb(mut self, pdb: PdbBuilder) -> Self {
        self.cache.apply_pdb(pdb.build());
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
        let (namespace, name) = pod.split_once('/').unwrap_or(("default", pod));
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
