//! How the drain plan's cost grows with what a zone holds: each group plans the same shape at two
//! sizes ten times apart, so that a cost growing faster than the size shows as a ratio well above 10.
//! The plan is `drain::plan` with `tidal run`'s default flags (20 evictions a second after a burst of
//! 40, 8 at a time), what the controller's drain refresh, `tidal report` and every outlook of
//! `tidal timeline` make.
//!
//! - `one_pod_jobs`: one zone of preemptable one-pod ReplicaSet jobs, 30 a node, a fifth as many
//!   ordinary nodes, every pod in one namespace, closing at 10:00 with `drainBefore: auto`, planned at
//!   09:50, when the drain is due: 3,000 and 30,000 pods.
//! - `one_job`: the same zone holding one ReplicaSet that may lose 20% of its pods a round: 3,000 and
//!   30,000 pods.
//! - `zones`: zones of 100 one-pod jobs each, all `auto` and closing at 10:00, planned at 09:30, when
//!   every start is still to be chosen together: 10 and 100 zones.
//!
//! Run with `cargo bench --bench drain_growth`; each size prints its plan (pods, start, margin) once.

// What the binary runs on, so that the figures are the binary's.
tidal::global_allocator!();

use std::{hint::black_box, time::Duration};

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use jiff::Timestamp;
use serde_json::{Value, json};
use tidal::{
    cluster::{ClusterCache, NodeInfo, PodInfo, PolicyInfo, ZoneInfo},
    drain,
};
use tidal_testkit::objects::{node, pod, policy, zone};

const PODS_PER_NODE: usize = 30;
/// When the pods started: a fixed instant, so that the plan does not depend on the day it runs.
const STARTED: &str = "2026-11-28T00:00:00Z";

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("the builders write valid objects")
}

/// `zones` zones named `rz0`, `rz1`, ..., each of `pods_per_zone` preemptable pods on nodes of 30,
/// with a fifth as many ordinary nodes beside them; `job_of(i)` names the ReplicaSet of a zone's
/// `i`-th pod, and `budget`, when given, is every pod's `volcano.sh/jdb-max-unavailable`.
fn cluster(
    zones: usize,
    pods_per_zone: usize,
    job_of: impl Fn(usize) -> String,
    budget: Option<&str>,
) -> ClusterCache {
    let mut cache = ClusterCache::new();
    let nodes_per_zone = pods_per_zone.div_ceil(PODS_PER_NODE);
    for z in 0..zones {
        let name = format!("rz{z}");
        let spec = zone(&name)
            .window("20:00-10:00")
            .spec(json!({"drainBefore": "auto"}));
        cache.apply_zone(ZoneInfo::from_zone(&from(spec.into_value())).expect("named"));
        for n in 0..nodes_per_zone {
            let lent = node(&format!("{name}-node-{n:05}"))
                .zone(&name)
                .allocatable("32", "128Gi", 110);
            cache.apply_node(NodeInfo::from_node(&from(lent.into_value())).expect("named"));
        }
        for i in 0..pods_per_zone {
            let job = job_of(i);
            let mut member = pod(
                &format!("batch/{name}-{job}-{i:06}"),
                &format!("{name}-node-{:05}", i / PODS_PER_NODE),
            )
            .owned_by("ReplicaSet", &format!("{name}-{job}"))
            .preemptable()
            .created(STARTED)
            .scheduled_at(STARTED);
            if let Some(budget) = budget {
                member = member.annotation("volcano.sh/jdb-max-unavailable", budget);
            }
            cache.apply_pod(
                PodInfo::from_pod(&from(member.into_value())).expect("named"),
                Timestamp::UNIX_EPOCH,
            );
        }
    }
    for n in 0..(zones * nodes_per_zone / 5).max(1) {
        let plain = node(&format!("node-{n:05}")).allocatable("32", "128Gi", 110);
        cache.apply_node(NodeInfo::from_node(&from(plain.into_value())).expect("named"));
    }
    cache
}

fn plan_growth(c: &mut Criterion) {
    let spec = json!({"mode": "DryRun", "strategies": {"tdm": {}}});
    let policy = PolicyInfo::from_policy(&from(policy(spec).into_value())).expect("named");
    let settings = drain::DrainSettings::new(drain::Pacing {
        qps: 20.0,
        burst: 40,
        concurrency: 8,
        request: drain::Pacing::ASSUMED_REQUEST,
    });
    let due: Timestamp = "2026-11-29T09:50:00Z".parse().expect("an instant");
    let pending: Timestamp = "2026-11-29T09:30:00Z".parse().expect("an instant");
    let one_pod = |i: usize| format!("job-{i:06}");
    let cases: Vec<(String, ClusterCache, Timestamp)> = vec![
        (
            "one_pod_jobs/3000".into(),
            cluster(1, 3_000, one_pod, None),
            due,
        ),
        (
            "one_pod_jobs/30000".into(),
            cluster(1, 30_000, one_pod, None),
            due,
        ),
        (
            "one_job/3000".into(),
            cluster(1, 3_000, |_| "big".into(), Some("20%")),
            due,
        ),
        (
            "one_job/30000".into(),
            cluster(1, 30_000, |_| "big".into(), Some("20%")),
            due,
        ),
        ("zones/10".into(), cluster(10, 100, one_pod, None), pending),
        (
            "zones/100".into(),
            cluster(100, 100, one_pod, None),
            pending,
        ),
    ];
    let mut group = c.benchmark_group("drain_growth");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(10));
    for (name, mut cache, now) in cases {
        let snapshot = cache.snapshot();
        let plan = |now: Timestamp| {
            drain::plan(&snapshot, &[&policy], now, &settings, &drain::Live::none())
        };
        let outlooks = plan(now);
        let pods: u32 = outlooks.iter().map(|o| o.remaining).sum();
        let first = outlooks.first().expect("a zone");
        let starting = outlooks.iter().filter(|o| o.start_now).count();
        eprintln!(
            "{name}: {} zones, {pods} pods; {starting} start now; {}: starts {:?}, margin {:?}, at risk {}",
            outlooks.len(),
            first.zone,
            first.drain_start,
            first.margin(),
            first.at_risk,
        );
        group.bench_function(&name, |b| b.iter(|| black_box(plan(now).len())));
    }
    group.finish();
}

criterion_group!(benches, plan_growth);
criterion_main!(benches);
