//! The gates every candidate of a policy passes, in order.

use crate::{
    cluster::PolicyInfo,
    framework::Gate,
    gates::{budget, cooldown, jobs, limits, nodefit, protections, validity},
};

/// The gates of one policy's planning, fresh for each plan. Validity comes first, so that a malformed
/// setting is reported as such rather than as whatever a later gate makes of it; then the protections,
/// which no amount of waiting changes; node fit comes last, as the most expensive check.
pub(super) fn chain(policy: &PolicyInfo) -> Vec<Box<dyn Gate>> {
    // Validity and Budget read each job once between them.
    let jobs = jobs::SharedLedger::default();
    let mut gates: Vec<Box<dyn Gate>> = vec![
        Box::new(validity::Validity::sharing(jobs.clone())),
        Box::new(protections::ProtectionGate::new(&policy.spec.protections)),
        Box::new(cooldown::Cooldown),
        Box::new(budget::Budget::sharing(jobs)),
        Box::new(limits::Limits::new(&policy.spec.limits)),
    ];
    if policy.spec.protections.node_fit {
        gates.push(Box::new(nodefit::NodeFit::default()));
    }
    gates
}

/// Checks the gates' configuration beyond what the CRD schema can.
pub(super) fn validate(policy: &PolicyInfo) -> Result<(), String> {
    protections::validate(&policy.spec.protections)
}
