//! How planning grows with the size of one namespace: each group plans the same shape at two sizes ten
//! times apart (one namespace of 3,000 and of 30,000 pods), so that a cost growing faster than the
//! namespace shows as a ratio well above 10. Every pod is in namespace `big`, in workloads (ReplicaSets)
//! of 10 replicas labelled `app: w-NNNNN`, requesting 1 CPU and 1 GiB, 30 to a node of 32 CPU; nodes
//! are spread over three zones (`topology.kubernetes.io/zone`), and as many empty nodes stand beside
//! the busy ones. Every workload but one in ten has a PodDisruptionBudget of its own, so that the
//! protection below both holds and lets go. The policies allow half of a workload at a time
//! (`jobBudget: {maxUnavailable: 50%}`).
//!
//! - `pdb_protection`: lowNodeUtilization (20/50) with `protections.podsWithoutPdb`: every pod weighed
//!   is matched against the budgets of its namespace. A workload's replicas share a node.
//! - `topology_spread`: removePodsViolatingTopologySpreadConstraint, each workload spreading over the
//!   zones (`maxSkew: 1`, its own `app` label), its replicas on one node: every workload is out of
//!   balance, and each move looks for a node with room in a smaller zone.
//! - `anti_affinity_host`: removePodsViolatingInterPodAntiAffinity, each workload repelling itself by
//!   hostname, its replicas on ten different nodes: nothing is violated, every pod is checked.
//! - `anti_affinity_zone`: the same repelling by zone, replicas on one node: every workload violates
//!   its rule.
//! - `node_fit`: the `pdb_protection` plan with `protections.nodeFit` and each workload repelling
//!   itself by zone (the replicas on one node): every candidate's destination is checked against
//!   the pods of each zone.
//! - `ingest_spread`: the cache taking in the namespace's pods (converted beforehand), each
//!   workload spreading by its own label.
//!
//! Run with `cargo bench --bench namespace_growth`; each case prints what its plan decided (evictions,
//! skips by reason, and a fingerprint of every decision and its reason) and how long that first plan
//! took, once before timing. `NAMESPACE_GROWTH_PODS=30000,300000` sets other sizes.

// What the binary runs on, so that the figures are the binary's.
tidal::global_allocator!();

use std::{
    collections::{BTreeMap, HashSet},
    hash::{DefaultHasher, Hash, Hasher},
    hint::black_box,
    time::{Duration, Instant},
};

use criterion::{BatchSize, Criterion, SamplingMode, criterion_group, criterion_main};
use jiff::Timestamp;
use serde_json::{Value, json};
use tidal::{
    api::DeschedulingPolicySpec,
    cluster::{ClusterCache, NodeInfo, PdbInfo, PodInfo, PolicyInfo, Snapshot},
    framework, planner,
};
use tidal_testkit::objects::{node, pdb, pod};

const NAMESPACE: &str = "big";
const REPLICAS: usize = 10;
const PODS_PER_NODE: usize = 30;
const ZONES: usize = 3;
/// When the pods started, and when the plans are made: fixed, so that no plan depends on the day.
const STARTED: &str = "2026-11-28T00:00:00Z";
const NOW: &str = "2026-11-29T12:00:00Z";
const HOST: &str = "kubernetes.io/hostname";
const ZONE: &str = "topology.kubernetes.io/zone";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("the builders write valid objects")
}

/// Where a workload's replicas run.
#[derive(Clone, Copy)]
enum Placement {
    /// All on one node, three workloads to a node.
    Together,
    /// Each on another node: pod `i` on busy node `i mod nodes`.
    Apart,
}

