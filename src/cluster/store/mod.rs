//! The event-fed cache, its snapshots, and the persistent maps they share.

pub(crate) mod cache;
pub(crate) mod pile;
pub(crate) mod pod_map;
pub(crate) mod prefetch;
pub(crate) mod shared_cache;
pub(crate) mod snapshot;
pub(crate) mod snapshot_map;
pub(crate) mod versioned;
