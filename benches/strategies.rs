//! Planning cost of the strategy catalogue: every strategy enabled in one policy, planned through the
//! full gate chain, over a synthetic 5,000-node / 150,000-pod cluster; then each strategy alone, and
//! the catalogue with `nodeFit`.
//!
//! Run with `cargo bench --bench strategies`. The cluster is built once through the real ingest path
//! (`PodInfo::from_pod`, `NodeInfo::from_node`).

// What the binary runs on, so that the figures are the binary's.
tidal::global_allocator!();

use std::{collections::HashSet, hint::black_box, time::Duration};

use criterion::{Criterion, criterion_group, criterion_main};
use jiff::Timestamp;
use k8s_openapi::{
    api::core::v1::{
        Affinity, Container, ContainerState, ContainerStateWaiting, ContainerStatus, Node,
        NodeCondition, NodeSpec, NodeStatus, Pod, PodAffinityTerm, PodAntiAffinity, PodCondition,
        PodSpec, PodStatus, ResourceRequirements, Taint, TopologySpreadConstraint,
    },
    apimachinery::pkg::{
        api::resource::Quantity,
        apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference, Time},
    },
};
use tidal::{
    api::DeschedulingPolicySpec,
    cluster::{ClusterCache, NodeInfo, PodInfo, PolicyInfo, Snapshot},
    framework, planner,
};
use tidal_testkit::rng::SplitMix64;

const NODES: usize = 5_000;
const PODS: usize = 150_000;
const NOW: &str = "2026-03-02T12:00:00Z";

fn ts(s: &str) -> Time {
    Time(s.parse().unwrap())
}

fn resources(cpu_m: u64, mem_mi: u64) -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(
            [
                ("cpu".to_owned(), Quantity(format!("{cpu_m}m"))),
                ("memory".to_owned(), Quantity(format!("{mem_mi}Mi"))),
            ]
            .into(),
        ),
        ..Default::default()
    }
}

