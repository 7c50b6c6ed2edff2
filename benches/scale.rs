//! tidal at the largest clusters users run: 65,000 nodes / 2,000,000 pods by default (`SCALE_NODES`,
//! `SCALE_PODS` to change; at 5,000 / 150,000 it reproduces the other benches' reference size). One
//! synthetic cluster, three revocable zones closed at the instant observed (their pods, about 50,000 a
//! zone at the default size, draining), then in order:
//!
//! 1. the nodes and pods listed as protobuf pages of 500 through the real list decoder into a shared
//!    cache: time, the peak of bytes alive and what the synced cache keeps (per pod);
//! 2. the cache built from the same objects, its snapshot, and a snapshot update after 1% churn (the
//!    churn applied, then the update timed; five times, forward and back);
//! 3. one plan of lowNodeUtilization, one of TDM with the three zones draining (three times each);
//! 4. the cluster saved as a JSON `List`, then `tidal report -f` on it and `tidal timeline -f --span
//!    24h`, each as its own process under `/usr/bin/time` (wall time and peak RSS).
//!
//! Bytes are counted by a global allocator wrapper (bytes alive, not RSS). Not a criterion bench:
//! each step is one measurement of seconds to minutes. The pods are never all held as Kubernetes
//! objects (about 8.5 KB each): the deterministic generator makes them again for each step that reads
//! them, a page at a time, and only the nodes, zones, PodGroups and PDBs stay; listing counts the bytes
//! allocated while a page is encoded, decoded and applied, not the generator's. The default size needs
//! about 4 GB of memory and 3 GB of disk for the saved cluster (`TMPDIR`; `TIDAL_KEEP_DUMPS=DIR` keeps
//! it). The steps allocate millions of small objects: with glibc's malloc the listing alone runs for
//! tens of minutes at the default size (docs/performance.md).
//! Run with `cargo bench --bench scale`.

use std::{
    collections::HashSet,
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod};
use tidal::{
    api::{DeschedulingPolicySpec, zone::WindowSpec},
    cluster::{ClusterCache, ObjectKind, PodInfo, PolicyInfo, SharedCache, Snapshot},
    framework, planner,
    runtime::watch::listwatch::PAGE,
};
use tidal_testkit::{
    alloc::{self, Counting},
    listing::{self, Lister},
    saved,
    synthetic::{SyntheticCluster, SyntheticSpec, churn, generate_each},
};

tidal::global_allocator!(Counting, Counting);

fn size(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.replace(['_', ','], "").parse().ok())
        .unwrap_or(default)
}

fn mb(bytes: isize) -> String {
    format!("{:.0} MB", bytes as f64 / 1e6)
}

