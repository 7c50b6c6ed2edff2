//! The contract between the planner and a gate.

use super::{Candidate, GateId, PlanContext};
use crate::cluster::PodInfo;

pub trait Gate {
    /// Reports, metrics and policy status name refusals by it.
    fn id(&self) -> GateId;

    /// `Err(detail)` refuses the candidate. May memoize, hence `&mut`.
    fn check(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) -> Result<(), String>;

    /// Whether this gate refuses `pod` whatever the candidate says of it (a probe with no exemptions),
    /// without the refusal's sentence: balancing strategies ask it of every pod they weigh
    /// ([`super::Gatekeeper::protected`]). Only gate `protected` answers; the others never refuse that way.
    fn protects(&mut self, _pod: &PodInfo, _ctx: &PlanContext<'_>) -> bool {
        false
    }

    /// Called once the candidate passed every gate and will be evicted.
    fn admit(&mut self, _candidate: &Candidate, _ctx: &PlanContext<'_>) {}

    /// Undoes `admit`: a group of evictions that only help together was refused further on.
    fn retract(&mut self, _candidate: &Candidate, _ctx: &PlanContext<'_>) {}

    /// Whether a round in which nothing else was admitted could let all of `group` through at once.
    /// `false` only when the group alone is more than the gate ever allows in a round (a limit
    /// smaller than the group), so that waiting for a later round would wait for ever.
    fn fits_together(&self, _group: &[Candidate], _ctx: &PlanContext<'_>) -> bool {
        true
    }
}
