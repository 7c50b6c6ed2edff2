//! What the job-level gates (`invalid` and `budget`) read of a job, read once per plan and shared by
//! both: a job's budget and pod counts take a search of the snapshot's jobs and a pass over its pods,
//! too much to do twice per job.

use std::{cell::RefCell, rc::Rc};

use hashbrown::hash_table::{Entry, HashTable};

use crate::cluster::model::job_budget::allowed_evictions;
use crate::{
    cluster::{JobBudget, JobKey, JobState, JobStats, Setting},
    framework::PlanContext,
};

/// One job as the gates see it during a plan.
pub(crate) struct JobEntry {
    key: JobKey,
    /// The key's [`JobKey::hash_code`], kept beside the entry so that the ledger's index re-places
    /// entries as it grows without reading a key.
    hash: u64,
    /// From its PodGroup, its pods or the policy default ([`PlanContext::job_budget`]).
    pub(crate) budget: Setting<JobBudget>,
    pub(crate) stats: JobStats,
    /// Gate `budget`'s tally: evictions the budget still allows this round, and those admitted.
    pub(crate) remaining: u32,
    pub(crate) admitted: u32,
    /// Of `admitted`, the pods of the job's gang ([`crate::framework::Gang`]): the first one took
    /// one eviction of the budget for them all.
    pub(crate) gang_admitted: u32,
}

impl JobEntry {
    fn read(job: &JobKey, ctx: &PlanContext<'_>) -> Self {
        let state = ctx.snapshot.job(job);
        let budget = ctx.job_budget_in(job, state);
        let stats = state.map(|state| stats(state, ctx)).unwrap_or_default();
        // An invalid budget never reaches gate `budget` (gate `invalid` refuses it first).
        let valid = match &budget {
            Setting::Valid(budget) => Some(*budget),
            Setting::Unset | Setting::Invalid(_) => None,
        };
        JobEntry {
            key: job.clone(),
            hash: job.hash_code(),
            budget,
            stats,
            remaining: allowed_evictions(valid, stats),
            admitted: 0,
            gang_admitted: 0,
        }
    }
}

/// The job's pod counts with [`PlanContext::is_leaving`] counting as gone. With nothing planned
/// elsewhere that is what the pods say of themselves, which the job keeps counted; otherwise the pods
/// are walked.
fn stats(state: &JobState, ctx: &PlanContext<'_>) -> JobStats {
    if ctx.planned_elsewhere.is_empty() {
        state.stats_as_is()
    } else {
        state.stats(|pod| ctx.is_leaving(pod))
    }
}

/// The jobs read so far in one plan.
#[derive(Default)]
pub(crate) struct JobLedger {
    /// Positions in `entries`, placed by the jobs' hashes. A job is hashed once, when its key is
    /// made; growing the index re-places each position by the hash kept in its entry rather than by
    /// hashing (and reading) the key again.
    index: HashTable<usize>,
    entries: Vec<JobEntry>,
    /// The entry returned last: both gates, and `budget` again on admission, ask about the same
    /// candidate's job in a row, and comparing its key (the same shared key) is cheaper than
    /// looking it up again.
    last: Option<usize>,
}

/// Entries the ledger first makes room for. A plan reads thousands of jobs at scale; starting at this
/// size saves growing through the small sizes, and a small cluster never has this many.
const FIRST_CAPACITY: usize = 1024;

/// The ledger as the gates of one plan share it.
pub(crate) type SharedLedger = Rc<RefCell<JobLedger>>;

impl JobLedger {
    pub(crate) fn entry(&mut self, job: &JobKey, ctx: &PlanContext<'_>) -> &mut JobEntry {
        let at = match self.last.filter(|&at| self.entries[at].key == *job) {
            Some(at) => at,
            None => self.find_or_read(job, ctx),
        };
        self.last = Some(at);
        &mut self.entries[at]
    }

