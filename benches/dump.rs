//! Memory of `tidal report --cluster` at 5,000 nodes / 150,000 pods: the synthetic cluster
//! written as a JSON `List` and as the YAML `kubectl get -o yaml` writes (keys sorted, so `items`
//! before `kind`), then loaded with `Dump::load`; against the cache built from the same objects in
//! memory, which is what the live report holds (it folds pages of 500 into the cache).
//!
//! Peak bytes are counted by a global allocator wrapper (bytes alive, not RSS), above what was alive
//! before the step. The files go to a temporary directory and are deleted at the end; they are never
//! checked in. Not a criterion bench: one load of a 1 GB file is the measurement.
//! Run with `cargo bench --bench dump`.

use std::{
    path::{Path, PathBuf},
    time::Instant,
};

use tidal::{cluster::dump::Dump, planner};
use tidal_testkit::{
    alloc::{self, Counting},
    saved,
    synthetic::{SyntheticSpec, generate},
};

tidal::global_allocator!(Counting, Counting);

/// Runs `step`; returns its result, the peak bytes above the start, and the bytes still alive after.
fn measure<T>(step: impl FnOnce() -> T) -> (T, f64, f64) {
    let before = alloc::live();
    let (out, peak) = alloc::peak_during(step);
    let peak = peak - before;
    let after = alloc::live() - before;
    (out, peak as f64 / 1e6, after as f64 / 1e6)
}

fn size_mb(path: &Path) -> f64 {
    std::fs::metadata(path).unwrap().len() as f64 / 1e6
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument (a filter) that is not ours skips the run.
    if std::env::args()
        .skip(1)
        .any(|a| a != "--bench" && a != "dump")
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (json, yaml) = (dir.path().join("c.json"), dir.path().join("c.yaml"));
    let cluster = generate(&SyntheticSpec::large());
    let pods = cluster.pods.len();
    saved::write_json(&json, saved::objects(&cluster));
    saved::write_yaml(&yaml, saved::objects(&cluster));
    let (cache, peak, kept) = measure(|| cluster.to_cache());
    eprintln!(
        "cache from objects in memory ({pods} pods): peak {peak:.0} MB, kept {kept:.0} MB (the live report's cache)"
    );
    drop(cache);
    drop(cluster);
    for (name, path) in [("JSON", &json), ("YAML", &yaml)] {
        let started = Instant::now();
        let (dump, peak, kept) =
            measure(|| Dump::load(&[PathBuf::from(path)], planner::check_policy).unwrap());
        eprintln!(
            "dump of {:.0} MB {name}: {:.1} s, peak {peak:.0} MB, kept {kept:.0} MB ({} pods)",
            size_mb(path),
            started.elapsed().as_secs_f64(),
            dump.cache.pod_count()
        );
    }
    // For `/usr/bin/time -v tidal report --cluster ...`: keep the files when asked to.
    if let Ok(keep) = std::env::var("TIDAL_KEEP_DUMPS") {
        for path in [&json, &yaml] {
            std::fs::copy(path, Path::new(&keep).join(path.file_name().unwrap())).unwrap();
        }
    }
}
