//! The cache's incremental snapshots must say exactly what a snapshot built from scratch says, whatever the
//! order of events: one long-lived snapshot, brought up to date at random points, is compared with a fresh
//! cache fed only the final version of every object.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::{
    api::{
        core::v1::{
            Container, Node, NodeSpec, NodeStatus, Pod, PodSpec, PodStatus, ResourceRequirements,
        },
        policy::v1::{PodDisruptionBudget, PodDisruptionBudgetStatus},
    },
    apimachinery::pkg::{
        api::resource::Quantity,
        apis::meta::v1::{ObjectMeta, OwnerReference, Time},
    },
};
use proptest::prelude::*;
use tidal::{
    api::labels,
    api::{
        DeschedulingPolicy, DeschedulingPolicySpec, GoDuration, PodGroup, PolicyMode,
        RevocableZone, RevocableZoneSpec,
        podgroup::PodGroupSpec,
        policy::{PolicyDefaults, Strategies},
        zone::{RevocableZoneStatus, WindowSpec},
    },
    cluster::{
        ClusterCache, NodeInfo, ObjectKey, PdbInfo, PodGroupInfo, PodInfo, PolicyInfo, Resources,
        Snapshot, ZoneInfo,
    },
};
use tidal_testkit::synthetic::{SyntheticSpec, churn, generate};

const NAMESPACES: [&str; 2] = ["ns-a", "ns-b"];
const PHASES: [&str; 5] = ["Pending", "Running", "Succeeded", "Failed", "Unknown"];
const OWNER_KINDS: [&str; 3] = ["ReplicaSet", "StatefulSet", "Job"];

fn base_time() -> Timestamp {
    Timestamp::constant(1_748_865_600, 0)
}

fn at(seconds: u16) -> Timestamp {
    base_time()
        .checked_add(SignedDuration::from_secs(i64::from(seconds)))
        .unwrap_or(base_time())
}

// ---------------------------------------------------------------------------------------------------------
// Events.

#[derive(Clone, Debug)]
enum JobChoice {
    PodGroup(u8),
    Controller { kind: u8, name: u8 },
    Alone,
}

#[derive(Clone, Debug)]
struct PodEvent {
    slot: u8,
    node: Option<u8>,
    phase: u8,
    job: JobChoice,
    milli_cpu: u16,
    memory_mib: u16,
    gpus: u8,
    terminating: bool,
    scheduled_at: u16,
}

#[derive(Clone, Debug)]
enum Event {
    ApplyPod(PodEvent),
    DeletePod(u8),
    ApplyNode {
        slot: u8,
        milli_cpu: u16,
        zone: Option<u8>,
        unschedulable: bool,
    },
    DeleteNode(u8),
    ApplyPodGroup {
        slot: u8,
        budget: Option<u8>,
    },
    DeletePodGroup(u8),
    ApplyPdb {
        slot: u8,
        allowed: u8,
    },
    DeletePdb(u8),
    ApplyZone {
        slot: u8,
        window: u8,
        last_round: Option<u16>,
    },
    DeleteZone(u8),
    ApplyPolicy {
        slot: u8,
        cooldown: u16,
    },
    DeletePolicy(u8),
    MarkEvicting {
        slot: u8,
        at: u16,
    },
    ExpireEvictions {
        now: u16,
        ttl: u16,
    },
    /// Brings the long-lived snapshot up to date and checks it.
    Update,
    /// Lends the long-lived snapshot's nodes and jobs to the cache until its next update, as the
    /// controller does between cycles.
    Lend,
    /// Keeps a copy of the long-lived snapshot as it is now, to be updated (much) later.
    KeepOld,
    UpdateOld(u8),
}

const POD_SLOTS: u8 = 12;
const NODE_SLOTS: u8 = 5;

