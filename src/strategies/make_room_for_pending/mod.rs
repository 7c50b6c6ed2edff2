//! makeRoomForPending (Volcano TDM's preemptable function): when a pod that is not preemptable has been
//! unschedulable for longer than `pendingFor`, evict preemptable pods from one non-revocable node so
//! that it fits there.
//!
//! Nothing is evicted unless a simulated fit shows the evictions make the pod fit: the node is ready and
//! schedulable, the pod's node selector, required affinity and tolerations allow it, and after removing
//! the chosen pods its requests fit the node's free room. If the pod already fits some node without any
//! eviction, something else keeps it pending and nothing is evicted for it. Of all nodes, the one that
//! needs the fewest evictions wins (then the lowest total priority, then the node name), and the set is
//! minimal: no chosen pod could be spared. The set is offered to the gates as a whole — all evictions or
//! none. Preemptable pending pods never trigger this: they are the ones that make way.

pub mod args;

use std::{collections::HashMap, sync::Arc};

use crate::strategies::pod_age::{format_age, seconds_since};
use crate::strategies::selection::still_movable;
use crate::strategies::victim_order::victim_order;
use crate::{
    cluster::{NodeState, PodInfo, PodPhase, Resources, Setting},
    framework::{Balancing, Candidate, Exemptions, Gatekeeper, PlanContext, Plugin, StrategyId},
};
use args::MakeRoomArgs;

const ID: StrategyId = StrategyId::MakeRoomForPending;

/// The victims must leave this node for the pending pod, wherever they go next.
const MUST_LEAVE: Exemptions = Exemptions {
    node_fit: true,
    switchable_protections: false,
    bare_pod: false,
    budget: false,
};

/// How many times a pending pod's choice is redone after the gates refused a member of the set.
const ATTEMPTS: usize = 3;

pub(crate) struct MakeRoom {
    args: MakeRoomArgs,
}

/// Requests on each node as this run sees it: without the pods that are gone (leaving, or admitted
/// earlier in this plan, by another strategy or by this one), with the pending pods this run made room
/// for (which will take that room). Read on first use of a node and kept up to date from then on.
#[derive(Default)]
struct Ledger<'s> {
    requested: HashMap<&'s str, Resources>,
}

impl<'s> Ledger<'s> {
    fn requested(
        &mut self,
        ctx: &PlanContext<'s>,
        gatekeeper: &dyn Gatekeeper,
        name: &'s str,
        state: &NodeState,
    ) -> &Resources {
        self.requested.entry(name).or_insert_with(|| {
            let mut requested = state.requested.clone();
            for pod in state.pods.values() {
                if pod.holds_resources() && ctx.is_gone(pod, gatekeeper) {
                    requested.sub(&pod.requests);
                }
            }
            requested
        })
    }
}

/// A node's eviction plan for one pending pod.
struct Choice<'s> {
    node: &'s str,
    victims: Vec<&'s Arc<PodInfo>>,
    priority_sum: i64,
}

/// What is still missing on a node for `requests`: positive parts of `requests - free`.
fn shortfall(requests: &Resources, allocatable: &Resources, requested: &Resources) -> Resources {
    let mut need = Resources::default();
    for name in requests.names() {
        let free = allocatable.get(name).saturating_sub(requested.get(name));
        let missing = requests.get(name).saturating_sub(free);
        if missing > 0 {
            need.set(name, missing);
        }
    }
    need
}

fn covered(need: &Resources, freed: &Resources) -> bool {
    need.names().all(|name| freed.get(name) >= need.get(name))
}

