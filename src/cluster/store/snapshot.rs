//! A consistent, immutable view of the cluster for one cycle. Strategies and gates read only this.

use std::{collections::BTreeMap, sync::Arc};

use crate::cluster::{
    JobStats,
    model::job_budget::JobBudget,
    model::keys::{JobKey, Name, ObjectKey},
    model::namespace::NamespaceInfo,
    model::node::NodeInfo,
    model::pod::PodInfo,
    model::resources::Resources,
    model::setting::Setting,
    model::usage::UsageSeries,
    model::workload::{PdbInfo, PodGroupInfo},
    model::{policy::PolicyInfo, zone::ZoneInfo},
    store::pod_map::PodMap,
    store::snapshot_map::SnapshotMap,
    store::versioned::Aggregate,
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
    /// Pods with a value tidal cannot read ([`PodInfo::problems`]), finished or not: the planner's
    /// warning about them need not visit the pods of every other node.
    pub pods_with_problems: u32,
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

    /// Adds `pod`, or replaces the version stored under its key: a pod that changes in place (its
    /// status, mostly) costs one search of the tree rather than a removal and an insertion.
    pub(super) fn add_pod(&mut self, pod: &Arc<PodInfo>) {
        if let Some(replaced) = self.pods.insert(Arc::clone(pod)) {
            self.uncount(&replaced);
        }
        self.count(pod);
    }

    /// Removes the pod with `pod`'s key, counted by the version stored (the one that was added), so
    /// that a caller holding another version of it cannot miscount.
    pub(super) fn remove_pod(&mut self, pod: &PodInfo) {
        if let Some(stored) = self.pods.remove(&pod.key) {
            self.uncount(&stored);
        }
    }

    fn count(&mut self, pod: &PodInfo) {
        if pod.holds_resources() {
            self.requested.add(&pod.requests);
            if !pod.requests_known {
                self.unreadable_requests += 1;
            }
            if pod.is_leaving() {
                self.leaving += 1;
            }
        }
        if !pod.problems().is_empty() {
            self.pods_with_problems += 1;
        }
    }

    fn uncount(&mut self, pod: &PodInfo) {
        if pod.holds_resources() {
            self.requested.sub(&pod.requests);
            if !pod.requests_known {
                self.unreadable_requests = self.unreadable_requests.saturating_sub(1);
            }
            if pod.is_leaving() {
                self.leaving = self.leaving.saturating_sub(1);
            }
        }
        if !pod.problems().is_empty() {
            self.pods_with_problems = self.pods_with_problems.saturating_sub(1);
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
    /// Kept by [`Self::add_pod`] and [`Self::remove_pod`]: the gates read every job of a plan, and
    /// walking each job's pods (a tree of pointers) for counts that rarely change took a tenth of it.
    summary: JobSummary,
}

impl Aggregate for JobState {
    fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }
}

/// How a job's pods count in its [`JobStats`], beside the job aggregates that keep them: the budget
/// arithmetic (`model::job_budget`) reads the counts and never a pod.
impl JobStats {
    /// The counter `pod` adds to, `leaving` saying whether it counts as gone. The one rule for both
    /// the walk and the kept summary, so that they cannot drift apart.
    fn counter(&mut self, pod: &PodInfo, leaving: bool) -> Option<&mut u32> {
        if pod.phase.is_finished() {
            Some(&mut self.finished)
        } else if leaving {
            Some(&mut self.leaving)
        } else if pod.is_available() {
            Some(&mut self.running)
        } else {
            None
        }
    }

    pub(crate) fn add(&mut self, pod: &PodInfo, leaving: bool) {
        self.total += 1;
        if let Some(counter) = self.counter(pod, leaving) {
            *counter += 1;
        }
    }

    pub(crate) fn remove(&mut self, pod: &PodInfo, leaving: bool) {
        self.total = self.total.saturating_sub(1);
        if let Some(counter) = self.counter(pod, leaving) {
            *counter = counter.saturating_sub(1);
        }
    }
}

/// What a job's pods add up to, counted as they come and go.
#[derive(Clone, Debug, Default, PartialEq)]
struct JobSummary {
    /// [`JobState::stats`] with leaving meaning [`PodInfo::is_leaving`].
    stats: JobStats,
    budgets: BudgetTally,
}

impl JobSummary {
    fn add(&mut self, pod: &PodInfo) {
        self.stats.add(pod, pod.is_leaving());
        self.budgets.add(&pod.budget);
    }

    fn remove(&mut self, pod: &PodInfo) {
        self.stats.remove(pod, pod.is_leaving());
        self.budgets.remove(&pod.budget);
    }
}

/// The budgets a job's pods carry (`pod.budget`), counted.
#[derive(Clone, Debug, Default)]
struct BudgetTally {
    invalid: u32,
    /// Distinct values with the number of pods carrying each. Pods of a job normally share a template,
    /// so this holds one entry, or none.
    valid: Vec<(JobBudget, u32)>,
}

impl BudgetTally {
    fn add(&mut self, budget: &Setting<JobBudget>) {
        match budget {
            Setting::Unset => {}
            Setting::Invalid(_) => self.invalid += 1,
            Setting::Valid(budget) => match self.valid.iter_mut().find(|(b, _)| b == budget) {
                Some((_, count)) => *count += 1,
                None => self.valid.push((*budget, 1)),
            },
        }
    }

    fn remove(&mut self, budget: &Setting<JobBudget>) {
        match budget {
            Setting::Unset => {}
            Setting::Invalid(_) => self.invalid = self.invalid.saturating_sub(1),
            Setting::Valid(budget) => {
                if let Some(at) = self.valid.iter().position(|(b, _)| b == budget) {
                    self.valid[at].1 -= 1;
                    if self.valid[at].1 == 0 {
                        self.valid.swap_remove(at);
                    }
                }
            }
        }
    }
}

/// Equal when the same values have the same counts: the order of `valid` is that of arrivals, which a
/// rebuild of the same pods need not repeat.
impl PartialEq for BudgetTally {
    fn eq(&self, other: &Self) -> bool {
        self.invalid == other.invalid
            && self.valid.len() == other.valid.len()
            && self.valid.iter().all(|entry| other.valid.contains(entry))
    }
}

/// The budgets a job's pods carry, as far as the counts alone tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PodBudgets {
    /// No pod carries one.
    None,
    /// Every pod carrying one carries this one, and none carries an invalid one.
    Agreed(JobBudget),
    /// Some pod's is invalid, or the pods' differ: what to report depends on which pod comes first,
    /// so the caller walks the pods.
    Mixed,
}