    /// The position of `job`'s entry, read now if this is the first time the plan asks.
    fn find_or_read(&mut self, job: &JobKey, ctx: &PlanContext<'_>) -> usize {
        if self.entries.is_empty() {
            self.entries
                .reserve(ctx.snapshot.jobs.len().min(FIRST_CAPACITY));
        }
        let hash = job.hash_code();
        let entries = &self.entries;
        let hash_at = |&at: &usize| entries[at].hash;
        if self.index.is_empty() {
            // Room for every job of the snapshot (those a plan's candidates belong to), so that
            // the index does not grow while planning: growing reads every entry again, in no
            // particular order, a cache miss each at scale. Costs 9 bytes a bucket while planning.
            self.index.reserve(ctx.snapshot.jobs.len(), hash_at);
        }
        // Equal hashes are checked first: the hash sits in the entry, the key's parts behind it.
        let same_job = |&at: &usize| entries[at].hash == hash && entries[at].key == *job;
        match self.index.entry(hash, same_job, hash_at) {
            Entry::Occupied(found) => *found.get(),
            Entry::Vacant(slot) => {
                let at = self.entries.len();
                slot.insert(at);
                self.entries.push(JobEntry::read(job, ctx));
                at
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use serde_json::json;

    use super::*;
    use crate::{
        cluster::{
            JobKind,
            model::keys::{Name, Shared},
        },
        testkit::{Cluster, NOW, pod, policy, with_context},
    };

    fn replica_set(name: &str) -> JobKey {
        JobKey::new("ns", JobKind::Controller(Name::from("ReplicaSet")), name)
    }

    #[test]
    fn one_entry_per_job_however_its_key_was_made() {
        let mut world = Cluster::revocable().pods([
            pod("ns/a-1", "rev-1").owned_by("ReplicaSet", "a"),
            pod("ns/a-2", "rev-1").owned_by("ReplicaSet", "a"),
            pod("ns/b-1", "rev-1").owned_by("ReplicaSet", "b"),
        ]);
        let snapshot = world.snapshot();
        let pod_of_a = snapshot.pods().find(|p| p.key.name == "a-1").unwrap();
        with_context(&snapshot, &policy(json!({})), NOW, &HashSet::new(), |ctx| {
            let mut ledger = JobLedger::default();
            // A key made apart from the cache's is still the job the snapshot knows.
            let made_apart = replica_set("a");
            assert!(!made_apart.same(&pod_of_a.job));
            assert_eq!(ledger.entry(&made_apart, ctx).stats.total, 2);
            ledger.entry(&made_apart, ctx).admitted += 1;
            ledger.entry(&replica_set("b"), ctx);
            // Past the `last` shortcut: found through the index, by the pod's own key.
            assert_eq!(ledger.entry(&pod_of_a.job, ctx).admitted, 1);
            let stateful = JobKey::new("ns", JobKind::Controller(Name::from("StatefulSet")), "a");
            assert_eq!(ledger.entry(&stateful, ctx).stats.total, 0);
            let other_namespace =
                JobKey::new("other", JobKind::Controller(Name::from("ReplicaSet")), "a");
            ledger.entry(&other_namespace, ctx);
            assert_eq!(ledger.entries.len(), 4, "a, b, StatefulSet a, other/a");
            assert_eq!(ledger.entry(&replica_set("a"), ctx).admitted, 1);
            assert_eq!(ledger.entries.len(), 4);
        });
    }

    #[test]
    fn entries_survive_the_index_growing() {
        let mut world = Cluster::revocable();
        let snapshot = world.snapshot();
        with_context(&snapshot, &policy(json!({})), NOW, &HashSet::new(), |ctx| {
            let mut ledger = JobLedger::default();
            let jobs = 5 * FIRST_CAPACITY;
            for i in 0..jobs {
                ledger
                    .entry(&replica_set(&format!("job-{i}")), ctx)
                    .admitted = i as u32;
            }
            for i in (0..jobs).rev() {
                let key = replica_set(&format!("job-{i}"));
                let entry = ledger.entry(&key, ctx);
                assert_eq!((entry.key == key, entry.admitted), (true, i as u32));
            }
            assert_eq!(ledger.entries.len(), jobs);
            assert_eq!(ledger.index.len(), jobs);
        });
    }
}
