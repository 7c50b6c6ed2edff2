//! The contract between the planner and a gate.

use super::{Candidate, PlanContext};

pub trait Gate {
    /// The name reports, metrics and policy status use for candidates this gate refuses.
    fn name(&self) -> &'static str;

    /// `Err(detail)` refuses the candidate. May memoize, hence `&mut`.
    fn check(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) -> Result<(), String>;

    /// Called once the candidate passed every gate and will be evicted.
    fn admit(&mut self, _candidate: &Candidate, _ctx: &PlanContext<'_>) {}

    /// Undoes `admit`: a group of evictions that only help together was refused further on.
    fn retract(&mut self, _candidate: &Candidate, _ctx: &PlanContext<'_>) {}
}
