//! Safety gates. Every candidate of every strategy passes all of them, in order; the first that refuses
//! names the reason in the report. Gates with a running tally (budgets, limits) count a candidate only
//! once every gate has let it through, so a refusal further down never uses up an allowance.

pub mod budget;
pub mod cooldown;
pub mod limits;
pub mod nodefit;
pub mod protections;
pub mod validity;

use crate::{
    cluster::PolicyInfo,
    plan::{Candidate, PlanContext},
};

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

/// The gates of one policy's planning, fresh for each plan. Validity comes first, so that a malformed
/// setting is reported as such rather than as whatever a later gate makes of it; then the protections,
/// which no amount of waiting changes; node fit comes last, as the most expensive check.
pub fn chain(policy: &PolicyInfo) -> Vec<Box<dyn Gate>> {
    let mut gates: Vec<Box<dyn Gate>> = vec![
        Box::new(validity::Validity::default()),
        Box::new(protections::ProtectionGate::new(&policy.spec.protections)),
        Box::new(cooldown::Cooldown),
        Box::new(budget::Budget::default()),
        Box::new(limits::Limits::new(&policy.spec.limits)),
    ];
    if policy.spec.protections.node_fit {
        gates.push(Box::new(nodefit::NodeFit::default()));
    }
    gates
}

/// Checks the gates' configuration beyond what the CRD schema can.
pub fn validate(policy: &PolicyInfo) -> Result<(), String> {
    policy.spec.protections.validate()
}
