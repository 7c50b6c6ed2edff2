//! What the cluster cache costs at the scale tidal is built for (5,000 nodes, 150,000 pods):
//! - `full_build`: a snapshot from scratch (`ClusterCache::snapshot`) of an unchanged cache, dropped outside
//!   the timing;
//! - `churn_1pct/*`: 1% of the pods change (about 1,500 pod events and 15 node events), then the long-lived
//!   snapshot is brought up to date: the events alone, the update alone (what the cache's lock is held
//!   for; the versions it let go of are freed after the clock stops), freeing those alone, events and
//!   update and freeing together, and for comparison a full rebuild in place of the update (the previous
//!   snapshot freed after the clock stops, or within it), and the events with no snapshot outstanding
//!   (no copy-on-write); the freeing is also split in two: the pod versions the churn replaced or
//!   deleted, and the rest; `apply_converted` (and `_unshared`) time the cache's side of the events
//!   alone, the API objects converted before the clock starts; `churn_1pct/lent/*` do the same with the
//!   snapshot's nodes and jobs lent to the cache while the churn is applied, as the controller lends
//!   them between cycles (the update, its frees, both, and the cache's side of the events);
//! - `relist_unchanged/apply_and_update`: every pod applied again as the cache already holds it (a
//!   relist after a 410 Gone that finds nothing changed), then the snapshot update and its frees;
//! - `ingest/*`: the whole cluster fed to an empty cache, as on start-up or relist: converting the API
//!   objects and applying them, and applying already converted ones.
//!
//! - `steady_cycle`: what one steady controller cycle costs once the watches applied a 1% churn (outside
//!   the timing): the snapshot update and the lowNodeUtilization policy of the performance reference
//!   (thresholds 20/20/20, targets 50/50/50) planned through the full gate chain, as
//!   `tidal_plan_duration_seconds` measures it
//!   (the versions the update let go of are freed after the plan, outside the timing, as the controller
//!   frees them, and the snapshot is lent to the cache until the next update; the plan itself is
//!   dropped within it); `steady_cycle_shared` keeps the snapshot sharing the aggregates between
//!   cycles instead, for comparison with the lending.
//!
//! - `steady_cycle_real_server_shape`: the same, over the cluster the real-server runs of
//!   docs/performance.md populated (uniform nodes, one ReplicaSet per ten pods, 15% of the nodes
//!   nearly empty and 15% at 75% cpu) with their policy, and no churn: what `tidal run` measured
//!   there, so that the bench and the live controller can be compared on one cluster.
//!
//! Churn swings the cache back and forth (events, then their undo), so every iteration sees the same
//! cluster size. Run with `cargo bench --bench snapshot` (`-- steady_cycle` for the cycle alone).

// What the binary runs on, so that the figures are the binary's.
tidal::global_allocator!();

use std::{
    hint::black_box,
    sync::Arc,
    time::{Duration, Instant},
};

use criterion::{
    BatchSize, BenchmarkGroup, Criterion, SamplingMode, Throughput, criterion_group,
    criterion_main, measurement::WallTime,
};
use k8s_openapi::api::core::v1::{Node, Pod};
use tidal::{
    api::DeschedulingPolicySpec,
    cluster::{ClusterCache, NodeInfo, ObjectKey, PodInfo, PolicyInfo, Snapshot},
    drain,
    planner::{self, SkipRows},
};
use tidal_testkit::synthetic::{
    Churn, ChurnEvent, SyntheticCluster, SyntheticSpec, churn, generate,
};

/// Alternates between applying a churn and undoing it.
struct Swing {
    churn: Churn,
    forward: bool,
}

impl Swing {
    fn step(&mut self, cache: &mut ClusterCache) {
        if self.forward {
            self.churn.apply(cache);
        } else {
            self.churn.revert(cache);
        }
        self.forward = !self.forward;
    }
}

/// Ten samples, flat: iterations take tens to hundreds of milliseconds, and the whole run should stay
/// within a couple of minutes.
fn flat_group<'c>(
    c: &'c mut Criterion,
    name: &str,
    measurement: Duration,
) -> BenchmarkGroup<'c, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(measurement);
    group
}

