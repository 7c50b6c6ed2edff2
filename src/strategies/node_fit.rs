//! Whether the scheduler would place a pod on another node as things stand.

use crate::{
    cluster::{
        NodeState, PodInfo, Resources, model::resources, rules::anti_affinity::AntiAffinityFit,
    },
    framework::PlanContext,
};

/// The scheduler would place `pod` on `state`'s node as things stand: the node allows it (ready,
/// schedulable, selector, required affinity, hard taints), tidal's own placement rules do (revocable
/// zones), no required inter-pod anti-affinity forbids it there, and its requests fit the node's free
/// room. A node running a pod whose requests tidal cannot read has unknown free room: it takes nothing.
/// The descheduler's NodeFit (pkg/descheduler/node/node.go) with tidal's placement rules.
pub(crate) fn fits_on(
    pod: &PodInfo,
    state: &NodeState,
    ctx: &PlanContext<'_>,
    anti_affinity: &mut AntiAffinityFit,
) -> bool {
    fits_on_after(pod, state, ctx, None)
        && state
            .node
            .as_deref()
            .is_some_and(|node| anti_affinity.refuses(pod, node, ctx.snapshot).is_none())
}

/// [`fits_on`] but for anti-affinity, which callers check where they need it, with `reserved` (what
/// moves planned earlier in this run will take there) added to the node's requests.
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
pub(crate) fn fits_elsewhere<'s>(
    pod: &PodInfo,
    ctx: &PlanContext<'s>,
    anti_affinity: &mut AntiAffinityFit,
) -> Option<&'s str> {
    ctx.snapshot
        .nodes
        .iter()
        .find(|(name, state)| {
            Some(name.as_str()) != pod.node_name.as_deref()
                && fits_on(pod, state, ctx, anti_affinity)
        })
        .map(|(name, _)| name.as_str())
}
