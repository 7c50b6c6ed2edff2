//! Planning: run a policy's strategies over a snapshot and pass every candidate through the gates.
//! Pure: no clock, no I/O. The same plan feeds the report, the evictor and dry runs.

mod candidate;
mod context;
#[cfg(test)]
pub(crate) mod tests;
mod zones;

use std::collections::{BTreeMap, BTreeSet, HashSet};

use jiff::Timestamp;

pub use candidate::{Candidate, PlannedEviction, Skipped};
pub use context::PlanContext;
pub use zones::{ZoneView, zone_views};

use crate::{
    api::PolicyMode,
    cluster::{ObjectKey, PolicyInfo, Snapshot},
    gates, strategies,
};

/// Gate name for candidates a strategy found but its own arguments hold back.
pub const HELD_BY_POLICY: &str = "policy";

/// One policy's decisions for one cycle.
#[derive(Clone, Debug)]
pub struct Plan {
    pub policy: String,
    pub mode: PolicyMode,
    pub evictions: Vec<PlannedEviction>,
    pub skipped: Vec<Skipped>,
    /// Why the policy did not run at all (e.g. an invalid default budget), if it did not.
    pub error: Option<String>,
}

impl Plan {
    /// Zones in which this plan evicts: their eviction round starts now.
    pub fn zones_with_evictions(&self) -> BTreeSet<&str> {
        self.evictions
            .iter()
            .filter_map(|e| e.candidate.zone.as_deref())
            .collect()
    }

    /// Skipped candidates per gate, for status and metrics.
    pub fn skipped_by_gate(&self) -> BTreeMap<&'static str, u32> {
        let mut counts = BTreeMap::new();
        for skip in &self.skipped {
            *counts.entry(skip.gate).or_default() += 1;
        }
        counts
    }
}

/// Plans one policy. `planned_elsewhere` holds pods that earlier policies of this cycle plan to evict.
pub fn plan_policy(
    snapshot: &Snapshot,
    policy: &PolicyInfo,
    now: Timestamp,
    zones: &BTreeMap<String, ZoneView>,
    planned_elsewhere: &HashSet<ObjectKey>,
) -> Plan {
    let mut plan = Plan {
        policy: policy.name.clone(),
        mode: policy.spec.mode,
        evictions: Vec::new(),
        skipped: Vec::new(),
        error: None,
    };
    if let Err(error) = &policy.default_budget {
        plan.error = Some(error.clone());
        return plan;
    }
    let strategies = strategies::enabled(&policy.spec.strategies);
    if strategies.is_empty() {
        // `strategies: {tdm: null}` passes the schema's minProperties but enables nothing; say so.
        plan.error = Some("spec.strategies enables no strategy".to_owned());
        return plan;
    }
    let ctx = PlanContext {
        snapshot,
        policy,
        now,
        zones,
        planned_elsewhere,
    };
    let mut gates = gates::chain(policy);
    // A pod is decided once per plan, by the first strategy that proposes it.
    let mut decided: HashSet<ObjectKey> = HashSet::new();
    for strategy in strategies {
        for candidate in strategy.propose(&ctx) {
            let pod = &candidate.pod;
            if !policy.spec.namespaces.admits(&pod.key.namespace)
                || ctx.is_leaving(pod)
                || !decided.insert(pod.key.clone())
            {
                continue;
            }
            if let Some(why) = &candidate.held {
                let detail = why.clone();
                plan.skipped.push(Skipped {
                    candidate,
                    gate: HELD_BY_POLICY,
                    detail,
                });
                continue;
            }
            let refusal = gates.iter_mut().find_map(|gate| {
                gate.check(&candidate, &ctx)
                    .err()
                    .map(|detail| (gate.name(), detail))
            });
            match refusal {
                Some((gate, detail)) => plan.skipped.push(Skipped {
                    candidate,
                    gate,
                    detail,
                }),
                None => {
                    for gate in &mut gates {
                        gate.admit(&candidate, &ctx);
                    }
                    plan.evictions.push(PlannedEviction { candidate });
                }
            }
        }
    }
    plan
}

/// Plans every policy in the snapshot (by name), each seeing the evictions of the ones before it as in
/// flight, so that two policies never evict the same pod or overrun a budget between them.
pub fn plan_all(snapshot: &Snapshot, policies: &[&PolicyInfo], now: Timestamp) -> CyclePlan {
    let (zones, warnings) = zone_views(snapshot, now);
    let mut planned: HashSet<ObjectKey> = HashSet::new();
    let mut plans = Vec::new();
    for policy in policies {
        let plan = plan_policy(snapshot, policy, now, &zones, &planned);
        planned.extend(plan.evictions.iter().map(|e| e.candidate.pod.key.clone()));
        plans.push(plan);
    }
    CyclePlan {
        now,
        zones,
        plans,
        warnings,
    }
}

/// Everything one cycle decided, across policies.
#[derive(Clone, Debug)]
pub struct CyclePlan {
    pub now: Timestamp,
    pub zones: BTreeMap<String, ZoneView>,
    pub plans: Vec<Plan>,
    pub warnings: Vec<String>,
}