fn benches(c: &mut Criterion) {
    let cluster = generate(&SyntheticSpec::large());
    let mut cache = cluster.to_cache();
    let mut group = flat_group(c, "snapshot_5000_nodes_150000_pods", Duration::from_secs(5));

    group.bench_function("full_build", |b| {
        b.iter_with_large_drop(|| cache.snapshot())
    });

    let mut live = cache.snapshot();
    let mut swing = Swing {
        churn: churn(&cluster, 0.01, 1),
        forward: true,
    };
    group.throughput(Throughput::Elements(swing.churn.events.len() as u64));
    group.bench_function("churn_1pct/apply_events", |b| {
        b.iter_custom(|iters| {
            timed(iters, &mut cache, &mut live, |cache, live, elapsed| {
                let start = Instant::now();
                swing.step(cache);
                *elapsed += start.elapsed();
                cache.update_snapshot(live);
            })
        })
    });
    // The update as the cache's lock sees it: the versions it let go of are freed after the clock
    // stops, as a caller does once it released the lock (`free_retired` times that part). Each also
    // the controller's way (`lent/`): once a cycle's plan is made, the snapshot lends its nodes and
    // jobs to the cache until the next update, so that the churn changes the aggregates in place and
    // the update replaces stand-ins.
    for (prefix, lend) in [("churn_1pct/", false), ("churn_1pct/lent/", true)] {
        let mut churn_while = |cache: &mut ClusterCache, live: &mut Snapshot| {
            if lend {
                cache.lend_snapshot(live);
            }
            swing.step(cache);
        };
        group.bench_function(format!("{prefix}update_snapshot"), |b| {
            b.iter_custom(|iters| {
                timed(iters, &mut cache, &mut live, |cache, live, elapsed| {
                    churn_while(cache, live);
                    let start = Instant::now();
                    let update = black_box(cache.update_snapshot(live));
                    *elapsed += start.elapsed();
                    drop(update);
                })
            })
        });
        group.bench_function(format!("{prefix}free_retired"), |b| {
            b.iter_custom(|iters| {
                timed(iters, &mut cache, &mut live, |cache, live, elapsed| {
                    churn_while(cache, live);
                    let update = black_box(cache.update_snapshot(live));
                    let start = Instant::now();
                    drop(update);
                    *elapsed += start.elapsed();
                })
            })
        });
        if lend {
            group.bench_function(format!("{prefix}update_and_free"), |b| {
                b.iter_custom(|iters| {
                    timed(iters, &mut cache, &mut live, |cache, live, elapsed| {
                        churn_while(cache, live);
                        let start = Instant::now();
                        drop(black_box(cache.update_snapshot(live)));
                        *elapsed += start.elapsed();
                    })
                })
            });
        }
    }
    // How much of `free_retired` is the pods themselves: the versions the churn replaced or deleted,
    // which a cache without a snapshot frees too, as it applies the events. Here they are held past the
    // update, so that `free_retired_but_pods` times the rest (copied tree paths, node and job versions)
    // and `free_replaced_pods` the pods alone.
    let churned: Vec<ObjectKey> = swing
        .churn
        .events
        .iter()
        .filter_map(ChurnEvent::pod_key)
        .collect();
    let held = |cache: &ClusterCache| -> Vec<Arc<PodInfo>> {
        churned
            .iter()
            .filter_map(|key| cache.pod(key).cloned())
            .collect()
    };
    group.bench_function("churn_1pct/free_retired_but_pods", |b| {
        b.iter_custom(|iters| {
            timed(iters, &mut cache, &mut live, |cache, live, elapsed| {
                let replaced = held(cache);
                swing.step(cache);
                let update = black_box(cache.update_snapshot(live));
                let start = Instant::now();
                drop(update);
                *elapsed += start.elapsed();
                drop(replaced);
            })
        })
    });
    group.bench_function("churn_1pct/free_replaced_pods", |b| {
        b.iter_custom(|iters| {
            timed(iters, &mut cache, &mut live, |cache, live, elapsed| {
                let replaced = held(cache);
                swing.step(cache);
                drop(black_box(cache.update_snapshot(live)));
                let start = Instant::now();
                drop(replaced);
                *elapsed += start.elapsed();
            })
        })
    });
    group.bench_function("churn_1pct/apply_and_update", |b| {
        b.iter_custom(|iters| {
            timed(iters, &mut cache, &mut live, |cache, live, elapsed| {
                let start = Instant::now();
                swing.step(cache);
                black_box(cache.update_snapshot(live));
                *elapsed += start.elapsed();
            })
        })
    });
    // The same cycle without increments: rebuild from scratch, the previous snapshot freed after the
    // clock stops as `update_snapshot` frees what it let go of (`full_rebuild_and_free` with it).
    group.bench_function("churn_1pct/full_rebuild", |b| {
        b.iter_custom(|iters| {
            timed(iters, &mut cache, &mut live, |cache, live, elapsed| {
                swing.step(cache);
                let start = Instant::now();
                let previous = std::mem::replace(live, cache.snapshot());
                *elapsed += start.elapsed();
                drop(previous);
            })
        })
    });
    group.bench_function("churn_1pct/full_rebuild_and_free", |b| {
        b.iter_custom(|iters| {
            timed(iters, &mut cache, &mut live, |cache, live, elapsed| {
                swing.step(cache);
                let start = Instant::now();
                *live = cache.snapshot();
                *elapsed += start.elapsed();
            })
        })
    });
    // The cache's side of the events alone: the churn converted to the cache's types before the clock
    // starts, so that what is timed is what applying them to the cache costs (copies on write
    // included), not the conversion of API objects that dominates `apply_events`.
    let mut converted = ConvertedSwing::of(&swing);
    for (prefix, lend) in [("churn_1pct/", false), ("churn_1pct/lent/", true)] {
        group.bench_function(format!("{prefix}apply_converted"), |b| {
            b.iter_custom(|iters| {
                timed(iters, &mut cache, &mut live, |cache, live, elapsed| {
                    let batch = converted.next_batch();
                    if lend {
                        cache.lend_snapshot(live);
                    }
                    let start = Instant::now();
                    apply_converted(cache, batch);
                    *elapsed += start.elapsed();
                    cache.update_snapshot(live);
                })
            })
        });
    }
    // A relist that finds every pod as the cache holds it (after a 410 Gone, say): each pod applied
    // again, then the long-lived snapshot brought up to date and what it let go of freed.
    if !converted.forward {
        apply_converted(&mut cache, converted.next_batch());
        cache.update_snapshot(&mut live);
    }
    let unchanged = Converted::of(&cluster).pods;
    let relist = |cache: &mut ClusterCache, live: &mut Snapshot, pods: Vec<PodInfo>| {
        for pod in pods {
            cache.apply_pod(pod, jiff::Timestamp::UNIX_EPOCH);
        }
        cache.update_snapshot(live)
    };
    let update = relist(&mut cache, &mut live, unchanged.clone());
    eprintln!(
        "relist_unchanged: the update after it synced {} entries",
        update.entries_synced
    );
    drop(update);
    group
        .measurement_time(Duration::from_secs(15))
        .throughput(Throughput::Elements(unchanged.len() as u64));
    group.bench_function("relist_unchanged/apply_and_update", |b| {
        b.iter_custom(|iters| {
            timed(iters, &mut cache, &mut live, |cache, live, elapsed| {
                let pods = unchanged.clone();
                let start = Instant::now();
                drop(relist(cache, live, pods));
                *elapsed += start.elapsed();
            })
        })
    });
    drop(unchanged);
    group
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(swing.churn.events.len() as u64));
    // The events again with no snapshot sharing the cache's aggregates: the difference with
    // `apply_events` (and `apply_converted`) is what copy-on-write costs.
    drop(live);
    group.bench_function("churn_1pct/apply_converted_unshared", |b| {
        b.iter_custom(|iters| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iters {
                let batch = converted.next_batch();
                let start = Instant::now();
                apply_converted(&mut cache, batch);
                elapsed += start.elapsed();
            }
            elapsed
        })
    });
    swing.forward = converted.forward;
    group.bench_function("churn_1pct/apply_events_unshared", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            for _ in 0..iters {
                swing.step(&mut cache);
            }
            start.elapsed()
        })
    });
    drop(cache);

    // About a second per iteration, so one per sample; the caches are dropped outside the timing.
    group
        .measurement_time(Duration::from_secs(15))
        .throughput(Throughput::Elements(cluster.pods.len() as u64));
    group.bench_function("ingest/convert_and_apply", |b| {
        b.iter_with_large_drop(|| cluster.to_cache())
    });
    group.bench_function("ingest/apply_converted", |b| {
        b.iter_batched(
            || Converted::of(&cluster),
            Converted::into_cache,
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

/// Runs `iteration` `iters` times; it adds the part it measures to the elapsed time it is given.
fn timed(
    iters: u64,
    cache: &mut ClusterCache,
    live: &mut Snapshot,
    mut iteration: impl FnMut(&mut ClusterCache, &mut Snapshot, &mut Duration),
) -> Duration {
    let mut elapsed = Duration::ZERO;
    for _ in 0..iters {
        iteration(cache, live, &mut elapsed);
    }
    elapsed
}

/// A churn event converted to what the cache takes.
#[derive(Clone)]
enum ConvertedEvent {
    Pod(PodInfo),
    PodDeleted(ObjectKey),
    Node(NodeInfo),
}

impl ConvertedEvent {
    fn all(events: &[ChurnEvent]) -> Vec<ConvertedEvent> {
        events
            .iter()
            .filter_map(|event| match event {
                ChurnEvent::PodApplied(pod) => PodInfo::from_pod(pod).ok().map(ConvertedEvent::Pod),
                ChurnEvent::PodDeleted(key) => Some(ConvertedEvent::PodDeleted(key.clone())),
                ChurnEvent::NodeApplied(node) => {
                    NodeInfo::from_node(node).ok().map(ConvertedEvent::Node)
                }
            })
            .collect()
    }
}

/// [`Swing`] over converted events: each batch is a fresh copy, made before the clock starts.
struct ConvertedSwing {
    events: Vec<ConvertedEvent>,
    undo: Vec<ConvertedEvent>,
    forward: bool,
}

impl ConvertedSwing {
    /// Starts where `swing` stands.
    fn of(swing: &Swing) -> ConvertedSwing {
        ConvertedSwing {
            events: ConvertedEvent::all(&swing.churn.events),
            undo: ConvertedEvent::all(&swing.churn.undo),
            forward: swing.forward,
        }
    }

    fn next_batch(&mut self) -> Vec<ConvertedEvent> {
        let batch = if self.forward {
            &self.events
        } else {
            &self.undo
        };
        self.forward = !self.forward;
        batch.clone()
    }
}

fn apply_converted(cache: &mut ClusterCache, batch: Vec<ConvertedEvent>) {
    for event in batch {
        match event {
            ConvertedEvent::Pod(pod) => cache.apply_pod(pod, jiff::Timestamp::UNIX_EPOCH),
            ConvertedEvent::PodDeleted(key) => cache.delete_pod(&key, jiff::Timestamp::UNIX_EPOCH),
            ConvertedEvent::Node(node) => cache.apply_node(node),
        }
    }
}

/// Nodes and pods already converted, to time the cache apart from the conversion.
struct Converted {
    nodes: Vec<NodeInfo>,
    pods: Vec<PodInfo>,
}

impl Converted {
    fn of(cluster: &SyntheticCluster) -> Converted {
        Converted {
            nodes: cluster
                .nodes
                .iter()
                .filter_map(|n| NodeInfo::from_node(n).ok())
                .collect(),
            pods: cluster
                .pods
                .iter()
                .filter_map(|p| PodInfo::from_pod(p).ok())
                .collect(),
        }
    }

    fn into_cache(self) -> ClusterCache {
        let mut cache = ClusterCache::new();
        for node in self.nodes {
            cache.apply_node(node);
        }
        for pod in self.pods {
            cache.apply_pod(pod, jiff::Timestamp::UNIX_EPOCH);
        }
        cache
    }
}

/// The policy of the comparison with the descheduler (docs/performance.md), with the strategies bench's
/// default budget.
const LNU: &str = "mode: Evict
strategies:
  lowNodeUtilization:
    thresholds: {cpu: 20, memory: 20, pods: 20}
    targetThresholds: {cpu: 50, memory: 50, pods: 50}
defaults:
  jobBudget: {maxUnavailable: 25%}
";

/// The controller's cap on detailed skip rows (`controller::cycle`).
const SKIP_ROWS: SkipRows = SkipRows::AtMost(1_000);

fn steady_cycle(c: &mut Criterion) {
    let cluster = generate(&SyntheticSpec::large());
    let mut cache = cluster.to_cache();
    let spec: DeschedulingPolicySpec = serde_saphyr::from_str(LNU).expect("the bench's policy");
    let policy = PolicyInfo::new("lnu".into(), None, spec);
    let now = cluster.spec.now;
    let plan = |snapshot: &Snapshot| {
        let cycle = planner::plan_all_with(snapshot, &[&policy], now, SKIP_ROWS);
        let plan = &cycle.plans[0];
        assert!(plan.error.is_none(), "{:?}", plan.error);
        let skips: u32 = plan.skip_counts.values().sum();
        (plan.evictions.len(), skips)
    };
    let mut live = cache.snapshot();
    let mut swing = Swing {
        churn: churn(&cluster, 0.01, 1),
        forward: true,
    };
    // The plan of either state the churn swings between, so that a change of decisions shows.
    for state in ["unchanged", "after 1% churn"] {
        let start = Instant::now();
        let (evictions, skips) = plan(&live);
        eprintln!(
            "steady_cycle, {state}: {evictions} evictions planned, {skips} skipped, in {:?}",
            start.elapsed()
        );
        swing.step(&mut cache);
        cache.update_snapshot(&mut live);
    }
    let mut group = flat_group(c, "cycle_5000_nodes_150000_pods", Duration::from_secs(10));
    // As the controller does: what the update let go of is freed once the plan is made
    // (`churn_1pct/lent/free_retired` times that), and the snapshot's nodes and jobs are lent to the
    // cache until the next update. `steady_cycle_shared` keeps the snapshot sharing the aggregates
    // between cycles instead, for comparison: the churn copies on write, and the update frees the
    // copies (after the clock).
    for (name, lend) in [("steady_cycle", true), ("steady_cycle_shared", false)] {
        // Whatever the previous bench left lent comes back.
        cache.update_snapshot(&mut live);
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                timed(iters, &mut cache, &mut live, |cache, live, elapsed| {
                    swing.step(cache);
                    let start = Instant::now();
                    let update = cache.update_snapshot(live);
                    black_box(plan(live));
                    *elapsed += start.elapsed();
                    drop(update);
                    if lend {
                        cache.lend_snapshot(live);
                    }
                })
            })
        });
    }
    group.finish();
}

