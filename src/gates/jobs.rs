//! What the job-level gates (`invalid` and `budget`) read of a job, read once per plan and shared by
//! both: a job's budget and pod counts take a search of the snapshot's jobs and a pass over its pods,
//! and the two gates used to read them separately, three searches per job.

use std::{cell::RefCell, rc::Rc};

use super::budget::allowed_evictions;
use crate::{
    cluster::{JobBudget, JobKey, JobState, JobStats, Setting},
    framework::PlanContext,
};

/// One job as the gates see it during a plan.
pub(crate) struct JobEntry {
    key: JobKey,
    /// From its PodGroup, its pods or the policy default ([`PlanContext::job_budget`]).
    pub(crate) budget: Setting<JobBudget>,
    pub(crate) stats: JobStats,
    /// Gate `budget`'s tally: evictions the budget still allows this round, and those admitted.
    pub(crate) remaining: u32,
    pub(crate) admitted: u32,
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
            budget,
            stats,
            remaining: allowed_evictions(valid, stats),
            admitted: 0,
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
    index: foldhash::HashMap<JobKey, usize>,
    entries: Vec<JobEntry>,
    /// The entry returned last: both gates, and `budget` again on admission, ask about the same
    /// candidate's job in a row, and comparing its key (the same shared strings) is cheaper than
    /// hashing it again.
    last: Option<usize>,
}

/// The ledger as the gates of one plan share it.
pub(crate) type SharedLedger = Rc<RefCell<JobLedger>>;

impl JobLedger {
    pub(crate) fn entry(&mut self, job: &JobKey, ctx: &PlanContext<'_>) -> &mut JobEntry {
        let at = match self.last.filter(|&at| self.entries[at].key == *job) {
            Some(at) => at,
            None => match self.index.get(job) {
                Some(&at) => at,
                None => {
                    let at = self.entries.len();
                    self.entries.push(JobEntry::read(job, ctx));
                    self.index.insert(job.clone(), at);
                    at
                }
            },
        };
        self.last = Some(at);
        &mut self.entries[at]
    }
}
