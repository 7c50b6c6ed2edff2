//! Descheduling strategies. Each proposes candidates from the snapshot; none evicts or filters by safety
//! rules itself: every candidate then passes the same gates. A new strategy is one new file here, its
//! arguments in `api` and one row in the planner's registry.

pub(crate) mod anti_affinity;
pub(crate) mod duplicates;
pub(crate) mod failed_pods;
pub(crate) mod make_room;
pub(crate) mod node_affinity;
pub(crate) mod node_taints;
pub(crate) mod node_utilization;
pub(crate) mod pod_life_time;
mod shared;
pub(crate) mod tdm;
pub(crate) mod too_many_restarts;
pub(crate) mod topology_spread;
