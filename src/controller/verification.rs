//! Verifying DryRun plans with server-side dry runs: how many a cycle sends, in which order, and
//! what the API server has checked so far.

use std::collections::{HashMap, HashSet};

use jiff::Timestamp;

use super::{cycle_result::PolicyResult, evictor::Outcome};
use crate::{api::PolicyMode, cluster::ObjectKey, planner::Plan};

/// How many of each plan's evictions the cycle sends: all of an Evict policy's, and of DryRun
/// policies' only as many dry runs as the cycle's verification budget has left, the longest unchecked first (see
/// [`order_for_verification`]).
pub(crate) fn sends(plans: &[Plan], verify_budget: usize) -> Vec<usize> {
    let mut left = verify_budget;
    plans
        .iter()
        .map(|plan| match plan.mode {
            PolicyMode::Evict => plan.evictions.len(),
            PolicyMode::DryRun => {
                let n = plan.evictions.len().min(left);
                left -= n;
                n
            }
        })
        .collect()
}

/// When each pod's planned eviction was last checked by a dry run (accepted or refused by the API
/// server). A stable DryRun plan larger than the cycle's verification budget would otherwise have
/// the same first evictions checked every cycle and the rest never.
pub(crate) type LastVerified = HashMap<ObjectKey, Timestamp>;

/// Puts each DryRun plan's evictions in the order they are to be verified: never checked first,
/// then the longest unchecked, plan order among equals. Evict plans keep plan order: that is the
/// order the gates admitted them in. The planned set is unchanged, only the order is.
pub(crate) fn order_for_verification(plans: &mut [Plan], last_verified: &LastVerified) {
    for plan in plans.iter_mut().filter(|p| p.mode == PolicyMode::DryRun) {
        // `None` sorts before any instant: never checked comes first. The sort is stable.
        plan.evictions
            .sort_by_key(|e| last_verified.get(&e.candidate.pod.key).copied());
    }
}

/// Records the dry runs the API server answered, and forgets pods no DryRun plan holds any more
/// (so the record stays as large as the plans, not as large as every pod ever planned).
pub(crate) fn record_verified(
    last_verified: &mut LastVerified,
    policies: &[PolicyResult],
    now: Timestamp,
) {
    let planned: HashSet<&ObjectKey> = policies
        .iter()
        .filter(|p| p.plan.mode == PolicyMode::DryRun)
        .flat_map(|p| p.plan.evictions.iter().map(|e| &e.candidate.pod.key))
        .collect();
    last_verified.retain(|key, _| planned.contains(key));
    for policy in policies
        .iter()
        .filter(|p| p.plan.mode == PolicyMode::DryRun)
    {
        for (eviction, outcome) in policy.results() {
            if matches!(outcome, Outcome::WouldEvict | Outcome::Refused { .. }) {
                last_verified.insert(eviction.candidate.pod.key.clone(), now);
            }
        }
    }
}
