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
    fs::File,
    io::{BufWriter, Write},
    path::{Path, PathBuf},
    time::Instant,
};

use tidal::{cluster::dump::Dump, planner};
use tidal_testkit::{
    alloc::{self, Counting},
    synthetic::{SyntheticCluster, SyntheticSpec, generate},
};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `step`; returns its result, the peak bytes above the start, and the bytes still alive after.
fn measure<T>(step: impl FnOnce() -> T) -> (T, f64, f64) {
    let before = alloc::live();
    let (out, peak) = alloc::peak_during(step);
    let peak = peak - before;
    let after = alloc::live() - before;
    (out, peak as f64 / 1e6, after as f64 / 1e6)
}

/// Every object of the cluster, as the API server would list it.
fn objects(cluster: &SyntheticCluster) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let mut push = |kind: &str, api_version: &str, object: &dyn erased::Ser| {
        let mut value = object.to_value();
        value["kind"] = kind.into();
        value["apiVersion"] = api_version.into();
        out.push(value);
    };
    for node in &cluster.nodes {
        push("Node", "v1", node);
    }
    for zone in &cluster.zones {
        push("RevocableZone", "tidal.dev/v1alpha1", zone);
    }
    push("DeschedulingPolicy", "tidal.dev/v1alpha1", &cluster.policy);
    for group in &cluster.podgroups {
        push("PodGroup", "scheduling.volcano.sh/v1beta1", group);
    }
    for pdb in &cluster.pdbs {
        push("PodDisruptionBudget", "policy/v1", pdb);
    }
    for pod in &cluster.pods {
        push("Pod", "v1", pod);
    }
    out
}

mod erased {
    pub trait Ser {
        fn to_value(&self) -> serde_json::Value;
    }
    impl<T: serde::Serialize> Ser for T {
        fn to_value(&self) -> serde_json::Value {
            serde_json::to_value(self).expect("generated objects serialize")
        }
    }
}

fn write_json(path: &Path, objects: &[serde_json::Value]) {
    let mut out = BufWriter::new(File::create(path).unwrap());
    write!(out, r#"{{"apiVersion":"v1","items":["#).unwrap();
    for (i, object) in objects.iter().enumerate() {
        if i > 0 {
            out.write_all(b",").unwrap();
        }
        serde_json::to_writer(&mut out, object).unwrap();
    }
    write!(
        out,
        r#"],"kind":"List","metadata":{{"resourceVersion":""}}}}"#
    )
    .unwrap();
}

/// As `kubectl get -o yaml` writes it: `apiVersion`, `items`, `kind`, `metadata`.
fn write_yaml(path: &Path, objects: &[serde_json::Value]) {
    let mut out = BufWriter::new(File::create(path).unwrap());
    out.write_all(b"apiVersion: v1\nitems:\n").unwrap();
    for object in objects {
        let text = serde_saphyr::to_string(object).unwrap();
        for (i, line) in text.lines().enumerate() {
            let prefix = if i == 0 { "- " } else { "  " };
            writeln!(out, "{prefix}{line}").unwrap();
        }
    }
    out.write_all(b"kind: List\nmetadata:\n  resourceVersion: \"\"\n")
        .unwrap();
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
    {
        let objects = objects(&cluster);
        write_json(&json, &objects);
        write_yaml(&yaml, &objects);
    }
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
