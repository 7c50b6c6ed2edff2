//! Gate `budget`: a job loses at most as many pods per round as its disruption budget allows.

use std::fmt::Display;

use super::jobs::SharedLedger;
use crate::{
    cluster::{JobBudget, JobStats, Setting},
    framework::{Candidate, Gate, GateId, PlanContext},
};

/// How many more pods of a job may be evicted this round.
///
/// - MaxUnavailable `m`: `max(0, m − unavailable)`, where unavailable = total − finished − running, so
///   pending, terminating and already-evicting pods all use up the budget.
/// - MinAvailable `m`: `max(0, running − m)`. Volcano falls through to 1 here when running < m; we don't.
/// - No budget: one pod at a time, `max(0, 1 − leaving)`: a round evicts one pod unless one is still on
///   its way out, so a short evictPeriod never has a whole job terminating at once. Pending pods do not
///   hold it back (a job short of capacity must still leave a closing zone).
pub(crate) fn allowed_evictions(budget: Option<JobBudget>, stats: JobStats) -> u32 {
    match budget {
        None => 1u32.saturating_sub(stats.leaving),
        Some(JobBudget::MaxUnavailable(max)) => {
            max.resolve(stats.total).saturating_sub(stats.unavailable())
        }
        Some(JobBudget::MinAvailable(min)) => {
            stats.running.saturating_sub(min.resolve(stats.total))
        }
    }
}

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
        let job = &candidate.pod.job;
        let mut jobs = self.jobs.borrow_mut();
        let entry = jobs.entry(job, ctx);
        if entry.remaining > 0 {
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
        let mut jobs = self.jobs.borrow_mut();
        let entry = jobs.entry(&candidate.pod.job, ctx);
        entry.remaining = entry.remaining.saturating_sub(1);
        entry.admitted += 1;
    }

    fn retract(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) {
        let mut jobs = self.jobs.borrow_mut();
        let entry = jobs.entry(&candidate.pod.job, ctx);
        entry.remaining += 1;
        entry.admitted = entry.admitted.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::IntOrPercent::{Int, Percent};

    fn stats(total: u32, running: u32, finished: u32) -> JobStats {
        JobStats {
            total,
            running,
            finished,
            leaving: 0,
        }
    }

    #[test]
    fn max_unavailable_counts_everything_not_running() {
        let max2 = Some(JobBudget::MaxUnavailable(Int(2)));
        assert_eq!(allowed_evictions(max2, stats(5, 5, 0)), 2);
        assert_eq!(
            allowed_evictions(max2, stats(5, 4, 0)),
            1,
            "one pending or leaving"
        );
        assert_eq!(allowed_evictions(max2, stats(5, 3, 0)), 0);
        assert_eq!(allowed_evictions(max2, stats(5, 1, 0)), 0, "never negative");
        assert_eq!(
            allowed_evictions(max2, stats(5, 3, 2)),
            2,
            "finished pods are not unavailable"
        );
    }

    #[test]
    fn max_unavailable_percent_rounds_up_on_total() {
        let forty = Some(JobBudget::MaxUnavailable(Percent(40)));
        assert_eq!(allowed_evictions(forty, stats(5, 5, 0)), 2);
        assert_eq!(
            allowed_evictions(forty, stats(4, 4, 0)),
            2,
            "40% of 4 = 1.6 -> 2"
        );
        assert_eq!(allowed_evictions(forty, stats(1, 1, 0)), 1);
    }

    #[test]
    fn min_available_never_falls_through_to_one() {
        let min2 = Some(JobBudget::MinAvailable(Int(2)));
        assert_eq!(allowed_evictions(min2, stats(4, 4, 0)), 2);
        assert_eq!(allowed_evictions(min2, stats(4, 2, 0)), 0);
        assert_eq!(
            allowed_evictions(min2, stats(4, 1, 0)),
            0,
            "below threshold: Volcano evicts 1"
        );
        let half = Some(JobBudget::MinAvailable(Percent(50)));
        assert_eq!(
            allowed_evictions(half, stats(5, 5, 0)),
            2,
            "50% of 5 -> 3 must stay"
        );
    }

    #[test]
    fn no_budget_allows_one_at_a_time() {
        assert_eq!(allowed_evictions(None, stats(10, 10, 0)), 1);
        assert_eq!(
            allowed_evictions(None, stats(10, 8, 0)),
            1,
            "pending pods do not hold a drain back"
        );
        let one_leaving = JobStats {
            leaving: 1,
            ..stats(3, 1, 0)
        };
        assert_eq!(
            allowed_evictions(None, one_leaving),
            0,
            "one already on its way out"
        );
    }

    #[test]
    fn leaving_pods_are_unavailable_to_max_unavailable() {
        let max1 = Some(JobBudget::MaxUnavailable(Int(1)));
        let one_leaving = JobStats {
            leaving: 1,
            ..stats(3, 2, 0)
        };
        assert_eq!(allowed_evictions(max1, one_leaving), 0);
    }
}
