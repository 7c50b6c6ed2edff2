//! Planning: run a policy's strategies over a snapshot and pass every candidate through the gates.
//! Pure: no clock, no I/O. The same plan feeds the report, the evictor and dry runs.

mod chain;
mod explain;
mod gatekeeper;
mod registry;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet, HashSet};

use jiff::Timestamp;

pub use explain::{budget_lets_one_go, obstacles};
pub use gatekeeper::{PlanGatekeeper, StrategyTally};

use crate::{
    api::PolicyMode,
    cluster::{ObjectKey, PolicyInfo, Snapshot},
    framework::{
        PlanContext, PlannedEviction, SkipReason, Skipped, Strategy, StrategyId, Warning,
        WarningKey, ZoneView, zone_views,
    },
    gates::SharedCounts,
};

/// What `tidal report --verify` learnt beyond the refusals it moved to the skipped list: per policy,
/// how many planned evictions a dry run accepted, and which it could not check in time (they stay
/// planned, marked unverified).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verification {
    pub policies: BTreeMap<String, Verified>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verified {
    pub accepted: usize,
    pub unverified: BTreeSet<ObjectKey>,
}

/// One policy's decisions for one cycle.
#[derive(Clone, Debug)]
pub struct Plan {
    pub policy: String,
    pub mode: PolicyMode,
    pub evictions: Vec<PlannedEviction>,
    /// Detailed rows of skipped candidates, up to the plan's [`SkipRows`] (refusals for unreadable
    /// settings are always kept: each gets a Warning Event).
    pub skipped: Vec<Skipped>,
    /// Every skip, listed or not, by reason.
    pub skip_counts: BTreeMap<SkipReason, u32>,
    /// Why the policy did not run at all (e.g. an invalid default budget), if it did not.
    pub error: Option<String>,
    /// How long each strategy took, its gates included, in the order they ran. Measured only: no
    /// decision reads a clock.
    pub strategy_durations: Vec<(StrategyId, std::time::Duration)>,
}

/// How many skipped candidates a plan lists in detail. Counting is always exact; a cycle that refuses
/// tens of thousands of candidates (say `limits.total: 0`) need not build a row for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipRows {
    All,
    AtMost(usize),
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
        self.skip_counts
            .iter()
            .map(|(reason, n)| (reason.name(), *n))
            .collect()
    }

    /// Skips counted but not listed in `skipped`.
    pub fn skipped_unlisted(&self) -> u32 {
        let counted: u32 = self.skip_counts.values().sum();
        counted.saturating_sub(u32::try_from(self.skipped.len()).unwrap_or(u32::MAX))
    }

    /// Records one more skip (listed), e.g. an eviction the API server refused.
    pub fn add_skip(&mut self, skipped: Skipped) {
        *self.skip_counts.entry(skipped.reason).or_default() += 1;
        self.skipped.push(skipped);
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
    plan_policy_with(
        snapshot,
        policy,
        now,
        zones,
        planned_elsewhere,
        SkipRows::All,
    )
}

/// [`plan_policy`] listing at most `rows` skipped candidates in detail.
pub fn plan_policy_with(
    snapshot: &Snapshot,
    policy: &PolicyInfo,
    now: Timestamp,
    zones: &BTreeMap<String, ZoneView>,
    planned_elsewhere: &HashSet<ObjectKey>,
    rows: SkipRows,
) -> Plan {
    plan_policy_sharing(
        snapshot,
        policy,
        now,
        zones,
        planned_elsewhere,
        rows,
        &SharedCounts::default(),
    )
    .0
}

