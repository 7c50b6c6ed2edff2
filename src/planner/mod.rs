//! Planning: run a policy's strategies over a snapshot and pass every candidate through the gates.
//! Pure: no clock, no I/O. The same plan feeds the report, the evictor and dry runs.

mod admitter;
mod chain;
mod registry;
#[cfg(test)]
pub(crate) mod tests;

use std::collections::{BTreeMap, BTreeSet, HashSet};

use jiff::Timestamp;

pub use admitter::Admitter;

use crate::{
    api::PolicyMode,
    cluster::{ObjectKey, PolicyInfo, Snapshot},
    framework::{PlanContext, PlannedEviction, Skipped, Strategy, ZoneView, zone_views},
};

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

    /// Skipped candidates per reason (by its published name), for status and metrics.
    pub fn skipped_by_reason(&self) -> BTreeMap<&'static str, u32> {
        let mut counts = BTreeMap::new();
        for skip in &self.skipped {
            *counts.entry(skip.reason.name()).or_default() += 1;
        }
        counts
    }
}

/// Plans one policy. `planned_elsewhere` holds pods that earlier policies of this cycle will evict.
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
    let strategies = match runnable_strategies(policy) {
        Ok(strategies) => strategies,
        Err(error) => {
            plan.error = Some(error);
            return plan;
        }
    };
    let ctx = PlanContext {
        snapshot,
        policy,
        now,
        zones,
        planned_elsewhere,
    };
    // A pod is decided once per plan, by the first strategy that proposes it.
    let mut admitter = Admitter::new(&ctx, chain::chain(policy));
    for strategy in &strategies {
        admitter.run(strategy);
    }
    plan.evictions = admitter.evictions;
    plan.skipped = admitter.skipped;
    plan
}

/// The policy's strategies, or why the policy cannot run: checks beyond what its CRD schema can
/// express. A misconfigured policy evicts nothing rather than guessing what its author meant.
pub fn runnable_strategies(policy: &PolicyInfo) -> Result<Vec<Strategy>, String> {
    policy.default_budget.as_ref().map_err(Clone::clone)?;
    let strategies = registry::enabled(&policy.spec.strategies);
    if strategies.is_empty() {
        // `strategies: {tdm: null}` passes the schema's minProperties but enables nothing; say so.
        return Err("spec.strategies enables no strategy".to_owned());
    }
    let invalid: Vec<String> = strategies
        .iter()
        .filter_map(|s| s.validate().err().map(|e| format!("{}: {e}", s.id())))
        .chain(chain::validate(policy).err())
        .collect();
    if invalid.is_empty() {
        Ok(strategies)
    } else {
        Err(invalid.join("; "))
    }
}

/// Plans every policy in the snapshot (by name), each seeing the evictions of the `Evict` policies before
/// it as in flight, so that two policies never evict the same pod or overrun a budget between them. A
/// `DryRun` plan evicts nothing, so it holds nothing back from the policies after it.
pub fn plan_all(snapshot: &Snapshot, policies: &[&PolicyInfo], now: Timestamp) -> CyclePlan {
    let (zones, warnings) = zone_views(snapshot, now);
    let mut planned: HashSet<ObjectKey> = HashSet::new();
    let mut plans = Vec::new();
    for policy in policies {
        let plan = plan_policy(snapshot, policy, now, &zones, &planned);
        if plan.mode == PolicyMode::Evict {
            planned.extend(plan.evictions.iter().map(|e| e.candidate.pod.key.clone()));
        }
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
