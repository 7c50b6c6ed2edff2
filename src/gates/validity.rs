//! Gate `invalid`: a pod (or its job) with a setting tidal cannot read is never evicted. Guessing a
//! default for a malformed budget, cooldown or preemptable value could only widen disruption.

use super::Gate;
use crate::{
    cluster::Setting,
    plan::{Candidate, PlanContext},
};

pub const NAME: &str = "invalid";

pub struct Validity;

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
        if let Setting::Invalid(invalid) = ctx.job_budget(&pod.job) {
            return Err(invalid.to_string());
        }
        Ok(())
    }
}
