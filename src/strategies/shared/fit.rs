//! Whether the scheduler would place a pod on another node as things stand.

use crate::{
    cluster::{NodeState, PodInfo, Resources, model::resources},
    framework::PlanContext,
};

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
