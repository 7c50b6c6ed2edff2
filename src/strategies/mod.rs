//! Descheduling strategies. Each proposes candidates from the snapshot; none evicts or filters by safety
//! rules itself: every candidate then passes the same gates. A new strategy is one new file here, one
//! field in `api::policy::Strategies` and one line in [`enabled`].

pub mod anti_affinity;
pub mod common;
pub mod duplicates;
pub mod failed_pods;
pub mod high_node_utilization;
pub mod low_node_utilization;
pub mod make_room;
pub mod node_affinity;
pub mod node_taints;
pub mod pod_life_time;
pub mod tdm;
pub mod too_many_restarts;
pub mod topology_spread;
pub mod utilization;

#[cfg(test)]
pub(crate) mod testkit;

use crate::{
    api::policy::Strategies,
    plan::{AcceptAll, Admission, Candidate, PlanContext},
};

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

/// The strategies a policy enables, in a fixed order so that plans are reproducible.
pub fn enabled(strategies: &Strategies) -> Vec<Box<dyn Strategy>> {
    let mut out: Vec<Box<dyn Strategy>> = Vec::new();
    // Zone closings first (the other system is coming), then pods that are wrong where they are, then
    // pods that cannot start, then balancing, which only improves an acceptable placement.
    if let Some(args) = &strategies.tdm {
        out.push(Box::new(tdm::Tdm::new(args.clone())));
    }
    if let Some(args) = &strategies.remove_failed_pods {
        out.push(Box::new(failed_pods::RemoveFailedPods::new(args.clone())));
    }
    if let Some(args) = &strategies.pod_life_time {
        out.push(Box::new(pod_life_time::PodLifeTime::new(args.clone())));
    }
    if let Some(args) = &strategies.remove_pods_having_too_many_restarts {
        out.push(Box::new(too_many_restarts::TooManyRestarts::new(
            args.clone(),
        )));
    }
    if let Some(args) = &strategies.remove_pods_violating_node_taints {
        out.push(Box::new(node_taints::NodeTaints::new(args.clone())));
    }
    if let Some(args) = &strategies.remove_pods_violating_node_affinity {
        out.push(Box::new(node_affinity::NodeAffinity::new(args.clone())));
    }
    if let Some(args) = &strategies.remove_pods_violating_inter_pod_anti_affinity {
        out.push(Box::new(anti_affinity::AntiAffinity::new(args.clone())));
    }
    if let Some(args) = &strategies.make_room_for_pending {
        out.push(Box::new(make_room::MakeRoom::new(args.clone())));
    }
    if let Some(args) = &strategies.remove_duplicates {
        out.push(Box::new(duplicates::RemoveDuplicates::new(args.clone())));
    }
    if let Some(args) = &strategies.remove_pods_violating_topology_spread_constraint {
        out.push(Box::new(topology_spread::TopologySpread::new(args.clone())));
    }
    if let Some(args) = &strategies.low_node_utilization {
        out.push(Box::new(low_node_utilization::LowNodeUtilization::new(
            args.clone(),
        )));
    }
    if let Some(args) = &strategies.high_node_utilization {
        out.push(Box::new(high_node_utilization::HighNodeUtilization::new(
            args.clone(),
        )));
    }
    out
}
