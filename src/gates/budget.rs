//! Gate `budget`: a job loses at most as many pods per round as its disruption budget allows. A gang
//! that a drain takes below its `minMember` is one disruption: Volcano gives up its work at the first
//! eviction below the minimum, so its pods on the zone go in the round whose budget allows the first
//! of them, the others with it.

use std::fmt::Display;

use super::job_ledger::SharedLedger;
use crate::{
    cluster::Setting,
    framework::{Candidate, Gate, GateId, PlanContext},
};

/// Keeps each job's tally in the ledger it shares with gate `invalid`, which read the job first.
#[derive(Default)]
pub(crate) struct Budget {
    jobs: SharedLedger,
}

impl Budget {
    pub(crate) fn sharing(jobs: SharedLedger) -> Self {
        Budget { jobs }
    }
}

impl Gate for Budget {
    fn id(&self) -> GateId {
        GateId::Budget
    }

    fn check(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) -> Result<(), String> {
        if candidate.exempt.budget {
            return Ok(());
        }
        let job = &candidate.pod.job;
        let mut jobs = self.jobs.borrow_mut();
        let entry = jobs.entry(job, ctx);
        if entry.remaining > 0 || (candidate.gang.is_some() && entry.gang_admitted > 0) {
            return Ok(());
        }
        let budget: &dyn Display = match &entry.budget {
            Setting::Valid(budget) => budget,
            Setting::Unset | Setting::Invalid(_) => &"no budget (one at a time)",
        };
        let stats = entry.stats;
        Err(format!(
            "{job}: {budget}; {} pods, {} running, {} unavailable, {} already planned this round",
            stats.total,
            stats.running,
            stats.unavailable(),
            entry.admitted
        ))
    }

    fn admit(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) {
        if candidate.exempt.budget {
            return;
        }
        let mut jobs = self.jobs.borrow_mut();
        let entry = jobs.entry(&candidate.pod.job, ctx);
        if candidate.gang.is_some() {
            if entry.gang_admitted == 0 {
                entry.remaining = entry.remaining.saturating_sub(1);
            }
            entry.gang_admitted += 1;
        } else {
            entry.remaining = entry.remaining.saturating_sub(1);
        }
        entry.admitted += 1;
    }

    fn retract(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) {
        if candidate.exempt.budget {
            return;
        }
        let mut jobs = self.jobs.borrow_mut();
        let entry = jobs.entry(&candidate.pod.job, ctx);
        if candidate.gang.is_some() {
            // The gang's eviction of the budget comes back with the last of its pods.
            if entry.gang_admitted == 1 {
                entry.remaining += 1;
            }
            entry.gang_admitted = entry.gang_admitted.saturating_sub(1);
        } else {
            entry.remaining += 1;
        }
        entry.admitted = entry.admitted.saturating_sub(1);
    }
}