/// [`plan_policy_with`], counting `limits.shared` in `shared` with the cycle's other policies.
fn plan_policy_sharing(
    snapshot: &Snapshot,
    policy: &PolicyInfo,
    now: Timestamp,
    zones: &BTreeMap<String, ZoneView>,
    planned_elsewhere: &HashSet<ObjectKey>,
    rows: SkipRows,
    shared: &SharedCounts,
) -> (Plan, Vec<(StrategyId, StrategyTally)>) {
    let mut plan = Plan {
        policy: policy.name.clone(),
        mode: policy.spec.mode,
        evictions: Vec::new(),
        skipped: Vec::new(),
        skip_counts: BTreeMap::new(),
        error: None,
        strategy_durations: Vec::new(),
    };
    let strategies = match runnable_strategies(policy) {
        Ok(strategies) => strategies,
        Err(error) => {
            plan.error = Some(error);
            return (plan, Vec::new());
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
    let mut gatekeeper = PlanGatekeeper::new(&ctx, chain::chain(policy, shared), rows);
    for strategy in &strategies {
        let started = std::time::Instant::now();
        gatekeeper.admit_from(strategy);
        plan.strategy_durations
            .push((strategy.id(), started.elapsed()));
    }
    let mut tallies = std::mem::take(&mut gatekeeper.tallies);
    let summaries = strategies
        .iter()
        .map(|s| (s.id(), tallies.remove(&s.id()).unwrap_or_default()))
        .collect();
    plan.evictions = gatekeeper.evictions;
    plan.skipped = gatekeeper.skipped;
    plan.skip_counts = gatekeeper.skip_counts;
    (plan, summaries)
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

/// [`runnable_strategies`] as a check: the policy can run, or why not.
pub fn check_policy(policy: &PolicyInfo) -> Result<(), String> {
    runnable_strategies(policy).map(drop)
}

/// Plans every policy in the snapshot (by name), each seeing the evictions of the `Evict` policies before
/// it as in flight, so that two policies never evict the same pod or overrun a budget between them. A
/// `DryRun` plan evicts nothing, so it holds nothing back from the policies after it.
pub fn plan_all(snapshot: &Snapshot, policies: &[&PolicyInfo], now: Timestamp) -> CyclePlan {
    plan_all_with(snapshot, policies, now, SkipRows::All)
}

/// [`plan_all`] listing at most `rows` skipped candidates per policy in detail.
pub fn plan_all_with(
    snapshot: &Snapshot,
    policies: &[&PolicyInfo],
    now: Timestamp,
    rows: SkipRows,
) -> CyclePlan {
    plan_all_in_flight(snapshot, policies, now, rows, HashSet::new())
}

/// [`plan_all_with`] where `in_flight` pods (evictions queued or on the wire) count as leaving, as
/// those of an earlier policy of the cycle do: never planned again, and within their jobs' budgets.
pub fn plan_all_in_flight(
    snapshot: &Snapshot,
    policies: &[&PolicyInfo],
    now: Timestamp,
    rows: SkipRows,
    in_flight: HashSet<ObjectKey>,
) -> CyclePlan {
    let (zones, mut warnings) = zone_views(snapshot, now);
    warnings.extend(missing_podgroups(snapshot));
    warnings.extend(unreadable_pods(snapshot));
    let mut planned = in_flight;
    let mut plans = Vec::new();
    // Every plan counts against the shared limits, DryRun ones too: what the policies sharing a
    // limit would do together is what their reports must show.
    let shared = SharedCounts::default();
    let mut summaries = BTreeMap::new();
    let mut capacity_readers = CapacityReaders::default();
    for (at, policy) in policies.iter().enumerate() {
        let (plan, summary) =
            plan_policy_sharing(snapshot, policy, now, &zones, &planned, rows, &shared);
        if plan.error.is_none() {
            capacity_readers.note(policy, &summary);
        }
        summaries.insert(plan.policy.clone(), summary);
        // Only the policies after this one read what it evicts (hashing every key costs a few
        // milliseconds at 10,000 evictions).
        let last = at + 1 == policies.len();
        if plan.mode == PolicyMode::Evict && !last {
            planned.extend(plan.evictions.iter().map(|e| e.candidate.pod.key.clone()));
        }
        plans.push(plan);
    }
    warnings.extend(unreadable_nodes(snapshot, &capacity_readers));
    warnings.extend(implausible_capacity(snapshot, &capacity_readers));
    CyclePlan {
        now,
        zones,
        plans,
        warnings,
        summaries,
        capacity_readers,
    }
}

/// What the policies that ran read of nodes' capacity. The warnings about capacity data speak only
/// of what runs: a cluster whose device plugins misreport allocatable is no news to a policy that
/// weighs no node's capacity, and would be told so every cycle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CapacityReaders {
    /// The utilization strategies that ran (lowNodeUtilization, highNodeUtilization).
    pub utilization: BTreeSet<StrategyId>,
    /// A policy that ran looks for a node each evicted pod fits on (`protections.nodeFit`).
    pub node_fit: bool,
}

impl CapacityReaders {
    fn note(&mut self, policy: &PolicyInfo, ran: &[(StrategyId, StrategyTally)]) {
        self.utilization
            .extend(ran.iter().map(|(id, _)| *id).filter(|id| {
                matches!(
                    id,
                    StrategyId::LowNodeUtilization | StrategyId::HighNodeUtilization
                )
            }));
        self.node_fit |= policy.spec.protections.node_fit;
    }

    /// The utilization strategies that ran, as the subject of a sentence: `lowNodeUtilization
    /// leaves`, `lowNodeUtilization and highNodeUtilization leave`; `None` when neither ran.
    fn utilization_leave(&self) -> Option<String> {
        let names: Vec<String> = self.utilization.iter().map(ToString::to_string).collect();
        match names.len() {
            0 => None,
            1 => Some(format!("{} leaves", names[0])),
            _ => Some(format!("{} leave", names.join(" and "))),
        }
    }
}

/// Jobs whose pods name a PodGroup that does not exist (a typo, a group deleted before its pods, or
/// Volcano not installed): their budget is not the group's but the pods' own or the policy's default,
/// which the author of the annotation probably did not mean.
pub fn missing_podgroups(snapshot: &Snapshot) -> Vec<Warning> {
    snapshot
        .jobs
        .iter()
        .filter(|(job, _)| job.kind == crate::cluster::JobKind::PodGroup)
        .filter(|(job, _)| {
            snapshot.podgroup(&job.namespace, &job.name).is_none()
        })
        .map(|(job, state)| {
            let text = format!(
                "{} pod(s) name PodGroup {}/{} (scheduling.k8s.io/group-name), which does not exist: \
                 their job budget is the pods' own or the policy's default",
                state.pods.len(),
                job.namespace,
                job.name
            );
            let key = WarningKey::MissingPodGroup {
                namespace: job.namespace.to_string(),
                name: job.name.to_string(),
            };
            Warning::new(key, text)
        })
        .collect()
}

/// Pods with a value tidal cannot read (a request of `abc`, `-5`, `1e400`): never evicted, and their
/// node's load counts as unknown, so no strategy proposes them and they would otherwise go unseen.
/// One line for all, naming the first few.
pub fn unreadable_pods(snapshot: &Snapshot) -> Option<Warning> {
    let pods = snapshot.pods_with_problems();
    first_few(pods, |pod| pod.problems()[0].to_string()).map(|(count, named)| {
        let text = format!(
            "{count} pod(s) have values tidal cannot read; they are never evicted and their nodes' load \
             counts as unknown: {named}"
        );
        Warning::new(WarningKey::UnreadablePods, text)
    })
}

/// Nodes with a value tidal cannot read (an allocatable of `NaN`, `1e400`, `-100` or `12abc`): their
/// capacity is unknown, not zero, so node fit places no pod on them and the utilization strategies
/// leave them alone (no source, no destination): a value read wrongly never widens disruption. One
/// line for all, naming the first few; only when a policy that ran reads node capacity that way.
pub fn unreadable_nodes(snapshot: &Snapshot, readers: &CapacityReaders) -> Option<Warning> {
    let consequences: Vec<String> = readers
        .node_fit
        .then(|| "nodeFit plans no pod onto them".to_owned())
        .into_iter()
        .chain(
            readers
                .utilization_leave()
                .map(|who| format!("{who} them alone")),
        )
        .collect();
    if consequences.is_empty() {
        return None;
    }
    let nodes = snapshot
        .nodes
        .values()
        .filter_map(|state| state.node.as_deref())
        .filter(|node| !node.problems.is_empty());
    first_few(nodes, |node| node.problems[0].to_string()).map(|(count, named)| {
        let text = format!(
            "{count} node(s) have values tidal cannot read; {}: {named}",
            consequences.join(" and ")
        );
        Warning::new(WarningKey::UnreadableNodes, text)
    })
}

/// Ready nodes whose pods request more of a resource than the node has (allocatable missing, `0`, or
/// `1m` of cpu; GPUs gone after a device-plugin restart): the capacity data is wrong, so the utilization
/// strategies leave these nodes alone rather than drain them on its word. Said when one of them ran,
/// naming the first few, so that a node they leave out is never silent. Node fit needs no warning:
/// such a node is full to it, which is what its pods' requests say.
pub fn implausible_capacity(snapshot: &Snapshot, readers: &CapacityReaders) -> Option<Warning> {
    use crate::cluster::model::resources::format_amount;
    let who = readers.utilization_leave()?;
    let over = snapshot.nodes.iter().filter_map(|(name, state)| {
        // A node whose allocatable cannot be read is named by `unreadable_nodes`, not as zero here.
        let node = state
            .node
            .as_deref()
            .filter(|n| n.ready && n.problems.is_empty())?;
        let resource = state
            .requested
            .names()
            .find(|r| state.requested.get(r) > node.allocatable.get(r))?;
        Some((name, state, node, resource))
    });
    let named = first_few(over, |(name, state, node, resource)| {
        format!(
            "{name} ({resource}: pods request {}, allocatable {})",
            format_amount(resource, state.requested.get(resource)),
            format_amount(resource, node.allocatable.get(resource)),
        )
    });
    named.map(|(count, named)| {
        let text = format!(
            "{count} node(s) hold more than their allocatable says they have, so their capacity data is \
             wrong: {who} them alone (no source, no destination) for that resource: {named}"
        );
        Warning::new(WarningKey::ImplausibleCapacity, text)
    })
}

/// How many `items` there are and the first few of them named (`a; b; c; and 7 more`), or `None` when
/// there are none: one warning line, however many objects it is about. Only the named ones are
/// formatted.
fn first_few<T>(
    items: impl Iterator<Item = T>,
    name: impl Fn(T) -> String,
) -> Option<(usize, String)> {
    const NAMED: usize = 5;
    let mut count = 0;
    let mut named = Vec::new();
    for item in items {
        count += 1;
        if named.len() < NAMED {
            named.push(name(item));
        }
    }
    (count > 0).then(|| {
        let more = if count > NAMED {
            format!("; and {} more", count - NAMED)
        } else {
            String::new()
        };
        (count, format!("{}{more}", named.join("; ")))
    })
}

/// Everything one cycle decided, across policies.
#[derive(Clone, Debug)]
pub struct CyclePlan {
    pub now: Timestamp,
    pub zones: BTreeMap<String, ZoneView>,
    pub plans: Vec<Plan>,
    pub warnings: Vec<Warning>,
    /// Per policy (by name), each strategy's share of its plan and what it saw, in the order the
    /// strategies ran.
    pub summaries: BTreeMap<String, Vec<(StrategyId, StrategyTally)>>,
    /// What the policies that ran read of nodes' capacity.
    pub capacity_readers: CapacityReaders,
}

impl CyclePlan {
    /// Whether this plan looked for what `key` is about. A plan of policies that read no node's
    /// capacity does not look at it, so a capacity warning absent from it has not cleared.
    pub fn looked_for(&self, key: &WarningKey) -> bool {
        let readers = &self.capacity_readers;
        match key {
            WarningKey::UnreadableNodes => readers.node_fit || !readers.utilization.is_empty(),
            WarningKey::ImplausibleCapacity => !readers.utilization.is_empty(),
            WarningKey::RoundInFuture { .. }
            | WarningKey::UnknownZone { .. }
            | WarningKey::MissingPodGroup { .. }
            | WarningKey::UnreadablePods => true,
        }
    }
}
