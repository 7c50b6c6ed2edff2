//! The strategies tidal knows, in the order a policy runs them.

use crate::{
    api::policy::Strategies,
    framework::Strategy,
    strategies::{
        anti_affinity, duplicates, failed_pods, high_node_utilization, low_node_utilization,
        make_room, node_affinity, node_taints, pod_life_time, tdm, too_many_restarts,
        topology_spread,
    },
};

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
