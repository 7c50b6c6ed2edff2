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
}