fn job_choice() -> impl Strategy<Value = JobChoice> {
    prop_oneof![
        (0..3u8).prop_map(JobChoice::PodGroup),
        (0..3u8, 0..3u8).prop_map(|(kind, name)| JobChoice::Controller { kind, name }),
        Just(JobChoice::Alone),
    ]
}

fn pod_event() -> impl Strategy<Value = PodEvent> {
    (
        0..POD_SLOTS,
        prop::option::weighted(0.8, 0..NODE_SLOTS),
        0..PHASES.len() as u8,
        job_choice(),
        (
            0..4_000u16,
            0..8_192u16,
            prop::sample::select(vec![0u8, 0, 0, 1, 2]),
        ),
        prop::bool::weighted(0.1),
        any::<u16>(),
    )
        .prop_map(
            |(slot, node, phase, job, (milli_cpu, memory_mib, gpus), terminating, scheduled_at)| {
                PodEvent {
                    slot,
                    node,
                    phase,
                    job,
                    milli_cpu,
                    memory_mib,
                    gpus,
                    terminating,
                    scheduled_at,
                }
            },
        )
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        12 => pod_event().prop_map(Event::ApplyPod),
        4 => (0..POD_SLOTS).prop_map(Event::DeletePod),
        4 => (0..NODE_SLOTS, 1_000..64_000u16, prop::option::of(0..2u8), any::<bool>()).prop_map(
            |(slot, milli_cpu, zone, unschedulable)| Event::ApplyNode { slot, milli_cpu, zone, unschedulable }
        ),
        2 => (0..NODE_SLOTS).prop_map(Event::DeleteNode),
        2 => (0..4u8, prop::option::of(0..5u8)).prop_map(|(slot, budget)| Event::ApplyPodGroup { slot, budget }),
        1 => (0..4u8).prop_map(Event::DeletePodGroup),
        1 => (0..3u8, 0..3u8).prop_map(|(slot, allowed)| Event::ApplyPdb { slot, allowed }),
        1 => (0..3u8).prop_map(Event::DeletePdb),
        1 => (0..2u8, 0..3u8, prop::option::of(any::<u16>()))
            .prop_map(|(slot, window, last_round)| Event::ApplyZone { slot, window, last_round }),
        1 => (0..2u8).prop_map(Event::DeleteZone),
        1 => (0..2u8, 0..3_600u16).prop_map(|(slot, cooldown)| Event::ApplyPolicy { slot, cooldown }),
        1 => (0..2u8).prop_map(Event::DeletePolicy),
        3 => (0..POD_SLOTS, 0..1_000u16).prop_map(|(slot, at)| Event::MarkEvicting { slot, at }),
        2 => (0..2_000u16, 0..1_000u16).prop_map(|(now, ttl)| Event::ExpireEvictions { now, ttl }),
        4 => Just(Event::Update),
        3 => Just(Event::Lend),
        1 => Just(Event::KeepOld),
        1 => (0..4u8).prop_map(Event::UpdateOld),
    ]
}

// ---------------------------------------------------------------------------------------------------------
// API objects, converted through the same functions watch events go through.

fn pod_key(slot: u8) -> ObjectKey {
    ObjectKey::new(NAMESPACES[usize::from(slot) % 2], format!("pod-{slot}"))
}

fn node_name(slot: u8) -> String {
    format!("node-{slot}")
}

