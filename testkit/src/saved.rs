//! A generated cluster saved as `tidal report --cluster` reads it: a JSON `List`, or the YAML
//! `kubectl get -o yaml` writes (keys sorted, so `items` before `kind`). Objects are converted and
//! written one at a time, so that a cluster of millions of pods is never held twice in memory.

use std::{
    fs::File,
    io::{BufWriter, Write},
    path::Path,
};

use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;

use crate::synthetic::SyntheticCluster;

fn typed<T: Serialize>(
    kind: &'static str,
    api_version: &'static str,
    object: &T,
) -> serde_json::Value {
    let mut value = serde_json::to_value(object).expect("generated objects serialize");
    value["kind"] = kind.into();
    value["apiVersion"] = api_version.into();
    value
}

/// A pod as the API server would list it.
pub fn pod_object(pod: &Pod) -> serde_json::Value {
    typed("Pod", "v1", pod)
}

/// Every object of the cluster, as the API server would list it.
pub fn objects(cluster: &SyntheticCluster) -> impl Iterator<Item = serde_json::Value> + '_ {
    objects_besides_pods(cluster).chain(cluster.pods.iter().map(pod_object))
}

/// Every object of the cluster but its pods (for a cluster whose pods are generated as they are
/// written: [`crate::synthetic::generate_each`]).
pub fn objects_besides_pods(
    cluster: &SyntheticCluster,
) -> impl Iterator<Item = serde_json::Value> + '_ {
    let nodes = cluster.nodes.iter().map(|n| typed("Node", "v1", n));
    let zones = (cluster.zones.iter()).map(|z| typed("RevocableZone", "tidal.dev/v1alpha1", z));
    let policy = std::iter::once(typed(
        "DeschedulingPolicy",
        "tidal.dev/v1alpha1",
        &cluster.policy,
    ));
    let groups =
        (cluster.podgroups.iter()).map(|g| typed("PodGroup", "scheduling.volcano.sh/v1beta1", g));
    let pdbs = (cluster.pdbs.iter()).map(|p| typed("PodDisruptionBudget", "policy/v1", p));
    nodes.chain(zones).chain(policy).chain(groups).chain(pdbs)
}

pub fn write_json(path: &Path, objects: impl IntoIterator<Item = serde_json::Value>) {
    let mut list = JsonList::create(path);
    for object in objects {
        list.push(&object);
    }
    list.finish();
}

/// A JSON `List` written an object at a time.
pub struct JsonList {
    out: BufWriter<File>,
    empty: bool,
}

impl JsonList {
    pub fn create(path: &Path) -> JsonList {
        let mut out = BufWriter::new(File::create(path).unwrap());
        write!(out, r#"{{"apiVersion":"v1","items":["#).unwrap();
        JsonList { out, empty: true }
    }

    pub fn push(&mut self, object: &serde_json::Value) {
        if !self.empty {
            self.out.write_all(b",").unwrap();
        }
        self.empty = false;
        serde_json::to_writer(&mut self.out, object).unwrap();
    }

    pub fn finish(mut self) {
        let end = r#"],"kind":"List","metadata":{"resourceVersion":""}}"#;
        self.out.write_all(end.as_bytes()).unwrap();
        self.out.flush().unwrap();
    }
}

/// As `kubectl get -o yaml` writes it: `apiVersion`, `items`, `kind`, `metadata`.
pub fn write_yaml(path: &Path, objects: impl IntoIterator<Item = serde_json::Value>) {
    let mut out = BufWriter::new(File::create(path).unwrap());
    out.write_all(b"apiVersion: v1\nitems:\n").unwrap();
    for object in objects {
        let text = serde_saphyr::to_string(&object).unwrap();
        for (i, line) in text.lines().enumerate() {
            let prefix = if i == 0 { "- " } else { "  " };
            writeln!(out, "{prefix}{line}").unwrap();
        }
    }
    out.write_all(b"kind: List\nmetadata:\n  resourceVersion: \"\"\n")
        .unwrap();
    out.flush().unwrap();
}