/// A small set of pods from `pool` (in its order) whose requests cover `need`: repeatedly the pod that
/// covers the largest share of what is still missing, then every pod that turns out to be redundant is
/// dropped again, so that no member could be spared.
fn choose<'s>(need: &Resources, pool: &[&'s Arc<PodInfo>]) -> Option<Vec<&'s Arc<PodInfo>>> {
    let mut freed = Resources::default();
    let mut chosen: Vec<&Arc<PodInfo>> = Vec::new();
    let mut used = vec![false; pool.len()];
    while !covered(need, &freed) {
        let mut best: Option<(usize, f64)> = None;
        for (i, pod) in pool.iter().enumerate() {
            if used[i] {
                continue;
            }
            let share: f64 = need
                .names()
                .map(|name| {
                    let missing = (need.get(name) - freed.get(name)).max(0);
                    if missing == 0 {
                        return 0.0;
                    }
                    pod.requests.get(name).min(missing) as f64 / need.get(name) as f64
                })
                .sum();
            if share > 0.0 && best.is_none_or(|(_, b)| share > b) {
                best = Some((i, share));
            }
        }
        let (index, _) = best?;
        used[index] = true;
        chosen.push(pool[index]);
        freed.add(&pool[index].requests);
    }
    for i in (0..chosen.len()).rev() {
        let mut without = freed.clone();
        without.sub(&chosen[i].requests);
        if covered(need, &without) {
            freed = without;
            chosen.remove(i);
        }
    }
    Some(chosen)
}

impl MakeRoom {
    pub(crate) fn new(args: MakeRoomArgs) -> Self {
        MakeRoom { args }
    }

    /// Pending pods to help, best first, with how long each has been unschedulable.
    fn pending<'s>(&self, ctx: &PlanContext<'s>) -> Vec<(&'s Arc<PodInfo>, i64)> {
        let grace = i64::try_from(self.args.pending_for.as_std().as_secs()).unwrap_or(i64::MAX);
        let mut pending: Vec<(&Arc<PodInfo>, i64)> = ctx
            .snapshot
            .unscheduled
            .values()
            .filter(|p| {
                // Only a pod the scheduler is still trying to place: an unbound pod that failed or
                // succeeded will never run, and making room for it would evict for nothing.
                p.phase == PodPhase::Pending
                    && !p.terminating
                    && p.problems().is_empty()
                    && self.args.namespaces.admits(&p.key.namespace)
                    && ctx.preemptable(p) == Setting::Valid(false)
            })
            .filter_map(|p| {
                let waited = seconds_since(p.status.unschedulable_since(), ctx.now)?;
                (waited >= grace).then_some((p, waited))
            })
            .collect();
        pending.sort_by(|(a, wa), (b, wb)| {
            b.priority_or_zero()
                .cmp(&a.priority_or_zero())
                .then(wb.cmp(wa))
                .then_with(|| a.key.cmp(&b.key))
        });
        pending
    }

    /// The preemptable pods of a node (in victim order) and their total requests, computed once per run.
    fn preemptable<'s, 'p>(
        ctx: &PlanContext<'s>,
        gatekeeper: &dyn Gatekeeper,
        name: &'s str,
        state: &'s NodeState,
        pools: &'p mut HashMap<&'s str, Pool<'s>>,
    ) -> &'p Pool<'s> {
        pools.entry(name).or_insert_with(|| {
            let mut pods: Vec<&Arc<PodInfo>> = state
                .pods
                .values()
                .filter(|p| {
                    p.holds_resources()
                        && still_movable(p, ctx, gatekeeper)
                        && ctx.preemptable(p) == Setting::Valid(true)
                })
                .collect();
            pods.sort_by(|a, b| victim_order(a).cmp(&victim_order(b)));
            let mut total = Resources::default();
            for pod in &pods {
                total.add(&pod.requests);
            }
            Pool { pods, total }
        })
    }

    /// The best node and set of evictions for `pending`, or `None` (with no eviction needed when the
    /// pod already fits somewhere).
    fn plan_for<'s>(
        &self,
        ctx: &PlanContext<'s>,
        pending: &PodInfo,
        ledger: &mut Ledger<'s>,
        pools: &mut HashMap<&'s str, Pool<'s>>,
        gatekeeper: &mut dyn Gatekeeper,
    ) -> Option<Choice<'s>> {
        let mut best: Option<Choice<'s>> = None;
        let mut needs: Vec<(&'s str, Resources)> = Vec::new();
        for (name, state) in &ctx.snapshot.nodes {
            let Some(node) = state.node.as_deref() else {
                continue;
            };
            // A node whose load tidal cannot read may be fuller than it looks: never the one room is
            // made on.
            if node.revocable_zone.is_some()
                || !state.load_known()
                || !pending.constraints.allows_node(node)
            {
                continue;
            }
            let requested = ledger.requested(ctx, gatekeeper, name, state);
            let need = shortfall(&pending.requests, &node.allocatable, requested);
            if need == Resources::default() {
                // It fits here already (or will, once the pods already leaving are gone): evicting for
                // it would not help.
                return None;
            }
            // Even evicting every preemptable pod would not be enough: no need to ask the gates.
            if covered(
                &need,
                &Self::preemptable(ctx, gatekeeper, name, state, pools).total,
            ) {
                needs.push((name.as_str(), need));
            }
        }
        for (name, need) in needs {
            let Some(pool) = pools.get(name) else {
                continue;
            };
            let admissible: Vec<&Arc<PodInfo>> = pool
                .pods
                .iter()
                .copied()
                .filter(|p| {
                    !gatekeeper.decided(p)
                        && gatekeeper
                            .would_admit(&Candidate::new(p, ID, String::new()).exempt(MUST_LEAVE))
                })
                .collect();
            let Some(victims) = choose(&need, &admissible) else {
                continue;
            };
            if self
                .args
                .max_victims_per_pod
                .is_some_and(|max| victims.len() > max as usize)
            {
                continue;
            }
            let priority_sum = victims
                .iter()
                .map(|p| i64::from(p.priority_or_zero()))
                .sum();
            let better = best
                .as_ref()
                .is_none_or(|b| (victims.len(), priority_sum) < (b.victims.len(), b.priority_sum));
            if better {
                best = Some(Choice {
                    node: name,
                    victims,
                    priority_sum,
                });
            }
        }
        best
    }
}