fn pod(event: &PodEvent) -> PodInfo {
    let key = pod_key(event.slot);
    let mut annotations = BTreeMap::new();
    let mut owners = Vec::new();
    match &event.job {
        JobChoice::PodGroup(group) => {
            annotations.insert(labels::GROUP_NAME.to_owned(), format!("group-{group}"));
        }
        JobChoice::Controller { kind, name } => {
            let kind = OWNER_KINDS[usize::from(*kind) % OWNER_KINDS.len()];
            owners.push(OwnerReference {
                api_version: "apps/v1".into(),
                kind: kind.into(),
                name: format!("{}-{name}", kind.to_lowercase()),
                uid: format!("uid-{kind}-{name}"),
                controller: Some(true),
                block_owner_deletion: None,
            });
        }
        JobChoice::Alone => {}
    }
    let mut requests = BTreeMap::from([
        ("cpu".to_owned(), Quantity(format!("{}m", event.milli_cpu))),
        (
            "memory".to_owned(),
            Quantity(format!("{}Mi", event.memory_mib)),
        ),
    ]);
    if event.gpus > 0 {
        requests.insert("nvidia.com/gpu".into(), Quantity(event.gpus.to_string()));
    }
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some(key.name.to_string()),
            namespace: Some(key.namespace.to_string()),
            annotations: Some(annotations),
            owner_references: Some(owners),
            deletion_timestamp: event.terminating.then(|| Time(base_time())),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(requests),
                    ..ResourceRequirements::default()
                }),
                ..Container::default()
            }],
            node_name: event.node.map(node_name),
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: Some(PHASES[usize::from(event.phase) % PHASES.len()].to_owned()),
            conditions: event.node.map(|_| {
                vec![k8s_openapi::api::core::v1::PodCondition {
                    type_: "PodScheduled".into(),
                    status: "True".into(),
                    last_transition_time: Some(Time(at(event.scheduled_at))),
                    ..Default::default()
                }]
            }),
            ..PodStatus::default()
        }),
    };
    PodInfo::from_pod(&pod).expect("the test pod has a name")
}

fn node(slot: u8, milli_cpu: u16, zone: Option<u8>, unschedulable: bool) -> NodeInfo {
    let mut labels = BTreeMap::new();
    if let Some(zone) = zone {
        labels.insert(labels::REVOCABLE_ZONE.to_owned(), format!("zone-{zone}"));
    }
    let node = Node {
        metadata: ObjectMeta {
            name: Some(node_name(slot)),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            unschedulable: Some(unschedulable),
            ..NodeSpec::default()
        }),
        status: Some(NodeStatus {
            allocatable: Some(BTreeMap::from([
                ("cpu".to_owned(), Quantity(format!("{milli_cpu}m"))),
                ("pods".to_owned(), Quantity("110".into())),
            ])),
            ..NodeStatus::default()
        }),
    };
    NodeInfo::from_node(&node).expect("the test node has a name")
}

fn podgroup(slot: u8, budget: Option<u8>) -> PodGroupInfo {
    let mut group = PodGroup::new(
        &format!("group-{}", slot / 2),
        PodGroupSpec {
            min_member: Some(i32::from(slot) + 1),
            queue: None,
        },
    );
    group.metadata.namespace = Some(NAMESPACES[usize::from(slot) % 2].to_owned());
    if let Some(budget) = budget {
        // 4 is not a valid budget: invalid settings must travel through snapshots like valid ones.
        let value = ["1", "25%", "0", "2", "150%"][usize::from(budget) % 5];
        group.metadata.annotations = Some(BTreeMap::from([(
            labels::MAX_UNAVAILABLE[0].to_owned(),
            value.to_owned(),
        )]));
    }
    PodGroupInfo::from_podgroup(&group).expect("the test PodGroup has a name")
}

fn pdb(slot: u8, allowed: u8) -> PdbInfo {
    let pdb = PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some(format!("pdb-{slot}")),
            namespace: Some(NAMESPACES[usize::from(slot) % 2].to_owned()),
            ..ObjectMeta::default()
        },
        spec: None,
        status: Some(PodDisruptionBudgetStatus {
            disruptions_allowed: i32::from(allowed),
            ..PodDisruptionBudgetStatus::default()
        }),
    };
    PdbInfo::from_pdb(&pdb).expect("the test PDB has a name")
}

