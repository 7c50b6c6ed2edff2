//! Descheduling strategies. Each proposes candidates from the snapshot; none evicts or filters by safety
//! rules itself: every candidate then passes the same gates. A new strategy is one new file here, its
//! arguments in `api` and one row in the planner's registry.

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
