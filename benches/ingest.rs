//! Ingest at the scale of issue 10 (5,000 nodes / 150,000 pods).
//!
//! 1. Decoding: the same real API server page of 20 pods (tests/fixtures/protobuf) decoded from
//!    protobuf and from JSON, through to the cache's `PodInfo`. A 150,000-pod list is 7,500 such
//!    pages; the figure printed at the start scales the per-page time. (The server's own encoding
//!    cost, which dominates a live cold start, is not measured here: see docs/performance.md.)
//! 2. Memory: bytes the cache holds per pod, counted by a global allocator wrapper (not RSS): the
//!    allocations alive after building the cache of the synthetic 150,000-pod cluster, minus those
//!    before, divided by the pods.

use std::{
    alloc::{GlobalAlloc, Layout, System},
    hint::black_box,
    sync::atomic::{AtomicIsize, Ordering},
    time::Instant,
};

use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use kube::core::ObjectList;
use tidal::{cluster::PodInfo, runtime::protobuf::decode_list};
use tidal_testkit::{
    protobuf::fixture,
    synthetic::{SyntheticSpec, generate},
};

/// Counts the bytes currently allocated.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

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
    let before = LIVE.load(Ordering::Relaxed);
    let cache = cluster.to_cache();
    let after = LIVE.load(Ordering::Relaxed);
    let pods = cache.pod_count();
    eprintln!(
        "cache of {} nodes / {pods} pods: {:.0} MB, {:.0} bytes per pod (nodes, jobs and indexes included)",
        cache.node_count(),
        (after - before) as f64 / 1e6,
        (after - before) as f64 / pods as f64
    );
    drop(cache);
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
