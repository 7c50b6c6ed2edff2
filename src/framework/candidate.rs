//! What strategies propose and what the planner decides about it.

use std::sync::Arc;

use super::{SkipReason, StrategyId};
use crate::cluster::PodInfo;

/// A pod a strategy wants evicted, and why.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub pod: Arc<PodInfo>,
    pub strategy: StrategyId,
    /// One line a person can act on, e.g. `zone rz1 closed at 21:00:00 Europe/Berlin`.
    pub reason: String,
    /// The revocable zone the eviction is about, when there is one.
    pub zone: Option<String>,
    /// Set when the strategy found the pod but its arguments say not to evict it (e.g. placement
    /// violations with `evictPlacementViolations: false`); the report lists it as skipped by gate `policy`.
    pub held: Option<String>,
    /// Gates the proposing strategy says do not apply to this pod.
    pub exempt: Exemptions,
    /// Set when the pod belongs to a gang that the drain takes below its `minMember`: the gang's pods
    /// on the zone are decided together ([`super::Gatekeeper::offer_gang`]).
    pub gang: Option<Gang>,
}

/// A Volcano gang (a PodGroup with `minMember`) whose pods on a draining zone go together: the drain
/// takes it below its minimum, and Volcano gives up its work at the first eviction below it, so
/// holding the rest back for later rounds saves nothing and costs the rounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gang {
    /// The job's pods, wherever they run.
    pub pods: u32,
    pub min_member: u32,
}

impl std::fmt::Display for Gang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "gang of {} (minMember {})", self.pods, self.min_member)
    }
}

/// Gates that do not apply to a candidate. The strategy decides, because only it knows why the pod must
/// go: gates never look at which strategy proposed a candidate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exemptions {
    /// The pod must leave its node whether or not it fits elsewhere, so gate `nodefit` does not apply.
    pub node_fit: bool,
    /// The pod's owner agreed to this eviction (e.g. `volcano.sh/preemptable: "true"` on a closing
    /// revocable zone), so only the protections that can never be lifted apply (static, terminating).
    pub switchable_protections: bool,
    /// The pod has no owner and has failed, and the policy asked for such pods to go
    /// (`removeFailedPods.evictFailedBarePods`), so protection `barePods` does not apply.
    pub bare_pod: bool,
    /// The pod's zone has closed and says budgets no longer hold for what is left on it
    /// (`budgetsAfterClose: Ignore`), so gate `budget` does not apply.
    pub budget: bool,
}

impl Candidate {
    pub fn new(pod: &Arc<PodInfo>, strategy: StrategyId, reason: impl Into<String>) -> Self {
        Candidate {
            pod: Arc::clone(pod),
            strategy,
            reason: reason.into(),
            zone: None,
            held: None,
            exempt: Exemptions::default(),
            gang: None,
        }
    }

    pub fn in_zone(mut self, zone: &str) -> Self {
        self.zone = Some(zone.to_owned());
        self
    }

    pub fn exempt(mut self, exempt: Exemptions) -> Self {
        self.exempt = exempt;
        self
    }

    pub fn held(mut self, why: impl Into<String>) -> Self {
        self.held = Some(why.into());
        self
    }

    /// The zone this candidate's eviction drains: set for TDM's, whose rounds and closes pace it.
    pub fn drained_zone(&self) -> Option<&str> {
        self.zone
            .as_deref()
            .filter(|_| self.strategy == StrategyId::Tdm)
    }
}

/// An eviction the plan would make.
#[derive(Clone, Debug)]
pub struct PlannedEviction {
    pub candidate: Candidate,
}

/// A candidate that will not be evicted, and why.
#[derive(Clone, Debug)]
pub struct Skipped {
    pub candidate: Candidate,
    pub reason: SkipReason,
    pub detail: String,
}
