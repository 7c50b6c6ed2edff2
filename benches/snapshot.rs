//! What the cluster cache costs at the scale tidal is built for (5,000 nodes, 150,000 pods):
//! - `full_build`: a snapshot from scratch (`ClusterCache::snapshot`) of an unchanged cache, dropped outside
//!   the timing;
//! - `churn_1pct/*`: 1% of the pods change (about 1,500 pod events and 15 node events), then the long-lived
//!   snapshot is brought up to date: the events alone, the update alone, both, and for comparison a full
//!   rebuild in place of the update (replacing, and so dropping, the previous snapshot), and the events
//!   with no snapshot outstanding (no copy-on-write);
//! - `ingest/*`: the whole cluster fed to an empty cache, as on start-up or relist: converting the API
//!   objects and applying them, and applying already converted ones.
//!
//! Churn swings the cache back and forth (events, then their undo), so every iteration sees the same
//! cluster size. Run with `cargo bench --bench snapshot`.

use std::{
    hint::black_box,
    time::{Duration, Instant},
};

use criterion::{BatchSize, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use tidal::cluster::{ClusterCache, NodeInfo, PodInfo, Snapshot};
use tidal_testkit::synthetic::{Churn, SyntheticCluster, SyntheticSpec, churn, generate};

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

fn benches(c: &mut Criterion) {
    let cluster = generate(&SyntheticSpec::large());
    let mut cache = cluster.to_cache();
    let mut group = c.benchmark_group("snapshot_5000_nodes_150000_pods");
    // Flat sampling: iterations take tens to hundreds of milliseconds, and the whole run should stay
    // within a couple of minutes.
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));

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
    group.bench_function("churn_1pct/update_snapshot", |b| {
        b.iter_custom(|iters| {
            timed(iters, &mut cache, &mut live, |cache, live, elapsed| {
                swing.step(cache);
                let start = Instant::now();
                black_box(cache.update_snapshot(live));
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
    // The same cycle without increments: rebuild from scratch and drop the previous snapshot.
    group.bench_function("churn_1pct/full_rebuild", |b| {
        b.iter_custom(|iters| {
            timed(iters, &mut cache, &mut live, |cache, live, elapsed| {
                swing.step(cache);
                let start = Instant::now();
                *live = cache.snapshot();
                *elapsed += start.elapsed();
            })
        })
    });
    // The events again with no snapshot sharing the cache's aggregates: the difference with
    // `apply_events` is what copy-on-write costs.
    drop(live);
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

criterion_group!(snapshot, benches);
criterion_main!(snapshot);
