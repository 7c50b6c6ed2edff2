//! The gates every candidate of a policy passes, in order.

use crate::{
    cluster::PolicyInfo,
    framework::Gate,
    gates::{
        SharedCounts, SharedLedger, budget, cooldown, finishes, invalid, limit, nodefit, notice,
        protected,
    },
};

/// The gates of one policy's planning, fresh for each plan. Gate `invalid` comes first, so that a malformed
/// setting is reported as such rather than as whatever a later gate makes of it; then the protections,
/// which no amount of waiting changes; then what waiting does change (a cooldown, a pod's own end, its notice); node fit comes last, as the most expensive check. `shared`
/// holds what the cycle's other policies counted against `limits.shared`.
pub(super) fn chain(policy: &PolicyInfo, shared: &SharedCounts) -> Vec<Box<dyn Gate>> {
    // Gates `invalid` and `budget` read each job once between them.
    let jobs = SharedLedger::default();
    let mut gates: Vec<Box<dyn Gate>> = vec![
        Box::new(invalid::Invalid::sharing(jobs.clone())),
        Box::new(protected::Protected::new(&policy.spec.protections)),
        Box::new(cooldown::Cooldown),
        Box::new(finishes::Finishes),
        Box::new(notice::Notice),
        Box::new(budget::Budget::sharing(jobs)),
        Box::new(limit::Limit::new(&policy.spec.limits, shared.clone())),
    ];
    if policy.spec.protections.node_fit {
        gates.push(Box::new(nodefit::NodeFit::default()));
    }
    gates
}

/// Checks the gates' configuration beyond what the CRD schema can.
pub(super) fn validate(policy: &PolicyInfo) -> Result<(), String> {
    if let Some(selector) = &policy.spec.node_selector {
        crate::cluster::rules::matching::selector_is_valid(selector)
            .map_err(|e| format!("nodeSelector: {e}"))?;
    }
    protected::validate(&policy.spec.protections)
}
