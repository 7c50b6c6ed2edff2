//! What tidal knows about the cluster. `model` holds the slim objects and the values read from labels
//! and annotations; `rules` the scheduler's and tidal's placement rules over them, as pure functions;
//! `ingest` the one path by which Kubernetes objects enter; `store` the event-fed cache and its
//! snapshots; `dump` reads a saved cluster into a cache.

pub mod dump;
pub(crate) mod ingest;
pub(crate) mod model;
pub(crate) mod rules;
pub(crate) mod store;

pub use ingest::Ingest;
pub use k8s_openapi::api::core::v1::Taint;
pub use model::Unnamed;
pub use model::claim::ClaimInfo;
pub use model::constraints::Constraints;
pub use model::eviction_notice::{evictable_from, noticed_at};
pub use model::job_budget::{IntOrPercent, JobBudget, JobStats};
pub use model::keys::{JobKey, JobKind, ObjectKey, ObjectKind};
pub use model::namespace::NamespaceInfo;
pub use model::node::NodeInfo;
pub use model::pod::{ControllerKind, PodBrief, PodInfo, PodPhase, QosClass, VolumeKinds};
pub use model::pod_end::{
    EndCause, PodEnd, declared_run_time, finishes_before, overstayed, pod_end, run_time,
};
pub use model::pod_status::{ContainerScope, PodStatusSummary};
pub use model::policy::PolicyInfo;
pub use model::resources::Resources;
pub use model::setting::{InvalidValue, Setting};
pub use model::usage::{MetricSample, UsageSample, UsageSeries};
pub use model::workload::{PdbInfo, PodGroupInfo};
pub use model::zone::{AtRiskCall, DRAIN_ON_TRACK, DrainStart, ZoneInfo};
pub use store::cache::{ClusterCache, Retired, SnapshotUpdate, Unreadable, WatchProgress};
pub use store::pod_map::PodMap;
pub use store::shared_cache::SharedCache;
pub use store::snapshot::{JobState, NodeState, Snapshot};
pub use store::snapshot_map::SnapshotMap;
