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
    cluster::{ObjectKey, ObjectKind, SharedCache},
    runtime::{
        protobuf::{ProtobufKind, decode_list_each},
        watch::{Lenient, LogOnly, Relist, apply_lenient_event, listwatch::PAGE},
    },
};

use crate::{alloc, protobuf, synthetic::SyntheticCluster};

/// What one list cost: the most bytes alive at once and the bytes kept, both counting only what the
/// list allocated (relative to its start), and the time spent decoding and applying (the encoding,
/// the API server's side, left out).
#[derive(Clone, Copy, Debug, Default)]
pub struct ListCost {
    pub peak: isize,
    pub kept: isize,
    pub took: Duration,
}

/// Lists `items` into `shared` (Init, InitApply per object, InitDone), page and objects dropped
/// before the next.
pub fn list_into<K: ProtobufKind + serde::Serialize>(
    shared: &SharedCache,
    items: &[K],
    plural: &str,
    kind: &str,
) -> ListCost {
    let mut lister = Lister::new(shared, plural, kind);
    for chunk in items.chunks(PAGE as usize) {
        lister.page(chunk);
    }
    lister.done()
}

/// One list of one kind, fed a page at a time: for objects that are made as they are listed rather
/// than held. Its bytes are those allocated between the start of a page's encoding and the end of its
/// applying, so that whatever makes the objects between pages is not counted.
pub struct Lister<'a, K> {
    shared: &'a SharedCache,
    relist: Relist,
    logged: HashSet<ObjectKey>,
    plural: &'a str,
    kind: &'a str,
    cost: ListCost,
    objects: std::marker::PhantomData<K>,
}

impl<'a, K: ProtobufKind + serde::Serialize> Lister<'a, K> {
    /// Starts the list (the watch's Init).
    pub fn new(shared: &'a SharedCache, plural: &'a str, kind: &'a str) -> Self {
        let mut lister = Lister {
            shared,
            relist: Relist::default(),
            logged: HashSet::new(),
            plural,
            kind,
            cost: ListCost::default(),
            objects: std::marker::PhantomData,
        };
        let base = alloc::live();
        lister.measure(base, |shared, relist, logged| {
            apply_lenient_event::<K>(shared, relist, watcher::Event::Init, &LogOnly, logged)
        });
        lister
    }

    /// Encodes `chunk` as one protobuf page (not timed), then decodes and applies it. The page's bytes
    /// stay alive while it is decoded, as the HTTP body does.
    pub fn page(&mut self, chunk: &[K]) {
        let base = alloc::live();
        let values: Vec<serde_json::Value> = chunk
            .iter()
            .map(|item| serde_json::to_value(item).unwrap())
            .collect();
        let mut body = Some(protobuf::list(self.plural, "v1", self.kind, &values, "1").unwrap());
        drop(values);
        self.measure(base, |shared, relist, logged| {
            let page = decode_list_each::<K>(body.as_deref().unwrap()).unwrap();
            body = None;
            for item in page.items {
                let object = Lenient::Read {
                    object: item.unwrap(),
                    clamped: Vec::new(),
                };
                let event = watcher::Event::InitApply(object);
                apply_lenient_event(shared, relist, event, &LogOnly, logged);
            }
        });
    }

    /// Ends the list (InitDone).
    pub fn done(mut self) -> ListCost {
        let base = alloc::live();
        self.measure(base, |shared, relist, logged| {
            let event = watcher::Event::InitDone;
            apply_lenient_event::<K>(shared, relist, event, &LogOnly, logged)
        });
        self.cost
    }

    /// Runs `during`, timed; `base` is what was alive before the step began allocating.
    fn measure(
        &mut self,
        base: isize,
        mut during: impl FnMut(&SharedCache, &mut Relist, &mut HashSet<ObjectKey>),
    ) {
        let (shared, relist, logged) = (self.shared, &mut self.relist, &mut self.logged);
        let started = Instant::now();
        let peak = alloc::peak_during(&mut || during(shared, relist, logged)).1;
        self.cost.took += started.elapsed();
        let cost = &mut self.cost;
        cost.peak = cost.peak.max(cost.kept + (peak - base));
        cost.kept += alloc::live() - base;
    }
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
    let shared = SharedCache::new(&[ObjectKind::Node, ObjectKind::Pod]);
    let nodes = list_into(&shared, &cluster.nodes, "nodes", "Node");
    let pods = list_into(&shared, &cluster.pods, "pods", "Pod");
    Listed {
        kept: nodes.kept + pods.kept,
        peak: nodes.peak.max(nodes.kept + pods.peak),
        took: nodes.took + pods.took,
        shared,
    }
}