criterion_group!(
    snapshot,
    benches,
    steady_cycle,
    steady_cycle_real_server_shape,
    steady_tdm_closed_zones,
    drain_plan_three_zones
);
criterion_main!(snapshot);

/// The policy of the real-server runs (`bench-lnu` in docs/performance.md).
const REAL_SERVER_LNU: &str = "mode: DryRun
strategies:
  lowNodeUtilization:
    thresholds: {cpu: 20, memory: 20, pods: 20}
    targetThresholds: {cpu: 50, memory: 50, pods: 50}
    usage: {source: Requests}
";

/// The TDM policy of the drained zones: placement violations are left alone, as by default.
const REAL_SERVER_TDM: &str = "mode: Evict
strategies:
  tdm: {evictPlacementViolations: false}
";

/// The cluster the real-server runs populated, as its populator built it: 5,000 nodes of 32 cpu,
/// 128Gi and 110 pods over three zones; per 20 nodes, 3 with 10 pods of 100m / 256Mi, 3 with 45 of
/// 533m / 2184Mi and 14 with 31 (32 on 250 of them) of 360m / 1480Mi; the pods spread over 200
/// namespaces in turn, ten consecutive pods of a namespace to a ReplicaSet, all running and ready.
fn real_server_shape() -> ClusterCache {
    real_server_shape_with_zones(0)
}

