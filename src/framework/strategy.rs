//! The contract between the planner and a strategy. A strategy is one of two kinds, and says which:
//! the planner runs both the same way, but a reader (and a new strategy's author) should know whether a
//! candidate depends on what the gates did with the ones before it.

use super::{Candidate, Gatekeeper, PlanContext, StrategyId};

/// What every strategy has, whatever its kind.
pub trait Plugin {
    fn id(&self) -> StrategyId;

    /// Checks the arguments beyond what the CRD schema can; a policy with invalid arguments evicts nothing.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Judges each pod on its own: whether a pod is a candidate does not depend on which of the others the
/// gates admit (a failed pod, a pod too old, a pod on a closing zone).
pub trait PodByPod: Plugin {
    /// Candidates in the order they should be considered: gates with budgets or limits admit the first.
    fn propose(&self, ctx: &PlanContext<'_>) -> Vec<Candidate>;

    /// The pods the strategy found but its own arguments keep, each through
    /// [`Gatekeeper::hold`]; after the candidates, which they never compete with.
    fn hold(&self, _ctx: &PlanContext<'_>, _gatekeeper: &mut dyn Gatekeeper) {}
}

/// Balances with feedback: evicts until a node is balanced, a pending pod fits or a group is spread, so
/// it must know which of its candidates the gates admitted, or it would stop early (a refused pod
/// counted as gone) or overshoot.
pub trait Balancing: Plugin {
    fn balance(&self, ctx: &PlanContext<'_>, gatekeeper: &mut dyn Gatekeeper);
}

/// Pods of one job taken off one zone together.
fn same_gang(first: &Candidate, next: &Candidate) -> bool {
    first.pod.job == next.pod.job && first.zone == next.zone
}

/// A strategy as the planner holds it.
pub enum Strategy {
    PodByPod(Box<dyn PodByPod>),
    Balancing(Box<dyn Balancing>),
}

impl Strategy {
    fn plugin(&self) -> &dyn Plugin {
        match self {
            Strategy::PodByPod(s) => s.as_ref(),
            Strategy::Balancing(s) => s.as_ref(),
        }
    }

    pub fn id(&self) -> StrategyId {
        self.plugin().id()
    }

    pub fn validate(&self) -> Result<(), String> {
        self.plugin().validate()
    }

    /// Offers the strategy's candidates to the gates.
    pub fn offer_candidates(&self, ctx: &PlanContext<'_>, gatekeeper: &mut dyn Gatekeeper) {
        match self {
            Strategy::PodByPod(s) => {
                let mut candidates = s.propose(ctx).into_iter().peekable();
                while let Some(candidate) = candidates.next() {
                    if candidate.gang.is_none() {
                        gatekeeper.offer(candidate);
                        continue;
                    }
                    // A gang's pods come in a row: they are decided together.
                    let mut gang = vec![candidate];
                    while let Some(member) =
                        candidates.next_if(|next| next.gang.is_some() && same_gang(&gang[0], next))
                    {
                        gang.push(member);
                    }
                    gatekeeper.offer_gang(gang);
                }
                s.hold(ctx, gatekeeper);
            }
            Strategy::Balancing(s) => s.balance(ctx, gatekeeper),
        }
    }
}
