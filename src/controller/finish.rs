//! The end of a cycle, once every eviction it queued and every dry run it sent has an outcome: what
//! the dry runs verified is remembered, the policies' status and Events are written, the cycle is
//! counted.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use tokio::time::Instant;

use super::{
    cycle_result::{CycleResult, Tallies, tallies},
    cycle_timer::Trigger,
    metrics::{Metrics, TriggerLabel},
    status::{CycleObjects, StatusWriter},
    verification::{LastVerified, record_verified},
};
use crate::{
    api::PolicyMode,
    cluster::{ObjectKind, PolicyInfo, SharedCache},
};

/// What a cycle's end needs, taken when the cycle was planned.
pub(crate) struct Finisher {
    pub shared: SharedCache,
    pub status: Arc<StatusWriter>,
    pub metrics: Arc<Metrics>,
    pub last_verified: Arc<Mutex<LastVerified>>,
    /// The policies as the cycle planned them.
    pub policies: BTreeMap<String, Arc<PolicyInfo>>,
}

impl Finisher {
    pub(crate) async fn finish(&self, cycle: &CycleResult, trigger: Trigger, started: Instant) {
        record_verified(
            &mut self
                .last_verified
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
            &cycle.policies,
            cycle.now,
        );
        let objects = {
            let cache = self.shared.read();
            CycleObjects {
                generations: self
                    .policies
                    .iter()
                    .map(|(name, p)| (name.clone(), p.generation))
                    .collect(),
                uids: cache
                    .policies()
                    .keys()
                    .map(|name| {
                        let uid = cache.uid_of(ObjectKind::DeschedulingPolicy, name);
                        (name.clone(), uid.map(str::to_owned))
                    })
                    .collect(),
                unreadable: cache.unreadable().clone(),
            }
        };
        // Also when shutting down: what this cycle evicted must be on record before the lease goes
        // to a standby. Every write checks leadership first.
        self.status.write_cycle(cycle, &objects).await;
        self.count(cycle, trigger, started);
    }

    /// Counts the cycle. Real evictions were counted as their outcomes came; dry runs are counted here.
    fn count(&self, cycle: &CycleResult, trigger: Trigger, started: Instant) {
        let m = &self.metrics;
        m.cycles
            .get_or_create(&TriggerLabel {
                trigger: trigger.as_str().to_owned(),
            })
            .inc();
        m.cycle_duration.observe(started.elapsed().as_secs_f64());
        m.last_cycle.set(cycle.now.as_millisecond() as f64 / 1000.0);
        let Tallies {
            planned,
            evictions,
            skips,
        } = tallies(&cycle.policies);
        for (labels, n) in planned {
            m.add_planned(labels, n);
        }
        let dry_run = |policy: &str| {
            cycle
                .policies
                .iter()
                .any(|p| p.plan.policy == policy && p.plan.mode == PolicyMode::DryRun)
        };
        for (labels, n) in evictions {
            if dry_run(&labels.policy) {
                m.add_evictions(labels, n);
            }
        }
        for (labels, n) in skips {
            m.add_skips(labels, n);
        }
        let cache = self.shared.read();
        m.retain_policies(cache.policies().keys());
        m.set_cache_sizes(
            cache.node_count(),
            cache.pod_count(),
            cache.evicting_count(),
        );
    }
}
