//! Node utilization for lowNodeUtilization and highNodeUtilization: how much of each resource a node
//! uses, from pod requests (what the scheduler counts) or from measured usage (metrics.k8s.io), as a
//! percentage of allocatable, and how nodes compare with thresholds.

pub mod args;

use std::{
    borrow::Cow,
    hash::{BuildHasher, Hash},
    sync::Arc,
};

use foldhash::HashMap;

use crate::{
    cluster::{
        NodeInfo, NodeState, PodInfo, Resources,
        model::resources::{CPU, EPHEMERAL_STORAGE, MEMORY, PODS},
    },
    framework::{Gatekeeper, PlacementGroups, PlanContext},
};
use args::{METRIC_RESOURCE, Thresholds, UsageArgs, UsageSource};

/// The resources every utilization strategy bounds its moves by, listed or not.
pub(crate) const BASIC: [&str; 3] = [CPU, MEMORY, PODS];

/// Checks a thresholds map: known shape, percentages in [0, 100].
pub(crate) fn validate_thresholds(field: &str, thresholds: &Thresholds) -> Result<(), String> {
    if thresholds.is_empty() {
        return Err(format!("{field} must list at least one resource"));
    }
    for (name, value) in thresholds {
        if !(0.0..=100.0).contains(value) {
            return Err(format!(
                "{field}.{name}: {value} is not a percentage in [0, 100]"
            ));
        }
    }
    Ok(())
}

/// One node's usage.
pub(crate) struct NodeUsage<'s> {
    pub state: &'s Arc<NodeState>,
    pub node: &'s NodeInfo,
    /// Absolute usage in the strategy's source, without pods that are already leaving.
    pub usage: Resources,
    /// Requests of the pods that stay, whatever the source: what the scheduler places by.
    pub requested: Resources,
    /// With `Prometheus`: the query's value for the node, in percent.
    pub metric: Option<f64>,
}

impl NodeUsage<'_> {
    /// Usage of `resource` as a percentage of allocatable. A resource the node does not have is 0% if
    /// unused and 100% if somehow used.
    pub(crate) fn percent(&self, resource: &str) -> f64 {
        if resource == METRIC_RESOURCE {
            return self.metric.unwrap_or(0.0);
        }
        percent(
            self.usage.get(resource),
            self.node.allocatable.get(resource),
        )
    }

    /// Sum of the percentages of `resources`: how busy the node is, for ordering.
    pub(crate) fn load(&self, resources: &[String]) -> f64 {
        resources.iter().map(|r| self.percent(r)).sum()
    }
}

pub(crate) fn percent(used: i64, allocatable: i64) -> f64 {
    if allocatable <= 0 {
        return if used > 0 { 100.0 } else { 0.0 };
    }
    used as f64 * 100.0 / allocatable as f64
}

/// The amount of `resource` that is `pct` percent of `allocatable`, rounded down.
pub(crate) fn amount_at(pct: f64, allocatable: i64) -> i64 {
    (allocatable as f64 * pct / 100.0).floor() as i64
}

