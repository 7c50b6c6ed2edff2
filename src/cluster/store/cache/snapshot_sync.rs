//! Snapshots of the cache: built from scratch, brought up to date by copying what changed since, and
//! lent back to the cache between cycles.

use std::sync::Arc;

use super::ClusterCache;
use crate::cluster::{JobState, NodeState, PodInfo, Snapshot, store::pile::Pile};

/// What a snapshot update did, for logs and benchmarks, and what it let go of.
#[derive(Debug)]
pub struct SnapshotUpdate {
    pub full_rebuild: bool,
    /// Entries (nodes, jobs, unbound pods, ...) copied or removed.
    pub entries_synced: usize,
    /// The versions the snapshot held that the cache had already replaced: their last copies.
    /// Freeing them (the copied tree paths, the pods that changed) is most of an update's work, and
    /// happens when this value is dropped: a caller holding the cache's lock drops it after releasing
    /// the lock, so that the watches need not wait for it.
    pub retired: Retired,
}

/// Versions a snapshot update replaced, freed when this is dropped.
#[derive(Default)]
pub struct Retired {
    nodes: Pile<Arc<NodeState>>,
    jobs: Pile<Arc<JobState>>,
    pods: Pile<Arc<PodInfo>>,
    /// A snapshot rebuilt in full lets go of its whole previous self.
    snapshot: Option<Box<Snapshot>>,
}

impl Retired {
    /// Node, job and unbound-pod versions let go of (a whole previous snapshot counts as one).
    pub fn len(&self) -> usize {
        self.nodes.len() + self.jobs.len() + self.pods.len() + usize::from(self.snapshot.is_some())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Node and job versions let go of: the copies the cache made while the snapshot shared them.
    pub fn aggregates(&self) -> usize {
        self.nodes.len() + self.jobs.len()
    }
}

impl std::fmt::Debug for Retired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retired")
            .field("nodes", &self.nodes.len())
            .field("jobs", &self.jobs.len())
            .field("pods", &self.pods.len())
            .field("snapshot", &self.snapshot.is_some())
            .finish()
    }
}

impl ClusterCache {
    /// Only nodes and zones, all that closed-zone taints are decided from: cheaper than a snapshot of
    /// everything, and independent of the planning snapshot's incremental updates.
    pub fn nodes_and_zones(&self) -> Snapshot {
        Snapshot {
            origin: self.origin.0,
            nodes: self.nodes.copy_all_map(),
            zones: self.zones.copy_all(),
            ..Snapshot::default()
        }
    }

    /// A snapshot built from scratch.
    pub fn snapshot(&mut self) -> Snapshot {
        let mut snapshot = Snapshot::default();
        self.update_snapshot(&mut snapshot);
        snapshot
    }