impl JobState {
    pub(super) fn add_pod(&mut self, pod: &Arc<PodInfo>) {
        if let Some(replaced) = self.pods.insert(Arc::clone(pod)) {
            self.summary.remove(&replaced);
        }
        self.summary.add(pod);
    }

    /// Removes the pod with `pod`'s key, counted by the version stored (the one leaving), so that a
    /// caller holding another version of it cannot miscount.
    pub(super) fn remove_pod(&mut self, pod: &PodInfo) {
        if let Some(stored) = self.pods.remove(&pod.key) {
            self.summary.remove(&stored);
        }
    }

    /// Counts the job's pods; `leaving` marks pods to count as already gone (e.g. planned this cycle).
    /// A walk over the pods: when `leaving` would be [`PodInfo::is_leaving`], [`Self::stats_as_is`]
    /// answers the same at once.
    pub fn stats(&self, leaving: impl Fn(&PodInfo) -> bool) -> JobStats {
        let mut stats = JobStats::default();
        for pod in self.pods.values() {
            stats.add(pod, leaving(pod));
        }
        stats
    }

    /// [`Self::stats`] with nothing counted as gone beyond what the pods say of themselves
    /// ([`PodInfo::is_leaving`]), kept as pods come and go rather than counted.
    pub fn stats_as_is(&self) -> JobStats {
        self.summary.stats
    }

    /// The budgets the job's pods carry, from counts kept as pods come and go.
    pub(crate) fn pod_budgets(&self) -> PodBudgets {
        let tally = &self.summary.budgets;
        match (tally.invalid, tally.valid.as_slice()) {
            (0, []) => PodBudgets::None,
            (0, [(budget, _)]) => PodBudgets::Agreed(*budget),
            _ => PodBudgets::Mixed,
        }
    }
}

#[cfg(test)]
mod aggregate_tests {
    use std::sync::Arc;

    use super::{JobState, NodeState, PodBudgets};
    use crate::cluster::JobStats;
    use crate::{
        cluster::{IntOrPercent, JobBudget, PodInfo},
        testkit::*,
    };

    fn build(pod: PodBuilder) -> Arc<PodInfo> {
        Arc::new(pod.build())
    }

