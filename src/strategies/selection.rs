//! Which pods a strategy may look at: its own namespace and label filters, owner kinds, and whether a
//! pod can be moved at all before the gates weigh it.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::strategies::victim_order::victim_order;
use crate::{
    api::pod_filters::{NamespaceFilter, OwnerKinds},
    cluster::{PodBrief, PodInfo, rules::matching},
    framework::{Gatekeeper, PlanContext},
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

    /// Of `pods` (one node's), those it admits that can still be moved, in the order victims are
    /// taken ([`super::victim_order::victim_order`]).
    pub(crate) fn movable_in_victim_order<'p>(
        &self,
        pods: impl Iterator<Item = &'p Arc<PodInfo>>,
        ctx: &PlanContext<'_>,
        gatekeeper: &dyn Gatekeeper,
    ) -> Vec<&'p Arc<PodInfo>> {
        let mut pods: Vec<&Arc<PodInfo>> = pods
            .filter(|p| still_movable(p, ctx, gatekeeper) && self.admits(p))
            .collect();
        pods.sort_by(|a, b| victim_order(a).cmp(&victim_order(b)));
        pods
    }
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
    gatekeeper: &dyn Gatekeeper,
) -> bool {
    brief.movable() && !ctx.planned_elsewhere(pod) && !gatekeeper.admitted(pod)
}

/// [`movable`], and not admitted for eviction earlier in this plan: what strategies that weigh pods
/// against each other (usage, counts, violations between pods) choose from. Strategies that judge each
/// pod on its own need not ask: the planner drops a pod that was decided before.
pub(crate) fn still_movable(
    pod: &PodInfo,
    ctx: &PlanContext<'_>,
    gatekeeper: &dyn Gatekeeper,
) -> bool {
    still_movable_briefed(pod, pod.brief(), ctx, gatekeeper)
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
