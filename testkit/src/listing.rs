//! A cluster listed as the API server lists it to tidal: protobuf pages of `PAGE` objects, each
//! decoded by the real list decoder and folded into a shared cache through the watches' own event
//! handling, for the ingest benches. The encoding (the API server's side) happens outside what is
//! measured; the page's bytes stay alive while it is decoded, as the HTTP body does.

use std::{
    collections::HashSet,
    time::{Duration, Instant},
};

use kube::runtime::watcher;
use tidal::{
    cluster::{ObjectKind, SharedCache},
    runtime::{
        protobuf::{ProtobufKind, decode_list_each},
        watch::{Lenient, LogOnly, Relist, apply_lenient_event, listwatch::PAGE},
    },
};

use crate::{alloc, protobuf, synthetic::SyntheticCluster};

/// Lists `items` into `shared` (Init, InitApply per object, InitDone), page and objects dropped
/// before the next. Returns the peak of bytes alive (absolute, as [`alloc::live`]) and the time spent
/// decoding and applying (the encoding left out).
pub fn list_into<K: ProtobufKind + serde::Serialize>(
    shared: &SharedCache,
    items: &[K],
    plural: &str,
    kind: &str,
) -> (isize, Duration) {
    let (mut relist, mut logged, observer) = (Relist::default(), HashSet::new(), LogOnly);
    let mut peak = alloc::live();
    let mut took = Duration::ZERO;
    let mut measure = |during: &mut dyn FnMut()| {
        let started = Instant::now();
        peak = peak.max(alloc::peak_during(during).1);
        took += started.elapsed();
    };
    measure(&mut || {
        apply_lenient_event::<K>(
            shared,
            &mut relist,
            watcher::Event::Init,
            &observer,
            &mut logged,
        )
    });
    for chunk in items.chunks(PAGE as usize) {
        let values: Vec<serde_json::Value> = chunk
            .iter()
            .map(|item| serde_json::to_value(item).unwrap())
            .collect();
        let mut body = Some(protobuf::list(plural, "v1", kind, &values, "1").unwrap());
        drop(values);
        measure(&mut || {
            let page = decode_list_each::<K>(body.as_deref().unwrap()).unwrap();
            body = None;
            for item in page.items {
                let object = Lenient::Read {
                    object: item.unwrap(),
                    clamped: Vec::new(),
                };
                let event = watcher::Event::InitApply(object);
                apply_lenient_event(shared, &mut relist, event, &observer, &mut logged);
            }
        });
    }
    measure(&mut || {
        let event = watcher::Event::InitDone;
        apply_lenient_event::<K>(shared, &mut relist, event, &observer, &mut logged)
    });
    (peak, took)
}

/// What listing a cluster's nodes and pods costs: the peak of bytes alive and the bytes the synced
/// cache keeps, both counted from the same start, and the time spent decoding and applying.
pub struct Listed {
    pub shared: SharedCache,
    pub peak: isize,
    pub kept: isize,
    pub took: Duration,
}

/// Lists the cluster's nodes, then its pods, into a new shared cache.
pub fn list_nodes_and_pods(cluster: &SyntheticCluster) -> Listed {
    let start = alloc::live();
    let shared = SharedCache::new(&[ObjectKind::Node, ObjectKind::Pod]);
    let (node_peak, node_time) = list_into(&shared, &cluster.nodes, "nodes", "Node");
    let (pod_peak, pod_time) = list_into(&shared, &cluster.pods, "pods", "Pod");
    Listed {
        kept: alloc::live() - start,
        peak: node_peak.max(pod_peak) - start,
        took: node_time + pod_time,
        shared,
    }
}
