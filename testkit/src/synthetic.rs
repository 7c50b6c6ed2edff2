//! Deterministic synthetic clusters for benchmarks and tests.
//!
//! [`generate`] turns a [`SyntheticSpec`] into the API objects a real cluster would serve: nodes of several
//! sizes (some cordoned, tainted or not ready, some labelled into revocable zones), DaemonSet pods on every
//! node, static pods on control-plane nodes, Deployments (through ReplicaSets), StatefulSets, Jobs, Volcano
//! jobs with their PodGroups, bare pods, PodDisruptionBudgets, RevocableZones and a DeschedulingPolicy.
//! Load is deliberately uneven (some nodes nearly full, some nearly empty) and annotations vary
//! (preemptable, zone opt-in, cooldown, job budgets, a few malformed ones), so that strategies and gates
//! have real work.
//!
//! The same spec, seed included, always yields the same objects. The random numbers come from a small
//! splitmix64 generator (`crate::rng`) rather than from the `rand` crate, so that a dependency upgrade can never
//! change the clusters benchmarks compare across commits.
//!
//! [`churn`] produces watch-like events against a generated cluster together with the events that undo
//! them, so that a benchmark can swing one long-lived cache back and forth between two states.
//!
//! ```
//! use tidal_testkit::synthetic::{SyntheticSpec, churn, generate};
//!
//! let cluster = generate(&SyntheticSpec::small());
//! let mut cache = cluster.to_cache();
//! let mut snapshot = cache.snapshot();
//! let churn = churn(&cluster, 0.01, 1);
//! churn.apply(&mut cache);
//! cache.update_snapshot(&mut snapshot);
//! assert_eq!(snapshot.pod_count(), cache.pod_count());
//! ```

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::{
    api::{
        core::v1::{
            Container, Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodCondition, PodSpec,
            PodStatus, ResourceRequirements, Taint, Toleration,
        },
        policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus},
    },
    apimachinery::pkg::{
        api::resource::Quantity,
        apis::meta::v1::{LabelSelector, MicroTime, ObjectMeta, OwnerReference, Time},
        util::intstr::IntOrString,
    },
};

use crate::rng::SplitMix64;
use tidal::{
    api::labels,
    api::{
        BudgetsAfterClose, DeschedulingPolicy, DeschedulingPolicySpec, DrainBefore, GoDuration,
        PodGroup, PolicyMode, RevocableZone, RevocableZoneSpec,
        pod_filters::NamespaceFilter,
        podgroup::PodGroupSpec,
        policy::{EvictionLimits, JobBudgetSpec, PolicyDefaults, Strategies},
        zone::{RevocableZoneStatus, WindowSpec},
    },
    cluster::{
        ClusterCache, NodeInfo, ObjectKey, PdbInfo, PodGroupInfo, PodInfo, PolicyInfo, ZoneInfo,
    },
    strategies::tdm::args::TdmArgs,
    time_windows::Weekday,
};

/// What to generate. Shares are fractions in `0.0..=1.0`; out-of-range values are clamped.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticSpec {
    /// Nodes in all, control-plane nodes included (clusters of 10 nodes or more get 1 to 3 of them).
    pub nodes: usize,
    /// Pods in all, DaemonSet and static pods included: the cluster holds exactly this many.
    pub pods: usize,
    /// Application namespaces (`team-000`, ...), used unevenly; system namespaces come on top.
    pub namespaces: usize,
    /// RevocableZone objects (`zone-0`, ...); revocable nodes are spread over them in turn.
    pub revocable_zones: usize,
    /// Share of worker nodes labelled `volcano.sh/revocable-zone` (none without zones).
    pub revocable_node_share: f64,
    /// Share of workloads whose pods (or PodGroup) say `volcano.sh/preemptable: "true"`.
    pub preemptable_share: f64,
    /// Share of application pods that belong to Volcano jobs (PodGroup + `scheduling.k8s.io/group-name`).
    pub podgroup_share: f64,
    /// Share of workloads with a `volcano.sh/cooldown-time`.
    pub cooldown_share: f64,
    /// Share of application pods left unscheduled on purpose; pods that fit nowhere stay pending as well.
    pub pending_share: f64,
    /// Share of bound pods the API server is deleting (`deletionTimestamp` set).
    pub terminating_share: f64,
    /// Share of workloads carrying one malformed tidal annotation, for the `invalid` gate.
    pub malformed_share: f64,
    /// DaemonSets with a pod on every node (at most 5; fewer if `pods` cannot hold them all).
    pub daemonsets: usize,
    /// The instant the cluster is observed at: every creation and scheduling time lies before it.
    pub now: Timestamp,
    pub seed: u64,
}

impl SyntheticSpec {
    /// A large production cluster: 5,000 nodes, 150,000 pods. What the performance goals are set for.
    pub fn large() -> Self {
        SyntheticSpec {
            nodes: 5_000,
            pods: 150_000,
            namespaces: 200,
            revocable_zones: 4,
            ..Self::small()
        }
    }

    /// A small cluster (50 nodes, 1,500 pods) with the same variety, for tests.
    pub fn small() -> Self {
        SyntheticSpec {
            nodes: 50,
            pods: 1_500,
            namespaces: 8,
            revocable_zones: 2,
            revocable_node_share: 0.3,
            preemptable_share: 0.35,
            podgroup_share: 0.2,
            cooldown_share: 0.2,
            pending_share: 0.01,
            terminating_share: 0.002,
            malformed_share: 0.003,
            daemonsets: 3,
            // Monday 2025-06-02 12:00 UTC: some zone windows are open then, some closed.
            now: Timestamp::constant(1_748_865_600, 0),
            seed: 42,
        }
    }

    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
}

impl Default for SyntheticSpec {
    fn default() -> Self {
        Self::small()
    }
}

/// The objects of a generated cluster, as the API server would list them.
#[derive(Clone, Debug)]
pub struct SyntheticCluster {
    pub spec: SyntheticSpec,
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub zones: Vec<RevocableZone>,
    pub podgroups: Vec<PodGroup>,
    pub pdbs: Vec<PodDisruptionBudget>,
    pub policy: DeschedulingPolicy,
}

impl SyntheticCluster {
    /// A cache fed every object through the ingest path watch events take (`PodInfo::from_pod`, ...).
    pub fn to_cache(&self) -> ClusterCache {
        let mut cache = ClusterCache::new();
        self.ingest_into(&mut cache);
        cache
    }

    /// Feeds every object to `cache`. Generated objects always have names, the only thing conversion can
    /// fail on, so nothing is left out.
    pub fn ingest_into(&self, cache: &mut ClusterCache) {
        for node in &self.nodes {
            if let Ok(node) = NodeInfo::from_node(node) {
                cache.apply_node(node);
            }
        }
        for zone in &self.zones {
            if let Ok(zone) = ZoneInfo::from_zone(zone) {
                cache.apply_zone(zone);
            }
        }
        if let Ok(policy) = PolicyInfo::from_policy(&self.policy) {
            cache.apply_policy(policy);
        }
        for group in &self.podgroups {
            if let Ok(group) = PodGroupInfo::from_podgroup(group) {
                cache.apply_podgroup(group);
            }
        }
        for pdb in &self.pdbs {
            if let Ok(pdb) = PdbInfo::from_pdb(pdb) {
                cache.apply_pdb(pdb);
            }
        }
        for pod in &self.pods {
            if let Ok(pod) = PodInfo::from_pod(pod) {
                cache.apply_pod(pod, jiff::Timestamp::UNIX_EPOCH);
            }
        }
    }
}

/// Generates the cluster `spec` describes. Deterministic: equal specs give equal clusters.
pub fn generate(spec: &SyntheticSpec) -> SyntheticCluster {
    let mut pods = Vec::with_capacity(spec.pods);
    let mut cluster = generate_each(spec, &mut |pod| pods.push(pod));
    cluster.pods = pods;
    cluster
}

/// Generates the cluster `spec` describes, handing each pod to `each` as it is made instead of
/// keeping it (`pods` of the result is empty): clusters of millions of pods, whose objects would not
/// fit in memory, are generated again for each pass over their pods. The pods come in the order
/// [`generate`] lists them.
pub fn generate_each(spec: &SyntheticSpec, each: &mut dyn FnMut(Pod)) -> SyntheticCluster {
    let mut rng = SplitMix64::new(spec.seed);
    let zones = zones(spec);
    let mut generator = Generator {
        spec,
        nodes: plan_nodes(spec, &mut rng.split()),
        rng: rng.split(),
        each,
        made: 0,
        podgroups: Vec::new(),
        pdbs: Vec::new(),
        names: 0,
    };
    let nodes = generator
        .nodes
        .iter()
        .map(|n| n.to_node(spec.now))
        .collect();
    generator.system_pods();
    let workloads = generator.plan_workloads();
    generator.place_workloads(&workloads);
    SyntheticCluster {
        spec: spec.clone(),
        nodes,
        pods: Vec::new(),
        zones,
        podgroups: generator.podgroups,
        pdbs: generator.pdbs,
        policy: policy(),
    }
}

/// One watch-like event.
#[derive(Clone, Debug, PartialEq)]
pub enum ChurnEvent {
    /// A pod was added or changed (phase, readiness, node, ...).
    PodApplied(Box<Pod>),
    PodDeleted(ObjectKey),
    NodeApplied(Box<Node>),
}