    /// Brings `snapshot` up to date, copying only entries changed since it was last updated (unchanged
    /// nodes and jobs stay shared with the cache). Meant for one long-lived snapshot per cache: removals
    /// are forgotten afterwards, so any older snapshot passed here later is rebuilt in full.
    pub fn update_snapshot(&mut self, snapshot: &mut Snapshot) -> SnapshotUpdate {
        // A default snapshot (origin 0) is empty at generation 0: what any cache was once.
        let foreign = snapshot.origin != 0 && snapshot.origin != self.origin.0;
        // A lent snapshot's maps come back, unless the cache dropped them (it forgot removals since)
        // or another snapshot took them: without them it is rebuilt.
        let lent = std::mem::take(&mut snapshot.lent);
        let returned = lent && !foreign && self.reclaim(snapshot);
        let full_rebuild = foreign
            || lent && !returned
            || snapshot.generation < self.pruned_through
            || snapshot.generation > self.generation;
        let mut retired = Retired::default();
        let entries_synced = if full_rebuild {
            let rebuilt = Snapshot {
                generation: 0,
                lent: false,
                origin: self.origin.0,
                nodes: self.nodes.copy_all_map(),
                unscheduled: self.unscheduled.copy_all(),
                jobs: self.jobs.copy_all_map(),
                podgroups: self.podgroups.copy_all_map(),
                pdbs: self.pdbs.copy_all(),
                zones: self.zones.copy_all(),
                policies: self.policies.copy_all(),
                namespaces: self.namespaces.copy_all(),
                claims: self.claims.copy_all(),
                node_metrics: self.node_metrics.copy_all(),
                node_usage: self.node_usage.copy_all(),
                pod_usage: self.pod_usage.copy_all(),
            };
            retired.snapshot = Some(Box::new(std::mem::replace(snapshot, rebuilt)));
            snapshot.nodes.len() + snapshot.jobs.len() + snapshot.unscheduled.len()
        } else {
            let since = snapshot.generation;
            // Only nodes, jobs and unbound pods carry much to free; the rest goes at once.
            self.nodes
                .sync_into_map(since, &mut snapshot.nodes, &mut retired.nodes)
                + self.unscheduled.sync_into_retiring(
                    since,
                    &mut snapshot.unscheduled,
                    &mut retired.pods,
                )
                + self
                    .jobs
                    .sync_into_map(since, &mut snapshot.jobs, &mut retired.jobs)
                + self
                    .podgroups
                    .sync_into_map(since, &mut snapshot.podgroups, &mut Pile::default())
                + self.pdbs.sync_into(since, &mut snapshot.pdbs)
                + self.zones.sync_into(since, &mut snapshot.zones)
                + self.policies.sync_into(since, &mut snapshot.policies)
                + self.namespaces.sync_into(since, &mut snapshot.namespaces)
                + self.claims.sync_into(since, &mut snapshot.claims)
                + self
                    .node_metrics
                    .sync_into(since, &mut snapshot.node_metrics)
                + self.node_usage.sync_into(since, &mut snapshot.node_usage)
                + self.pod_usage.sync_into(since, &mut snapshot.pod_usage)
        };
        snapshot.generation = self.generation;
        snapshot.origin = self.origin.0;
        self.prune(self.generation);
        SnapshotUpdate {
            full_rebuild,
            entries_synced,
            retired,
        }
    }

    /// Lends `snapshot`'s nodes and jobs to the cache until the snapshot's next update takes them
    /// back; they read empty meanwhile. A controller lends its snapshot once a cycle no longer reads
    /// them. While the snapshot holds the cache's aggregates, each change the watches make copies the
    /// changed part of one (its tree path), and the next update frees the copies the snapshot kept:
    /// about 1.1 µs per event. Lent, the maps let go of an aggregate before the cache changes it, so
    /// the change is made in place and the update has nothing but stand-ins to replace.
    pub fn lend_snapshot(&mut self, snapshot: &mut Snapshot) {
        // Only a snapshot the next update will patch: any other is rebuilt from scratch anyway.
        let patchable = snapshot.origin == self.origin.0
            && !snapshot.lent
            && (self.pruned_through..=self.generation).contains(&snapshot.generation);
        if !patchable {
            return;
        }
        let generation = snapshot.generation;
        // Maps another snapshot lent and did not take back are dropped: it will be rebuilt.
        drop(
            self.nodes
                .lend(std::mem::take(&mut snapshot.nodes), generation),
        );
        drop(
            self.jobs
                .lend(std::mem::take(&mut snapshot.jobs), generation),
        );
        snapshot.lent = true;
    }

    /// Puts the maps `snapshot` lent back in it, if the cache still holds them.
    fn reclaim(&mut self, snapshot: &mut Snapshot) -> bool {
        let nodes = self.nodes.reclaim(snapshot.generation);
        let jobs = self.jobs.reclaim(snapshot.generation);
        let (Some(nodes), Some(jobs)) = (nodes, jobs) else {
            return false;
        };
        snapshot.nodes = nodes;
        snapshot.jobs = jobs;
        true
    }

    pub(super) fn prune(&mut self, through: u64) {
        self.nodes.prune(through);
        self.unscheduled.prune(through);
        self.jobs.prune(through);
        self.podgroups.prune(through);
        self.pdbs.prune(through);
        self.zones.prune(through);
        self.policies.prune(through);
        self.namespaces.prune(through);
        self.claims.prune(through);
        self.node_metrics.prune(through);
        self.node_usage.prune(through);
        self.pod_usage.prune(through);
        self.pruned_through = through;
    }
}