fn zone(slot: u8, window: u8, last_round: Option<u16>) -> ZoneInfo {
    let time = ["08:00-20:00", "22:00-06:00", "00:00-00:00"][usize::from(window) % 3];
    let mut zone = RevocableZone::new(
        &format!("zone-{slot}"),
        RevocableZoneSpec {
            windows: vec![WindowSpec {
                time: time.to_owned(),
                days: Vec::new(),
            }],
            time_zone: "UTC".into(),
            evict_period: GoDuration::from_secs(60),
            drain_before: tidal::api::DrainBefore::Fixed(GoDuration::default()),
            max_drain_before: GoDuration::from_secs(7_200),
            budgets_after_close: Default::default(),
            taint_when_closed: true,
            eviction_notice: None,
        },
    );
    zone.status = last_round.map(|round| RevocableZoneStatus {
        last_eviction_round: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
            at(round),
        )),
        ..RevocableZoneStatus::default()
    });
    ZoneInfo::from_zone(&zone).expect("the test zone has a name")
}

fn policy(slot: u8, cooldown: u16) -> PolicyInfo {
    let mut policy = DeschedulingPolicy::new(
        &format!("policy-{slot}"),
        DeschedulingPolicySpec {
            interval: GoDuration::from_secs(300),
            mode: PolicyMode::DryRun,
            strategies: Strategies::default(),
            defaults: PolicyDefaults {
                cooldown: Some(GoDuration::from_secs(u64::from(cooldown))),
                ..PolicyDefaults::default()
            },
            limits: Default::default(),
            protections: Default::default(),
            namespaces: Default::default(),
            node_selector: None,
        },
    );
    policy.metadata.generation = Some(i64::from(cooldown));
    PolicyInfo::from_policy(&policy).expect("the test policy has a name")
}

// ---------------------------------------------------------------------------------------------------------
// The model: the final version of every object, and what a fresh cache fed only those makes of them.

#[derive(Default)]
struct Model {
    pods: BTreeMap<ObjectKey, PodInfo>,
    nodes: BTreeMap<String, NodeInfo>,
    podgroups: BTreeMap<ObjectKey, PodGroupInfo>,
    pdbs: BTreeMap<ObjectKey, PdbInfo>,
    zones: BTreeMap<String, ZoneInfo>,
    policies: BTreeMap<String, PolicyInfo>,
    evicting: BTreeMap<ObjectKey, Timestamp>,
}

impl Model {
    /// A snapshot of a fresh cache fed the final objects. Pods go in before nodes, the opposite of what a
    /// watcher usually sees, so that order cannot matter either.
    fn rebuild(&self) -> Snapshot {
        let mut cache = ClusterCache::new();
        for pod in self.pods.values() {
            cache.apply_pod(pod.clone(), jiff::Timestamp::UNIX_EPOCH);
        }
        for node in self.nodes.values() {
            cache.apply_node(node.clone());
        }
        for group in self.podgroups.values() {
            cache.apply_podgroup(group.clone());
        }
        for pdb in self.pdbs.values() {
            cache.apply_pdb(pdb.clone());
        }
        for zone in self.zones.values() {
            cache.apply_zone(zone.clone());
        }
        for policy in self.policies.values() {
            cache.apply_policy(policy.clone());
        }
        for (key, since) in &self.evicting {
            assert!(cache.mark_evicting(key, *since), "marked pods exist");
        }
        cache.snapshot()
    }
}

struct Run {
    cache: ClusterCache,
    model: Model,
    live: Snapshot,
    old: Vec<Snapshot>,
    /// The generation of the latest snapshot update: removals up to it are forgotten by the cache.
    pruned_through: u64,
    /// `live` lent its nodes and jobs, and reads empty until its next update.
    lent: bool,
}

impl Run {
    fn new() -> Run {
        Run {
            cache: ClusterCache::new(),
            model: Model::default(),
            live: Snapshot::default(),
            old: Vec::new(),
            pruned_through: 0,
            lent: false,
        }
    }

