//! A consistent, immutable view of the cluster for one cycle. Strategies and gates read only this.

use std::{collections::BTreeMap, sync::Arc};

use super::{
    config::{PolicyInfo, ZoneInfo},
    keys::{JobKey, ObjectKey},
    namespace::NamespaceInfo,
    node::NodeInfo,
    pod::PodInfo,
    pod_map::PodMap,
    resources::Resources,
    snapshot_map::SnapshotMap,
    usage::UsageSeries,
    versioned::Aggregate,
    workload::{PdbInfo, PodGroupInfo},
};

/// A node with the pods bound to it and what they request: the per-node aggregate strategies decide on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeState {
    /// `None` while pods name a node the cache has not seen (or no longer sees).
    pub node: Option<Arc<NodeInfo>>,
    pub pods: PodMap,
    /// Sum of the requests of the pods that hold resources (not finished).
    pub requested: Resources,
    /// Pods holding resources whose requests tidal could not read. `requested` counts only their pod
    /// slot, so while any is here the node's load is unknown.
    pub unreadable_requests: u32,
    /// Pods holding resources that are on their way out (terminating or being evicted). Strategies
    /// take such pods off a node's load; on a node with none, they need not visit its pods for that.
    pub leaving: u32,
}

impl NodeState {
    pub fn name(&self) -> Option<&str> {
        self.node.as_deref().map(|n| n.name.as_str())
    }

    /// `requested` is the node's whole load. When it is not, the node is neither measured against
    /// thresholds nor used as anyone's destination: it may be fuller than it looks.
    pub fn load_known(&self) -> bool {
        self.unreadable_requests == 0
    }

    pub(super) fn add_pod(&mut self, pod: &Arc<PodInfo>) {
        if pod.holds_resources() {
            self.requested.add(&pod.requests);
            if !pod.requests_known {
                self.unreadable_requests += 1;
            }
            if pod.is_leaving() {
                self.leaving += 1;
            }
        }
        self.pods.insert(Arc::clone(pod));
    }

    pub(super) fn remove_pod(&mut self, pod: &PodInfo) {
        let Some(stored) = self.pods.remove(&pod.key) else {
            return;
        };
        if pod.holds_resources() {
            self.requested.sub(&pod.requests);
            if !pod.requests_known {
                self.unreadable_requests = self.unreadable_requests.saturating_sub(1);
            }
        }
        // Counted by the version that was added, which is the one leaving.
        if stored.holds_resources() && stored.is_leaving() {
            self.leaving = self.leaving.saturating_sub(1);
        }
    }
}

impl Aggregate for NodeState {
    fn is_empty(&self) -> bool {
        self.node.is_none() && self.pods.is_empty()
    }
}

/// All pods of one job, wherever they run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobState {
    /// Shared with the cache node by node: a change to one pod of a DaemonSet's 5,000 copies a few
    /// tree nodes, not the job.
    pub pods: PodMap,
}

impl Aggregate for JobState {
    fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }
}

/// Pod counts of a job, as its disruption budget reads them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobStats {
    pub total: u32,
    /// Running and not leaving.
    pub running: u32,
    /// Succeeded or failed.
    pub finished: u32,
    /// Unfinished and on their way out: terminating, being evicted, or planned this cycle.
    pub leaving: u32,
}

impl JobStats {
    /// Pods that are neither running nor finished: pending, unknown, terminating or being evicted.
    pub fn unavailable(&self) -> u32 {
        self.total - self.finished - self.running
    }
}

impl JobState {
    /// Counts the job's pods; `leaving` marks pods to count as already gone (e.g. planned this cycle).
    pub fn stats(&self, leaving: impl Fn(&PodInfo) -> bool) -> JobStats {
        let mut stats = JobStats::default();
        for pod in self.pods.values() {
            stats.total += 1;
            if pod.phase.is_finished() {
                stats.finished += 1;
            } else if leaving(pod) {
                stats.leaving += 1;
            } else if pod.is_available() {
                stats.running += 1;
            }
        }
        stats
    }
}

#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub(super) generation: u64,
    /// The cache this snapshot was taken from: only that cache can bring it up to date in place.
    pub(super) origin: u64,
    pub nodes: SnapshotMap<String, NodeState>,
    /// Pods not bound to any node.
    pub unscheduled: BTreeMap<ObjectKey, Arc<PodInfo>>,
    pub jobs: SnapshotMap<JobKey, JobState>,
    pub podgroups: BTreeMap<ObjectKey, Arc<PodGroupInfo>>,
    pub pdbs: BTreeMap<ObjectKey, Arc<PdbInfo>>,
    pub zones: BTreeMap<String, Arc<ZoneInfo>>,
    pub policies: BTreeMap<String, Arc<PolicyInfo>>,
    pub namespaces: BTreeMap<String, Arc<NamespaceInfo>>,
    /// Measured usage (metrics.k8s.io) per node and per pod.
    pub node_usage: BTreeMap<String, Arc<UsageSeries>>,
    pub pod_usage: BTreeMap<ObjectKey, Arc<UsageSeries>>,
}

