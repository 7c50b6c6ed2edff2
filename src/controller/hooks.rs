//! Extension point for work that belongs to every leader cycle but is not planning or eviction, such
//! as keeping closed-zone taints on nodes (issue 5's reconciler). Hooks run after the cycle's evictions
//! and before status is written, only while this replica leads.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use jiff::Timestamp;

use crate::{cluster::Snapshot, framework::ZoneView, leader::LeaderHandle};

/// What a hook sees of the cycle.
pub struct CycleContext<'a> {
    /// The controller's client (kube's default retries on).
    pub client: &'a kube::Client,
    pub snapshot: &'a Snapshot,
    /// Every zone's state at `now`, as planning saw it.
    pub zones: &'a BTreeMap<String, ZoneView>,
    pub now: Timestamp,
    /// Check `leader.is_leader()` right before each write: the lease may be lost mid-hook.
    pub leader: &'a LeaderHandle,
}

pub trait CycleHook: Send + Sync {
    /// For logs.
    fn name(&self) -> &'static str;

    /// Called once per leader cycle. Errors are the hook's to log and count; they never stop the cycle.
    fn run<'a>(&'a self, cycle: &'a CycleContext<'a>) -> BoxFuture<'a, ()>;
}