    fn step(&mut self, event: &Event) -> Result<(), TestCaseError> {
        let (cache, model) = (&mut self.cache, &mut self.model);
        match event {
            Event::ApplyPod(event) => {
                let pod = pod(event);
                model.pods.insert(pod.key.clone(), pod.clone());
                cache.apply_pod(pod, jiff::Timestamp::UNIX_EPOCH);
            }
            Event::DeletePod(slot) => {
                let key = pod_key(*slot);
                model.pods.remove(&key);
                model.evicting.remove(&key);
                cache.delete_pod(&key, jiff::Timestamp::UNIX_EPOCH);
            }
            Event::ApplyNode {
                slot,
                milli_cpu,
                zone,
                unschedulable,
            } => {
                let node = node(*slot, *milli_cpu, *zone, *unschedulable);
                model.nodes.insert(node.name.clone(), node.clone());
                cache.apply_node(node);
            }
            Event::DeleteNode(slot) => {
                model.nodes.remove(&node_name(*slot));
                cache.delete_node(&node_name(*slot));
            }
            Event::ApplyPodGroup { slot, budget } => {
                let group = podgroup(*slot, *budget);
                model.podgroups.insert(group.key.clone(), group.clone());
                cache.apply_podgroup(group);
            }
            Event::DeletePodGroup(slot) => {
                let key = podgroup(*slot, None).key;
                model.podgroups.remove(&key);
                cache.delete_podgroup(&key);
            }
            Event::ApplyPdb { slot, allowed } => {
                let pdb = pdb(*slot, *allowed);
                model.pdbs.insert(pdb.key.clone(), pdb.clone());
                cache.apply_pdb(pdb);
            }
            Event::DeletePdb(slot) => {
                let key = pdb(*slot, 0).key;
                model.pdbs.remove(&key);
                cache.delete_pdb(&key);
            }
            Event::ApplyZone {
                slot,
                window,
                last_round,
            } => {
                let zone = zone(*slot, *window, *last_round);
                model.zones.insert(zone.name.clone(), zone.clone());
                cache.apply_zone(zone);
            }
            Event::DeleteZone(slot) => {
                let name = format!("zone-{slot}");
                model.zones.remove(&name);
                cache.delete_zone(&name);
            }
            Event::ApplyPolicy { slot, cooldown } => {
                let policy = policy(*slot, *cooldown);
                model.policies.insert(policy.name.clone(), policy.clone());
                cache.apply_policy(policy);
            }
            Event::DeletePolicy(slot) => {
                let name = format!("policy-{slot}");
                model.policies.remove(&name);
                cache.delete_policy(&name);
            }
            Event::MarkEvicting { slot, at: when } => {
                let key = pod_key(*slot);
                let exists = model.pods.contains_key(&key);
                if exists {
                    model.evicting.insert(key.clone(), at(*when));
                }
                prop_assert_eq!(cache.mark_evicting(&key, at(*when)), exists);
            }
            Event::ExpireEvictions { now, ttl } => {
                let (now, ttl) = (at(*now), Duration::from_secs(u64::from(*ttl)));
                let expected: BTreeSet<ObjectKey> = model
                    .evicting
                    .iter()
                    .filter(|(_, since)| {
                        since
                            .checked_add(
                                SignedDuration::try_from(ttl).unwrap_or(SignedDuration::MAX),
                            )
                            .is_ok_and(|until| until <= now)
                    })
                    .map(|(key, _)| key.clone())
                    .collect();
                model.evicting.retain(|key, _| !expected.contains(key));
                let expired: BTreeSet<ObjectKey> =
                    cache.expire_evictions(now, ttl).into_iter().collect();
                prop_assert_eq!(expired, expected);
            }
            Event::Update => {
                // A lent snapshot whose maps the cache dropped (it forgot removals since) is older
                // than the pruning too: the one rule covers both.
                let must_rebuild = self.live.generation() < self.pruned_through;
                let update = self.cache.update_snapshot(&mut self.live);
                self.lent = false;
                prop_assert_eq!(
                    update.full_rebuild,
                    must_rebuild,
                    "the latest snapshot is updated in place, an outdated one rebuilt"
                );
                self.pruned_through = self.live.generation();
                check(&self.live, &self.model, &self.cache)?;
            }
            Event::Lend => {
                self.cache.lend_snapshot(&mut self.live);
                self.lent = true;
            }
            // A copy of a lent snapshot would take its maps back in its place (see the cache's
            // unit tests); the copies here are of whole snapshots.
            Event::KeepOld if self.lent => {}
            Event::KeepOld => self.old.push(self.live.clone()),
            Event::UpdateOld(index) => {
                if self.old.is_empty() {
                    return Ok(());
                }
                let index = usize::from(*index) % self.old.len();
                let old = &mut self.old[index];
                let must_rebuild = old.generation() < self.pruned_through;
                let update = self.cache.update_snapshot(old);
                prop_assert!(
                    update.full_rebuild || !must_rebuild,
                    "a snapshot older than the pruned removals is rebuilt in full"
                );
                self.pruned_through = old.generation();
                check(old, &self.model, &self.cache)?;
            }
        }
        Ok(())
    }