/// [`real_server_shape`] with the first `zone_nodes` nodes in two revocable zones (half each), both
/// closed at the bench's instant; their pods are not preemptable (the zones' preemptable pods are
/// gone), so TDM leaves every one of them alone.
fn real_server_shape_with_zones(zone_nodes: usize) -> ClusterCache {
    let mut cache = ClusterCache::new();
    if zone_nodes > 0 {
        for zone in ["rz1", "rz2"] {
            // Closed at the bench's instant (2026-11-18T11:06:40Z).
            apply_zone(
                &mut cache,
                zone,
                serde_json::json!({"windows": [{"time": "08:00-09:00"}]}),
            );
        }
    }
    fill_real_server_shape(
        &mut cache,
        |n| (n < zone_nodes).then_some(if n < zone_nodes / 2 { "rz1" } else { "rz2" }),
        |_, _| {},
    );
    cache
}

fn apply_zone(cache: &mut ClusterCache, name: &str, spec: serde_json::Value) {
    let object: tidal::api::RevocableZone = serde_json::from_value(serde_json::json!({
        "apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone",
        "metadata": {"name": name}, "spec": spec,
    }))
    .expect("a zone");
    cache.apply_zone(tidal::cluster::ZoneInfo::from_zone(&object).expect("named"));
}

