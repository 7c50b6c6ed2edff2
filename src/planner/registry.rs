//! The strategies tidal knows, in the order a policy runs them: one row per strategy. A new strategy is
//! its file under `strategies/`, its args in `api::args`, its field in `api::policy::Strategies`, and a
//! row here.

use crate::{
    api::policy::Strategies,
    framework::{Strategy, StrategyId},
    strategies::{
        anti_affinity::AntiAffinity,
        duplicates::RemoveDuplicates,
        failed_pods::RemoveFailedPods,
        make_room::MakeRoom,
        node_affinity::NodeAffinity,
        node_taints::NodeTaints,
        node_utilization::{high::HighNodeUtilization, low::LowNodeUtilization},
        pod_life_time::PodLifeTime,
        tdm::Tdm,
        too_many_restarts::TooManyRestarts,
        topology_spread::TopologySpread,
    },
};

/// Builds the strategy if the policy enables it.
type Build = fn(&Strategies) -> Option<Strategy>;

/// Zone closings first (the other system is coming), then pods that are wrong where they are, then pods
/// that cannot start, then balancing, which only improves an acceptable placement. Fixed, so that plans
/// are reproducible.
const REGISTRY: [(StrategyId, Build); 12] = [
    (StrategyId::Tdm, |s| {
        let args = s.tdm.clone()?;
        Some(Strategy::PodByPod(Box::new(Tdm::new(args))))
    }),
    (StrategyId::RemoveFailedPods, |s| {
        let args = s.remove_failed_pods.clone()?;
        Some(Strategy::PodByPod(Box::new(RemoveFailedPods::new(args))))
    }),
    (StrategyId::PodLifeTime, |s| {
        let args = s.pod_life_time.clone()?;
        Some(Strategy::PodByPod(Box::new(PodLifeTime::new(args))))
    }),
    (StrategyId::TooManyRestarts, |s| {
        let args = s.remove_pods_having_too_many_restarts.clone()?;
        Some(Strategy::PodByPod(Box::new(TooManyRestarts::new(args))))
    }),
    (StrategyId::NodeTaints, |s| {
        let args = s.remove_pods_violating_node_taints.clone()?;
        Some(Strategy::PodByPod(Box::new(NodeTaints::new(args))))
    }),
    (StrategyId::NodeAffinity, |s| {
        let args = s.remove_pods_violating_node_affinity.clone()?;
        Some(Strategy::PodByPod(Box::new(NodeAffinity::new(args))))
    }),
    (StrategyId::InterPodAntiAffinity, |s| {
        let args = s.remove_pods_violating_inter_pod_anti_affinity.clone()?;
        Some(Strategy::Balancing(Box::new(AntiAffinity::new(args))))
    }),
    (StrategyId::MakeRoomForPending, |s| {
        let args = s.make_room_for_pending.clone()?;
        Some(Strategy::Balancing(Box::new(MakeRoom::new(args))))
    }),
    (StrategyId::RemoveDuplicates, |s| {
        let args = s.remove_duplicates.clone()?;
        Some(Strategy::Balancing(Box::new(RemoveDuplicates::new(args))))
    }),
    (StrategyId::TopologySpread, |s| {
        let args = s.remove_pods_violating_topology_spread_constraint.clone()?;
        Some(Strategy::Balancing(Box::new(TopologySpread::new(args))))
    }),
    (StrategyId::LowNodeUtilization, |s| {
        let args = s.low_node_utilization.clone()?;
        Some(Strategy::Balancing(Box::new(LowNodeUtilization::new(args))))
    }),
    (StrategyId::HighNodeUtilization, |s| {
        let args = s.high_node_utilization.clone()?;
        Some(Strategy::Balancing(Box::new(HighNodeUtilization::new(
            args,
        ))))
    }),
];

/// The strategies a policy enables, in registry order.
pub(super) fn enabled(strategies: &Strategies) -> Vec<Strategy> {
    REGISTRY
        .iter()
        .filter_map(|(_, build)| build(strategies))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_builds_the_strategy_it_names() {
        // The row's id and the built plugin's id must agree, or reports would name the wrong strategy.
        let all: Strategies = serde_json::from_value(serde_json::json!({
            "tdm": {},
            "removeFailedPods": {},
            "podLifeTime": {"maxPodLifeTimeSeconds": 60},
            "removePodsHavingTooManyRestarts": {"podRestartThreshold": 3},
            "removePodsViolatingNodeTaints": {},
            "removePodsViolatingNodeAffinity": {},
            "removePodsViolatingInterPodAntiAffinity": {},
            "makeRoomForPending": {},
            "removeDuplicates": {},
            "removePodsViolatingTopologySpreadConstraint": {},
            "lowNodeUtilization": {"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 50}},
            "highNodeUtilization": {"thresholds": {"cpu": 20}},
        }))
        .expect("every strategy's arguments");
        let built: Vec<StrategyId> = enabled(&all).iter().map(Strategy::id).collect();
        let rows: Vec<StrategyId> = REGISTRY.iter().map(|(id, _)| *id).collect();
        assert_eq!(built, rows);
        let mut unique = rows.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), rows.len(), "a strategy registered twice");
        assert!(enabled(&Strategies::default()).is_empty());
    }
}
