//! What tidal knows about the cluster: slim objects, the event-fed cache and its snapshots.

pub mod cache;
pub mod config;
pub mod constraints;
pub mod ingest;
pub mod job_budget;
pub mod keys;
pub mod matching;
pub mod namespace;
pub mod node;
pub mod pod;
pub mod pod_status;
pub mod quantity;
pub mod resources;
pub mod setting;
pub mod shared;
pub mod snapshot;
pub mod usage;
pub mod versioned;
pub mod workload;

pub use cache::ClusterCache;
pub use config::{PolicyInfo, ZoneInfo};
pub use constraints::Constraints;
pub use ingest::{Ingest, ObjectKind};
pub use job_budget::{IntOrPercent, JobBudget};
pub use k8s_openapi::api::core::v1::Taint;
pub use keys::{JobKey, JobKind, ObjectKey};
pub use namespace::NamespaceInfo;
pub use node::NodeInfo;
pub use pod::{PodInfo, PodPhase, QosClass, VolumeKinds};
pub use pod_status::{ContainerScope, PodStatusSummary};
pub use resources::Resources;
pub use setting::{InvalidValue, Setting};
pub use shared::SharedCache;
pub use snapshot::{JobState, JobStats, NodeState, Snapshot};
pub use usage::{UsageSample, UsageSeries};
pub use workload::{PdbInfo, PodGroupInfo};
