//! Pieces several strategies share: the per-strategy pod filter, victim order, owner-kind filters.

use std::{cmp::Reverse, sync::Arc};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::api::args::OwnerKinds;
use crate::{
    api::args::NamespaceFilter,
    cluster::{NodeState, PodBrief, PodInfo, QosClass, Resources, matching, resources},
    framework::{Admission, PlanContext},
};

/// Which pods a strategy looks at, on top of the policy's own namespace filter: the strategy's
/// `namespaces` and `labelSelector` arguments.
#[derive(Clone, Copy)]
pub(crate) struct Selection<'a> {
    pub namespaces: &'a NamespaceFilter,
    pub label_selector: Option<&'a LabelSelector>,
}

impl Selection<'_> {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if !self.namespaces.include.is_empty() && !self.namespaces.exclude.is_empty() {
            return Err("namespaces: set include or exclude, not both".to_owned());
        }
        match self.label_selector {
            Some(selector) => {
                matching::selector_is_valid(selector).map_err(|e| format!("labelSelector: {e}"))
            }
            None => Ok(()),
        }
    }

    /// Admits every pod, without reading any.
    pub(crate) fn admits_all(&self) -> bool {
        self.namespaces.include.is_empty()
            && self.namespaces.exclude.is_empty()
            && self.label_selector.is_none()
    }

    pub(crate) fn admits(&self, pod: &PodInfo) -> bool {
        self.namespaces.admits(&pod.key.namespace)
            && self
                .label_selector
                .is_none_or(|s| matching::selector_matches(s, &pod.labels))
    }
}

/// The order the descheduler evicts in: pods without a priority first, then by ascending priority;
/// within a priority BestEffort, Burstable, Guaranteed; then by name so that plans are reproducible.
pub(crate) fn victim_order(pod: &PodInfo) -> (Option<i32>, QosClass, &crate::cluster::ObjectKey) {
    (pod.priority, pod.qos, &pod.key)
}

/// [`victim_order`] as one number, for a pod at `position` among pods listed in key order: its priority
/// and QoS class (its brief's victim rank), then that position in place of the key. Keys are distinct,
/// so an unstable sort of them gives victim order, comparing integers rather than tuples (a sort per
/// overutilized node).
pub(crate) fn victim_key(brief: PodBrief, position: usize) -> u128 {
    u128::from(brief.victim_rank()) << 64 | position as u128
}

/// How many places ahead [`weighed_in_order`] asks for pods: enough to keep several misses in
/// flight, few enough that a node left early (back under its target) wastes little.
const PREFETCH_AHEAD: usize = 4;

/// A node's candidates in the order given, each asked for from memory a few places before it is
/// reached ([`PodInfo::prefetch_weighed`]): a balancing strategy weighs tens of thousands of pods per
/// plan, most of them in no cache, with little work on each.
pub(crate) fn weighed_in_order<'p, K>(
    pods: &'p [(K, &'p Arc<PodInfo>)],
) -> impl Iterator<Item = &'p Arc<PodInfo>> {
    for (_, pod) in pods.iter().take(PREFETCH_AHEAD) {
        pod.prefetch_weighed();
    }
    pods.iter().enumerate().map(|(at, (_, pod))| {
        if let Some((_, ahead)) = pods.get(at + PREFETCH_AHEAD) {
            ahead.prefetch_weighed();
        }
        *pod
    })
}

/// Oldest first (by creation), then by name: for age-based strategies.
pub(crate) fn oldest_first(pod: &PodInfo) -> (Option<jiff::Timestamp>, &crate::cluster::ObjectKey) {
    (pod.created_at, &pod.key)
}

/// Newest first, then by name: among interchangeable replicas, the one that has done the least work.
pub(crate) fn newest_first(
    pod: &PodInfo,
) -> (Reverse<Option<jiff::Timestamp>>, &crate::cluster::ObjectKey) {
    (Reverse(pod.created_at), &pod.key)
}

/// A bound pod a strategy may consider moving at all: not static, not finished, not on its way out.
/// Everything else (protections, budgets, ...) is for the gates to decide and report.
pub(crate) fn movable(pod: &PodInfo, ctx: &PlanContext<'_>) -> bool {
    // The brief holds the rule, so that strategies reading it from the pod maps decide alike.
    pod.brief().movable() && !ctx.planned_elsewhere(pod)
}

/// [`still_movable`] from a pod's brief ([`crate::cluster::PodMap::briefed`]), reading the pod itself
/// only if other policies plan evictions this cycle.
pub(crate) fn still_movable_briefed(
    pod: &PodInfo,
    brief: PodBrief,
    ctx: &PlanContext<'_>,
    admission: &dyn Admission,
) -> bool {
    brief.movable() && !ctx.planned_elsewhere(pod) && !admission.admitted(pod)
}