impl ChurnEvent {
    /// Applies the event as the watcher would: converting the object, then updating the cache.
    pub fn apply(&self, cache: &mut ClusterCache) {
        match self {
            ChurnEvent::PodApplied(pod) => {
                if let Ok(pod) = PodInfo::from_pod(pod) {
                    cache.apply_pod(pod, jiff::Timestamp::UNIX_EPOCH);
                }
            }
            ChurnEvent::PodDeleted(key) => cache.delete_pod(key, jiff::Timestamp::UNIX_EPOCH),
            ChurnEvent::NodeApplied(node) => {
                if let Ok(node) = NodeInfo::from_node(node) {
                    cache.apply_node(node);
                }
            }
        }
    }

    pub fn is_pod_event(&self) -> bool {
        !matches!(self, ChurnEvent::NodeApplied(_))
    }

    /// The pod the event adds, changes or deletes.
    pub fn pod_key(&self) -> Option<ObjectKey> {
        match self {
            ChurnEvent::PodApplied(pod) => Some(key_of(&pod.metadata)),
            ChurnEvent::PodDeleted(key) => Some(key.clone()),
            ChurnEvent::NodeApplied(_) => None,
        }
    }
}

/// Events that change a generated cluster, and the events that change it back.
#[derive(Clone, Debug, Default)]
pub struct Churn {
    pub events: Vec<ChurnEvent>,
    /// Applied after `events`, these restore every object the cluster had (and remove the added ones).
    pub undo: Vec<ChurnEvent>,
}

impl Churn {
    pub fn apply(&self, cache: &mut ClusterCache) {
        for event in &self.events {
            event.apply(cache);
        }
    }

    pub fn revert(&self, cache: &mut ClusterCache) {
        for event in &self.undo {
            event.apply(cache);
        }
    }

    pub fn pod_events(&self) -> usize {
        self.events.iter().filter(|e| e.is_pod_event()).count()
    }
}

/// Churn touching `fraction` of the cluster's pods, each at most once: status updates (readiness, phase,
/// pending pods getting bound), pods moved to another node, deletions, and new replicas of existing
/// workloads; plus one node update (cordon or uncordon) per hundred pod events. Pods go to untainted nodes
/// but without a fit check: churn exercises the cache, not the scheduler. Deterministic in `seed`;
/// different seeds give new pods different names.
pub fn churn(cluster: &SyntheticCluster, fraction: f64, seed: u64) -> Churn {
    let mut rng = SplitMix64::new(seed ^ 0x6368_7572_6e5f_7469);
    let now = cluster.spec.now;
    let count = (cluster.pods.len() as f64 * share(fraction)).round() as usize;
    // Pods land where the scheduler would put them without tolerations: on untainted nodes (if any).
    let untainted = |n: &&Node| {
        n.spec
            .as_ref()
            .is_none_or(|s| s.taints.as_ref().is_none_or(Vec::is_empty))
    };
    let targets = if cluster.nodes.iter().any(|n| untainted(&n)) {
        cluster.nodes.iter().filter(untainted).collect::<Vec<_>>()
    } else {
        cluster.nodes.iter().collect()
    };
    let node_names: Vec<String> = targets
        .into_iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    let tag = base27(rng.next_u64() % 27u64.pow(6), 6);
    let mut out = Churn::default();
    let mut node_order = distinct(&mut rng, cluster.nodes.len(), count.div_ceil(100)).into_iter();
    for (serial, index) in distinct(&mut rng, cluster.pods.len(), count)
        .into_iter()
        .enumerate()
    {
        let Some(original) = cluster.pods.get(index) else {
            continue;
        };
        let (event, undo) = match rng.weighted(&[
            (PodChange::Status, 30),
            (PodChange::Move, 15),
            (PodChange::Delete, 25),
            (PodChange::Add, 30),
        ]) {
            PodChange::Status => (
                ChurnEvent::PodApplied(Box::new(status_update(
                    original,
                    now,
                    &node_names,
                    &mut rng,
                ))),
                ChurnEvent::PodApplied(Box::new(original.clone())),
            ),
            PodChange::Move => (
                ChurnEvent::PodApplied(Box::new(moved(original, now, &node_names, &mut rng))),
                ChurnEvent::PodApplied(Box::new(original.clone())),
            ),
            PodChange::Delete => (
                ChurnEvent::PodDeleted(key_of(&original.metadata)),
                ChurnEvent::PodApplied(Box::new(original.clone())),
            ),
            PodChange::Add => {
                let name = format!("{}a{tag}{}", name_base(original), base27(serial as u64, 5));
                let pod = replica(original, name, now, &node_names, &mut rng);
                let key = key_of(&pod.metadata);
                (
                    ChurnEvent::PodApplied(Box::new(pod)),
                    ChurnEvent::PodDeleted(key),
                )
            }
        };
        out.events.push(event);
        out.undo.push(undo);
        if serial % 100 == 99
            && let Some(node) = node_order.next().and_then(|i| cluster.nodes.get(i))
        {
            out.events
                .push(ChurnEvent::NodeApplied(Box::new(toggle_cordon(node, now))));
            out.undo
                .push(ChurnEvent::NodeApplied(Box::new(node.clone())));
        }
    }
    out.undo.reverse();
    out
}

#[derive(Clone, Copy)]
enum PodChange {
    Status,
    Move,
    Delete,
    Add,
}

// ---------------------------------------------------------------------------------------------------------
// Random numbers and names.

/// `count` distinct indices below `len` (all of them, shuffled, if `count >= len`).
fn distinct(rng: &mut SplitMix64, len: usize, count: usize) -> Vec<usize> {
    let mut all: Vec<usize> = (0..len).collect();
    let count = count.min(len);
    for i in 0..count {
        let j = i + rng.index(len - i);
        all.swap(i, j);
    }
    all.truncate(count);
    all
}

fn share(value: f64) -> f64 {
    if value.is_nan() {
        0.0
    } else {
        value.clamp(0.0, 1.0)
    }
}

/// The characters Kubernetes uses for generated name suffixes (no vowels, no look-alikes).
const SUFFIX_ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