    /// Every invariant, after a final update of the long-lived snapshot.
    fn finish(mut self) -> Result<(), TestCaseError> {
        self.step(&Event::Update)?;
        for index in 0..self.old.len() {
            self.step(&Event::UpdateOld(index as u8))?;
        }
        Ok(())
    }
}

/// Compares `snapshot` with a rebuild of the model and checks the aggregates it carries.
fn check(snapshot: &Snapshot, model: &Model, cache: &ClusterCache) -> Result<(), TestCaseError> {
    let rebuilt = model.rebuild();
    prop_assert!(
        snapshot.same_content(&rebuilt),
        "incremental snapshot differs from a rebuild:\nincremental: {:#?}\nrebuilt: {:#?}",
        snapshot.nodes,
        rebuilt.nodes
    );
    // `same_content` compares configuration objects by name only; their content must match too.
    prop_assert_eq!(snapshot.zones.len(), model.zones.len());
    for (name, zone) in &snapshot.zones {
        let expected = &model.zones[name];
        prop_assert_eq!(&zone.spec, &expected.spec);
        prop_assert_eq!(zone.last_eviction_round, expected.last_eviction_round);
    }
    prop_assert_eq!(snapshot.policies.len(), model.policies.len());
    for (name, policy) in &snapshot.policies {
        let expected = &model.policies[name];
        prop_assert_eq!(&policy.spec, &expected.spec);
        prop_assert_eq!(policy.generation, expected.generation);
    }

    prop_assert_eq!(snapshot.pod_count(), model.pods.len());
    prop_assert_eq!(cache.pod_count(), model.pods.len());
    prop_assert_eq!(cache.evicting_count(), model.evicting.len());
    prop_assert_eq!(cache.node_count(), model.nodes.len());
    for pod in snapshot.pods() {
        let mut expected = model.pods[&pod.key].clone();
        expected.evicting_since = model.evicting.get(&pod.key).copied().map(Box::new);
        prop_assert_eq!(&**pod, &expected);
    }

    for (name, state) in &snapshot.nodes {
        prop_assert!(
            state.node.is_some() || !state.pods.is_empty(),
            "empty entry for {}",
            name
        );
        prop_assert_eq!(
            state.node.as_ref().map(|n| &n.name),
            model.nodes.get(name.as_str()).map(|n| &n.name)
        );
        let mut requested = Resources::default();
        for pod in state.pods.values() {
            prop_assert_eq!(pod.node_name.as_deref(), Some(name.as_str()));
            if !pod.phase.is_finished() {
                requested.add(&pod.requests);
            }
        }
        prop_assert_eq!(&state.requested, &requested, "requests on {}", name);
    }
    for pod in snapshot.unscheduled.values() {
        prop_assert!(pod.node_name.is_none());
    }

    let mut in_jobs = 0;
    for (key, job) in &snapshot.jobs {
        prop_assert!(!job.pods.is_empty(), "empty job {}", key);
        for pod in job.pods.values() {
            prop_assert_eq!(&pod.job, key);
        }
        in_jobs += job.pods.len();
    }
    prop_assert_eq!(
        in_jobs,
        snapshot.pod_count(),
        "every pod is in exactly one job"
    );
    for pod in snapshot.pods() {
        let held = snapshot
            .job(&pod.job)
            .and_then(|job| job.pods.get(&pod.key));
        prop_assert_eq!(held.map(|p| &**p), Some(&**pod));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 300,
        // ChaCha dominates the run time of unoptimized test builds; the cases need no cryptographic randomness.
        rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
        ..ProptestConfig::default()
    })]

    #[test]
    fn incremental_snapshots_equal_a_rebuild(events in prop::collection::vec(event(), 1..80)) {
        let mut run = Run::new();
        for event in &events {
            run.step(event)?;
        }
        run.finish()?;
    }
}