    fn stats(total: u32, running: u32, finished: u32, leaving: u32) -> JobStats {
        JobStats {
            total,
            running,
            finished,
            leaving,
        }
    }

    /// The kept counts, checked against a walk every time.
    fn kept(job: &JobState) -> JobStats {
        assert_eq!(job.stats_as_is(), job.stats(PodInfo::is_leaving));
        job.stats_as_is()
    }

    #[test]
    fn a_pod_counts_by_its_latest_version_as_it_runs_terminates_and_finishes() {
        let mut job = JobState::default();
        job.add_pod(&build(pod("a/p", "n1").phase("Pending")));
        job.add_pod(&build(pod("a/other", "n1")));
        assert_eq!(kept(&job), stats(2, 1, 0, 0));

        // Versions replace one another, as the cache applies them: removed, then added.
        let running = build(pod("a/p", "n1"));
        job.remove_pod(&running);
        job.add_pod(&running);
        assert_eq!(kept(&job), stats(2, 2, 0, 0));

        let terminating = build(pod("a/p", "n1").terminating());
        job.remove_pod(&terminating);
        job.add_pod(&terminating);
        assert_eq!(kept(&job), stats(2, 1, 0, 1));

        // Added over the stored version without its removal: still counted once.
        let finished = build(pod("a/p", "n1").terminating().phase("Succeeded"));
        job.add_pod(&finished);
        assert_eq!(kept(&job), stats(2, 1, 1, 0));

        // Removal counts by the stored version, whatever version the caller holds.
        job.remove_pod(&running);
        assert_eq!(kept(&job), stats(1, 1, 0, 0));
        job.remove_pod(&build(pod("a/other", "n1").phase("Failed")));
        assert_eq!(kept(&job), JobStats::default());
        assert_eq!(job, JobState::default(), "nothing lingers once empty");
    }

    /// A node's counts after `pods` were added to an empty node, one version each.
    fn counted(pods: &[&Arc<PodInfo>]) -> NodeState {
        let mut node = NodeState::default();
        for pod in pods {
            node.add_pod(pod);
        }
        node
    }

    #[test]
    fn a_node_counts_a_pod_replaced_in_place_by_its_latest_version() {
        let other = build(pod("a/other", "n1").requests("1", "1Gi"));
        let pending = build(pod("a/p", "n1").requests("2", "2Gi").phase("Pending"));
        let terminating = build(pod("a/p", "n1").requests("2", "2Gi").terminating());
        let unreadable = build(pod("a/p", "n1").requests("9 cores", "2Gi"));
        let finished = build(pod("a/p", "n1").requests("2", "2Gi").phase("Succeeded"));
        let mut node = counted(&[&other]);
        for version in [&pending, &terminating, &unreadable, &finished, &pending] {
            // Added over the stored version, as the cache replaces a pod that stays on its node.
            node.add_pod(version);
            assert_eq!(node, counted(&[&other, version]), "{:?}", version.phase);
        }
        assert_eq!(node.leaving, 0);
        node.add_pod(&terminating);
        assert_eq!((node.leaving, node.requested.pods), (1, 2));
        // Removal counts by the stored version, whatever version the caller holds.
        node.remove_pod(&pending);
        assert_eq!(node, counted(&[&other]));
        node.remove_pod(&other);
        assert_eq!(node, NodeState::default(), "nothing lingers once empty");
    }

    #[test]
    fn removing_a_pod_that_is_not_there_changes_nothing() {
        let mut job = JobState::default();
        job.add_pod(&build(pod("a/p", "n1").terminating()));
        let before = job.clone();
        job.remove_pod(&build(pod("a/absent", "n1").terminating()));
        assert_eq!(kept(&job), stats(1, 0, 0, 1));
        assert_eq!(job, before);
    }