/// The nodes and pods of [`real_server_shape`], node `n` in the revocable zone `zone_of(n)`, each
/// pod's JSON given to `adapt` with its node's zone before it is applied.
fn fill_real_server_shape(
    cache: &mut ClusterCache,
    zone_of: impl Fn(usize) -> Option<&'static str>,
    mut adapt: impl FnMut(&'static str, &mut serde_json::Value),
) {
    const NAMESPACES: usize = 200;
    let heartbeat = "2026-11-25T00:00:00Z";
    let mut i = 0usize;
    for n in 0..5_000usize {
        let name = format!("node-{n:04}");
        let resources = serde_json::json!({"cpu": "32", "memory": "128Gi", "pods": "110"});
        let mut labels = serde_json::json!({
            "kubernetes.io/hostname": name, "topology.kubernetes.io/zone": format!("zone-{}", n % 3)});
        let zone = zone_of(n);
        if let Some(zone) = zone {
            labels["volcano.sh/revocable-zone"] = serde_json::json!(zone);
        }
        let node: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": labels},
            "status": {"capacity": resources, "allocatable": resources, "conditions": [{
                "type": "Ready", "status": "True", "reason": "KubeletReady",
                "lastHeartbeatTime": heartbeat, "lastTransitionTime": heartbeat}]},
        }))
        .expect("a node");
        cache.apply_node(NodeInfo::from_node(&node).expect("named"));
        let (count, cpu, memory) = match n % 20 {
            0..3 => (10, "100m", "256Mi"),
            3..6 => (45, "533m", "2184Mi"),
            6 if n / 20 < 250 => (32, "360m", "1480Mi"),
            _ => (31, "360m", "1480Mi"),
        };
        for _ in 0..count {
            let namespace = format!("bench-{:03}", i % NAMESPACES);
            let replica_set = format!("rs-{:05}", i / NAMESPACES / 10);
            let mut pod = serde_json::json!({
                "metadata": {"name": format!("pod-{i:06}"), "namespace": namespace,
                    "labels": {"app": replica_set},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "name": replica_set, "uid": format!("rs-{}-{replica_set}", &namespace[6..]),
                        "controller": true, "blockOwnerDeletion": true}]},
                "spec": {"nodeName": name, "containers": [{"name": "app",
                    "image": "registry.example/app:1",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
                "status": {"phase": "Running", "startTime": heartbeat,
                    "conditions": [{"type": "Ready", "status": "True"}]},
            });
            if let Some(zone) = zone {
                adapt(zone, &mut pod);
            }
            let pod: Pod = serde_json::from_value(pod).expect("a pod");
            cache.apply_pod(
                PodInfo::from_pod(&pod).expect("named"),
                jiff::Timestamp::UNIX_EPOCH,
            );
            i += 1;
        }
    }
}