/// What each workload's pods declare beside their labels.
#[derive(Clone, Copy)]
enum Rule {
    None,
    /// Spread over the zones, `maxSkew: 1`.
    Spread,
    /// Required anti-affinity against their own `app`, by `topologyKey`.
    Repel(&'static str),
}

fn workload(w: usize) -> String {
    format!("w-{w:05}")
}

fn rule_spec(rule: Rule, app: &str) -> Option<(&'static str, Value)> {
    let selector = json!({"matchLabels": {"app": app}});
    match rule {
        Rule::None => None,
        Rule::Spread => Some((
            "topologySpreadConstraints",
            json!([{"maxSkew": 1, "topologyKey": ZONE,
                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}]),
        )),
        Rule::Repel(key) => Some((
            "affinity",
            json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": selector, "topologyKey": key}]}}),
        )),
    }
}

/// The nodes and budgets of a namespace of `pods` pods, as the module says.
fn nodes_and_budgets(pods: usize) -> ClusterCache {
    let mut cache = ClusterCache::new();
    for n in 0..2 * pods.div_ceil(PODS_PER_NODE) {
        let built = node(&node_name(n))
            .label(ZONE, &format!("zone-{}", n % ZONES))
            .allocatable("32", "128Gi", 110);
        cache.apply_node(NodeInfo::from_node(&from(built.into_value())).expect("named"));
    }
    for w in 0..pods.div_ceil(REPLICAS) {
        if w % 10 != 9 {
            let budget = pdb(&format!("{NAMESPACE}/{}", workload(w)), &workload(w));
            cache.apply_pdb(PdbInfo::from_pdb(&from(budget.into_value())).expect("named"));
        }
    }
    cache
}

fn node_name(n: usize) -> String {
    format!("node-{n:05}")
}

/// The namespace's pods, converted as the watches convert them.
fn members(pods: usize, placement: Placement, rule: Rule) -> Vec<PodInfo> {
    let busy = pods.div_ceil(PODS_PER_NODE);
    (0..pods)
        .map(|i| {
            let app = workload(i / REPLICAS);
            let on = match placement {
                Placement::Together => i / PODS_PER_NODE,
                Placement::Apart => i % busy,
            };
            let mut member = pod(&format!("{NAMESPACE}/{app}-{i:06}"), &node_name(on))
                .label("app", &app)
                .owned_by("ReplicaSet", &app)
                .requests("1", "1Gi")
                .created(STARTED)
                .scheduled_at(STARTED);
            if let Some((field, value)) = rule_spec(rule, &app) {
                member = member.spec(field, value);
            }
            PodInfo::from_pod(&from(member.into_value())).expect("named")
        })
        .collect()
}

fn apply_all(cache: &mut ClusterCache, pods: Vec<PodInfo>) {
    for pod in pods {
        cache.apply_pod(pod, Timestamp::UNIX_EPOCH);
    }
}

/// One namespace of `pods` pods, as the module says.
fn cluster(pods: usize, placement: Placement, rule: Rule) -> ClusterCache {
    let mut cache = nodes_and_budgets(pods);
    apply_all(&mut cache, members(pods, placement, rule));
    cache
}

fn policy(strategies: &str, protections: &str) -> PolicyInfo {
    let yaml = format!(
        "mode: Evict\nstrategies:\n  {strategies}\nprotections: {protections}\n\
         defaults:\n  jobBudget: {{maxUnavailable: 50%}}\n"
    );
    let spec: DeschedulingPolicySpec = serde_saphyr::from_str(&yaml).expect("a valid policy");
    PolicyInfo::new("namespace-growth".into(), None, spec)
}

fn plan_once(snapshot: &Snapshot, policy: &PolicyInfo) -> planner::Plan {
    let now: Timestamp = NOW.parse().expect("an instant");
    let (zones, _) = framework::zone_views(snapshot, now);
    let plan = planner::plan_policy(snapshot, policy, now, &zones, &HashSet::new());
    assert!(plan.error.is_none(), "{:?}", plan.error);
    plan
}

/// What `plan` decided, in a line.
fn decided(plan: &planner::Plan) -> String {
    // Every decision and its reason, in plan order: equal fingerprints, equal plans.
    let mut hasher = DefaultHasher::new();
    for eviction in &plan.evictions {
        (
            eviction.candidate.pod.key.to_string(),
            &eviction.candidate.reason,
        )
            .hash(&mut hasher);
    }
    for skipped in &plan.skipped {
        let key = skipped.candidate.pod.key.to_string();
        (key, &skipped.candidate.reason, &skipped.detail).hash(&mut hasher);
    }
    let skips: BTreeMap<String, u32> = plan
        .skip_counts
        .iter()
        .map(|(reason, count)| (format!("{reason:?}"), *count))
        .collect();
    format!(
        "{} evictions, skipped {skips:?}, fingerprint {:016x}",
        plan.evictions.len(),
        hasher.finish()
    )
}

/// The namespace sizes: `NAMESPACE_GROWTH_PODS` (comma-separated), else 3,000 and 30,000.
fn sizes() -> Vec<usize> {
    match std::env::var("NAMESPACE_GROWTH_PODS") {
        Ok(list) => list
            .split(',')
            .map(|n| n.trim().parse().expect("NAMESPACE_GROWTH_PODS: pod counts"))
            .collect(),
        Err(_) => vec![3_000, 30_000],
    }
}

fn namespace_growth(c: &mut Criterion) {
    let lnu = "lowNodeUtilization: {thresholds: {cpu: 20, memory: 20, pods: 20}, \
               targetThresholds: {cpu: 50, memory: 50, pods: 50}}";
    let cases: [(&str, Placement, Rule, PolicyInfo); 5] = [
        (
            "pdb_protection",
            Placement::Together,
            Rule::None,
            policy(lnu, "{podsWithoutPdb: true}"),
        ),
        (
            "topology_spread",
            Placement::Together,
            Rule::Spread,
            policy("removePodsViolatingTopologySpreadConstraint: {}", "{}"),
        ),
        (
            "anti_affinity_host",
            Placement::Apart,
            Rule::Repel(HOST),
            policy("removePodsViolatingInterPodAntiAffinity: {}", "{}"),
        ),
        (
            "anti_affinity_zone",
            Placement::Together,
            Rule::Repel(ZONE),
            policy("removePodsViolatingInterPodAntiAffinity: {}", "{}"),
        ),
        (
            "node_fit",
            Placement::Together,
            Rule::Repel(ZONE),
            policy(lnu, "{podsWithoutPdb: true, nodeFit: true}"),
        ),
    ];
    let sizes = sizes();
    let mut group = c.benchmark_group("namespace_growth");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(10));
    for (name, placement, rule, policy) in &cases {
        for &pods in &sizes {
            let id = format!("{name}/{pods}");
            // Built only when criterion runs this case, so that a filtered run builds nothing else.
            let mut built: Option<Snapshot> = None;
            group.bench_function(&id, |b| {
                let snapshot = built.get_or_insert_with(|| {
                    let snapshot = cluster(pods, *placement, *rule).snapshot();
                    let start = Instant::now();
                    let plan = plan_once(&snapshot, policy);
                    let took = start.elapsed();
                    eprintln!("{id}: {}; first plan {took:?}", decided(&plan));
                    snapshot
                });
                b.iter(|| black_box(plan_once(snapshot, policy).evictions.len()));
            });
        }
    }
    // The cache taking in the namespace's pods, each workload spreading by its own label.
    for &pods in &sizes {
        let id = format!("ingest_spread/{pods}");
        let mut built: Option<Vec<PodInfo>> = None;
        group.bench_function(&id, |b| {
            let converted = built.get_or_insert_with(|| {
                let converted = members(pods, Placement::Together, Rule::Spread);
                let mut cache = nodes_and_budgets(pods);
                let start = Instant::now();
                apply_all(&mut cache, converted.clone());
                let took = start.elapsed();
                eprintln!(
                    "{id}: {} pods in {} jobs; first ingest {took:?}",
                    cache.snapshot().pod_count(),
                    pods.div_ceil(REPLICAS)
                );
                converted
            });
            b.iter_batched(
                || (nodes_and_budgets(pods), converted.clone()),
                |(mut cache, converted)| {
                    apply_all(&mut cache, converted);
                    cache
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, namespace_growth);
criterion_main!(benches);
