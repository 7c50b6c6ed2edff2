//! The shared cluster cache: fed object by object (watch events, or a dump replayed as events), it keeps
//! per-node and per-job aggregates up to date and hands out snapshots that copy only what changed.

use std::{
    collections::BTreeMap,
    sync::{Arc, Weak},
};

// Every pod event hashes its key here, and its names in the interner: foldhash rather than SipHash,
// seeded per process as std's maps are (as in `Versioned`).
use foldhash::HashMap;
use jiff::Timestamp;

mod in_flight;
mod snapshot_sync;

pub use in_flight::WatchProgress;
use in_flight::{InFlight, LocalZoneNotes, Terminations};
pub use snapshot_sync::{Retired, SnapshotUpdate};

use crate::cluster::{
    model::constraints::Constraints,
    model::keys::{Name, ObjectKey, ObjectKind},
    model::namespace::NamespaceInfo,
    model::node::NodeInfo,
    model::pod::{PodInfo, PodInterner},
    model::usage::{UsageSample, UsageSeries},
    model::workload::{PdbInfo, PodGroupInfo},
    model::{policy::PolicyInfo, zone::ZoneInfo},
    store::snapshot::{JobState, NodeState},
    store::versioned::Versioned,
};

#[derive(Debug, Default)]
pub struct ClusterCache {
    /// Tells this cache's snapshots from others': an update in place relies on this cache's slot
    /// numbers, so a snapshot of another cache is rebuilt in full.
    origin: Origin,
    generation: u64,
    /// Removals up to this generation are forgotten; older snapshots are rebuilt in full.
    pruned_through: u64,
    nodes: Versioned<Name, NodeState>,
    unscheduled: Versioned<ObjectKey, PodInfo>,
    jobs: Versioned<crate::cluster::JobKey, JobState>,
    /// The current version of every pod, to find what an update or delete replaces.
    pods: HashMap<ObjectKey, Arc<PodInfo>>,
    /// Pods tidal evicted and has not yet seen terminate: the uid it evicted and when. The uid
    /// matters: a pod recreated under the same name is a different pod, still running.
    evicting: HashMap<ObjectKey, InFlight>,
    podgroups: Versioned<ObjectKey, PodGroupInfo>,
    pdbs: Versioned<ObjectKey, PdbInfo>,
    zones: Versioned<String, ZoneInfo>,
    /// Eviction rounds this process started and drains it decided, by zone: the one home of those
    /// facts until the zone's status says as much. Merged into every version of the zone the watch
    /// delivers, because the status write may lag or have failed, and `evictPeriod` and a started
    /// drain must hold either way.
    local_notes: HashMap<String, LocalZoneNotes>,
    /// How long pods this process evicted took to go, by zone.
    terminations: HashMap<String, Terminations>,
    /// Distinct pod constraints, by fingerprint: pods of one shape share one copy.
    shapes: HashMap<u64, Vec<Weak<Constraints>>>,
    /// Shapes held when `shapes` is next swept of the ones no pod has any more (see `intern`).
    shapes_sweep_at: usize,
    /// What pods repeat (names, label sets, owners, job keys, conditions), one copy each.
    interner: PodInterner,
    policies: Versioned<String, PolicyInfo>,
    namespaces: Versioned<String, NamespaceInfo>,
    claims: Versioned<ObjectKey, crate::cluster::ClaimInfo>,
    /// The last answer to each Prometheus query a policy reads, by query.
    node_metrics: Versioned<String, crate::cluster::MetricSample>,
    node_usage: Versioned<String, UsageSeries>,
    pod_usage: Versioned<ObjectKey, UsageSeries>,
    /// Objects the watches serve but tidal cannot read, left out of the cache: why, and their uid when
    /// known, so that the controller can put a Warning Event on each.
    unreadable: BTreeMap<(ObjectKind, ObjectKey), Unreadable>,
    /// How far each kind's watch has caught up.
    watches: BTreeMap<ObjectKind, WatchProgress>,
}

/// An object left out of the cache because it cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    pub uid: Option<String>,
    pub error: String,
}

/// A number unique to each cache of the process; never 0, the origin of a default snapshot.
#[derive(Debug)]
struct Origin(u64);