fn node(i: usize, rng: &mut SplitMix64) -> Node {
    let name = format!("node-{i:05}");
    let mut labels: std::collections::BTreeMap<String, String> = [
        ("kubernetes.io/hostname".to_owned(), name.clone()),
        (
            "topology.kubernetes.io/zone".to_owned(),
            format!("zone-{}", i % 3),
        ),
    ]
    .into();
    if i.is_multiple_of(10) {
        labels.insert(
            "volcano.sh/revocable-zone".to_owned(),
            format!("rz{}", i % 4),
        );
    }
    if i.is_multiple_of(7) {
        labels.insert("disktype".to_owned(), "ssd".to_owned());
    }
    let taints = (i % 50 == 1).then(|| {
        vec![Taint {
            key: "maintenance".into(),
            value: Some("planned".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        }]
    });
    let _ = rng;
    Node {
        metadata: ObjectMeta {
            name: Some(name),
            labels: Some(labels),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints,
            unschedulable: (i % 100 == 2).then_some(true),
            ..Default::default()
        }),
        status: Some(NodeStatus {
            allocatable: Some(
                [
                    ("cpu".to_owned(), Quantity("32".into())),
                    ("memory".to_owned(), Quantity("128Gi".into())),
                    ("pods".to_owned(), Quantity("110".into())),
                ]
                .into(),
            ),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

struct PodSpecArgs<'a> {
    namespace: &'a str,
    name: String,
    node: Option<String>,
    owner: (&'a str, String),
    app: String,
    cpu_m: u64,
    mem_mi: u64,
    created: &'a str,
}

fn pod(args: PodSpecArgs<'_>) -> Pod {
    let PodSpecArgs {
        namespace,
        name,
        node,
        owner,
        app,
        cpu_m,
        mem_mi,
        created,
    } = args;
    let scheduled = node.is_some();
    Pod {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.to_owned()),
            uid: Some(format!("uid-{namespace}-{name}")),
            creation_timestamp: Some(ts(created)),
            labels: Some([("app".to_owned(), app)].into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: owner.0.into(),
                name: owner.1.clone(),
                uid: format!("uid-{}-{}", owner.0, owner.1),
                controller: Some(true),
                ..Default::default()
            }]),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: node,
            containers: vec![Container {
                name: "main".into(),
                image: Some(format!("registry.example.com/{}:1", owner.1)),
                resources: Some(resources(cpu_m, mem_mi)),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(PodStatus {
            phase: Some(if scheduled { "Running" } else { "Pending" }.into()),
            conditions: Some(vec![PodCondition {
                type_: "PodScheduled".into(),
                status: if scheduled { "True" } else { "False" }.into(),
                reason: (!scheduled).then(|| "Unschedulable".into()),
                last_transition_time: Some(ts(if scheduled {
                    created
                } else {
                    "2026-03-02T11:00:00Z"
                })),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

/// 5,000 nodes; a DaemonSet pod on each; the rest in ReplicaSets of 1–20 replicas (some with zone spread
/// constraints or host anti-affinity, some piled onto one node), preemptable batch jobs, failed and
/// crash-looping pods, and pending pods. Node load varies from nearly idle to overcommitted.
fn cluster() -> ClusterCache {
    let mut rng = SplitMix64::new(42);
    let mut cache = ClusterCache::new();
    for i in 0..NODES {
        cache.apply_node(NodeInfo::from_node(&node(i, &mut rng)).unwrap());
    }
    let mut count = 0;
    for i in 0..NODES {
        let p = pod(PodSpecArgs {
            namespace: "kube-system",
            name: format!("agent-{i:05}"),
            node: Some(format!("node-{i:05}")),
            owner: ("DaemonSet", "agent".into()),
            app: "agent".into(),
            cpu_m: 100,
            mem_mi: 128,
            created: "2026-01-01T00:00:00Z",
        });
        cache.apply_pod(PodInfo::from_pod(&p).unwrap(), jiff::Timestamp::UNIX_EPOCH);
        count += 1;
    }
    let mut workload = 0;
    while count < PODS {
        workload += 1;
        let namespace = ["shop", "batch", "analytics", "ml", "web"][workload % 5];
        let replicas = 1 + rng.below(20) as usize;
        let kind = workload % 20;
        // A few workloads pile up on one node (duplicates); the rest spread at random, skewed so that
        // low-numbered nodes are busier.
        let home = rng.below(NODES as u64) as usize;
        for r in 0..replicas.min(PODS - count) {
            let node_index = if kind == 3 {
                home
            } else {
                let a = rng.below(NODES as u64) as usize;
                let b = rng.below(NODES as u64) as usize;
                a.min(b)
            };
            let pending = count.is_multiple_of(1500);
            let mut p = pod(PodSpecArgs {
                namespace,
                name: format!("w{workload}-{r}"),
                node: (!pending).then(|| format!("node-{node_index:05}")),
                owner: (
                    if kind == 5 { "Job" } else { "ReplicaSet" },
                    format!("w{workload}"),
                ),
                app: format!("w{workload}"),
                // Pending pods are too large for any node's free room: makeRoomForPending has to search.
                cpu_m: if pending {
                    20_000
                } else {
                    100 + 50 * rng.below(20)
                },
                mem_mi: 128 * (1 + rng.below(16)),
                created: if kind == 7 {
                    "2026-01-01T00:00:00Z"
                } else {
                    "2026-03-01T00:00:00Z"
                },
            });
            let spec = p.spec.as_mut().unwrap();
            let status = p.status.as_mut().unwrap();
            match kind {
                1 => {
                    spec.topology_spread_constraints = Some(vec![TopologySpreadConstraint {
                        max_skew: 1,
                        topology_key: "topology.kubernetes.io/zone".into(),
                        when_unsatisfiable: "DoNotSchedule".into(),
                        label_selector: Some(LabelSelector {
                            match_labels: Some([("app".into(), format!("w{workload}"))].into()),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }]);
                }
                2 => {
                    spec.affinity = Some(Affinity {
                        pod_anti_affinity: Some(PodAntiAffinity {
                            required_during_scheduling_ignored_during_execution: Some(vec![
                                PodAffinityTerm {
                                    label_selector: Some(LabelSelector {
                                        match_labels: Some(
                                            [("app".into(), format!("w{workload}"))].into(),
                                        ),
                                        ..Default::default()
                                    }),
                                    topology_key: "kubernetes.io/hostname".into(),
                                    ..Default::default()
                                },
                            ]),
                            ..Default::default()
                        }),
                        ..Default::default()
                    });
                }
                4 => {
                    spec.node_selector = Some([("disktype".into(), "ssd".into())].into());
                }
                5 => {
                    p.metadata
                        .labels
                        .get_or_insert_default()
                        .insert("volcano.sh/preemptable".into(), "true".into());
                }
                6 if r == 0 => {
                    status.phase = Some("Failed".into());
                }
                8 if r == 0 => {
                    status.container_statuses = Some(vec![ContainerStatus {
                        name: "main".into(),
                        restart_count: 50,
                        state: Some(ContainerState {
                            waiting: Some(ContainerStateWaiting {
                                reason: Some("CrashLoopBackOff".into()),
                                ..Default::default()
                            }),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }]);
                }
                _ => {}
            }
            cache.apply_pod(PodInfo::from_pod(&p).unwrap(), jiff::Timestamp::UNIX_EPOCH);
            count += 1;
        }
    }
    cache
}

const ALL: &str = r#"
mode: Evict
strategies:
  tdm: {}
  removeFailedPods: {}
  podLifeTime: {maxPodLifeTimeSeconds: 2592000}
  removePodsHavingTooManyRestarts: {podRestartThreshold: 20}
  removePodsViolatingNodeTaints: {}
  removePodsViolatingNodeAffinity:
    nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution, preferredDuringSchedulingIgnoredDuringExecution]
  removePodsViolatingInterPodAntiAffinity: {}
  makeRoomForPending: {}
  removeDuplicates: {}
  removePodsViolatingTopologySpreadConstraint: {}
  lowNodeUtilization:
    thresholds: {cpu: 20, memory: 20, pods: 20}
    targetThresholds: {cpu: 50, memory: 50, pods: 50}
  highNodeUtilization:
    thresholds: {cpu: 10, memory: 10}
defaults:
  jobBudget: {maxUnavailable: 25%}
"#;

fn policy(yaml: &str) -> PolicyInfo {
    let spec: DeschedulingPolicySpec = serde_saphyr::from_str(yaml).unwrap();
    PolicyInfo::new("bench".into(), None, spec)
}

/// Plans once and says how long it took, so that a `--test` run already shows where time goes.
fn timed(label: &str, snapshot: &Snapshot, policy: &PolicyInfo) {
    let start = std::time::Instant::now();
    let (evictions, skipped) = plan_once(snapshot, policy);
    eprintln!(
        "{label}: {evictions} evictions planned, {skipped} skipped, in {:?}",
        start.elapsed()
    );
}

/// The benchmark of planning `policy`, which first plans once with [`timed`]. Criterion calls it only
/// for the benchmarks a filter selects (`-- lowNodeUtilization`), so a filtered run (or a profile of
/// one) does not plan every other policy first; it calls it once per sample, hence the flag.
fn timed_bench<'a>(
    label: &'a str,
    snapshot: &'a Snapshot,
    policy: &'a PolicyInfo,
) -> impl FnMut(&mut criterion::Bencher<'_>) + 'a {
    let mut shown = false;
    move |b| {
        if !shown {
            timed(label, snapshot, policy);
            shown = true;
        }
        b.iter(|| black_box(plan_once(snapshot, policy)))
    }
}

fn plan_once(snapshot: &Snapshot, policy: &PolicyInfo) -> (usize, usize) {
    let now: Timestamp = NOW.parse().unwrap();
    let (zones, _) = framework::zone_views(snapshot, now);
    let plan = planner::plan_policy(snapshot, policy, now, &zones, &HashSet::new());
    assert!(plan.error.is_none(), "{:?}", plan.error);
    (plan.evictions.len(), plan.skipped.len())
}

fn single(strategy: &str, args: &str) -> String {
    format!(
        "mode: Evict\nstrategies:\n  {strategy}: {args}\ndefaults:\n  jobBudget: {{maxUnavailable: 25%}}\n"
    )
}

fn bench(c: &mut Criterion) {
    let mut cache = cluster();
    let snapshot = cache.snapshot();
    assert_eq!(snapshot.pod_count(), PODS);
    assert_eq!(snapshot.nodes.len(), NODES);

    let all = policy(ALL);
    let with_fit = policy(&format!("{ALL}protections: {{nodeFit: true}}\n"));

    let mut group = c.benchmark_group("strategies_5000_nodes_150000_pods");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function(
        "all_enabled",
        timed_bench("all strategies", &snapshot, &all),
    );
    group.bench_function(
        "all_enabled_node_fit",
        timed_bench("all strategies with nodeFit", &snapshot, &with_fit),
    );
    let singles = [
        ("removeFailedPods", "{}"),
        ("podLifeTime", "{maxPodLifeTimeSeconds: 2592000}"),
        (
            "removePodsHavingTooManyRestarts",
            "{podRestartThreshold: 20}",
        ),
        ("removePodsViolatingNodeTaints", "{}"),
        (
            "removePodsViolatingNodeAffinity",
            "{nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution, preferredDuringSchedulingIgnoredDuringExecution]}",
        ),
        ("removePodsViolatingInterPodAntiAffinity", "{}"),
        ("makeRoomForPending", "{}"),
        ("removeDuplicates", "{}"),
        ("removePodsViolatingTopologySpreadConstraint", "{}"),
        (
            "lowNodeUtilization",
            "{thresholds: {cpu: 20, memory: 20, pods: 20}, targetThresholds: {cpu: 50, memory: 50, pods: 50}}",
        ),
        ("highNodeUtilization", "{thresholds: {cpu: 10, memory: 10}}"),
    ];
    for (strategy, args) in singles {
        let p = policy(&single(strategy, args));
        group.bench_function(strategy, timed_bench(strategy, &snapshot, &p));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