#[test]
fn an_older_snapshot_is_rebuilt_in_full_and_then_equal() {
    let mut run = Run::new();
    let pods = (0..POD_SLOTS).map(|slot| {
        Event::ApplyPod(PodEvent {
            slot,
            node: Some(slot % NODE_SLOTS),
            phase: 1,
            job: JobChoice::Controller {
                kind: 0,
                name: slot % 3,
            },
            milli_cpu: 100 * u16::from(slot),
            memory_mib: 64,
            gpus: 0,
            terminating: false,
            scheduled_at: 0,
        })
    });
    let nodes = (0..NODE_SLOTS).map(|slot| Event::ApplyNode {
        slot,
        milli_cpu: 4_000,
        zone: None,
        unschedulable: false,
    });
    for event in nodes.chain(pods) {
        run.step(&event).unwrap();
    }
    let mut old = run.cache.snapshot();
    run.pruned_through = old.generation();
    run.step(&Event::Update).unwrap();

    // Removals the old snapshot has not seen, forgotten once the long-lived snapshot catches up.
    for event in [
        Event::DeletePod(3),
        Event::DeleteNode(1),
        Event::DeletePod(0),
        Event::MarkEvicting { slot: 5, at: 10 },
        Event::Update,
    ] {
        run.step(&event).unwrap();
    }
    let update = run.cache.update_snapshot(&mut old);
    assert!(update.full_rebuild, "the old snapshot cannot be patched");
    assert!(old.same_content(&run.live));
    check(&old, &run.model, &run.cache).unwrap();

    // The long-lived snapshot, no longer the latest, is rebuilt in turn and still right.
    run.step(&Event::DeletePod(7)).unwrap();
    run.pruned_through = old.generation();
    run.step(&Event::Update).unwrap();
}

#[test]
fn pods_move_between_nodes_and_in_and_out_of_the_pending_set() {
    let mut run = Run::new();
    let mut event = PodEvent {
        slot: 1,
        node: None,
        phase: 0,
        job: JobChoice::PodGroup(0),
        milli_cpu: 500,
        memory_mib: 256,
        gpus: 1,
        terminating: false,
        scheduled_at: 0,
    };
    let mut steps = vec![
        Event::ApplyNode {
            slot: 2,
            milli_cpu: 8_000,
            zone: Some(0),
            unschedulable: false,
        },
        Event::ApplyPod(event.clone()),
        Event::Update,
    ];
    for (node, phase) in [
        (Some(0), 1),
        (Some(1), 1),
        (Some(1), 2),
        (None, 0),
        (Some(2), 3),
        (Some(2), 1),
    ] {
        event.node = node;
        event.phase = phase;
        steps.push(Event::ApplyPod(event.clone()));
        steps.push(Event::Update);
    }
    steps.extend([
        Event::DeletePod(1),
        Event::Update,
        Event::ApplyPod(event.clone()),
        Event::Update,
        Event::DeleteNode(2),
        Event::Update,
    ]);
    for step in &steps {
        run.step(step).unwrap();
    }
    let state = run
        .live
        .node("node-2")
        .expect("the pods keep their deleted node's entry");
    assert!(state.node.is_none());
    assert_eq!(state.requested.milli_cpu, 500);
}

