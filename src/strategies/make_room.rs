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

use std::{collections::HashMap, sync::Arc};

use super::shared::{format_age, seconds_since, still_movable, victim_order};
use crate::api::args::MakeRoomArgs;
use crate::{
    cluster::{NodeState, PodInfo, PodPhase, Resources, Setting},
    framework::{Balancing, Candidate, Exemptions, Gatekeeper, PlanContext, Plugin, StrategyId},
};

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
mod tests {
    use super::*;
    use crate::cluster::ObjectKey;
    use crate::testkit::*;

    const PREEMPTABLE: (&str, &str) = ("volcano.sh/preemptable", "true");
    const SPEC: &str = "mode: Evict\nstrategies:\n  makeRoomForPending: {}\ndefaults: {jobBudget: {maxUnavailable: 100}}\n";

    fn pending(name: &str, cpu: &str, since: &str) -> PodBuilder {
        pod(name, "").requests(cpu, "1Gi").status(
            "conditions",
            serde_json::json!([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                "lastTransitionTime": since}]),
        )
    }

    fn victim(name: &str, node: &str, cpu: &str) -> PodBuilder {
        pod(name, node)
            .requests(cpu, "1Gi")
            .label(PREEMPTABLE.0, PREEMPTABLE.1)
    }

    /// Two full 4-core nodes: n1 with preemptable pods of 1, 1 and 2 cores; n2 with 3 + 1 core.
    fn full() -> Cluster {
        Cluster::new()
            .node(node("n1").allocatable("4", "16Gi", 110))
            .node(node("n2").allocatable("4", "16Gi", 110))
            .node(node("rz").allocatable("8", "16Gi", 110).zone("rz1"))
            .pod(victim("a/v1", "n1", "1"))
            .pod(victim("a/v2", "n1", "1"))
            .pod(victim("a/v3", "n1", "2"))
            .pod(victim("a/w1", "n2", "3"))
            .pod(pod("a/steady", "n2").requests("1", "1Gi"))
            .pod(victim("a/rz-pod", "rz", "8"))
    }

    #[test]
    fn evicts_the_smallest_set_on_a_non_revocable_node() {
        let mut cluster = full().pod(pending("a/job", "3", "2026-11-22T03:00:00Z"));
        let out = cluster.plan(SPEC);
        // n1 needs v3 + one 1-core pod (2 evictions); n2 needs only w1 (1 eviction). The revocable node
        // is never used.
        assert_eq!(out.evicted(), ["a/w1"]);
        assert!(
            out.reason("a/w1")
                .contains("make room on node n2 for pending pod a/job")
        );
        let snapshot = cluster.cache.snapshot();
        let victims: Vec<_> = out
            .plan
            .evictions
            .iter()
            .map(|e| &e.candidate.pod)
            .collect();
        let pod = snapshot
            .unscheduled
            .get(&ObjectKey::new("a", "job"))
            .unwrap();
        assert!(fits_after(pod, snapshot.node("n2").unwrap(), &victims));
    }

    #[test]
    fn the_set_is_minimal() {
        let mut cluster = full()
            .pod(pod("a/pin", "n2").requests("100m", "1Gi"))
            .pod(pending("a/job", "2", "2026-11-22T03:00:00Z"));
        // n2 has 100m over its 4 cores... n1: need 2 cores: v3 alone (not v1 + v2).
        let out = cluster.plan(SPEC);
        assert_eq!(out.evicted(), ["a/v3"]);
    }

    #[test]
    fn nothing_happens_when_it_cannot_help_or_is_not_needed() {
        // Too big for any node even after evicting everything preemptable.
        let mut cluster = full().pod(pending("a/huge", "5", "2026-11-22T03:00:00Z"));
        assert!(cluster.plan(SPEC).evicted().is_empty());
        // Not pending long enough.
        let mut cluster = full().pod(pending("a/job", "3", "2026-11-22T03:58:00Z"));
        assert!(cluster.plan(SPEC).evicted().is_empty());
        // Preemptable pending pods never trigger it.
        let mut cluster = full()
            .pod(pending("a/job", "3", "2026-11-22T03:00:00Z").label(PREEMPTABLE.0, PREEMPTABLE.1));
        assert!(cluster.plan(SPEC).evicted().is_empty());
        // A selector no non-revocable node satisfies.
        let mut cluster = full().pod(
            pending("a/job", "3", "2026-11-22T03:00:00Z")
                .spec("nodeSelector", serde_json::json!({"gpu": "yes"})),
        );
        assert!(cluster.plan(SPEC).evicted().is_empty());
        // Fits somewhere already (a new empty node): something else keeps it pending.
        let mut cluster = full()
            .node(node("n3").allocatable("4", "16Gi", 110))
            .pod(pending("a/job", "3", "2026-11-22T03:00:00Z"));
        assert!(cluster.plan(SPEC).evicted().is_empty());
    }

    #[test]
    fn taints_exclude_nodes_and_gates_refuse_the_whole_set() {
        let mut cluster = Cluster::new()
            .node(
                node("n1")
                    .allocatable("4", "16Gi", 110)
                    .taint("dedicated", "x", "NoSchedule"),
            )
            .node(node("n2").allocatable("4", "16Gi", 110))
            .pod(victim("a/v1", "n1", "4"))
            .pod(victim("a/v2", "n2", "2"))
            .pod(victim("a/v3", "n2", "2").label("volcano.sh/cooldown-time", "48h"))
            .pod(pending("a/job", "4", "2026-11-22T03:00:00Z"));
        // n1 is tainted; n2 needs v2 and v3, but v3 is in cooldown: the pool has only v2, which is not
        // enough, so nothing is evicted (not even v2).
        let out = cluster.plan(SPEC);
        assert!(out.evicted().is_empty());
        // With a total limit of 1, the set of two is refused as a whole.
        let mut cluster = Cluster::new()
            .node(node("n2").allocatable("4", "16Gi", 110))
            .pod(victim("a/v2", "n2", "2"))
            .pod(victim("a/v3", "n2", "2"))
            .pod(pending("a/job", "4", "2026-11-22T03:00:00Z"));
        let out = cluster.plan(&format!("{SPEC}limits: {{total: 1}}\n"));
        assert!(out.evicted().is_empty());
        assert_eq!(out.skipped(), ["a/v3 limit"]);
        assert!(out.detail("a/v3").contains("none made"));
    }

    #[test]
    fn two_pending_pods_do_not_count_the_same_room() {
        let mut cluster = Cluster::new()
            .node(node("n1").allocatable("4", "16Gi", 110))
            .pod(victim("a/v1", "n1", "2"))
            .pod(victim("a/v2", "n1", "2"))
            .pod(pending("a/first", "2", "2026-11-22T02:00:00Z"))
            .pod(pending("a/second", "2", "2026-11-22T03:00:00Z"));
        let out = cluster.plan(SPEC);
        assert_eq!(
            out.evicted(),
            ["a/v1", "a/v2"],
            "one victim per pending pod"
        );
    }

    #[test]
    fn only_a_pending_pod_triggers_it() {
        // An unbound pod that failed (or succeeded) still carries its Unschedulable condition but will
        // never run: making room for it would evict for nothing.
        let failed = |phase: &str| {
            Cluster::new()
                .node(node("n1").allocatable("4", "16Gi", 110))
                .pod(victim("a/v1", "n1", "4"))
                .pod(pending("a/job", "2", "2026-11-22T02:00:00Z").phase(phase))
        };
        assert!(failed("Failed").plan(SPEC).evicted().is_empty());
        assert!(failed("Succeeded").plan(SPEC).evicted().is_empty());
        assert_eq!(failed("Pending").plan(SPEC).evicted(), ["a/v1"]);
    }

    #[test]
    fn room_freed_by_an_earlier_strategy_is_not_made_again() {
        // podLifeTime evicts the old 2-core pod: the pending pod will fit in the room it leaves, so the
        // preemptable pod stays (making room again would evict it too).
        let mut cluster = Cluster::new()
            .node(node("n1").allocatable("4", "16Gi", 110))
            .pod(
                pod("a/old", "n1")
                    .requests("2", "1Gi")
                    .created("2026-09-22T16:00:00Z"),
            )
            .pod(victim("a/spot", "n1", "2").created("2026-11-22T03:00:00Z"))
            .pod(pending("a/job", "2", "2026-11-22T02:00:00Z"));
        let out = cluster.plan(
            "mode: Evict\nstrategies:\n  podLifeTime: {maxPodLifeTimeSeconds: 86400}\n  makeRoomForPending: {}\ndefaults: {jobBudget: {maxUnavailable: 100}}\n",
        );
        assert_eq!(out.evicted(), ["a/old"]);
    }

    #[test]
    fn a_node_running_a_pod_with_unreadable_requests_is_not_made_room_on() {
        // n1 looks as if evicting v1 would free it, but another pod's request cannot be read (above
        // tidal's 2^52 cap): the node may be full whatever is evicted.
        let mut cluster = Cluster::new()
            .node(node("n1").allocatable("4", "16Gi", 110))
            .pod(victim("a/v1", "n1", "2"))
            .pod(pod("a/huge", "n1").requests("1", "5Pi"))
            .pod(pending("a/job", "3", "2026-11-22T02:00:00Z"));
        assert!(cluster.plan(SPEC).evicted().is_empty());
    }
}