/// A node's preemptable pods.
struct Pool<'s> {
    pods: Vec<&'s Arc<PodInfo>>,
    total: Resources,
}

impl Plugin for MakeRoom {
    fn id(&self) -> StrategyId {
        ID
    }

    fn validate(&self) -> Result<(), String> {
        if self.args.max_pending_pods == 0 {
            return Err("maxPendingPods must be at least 1".to_owned());
        }
        if !self.args.namespaces.include.is_empty() && !self.args.namespaces.exclude.is_empty() {
            return Err("namespaces: set include or exclude, not both".to_owned());
        }
        Ok(())
    }
}

impl Balancing for MakeRoom {
    fn balance(&self, ctx: &PlanContext<'_>, gatekeeper: &mut dyn Gatekeeper) {
        let mut ledger = Ledger::default();
        let mut pools = HashMap::new();
        let pending = self.pending(ctx);
        for (pod, waited) in pending
            .into_iter()
            .take(self.args.max_pending_pods as usize)
        {
            for _ in 0..ATTEMPTS {
                let Some(choice) = self.plan_for(ctx, pod, &mut ledger, &mut pools, gatekeeper)
                else {
                    break;
                };
                let reason = format!(
                    "make room on node {} for pending pod {} (unschedulable for {}, requests {}): \
                     {} preemptable pod(s) evicted together",
                    choice.node,
                    pod.key,
                    format_age(waited),
                    crate::cluster::model::resources::describe(&pod.requests),
                    choice.victims.len()
                );
                let candidates: Vec<Candidate> = choice
                    .victims
                    .iter()
                    .map(|v| Candidate::new(v, ID, reason.clone()).exempt(MUST_LEAVE))
                    .collect();
                if gatekeeper.offer_all(candidates) {
                    // `plan_for` read this node's requests before the victims were admitted, so they
                    // are taken off here, once.
                    if let Some(requested) = ledger.requested.get_mut(choice.node) {
                        for victim in &choice.victims {
                            requested.sub(&victim.requests);
                        }
                        requested.add(&pod.requests);
                    }
                    break;
                }
            }
        }
    }
}

/// The simulated fit, for tests of the property that evictions always make the pod fit.
#[cfg(test)]
fn fits_after(pending: &PodInfo, state: &NodeState, victims: &[&Arc<PodInfo>]) -> bool {
    let Some(node) = state.node.as_deref() else {
        return false;
    };
    let mut requested = state.requested.clone();
    for victim in victims {
        requested.sub(&victim.requests);
    }
    pending.constraints.allows_node(node)
        && crate::cluster::model::resources::fits(&pending.requests, &node.allocatable, &requested)
}

#[cfg(test)]
mod tests;
