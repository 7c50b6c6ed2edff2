//! Identities and verdicts: which gate refused a candidate, and every other reason a planned eviction
//! did not happen. Report, status, metrics and the cycle match on these; their names (`Display`) are
//! what operators read in reports, status fields and metric labels, so they never change.

use std::fmt;

/// The gates every candidate passes, in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GateId {
    /// Unreadable annotations, windows or budgets: the object is never evicted.
    Invalid,
    /// The evictor protections.
    Protected,
    /// `volcano.sh/cooldown-time` has not elapsed.
    Cooldown,
    /// A drain leaves a pod that ends by itself before the close to finish.
    Finishes,
    /// A drain gives the pod its zone's `evictionNotice` first.
    Notice,
    /// The job's disruption budget.
    Budget,
    /// The policy's eviction limits.
    Limit,
    /// No other node would take the pod.
    NodeFit,
}

impl GateId {
    pub const fn name(self) -> &'static str {
        match self {
            GateId::Invalid => "invalid",
            GateId::Protected => "protected",
            GateId::Cooldown => "cooldown",
            GateId::Finishes => "finishes",
            GateId::Notice => "notice",
            GateId::Budget => "budget",
            GateId::Limit => "limit",
            GateId::NodeFit => "nodefit",
        }
    }
}

/// Why a candidate was not evicted: refused by a gate of the plan, held back by its strategy, or
/// answered otherwise by the API server at eviction time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkipReason {
    Gate(GateId),
    /// The strategy found the pod but the policy's arguments say not to evict it.
    HeldByPolicy,
    /// Out of the policy's scope, or already decided earlier in this plan.
    Decided,
    /// A PodDisruptionBudget refused the eviction (429 with a disruption-budget cause).
    Pdb,
    /// API Priority and Fairness refused the request (any other 429).
    Throttled,
    /// The pod no longer exists, or was replaced by another of the same name.
    Gone,
    /// The API server rejected the request, or retries ran out.
    Error,
    /// Never sent: no longer leader, shutting down, or out of time.
    Abandoned,
}

impl SkipReason {
    pub const fn name(self) -> &'static str {
        match self {
            SkipReason::Gate(gate) => gate.name(),
            SkipReason::HeldByPolicy => "policy",
            SkipReason::Decided => "decided",
            SkipReason::Pdb => "pdb",
            SkipReason::Throttled => "throttled",
            SkipReason::Gone => "gone",
            SkipReason::Error => "error",
            SkipReason::Abandoned => "abandoned",
        }
    }
}

impl From<GateId> for SkipReason {
    fn from(gate: GateId) -> Self {
        SkipReason::Gate(gate)
    }
}

impl fmt::Display for GateId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A refusal: the reason, and the detail a person can act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub reason: SkipReason,
    pub detail: String,
}

impl Refusal {
    pub fn new(reason: impl Into<SkipReason>, detail: impl Into<String>) -> Self {
        Refusal {
            reason: reason.into(),
            detail: detail.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_published_ones() {
        // Reports, status fields and metric labels carry these: renaming one breaks dashboards.
        let gates = [
            GateId::Invalid,
            GateId::Protected,
            GateId::Cooldown,
            GateId::Finishes,
            GateId::Notice,
            GateId::Budget,
            GateId::Limit,
            GateId::NodeFit,
        ]
        .map(|g| SkipReason::from(g).to_string());
        assert_eq!(
            gates,
            [
                "invalid",
                "protected",
                "cooldown",
                "finishes",
                "notice",
                "budget",
                "limit",
                "nodefit"
            ]
        );
        let others = [
            SkipReason::HeldByPolicy,
            SkipReason::Decided,
            SkipReason::Pdb,
            SkipReason::Throttled,
            SkipReason::Gone,
            SkipReason::Error,
            SkipReason::Abandoned,
        ]
        .map(|r| r.to_string());
        assert_eq!(
            others,
            [
                "policy",
                "decided",
                "pdb",
                "throttled",
                "gone",
                "error",
                "abandoned"
            ]
        );
    }
}