impl Snapshot {
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Every pod, bound ones by node name, then unbound ones; deterministic order.
    pub fn pods(&self) -> impl Iterator<Item = &Arc<PodInfo>> {
        self.nodes
            .values()
            .flat_map(|n| n.pods.values())
            .chain(self.unscheduled.values())
    }

    pub fn pod_count(&self) -> usize {
        self.nodes.values().map(|n| n.pods.len()).sum::<usize>() + self.unscheduled.len()
    }

    pub fn node(&self, name: &str) -> Option<&NodeState> {
        self.nodes.get(name).map(Arc::as_ref)
    }

    pub fn job(&self, key: &JobKey) -> Option<&JobState> {
        self.jobs.get(key).map(Arc::as_ref)
    }

    /// The Volcano PodGroup a pod names, if that PodGroup exists.
    pub fn podgroup_of(&self, pod: &PodInfo) -> Option<&PodGroupInfo> {
        let group = pod.group_name.as_deref()?;
        // Looked up by borrowed parts: placement asks this for every pod it weighs.
        let key: &dyn NamespacedName = &(pod.key.namespace.as_str(), group);
        self.podgroups.get(key).map(Arc::as_ref)
    }

    /// Nodes labelled with `zone`, in name order.
    pub fn zone_nodes<'a>(&'a self, zone: &'a str) -> impl Iterator<Item = &'a NodeState> + 'a {
        self.nodes.values().map(Arc::as_ref).filter(move |n| {
            n.node
                .as_ref()
                .is_some_and(|node| node.revocable_zone.as_deref() == Some(zone))
        })
    }

    /// Same cluster content as `other` (ignoring generations): what a full rebuild must reproduce.
    pub fn same_content(&self, other: &Snapshot) -> bool {
        self.nodes == other.nodes
            && self.unscheduled == other.unscheduled
            && self.jobs == other.jobs
            && self.podgroups == other.podgroups
            && self.pdbs == other.pdbs
            && self.zones.keys().eq(other.zones.keys())
            && self.policies.keys().eq(other.policies.keys())
            && self.namespaces == other.namespaces
            && self.node_usage == other.node_usage
            && self.pod_usage == other.pod_usage
    }
}

/// A namespace and a name, borrowed or owned: lets an [`ObjectKey`]-keyed map be searched without
/// building a key. Ordered as `ObjectKey` is (namespace, then name), as `Borrow` requires.
pub(crate) trait NamespacedName {
    fn parts(&self) -> (&str, &str);
}

impl NamespacedName for ObjectKey {
    fn parts(&self) -> (&str, &str) {
        (&self.namespace, &self.name)
    }
}

impl NamespacedName for (&str, &str) {
    fn parts(&self) -> (&str, &str) {
        (self.0, self.1)
    }
}

impl<'a> std::borrow::Borrow<dyn NamespacedName + 'a> for ObjectKey {
    fn borrow(&self) -> &(dyn NamespacedName + 'a) {
        self
    }
}

impl PartialEq for dyn NamespacedName + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn NamespacedName + '_ {}

impl PartialOrd for dyn NamespacedName + '_ {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for dyn NamespacedName + '_ {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.parts().cmp(&other.parts())
    }
}

#[cfg(test)]
mod tests {
    use crate::{cluster::ObjectKey, testkit::*};

    #[test]
    fn a_pod_with_unreadable_requests_takes_its_slot_and_hides_the_node_s_load() {
        let mut cluster = Cluster::new()
            .node(node("n1").allocatable("4", "8Gi", 110))
            .pod(pod("a/fine", "n1").requests("1", "1Gi"))
            .pod(pod("a/bad", "n1").requests("9 cores", "1Gi"))
            .pod(pod("a/huge", "n1").requests("1", "5Pi"));
        let snapshot = cluster.cache.snapshot();
        let n1 = snapshot.node("n1").unwrap();
        assert_eq!(n1.requested.pods, 3, "every pod takes its slot");
        assert_eq!(
            n1.requested.milli_cpu, 1000,
            "only the readable request counts"
        );
        assert_eq!(n1.unreadable_requests, 2);
        assert!(!n1.load_known());
        // Finishing and deleting undo exactly what adding did.
        let mut cluster = cluster.pod(
            pod("a/bad", "n1")
                .requests("9 cores", "1Gi")
                .phase("Succeeded"),
        );
        cluster
            .cache
            .delete_pod(&ObjectKey::new("a", "huge"), jiff::Timestamp::UNIX_EPOCH);
        let snapshot = cluster.cache.snapshot();
        let n1 = snapshot.node("n1").unwrap();
        assert_eq!(n1.requested.pods, 1);
        assert_eq!(n1.unreadable_requests, 0);
        assert!(n1.load_known());
    }
}