fn base27(mut value: u64, digits: u32) -> String {
    let mut out = vec![b'b'; digits as usize];
    for slot in out.iter_mut().rev() {
        *slot = SUFFIX_ALPHABET[(value % 27) as usize];
        value /= 27;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A pod-name suffix unique for the first 27^5 (14 million) values of `serial`: multiplying by a number
/// prime to 27^5 permutes the suffixes, so they look random but never repeat.
fn pod_suffix(serial: u64) -> String {
    const SPACE: u64 = 27u64.pow(5);
    base27((serial % SPACE) * 7_368_787 % SPACE, 5)
}

/// A ReplicaSet's pod-template-hash, unique per serial in the same way.
fn template_hash(serial: u64) -> String {
    const SPACE: u128 = 27u128.pow(10);
    base27((u128::from(serial) * 123_456_789_011 % SPACE) as u64, 10)
}

fn ago(now: Timestamp, seconds: i64) -> Timestamp {
    now.checked_sub(SignedDuration::from_secs(seconds))
        .unwrap_or(now)
}

fn cpu(milli: i64) -> Quantity {
    if milli % 1000 == 0 {
        Quantity(format!("{}", milli / 1000))
    } else {
        Quantity(format!("{milli}m"))
    }
}

const MIB: i64 = 1 << 20;

fn memory(bytes: i64) -> Quantity {
    let mib = bytes / MIB;
    if mib % 1024 == 0 {
        Quantity(format!("{}Gi", mib / 1024))
    } else {
        Quantity(format!("{mib}Mi"))
    }
}

fn labels<const N: usize>(pairs: [(&str, &str); N]) -> BTreeMap<String, String> {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn key_of(meta: &ObjectMeta) -> ObjectKey {
    ObjectKey::new(
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

// ---------------------------------------------------------------------------------------------------------
// Nodes.

#[derive(Clone, Copy, Debug, Default)]
struct Capacity {
    milli_cpu: i64,
    memory: i64,
    pods: i64,
    gpus: i64,
}

impl Capacity {
    fn fits(&self, need: &Capacity) -> bool {
        need.milli_cpu <= self.milli_cpu
            && need.memory <= self.memory
            && need.pods <= self.pods
            && need.gpus <= self.gpus
    }

    fn take(&mut self, need: &Capacity) {
        self.milli_cpu -= need.milli_cpu;
        self.memory -= need.memory;
        self.pods -= need.pods;
        self.gpus -= need.gpus;
    }
}

struct Shape {
    instance_type: &'static str,
    milli_cpu: i64,
    memory_mib: i64,
    pods: i64,
    gpus: i64,
}

/// Allocatable amounts of common cloud instance types (after kubelet and system reservations).
static WORKER_SHAPES: [(Shape, u32); 4] = [
    (
        Shape {
            instance_type: "m6i.xlarge",
            milli_cpu: 3_920,
            memory_mib: 14_800,
            pods: 58,
            gpus: 0,
        },
        25,
    ),
    (
        Shape {
            instance_type: "m6i.2xlarge",
            milli_cpu: 7_910,
            memory_mib: 30_300,
            pods: 110,
            gpus: 0,
        },
        35,
    ),
    (
        Shape {
            instance_type: "m6i.4xlarge",
            milli_cpu: 15_890,
            memory_mib: 61_400,
            pods: 234,
            gpus: 0,
        },
        25,
    ),
    (
        Shape {
            instance_type: "m6i.16xlarge",
            milli_cpu: 63_770,
            memory_mib: 248_000,
            pods: 250,
            gpus: 0,
        },
        15,
    ),
];

static GPU_SHAPE: Shape = Shape {
    instance_type: "g5.12xlarge",
    milli_cpu: 47_810,
    memory_mib: 180_000,
    pods: 234,
    gpus: 4,
};

static CONTROL_PLANE_SHAPE: Shape = Shape {
    instance_type: "m6i.2xlarge",
    milli_cpu: 7_910,
    memory_mib: 30_300,
    pods: 110,
    gpus: 0,
};

const AVAILABILITY_ZONES: [&str; 3] = ["eu-west-1a", "eu-west-1b", "eu-west-1c"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    ControlPlane,
    Gpu,
    Worker,
}

struct NodePlan {
    name: String,
    role: Role,
    shape: &'static Shape,
    zone: Option<String>,
    availability_zone: &'static str,
    free: Capacity,
    /// How full the node is meant to get, relative to the others: the placement weight per core.
    load: f64,
    ready: bool,
    cordoned: bool,
    created: Timestamp,
}

fn plan_nodes(spec: &SyntheticSpec, rng: &mut SplitMix64) -> Vec<NodePlan> {
    let control_plane = if spec.nodes >= 10 {
        (spec.nodes / 1000).clamp(1, 3)
    } else {
        0
    };
    let with_gpus = spec.nodes >= 25;
    let mut zone_turn = 0;
    (0..spec.nodes)
        .map(|index| {
            let role = if index < control_plane {
                Role::ControlPlane
            } else if with_gpus && rng.chance(0.04) {
                Role::Gpu
            } else {
                Role::Worker
            };
            let shape = match role {
                Role::ControlPlane => &CONTROL_PLANE_SHAPE,
                Role::Gpu => &GPU_SHAPE,
                Role::Worker => {
                    let i = rng.weighted(&[(0, 25), (1, 35), (2, 25), (3, 15)]);
                    &WORKER_SHAPES[i].0
                }
            };
            let zone = (role == Role::Worker
                && spec.revocable_zones > 0
                && rng.chance(share(spec.revocable_node_share)))
            .then(|| {
                zone_turn += 1;
                format!("zone-{}", zone_turn % spec.revocable_zones)
            });
            let load = match rng.weighted(&[(0, 15), (1, 60), (2, 25)]) {
                0 => rng.uniform(0.02, 0.12),
                1 => rng.uniform(0.3, 0.75),
                _ => rng.uniform(0.85, 1.0),
            };
            NodePlan {
                name: format!("node-{index:05}"),
                role,
                shape,
                zone,
                availability_zone: rng.pick(&AVAILABILITY_ZONES),
                free: Capacity {
                    milli_cpu: shape.milli_cpu,
                    memory: shape.memory_mib * MIB,
                    pods: shape.pods,
                    gpus: shape.gpus,
                },
                load,
                ready: role == Role::ControlPlane || !rng.chance(0.01),
                cordoned: role != Role::ControlPlane && rng.chance(0.02),
                created: ago(spec.now, rng.between(3_600, 180 * 86_400)),
            }
        })
        .collect()
}

impl NodePlan {
    fn to_node(&self, now: Timestamp) -> Node {
        let shape = self.shape;
        let mut labels = labels([
            ("kubernetes.io/hostname", self.name.as_str()),
            ("kubernetes.io/os", "linux"),
            ("kubernetes.io/arch", "amd64"),
            ("node.kubernetes.io/instance-type", shape.instance_type),
            ("topology.kubernetes.io/region", "eu-west-1"),
            ("topology.kubernetes.io/zone", self.availability_zone),
        ]);
        let mut taints = Vec::new();
        let taint = |key: &str, value: Option<&str>, effect: &str| Taint {
            key: key.to_owned(),
            value: value.map(str::to_owned),
            effect: effect.to_owned(),
            time_added: None,
        };
        match self.role {
            Role::ControlPlane => {
                labels.insert(
                    "node-role.kubernetes.io/control-plane".into(),
                    String::new(),
                );
                taints.push(taint(
                    "node-role.kubernetes.io/control-plane",
                    None,
                    "NoSchedule",
                ));
            }
            Role::Gpu => {
                labels.insert("nvidia.com/gpu.present".into(), "true".into());
                taints.push(taint("nvidia.com/gpu", Some("present"), "NoSchedule"));
            }
            Role::Worker => {}
        }
        if let Some(zone) = &self.zone {
            labels.insert(labels::REVOCABLE_ZONE.into(), zone.clone());
        }
        if self.cordoned {
            taints.push(taint(
                "node.kubernetes.io/unschedulable",
                None,
                "NoSchedule",
            ));
        }
        if !self.ready {
            taints.push(taint("node.kubernetes.io/unreachable", None, "NoSchedule"));
            taints.push(taint("node.kubernetes.io/unreachable", None, "NoExecute"));
        }
        let mut allocatable = BTreeMap::from([
            ("cpu".to_owned(), cpu(shape.milli_cpu)),
            ("memory".to_owned(), memory(shape.memory_mib * MIB)),
            ("pods".to_owned(), Quantity(shape.pods.to_string())),
            (
                "ephemeral-storage".to_owned(),
                Quantity("95551679124".into()),
            ),
        ]);
        if shape.gpus > 0 {
            allocatable.insert("nvidia.com/gpu".into(), Quantity(shape.gpus.to_string()));
        }
        let mut capacity = allocatable.clone();
        capacity.insert("cpu".into(), cpu((shape.milli_cpu + 999) / 1000 * 1000));
        capacity.insert("ephemeral-storage".into(), Quantity("104845292Ki".into()));
        Node {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                uid: Some(format!("node-uid-{}", self.name)),
                labels: Some(labels),
                creation_timestamp: Some(Time(self.created)),
                ..ObjectMeta::default()
            },
            spec: Some(NodeSpec {
                unschedulable: self.cordoned.then_some(true),
                taints: (!taints.is_empty()).then_some(taints),
                provider_id: Some(format!("aws:///{}/i-{}", self.availability_zone, self.name)),
                ..NodeSpec::default()
            }),
            status: Some(NodeStatus {
                allocatable: Some(allocatable),
                capacity: Some(capacity),
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: if self.ready { "True" } else { "Unknown" }.into(),
                    reason: Some(
                        if self.ready {
                            "KubeletReady"
                        } else {
                            "NodeStatusUnknown"
                        }
                        .into(),
                    ),
                    last_transition_time: Some(Time(if self.ready {
                        self.created
                    } else {
                        ago(now, 600)
                    })),
                    last_heartbeat_time: Some(Time(ago(now, 30))),
                    message: None,
                }]),
                ..NodeStatus::default()
            }),
        }
    }
}

/// Picks nodes with probability proportional to their weight (cores × intended load).
struct Sampler {
    nodes: Vec<usize>,
    cumulative: Vec<f64>,
}

impl Sampler {
    fn new(nodes: &[NodePlan], include: impl Fn(&NodePlan) -> bool) -> Sampler {
        let mut sampler = Sampler {
            nodes: Vec::new(),
            cumulative: Vec::new(),
        };
        let mut total = 0.0;
        for (index, node) in nodes.iter().enumerate() {
            if include(node) {
                total += node.free.milli_cpu as f64 * node.load;
                sampler.nodes.push(index);
                sampler.cumulative.push(total);
            }
        }
        sampler
    }

    fn total(&self) -> f64 {
        self.cumulative.last().copied().unwrap_or(0.0)
    }

    fn sample(&self, rng: &mut SplitMix64) -> Option<usize> {
        let ticket = rng.unit() * self.total();
        let at = self.cumulative.partition_point(|c| *c <= ticket);
        self.nodes
            .get(at.min(self.nodes.len().saturating_sub(1)))
            .copied()
    }
}

// ---------------------------------------------------------------------------------------------------------
// Zones and the policy.

fn zones(spec: &SyntheticSpec) -> Vec<RevocableZone> {
    let weekdays = Weekday::ALL[..5].to_vec();
    (0..spec.revocable_zones)
        .map(|i| {
            let (windows, time_zone) = match i % 4 {
                0 => (vec![("08:00-20:00", weekdays.clone())], "Europe/Berlin"),
                1 => (vec![("22:00-06:00", Vec::new())], "UTC"),
                2 => (
                    vec![
                        ("09:00-12:00", weekdays.clone()),
                        ("13:00-18:00", weekdays.clone()),
                    ],
                    "America/New_York",
                ),
                _ => (
                    vec![("00:00-00:00", vec![Weekday::Sat, Weekday::Sun])],
                    "Asia/Shanghai",
                ),
            };
            let mut zone = RevocableZone::new(
                &format!("zone-{i}"),
                RevocableZoneSpec {
                    windows: windows
                        .into_iter()
                        .map(|(time, days)| WindowSpec {
                            time: time.to_owned(),
                            days,
                        })
                        .collect(),
                    time_zone: time_zone.to_owned(),
                    evict_period: GoDuration::from_secs(60 * (1 + i as u64 % 5)),
                    drain_before: DrainBefore::Fixed(GoDuration::from_secs(600)),
                    max_drain_before: GoDuration::from_secs(7_200),
                    budgets_after_close: BudgetsAfterClose::Respect,
                    taint_when_closed: true,
                    eviction_notice: None,
                },
            );
            zone.status = (i % 2 == 0).then(|| RevocableZoneStatus {
                last_eviction_round: Some(MicroTime(ago(spec.now, 3_600 + 600 * i as i64))),
                ..RevocableZoneStatus::default()
            });
            zone
        })
        .collect()
}

/// A dry-run policy running TDM. Benchmarks of other strategies switch theirs on in `spec.strategies`.
#[allow(
    clippy::needless_update,
    reason = "keeps compiling as strategies are added to `Strategies`"
)]
fn policy() -> DeschedulingPolicy {
    let mut policy = DeschedulingPolicy::new(
        "default",
        DeschedulingPolicySpec {
            interval: GoDuration::from_secs(300),
            mode: PolicyMode::DryRun,
            strategies: Strategies {
                tdm: Some(TdmArgs::default()),
                ..Strategies::default()
            },
            defaults: PolicyDefaults {
                cooldown: Some(GoDuration::from_secs(600)),
                job_budget: Some(JobBudgetSpec {
                    max_unavailable: Some(IntOrString::String("25%".into())),
                    min_available: None,
                }),
                ..PolicyDefaults::default()
            },
            limits: EvictionLimits {
                per_node: Some(5),
                per_namespace: Some(50),
                total: Some(500),
                ..EvictionLimits::default()
            },
            protections: Default::default(),
            namespaces: NamespaceFilter {
                include: Vec::new(),
                exclude: SYSTEM_NAMESPACES.iter().map(|n| (*n).to_owned()).collect(),
            },
            node_selector: None,
        },
    );
    policy.metadata.generation = Some(1);
    policy
}

