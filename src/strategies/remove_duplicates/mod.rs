//! removeDuplicates: spread pods of one owner (ReplicaSet, StatefulSet, Job, ...) that pile up on one
//! node, as happens after a node outage. Pods are duplicates when they share the owner and the same
//! container images. With `total` such pods and `n` nodes they could run on, a node keeps at most
//! `ceil(total / n)` of them; the newest extra ones are evicted.
//!
//! The pods of one owner need not share a placement (a patched selector, a rollout in progress), so
//! feasibility is decided per placement (constraints and what tidal's placement rules read), never
//! from one sample pod: the nodes the group could run on are those of every placement that could run
//! on two or more (as the descheduler counts them), and a pod is only evicted if its own placement
//! allows some other node.

pub mod args;

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    sync::Arc,
};

use crate::strategies::selection::{Selection, movable};
use crate::strategies::victim_order::newest_first;
use crate::{
    cluster::PodInfo,
    framework::{Balancing, Candidate, Gatekeeper, PlanContext, Plugin, StrategyId},
};
use args::RemoveDuplicatesArgs;

const ID: StrategyId = StrategyId::RemoveDuplicates;

pub(crate) struct RemoveDuplicates {
    args: RemoveDuplicatesArgs,
}

/// Owner UID and image set.
type GroupKey<'s> = (&'s str, u64);

/// One owner's duplicates by node.
type ByNode<'s> = BTreeMap<&'s str, Vec<&'s Arc<PodInfo>>>;

/// A pod's placement: its constraint signature and its placement-rule key. Pods with equal ones may
/// run on the same nodes.
type PlacementKey = (u64, u64);

fn placement(pod: &PodInfo, ctx: &PlanContext<'_>) -> PlacementKey {
    (pod.constraints.signature, ctx.placement_key(pod))
}

/// The nodes a pod of `pod`'s placement may run on: ready, schedulable, allowed by its selector,
/// affinity and taints, and by tidal's placement rules.
fn feasible_nodes<'s>(pod: &PodInfo, ctx: &PlanContext<'s>) -> BTreeSet<&'s str> {
    ctx.snapshot
        .nodes
        .values()
        .filter_map(|s| s.node.as_deref())
        .filter(|n| pod.constraints.allows_node(n) && ctx.may_run_on(pod, n))
        .map(|n| n.name.as_str())
        .collect()
}

impl RemoveDuplicates {
    pub(crate) fn new(args: RemoveDuplicatesArgs) -> Self {
        RemoveDuplicates { args }
    }

    fn selection(&self) -> Selection<'_> {
        Selection {
            namespaces: &self.args.namespaces,
            label_selector: None,
        }
    }
}

impl Plugin for RemoveDuplicates {
    fn id(&self) -> StrategyId {
        ID
    }

    fn validate(&self) -> Result<(), String> {
        self.selection().validate()
    }
}

impl Balancing for RemoveDuplicates {
    fn balance(&self, ctx: &PlanContext<'_>, gatekeeper: &mut dyn Gatekeeper) {
        let selection = self.selection();
        let mut groups: HashMap<GroupKey<'_>, ByNode<'_>> = HashMap::new();
        for (node, state) in &ctx.snapshot.nodes {
            for pod in state.pods.values() {
                let Some(owner) = &pod.owner else { continue };
                if pod.is_daemon_set_pod()
                    || !movable(pod, ctx)
                    || !selection.admits(pod)
                    || pod
                        .owner_kinds()
                        .any(|k| self.args.exclude_owner_kinds.iter().any(|w| w == k))
                {
                    continue;
                }
                groups
                    .entry((owner.uid.as_str(), pod.images_hash))
                    .or_default()
                    .entry(node.as_str())
                    .or_default()
                    .push(pod);
            }
        }
        // A replica evicted earlier in this plan leaves its node but is replaced somewhere: it counts
        // in the owner's total, not on its node. Counting it on the node would evict its neighbours
        // for a pile-up that is already being cleared; leaving it out of the total would shrink every
        // node's share and evict more than the pile-up.
        let has_duplicates = |nodes: &ByNode<'_>| nodes.values().any(|pods| pods.len() > 1);
        let mut with_duplicates: Vec<(usize, ByNode<'_>)> = groups
            .into_values()
            .filter(has_duplicates)
            .map(|mut nodes| {
                let total = nodes.values().map(Vec::len).sum();
                for pods in nodes.values_mut() {
                    pods.retain(|p| !gatekeeper.admitted(p));
                }
                (total, nodes)
            })
            .filter(|(_, nodes)| has_duplicates(nodes))
            .collect();
        // Deterministic order: by the first pod of each group.
        with_duplicates.sort_by_cached_key(|(_, nodes)| {
            nodes
                .values()
                .flatten()
                .map(|p| &p.key)
                .min()
                .cloned()
                .unwrap_or_default()
        });
        let mut feasible_by_placement: HashMap<PlacementKey, Arc<BTreeSet<&str>>> = HashMap::new();
        for (total, nodes) in with_duplicates {
            // The group's distinct placements (usually one), each with the nodes it may run on.
            let mut placements: Vec<Arc<BTreeSet<&str>>> = Vec::new();
            let mut seen: HashSet<PlacementKey> = HashSet::new();
            for pod in nodes.values().flatten() {
                let key = placement(pod, ctx);
                if seen.insert(key) {
                    let feasible = feasible_by_placement
                        .entry(key)
                        .or_insert_with(|| Arc::new(feasible_nodes(pod, ctx)));
                    // A placement that fits one node at most spreads nothing (the descheduler's rule).
                    if feasible.len() > 1 {
                        placements.push(Arc::clone(feasible));
                    }
                }
            }
            let feasible = match placements.as_slice() {
                [] => 0,
                [only] => only.len(),
                several => several
                    .iter()
                    .flat_map(|nodes| nodes.iter())
                    .collect::<BTreeSet<_>>()
                    .len(),
            };
            if feasible < 2 {
                continue;
            }
            let keep = total.div_ceil(feasible).max(1);
            for (node, mut pods) in nodes {
                let on_node = pods.len();
                if on_node <= keep {
                    continue;
                }
                let mut excess = on_node - keep;
                pods.sort_by(|a, b| newest_first(a).cmp(&newest_first(b)));
                for pod in pods {
                    if excess == 0 {
                        break;
                    }
                    if gatekeeper.protected(pod) {
                        continue;
                    }
                    // Its own placement must allow another node, or it would only come back
                    // pending (or here).
                    let elsewhere = feasible_by_placement
                        .get(&placement(pod, ctx))
                        .is_some_and(|nodes| nodes.iter().any(|n| *n != node));
                    if !elsewhere {
                        continue;
                    }
                    let reason = format!(
                        "node {node} runs {on_node} of the {total} pods of {}; at most {keep} per \
                         node ({total} pods over {feasible} feasible nodes)",
                        pod.job,
                    );
                    if gatekeeper.offer(Candidate::new(pod, ID, reason)) {
                        excess -= 1;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
