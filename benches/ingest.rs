//! Ingest at the scale of the performance reference (5,000 nodes / 150,000 pods).
//!
//! 1. Decoding: the same real API server page of 20 pods (tests/fixtures/protobuf) decoded from
//!    protobuf and from JSON, through to the cache's `PodInfo`. A 150,000-pod list is 7,500 such
//!    pages; the figure printed at the start scales the per-page time. (The server's own encoding
//!    cost, which dominates a live cold start, is not measured here: see docs/performance.md.)
//! 2. Memory: bytes the cache holds per pod, counted by a global allocator wrapper (not RSS): the
//!    allocations alive after building the cache of the synthetic 150,000-pod cluster, minus those
//!    before, divided by the pods.
//! 3. The listing peak: the same cluster listed as protobuf pages of 500 through the real list
//!    decoder into a shared cache, the peak of bytes alive against what the synced cache keeps.

use std::{hint::black_box, time::Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use kube::core::ObjectList;
use tidal::{
    cluster::{ClusterCache, NodeInfo, PodInfo},
    runtime::{protobuf::decode_list, watch::listwatch::PAGE},
};
use tidal_testkit::{
    alloc::{self, Counting},
    listing,
    protobuf::fixture,
    synthetic::{SyntheticCluster, SyntheticSpec, generate},
};

// Counts the bytes currently allocated.
tidal::global_allocator!(Counting, Counting);

fn via_protobuf(page: &[u8]) -> Vec<PodInfo> {
    decode_list::<Pod>(page)
        .unwrap()
        .items
        .iter()
        .map(|p| PodInfo::from_pod(p).unwrap())
        .collect()
}

fn via_json(page: &[u8]) -> Vec<PodInfo> {
    let list: ObjectList<Pod> = serde_json::from_slice(page).unwrap();
    list.items
        .iter()
        .map(|p| PodInfo::from_pod(p).unwrap())
        .collect()
}

/// One line per figure, before criterion's own output.
fn summary() {
    let (pb, json) = (fixture("pods-list.pb"), fixture("pods-list.json"));
    const PAGES: u32 = 7_500;
    for (name, page, decode) in [
        ("protobuf", &pb, via_protobuf as fn(&[u8]) -> Vec<PodInfo>),
        ("json", &json, via_json),
    ] {
        let started = Instant::now();
        for _ in 0..PAGES {
            black_box(decode(black_box(page)));
        }
        eprintln!(
            "decode 150,000 pods ({PAGES} real pages of 20) from {name}: {:.2} s, {:.1} MB on the wire",
            started.elapsed().as_secs_f64(),
            (page.len() as f64 * f64::from(PAGES)) / 1e6
        );
    }

    let cluster = generate(&SyntheticSpec::large());
    let before = alloc::live();
    let cache = cluster.to_cache();
    let after = alloc::live();
    let pods = cache.pod_count();
    eprintln!(
        "cache of {} nodes / {pods} pods: {:.0} MB, {:.0} bytes per pod (nodes, jobs and indexes included)",
        cache.node_count(),
        (after - before) as f64 / 1e6,
        (after - before) as f64 / pods as f64
    );
    drop(cache);
    // Where the bytes per pod go: the nodes alone (their share per pod), and a pod's inline part.
    let before = alloc::live();
    let mut nodes_only = ClusterCache::new();
    for node in &cluster.nodes {
        nodes_only.apply_node(NodeInfo::from_node(node).unwrap());
    }
    let nodes = alloc::live() - before;
    eprintln!(
        "of which the nodes alone: {:.0} MB ({:.0} bytes per pod); a PodInfo is {} bytes inline",
        nodes as f64 / 1e6,
        nodes as f64 / pods as f64,
        std::mem::size_of::<PodInfo>()
    );
    drop(nodes_only);
    listing_peak(&cluster);
}

/// The listing peak against the synced cache, both counted from the same start.
fn listing_peak(cluster: &SyntheticCluster) {
    let listed = listing::list_nodes_and_pods(cluster);
    let cache = listed.shared.read();
    eprintln!(
        "protobuf list of {} nodes / {} pods in pages of {PAGE}: peak {:.0} MB alive, {:.0} MB kept once synced ({:.2}x)",
        cache.node_count(),
        cache.pod_count(),
        listed.peak as f64 / 1e6,
        listed.kept as f64 / 1e6,
        listed.peak as f64 / listed.kept as f64,
    );
}

fn decode(c: &mut Criterion) {
    summary();
    let (pb, json) = (fixture("pods-list.pb"), fixture("pods-list.json"));
    let mut group = c.benchmark_group("decode_20_pod_page");
    group.bench_function("protobuf", |b| b.iter(|| via_protobuf(black_box(&pb))));
    group.bench_function("json", |b| b.iter(|| via_json(black_box(&json))));
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
