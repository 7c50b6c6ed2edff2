//! The slim objects tidal keeps (pods, nodes, jobs, zones, policies, ...) and the values it reads from
//! labels and annotations, each parsed once at ingest.

pub(crate) mod claim;
pub(crate) mod constraints;
pub(crate) mod eviction_notice;
pub(crate) mod job_budget;
pub(crate) mod keys;
pub(crate) mod namespace;
pub(crate) mod node;
pub(crate) mod pod;
pub(crate) mod pod_end;
pub(crate) mod pod_labels;
pub(crate) mod pod_status;
pub(crate) mod policy;
pub(crate) mod quantity;
pub(crate) mod resources;
pub(crate) mod setting;
pub(crate) mod usage;
pub(crate) mod workload;
pub(crate) mod zone;

pub use unnamed::Unnamed;
pub(crate) mod unnamed;
