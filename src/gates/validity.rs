//! Gate `invalid`: a pod (or its job) with a setting tidal cannot read is never evicted. Guessing a
//! default for a malformed budget, cooldown or preemptable value could only widen disruption.

use std::collections::HashMap;

use super::Gate;
use crate::{
    cluster::{JobKey, Setting},
    plan::{Candidate, PlanContext},
};

pub const NAME: &str = "invalid";

/// Remembers each job's verdict: reading a job's budget looks at all its pods, and a DaemonSet's job
/// has one pod per node.
#[derive(Default)]
pub struct Validity {
    jobs: HashMap<JobKey, Option<String>>,
}

impl Gate for Validity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn check(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) -> Result<(), String> {
        let pod = &candidate.pod;
        if let Some(problem) = pod.problems.first() {
            return Err(problem.to_string());
        }
        if let Setting::Invalid(invalid) = ctx.preemptable(pod) {
            return Err(invalid.to_string());
        }
        if let Setting::Invalid(invalid) = ctx.cooldown(pod) {
            return Err(invalid.to_string());
        }
        let job = self.jobs.entry(pod.job.clone()).or_insert_with(|| {
            ctx.job_budget(&pod.job)
                .invalid()
                .map(|invalid| invalid.to_string())
        });
        match job {
            Some(invalid) => Err(invalid.clone()),
            None => Ok(()),
        }
    }
}