const SYSTEM_NAMESPACES: [&str; 3] = ["kube-system", "monitoring", "logging"];

// ---------------------------------------------------------------------------------------------------------
// Pods.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Qos {
    BestEffort,
    Burstable,
    Guaranteed,
}

impl Qos {
    fn as_str(self) -> &'static str {
        match self {
            Qos::BestEffort => "BestEffort",
            Qos::Burstable => "Burstable",
            Qos::Guaranteed => "Guaranteed",
        }
    }
}

/// What a workload's pods run and request (their total over all containers).
#[derive(Clone, Debug)]
struct Template {
    image: &'static str,
    milli_cpu: i64,
    memory: i64,
    gpus: i64,
    qos: Qos,
    sidecar: bool,
    init: bool,
}

impl Template {
    fn needs(&self) -> Capacity {
        let (milli_cpu, memory) = match self.qos {
            Qos::BestEffort => (0, 0),
            _ => (self.milli_cpu, self.memory),
        };
        Capacity {
            milli_cpu,
            memory,
            pods: 1,
            gpus: self.gpus,
        }
    }

    fn containers(&self) -> (Vec<Container>, Option<Vec<Container>>) {
        let container = |name: &str, image: &str, milli_cpu: i64, mem: i64, gpus: i64| {
            let resources = match self.qos {
                Qos::BestEffort => None,
                qos => {
                    let mut requests = BTreeMap::from([
                        ("cpu".to_owned(), cpu(milli_cpu)),
                        ("memory".to_owned(), memory(mem)),
                    ]);
                    let mut limits = if qos == Qos::Guaranteed {
                        requests.clone()
                    } else {
                        BTreeMap::from([("memory".to_owned(), memory(mem / MIB * 3 / 2 * MIB))])
                    };
                    if gpus > 0 {
                        requests.insert("nvidia.com/gpu".into(), Quantity(gpus.to_string()));
                        limits.insert("nvidia.com/gpu".into(), Quantity(gpus.to_string()));
                    }
                    Some(ResourceRequirements {
                        requests: Some(requests),
                        limits: Some(limits),
                        ..ResourceRequirements::default()
                    })
                }
            };
            Container {
                name: name.to_owned(),
                image: Some(image.to_owned()),
                resources,
                ..Container::default()
            }
        };
        let (side_cpu, side_memory) = if self.sidecar {
            (
                (self.milli_cpu / 4).min(50),
                (self.memory / 4).min(64 * MIB) / MIB * MIB,
            )
        } else {
            (0, 0)
        };
        let mut containers = vec![container(
            "main",
            self.image,
            self.milli_cpu - side_cpu,
            self.memory - side_memory,
            self.gpus,
        )];
        if self.sidecar {
            containers.push(container(
                "proxy",
                "envoyproxy/envoy:v1.31",
                side_cpu,
                side_memory,
                0,
            ));
        }
        // Smaller than the app containers, so it never raises the pod's requests.
        let init = self.init.then(|| {
            vec![container(
                "init",
                "busybox:1.36",
                self.milli_cpu.min(10),
                self.memory.min(16 * MIB),
                0,
            )]
        });
        (containers, init)
    }
}

/// Everything one pod object is built from.
struct PodDraft {
    namespace: String,
    name: String,
    generate_name: Option<String>,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    owner: Option<OwnerReference>,
    template: Template,
    priority: (&'static str, i32),
    scheduler: &'static str,
    tolerations: Vec<Toleration>,
    restart_policy: &'static str,
    node: Option<String>,
    phase: &'static str,
    created: Timestamp,
    scheduled: Option<Timestamp>,
    deleted: Option<Timestamp>,
}

impl PodDraft {
    fn into_pod(self, rng: &mut SplitMix64) -> Pod {
        let (containers, init_containers) = self.template.containers();
        let running = self.phase == "Running";
        let mut conditions = vec![match self.scheduled {
            Some(at) if self.node.is_some() => condition("PodScheduled", "True", None, at),
            _ => condition("PodScheduled", "False", Some("Unschedulable"), self.created),
        }];
        if let Some(at) = self.scheduled.filter(|_| self.node.is_some()) {
            let ready = if running { "True" } else { "False" };
            let reason = (!running)
                .then_some("PodCompleted")
                .filter(|_| self.phase != "Pending");
            conditions.push(condition("Ready", ready, reason, at));
        }
        Pod {
            metadata: ObjectMeta {
                name: Some(self.name),
                generate_name: self.generate_name,
                namespace: Some(self.namespace),
                uid: Some(rng.uid()),
                labels: (!self.labels.is_empty()).then_some(self.labels),
                annotations: (!self.annotations.is_empty()).then_some(self.annotations),
                owner_references: self.owner.map(|o| vec![o]),
                creation_timestamp: Some(Time(self.created)),
                deletion_timestamp: self.deleted.map(Time),
                deletion_grace_period_seconds: self.deleted.map(|_| 30),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                containers,
                init_containers,
                node_name: self.node,
                priority: Some(self.priority.1),
                priority_class_name: (!self.priority.0.is_empty())
                    .then(|| self.priority.0.to_owned()),
                scheduler_name: Some(self.scheduler.to_owned()),
                tolerations: (!self.tolerations.is_empty()).then_some(self.tolerations),
                restart_policy: Some(self.restart_policy.to_owned()),
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                phase: Some(self.phase.to_owned()),
                qos_class: Some(self.template.qos.as_str().to_owned()),
                conditions: Some(conditions),
                start_time: self.scheduled.map(Time),
                ..PodStatus::default()
            }),
        }
    }
}

fn condition(type_: &str, status: &str, reason: Option<&str>, at: Timestamp) -> PodCondition {
    PodCondition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.map(str::to_owned),
        last_transition_time: Some(Time(at)),
        ..PodCondition::default()
    }
}