/// The synthetic churn against a small generated cluster: its own kind of variety (many nodes and jobs).
#[test]
fn synthetic_churn_snapshots_equal_a_fresh_ingest() {
    let cluster = generate(&SyntheticSpec::small());
    let mut cache = cluster.to_cache();
    let mut live = cache.snapshot();
    for seed in 0..4 {
        let churn = churn(&cluster, 0.05, seed);
        churn.apply(&mut cache);
        let update = cache.update_snapshot(&mut live);
        assert!(!update.full_rebuild);
        churn.revert(&mut cache);
        cache.update_snapshot(&mut live);
        assert!(
            live.same_content(&cluster.to_cache().snapshot()),
            "seed {seed}"
        );
    }
    // Churns left applied pile up; the snapshot follows a cache fed the same events, also when it
    // lends its nodes and jobs to the cache between updates, as the controller does.
    let mut fresh = cluster.to_cache();
    for seed in 10..16 {
        let churn = churn(&cluster, 0.05, seed);
        let lend = seed % 2 == 0;
        if lend {
            cache.lend_snapshot(&mut live);
        }
        churn.apply(&mut cache);
        churn.apply(&mut fresh);
        let update = cache.update_snapshot(&mut live);
        assert!(!update.full_rebuild, "seed {seed}");
        if lend {
            assert_eq!(
                update.retired.aggregates(),
                0,
                "changed in place: {update:?}"
            );
        }
    }
    assert!(live.same_content(&fresh.snapshot()));
}

/// A pod asking for more than half of what an `i64` holds (`5E` bytes of memory passes API validation).
fn huge_pod(name: &str) -> PodInfo {
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("ns-a".to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".into(),
                resources: Some(ResourceRequirements {
                    requests: Some(BTreeMap::from([(
                        "memory".to_owned(),
                        Quantity("5E".into()),
                    )])),
                    ..ResourceRequirements::default()
                }),
                ..Container::default()
            }],
            node_name: Some(node_name(0)),
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: Some("Running".into()),
            ..PodStatus::default()
        }),
    };
    PodInfo::from_pod(&pod).expect("the test pod has a name")
}

/// Regression: with saturating sums, two such pods pinned the node's sum at `i64::MAX` and removing one left
/// `i64::MAX - 5E` where a rebuild says `5E`, so the node looked overcommitted until tidal restarted.
#[test]
fn node_requests_do_not_drift_when_their_sum_saturates() {
    let mut cache = ClusterCache::new();
    let mut live = cache.snapshot();
    cache.apply_pod(huge_pod("big-1"), jiff::Timestamp::UNIX_EPOCH);
    cache.apply_pod(huge_pod("big-2"), jiff::Timestamp::UNIX_EPOCH);
    cache.update_snapshot(&mut live);
    cache.delete_pod(
        &ObjectKey::new("ns-a", "big-2"),
        jiff::Timestamp::UNIX_EPOCH,
    );
    cache.update_snapshot(&mut live);

    let mut fresh = ClusterCache::new();
    fresh.apply_pod(huge_pod("big-1"), jiff::Timestamp::UNIX_EPOCH);
    let rebuilt = fresh.snapshot();
    assert_eq!(
        live.nodes[node_name(0).as_str()].requested.memory,
        rebuilt.nodes[node_name(0).as_str()].requested.memory
    );
    assert!(live.same_content(&rebuilt));
}