impl Default for Origin {
    fn default() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Origin(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

/// Removals the cache remembers, for its snapshot's next update to apply. A process that takes no
/// snapshot (the webhook, a controller that is not leading) would otherwise remember every pod, job and
/// PodGroup it ever saw go. Past this many they are forgotten, and a snapshot taken before is rebuilt in
/// full at its next update (about 12 ms at 150,000 pods): correct either way, and rare for a leader,
/// which updates its snapshot every cycle.
const REMOVALS_KEPT: usize = 8_192;

impl ClusterCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records that `key` of `kind` is served but cannot be read (see `runtime::watch::Lenient`).
    pub fn note_unreadable(&mut self, kind: ObjectKind, key: ObjectKey, unreadable: Unreadable) {
        self.unreadable.insert((kind, key), unreadable);
    }

    /// `key` of `kind` was read, or deleted: no longer unreadable.
    pub fn forget_unreadable(&mut self, kind: ObjectKind, key: &ObjectKey) {
        self.unreadable.remove(&(kind, key.clone()));
    }

    /// The objects left out because they cannot be read, by kind and key.
    pub fn unreadable(&self) -> &BTreeMap<(ObjectKind, ObjectKey), Unreadable> {
        &self.unreadable
    }

    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    pub fn node_count(&self) -> usize {
        self.nodes.iter().filter(|(_, n)| n.node.is_some()).count()
    }

    pub fn pod(&self, key: &ObjectKey) -> Option<&Arc<PodInfo>> {
        self.pods.get(key)
    }

    /// Adds or replaces a pod, as observed at `at` (when its event arrived). An eviction tidal made
    /// stays marked across updates until the pod is gone.
    pub fn apply_pod(&mut self, mut pod: PodInfo, at: Timestamp) {
        pod.constraints = self.intern(Arc::clone(&pod.constraints));
        pod.intern(&mut self.interner);
        match self.evicting.get(&pod.key) {
            Some(mark) if mark.uid == pod.uid => pod.evicting_since = Some(Box::new(mark.since)),
            Some(_) => {
                // A namesake replaced the evicted pod: the mark was about its predecessor.
                self.evicting.remove(&pod.key);
                pod.evicting_since = None;
            }
            None => pod.evicting_since = None,
        }
        // One lookup for the comparison and the replacement: this runs for every pod event.
        let (pod, previous) = match self.pods.get_mut(&pod.key) {
            // Nothing tidal keeps of the pod changed: a relist that finds the pod as it was, or an
            // update of fields tidal does not read. Replacing it would touch its node's and its job's
            // entries all the same, and the next snapshot update would copy them: after a relist,
            // every entry.
            Some(held) if **held == pod => return,
            Some(held) => {
                let pod = Arc::new(pod);
                let previous = std::mem::replace(held, Arc::clone(&pod));
                (pod, Some(previous))
            }
            None => {
                let pod = Arc::new(pod);
                self.pods.insert(pod.key.clone(), Arc::clone(&pod));
                (pod, None)
            }
        };
        if let Some(previous) = previous {
            if !pod.holds_resources() {
                self.note_departure(&previous, at);
            }
            // A pod that stays on its node and in its job is replaced where it is by `attach`; taking
            // it out first would search each tree twice more and restructure it twice.
            if previous.node_name != pod.node_name || previous.job != pod.job {
                self.detach(&previous);
            }
        }
        self.attach(&pod);
        self.bound_removals();
    }

    /// Removes a pod whose deletion was observed at `at`.
    pub fn delete_pod(&mut self, key: &ObjectKey, at: Timestamp) {
        let evicted = self.evicting.remove(key);
        if let Some(previous) = self.pods.remove(key) {
            if let Some(mark) = evicted.filter(|mark| mark.uid == previous.uid) {
                self.note_termination(&previous, at.duration_since(mark.since));
            }
            self.note_departure(&previous, at);
            self.detach(&previous);
        }
        self.pod_usage.remove(&mut self.generation, key);
        self.bound_removals();
    }

    /// Removals remembered for snapshots, across every kind.
    fn removals_held(&self) -> usize {
        self.nodes.removals()
            + self.unscheduled.removals()
            + self.jobs.removals()
            + self.podgroups.removals()
            + self.pdbs.removals()
            + self.zones.removals()
            + self.policies.removals()
            + self.namespaces.removals()
            + self.claims.removals()
            + self.node_metrics.removals()
            + self.node_usage.removals()
            + self.pod_usage.removals()
    }

    /// Forgets the removals remembered once there are more than [`REMOVALS_KEPT`].
    fn bound_removals(&mut self) {
        if self.removals_held() > REMOVALS_KEPT {
            self.prune(self.generation);
        }
    }

    /// The shared copy of `constraints`, if a pod of the same shape is cached; else this one, which
    /// later pods of its shape then share.
    fn intern(&mut self, constraints: Arc<Constraints>) -> Arc<Constraints> {
        // A shape nobody has any more is dropped when its bucket is next visited; shapes never seen
        // again (a batch job's own affinity, say) go in a sweep each time the map has doubled, as the
        // interner does, so that they do not pile up for the life of the process.
        if self.shapes.len() >= self.shapes_sweep_at {
            self.shapes.retain(|_, bucket| {
                bucket.retain(|known| known.strong_count() > 0);
                !bucket.is_empty()
            });
            self.shapes_sweep_at = (self.shapes.len() * 2).max(1024);
        }
        let bucket = self.shapes.entry(constraints.fingerprint).or_default();
        bucket.retain(|known| known.strong_count() > 0);
        if let Some(shared) = bucket
            .iter()
            .filter_map(Weak::upgrade)
            .find(|known| **known == *constraints)
        {
            return shared;
        }
        bucket.push(Arc::downgrade(&constraints));
        constraints
    }

    /// A pod stopped using its node's resources at `at`: the node's earlier usage samples still count
    /// it, so they are read without its last measured usage from now on. Once per pod: a pod tidal
    /// evicted left when the eviction was accepted, and one that finished left when it finished.
    fn note_departure(&mut self, pod: &PodInfo, at: Timestamp) {
        if pod.holds_resources()
            && pod.evicting_since.is_none()
            && let Some(node) = &pod.node_name
            && self.node_usage.get(&node.to_string()).is_some()
        {
            let usage = self
                .pod_usage
                .get(&pod.key)
                .and_then(|s| s.latest().cloned());
            self.node_usage
                .update(&mut self.generation, &node.to_string(), |s| {
                    s.note_departure(at, usage)
                });
        }
    }

    fn attach(&mut self, pod: &Arc<PodInfo>) {
        let generation = &mut self.generation;
        match &pod.node_name {
            Some(node) => self.nodes.update(generation, node, |n| n.add_pod(pod)),
            None => self
                .unscheduled
                .insert_shared(generation, pod.key.clone(), Arc::clone(pod)),
        }
        self.jobs.update(generation, &pod.job, |j| j.add_pod(pod));
    }

    fn detach(&mut self, pod: &PodInfo) {
        let generation = &mut self.generation;
        match &pod.node_name {
            Some(node) => self.nodes.update(generation, node, |n| n.remove_pod(pod)),
            None => {
                self.unscheduled.remove(generation, &pod.key);
            }
        }
        self.jobs
            .update(generation, &pod.job, |j| j.remove_pod(pod));
    }

    pub fn apply_node(&mut self, node: NodeInfo) {
        // The pods bound to the node hold the interned copy of its name: with the entry keyed by that
        // copy too, their events find the entry by address rather than by comparing names.
        let mut name = Name::from(node.name.as_str());
        self.interner.intern_name(&mut name);
        // Most node updates are the kubelet's status reports, whose heartbeat times tidal does not
        // keep: the node entry (and the snapshot's copy of it) stays as it is.
        if self
            .nodes
            .get(&name)
            .and_then(|held| held.node.as_deref())
            .is_some_and(|held| *held == node)
        {
            return;
        }
        let node = Arc::new(node);
        self.nodes
            .update(&mut self.generation, &name, |n| n.node = Some(node));
    }

    /// Forgets a node. Its pods stay until their own deletions arrive, as they do from a watch.
    pub fn delete_node(&mut self, name: &str) {
        self.nodes
            .update(&mut self.generation, &Name::from(name), |n| n.node = None);
        self.node_usage
            .remove(&mut self.generation, &name.to_owned());
        self.bound_removals();
    }

    pub fn apply_namespace(&mut self, namespace: NamespaceInfo) {
        self.namespaces
            .insert_if_changed(&mut self.generation, namespace.name.clone(), namespace);
    }

    pub fn delete_namespace(&mut self, name: &str) {
        self.namespaces
            .remove(&mut self.generation, &name.to_owned());
        self.bound_removals();
    }

    /// Records the answer to a Prometheus query, replacing the previous one.
    pub fn record_node_metric(&mut self, query: &str, sample: crate::cluster::MetricSample) {
        self.node_metrics
            .insert_if_changed(&mut self.generation, query.to_owned(), sample);
    }

    /// Forgets the answers to queries no policy reads any more.
    pub fn retain_node_metrics(&mut self, wanted: &[String]) {
        let stale: Vec<String> = self
            .node_metrics
            .iter()
            .map(|(q, _)| q.clone())
            .filter(|q| !wanted.contains(q))
            .collect();
        for query in stale {
            self.node_metrics.remove(&mut self.generation, &query);
        }
    }

    pub fn apply_claim(&mut self, claim: crate::cluster::ClaimInfo) {
        self.claims
            .insert_if_changed(&mut self.generation, claim.key.clone(), claim);
    }

    pub fn delete_claim(&mut self, key: &ObjectKey) {
        self.claims.remove(&mut self.generation, key);
        self.bound_removals();
    }

    /// Adds a `NodeMetrics` sample to the node's usage series.
    pub fn record_node_usage(&mut self, node: &str, sample: UsageSample) {
        self.node_usage
            .update(&mut self.generation, &node.to_owned(), |s| s.record(sample));
    }

    /// Adds a `PodMetrics` sample to the pod's usage series. Samples of pods the cache does not know
    /// are dropped: a pod's series goes when the pod does.
    pub fn record_pod_usage(&mut self, pod: &ObjectKey, sample: UsageSample) {
        if self.pods.contains_key(pod) {
            self.pod_usage
                .update(&mut self.generation, pod, |s| s.record(sample));
        }
    }

    pub fn apply_podgroup(&mut self, group: PodGroupInfo) {
        self.podgroups
            .insert_if_changed(&mut self.generation, group.key.clone(), group);
    }

    pub fn delete_podgroup(&mut self, key: &ObjectKey) {
        self.podgroups.remove(&mut self.generation, key);
        self.bound_removals();
    }

    pub fn apply_pdb(&mut self, pdb: PdbInfo) {
        self.pdbs
            .insert_if_changed(&mut self.generation, pdb.key.clone(), pdb);
    }

    pub fn delete_pdb(&mut self, key: &ObjectKey) {
        self.pdbs.remove(&mut self.generation, key);
        self.bound_removals();
    }

    /// A zone as the watch (or a dump) delivers it. A round this process started and the status does
    /// not show yet still counts; once the status shows it (or a later one), the status is the record
    /// again and the local note is dropped, so a round an operator later clears from the status is not
    /// brought back from memory.
    pub fn apply_zone(&mut self, mut zone: ZoneInfo) {
        if let Some(notes) = self.local_notes.get_mut(&zone.name) {
            notes.merge_into(&mut zone);
            if notes.is_empty() {
                self.local_notes.remove(&zone.name);
            }
        }
        self.zones
            .insert(&mut self.generation, zone.name.clone(), zone);
    }

    pub fn delete_zone(&mut self, name: &str) {
        self.zones.remove(&mut self.generation, &name.to_owned());
        self.local_notes.remove(name);
        self.bound_removals();
    }

    /// The uid of a zone or policy, as last seen by the watch (other kinds: none).
    pub fn uid_of(&self, kind: ObjectKind, name: &str) -> Option<&str> {
        match kind {
            ObjectKind::RevocableZone => self.zone(name)?.uid.as_deref(),
            ObjectKind::DeschedulingPolicy => self.policy(name)?.uid.as_deref(),
            _ => None,
        }
    }

    pub fn apply_policy(&mut self, policy: PolicyInfo) {
        self.policies
            .insert(&mut self.generation, policy.name.clone(), policy);
    }

    pub fn delete_policy(&mut self, name: &str) {
        self.policies.remove(&mut self.generation, &name.to_owned());
        self.bound_removals();
    }

    /// What closed-zone taints depend on for one node: its zone label and its taints.
    pub fn node_taint_inputs(
        &self,
        name: &str,
    ) -> Option<(Option<String>, Vec<crate::cluster::Taint>)> {
        self.node(name)
            .map(|node| (node.revocable_zone.clone(), node.taints.clone()))
    }

    /// Whether the cache holds any object of a kind: a first list into an empty kind has nothing to
    /// remove at its end, and keeps no record of what it read.
    pub fn holds_any(&self, kind: ObjectKind) -> bool {
        match kind {
            ObjectKind::Pod => !self.pods.is_empty(),
            ObjectKind::Node => self.nodes.iter().any(|(_, n)| n.node.is_some()),
            ObjectKind::PodDisruptionBudget => self.pdbs.iter().next().is_some(),
            ObjectKind::PodGroup => self.podgroups.iter().next().is_some(),
            ObjectKind::RevocableZone => self.zones.iter().next().is_some(),
            ObjectKind::DeschedulingPolicy => self.policies.iter().next().is_some(),
            ObjectKind::Namespace => self.namespaces.iter().next().is_some(),
            ObjectKind::PersistentVolumeClaim => self.claims.iter().next().is_some(),
        }
    }

    /// Keys of every object of a kind, for a watcher's relist to find which ones vanished while it was away.
    pub fn object_keys(&self, kind: ObjectKind) -> Vec<ObjectKey> {
        fn named<'a, K: AsRef<str> + 'a, V: 'a>(
            it: impl Iterator<Item = (&'a K, V)>,
        ) -> Vec<ObjectKey> {
            it.map(|(name, _)| ObjectKey::new("", name.as_ref()))
                .collect()
        }
        match kind {
            ObjectKind::Pod => self.pods.keys().cloned().collect(),
            ObjectKind::Node => named(self.nodes.iter().filter(|(_, n)| n.node.is_some())),
            ObjectKind::PodDisruptionBudget => self.pdbs.iter().map(|(k, _)| k.clone()).collect(),
            ObjectKind::PodGroup => self.podgroups.iter().map(|(k, _)| k.clone()).collect(),
            ObjectKind::RevocableZone => named(self.zones.iter()),
            ObjectKind::DeschedulingPolicy => named(self.policies.iter()),
            ObjectKind::Namespace => named(self.namespaces.iter()),
            ObjectKind::PersistentVolumeClaim => {
                self.claims.iter().map(|(k, _)| k.clone()).collect()
            }
        }
    }

    /// Zones by name, for callers that need the current configuration without a snapshot.
    pub fn zones(&self) -> BTreeMap<String, Arc<ZoneInfo>> {
        self.zones.copy_all()
    }

    /// Policies by name, for the controller's cycle timer (which needs no snapshot to decide when to run).
    pub fn policies(&self) -> BTreeMap<String, Arc<PolicyInfo>> {
        self.policies.copy_all()
    }

    pub fn zone(&self, name: &str) -> Option<&Arc<ZoneInfo>> {
        self.zones.get(name)
    }

    pub fn policy(&self, name: &str) -> Option<&Arc<PolicyInfo>> {
        self.policies.get(name)
    }

    pub fn podgroup(&self, key: &ObjectKey) -> Option<&Arc<PodGroupInfo>> {
        self.podgroups.get(key)
    }

    pub fn node(&self, name: &str) -> Option<&Arc<NodeInfo>> {
        self.nodes.get(name).and_then(|state| state.node.as_ref())
    }

    /// Every node the cache knows.
    pub fn nodes(&self) -> impl Iterator<Item = &Arc<NodeInfo>> {
        self.nodes
            .iter()
            .filter_map(|(_, state)| state.node.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{GoDuration, RevocableZone, RevocableZoneSpec, zone::WindowSpec};
    use crate::cluster::Snapshot;

    #[test]
    fn eviction_rounds_only_move_forward() {
        let zone = RevocableZone::new(
            "rz",
            RevocableZoneSpec {
                windows: vec![WindowSpec {
                    time: "08:00-20:00".to_owned(),
                    days: vec![],
                }],
                time_zone: "UTC".to_owned(),
                evict_period: GoDuration::from_secs(60),
                drain_before: crate::api::DrainBefore::Fixed(GoDuration::from_secs(0)),
                max_drain_before: crate::api::GoDuration::from_secs(7_200),
                budgets_after_close: Default::default(),
                taint_when_closed: true,
                eviction_notice: None,
            },
        );
        let mut cache = ClusterCache::new();
        cache.apply_zone(ZoneInfo::from_zone(&zone).unwrap());
        let t0 = Timestamp::UNIX_EPOCH;
        let t1 = t0 + jiff::SignedDuration::from_secs(10);
        assert!(cache.note_eviction_round("rz", t1));
        assert!(
            !cache.note_eviction_round("rz", t0),
            "an older round never wins"
        );
        assert!(!cache.note_eviction_round("rz", t1));
        assert_eq!(cache.zone("rz").unwrap().last_eviction_round, Some(t1));
        assert!(!cache.note_eviction_round("missing", t1));
        let snapshot = cache.snapshot();
        assert_eq!(snapshot.zones["rz"].last_eviction_round, Some(t1));

        // The watch delivers the zone again before (or without) the status write: the round this
        // process started still counts. A later round in the status wins.
        cache.apply_zone(ZoneInfo::from_zone(&zone).unwrap());
        assert_eq!(cache.zone("rz").unwrap().last_eviction_round, Some(t1));
        let t2 = t1 + jiff::SignedDuration::from_secs(10);
        let mut written = ZoneInfo::from_zone(&zone).unwrap();
        written.last_eviction_round = Some(t2);
        cache.apply_zone(written);
        assert_eq!(cache.zone("rz").unwrap().last_eviction_round, Some(t2));
    }

    #[test]
    fn a_local_round_is_forgotten_once_the_status_shows_it() {
        let zone = || crate::testkit::closed_zone("rz").build();
        let mut cache = ClusterCache::new();
        cache.apply_zone(zone());
        let t1 = Timestamp::UNIX_EPOCH + jiff::SignedDuration::from_secs(10);
        assert!(cache.note_eviction_round("rz", t1));
        // The status write has not come back: the local note holds.
        cache.apply_zone(zone());
        assert_eq!(cache.zone("rz").unwrap().last_eviction_round, Some(t1));
        assert_eq!(cache.local_round("rz"), Some(t1));
        // It came back: the status is the record again.
        let mut written = zone();
        written.last_eviction_round = Some(t1);
        cache.apply_zone(written);
        assert_eq!(cache.local_round("rz"), None);
        // An operator clears the round: nothing brings it back.
        cache.apply_zone(zone());
        assert_eq!(cache.zone("rz").unwrap().last_eviction_round, None);
    }

    #[test]
    fn a_round_cut_short_is_retried_at_the_soonest_asked_and_only_once() {
        let zone = || crate::testkit::closed_zone("rz").build();
        let secs = |s: i64| Timestamp::UNIX_EPOCH + jiff::SignedDuration::from_secs(s);
        let mut cache = ClusterCache::new();
        cache.apply_zone(zone());
        assert!(cache.note_eviction_round("rz", secs(10)));
        assert!(cache.note_round_cut_short("rz", secs(15)));
        assert!(
            !cache.note_round_cut_short("rz", secs(17)),
            "a later answer does not put off the retry"
        );
        assert_eq!(cache.zone("rz").unwrap().round_retry, Some(secs(15)));
        // The watch delivers the zone again: the retry, known to this process only, holds.
        cache.apply_zone(zone());
        assert_eq!(cache.zone("rz").unwrap().round_retry, Some(secs(15)));
        // The retry round starts; a cut short of that round asks for a retry of its own.
        assert!(cache.note_eviction_round("rz", secs(15)));
        assert!(cache.note_round_cut_short("rz", secs(21)));
        assert_eq!(cache.zone("rz").unwrap().round_retry, Some(secs(21)));
        assert!(!cache.note_round_cut_short("missing", secs(21)));
    }

    #[test]
    fn an_eviction_given_up_makes_the_pod_count_again() {
        let mut cache = ClusterCache::new();
        let key = ObjectKey::new("ns", "web-0");
        let at = Timestamp::UNIX_EPOCH;
        cache.apply_pod(running_pod("web-0", "n1"), at);
        assert!(cache.mark_evicting(&key, at));
        assert!(cache.pod(&key).unwrap().is_leaving());
        let snapshot = cache.snapshot();
        assert!(
            snapshot
                .jobs
                .values()
                .all(|job| job.stats_as_is().leaving == 1)
        );
        assert!(cache.unmark_evicting(&key, at));
        assert!(!cache.pod(&key).unwrap().is_leaving());
        assert_eq!(cache.evicting_count(), 0);
        let snapshot = cache.snapshot();
        assert!(
            snapshot
                .jobs
                .values()
                .all(|job| job.stats_as_is().leaving == 0)
        );
        assert!(
            !cache.unmark_evicting(&key, at),
            "marked once, unmarked once"
        );
    }

    #[test]
    fn pods_of_one_shape_share_their_constraints() {
        let mut cache = ClusterCache::new();
        let tolerating = |name: &str, key: &str| {
            let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "ns", "uid": name},
                "spec": {"nodeName": "n1", "containers": [{"name": "c"}],
                         "tolerations": [{"key": key, "operator": "Exists"}]},
                "status": {"phase": "Running"},
            }))
            .unwrap();
            PodInfo::from_pod(&pod).unwrap()
        };
        cache.apply_pod(tolerating("a", "gpu"), Timestamp::now());
        cache.apply_pod(tolerating("b", "gpu"), Timestamp::now());
        cache.apply_pod(tolerating("c", "spot"), Timestamp::now());
        let get =
            |name: &str| Arc::clone(&cache.pod(&ObjectKey::new("ns", name)).unwrap().constraints);
        assert!(Arc::ptr_eq(&get("a"), &get("b")));
        assert!(!Arc::ptr_eq(&get("a"), &get("c")));
        assert_eq!(get("c").tolerations[0].key.as_deref(), Some("spot"));
    }

    /// Pods that differ only in what they spread or repel by (a workload's own labels) share a node
    /// placement but not their constraints: each workload's replicas share their own copy.
    #[test]
    fn workloads_spreading_by_their_own_labels_each_share_their_own_constraints() {
        let mut cache = ClusterCache::new();
        let spreading = |name: &str, app: &str| {
            crate::testkit::pod(&format!("ns/{name}"), "n1")
                .spec(
                    "topologySpreadConstraints",
                    serde_json::json!([{"maxSkew": 1, "topologyKey": "zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"app": app}}}]),
                )
                .build()
        };
        for (name, app) in [("a-1", "a"), ("b-1", "b"), ("a-2", "a"), ("b-2", "b")] {
            cache.apply_pod(spreading(name, app), Timestamp::UNIX_EPOCH);
        }
        let get =
            |name: &str| Arc::clone(&cache.pod(&ObjectKey::new("ns", name)).unwrap().constraints);
        assert_eq!(get("a-1").signature, get("b-1").signature);
        assert!(Arc::ptr_eq(&get("a-1"), &get("a-2")));
        assert!(Arc::ptr_eq(&get("b-1"), &get("b-2")));
        assert!(!Arc::ptr_eq(&get("a-1"), &get("b-1")));
    }

    #[test]
    fn shapes_no_pod_has_are_forgotten() {
        let mut cache = ClusterCache::new();
        let at = Timestamp::UNIX_EPOCH;
        for n in 0..3_000 {
            let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
                "metadata": {"name": "job-pod", "namespace": "ns", "uid": n.to_string()},
                "spec": {"nodeName": "n1", "containers": [{"name": "c"}],
                         "nodeSelector": {"job": n.to_string()}},
                "status": {"phase": "Running"},
            }))
            .unwrap();
            cache.apply_pod(PodInfo::from_pod(&pod).unwrap(), at);
            cache.delete_pod(&ObjectKey::new("ns", "job-pod"), at);
        }
        assert!(
            cache.shapes.len() <= 1024,
            "{} shapes held",
            cache.shapes.len()
        );
    }

    fn running_pod(name: &str, node: &str) -> PodInfo {
        crate::testkit::pod(&format!("ns/{name}"), node)
            .patch(serde_json::json!({"metadata": {"uid": name}}))
            .build()
    }

    #[test]
    fn a_node_entry_and_its_pods_share_one_copy_of_the_name() {
        for node_first in [true, false] {
            let mut cache = ClusterCache::new();
            if node_first {
                cache.apply_node(crate::testkit::node("n1").build());
            }
            cache.apply_pod(running_pod("web-0", "n1"), Timestamp::UNIX_EPOCH);
            if !node_first {
                cache.apply_node(crate::testkit::node("n1").build());
            }
            let pod_node = cache.pods[&ObjectKey::new("ns", "web-0")]
                .node_name
                .clone()
                .unwrap();
            let (entry, _) = cache.nodes.iter().next().unwrap();
            assert!(
                entry.ptr_eq(&pod_node),
                "node first: {node_first}: the pod's events find the entry by address"
            );
        }
    }

    /// A cache with pods on two nodes, and its snapshot.
    fn two_nodes() -> (ClusterCache, Snapshot) {
        let mut cache = ClusterCache::new();
        for (pod, node) in [("web-0", "n1"), ("web-1", "n1"), ("db-0", "n2")] {
            cache.apply_node(crate::testkit::node(node).build());
            cache.apply_pod(running_pod(pod, node), Timestamp::UNIX_EPOCH);
        }
        let snapshot = cache.snapshot();
        (cache, snapshot)
    }

    fn node_entry(cache: &ClusterCache, name: &str) -> Arc<NodeState> {
        Arc::clone(cache.nodes.get(name).expect("a node entry"))
    }

    #[test]
    fn a_lent_snapshot_lets_the_cache_change_its_aggregates_in_place() {
        let (mut cache, mut snapshot) = two_nodes();
        cache.lend_snapshot(&mut snapshot);
        assert!(
            snapshot.nodes.is_empty() && snapshot.jobs.is_empty(),
            "lent"
        );
        let before = Arc::as_ptr(&node_entry(&cache, "n1"));
        cache.apply_pod(running_pod("web-2", "n1"), Timestamp::UNIX_EPOCH);
        cache.delete_pod(&ObjectKey::new("ns", "web-0"), Timestamp::UNIX_EPOCH);
        assert_eq!(
            Arc::as_ptr(&node_entry(&cache, "n1")),
            before,
            "changed where it is, not copied"
        );
        assert_eq!(
            Arc::strong_count(&node_entry(&cache, "n2")),
            3,
            "still shared"
        );

        let update = cache.update_snapshot(&mut snapshot);
        assert!(!update.full_rebuild);
        assert_eq!(update.retired.aggregates(), 0, "no copies to free");
        assert!(snapshot.same_content(&cache.snapshot()));
        assert_eq!(snapshot.node("n1").unwrap().pods.len(), 2);
        assert_eq!(snapshot.node("n2").unwrap().pods.len(), 1, "unchanged");
    }

    #[test]
    fn a_lent_snapshot_is_rebuilt_when_its_maps_are_gone() {
        // Another snapshot's update made the cache forget past the lent maps.
        let (mut cache, mut snapshot) = two_nodes();
        cache.lend_snapshot(&mut snapshot);
        cache.apply_pod(running_pod("web-2", "n2"), Timestamp::UNIX_EPOCH);
        let other = cache.snapshot();
        assert_eq!(
            Arc::strong_count(&node_entry(&cache, "n1")),
            3,
            "the lent maps let go (the cache, `other`, and this count)"
        );
        let update = cache.update_snapshot(&mut snapshot);
        assert!(update.full_rebuild);
        assert!(snapshot.same_content(&other));

        // A copy of a lent snapshot takes the maps back in its place, and the original is rebuilt.
        cache.lend_snapshot(&mut snapshot);
        let mut copy = snapshot.clone();
        cache.apply_pod(running_pod("db-1", "n2"), Timestamp::UNIX_EPOCH);
        assert!(!cache.update_snapshot(&mut copy).full_rebuild);
        assert!(cache.update_snapshot(&mut snapshot).full_rebuild);
        assert!(copy.same_content(&snapshot));
        assert_eq!(snapshot.node("n2").unwrap().pods.len(), 3);

        // A snapshot lent while another's maps are out keeps its own.
        cache.lend_snapshot(&mut copy);
        cache.lend_snapshot(&mut snapshot);
        cache.apply_pod(running_pod("db-2", "n2"), Timestamp::UNIX_EPOCH);
        assert!(!cache.update_snapshot(&mut snapshot).full_rebuild);
        assert!(cache.update_snapshot(&mut copy).full_rebuild);
        assert!(copy.same_content(&snapshot));

        // Nor does the update of a snapshot lent earlier take the maps of one lent since.
        cache.lend_snapshot(&mut copy);
        cache.apply_pod(running_pod("db-3", "n2"), Timestamp::UNIX_EPOCH);
        cache.update_snapshot(&mut snapshot);
        cache.lend_snapshot(&mut snapshot);
        assert!(cache.update_snapshot(&mut copy).full_rebuild);
        assert!(!cache.update_snapshot(&mut snapshot).full_rebuild);
        assert!(copy.same_content(&snapshot));
    }

    #[test]
    fn objects_applied_again_unchanged_leave_the_snapshot_nothing_to_copy() {
        let mut cache = ClusterCache::new();
        cache.apply_node(crate::testkit::node("n1").build());
        let key = ObjectKey::new("ns", "web-0");
        cache.apply_pod(running_pod("web-0", "n1"), Timestamp::UNIX_EPOCH);
        assert!(cache.mark_evicting(&key, Timestamp::UNIX_EPOCH));
        let mut snapshot = cache.snapshot();
        let held = Arc::clone(&cache.pods[&key]);
        // As a relist reads them again: the same node, the same pod, the eviction mark still on it.
        cache.apply_node(crate::testkit::node("n1").build());
        cache.apply_pod(running_pod("web-0", "n1"), Timestamp::UNIX_EPOCH);
        assert!(
            Arc::ptr_eq(&held, &cache.pods[&key]),
            "the held version stays"
        );
        assert_eq!(cache.update_snapshot(&mut snapshot).entries_synced, 0);
        // Any change the cache keeps is applied.
        let labelled = crate::testkit::pod("ns/web-0", "n1")
            .patch(serde_json::json!({"metadata": {"uid": "web-0", "labels": {"tier": "web"}}}))
            .build();
        cache.apply_pod(labelled, Timestamp::UNIX_EPOCH);
        assert!(!Arc::ptr_eq(&held, &cache.pods[&key]));
        assert!(cache.update_snapshot(&mut snapshot).entries_synced > 0);
        assert!(snapshot.same_content(&cache.snapshot()));
        assert!(cache.pods[&key].evicting_since.is_some(), "still marked");
        cache.apply_node(crate::testkit::node("n1").unschedulable().build());
        assert_eq!(cache.update_snapshot(&mut snapshot).entries_synced, 1);
        assert!(
            snapshot
                .node("n1")
                .unwrap()
                .node
                .as_ref()
                .unwrap()
                .unschedulable
        );
    }

    #[test]
    fn a_namesake_does_not_inherit_the_in_flight_mark() {
        let mut cache = ClusterCache::new();
        let key = ObjectKey::new("ns", "web-0");
        let mut old = running_pod("web-0", "n1");
        old.uid = "old".into();
        cache.apply_pod(old.clone(), Timestamp::now());
        assert!(cache.mark_evicted(&key, "old", Timestamp::UNIX_EPOCH));
        // An update of the same pod keeps the mark.
        cache.apply_pod(old, Timestamp::now());
        assert!(cache.pod(&key).unwrap().evicting_since.is_some());
        assert_eq!(cache.evicting_count(), 1);
        // The StatefulSet recreated it: same name, new uid, running.
        let mut new = running_pod("web-0", "n1");
        new.uid = "new".into();
        cache.apply_pod(new, Timestamp::now());
        assert_eq!(cache.pod(&key).unwrap().evicting_since, None);
        assert_eq!(cache.evicting_count(), 0);
        // An answer about the old uid does not mark the new pod.
        assert!(!cache.mark_evicted(&key, "old", Timestamp::UNIX_EPOCH));
        assert_eq!(cache.pod(&key).unwrap().evicting_since, None);
    }

    /// Pod `n` of DaemonSet `ds`: one job of many pods, which span several nodes of its pod tree.
    fn daemon_pod(n: usize, node: &str) -> PodInfo {
        crate::testkit::pod(&format!("ns/ds-{n:03}"), node)
            .owned_by("DaemonSet", "ds")
            .build()
    }

    /// What a snapshot holds, by pointer: which version of which pod each node and job has.
    fn holdings(snapshot: &Snapshot) -> Vec<(String, Vec<Arc<PodInfo>>)> {
        let nodes = snapshot.nodes.iter().map(|(name, state)| {
            (
                format!("node {name}"),
                state.pods.values().cloned().collect(),
            )
        });
        let jobs = snapshot
            .jobs
            .iter()
            .map(|(key, job)| (format!("job {key:?}"), job.pods.values().cloned().collect()));
        nodes.chain(jobs).collect()
    }

    fn same_holdings(a: &[(String, Vec<Arc<PodInfo>>)], b: &[(String, Vec<Arc<PodInfo>>)]) -> bool {
        a.len() == b.len()
            && a.iter().zip(b).all(|((a, a_pods), (b, b_pods))| {
                a == b
                    && a_pods.len() == b_pods.len()
                    && a_pods.iter().zip(b_pods).all(|(x, y)| Arc::ptr_eq(x, y))
            })
    }

    #[test]
    fn a_snapshot_never_sees_later_changes_and_an_update_brings_them_all() {
        let mut cache = ClusterCache::new();
        let at = Timestamp::UNIX_EPOCH;
        for name in ["n0", "n1", "n2"] {
            cache.apply_node(crate::testkit::node(name).build());
        }
        for n in 0..60 {
            cache.apply_pod(daemon_pod(n, &format!("n{}", n % 2)), at);
        }
        cache.apply_pod(running_pod("alone", "n2"), at);
        let mut snapshot = cache.snapshot();
        let before = holdings(&snapshot);
        let requested_before = snapshot.node("n1").unwrap().requested.clone();

        // An update, a move, a removal, an addition, a pod that finishes, a job and a node that go.
        cache.apply_pod(daemon_pod(4, "n0"), at);
        cache.apply_pod(daemon_pod(5, "n0"), at);
        cache.delete_pod(&ObjectKey::new("ns", "ds-010"), at);
        cache.apply_pod(daemon_pod(100, "n1"), at);
        let mut done = daemon_pod(21, "n1");
        done.phase = crate::cluster::PodPhase::Succeeded;
        cache.apply_pod(done, at);
        cache.delete_pod(&ObjectKey::new("ns", "alone"), at);
        cache.delete_node("n2");

        assert!(
            same_holdings(&holdings(&snapshot), &before),
            "the snapshot saw changes made after it"
        );
        assert_eq!(snapshot.node("n1").unwrap().requested, requested_before);
        assert!(snapshot.node("n2").is_some());

        let update = cache.update_snapshot(&mut snapshot);
        assert!(!update.full_rebuild);
        let rebuilt = {
            let mut fresh = ClusterCache::new();
            for name in ["n0", "n1"] {
                fresh.apply_node(crate::testkit::node(name).build());
            }
            for key in cache.object_keys(ObjectKind::Pod) {
                fresh.apply_pod((**cache.pod(&key).unwrap()).clone(), at);
            }
            fresh.snapshot()
        };
        assert!(snapshot.same_content(&rebuilt), "{snapshot:#?}");
        let ds = &cache.pod(&ObjectKey::new("ns", "ds-000")).unwrap().job;
        let job = snapshot.job(ds).unwrap();
        assert_eq!(job.pods.len(), 60);
        assert!(!job.pods.contains_key(&ObjectKey::new("ns", "ds-010")));
        assert!(job.pods.contains_key(&ObjectKey::new("ns", "ds-100")));
        let n0 = snapshot.node("n0").unwrap();
        assert!(n0.pods.contains_key(&ObjectKey::new("ns", "ds-005")));
        assert!(
            snapshot
                .node("n1")
                .unwrap()
                .pods
                .get(&ObjectKey::new("ns", "ds-005"))
                .is_none()
        );
        assert!(snapshot.node("n2").is_none(), "the emptied node is gone");
        assert_eq!(snapshot.jobs.len(), 1, "the emptied job is gone");
    }

    #[test]
    fn an_update_hands_over_the_last_copies_of_what_it_replaced() {
        let mut cache = ClusterCache::new();
        let at = Timestamp::UNIX_EPOCH;
        cache.apply_node(crate::testkit::node("n0").build());
        for n in 0..20 {
            cache.apply_pod(daemon_pod(n, "n0"), at);
        }
        let mut snapshot = cache.snapshot();
        let old_pod = Arc::downgrade(cache.pod(&ObjectKey::new("ns", "ds-003")).unwrap());
        let old_node = Arc::downgrade(&snapshot.nodes["n0"]);
        let mut moved = daemon_pod(3, "n1");
        moved.phase = crate::cluster::PodPhase::Pending;
        cache.apply_pod(moved, at);

        let update = cache.update_snapshot(&mut snapshot);
        assert!(!update.full_rebuild);
        assert!(!update.retired.is_empty());
        assert!(
            old_pod.upgrade().is_some() && old_node.upgrade().is_some(),
            "only the update's result still holds the old versions"
        );
        assert!(snapshot.node("n1").unwrap().pods.len() == 1);
        drop(update);
        assert!(
            old_pod.upgrade().is_none(),
            "freed with the result, not leaked"
        );
        assert!(old_node.upgrade().is_none());

        // A full rebuild hands over the whole previous snapshot the same way.
        let mut stale = snapshot.clone();
        let held = Arc::downgrade(&stale.nodes["n1"]);
        cache.apply_pod(daemon_pod(3, "n0"), at);
        cache.update_snapshot(&mut snapshot);
        drop(snapshot);
        let update = cache.update_snapshot(&mut stale);
        assert!(update.full_rebuild);
        assert!(held.upgrade().is_some());
        drop(update);
        assert!(held.upgrade().is_none());
    }

    #[test]
    fn a_cache_without_snapshots_forgets_old_removals() {
        // The webhook never takes a snapshot: every pod passes through `unscheduled` before it is
        // bound, and each bare pod is a job of its own, so each one it sees go leaves removals behind.
        let mut cache = ClusterCache::new();
        let at = Timestamp::UNIX_EPOCH;
        cache.apply_node(crate::testkit::node("n0").build());
        cache.apply_pod(running_pod("kept", "n0"), at);
        let mut before = cache.snapshot();
        let template = running_pod("p", "");
        for n in 0..REMOVALS_KEPT {
            let mut pod = template.clone();
            pod.key = ObjectKey::new("ns", format!("p{n}"));
            pod.job =
                crate::cluster::JobKey::new("ns", crate::cluster::JobKind::Pod, format!("p{n}"));
            let key = pod.key.clone();
            cache.apply_pod(pod, at);
            cache.delete_pod(&key, at);
            assert!(cache.removals_held() <= REMOVALS_KEPT);
        }
        assert!(
            cache.removals_held() < REMOVALS_KEPT,
            "forgotten once past the bound"
        );

        // A snapshot taken before the cache forgot is rebuilt, never patched with removals missing.
        let update = cache.update_snapshot(&mut before);
        assert!(update.full_rebuild);
        assert!(before.same_content(&cache.snapshot()));
        assert!(before.unscheduled.is_empty());
        assert_eq!(before.node("n0").unwrap().pods.len(), 1);
    }

    #[test]
    fn a_snapshot_of_another_cache_is_rebuilt_not_patched() {
        // Slot numbers are per cache: the same slots name different nodes in these two.
        let at = Timestamp::UNIX_EPOCH;
        let mut a = ClusterCache::new();
        let mut b = ClusterCache::new();
        for name in ["a0", "a1"] {
            a.apply_node(crate::testkit::node(name).build());
        }
        for name in ["b0", "b1", "b2"] {
            b.apply_node(crate::testkit::node(name).build());
        }
        let mut snapshot = a.snapshot();
        a.update_snapshot(&mut snapshot);
        b.apply_pod(running_pod("p", "b1"), at);
        let update = b.update_snapshot(&mut snapshot);
        assert!(update.full_rebuild);
        assert!(snapshot.same_content(&b.snapshot()));
        assert_eq!(
            snapshot.nodes.keys().collect::<Vec<_>>(),
            ["b0", "b1", "b2"]
        );
    }

    fn cpu_sample(at: Timestamp, milli_cpu: i64) -> UsageSample {
        let usage = crate::cluster::Resources {
            milli_cpu,
            ..Default::default()
        };
        UsageSample::new(at, Some("20s"), usage)
    }

    #[test]
    fn a_pod_leaves_its_node_s_usage_once() {
        let mut cache = ClusterCache::new();
        let before = Timestamp::now() - jiff::SignedDuration::from_secs(30);
        cache.record_node_usage("n1", cpu_sample(before, 1000));
        for name in ["evicted", "finished", "unmeasured-elsewhere"] {
            let node = if name == "unmeasured-elsewhere" {
                "n2"
            } else {
                "n1"
            };
            cache.apply_pod(running_pod(name, node), Timestamp::now());
        }
        let evicted = ObjectKey::new("ns", "evicted");
        let finished = ObjectKey::new("ns", "finished");
        cache.record_pod_usage(&evicted, cpu_sample(before, 300));
        cache.record_pod_usage(&finished, cpu_sample(before, 200));
        let departures = |cache: &ClusterCache| {
            cache
                .node_usage
                .get(&"n1".to_owned())
                .unwrap()
                .departures
                .iter()
                .map(|d| d.usage.as_ref().map(|u| u.milli_cpu))
                .collect::<Vec<_>>()
        };

        // Evicted: it leaves when the API server accepts, and not again when it is deleted.
        assert!(cache.mark_evicting(&evicted, Timestamp::now()));
        cache.delete_pod(&evicted, Timestamp::now());
        assert_eq!(departures(&cache), vec![Some(300)]);

        // Finished, then deleted: it left when it finished.
        let mut done = running_pod("finished", "n1");
        done.phase = crate::cluster::PodPhase::Succeeded;
        cache.apply_pod(done, Timestamp::now());
        cache.delete_pod(&finished, Timestamp::now());
        assert_eq!(departures(&cache), vec![Some(300), Some(200)]);

        // A node without measurements has nothing to correct.
        cache.delete_pod(
            &ObjectKey::new("ns", "unmeasured-elsewhere"),
            Timestamp::now(),
        );
        assert!(cache.node_usage.get(&"n2".to_owned()).is_none());

        let window = GoDuration::from_secs(300);
        let average = cache.snapshot().node_usage["n1"].average(Timestamp::now(), window);
        assert_eq!(average.map(|u| u.milli_cpu), Some(500));
    }
}