fn owner(api_version: &str, kind: &str, name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        uid: uid.to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn toleration(key: &str, effect: Option<&str>) -> Toleration {
    Toleration {
        key: Some(key.to_owned()),
        operator: Some("Exists".to_owned()),
        effect: effect.map(str::to_owned),
        toleration_seconds: None,
        value: None,
    }
}

/// DaemonSets: namespace, name, image, cpu (m), memory (Mi).
const DAEMONSETS: [(&str, &str, &str, i64, i64); 5] = [
    (
        "kube-system",
        "kube-proxy",
        "registry.k8s.io/kube-proxy:v1.33.1",
        100,
        128,
    ),
    (
        "kube-system",
        "cilium",
        "quay.io/cilium/cilium:v1.17.4",
        250,
        256,
    ),
    (
        "monitoring",
        "node-exporter",
        "quay.io/prometheus/node-exporter:v1.9.1",
        50,
        64,
    ),
    (
        "logging",
        "fluent-bit",
        "cr.fluentbit.io/fluent/fluent-bit:4.0",
        100,
        200,
    ),
    (
        "kube-system",
        "ebs-csi-node",
        "public.ecr.aws/ebs-csi-driver:v1.44",
        30,
        120,
    ),
];

/// Static pods of a control-plane node: name prefix, cpu (m), memory (Mi).
const STATIC_PODS: [(&str, i64, i64); 4] = [
    ("etcd", 100, 100),
    ("kube-apiserver", 250, 512),
    ("kube-controller-manager", 200, 256),
    ("kube-scheduler", 100, 128),
];

const WORDS: [&str; 16] = [
    "api", "web", "worker", "cache", "etl", "trainer", "ingest", "search", "billing", "auth",
    "feed", "render", "notify", "report", "stream", "infer",
];

const IMAGES: [&str; 6] = [
    "registry.example.com/app:1.4.2",
    "registry.example.com/app:1.5.0",
    "nginx:1.27",
    "redis:7.4",
    "python:3.12-slim",
    "eclipse-temurin:21-jre",
];

/// Requests per pod before scaling to the cluster: cpu (m) and its weight.
const CPU_SIZES: [(i64, u32); 8] = [
    (50, 15),
    (100, 20),
    (200, 15),
    (250, 15),
    (500, 15),
    (1000, 10),
    (2000, 7),
    (4000, 3),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Deployment,
    StatefulSet,
    BatchJob,
    VolcanoJob,
    Bare,
}

struct Workload {
    kind: Kind,
    namespace: String,
    name: String,
    uid: String,
    replicas: usize,
    template: Template,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    priority: (&'static str, i32),
    preemptable: bool,
    created: Timestamp,
    template_hash: String,
}

/// Where pods go. Non-preemptable pods stay off revocable nodes; preemptable ones go there with the
/// probability that makes both kinds of nodes fill as their intended loads say, as far as demand allows.
struct Pools {
    general: Sampler,
    revocable: Sampler,
    gpu: Sampler,
    /// Probability that a preemptable pod goes to a revocable node.
    to_revocable: f64,
    /// Factor on requests (except GPU jobs') that makes the fuller pool as full as intended.
    scale: f64,
}

impl Pools {
    fn new(nodes: &[NodePlan], workloads: &[Workload]) -> Pools {
        let general = Sampler::new(nodes, |n| n.role == Role::Worker && n.zone.is_none());
        let revocable = Sampler::new(nodes, |n| n.role == Role::Worker && n.zone.is_some());
        let gpu = Sampler::new(nodes, |n| n.role == Role::Gpu);
        let (mut fixed, mut preemptable) = (0.0, 0.0);
        for workload in workloads.iter().filter(|w| w.template.gpus == 0) {
            let demand = workload.replicas as f64 * workload.template.needs().milli_cpu as f64;
            if workload.preemptable {
                preemptable += demand;
            } else {
                fixed += demand;
            }
        }
        let (general_room, revocable_room) = (general.total(), revocable.total());
        let room = general_room + revocable_room;
        let to_revocable = if preemptable > 0.0 && room > 0.0 {
            (revocable_room / room * (fixed + preemptable) / preemptable).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let ratios = [
            (general_room, fixed + (1.0 - to_revocable) * preemptable),
            (revocable_room, to_revocable * preemptable),
        ];
        let scale = ratios
            .iter()
            .filter(|(room, demand)| *room > 0.0 && *demand > 0.0)
            .map(|(room, demand)| room / demand)
            .fold(f64::INFINITY, f64::min);
        Pools {
            general,
            revocable,
            gpu,
            to_revocable,
            scale: if scale.is_finite() {
                scale.clamp(0.05, 20.0)
            } else {
                1.0
            },
        }
    }

    fn pick(
        &self,
        template: &Template,
        may_revoke: bool,
        must_revoke: bool,
        rng: &mut SplitMix64,
    ) -> &Sampler {
        let wanted = if template.gpus > 0 {
            &self.gpu
        } else if must_revoke || (may_revoke && rng.chance(self.to_revocable)) {
            &self.revocable
        } else {
            &self.general
        };
        [wanted, &self.general, &self.revocable]
            .into_iter()
            .find(|pool| !pool.nodes.is_empty())
            .unwrap_or(wanted)
    }
}

struct Generator<'a> {
    spec: &'a SyntheticSpec,
    nodes: Vec<NodePlan>,
    rng: SplitMix64,
    /// Where each pod goes once made, and how many have gone.
    each: &'a mut dyn FnMut(Pod),
    made: usize,
    podgroups: Vec<PodGroup>,
    pdbs: Vec<PodDisruptionBudget>,
    /// Serial numbers for generated name suffixes.
    names: u64,
}

impl Generator<'_> {
    fn emit(&mut self, pod: Pod) {
        self.made += 1;
        (self.each)(pod);
    }

    fn next_serial(&mut self) -> u64 {
        self.names += 1;
        self.names
    }

    fn room(&self) -> usize {
        self.spec.pods.saturating_sub(self.made)
    }

    /// DaemonSet pods on every node, then static pods on control-plane nodes, as far as `pods` allows.
    fn system_pods(&mut self) {
        let nodes = self.nodes.len().max(1);
        let daemonsets = self
            .spec
            .daemonsets
            .min(DAEMONSETS.len())
            .min(self.spec.pods / nodes);
        for &(namespace, name, image, milli_cpu, mem) in &DAEMONSETS[..daemonsets] {
            let uid = self.rng.uid();
            for index in 0..self.nodes.len() {
                let node = &self.nodes[index];
                let template = Template {
                    image,
                    milli_cpu,
                    memory: mem * MIB,
                    gpus: 0,
                    qos: Qos::Burstable,
                    sidecar: false,
                    init: false,
                };
                let created = node.created;
                let node_name = node.name.clone();
                self.nodes[index].free.take(&template.needs());
                let serial = self.next_serial();
                let draft = PodDraft {
                    namespace: namespace.to_owned(),
                    name: format!("{name}-{}", pod_suffix(serial)),
                    generate_name: Some(format!("{name}-")),
                    labels: labels([("app.kubernetes.io/name", name)]),
                    annotations: BTreeMap::new(),
                    owner: Some(owner("apps/v1", "DaemonSet", name, &uid)),
                    template,
                    priority: ("system-node-critical", 2_000_001_000),
                    scheduler: "default-scheduler",
                    tolerations: vec![Toleration {
                        operator: Some("Exists".into()),
                        ..Toleration::default()
                    }],
                    restart_policy: "Always",
                    node: Some(node_name),
                    phase: "Running",
                    created,
                    scheduled: Some(created),
                    deleted: None,
                };
                let pod = draft.into_pod(&mut self.rng);
                self.emit(pod);
            }
        }
        for index in 0..self.nodes.len() {
            if self.nodes[index].role != Role::ControlPlane {
                continue;
            }
            for &(name, milli_cpu, mem) in &STATIC_PODS {
                if self.room() == 0 {
                    return;
                }
                let node = &self.nodes[index];
                let node_name = node.name.clone();
                let created = node.created;
                let template = Template {
                    image: "registry.k8s.io/control-plane:v1.33.1",
                    milli_cpu,
                    memory: mem * MIB,
                    gpus: 0,
                    qos: Qos::Burstable,
                    sidecar: false,
                    init: false,
                };
                self.nodes[index].free.take(&template.needs());
                let hash = format!("{:032x}", self.rng.next_u64());
                let draft = PodDraft {
                    namespace: "kube-system".into(),
                    name: format!("{name}-{node_name}"),
                    generate_name: None,
                    labels: labels([("component", name), ("tier", "control-plane")]),
                    annotations: labels([
                        (labels::MIRROR_POD, hash.as_str()),
                        ("kubernetes.io/config.hash", hash.as_str()),
                        ("kubernetes.io/config.source", "file"),
                    ]),
                    owner: Some(owner(
                        "v1",
                        "Node",
                        &node_name,
                        &format!("node-uid-{node_name}"),
                    )),
                    template,
                    priority: ("system-node-critical", 2_000_001_000),
                    scheduler: "default-scheduler",
                    tolerations: vec![toleration("", Some("NoExecute"))],
                    restart_policy: "Always",
                    node: Some(node_name),
                    phase: "Running",
                    created,
                    scheduled: Some(created),
                    deleted: None,
                };
                let pod = draft.into_pod(&mut self.rng);
                self.emit(pod);
            }
        }
    }

    /// Decides every application workload (kind, size, annotations) until the pod budget is spent, and
    /// creates their PodGroups and PDBs.
    fn plan_workloads(&mut self) -> Vec<Workload> {
        let spec = self.spec;
        let mut remaining = self.room();
        let mut assigned = 0usize;
        let mut volcano_pods = 0usize;
        let mut workloads = Vec::new();
        // GPU jobs ask for at most 80% of the GPUs, so that they do not pile up as pending pods.
        let mut gpus_left: i64 = self.nodes.iter().map(|n| n.free.gpus).sum::<i64>() * 4 / 5;
        let zones: Vec<String> = (0..spec.revocable_zones)
            .map(|i| format!("zone-{i}"))
            .collect();
        while remaining > 0 {
            let rng = &mut self.rng;
            // Volcano jobs by deficit rather than by chance, so that their share of pods is exact.
            let kind = if (volcano_pods as f64) < share(spec.podgroup_share) * assigned as f64 {
                Kind::VolcanoJob
            } else {
                rng.weighted(&[
                    (Kind::Deployment, 60),
                    (Kind::StatefulSet, 12),
                    (Kind::BatchJob, 22),
                    (Kind::Bare, 6),
                ])
            };
            let replicas = match kind {
                Kind::Deployment => {
                    match rng.weighted(&[(0, 20), (1, 50), (2, 20), (3, 8), (4, 2)]) {
                        0 => 1,
                        1 => rng.between(2, 3),
                        2 => rng.between(4, 8),
                        3 => rng.between(9, 30),
                        _ => rng.between(31, 100),
                    }
                }
                Kind::StatefulSet => rng.between(1, 5),
                Kind::BatchJob => rng.between(1, 10),
                Kind::VolcanoJob => {
                    if rng.chance(0.1) {
                        rng.between(17, 64)
                    } else {
                        rng.between(2, 16)
                    }
                }
                Kind::Bare => 1,
            } as usize;
            let replicas = replicas.min(remaining);
            remaining -= replicas;
            assigned += replicas;
            if kind == Kind::VolcanoJob {
                volcano_pods += replicas;
            }

            // Skewed towards the first namespaces, as real tenants are.
            let namespace = format!(
                "team-{:03}",
                (spec.namespaces.max(1) as f64 * rng.unit().powi(2)) as usize
            );
            let serial = self.next_serial();
            let rng = &mut self.rng;
            let name = format!("{}-{serial}", rng.pick(&WORDS));
            let milli_cpu = rng.weighted(&CPU_SIZES);
            let gpus = match rng.between(1, 4) {
                per_pod
                    if kind == Kind::VolcanoJob
                        && per_pod * replicas as i64 <= gpus_left
                        && rng.chance(0.2) =>
                {
                    gpus_left -= per_pod * replicas as i64;
                    per_pod
                }
                _ => 0,
            };
            let template = Template {
                image: rng.pick(&IMAGES),
                milli_cpu,
                memory: (milli_cpu as f64 * rng.uniform(1.5, 5.5)) as i64 * MIB,
                gpus,
                qos: if gpus > 0 {
                    Qos::Guaranteed
                } else {
                    rng.weighted(&[
                        (Qos::BestEffort, 10),
                        (Qos::Burstable, 60),
                        (Qos::Guaranteed, 30),
                    ])
                },
                sidecar: rng.chance(0.2),
                init: rng.chance(0.1),
            };
            let priority = match kind {
                Kind::StatefulSet => ("high", 100_000),
                Kind::VolcanoJob => ("batch", 100),
                Kind::BatchJob => rng.pick(&[("", 0), ("low", -10)]),
                Kind::Deployment => {
                    rng.pick(&[("", 0), ("", 0), ("standard", 1_000), ("high", 100_000)])
                }
                Kind::Bare => ("", 0),
            };
            let mut workload = Workload {
                kind,
                namespace,
                uid: rng.uid(),
                replicas,
                template,
                labels: labels([("app", name.as_str())]),
                annotations: BTreeMap::new(),
                priority,
                preemptable: rng.chance(share(spec.preemptable_share)),
                created: ago(spec.now, rng.between(3_600, 90 * 86_400)),
                template_hash: template_hash(serial),
                name,
            };
            self.annotate(&mut workload, &zones);
            match kind {
                Kind::VolcanoJob => self.podgroup(&mut workload),
                Kind::Deployment | Kind::StatefulSet if replicas >= 2 && self.rng.chance(0.3) => {
                    self.pdb(&workload);
                }
                _ => {}
            }
            workloads.push(workload);
        }
        workloads
    }

    /// tidal's annotations on a workload's pods: preemptable, zone opt-in, cooldown, and a few mistakes.
    fn annotate(&mut self, workload: &mut Workload, zones: &[String]) {
        let rng = &mut self.rng;
        let annotations = &mut workload.annotations;
        // Volcano jobs say it on their PodGroup (see `podgroup`).
        if workload.kind != Kind::VolcanoJob {
            if workload.preemptable {
                if rng.chance(0.3) {
                    workload
                        .labels
                        .insert(labels::PREEMPTABLE.into(), "true".into());
                } else {
                    annotations.insert(labels::PREEMPTABLE.into(), "true".into());
                }
            } else if rng.chance(0.05) {
                annotations.insert(labels::PREEMPTABLE.into(), "false".into());
            }
        }
        if workload.preemptable && rng.chance(0.25) {
            let zone = if zones.is_empty() || rng.chance(0.6) {
                "*".to_owned()
            } else {
                zones[rng.index(zones.len())].clone()
            };
            annotations.insert(labels::REVOCABLE_ZONE.into(), zone);
        }
        if rng.chance(share(self.spec.cooldown_share)) {
            let cooldown = rng.pick(&["5m", "10m", "30m", "1h", "2h", "90s"]);
            annotations.insert(labels::COOLDOWN_TIME.into(), cooldown.into());
        }
        if rng.chance(0.005) {
            annotations.insert(labels::DESCHEDULER_EVICT.into(), "true".into());
        }
        if rng.chance(share(self.spec.malformed_share)) {
            let (key, value) = rng.pick(&[
                (labels::COOLDOWN_TIME, "ten minutes"),
                (labels::PREEMPTABLE, "maybe"),
                (labels::MAX_UNAVAILABLE[0], "150%"),
                (labels::MIN_AVAILABLE[0], "-1"),
            ]);
            annotations.insert(key.into(), value.into());
        }
    }

    fn podgroup(&mut self, workload: &mut Workload) {
        let rng = &mut self.rng;
        let replicas = workload.replicas as i32;
        let mut meta_labels = BTreeMap::new();
        let mut meta_annotations = BTreeMap::new();
        if workload.preemptable {
            if rng.chance(0.6) {
                meta_annotations.insert(labels::PREEMPTABLE.to_owned(), "true".to_owned());
            } else {
                // Said on the pods instead, where Volcano also reads it.
                workload
                    .annotations
                    .insert(labels::PREEMPTABLE.into(), "true".into());
            }
        }
        match rng.weighted(&[(0, 40), (1, 15), (2, 45)]) {
            0 => {
                let value = rng.pick(&["1", "2", "25%", "50%"]);
                meta_annotations.insert(labels::MAX_UNAVAILABLE[0].to_owned(), value.to_owned());
            }
            1 => {
                let value = if rng.chance(0.5) {
                    (replicas - 1).max(0).to_string()
                } else {
                    "75%".to_owned()
                };
                meta_annotations.insert(labels::MIN_AVAILABLE[0].to_owned(), value);
            }
            _ => {}
        }
        let queue = rng.pick(&["default", "batch", "research"]);
        meta_labels.insert("volcano.sh/queue-name".to_owned(), queue.to_owned());
        let mut group = PodGroup::new(
            &workload.name,
            PodGroupSpec {
                min_member: Some(if rng.chance(0.8) {
                    replicas
                } else {
                    (replicas / 2).max(1)
                }),
                queue: Some(queue.to_owned()),
            },
        );
        group.metadata.namespace = Some(workload.namespace.clone());
        group.metadata.uid = Some(rng.uid());
        group.metadata.labels = Some(meta_labels);
        group.metadata.annotations = Some(meta_annotations);
        group.metadata.creation_timestamp = Some(Time(workload.created));
        workload
            .annotations
            .insert(labels::GROUP_NAME.into(), workload.name.clone());
        workload
            .labels
            .insert("volcano.sh/job-name".into(), workload.name.clone());
        workload
            .labels
            .insert("volcano.sh/queue-name".into(), queue.to_owned());
        self.podgroups.push(group);
    }

    fn pdb(&mut self, workload: &Workload) {
        let rng = &mut self.rng;
        let replicas = workload.replicas as i32;
        let (min_available, max_unavailable, desired) =
            match rng.weighted(&[(0, 45), (1, 40), (2, 15)]) {
                0 => (None, Some(IntOrString::Int(1)), replicas - 1),
                1 => (Some(IntOrString::Int(replicas - 1)), None, replicas - 1),
                // Blocks every voluntary disruption.
                _ => (Some(IntOrString::String("100%".into())), None, replicas),
            };
        self.pdbs.push(PodDisruptionBudget {
            metadata: ObjectMeta {
                name: Some(workload.name.clone()),
                namespace: Some(workload.namespace.clone()),
                uid: Some(rng.uid()),
                creation_timestamp: Some(Time(workload.created)),
                ..ObjectMeta::default()
            },
            spec: Some(PodDisruptionBudgetSpec {
                min_available,
                max_unavailable,
                selector: Some(LabelSelector {
                    match_labels: Some(labels([("app", workload.name.as_str())])),
                    match_expressions: None,
                }),
                unhealthy_pod_eviction_policy: None,
            }),
            status: Some(PodDisruptionBudgetStatus {
                current_healthy: replicas,
                desired_healthy: desired,
                disruptions_allowed: (replicas - desired).max(0),
                expected_pods: replicas,
                ..PodDisruptionBudgetStatus::default()
            }),
        });
    }

    /// Scales requests so that the cluster fills as the nodes' intended loads say, then places every pod.
    fn place_workloads(&mut self, workloads: &[Workload]) {
        let pools = Pools::new(&self.nodes, workloads);
        for workload in workloads {
            let mut template = workload.template.clone();
            if template.gpus == 0 {
                template.milli_cpu =
                    ((template.milli_cpu as f64 * pools.scale / 5.0).round() as i64 * 5).max(5);
                template.memory =
                    ((template.memory as f64 * pools.scale / MIB as f64).round() as i64).max(16)
                        * MIB;
            }
            // A few land in revocable zones anyway: TDM's placement violations.
            let violation = !workload.preemptable && self.rng.chance(0.005);
            for replica in 0..workload.replicas {
                let pool = pools.pick(
                    &template,
                    workload.preemptable || violation,
                    violation,
                    &mut self.rng,
                );
                self.place_pod(workload, &template, replica, pool);
            }
        }
    }

    /// A node of `pool` the pod fits on: sampled by weight, else the first with room from a random start.
    fn find_node(&mut self, pool: &Sampler, needs: &Capacity) -> Option<usize> {
        for _ in 0..8 {
            let index = pool.sample(&mut self.rng)?;
            if self.nodes[index].free.fits(needs) {
                return Some(index);
            }
        }
        let start = self.rng.index(pool.nodes.len());
        let (before, after) = pool.nodes.split_at(start);
        after
            .iter()
            .chain(before)
            .copied()
            .find(|&index| self.nodes[index].free.fits(needs))
    }

    fn place_pod(
        &mut self,
        workload: &Workload,
        template: &Template,
        replica: usize,
        pool: &Sampler,
    ) {
        let spec = self.spec;
        let finished = match workload.kind {
            Kind::BatchJob => {
                self.rng
                    .weighted(&[(None, 70), (Some("Succeeded"), 25), (Some("Failed"), 5)])
            }
            _ => None,
        };
        let needs = template.needs();
        let node = if finished.is_some() {
            // Finished pods hold nothing, so any node of the pool will do.
            pool.sample(&mut self.rng)
        } else if self.rng.chance(share(spec.pending_share)) {
            None
        } else {
            self.find_node(pool, &needs)
        };
        if let (Some(index), None) = (node, finished) {
            self.nodes[index].free.take(&needs);
        }
        let rng = &mut self.rng;
        // Most pods have run a while; one in ten was (re)scheduled within the last half hour, inside
        // typical cooldowns.
        let age = if rng.chance(0.1) {
            rng.between(10, 1_800)
        } else {
            rng.between(1_800, 60 * 86_400)
        };
        let created = ago(spec.now, age);
        let scheduled = node.map(|_| {
            created
                .checked_add(SignedDuration::from_secs(rng.between(0, 10)))
                .unwrap_or(created)
        });
        let phase = match (node, finished) {
            (None, _) => "Pending",
            (Some(_), Some(phase)) => phase,
            (Some(_), None) if rng.chance(0.005) => "Pending",
            (Some(_), None) => "Running",
        };
        let deleted = (node.is_some() && rng.chance(share(spec.terminating_share)))
            .then(|| ago(spec.now, rng.between(0, 120)));
        let (name, generate_name, owner, mut labels) = self.identity(workload, replica);
        labels.extend(workload.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
        let mut tolerations = vec![
            toleration("node.kubernetes.io/not-ready", Some("NoExecute")),
            toleration("node.kubernetes.io/unreachable", Some("NoExecute")),
        ];
        if template.gpus > 0 {
            tolerations.push(toleration("nvidia.com/gpu", Some("NoSchedule")));
        }
        let draft = PodDraft {
            namespace: workload.namespace.clone(),
            name,
            generate_name,
            labels,
            annotations: workload.annotations.clone(),
            owner,
            template: template.clone(),
            priority: workload.priority,
            scheduler: if workload.kind == Kind::VolcanoJob {
                "volcano"
            } else {
                "default-scheduler"
            },
            tolerations,
            restart_policy: match workload.kind {
                Kind::BatchJob | Kind::VolcanoJob => "Never",
                _ => "Always",
            },
            node: node.and_then(|i| self.nodes.get(i)).map(|n| n.name.clone()),
            phase,
            created: created.max(workload.created),
            scheduled: scheduled.map(|s| s.max(workload.created)),
            deleted,
        };
        let pod = draft.into_pod(&mut self.rng);
        self.emit(pod);
    }

    /// Name, generateName, controller and identifying labels of one replica, as its controller names it.
    fn identity(
        &mut self,
        workload: &Workload,
        replica: usize,
    ) -> (
        String,
        Option<String>,
        Option<OwnerReference>,
        BTreeMap<String, String>,
    ) {
        let name = &workload.name;
        match workload.kind {
            Kind::Deployment => {
                let replica_set = format!("{name}-{}", workload.template_hash);
                let serial = self.next_serial();
                (
                    format!("{replica_set}-{}", pod_suffix(serial)),
                    Some(format!("{replica_set}-")),
                    Some(owner("apps/v1", "ReplicaSet", &replica_set, &workload.uid)),
                    labels([("pod-template-hash", workload.template_hash.as_str())]),
                )
            }
            Kind::StatefulSet => {
                let pod = format!("{name}-{replica}");
                let index = replica.to_string();
                let labels = labels([
                    ("statefulset.kubernetes.io/pod-name", pod.as_str()),
                    ("apps.kubernetes.io/pod-index", index.as_str()),
                ]);
                (
                    pod,
                    None,
                    Some(owner("apps/v1", "StatefulSet", name, &workload.uid)),
                    labels,
                )
            }
            Kind::BatchJob => {
                let serial = self.next_serial();
                (
                    format!("{name}-{}", pod_suffix(serial)),
                    Some(format!("{name}-")),
                    Some(owner("batch/v1", "Job", name, &workload.uid)),
                    labels([
                        ("batch.kubernetes.io/job-name", name.as_str()),
                        ("job-name", name.as_str()),
                    ]),
                )
            }
            Kind::VolcanoJob => {
                let task = if replica == 0 && workload.replicas >= 4 {
                    "master"
                } else {
                    "worker"
                };
                (
                    format!("{name}-{task}-{replica}"),
                    None,
                    Some(owner(
                        "batch.volcano.sh/v1alpha1",
                        "Job",
                        name,
                        &workload.uid,
                    )),
                    labels([("volcano.sh/task-spec", task)]),
                )
            }
            Kind::Bare => (name.clone(), None, None, BTreeMap::new()),
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Churn.

fn pod_phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref())
}

fn set_phase(pod: &mut Pod, phase: &str) {
    if let Some(status) = pod.status.as_mut() {
        status.phase = Some(phase.to_owned());
    }
}

/// Records a (re)binding at `at`, as the scheduler and kubelet would.
fn bind(pod: &mut Pod, node: String, at: Timestamp) {
    if let Some(spec) = pod.spec.as_mut() {
        spec.node_name = Some(node);
    }
    let status = pod.status.get_or_insert_with(PodStatus::default);
    status.phase = Some("Running".into());
    status.start_time = Some(Time(at));
    status.conditions = Some(vec![
        condition("PodScheduled", "True", None, at),
        condition("Ready", "True", None, at),
    ]);
}

fn random_node(names: &[String], rng: &mut SplitMix64, avoid: Option<&str>) -> Option<String> {
    let first = names.get(rng.index(names.len()))?;
    if Some(first.as_str()) != avoid {
        return Some(first.clone());
    }
    names.iter().find(|n| Some(n.as_str()) != avoid).cloned()
}

/// A status change: a pending pod gets bound, a job pod finishes, a running pod fails or flips readiness.
fn status_update(original: &Pod, now: Timestamp, nodes: &[String], rng: &mut SplitMix64) -> Pod {
    let mut pod = original.clone();
    let is_batch = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == "Job");
    match (node_of(original), pod_phase(original)) {
        (None, _) => {
            if let Some(node) = random_node(nodes, rng, None) {
                bind(&mut pod, node, now);
            }
        }
        (Some(_), "Running") if is_batch => set_phase(&mut pod, "Succeeded"),
        (Some(_), "Running") if rng.chance(0.1) => set_phase(&mut pod, "Failed"),
        (Some(_), "Pending") => set_phase(&mut pod, "Running"),
        _ => {
            let ready = pod
                .status
                .as_mut()
                .and_then(|s| s.conditions.as_mut())
                .and_then(|c| c.iter_mut().find(|c| c.type_ == "Ready"));
            if let Some(ready) = ready {
                ready.status = if ready.status == "True" {
                    "False"
                } else {
                    "True"
                }
                .into();
                ready.last_transition_time = Some(Time(now));
            }
        }
    }
    pod
}

/// The same pod on another node: not something Kubernetes does, but what a cache must survive (a delete
/// and re-create under the same name seen as one update after a relist).
fn moved(original: &Pod, now: Timestamp, nodes: &[String], rng: &mut SplitMix64) -> Pod {
    let mut pod = original.clone();
    if let Some(node) = random_node(nodes, rng, node_of(original)) {
        bind(&mut pod, node, now);
    }
    pod
}

fn name_base(pod: &Pod) -> String {
    match (&pod.metadata.generate_name, &pod.metadata.name) {
        (Some(prefix), _) => prefix.clone(),
        (None, Some(name)) => format!("{name}-"),
        (None, None) => String::new(),
    }
}

/// A new pod of the same workload, just created: pending, or already bound and running.
fn replica(
    original: &Pod,
    name: String,
    now: Timestamp,
    nodes: &[String],
    rng: &mut SplitMix64,
) -> Pod {
    let mut pod = original.clone();
    let created = ago(now, rng.between(0, 60));
    pod.metadata.name = Some(name);
    pod.metadata.uid = Some(rng.uid());
    pod.metadata.creation_timestamp = Some(Time(created));
    pod.metadata.deletion_timestamp = None;
    pod.metadata.deletion_grace_period_seconds = None;
    if let Some(spec) = pod.spec.as_mut() {
        spec.node_name = None;
    }
    pod.status = Some(PodStatus {
        phase: Some("Pending".into()),
        qos_class: original.status.as_ref().and_then(|s| s.qos_class.clone()),
        conditions: Some(vec![condition(
            "PodScheduled",
            "False",
            Some("Unschedulable"),
            created,
        )]),
        ..PodStatus::default()
    });
    if rng.chance(0.9)
        && let Some(node) = random_node(nodes, rng, None)
    {
        bind(&mut pod, node, created);
    }
    pod
}

fn toggle_cordon(original: &Node, now: Timestamp) -> Node {
    let mut node = original.clone();
    let spec = node.spec.get_or_insert_with(NodeSpec::default);
    let cordon = spec.unschedulable != Some(true);
    spec.unschedulable = cordon.then_some(true);
    let mut taints = spec.taints.take().unwrap_or_default();
    taints.retain(|t| t.key != "node.kubernetes.io/unschedulable");
    if cordon {
        taints.push(Taint {
            key: "node.kubernetes.io/unschedulable".into(),
            value: None,
            effect: "NoSchedule".into(),
            time_added: Some(Time(now)),
        });
    }
    spec.taints = (!taints.is_empty()).then_some(taints);
    node
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidal::cluster::PodPhase;

    #[test]
    fn generates_exactly_the_requested_pods_deterministically() {
        let spec = SyntheticSpec::small();
        let a = generate(&spec);
        let b = generate(&spec);
        assert_eq!(a.pods.len(), spec.pods);
        assert_eq!(a.nodes.len(), spec.nodes);
        assert_eq!(a.pods, b.pods);
        assert_eq!(a.nodes, b.nodes);
        let c = generate(&spec.clone().with_seed(7));
        assert_ne!(a.pods, c.pods, "another seed gives another cluster");
    }

    #[test]
    fn pods_handed_out_as_made_are_the_pods_kept() {
        let spec = SyntheticSpec::small();
        let kept = generate(&spec);
        let mut handed = Vec::new();
        let rest = generate_each(&spec, &mut |pod| handed.push(pod));
        assert_eq!(handed, kept.pods, "the same pods in the same order");
        assert!(rest.pods.is_empty());
        assert_eq!((&rest.nodes, &rest.pdbs), (&kept.nodes, &kept.pdbs));
        let groups = |c: &SyntheticCluster| serde_json::to_value(&c.podgroups).unwrap();
        assert_eq!(groups(&rest), groups(&kept));
    }

    #[test]
    fn names_are_unique_and_everything_is_ingested() {
        let cluster = generate(&SyntheticSpec::small());
        let mut cache = cluster.to_cache();
        assert_eq!(
            cache.pod_count(),
            cluster.pods.len(),
            "no two pods share a key"
        );
        assert_eq!(cache.node_count(), cluster.nodes.len());
        let snapshot = cache.snapshot();
        assert_eq!(snapshot.zones.len(), cluster.spec.revocable_zones);
        assert!(
            snapshot.zones.values().all(|z| z.schedule.is_ok()),
            "every zone parses"
        );
        assert_eq!(snapshot.podgroups.len(), cluster.podgroups.len());
        assert_eq!(snapshot.pdbs.len(), cluster.pdbs.len());
        assert!(
            snapshot.policies.values().all(|p| p.default_budget.is_ok()),
            "the policy is valid"
        );
    }

    #[test]
    fn small_pod_budgets_keep_the_total() {
        for (nodes, pods) in [(0, 0), (0, 5), (3, 2), (20, 20), (20, 61), (200, 100)] {
            let spec = SyntheticSpec {
                nodes,
                pods,
                ..SyntheticSpec::small()
            };
            let cluster = generate(&spec);
            assert_eq!(cluster.pods.len(), pods, "{nodes} nodes, {pods} pods");
            assert_eq!(cluster.to_cache().pod_count(), pods);
        }
    }

    #[test]
    fn the_cluster_has_the_variety_strategies_need() {
        let spec = SyntheticSpec {
            nodes: 300,
            pods: 9_000,
            ..SyntheticSpec::small()
        };
        let cluster = generate(&spec);
        let mut cache = cluster.to_cache();
        let snapshot = cache.snapshot();
        let nodes: Vec<_> = snapshot.nodes.values().collect();
        let utilization = |n: &&std::sync::Arc<tidal::cluster::NodeState>| {
            let node = n
                .node
                .as_ref()
                .map_or(1, |node| node.allocatable.milli_cpu.max(1));
            n.requested.milli_cpu as f64 / node as f64
        };
        let full = nodes.iter().filter(|n| utilization(n) > 0.8).count();
        let empty = nodes.iter().filter(|n| utilization(n) < 0.2).count();
        assert!(full >= 30, "{full} nodes above 80% cpu");
        assert!(empty >= 20, "{empty} nodes below 20% cpu");
        assert!(
            nodes.iter().all(|n| utilization(n) <= 1.0),
            "no node is overcommitted"
        );
        let infos: Vec<_> = nodes.iter().filter_map(|n| n.node.as_ref()).collect();
        assert!(infos.iter().any(|n| n.unschedulable));
        assert!(infos.iter().any(|n| !n.ready));
        assert!(infos.iter().any(|n| !n.taints.is_empty()));
        let revocable = infos.iter().filter(|n| n.revocable_zone.is_some()).count();
        assert!(
            (60..=120).contains(&revocable),
            "{revocable} revocable nodes"
        );

        let pods: Vec<_> = snapshot.pods().collect();
        let count = |f: &dyn Fn(&PodInfo) -> bool| pods.iter().filter(|p| f(p)).count();
        let preemptable = count(&|p| p.preemptable == tidal::cluster::Setting::Valid(true));
        let pending = snapshot.unscheduled.len();
        assert!(pending > 0 && pending < 1_000, "{pending} pending");
        assert!(count(&|p| p.group_name.is_some()) > 1_200);
        assert!(count(&|p| p.phase == PodPhase::Succeeded) > 0);
        assert!(count(&|p| p.terminating) > 0);
        assert!(count(&|p| p.cooldown.is_set()) > 500);
        assert!(count(&|p| p.is_node_bound()) >= spec.nodes * spec.daemonsets);
        assert!(count(&|p| !p.problems().is_empty()) == 0);
        assert!(count(&|p| p.scheduled_at.is_some()) > 8_000);
        assert!(
            preemptable > 1_000,
            "{preemptable} preemptable pods (on the pods themselves)"
        );
        let in_zones = snapshot
            .nodes
            .values()
            .filter(|n| n.node.as_ref().is_some_and(|n| n.revocable_zone.is_some()))
            .map(|n| n.pods.len())
            .sum::<usize>();
        assert!(in_zones > 1_000, "{in_zones} pods in revocable zones");
        for qos in [
            tidal::cluster::QosClass::BestEffort,
            tidal::cluster::QosClass::Burstable,
            tidal::cluster::QosClass::Guaranteed,
        ] {
            assert!(count(&|p| p.qos == qos) > 100, "{qos:?}");
        }
        let controllers: std::collections::BTreeSet<_> = pods
            .iter()
            .filter_map(|p| p.owner.as_ref().map(|o| o.kind.as_str()))
            .collect();
        for kind in ["ReplicaSet", "StatefulSet", "Job", "DaemonSet", "Node"] {
            assert!(controllers.contains(kind), "{kind}");
        }
    }

    #[test]
    fn churn_and_its_undo_restore_the_cluster() {
        let cluster = generate(&SyntheticSpec::small());
        let mut cache = cluster.to_cache();
        let mut snapshot = cache.snapshot();
        let original = cache.snapshot();
        let churn = churn(&cluster, 0.1, 3);
        assert_eq!(churn.pod_events(), 150);
        assert!(churn.events.len() > churn.pod_events(), "some node events");
        churn.apply(&mut cache);
        cache.update_snapshot(&mut snapshot);
        assert!(!snapshot.same_content(&original));
        churn.revert(&mut cache);
        cache.update_snapshot(&mut snapshot);
        assert!(snapshot.same_content(&original));
    }

    #[test]
    fn churn_is_deterministic_and_names_new_pods_per_seed() {
        let cluster = generate(&SyntheticSpec::small());
        assert_eq!(
            churn(&cluster, 0.05, 9).events,
            churn(&cluster, 0.05, 9).events
        );
        let mut cache = cluster.to_cache();
        let before = cache.pod_count();
        let a = churn(&cluster, 0.05, 1);
        let b = churn(&cluster, 0.05, 2);
        let added = |c: &Churn| {
            c.undo
                .iter()
                .filter(|e| matches!(e, ChurnEvent::PodDeleted(_)))
                .count()
        };
        let deleted = |c: &Churn| {
            c.events
                .iter()
                .filter(|e| matches!(e, ChurnEvent::PodDeleted(_)))
                .count()
        };
        a.apply(&mut cache);
        b.apply(&mut cache);
        // Both churns may delete the same pod, so only the additions are known exactly.
        assert!(cache.pod_count() >= before + added(&a) + added(&b) - deleted(&a) - deleted(&b));
        assert!(cache.pod_count() <= before + added(&a) + added(&b));
    }
}