fn secs(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

/// The cluster: 30 pods a node as at the reference size, three zones on 7.5% of the workers, every
/// zone closed at `spec.now` (Monday 12:00 UTC; open 20:00-08:00 UTC daily), so that they all drain.
/// Every pod goes to `each`; the cluster returned holds the other objects.
fn cluster(spec: &SyntheticSpec, each: &mut dyn FnMut(Pod)) -> SyntheticCluster {
    let mut cluster = generate_each(spec, each);
    for zone in &mut cluster.zones {
        zone.spec.windows = vec![WindowSpec {
            time: "20:00-08:00".into(),
            days: Vec::new(),
        }];
        zone.spec.time_zone = "UTC".into();
    }
    cluster
}

fn spec(nodes: usize, pods: usize) -> SyntheticSpec {
    SyntheticSpec {
        nodes,
        pods,
        namespaces: (pods / 750).max(8),
        revocable_zones: 3,
        revocable_node_share: 0.075,
        ..SyntheticSpec::large()
    }
}

/// Step 1: the nodes, then the pods as the generator makes them, listed into a new shared cache.
fn list(spec: &SyntheticSpec, nodes: &[Node], pods: usize) {
    let shared = SharedCache::new(&[ObjectKind::Node, ObjectKind::Pod]);
    let node_cost = listing::list_into(&shared, nodes, "nodes", "Node");
    let mut lister = Lister::new(&shared, "pods", "Pod");
    let mut page = Vec::with_capacity(PAGE as usize);
    drop(cluster(spec, &mut |pod| {
        page.push(pod);
        if page.len() == PAGE as usize {
            lister.page(&page);
            page.clear();
        }
    }));
    lister.page(&page);
    drop(page);
    let pod_cost = lister.done();
    let kept = node_cost.kept + pod_cost.kept;
    let peak = node_cost.peak.max(node_cost.kept + pod_cost.peak);
    eprintln!(
        "1. listed as protobuf pages into the shared cache: {} decoding and applying, peak {} alive, {} kept ({:.0} bytes per pod; peak {:.2}x kept)",
        secs(node_cost.took + pod_cost.took),
        mb(peak),
        mb(kept),
        kept as f64 / pods as f64,
        peak as f64 / kept as f64,
    );
}

/// Step 2: the cache of every object, each pod converted and applied as the generator makes it (the
/// time is that of converting and applying). Keeps every hundredth pod for the churn.
fn cache_of(
    spec: &SyntheticSpec,
    rest: &SyntheticCluster,
    pods: usize,
) -> (ClusterCache, Vec<Pod>) {
    let before = alloc::live();
    let mut cache = ClusterCache::new();
    let started = Instant::now();
    rest.ingest_into(&mut cache);
    let mut took = started.elapsed();
    let (mut sample, mut sample_bytes, mut seen) = (Vec::new(), 0, 0usize);
    drop(cluster(spec, &mut |pod| {
        let started = Instant::now();
        if let Ok(info) = PodInfo::from_pod(&pod) {
            cache.apply_pod(info, Timestamp::UNIX_EPOCH);
        }
        took += started.elapsed();
        if seen % 100 == 0 {
            let held = alloc::live();
            sample.push(pod);
            sample_bytes += alloc::live() - held;
        }
        seen += 1;
    }));
    let kept = alloc::live() - before - sample_bytes;
    eprintln!(
        "2. cache of every object: {}, {} ({:.0} bytes per pod)",
        secs(took),
        mb(kept),
        kept as f64 / pods as f64
    );
    (cache, sample)
}

fn lnu() -> PolicyInfo {
    let spec: DeschedulingPolicySpec = serde_saphyr::from_str(
        "mode: DryRun\nstrategies:\n  lowNodeUtilization: {thresholds: {cpu: 20, memory: 20, pods: 20}, \
         targetThresholds: {cpu: 50, memory: 50, pods: 50}}\n",
    )
    .unwrap();
    PolicyInfo::new("lnu".into(), None, spec)
}

/// Plans `policy` three times; the median time, and the evictions and skips of the last plan.
fn plan(snapshot: &Snapshot, policy: &PolicyInfo, now: Timestamp) -> (Duration, usize, usize) {
    let mut runs = Vec::new();
    let mut counts = (0, 0);
    for _ in 0..3 {
        let started = Instant::now();
        let (zones, _) = framework::zone_views(snapshot, now);
        let plan = planner::plan_policy(snapshot, policy, now, &zones, &HashSet::new());
        runs.push(started.elapsed());
        assert!(plan.error.is_none(), "{:?}", plan.error);
        counts = (plan.evictions.len(), plan.skipped.len());
    }
    (median(runs), counts.0, counts.1)
}

/// One of tidal's commands as its own process: its wall time and peak RSS (`/usr/bin/time`).
fn command(args: &[&str]) -> String {
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%e %M"])
        .arg(env!("CARGO_BIN_EXE_tidal"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .output()
        .expect("/usr/bin/time runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or_default();
    match last.split_once(' ') {
        Some((s, kb)) if out.status.success() => {
            let kb: f64 = kb.trim().parse().unwrap_or(0.0);
            format!("{s} s, peak RSS {:.0} MB", kb * 1024.0 / 1e6)
        }
        _ => format!("failed: {}", stderr.trim()),
    }
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument (a filter) that is not ours skips the run.
    if std::env::args()
        .skip(1)
        .any(|a| a != "--bench" && a != "scale")
    {
        return;
    }
    let (nodes, pods) = (size("SCALE_NODES", 65_000), size("SCALE_PODS", 2_000_000));
    let spec = spec(nodes, pods);
    let now = spec.now;
    let started = Instant::now();
    let mut made = 0usize;
    let mut rest = cluster(&spec, &mut |_| made += 1);
    eprintln!(
        "generated {} nodes, {made} pods, {} PodGroups, {} zones in {}",
        rest.nodes.len(),
        rest.podgroups.len(),
        rest.zones.len(),
        secs(started.elapsed())
    );

    list(&spec, &rest.nodes, made);

    let (mut cache, sample) = cache_of(&spec, &rest, made);
    let started = Instant::now();
    let mut snapshot = cache.snapshot();
    eprintln!("   snapshot built in {}", secs(started.elapsed()));
    // Churn of every sampled pod: 1% of the cluster's pods (and a node per hundred of them).
    rest.pods = sample;
    let churned = churn(&rest, 1.0, 1);
    rest.pods = Vec::new();
    let mut updates = Vec::new();
    for swing in 0..5 {
        if swing % 2 == 0 {
            churned.apply(&mut cache);
        } else {
            churned.revert(&mut cache);
        }
        let started = Instant::now();
        let update = cache.update_snapshot(&mut snapshot);
        updates.push(started.elapsed());
        drop(update);
    }
    eprintln!(
        "   snapshot update after 1% churn ({} events): median {} of 5",
        churned.events.len(),
        secs(median(updates))
    );
    // Five swings end churned: back to the cluster as generated.
    churned.revert(&mut cache);
    cache.update_snapshot(&mut snapshot);
    drop(churned);

    let (took, evictions, skipped) = plan(&snapshot, &lnu(), now);
    eprintln!(
        "3. lowNodeUtilization: {evictions} evictions, {skipped} skipped, median {} of 3",
        secs(took)
    );
    let tdm = PolicyInfo::from_policy(&rest.policy).expect("the synthetic policy has a name");
    let (took, evictions, skipped) = plan(&snapshot, &tdm, now);
    eprintln!(
        "   tdm, three zones draining: {evictions} evictions, {skipped} skipped, median {} of 3",
        secs(took)
    );
    drop(snapshot);
    drop(cache);

    let dir = tempfile::tempdir().unwrap();
    let keep = std::env::var("TIDAL_KEEP_DUMPS").ok();
    let path = match &keep {
        Some(keep) => Path::new(keep).join(format!("cluster-{nodes}-{pods}.json")),
        None => dir.path().join("cluster.json"),
    };
    let started = Instant::now();
    let mut list = saved::JsonList::create(&path);
    for object in saved::objects_besides_pods(&rest) {
        list.push(&object);
    }
    drop(cluster(&spec, &mut |pod| {
        list.push(&saved::pod_object(&pod))
    }));
    list.finish();
    eprintln!(
        "4. saved as JSON: {:.0} MB in {} (generating its pods again)",
        std::fs::metadata(&path).unwrap().len() as f64 / 1e6,
        secs(started.elapsed())
    );
    drop(rest);
    let file = path.to_str().unwrap();
    let at = now.to_string();
    let common = ["-f", file, "--max-input-size", "64Gi", "--now", &at];
    eprintln!(
        "   tidal report -f: {}",
        command(&[&["report"], &common[..]].concat())
    );
    eprintln!(
        "   tidal timeline -f --span 24h: {}",
        command(&[&["timeline"], &common[..], &["--span", "24h"]].concat())
    );
}
