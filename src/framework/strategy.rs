//! The contract between the planner and a strategy.

use super::{AcceptAll, Admission, Candidate, PlanContext};

pub trait Strategy {
    /// The name used in policies, reports and metrics.
    fn name(&self) -> &'static str;

    /// Checks the arguments beyond what the CRD schema can; a policy with invalid arguments evicts nothing.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }

    /// Candidates in the order they should be considered: gates with budgets or limits admit the first ones.
    /// Strategies that need to know what the gates admitted implement [`Strategy::run`] and answer here
    /// with [`proposals`] (what they would do if every candidate were admitted).
    fn propose(&self, ctx: &PlanContext<'_>) -> Vec<Candidate>;

    /// Offers candidates to the gates. The default offers [`Strategy::propose`]'s list in order.
    fn run(&self, ctx: &PlanContext<'_>, admission: &mut dyn Admission) {
        for candidate in self.propose(ctx) {
            admission.offer(candidate);
        }
    }
}

/// What `strategy.run` offers when every candidate is admitted.
pub fn proposals(strategy: &dyn Strategy, ctx: &PlanContext<'_>) -> Vec<Candidate> {
    let mut all = AcceptAll::default();
    strategy.run(ctx, &mut all);
    all.candidates
}
