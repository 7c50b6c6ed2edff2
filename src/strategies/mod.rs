//! Descheduling strategies. Each proposes candidates from the snapshot; none evicts or filters by safety
//! rules itself: every candidate then passes the same gates. A new strategy is one new file here, one
//! field in `api::policy::Strategies` and one line in [`enabled`].

pub mod tdm;

use crate::{
    api::policy::Strategies,
    plan::{Candidate, PlanContext},
};

pub trait Strategy {
    /// The name used in policies, reports and metrics.
    fn name(&self) -> &'static str;

    /// Candidates in the order they should be considered: gates with budgets or limits admit the first ones.
    fn propose(&self, ctx: &PlanContext<'_>) -> Vec<Candidate>;
}

/// The strategies a policy enables, in a fixed order so that plans are reproducible.
pub fn enabled(strategies: &Strategies) -> Vec<Box<dyn Strategy>> {
    let mut out: Vec<Box<dyn Strategy>> = Vec::new();
    if let Some(args) = &strategies.tdm {
        out.push(Box::new(tdm::Tdm::new(args.clone())));
    }
    out
}
