//! Descheduling strategies. Each proposes candidates from the snapshot; none evicts or filters by safety
//! rules itself: every candidate then passes the same gates.
//!
//! A strategy is one folder, named by its key under a policy's `spec.strategies` in snake case: its
//! arguments with their defaults and schema checks (`args.rs`), the plugin (`mod.rs`) and its tests
//! (`tests.rs`). A new strategy is registered in two places: its folder `src/strategies/<id>/` (the
//! plugin, its arguments and its tests) and `src/strategies/mod.rs` (its `mod` line and its row in the
//! strategy table). From its row in [`strategy_table`] come its `StrategyId`, its key in the policy's
//! `strategies` and its place in the planner's registry. The files here that are not a strategy's
//! folder are what several strategies share and none owns; strategies import them and never each
//! other.

pub mod high_node_utilization;
pub mod low_node_utilization;
pub mod make_room_for_pending;
pub mod pod_life_time;
pub mod remove_duplicates;
pub mod remove_failed_pods;
pub mod remove_pods_having_too_many_restarts;
pub mod remove_pods_violating_inter_pod_anti_affinity;
pub mod remove_pods_violating_node_affinity;
pub mod remove_pods_violating_node_taints;
pub mod remove_pods_violating_topology_spread_constraint;
pub mod tdm;

mod exit_codes;
mod node_fit;
pub mod node_usage;
mod pod_age;
mod selection;
mod victim_order;

/// The strategies tidal knows, one row each: the row's field is the strategy's folder and its key in a
/// policy's `strategies` (camel case there), `id` its `StrategyId` with its place in the order a policy
/// runs them, `name` how policies, reports, status and metrics name it, `args` the type in its
/// `args.rs`, `plugin` the type in its `mod.rs` and the kind of strategy it is. The doc comment
/// describes the key in the CRD.
///
/// The rows are in the order a policy's `strategies` are written out; they run in the order of `id`:
/// zone closings first (the other system is coming), then pods that are wrong where they are, then
/// pods that cannot start, then balancing, which only improves an acceptable placement. Fixed, so that
/// plans are reproducible.
///
/// Names only: each layer that needs the list passes the name of a macro of its own, which this calls
/// with the rows (`StrategyId` in the framework, the policy's `Strategies` in the API types, the
/// registry in the planner), so that no layer below the strategies reaches their code.
macro_rules! strategy_table {
    ($callback:ident) => {
        $callback! {
            /// Time-division multiplexing: drain preemptable pods from revocable zones outside their windows.
            tdm {
                id: Tdm = 0, name: "tdm",
                args: TdmArgs, plugin: PodByPod(Tdm)
            }
            /// Move pods off overutilized nodes so that they land on underutilized ones.
            low_node_utilization {
                id: LowNodeUtilization = 10, name: "lowNodeUtilization",
                args: LowNodeUtilizationArgs, plugin: Balancing(LowNodeUtilization)
            }
            /// Empty underutilized nodes so that their pods pack onto the others (bin packing).
            high_node_utilization {
                id: HighNodeUtilization = 11, name: "highNodeUtilization",
                args: HighNodeUtilizationArgs, plugin: Balancing(HighNodeUtilization)
            }
            /// Spread pods of one owner that pile up on one node.
            remove_duplicates {
                id: RemoveDuplicates = 8, name: "removeDuplicates",
                args: RemoveDuplicatesArgs, plugin: Balancing(RemoveDuplicates)
            }
            /// Rebalance topology domains whose pod counts are further apart than `maxSkew`.
            remove_pods_violating_topology_spread_constraint {
                id: TopologySpread = 9, name: "removePodsViolatingTopologySpreadConstraint",
                args: TopologySpreadArgs, plugin: Balancing(TopologySpread)
            }
            /// Evict pods whose required pod anti-affinity is violated by pods around them.
            remove_pods_violating_inter_pod_anti_affinity {
                id: InterPodAntiAffinity = 6, name: "removePodsViolatingInterPodAntiAffinity",
                args: AntiAffinityArgs, plugin: Balancing(AntiAffinity)
            }
            /// Evict pods whose node no longer satisfies their node affinity (required, or preferred when a
            /// better node exists).
            remove_pods_violating_node_affinity {
                id: NodeAffinity = 5, name: "removePodsViolatingNodeAffinity",
                args: NodeAffinityArgs, plugin: PodByPod(NodeAffinity)
            }
            /// Evict pods that do not tolerate their node's taints.
            remove_pods_violating_node_taints {
                id: NodeTaints = 4, name: "removePodsViolatingNodeTaints",
                args: NodeTaintsArgs, plugin: PodByPod(NodeTaints)
            }
            /// Evict pods whose containers restarted too often.
            remove_pods_having_too_many_restarts {
                id: TooManyRestarts = 3, name: "removePodsHavingTooManyRestarts",
                args: TooManyRestartsArgs, plugin: PodByPod(TooManyRestarts)
            }
            /// Evict pods older than a maximum age, optionally only in some states.
            pod_life_time {
                id: PodLifeTime = 2, name: "podLifeTime",
                args: PodLifeTimeArgs, plugin: PodByPod(PodLifeTime)
            }
            /// Evict failed pods (which otherwise linger until garbage collection).
            remove_failed_pods {
                id: RemoveFailedPods = 1, name: "removeFailedPods",
                args: RemoveFailedPodsArgs, plugin: PodByPod(RemoveFailedPods)
            }
            /// Evict preemptable pods on non-revocable nodes to make room for a non-preemptable pod that has
            /// been unschedulable for too long.
            make_room_for_pending {
                id: MakeRoomForPending = 7, name: "makeRoomForPending",
                args: MakeRoomArgs, plugin: Balancing(MakeRoom)
            }
        }
    };
}
pub(crate) use strategy_table;