/// The three zones of the real-server drain runs, in [`real_server_shape`]: `rz1` (nodes 0-499)
/// with 6,304 preemptable one-pod jobs, `rz2` (500-999) with 3,837, `rz3` (1,000-1,199) with 988
/// and 40 jobs of 25 pods owned by their PodGroups (`jdb-max-unavailable: 20%`, grace 20 s); the
/// other pods on the zones are not preemptable. `rz1` and `rz3` close at 11:26:01, `rz2` at 11:28:01,
/// about 20 minutes after the bench's instant; `spec` is merged into each zone's.
fn three_draining_zones(spec: &serde_json::Value) -> ClusterCache {
    let mut cache = ClusterCache::new();
    for (zone, close) in [("rz1", "11:26"), ("rz2", "11:28"), ("rz3", "11:26")] {
        let mut zone_spec = serde_json::json!({"windows": [{"time": format!("00:00-{close}")}]});
        for (key, value) in spec.as_object().into_iter().flatten() {
            zone_spec[key] = value.clone();
        }
        apply_zone(&mut cache, zone, zone_spec);
    }
    for group in 0..40 {
        let podgroup: tidal::api::PodGroup = serde_json::from_value(serde_json::json!({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": format!("gang-{group:02}"), "namespace": "bench-gang",
                "annotations": {"volcano.sh/jdb-max-unavailable": "20%"}},
            "spec": {"minMember": 1},
        }))
        .expect("a PodGroup");
        cache
            .apply_podgroup(tidal::cluster::PodGroupInfo::from_podgroup(&podgroup).expect("named"));
    }
    let mut preemptable: std::collections::BTreeMap<&'static str, usize> = Default::default();
    fill_real_server_shape(
        &mut cache,
        |n| match n {
            0..500 => Some("rz1"),
            500..1_000 => Some("rz2"),
            1_000..1_200 => Some("rz3"),
            _ => None,
        },
        |zone, pod| {
            let count = preemptable.entry(zone).or_default();
            let one_pod_jobs = match zone {
                "rz1" => 6_304,
                "rz2" => 3_837,
                _ => 988,
            };
            let name = pod["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if *count < one_pod_jobs {
                pod["metadata"]["annotations"] =
                    serde_json::json!({"volcano.sh/preemptable": "true"});
                pod["metadata"]["ownerReferences"][0]["name"] = serde_json::json!(name);
                pod["metadata"]["ownerReferences"][0]["uid"] =
                    serde_json::json!(format!("rs-{name}"));
            } else if zone == "rz3" && *count < one_pod_jobs + 1_000 {
                let group = format!("gang-{:02}", (*count - one_pod_jobs) / 25);
                pod["metadata"]["namespace"] = serde_json::json!("bench-gang");
                pod["metadata"]["annotations"] = serde_json::json!({
                    "volcano.sh/preemptable": "true", "scheduling.k8s.io/group-name": group});
                pod["metadata"]["ownerReferences"] = serde_json::json!([{
                    "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                    "name": group, "uid": format!("pg-{group}"), "controller": true}]);
                pod["spec"]["terminationGracePeriodSeconds"] = serde_json::json!(20);
            }
            *count += 1;
        },
    );
    cache
}

/// The drain plan the controller makes every few seconds while drains are near or under way, over
/// the real-server cluster with the three zones of the drain runs: `waiting`, 19 minutes before the
/// closes, with `rz1` and `rz3` choosing their `auto` starts together (`rz2` starts 10 minutes
/// ahead); `draining`, every zone draining (a lead of an hour). The snapshot update is in the timing,
/// as the controller's refresh has it. Beside `steady_cycle_real_server_shape`, the
/// lowNodeUtilization cycle of the same cluster.
fn drain_plan_three_zones(c: &mut Criterion) {
    let now = jiff::Timestamp::constant(1_795_000_000, 0);
    let spec: DeschedulingPolicySpec =
        serde_saphyr::from_str(REAL_SERVER_TDM).expect("the bench's policy");
    let policy = PolicyInfo::new("bench-tdm".into(), None, spec);
    let settings = drain::DrainSettings::new(drain::Pacing {
        qps: 20.0,
        burst: 40,
        concurrency: 8,
        request: drain::Pacing::ASSUMED_REQUEST,
    });
    let mut group = flat_group(c, "cycle_5000_nodes_150000_pods", Duration::from_secs(10));
    for (name, spec) in [
        ("drain_plan_three_zones/waiting", serde_json::json!({})),
        (
            "drain_plan_three_zones/draining",
            serde_json::json!({"drainBefore": "1h"}),
        ),
        (
            "drain_plan_three_zones/draining_with_notice",
            serde_json::json!({"drainBefore": "1h", "evictionNotice": "10m"}),
        ),
    ] {
        let mut cache = three_draining_zones(&spec);
        if name.ends_with("waiting") {
            apply_zone(
                &mut cache,
                "rz2",
                serde_json::json!({"windows": [{"time": "00:00-11:28"}], "drainBefore": "10m"}),
            );
        }
        let mut live = cache.snapshot();
        // With notices, what the controller's refresh adds: the notices due (every pod not told yet)
        // and those to take back.
        let notices = name.ends_with("with_notice");
        let nobody = std::collections::HashSet::new();
        let refresh = |cache: &mut ClusterCache, live: &mut Snapshot| {
            drop(cache.update_snapshot(live));
            let plan = drain::plan(live, &[&policy], now, &settings, &drain::Live::none());
            if notices {
                let noticing: Vec<drain::notice::Noticing> = plan
                    .iter()
                    .filter_map(drain::notice::Noticing::of)
                    .collect();
                let due = drain::notice::due(live, &policy, &noticing, now, &nobody);
                let back = drain::notice::withdrawals(live, &noticing, now, &nobody);
                black_box((due.len(), back.len()));
            }
            plan
        };
        for zone in refresh(&mut cache, &mut live) {
            eprintln!(
                "{name}: {}: {} pods, starts {:?}, empty at {:?}, at risk {}",
                zone.zone,
                zone.remaining,
                zone.drain_start,
                zone.expected_empty_at(),
                zone.at_risk
            );
        }
        group.bench_function(name, |b| {
            b.iter(|| black_box(refresh(&mut cache, &mut live).len()))
        });
    }
    group.finish();
}

fn steady_cycle_real_server_shape(c: &mut Criterion) {
    steady_plan(
        c,
        "steady_cycle_real_server_shape",
        real_server_shape(),
        REAL_SERVER_LNU,
    );
}

/// The steady TDM plan once two closed zones of 500 nodes each are drained: about 20,000 pods that
/// are not preemptable stay on them, left alone (`evictPlacementViolations: false`). It should cost no
/// more than the lowNodeUtilization plan of the same cluster (`steady_cycle_real_server_shape`).
fn steady_tdm_closed_zones(c: &mut Criterion) {
    steady_plan(
        c,
        "steady_tdm_closed_zones",
        real_server_shape_with_zones(1_000),
        REAL_SERVER_TDM,
    );
}

/// A steady cycle with nothing changed: the snapshot update and the plan of the policy `spec_yaml`.
fn steady_plan(c: &mut Criterion, name: &str, mut cache: ClusterCache, spec_yaml: &str) {
    let spec: DeschedulingPolicySpec =
        serde_saphyr::from_str(spec_yaml).expect("the bench's policy");
    let policy = PolicyInfo::new(format!("bench-{name}"), None, spec);
    let now = jiff::Timestamp::constant(1_795_000_000, 0);
    let mut live = cache.snapshot();
    let cycle = |cache: &mut ClusterCache, live: &mut Snapshot| {
        drop(cache.update_snapshot(live));
        let cycle = planner::plan_all_with(live, &[&policy], now, SKIP_ROWS);
        let plan = &cycle.plans[0];
        assert!(plan.error.is_none(), "{:?}", plan.error);
        let skips: u32 = plan.skip_counts.values().sum();
        (plan.evictions.len(), skips)
    };
    let (evictions, skips) = cycle(&mut cache, &mut live);
    eprintln!(
        "{name}: {} nodes, {} pods; {evictions} evictions planned, {skips} skipped",
        live.nodes.len(),
        live.pod_count(),
    );
    let mut group = flat_group(c, "cycle_5000_nodes_150000_pods", Duration::from_secs(10));
    group.bench_function(name, |b| b.iter(|| black_box(cycle(&mut cache, &mut live))));
    group.finish();
}