/// Usage of every ready node that tidal can read, in name order, without the pods that are gone for
/// this strategy ([`PlanContext::is_gone`]). Left out, and returned by name: with `Metrics`, nodes
/// without a sample in the window (a missing measurement is not an idle node) or with a leaving pod
/// whose share of the samples is unknown. Nodes running a pod whose requests tidal cannot read are left
/// out altogether: their load is unknown, so they are neither a source nor a destination. So are nodes
/// whose pods request more of a `resources` entry than the node has (allocatable missing, zero or
/// absurdly small): the scheduler never places that, so the capacity data is wrong, and a node that
/// looks 100% (or 10,000%) used must not be drained on its word.
pub(crate) fn node_usages<'s>(
    ctx: &PlanContext<'s>,
    source: &UsageArgs,
    resources: &[String],
    gatekeeper: &dyn Gatekeeper,
) -> (Vec<NodeUsage<'s>>, Vec<&'s str>) {
    let mut out = Vec::with_capacity(ctx.snapshot.nodes.len());
    let mut unmeasured = Vec::new();
    // With Prometheus: the query's last answer, if it is recent enough to classify by.
    let metrics = (source.source == UsageSource::Prometheus).then(|| {
        source
            .query
            .as_ref()
            .and_then(|q| ctx.snapshot.node_metrics.get(q))
            .filter(|sample| {
                sample
                    .at
                    .checked_add(source.window.to_signed())
                    .is_ok_and(|until| until >= ctx.now)
            })
            .and_then(|sample| sample.values.as_ref().ok())
    });
    for (name, state) in &ctx.snapshot.nodes {
        let Some(node) = state.node.as_deref() else {
            continue;
        };
        if !node.ready || !node.problems.is_empty() || !state.load_known() || !ctx.processes(node) {
            continue;
        }
        if resources
            .iter()
            .any(|r| state.requested.get(r) > node.allocatable.get(r))
        {
            continue;
        }
        let mut requested = state.requested.clone();
        let mut leaving_measured = Resources::default();
        let mut measurable = true;
        // Most nodes have no pod leaving: their load is `requested` as it stands, without visiting
        // their pods (every pod of the cluster, for each utilization strategy of each plan).
        let leaving = if ctx.none_gone_on(state, gatekeeper) {
            None
        } else {
            Some(state.pods.values())
        };
        for pod in leaving.into_iter().flatten() {
            if !pod.holds_resources() || !ctx.is_gone(pod, gatekeeper) {
                continue;
            }
            requested.sub(&pod.requests);
            // The node's samples already leave out pods whose eviction was accepted; everything else
            // that is leaving is still in them.
            if source.source == UsageSource::Metrics && pod.evicting_since.is_none() {
                match pod_usage(pod, ctx, source) {
                    Some(measured) => leaving_measured.add(&measured),
                    None => measurable = false,
                }
            }
        }
        let mut usage = requested.clone();
        let mut metric = None;
        if let Some(values) = metrics {
            match values.and_then(|v| v.get(name.as_str())) {
                Some(value) => metric = Some(value * 100.0),
                None => {
                    unmeasured.push(name.as_str());
                    continue;
                }
            }
        }
        if source.source == UsageSource::Metrics {
            let measured = ctx
                .snapshot
                .node_usage
                .get(name.as_str())
                .and_then(|series| series.average(ctx.now, source.window));
            let Some(measured) = measured.filter(|_| measurable) else {
                unmeasured.push(name.as_str());
                continue;
            };
            usage.milli_cpu = measured
                .milli_cpu
                .saturating_sub(leaving_measured.milli_cpu)
                .max(0);
            usage.memory = measured
                .memory
                .saturating_sub(leaving_measured.memory)
                .max(0);
        }
        out.push(NodeUsage {
            state,
            node,
            usage,
            requested,
            metric,
        });
    }
    (out, unmeasured)
}

/// What moving `pod` takes off its node: its requests, or with `Metrics` its measured CPU and memory
/// (`None` if it has no sample in the window: its weight is unknown, so it is not moved). Requests are
/// borrowed: strategies weigh every pod of a busy node, and most plans read requests.
pub(crate) fn pod_usage<'p>(
    pod: &'p PodInfo,
    ctx: &PlanContext<'_>,
    source: &UsageArgs,
) -> Option<Cow<'p, Resources>> {
    if source.source != UsageSource::Metrics {
        return Some(Cow::Borrowed(&pod.requests));
    }
    let measured = ctx
        .snapshot
        .pod_usage
        .get(&pod.key)?
        .average(ctx.now, source.window)?;
    let mut usage = pod.requests.clone();
    usage.milli_cpu = measured.milli_cpu;
    usage.memory = measured.memory;
    Some(Cow::Owned(usage))
}