    #[test]
    fn pod_budgets_are_agreed_only_while_no_pod_disagrees_or_is_invalid() {
        let carrying = |name: &str, value: &str| {
            build(
                pod(&format!("a/{name}"), "n1").annotation("volcano.sh/jdb-max-unavailable", value),
            )
        };
        let gone = |name: &str| build(pod(&format!("a/{name}"), "n1"));
        let one = JobBudget::MaxUnavailable(IntOrPercent::Int(1));
        let mut job = JobState::default();
        job.add_pod(&gone("plain"));
        assert_eq!(job.pod_budgets(), PodBudgets::None);
        job.add_pod(&carrying("a", "1"));
        job.add_pod(&carrying("b", "1"));
        assert_eq!(job.pod_budgets(), PodBudgets::Agreed(one));
        job.add_pod(&carrying("c", "2"));
        assert_eq!(job.pod_budgets(), PodBudgets::Mixed);
        job.remove_pod(&gone("c"));
        assert_eq!(job.pod_budgets(), PodBudgets::Agreed(one));
        job.add_pod(&carrying("d", "lots"));
        assert_eq!(job.pod_budgets(), PodBudgets::Mixed);
        // The invalid version replaced by a valid one: agreed again.
        job.add_pod(&carrying("d", "1"));
        assert_eq!(job.pod_budgets(), PodBudgets::Agreed(one));
        for name in ["a", "b", "d"] {
            job.remove_pod(&gone(name));
        }
        assert_eq!(job.pod_budgets(), PodBudgets::None);
    }
}

#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub(super) generation: u64,
    /// The cache this snapshot was taken from: only that cache can bring it up to date in place.
    pub(super) origin: u64,
    /// `nodes` and `jobs` are lent to that cache ([`ClusterCache::lend_snapshot`]) and read empty
    /// until the next update brings them back.
    ///
    /// [`ClusterCache::lend_snapshot`]: super::ClusterCache::lend_snapshot
    pub(super) lent: bool,
    pub nodes: SnapshotMap<Name, NodeState>,
    /// Pods not bound to any node.
    pub unscheduled: BTreeMap<ObjectKey, Arc<PodInfo>>,
    pub jobs: SnapshotMap<JobKey, JobState>,
    /// A map with a hash index: placement and the job budgets look up the PodGroup of every pod and
    /// job they weigh, and a search of a sorted map compared names as strings a dozen times each.
    pub podgroups: SnapshotMap<ObjectKey, PodGroupInfo>,
    pub pdbs: BTreeMap<ObjectKey, Arc<PdbInfo>>,
    pub zones: BTreeMap<String, Arc<ZoneInfo>>,
    pub policies: BTreeMap<String, Arc<PolicyInfo>>,
    pub namespaces: BTreeMap<String, Arc<NamespaceInfo>>,
    /// PersistentVolumeClaims, for their StorageClass.
    pub claims: BTreeMap<ObjectKey, Arc<crate::cluster::ClaimInfo>>,
    /// Answers to the Prometheus queries policies read, by query.
    pub node_metrics: BTreeMap<String, Arc<crate::cluster::MetricSample>>,
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

    /// The pods of [`Self::pods`] that have problems ([`PodInfo::problems`]), in the same order,
    /// visiting only the nodes that hold any.
    pub fn pods_with_problems(&self) -> impl Iterator<Item = &Arc<PodInfo>> {
        self.nodes
            .values()
            .filter(|n| n.pods_with_problems > 0)
            .flat_map(|n| n.pods.values())
            .chain(self.unscheduled.values())
            .filter(|p| !p.problems().is_empty())
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
        self.podgroup(&pod.key.namespace, pod.group_name.as_deref()?)
    }

    /// The PodGroup `namespace/name`, looked up by borrowed parts: placement and the job budgets ask
    /// for every pod and job they weigh, and building a key would clone both names.
    pub fn podgroup(&self, namespace: &str, name: &str) -> Option<&PodGroupInfo> {
        let key: &dyn NamespacedName = &(namespace, name);
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
            && self.claims == other.claims
            && self.node_metrics == other.node_metrics
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

/// As `ObjectKey` hashes (namespace, then name, each as a `str`), as `Borrow` requires.
impl std::hash::Hash for dyn NamespacedName + '_ {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let (namespace, name) = self.parts();
        namespace.hash(state);
        name.hash(state);
    }
}

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
        assert_eq!(n1.pods_with_problems, 2);
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
        // A finished pod holds nothing, but its value is still unreadable.
        assert_eq!(n1.pods_with_problems, 1);
        let named: Vec<String> = snapshot
            .pods_with_problems()
            .map(|p| p.key.to_string())
            .collect();
        assert_eq!(named, ["a/bad"]);
        let mut cluster = cluster.pod(pod("a/bad", "n1").requests("1", "1Gi"));
        let snapshot = cluster.cache.snapshot();
        assert_eq!(snapshot.node("n1").unwrap().pods_with_problems, 0);
        assert_eq!(snapshot.pods_with_problems().count(), 0);
    }
}
