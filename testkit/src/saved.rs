//! A generated cluster saved as `tidal report --cluster` reads it: a JSON `List`, or the YAML
//! `kubectl get -o yaml` writes (keys sorted, so `items` before `kind`). Objects are converted and
//! written one at a time, so that a cluster of millions of pods is never held twice in memory.

use std::{
    fs::File,
    io::{BufWriter, Write},
    path::Path,
};

use serde::Serialize;

use crate::synthetic::SyntheticCluster;

/// Every object of the cluster, as the API server would list it.
pub fn objects(cluster: &SyntheticCluster) -> impl Iterator<Item = serde_json::Value> + '_ {
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
    let pods = cluster.pods.iter().map(|p| typed("Pod", "v1", p));
    nodes
        .chain(zones)
        .chain(policy)
        .chain(groups)
        .chain(pdbs)
        .chain(pods)
}

pub fn write_json(path: &Path, objects: impl IntoIterator<Item = serde_json::Value>) {
    let mut out = BufWriter::new(File::create(path).unwrap());
    write!(out, r#"{{"apiVersion":"v1","items":["#).unwrap();
    for (i, object) in objects.into_iter().enumerate() {
        if i > 0 {
            out.write_all(b",").unwrap();
        }
        serde_json::to_writer(&mut out, &object).unwrap();
    }
    write!(
        out,
        r#"],"kind":"List","metadata":{{"resourceVersion":""}}}}"#
    )
    .unwrap();
    out.flush().unwrap();
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