/// `cpu 85%, memory 40%`: percentages for messages.
pub(crate) fn describe_percent(node: &NodeUsage<'_>, resources: &[String]) -> String {
    resources
        .iter()
        .map(|r| format!("{r} {:.0}%", node.percent(r)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Thresholds per node: the static ones, or with deviation thresholds the mean usage of all nodes
/// minus `low` and plus `high`, clamped to [0, 100]. A resource whose `low` deviation is 0 is left out
/// of the classification (both thresholds at 100%), as the descheduler does.
pub(crate) fn resolve_thresholds(
    nodes: &[NodeUsage<'_>],
    resources: &[String],
    low: &Thresholds,
    high: Option<&Thresholds>,
    deviation: bool,
) -> (Thresholds, Option<Thresholds>) {
    if !deviation {
        return (low.clone(), high.cloned());
    }
    let mean = |resource: &str| {
        if nodes.is_empty() {
            return 0.0;
        }
        nodes.iter().map(|n| n.percent(resource)).sum::<f64>() / nodes.len() as f64
    };
    let mut resolved_low = Thresholds::new();
    let mut resolved_high = Thresholds::new();
    for resource in resources {
        let average = mean(resource);
        let ignored = low.get(resource) == Some(&0.0);
        if let Some(d) = low.get(resource) {
            let value = if ignored { 100.0 } else { average - d };
            resolved_low.insert(resource.clone(), value.clamp(0.0, 100.0));
        }
        if let Some(d) = high.and_then(|h| h.get(resource)) {
            let value = if ignored { 100.0 } else { average + d };
            resolved_high.insert(resource.clone(), value.clamp(0.0, 100.0));
        }
    }
    (resolved_low, high.map(|_| resolved_high))
}

/// Below `thresholds` on every listed resource (equal counts as below, as in the descheduler).
pub(crate) fn below_all(node: &NodeUsage<'_>, thresholds: &Thresholds) -> bool {
    thresholds.iter().all(|(r, t)| node.percent(r) <= *t)
}

/// Above `thresholds` on at least one listed resource.
pub(crate) fn above_any(node: &NodeUsage<'_>, thresholds: &Thresholds) -> bool {
    thresholds.iter().any(|(r, t)| node.percent(r) > *t)
}

/// The resources a move is bounded by: the listed ones plus cpu, memory and pods.
pub(crate) fn bounded_resources(thresholds: &Thresholds) -> Vec<String> {
    let mut out: Vec<String> = BASIC.iter().map(|r| (*r).to_owned()).collect();
    for name in thresholds.keys() {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

/// One destination's room.
struct Destination<'s> {
    node: &'s NodeInfo,
    /// Up to the strategy's cap, in its usage source, on the bounded resources.
    spare: Resources,
    /// Allocatable minus the requests of the pods that stay, on every resource: what the scheduler
    /// sees free, whatever the usage source.
    free: Resources,
}

/// A bounded resource, its name matched once: [`Resources::get`] matches names as strings, and Room
/// reads amounts for every destination it tries for every pod it weighs.
pub(crate) enum Slot {
    Cpu,
    Memory,
    EphemeralStorage,
    Pods,
    Scalar(String),
}

impl Slot {
    pub(crate) fn of(resource: &str) -> Slot {
        match resource {
            CPU => Slot::Cpu,
            MEMORY => Slot::Memory,
            EPHEMERAL_STORAGE => Slot::EphemeralStorage,
            PODS => Slot::Pods,
            other => Slot::Scalar(other.to_owned()),
        }
    }

    /// [`Resources::get`] of this resource.
    pub(crate) fn get(&self, resources: &Resources) -> i64 {
        match self {
            Slot::Cpu => resources.milli_cpu,
            Slot::Memory => resources.memory,
            Slot::EphemeralStorage => resources.ephemeral_storage,
            Slot::Pods => resources.pods,
            Slot::Scalar(name) => resources.get(name),
        }
    }

    /// [`Resources::set`] of this resource.
    fn set(&self, resources: &mut Resources, amount: i64) {
        match self {
            Slot::Cpu => resources.milli_cpu = amount,
            Slot::Memory => resources.memory = amount,
            Slot::EphemeralStorage => resources.ephemeral_storage = amount,
            Slot::Pods => resources.pods = amount,
            Slot::Scalar(name) => resources.set(name, amount),
        }
    }
}

/// Every resource `small` names ([`Resources::names`]: the non-zero fixed ones and every extended one)
/// is at most its amount in `large`, without matching names as strings.
fn within(small: &Resources, large: &Resources) -> bool {
    let fixed = |amount: i64, limit: i64| amount == 0 || amount <= limit;
    fixed(small.milli_cpu, large.milli_cpu)
        && fixed(small.memory, large.memory)
        && fixed(small.ephemeral_storage, large.ephemeral_storage)
        && fixed(small.pods, large.pods)
        && small
            .scalar
            .iter()
            .flat_map(|scalar| scalar.iter())
            .all(|(name, amount)| *amount <= large.get(name))
}

fn fits(
    slots: &[Slot],
    destination: &Destination<'_>,
    usage: &Resources,
    requests: &Resources,
) -> bool {
    slots
        .iter()
        .all(|s| s.get(usage) <= s.get(&destination.spare))
        && within(requests, &destination.free)
}

/// The spare room of the destinations of one strategy run, kept per destination. A pod moves only if
/// one destination it may run on fits all of it — every bounded resource within that destination's
/// cap, every other resource it requests (extended ones included) within what the destination has
/// free — and that destination is charged: the first such destination in name order. Room only
/// shrinks, so it never goes negative, and shapes of move at least as large as one that fit nowhere
/// are refused at once.
///
/// A search passes over the destinations the pod's placement signature allows, up to the first that
/// fits: most it passes are full on some bounded resource, so each signature keeps its destinations'
/// spare room in columns of plain numbers, one per bounded resource, which the search reads instead of
/// the destinations themselves. (A tree of maxima over the destinations costs more: the destinations
/// a search must pass are full on different resources, so the maxima of a run of them fit nearly
/// every move and prune little.)
pub(crate) struct Room<'s> {
    resources: Vec<String>,
    /// `resources`, matched once.
    slots: Vec<Slot>,
    destinations: Vec<Destination<'s>>,
    /// The sum of the destinations' spare room, per bounded resource.
    total: Resources,
    /// Per placement signature: the destinations allowing it, and their room.
    reachable: HashMap<u64, Reachable>,
    /// Destinations charged so far, in order: each signature's columns catch up when it is next
    /// searched, so that a move costs one update per signature that searches again, not one per
    /// signature seen.
    taken: Vec<usize>,
    /// The PodGroups placement keys read, found once per run.
    groups: PlacementGroups<'s>,
    /// What the move being searched for needs on each slot, kept to spare an allocation per search.
    need: Vec<i64>,
    /// The room left as reasons write it (`cpu 1500m, memory 3Gi, pods 20`), until the next move is
    /// taken: candidates refused in between say the same.
    left: Option<String>,
}

/// The destinations a placement signature allows and their spare room.
struct Reachable {
    /// Indexes into [`Room::destinations`], ascending (name order).
    destinations: Vec<usize>,
    /// Per index into [`Room::destinations`], its position in `destinations`, if it is there.
    position: Vec<Option<u32>>,
    /// Their spare room per slot, a column per slot (`spare[slot * len + at]`), as of the first `seen`
    /// entries of [`Room::taken`].
    spare: Vec<i64>,
    seen: usize,
    /// Moves that fit none of them (a few, to bound the cost of checking).
    failed: Vec<Failed>,
    /// Where recent moves found room (a few shapes): a move at least as large need not look before.
    found: Vec<Found>,
}

/// A move that found room: what it needed and requested, and the position of the destination that
/// took it. Room only shrinks, so every destination before that position is still too small for it,
/// and for any move at least as large.
struct Found {
    need: Vec<i64>,
    requests: Resources,
    at: usize,
}

/// A move that fit no destination: what it needed on each slot, and its requests.
struct Failed {
    need: Vec<i64>,
    requests: Resources,
}

impl Failed {
    /// A move needing `need` and requesting `requests` is at least as large: it fits nowhere either.
    fn covers(&self, need: &[i64], requests: &Resources) -> bool {
        self.need
            .iter()
            .zip(need)
            .all(|(failed, need)| need >= failed)
            && within(&self.requests, requests)
    }
}

impl Reachable {
    fn new(destinations: Vec<usize>, all: &[Destination<'_>], slots: &[Slot], seen: usize) -> Self {
        let spare = slots
            .iter()
            .flat_map(|slot| destinations.iter().map(|&i| slot.get(&all[i].spare)))
            .collect();
        let mut position = vec![None; all.len()];
        for (at, &index) in destinations.iter().enumerate() {
            position[index] = u32::try_from(at).ok();
        }
        Reachable {
            destinations,
            position,
            spare,
            seen,
            failed: Vec::new(),
            found: Vec::new(),
        }
    }

    /// The first position a move needing `need` and requesting `requests` can fit at: the furthest
    /// any smaller move found room at.
    fn skip(&self, need: &[i64], requests: &Resources) -> usize {
        self.found
            .iter()
            .filter(|found| {
                found
                    .need
                    .iter()
                    .zip(need)
                    .all(|(found, need)| need >= found)
                    && within(&found.requests, requests)
            })
            .map(|found| found.at)
            .max()
            .unwrap_or(0)
    }

    /// Remembers where a move found room: in place of the same shape's last find, else of the find
    /// that skips least.
    fn remember(&mut self, need: &[i64], requests: &Resources, at: usize) {
        if let Some(same) =
            (self.found.iter_mut()).find(|f| f.need == need && f.requests == *requests)
        {
            same.at = same.at.max(at);
            return;
        }
        let found = Found {
            need: need.to_vec(),
            requests: requests.clone(),
            at,
        };
        if self.found.len() < FOUND_KEPT {
            self.found.push(found);
        } else if let Some(least) = self.found.iter_mut().min_by_key(|f| f.at)
            && least.at < at
        {
            *least = found;
        }
    }

    /// Brings the columns up to date with the destinations charged since they were last read.
    fn catch_up(&mut self, taken: &[usize], all: &[Destination<'_>], slots: &[Slot]) {
        let len = self.destinations.len();
        for &index in &taken[self.seen..] {
            if let Some(at) = self.position[index] {
                let at = at as usize;
                for (s, slot) in slots.iter().enumerate() {
                    self.spare[s * len + at] = slot.get(&all[index].spare);
                }
            }
        }
        self.seen = taken.len();
    }

    /// The first destination (its position here) from `from` on with at least `need` spare room on
    /// every slot and that `accept` takes, asked only of those.
    fn first(
        &self,
        need: &[i64],
        from: usize,
        mut accept: impl FnMut(usize) -> bool,
    ) -> Option<usize> {
        let len = self.destinations.len();
        let Some((&lead_need, rest_need)) = need.split_first() else {
            return (from..len).find(|&at| accept(at));
        };
        if from >= len {
            return None;
        }
        let (lead, rest) = self.spare.split_at(len);
        let mut from = from;
        while let Some(skipped) = lead[from..].iter().position(|&spare| spare >= lead_need) {
            let at = from + skipped;
            let room_on_rest = rest
                .chunks_exact(len)
                .zip(rest_need)
                .all(|(column, need)| column[at] >= *need);
            if room_on_rest && accept(at) {
                return Some(at);
            }
            from = at + 1;
        }
        None
    }
}

/// A placement signature, hashed with a fixed seed: as deterministic as SipHash's `DefaultHasher`, at
/// a fraction of its cost (Room hashes one for every pod it weighs).
fn signature_hash(value: impl Hash) -> u64 {
    foldhash::quality::FixedState::default().hash_one(value)
}

/// Moves remembered as fitting nowhere, per placement signature.
const FAILED_KEPT: usize = 16;

/// Moves remembered with where they found room, per placement signature.
const FOUND_KEPT: usize = 16;

impl<'s> Room<'s> {
    /// `limit(resource)` is the percentage each destination may be filled to on a bounded resource.
    pub(crate) fn new(
        destinations: &[&NodeUsage<'s>],
        resources: Vec<String>,
        limit: impl Fn(&str) -> f64,
    ) -> Self {
        let mut total = Resources::default();
        let destinations = destinations
            .iter()
            .map(|node| {
                let mut spare = Resources::default();
                for resource in &resources {
                    let cap = amount_at(limit(resource), node.node.allocatable.get(resource));
                    let room = cap.saturating_sub(node.usage.get(resource)).max(0);
                    spare.set(resource, room);
                    total.set(resource, total.get(resource).saturating_add(room));
                }
                let mut free = node.node.allocatable.clone();
                free.sub(&node.requested);
                Destination {
                    node: node.node,
                    spare,
                    free,
                }
            })
            .collect();
        Room {
            slots: resources.iter().map(|r| Slot::of(r)).collect(),
            resources,
            destinations,
            total,
            reachable: HashMap::default(),
            taken: Vec::new(),
            groups: PlacementGroups::default(),
            need: Vec::new(),
            left: None,
        }
    }

    /// Some bounded resource has no room left on any destination: nothing more can move.
    pub(crate) fn exhausted(&self) -> bool {
        self.slots.iter().any(|s| s.get(&self.total) <= 0)
    }

    /// A destination that would take `pod` (ready, schedulable, selector, required affinity, hard
    /// taints, tidal's revocable-zone rules) and has room for a move using `usage` here and
    /// requesting the pod's requests there: the first in name order.
    pub(crate) fn find(
        &mut self,
        pod: &PodInfo,
        usage: &Resources,
        ctx: &PlanContext<'s>,
    ) -> Option<usize> {
        // Which destinations allow a pod: its constraints and what the placement rules read of it.
        let placement = ctx.placement_key_in(pod, &mut self.groups);
        let signature = signature_hash((pod.constraints.signature, placement));
        let requests = &pod.requests;
        // One lookup: Room weighs every pod of every overutilized node.
        let Room {
            slots,
            destinations,
            reachable,
            taken,
            need,
            ..
        } = self;
        let reach = reachable.entry(signature).or_insert_with(|| {
            let allowed = (0..destinations.len())
                .filter(|&i| {
                    pod.constraints.allows_node(destinations[i].node)
                        && ctx.may_run_on(pod, destinations[i].node)
                })
                .collect();
            Reachable::new(allowed, destinations, slots, taken.len())
        });
        need.clear();
        need.extend(slots.iter().map(|s| s.get(usage)));
        if reach
            .failed
            .iter()
            .any(|failed| failed.covers(need, requests))
        {
            return None;
        }
        reach.catch_up(taken, destinations, slots);
        let allowed = &reach.destinations;
        let from = reach.skip(need, requests);
        let found = reach.first(need, from, |at| {
            fits(slots, &destinations[allowed[at]], usage, requests)
        });
        match found {
            Some(at) => {
                let destination = allowed[at];
                reach.remember(need, requests, at);
                Some(destination)
            }
            None => {
                if reach.failed.len() < FAILED_KEPT {
                    reach.failed.push(Failed {
                        need: need.clone(),
                        requests: requests.clone(),
                    });
                }
                None
            }
        }
    }

    /// Why no destination takes `pod` for a move using `usage`: each destination's first reason,
    /// counted, in a sentence (`all 1,485 underutilized nodes carry node.kubernetes.io/not-ready:NoSchedule,
    /// which the pod does not tolerate`). Read once, for a pod [`Self::find`] found nothing for.
    pub(crate) fn diagnose(
        &self,
        pod: &PodInfo,
        usage: &Resources,
        ctx: &PlanContext<'s>,
        kind: &str,
    ) -> String {
        use crate::cluster::rules::matching::{HARD_EFFECTS, taint_string, untolerated};
        let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
        for destination in &self.destinations {
            let node = destination.node;
            let reason = if let Some(taint) =
                untolerated(&pod.constraints.tolerations, &node.taints, HARD_EFFECTS)
            {
                format!(
                    "carry {}, which the pod does not tolerate",
                    taint_string(taint)
                )
            } else if node.unschedulable || !node.ready || !node.problems.is_empty() {
                "are not ready or not schedulable".to_owned()
            } else if !pod.constraints.matches_node(node) {
                "are excluded by the pod's node selector or required affinity".to_owned()
            } else if !ctx.may_run_on(pod, node) {
                "are outside the policy's nodeSelector, or in a revocable zone closed to the pod"
                    .to_owned()
            } else if let Some(slot) = self
                .slots
                .iter()
                .position(|s| s.get(usage) > s.get(&destination.spare))
            {
                format!(
                    "have no room left for {} below the target",
                    self.resources[slot]
                )
            } else {
                "have not enough free for the pod's requests".to_owned()
            };
            *reasons.entry(reason).or_default() += 1;
        }
        let total = self.destinations.len();
        let mut ranked: Vec<(String, usize)> = reasons.into_iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        match ranked.as_slice() {
            [] => format!("there is no {kind} node"),
            [(reason, _)] => format!("all {} {kind} node(s) {reason}", thousands(total)),
            _ => {
                let parts: Vec<String> = ranked
                    .iter()
                    .take(3)
                    .map(|(reason, n)| format!("{} {reason}", thousands(*n)))
                    .collect();
                format!(
                    "of {} {kind} node(s), {}",
                    thousands(total),
                    parts.join("; ")
                )
            }
        }
    }

    /// Charges the destination `find` chose with a move that was admitted.
    pub(crate) fn take(&mut self, index: usize, pod: &PodInfo, usage: &Resources) {
        let destination = &mut self.destinations[index];
        for slot in &self.slots {
            let amount = slot.get(usage);
            let spare = slot.get(&destination.spare) - amount;
            slot.set(&mut destination.spare, spare);
            let total = slot.get(&self.total).saturating_sub(amount);
            slot.set(&mut self.total, total);
        }
        destination.free.sub(&pod.requests);
        self.taken.push(index);
        self.left = None;
    }

    /// `{why} cpu 1500m, memory 3Gi, pods 20; it fits node n7`: a move's reason, with the room left
    /// and the destination `find` chose. Written into one string: a reason is built for every move
    /// offered, tens of thousands per plan.
    pub(crate) fn reason(&mut self, why: &str, destination: usize) -> String {
        let Room {
            resources,
            slots,
            destinations,
            total,
            left,
            ..
        } = self;
        let left = left.get_or_insert_with(|| {
            let mut out = String::with_capacity(64);
            for (i, (r, slot)) in resources.iter().zip(slots.iter()).enumerate() {
                out.push_str(if i == 0 { " " } else { ", " });
                out.push_str(r);
                out.push(' ');
                crate::cluster::model::resources::write_amount(&mut out, r, slot.get(total));
            }
            out
        });
        let name = &destinations[destination].node.name;
        let mut out = String::with_capacity(why.len() + left.len() + name.len() + 15);
        out.push_str(why);
        out.push_str(left);
        out.push_str("; it fits node ");
        out.push_str(name);
        out
    }
}

/// `cpu 50%, memory 60%`.
pub(crate) fn describe_thresholds(thresholds: &Thresholds) -> String {
    thresholds
        .iter()
        .map(|(r, t)| format!("{r} {t:.0}%"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `1,485`: a count as people read it.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