/// [`movable`], and not admitted for eviction earlier in this plan: what strategies that weigh pods
/// against each other (usage, counts, violations between pods) choose from. Strategies that judge each
/// pod on its own need not ask: the planner drops a pod that was decided before.
pub(crate) fn still_movable(
    pod: &PodInfo,
    ctx: &PlanContext<'_>,
    admission: &dyn Admission,
) -> bool {
    still_movable_briefed(pod, pod.brief(), ctx, admission)
}

impl OwnerKinds {
    pub(crate) fn validate(&self) -> Result<(), String> {
        if !self.include.is_empty() && !self.exclude.is_empty() {
            return Err("ownerKinds: set include or exclude, not both".to_owned());
        }
        Ok(())
    }

    pub(crate) fn admits(&self, pod: &PodInfo) -> bool {
        let has = |kinds: &[String]| pod.owner_kinds().any(|k| kinds.iter().any(|w| w == k));
        (self.include.is_empty() || has(&self.include)) && !has(&self.exclude)
    }
}

/// `5m`, `3h12m`, `2d4h`: an age for messages.
pub(crate) fn format_age(seconds: i64) -> String {
    let seconds = seconds.max(0);
    let (days, hours, minutes, secs) = (
        seconds / 86_400,
        seconds % 86_400 / 3_600,
        seconds % 3_600 / 60,
        seconds % 60,
    );
    match (days, hours, minutes) {
        (0, 0, 0) => format!("{secs}s"),
        (0, 0, m) => format!("{m}m{secs}s"),
        (0, h, m) => format!("{h}h{m}m"),
        (d, h, _) => format!("{d}d{h}h"),
    }
}

/// Seconds from `since` to `now`, if `since` is known.
pub(crate) fn seconds_since(since: Option<jiff::Timestamp>, now: jiff::Timestamp) -> Option<i64> {
    since.map(|t| now.as_second() - t.as_second())
}

/// The scheduler would place `pod` on `state`'s node as things stand: the node allows it (ready,
/// schedulable, selector, required affinity, hard taints), tidal's own placement rules do (revocable
/// zones), and its requests fit the node's free room. A node running a pod whose requests tidal
/// cannot read has unknown free room: it takes nothing.
pub(crate) fn fits_on(pod: &PodInfo, state: &NodeState, ctx: &PlanContext<'_>) -> bool {
    fits_on_after(pod, state, ctx, None)
}

/// [`fits_on`], with `reserved` (what moves planned earlier in this run will take there) added to the
/// node's requests.
pub(crate) fn fits_on_after(
    pod: &PodInfo,
    state: &NodeState,
    ctx: &PlanContext<'_>,
    reserved: Option<&Resources>,
) -> bool {
    state.load_known()
        && state.node.as_deref().is_some_and(|node| {
            if !(pod.constraints.allows_node(node) && ctx.may_run_on(pod, node)) {
                return false;
            }
            match reserved {
                None => resources::fits(&pod.requests, &node.allocatable, &state.requested),
                Some(reserved) => {
                    let mut requested = state.requested.clone();
                    requested.add(reserved);
                    resources::fits(&pod.requests, &node.allocatable, &requested)
                }
            }
        })
}

/// The first node other than the pod's own that `pod` fits on, by name.
pub(crate) fn fits_elsewhere<'s>(pod: &PodInfo, ctx: &PlanContext<'s>) -> Option<&'s str> {
    ctx.snapshot
        .nodes
        .iter()
        .find(|(name, state)| {
            Some(name.as_str()) != pod.node_name.as_deref() && fits_on(pod, state, ctx)
        })
        .map(|(name, _)| name.as_str())
}

#[cfg(test)]
mod tests {
    use super::{victim_key, victim_order};
    use crate::testkit::pod;

    #[test]
    fn victim_keys_sort_as_victim_order() {
        let mut pods = Vec::new();
        for (i, priority) in [
            None,
            Some(i32::MIN),
            Some(-10),
            Some(0),
            Some(7),
            Some(i32::MAX),
        ]
        .into_iter()
        .enumerate()
        {
            for qos in ["Guaranteed", "BestEffort", "Burstable"] {
                let mut builder = pod(&format!("a/p{i}-{qos}"), "n1").qos(qos);
                if let Some(priority) = priority {
                    builder = builder.priority(priority);
                }
                pods.push(builder.build());
            }
        }
        pods.sort_by(|a, b| a.key.cmp(&b.key));
        let mut by_key: Vec<usize> = (0..pods.len()).collect();
        by_key.sort_unstable_by_key(|&at| victim_key(pods[at].brief(), at));
        let mut by_order: Vec<usize> = (0..pods.len()).collect();
        by_order.sort_by(|&a, &b| victim_order(&pods[a]).cmp(&victim_order(&pods[b])));
        assert_eq!(by_key, by_order);
    }
}
