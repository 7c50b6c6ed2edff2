//! removePodsViolatingInterPodAntiAffinity: evict pods whose required pod anti-affinity is violated —
//! another pod their terms select runs in the same topology domain (typically because the rule was
//! added after both were placed). Pods are taken lowest priority first, and once one is evicted it no
//! longer counts against the others, so of two pods that repel each other only one goes.

pub mod args;

use std::{collections::HashMap, sync::Arc};

use k8s_openapi::{
    api::core::v1::PodAffinityTerm,
    apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement},
};

use crate::strategies::selection::{Selection, still_movable};
use crate::strategies::victim_order::victim_order;
use crate::{
    cluster::{
        ObjectKey, PodInfo,
        rules::{anti_affinity::DomainPods, matching},
    },
    framework::{Balancing, Candidate, Gatekeeper, PlanContext, Plugin, StrategyId},
};
use args::AntiAffinityArgs;

const ID: StrategyId = StrategyId::InterPodAntiAffinity;

pub(crate) struct AntiAffinity {
    args: AntiAffinityArgs,
}

/// The term's selector with `matchLabelKeys` (`In` the pod's value) and `mismatchLabelKeys` (`NotIn`).
fn effective_selector(term: &PodAffinityTerm, pod: &PodInfo) -> Option<LabelSelector> {
    let mut selector = term.label_selector.clone()?;
    for (keys, operator) in [
        (&term.match_label_keys, "In"),
        (&term.mismatch_label_keys, "NotIn"),
    ] {
        for key in keys.iter().flatten() {
            if let Some(value) = pod.labels.get(key) {
                selector
                    .match_expressions
                    .get_or_insert_with(Vec::new)
                    .push(LabelSelectorRequirement {
                        key: key.clone(),
                        operator: operator.to_owned(),
                        values: Some(vec![value.to_owned()]),
                    });
            }
        }
    }
    Some(selector)
}

/// Nodes and their pods by topology value, per topology key, built on first use.
#[derive(Default)]
struct Domains {
    by_key: HashMap<String, HashMap<String, DomainPods>>,
}

impl Domains {
    fn pods(&mut self, ctx: &PlanContext<'_>, key: &str, value: &str) -> Option<&DomainPods> {
        let index = (self.by_key.entry(key.to_owned()))
            .or_insert_with(|| DomainPods::by_value(ctx.snapshot, key));
        index.get(value)
    }
}

impl AntiAffinity {
    pub(crate) fn new(args: AntiAffinityArgs) -> Self {
        AntiAffinity { args }
    }

    fn selection(&self) -> Selection<'_> {
        Selection {
            namespaces: &self.args.namespaces,
            label_selector: self.args.label_selector.as_ref(),
        }
    }

    /// The first pod that `pod`'s anti-affinity terms forbid in its topology domain, with the term's key.
    fn violation(
        ctx: &PlanContext<'_>,
        domains: &mut Domains,
        pod: &PodInfo,
        gatekeeper: &dyn Gatekeeper,
    ) -> Option<(ObjectKey, String)> {
        let node = ctx
            .snapshot
            .node(pod.node_name.as_deref()?)?
            .node
            .as_deref()?;
        for term in &pod.constraints.anti_affinity {
            let Some(value) = node.labels.get(&term.topology_key) else {
                continue;
            };
            let Some(selector) = effective_selector(term, pod) else {
                continue;
            };
            if matching::selector_is_valid(&selector).is_err() {
                continue;
            }
            let listed = term.namespaces.as_deref().unwrap_or_default();
            let namespace_selector = term.namespace_selector.as_ref();
            let in_scope = |namespace: &str| {
                if listed.is_empty() && namespace_selector.is_none() {
                    return namespace == pod.key.namespace;
                }
                listed.iter().any(|n| n == namespace)
                    || namespace_selector.is_some_and(|s| {
                        ctx.snapshot
                            .namespaces
                            .get(namespace)
                            .is_some_and(|ns| matching::selector_matches(s, &ns.labels))
                    })
            };
            let Some(domain) = domains.pods(ctx, &term.topology_key, value) else {
                continue;
            };
            // Cheapest and most selective tests first: this runs for every pod the selector may
            // select in the domain.
            let found = domain.candidates(Some(&selector)).find(|other| {
                in_scope(&other.key.namespace)
                    && matching::selector_matches(&selector, &other.labels)
                    && other.key != pod.key
                    && !other.phase.is_finished()
                    && !ctx.is_gone(other, gatekeeper)
            });
            if let Some(other) = found {
                return Some((other.key.clone(), format!("{}={value}", term.topology_key)));
            }
        }
        None
    }
}

impl Plugin for AntiAffinity {
    fn id(&self) -> StrategyId {
        ID
    }

    fn validate(&self) -> Result<(), String> {
        self.selection().validate()
    }
}

impl Balancing for AntiAffinity {
    fn balance(&self, ctx: &PlanContext<'_>, gatekeeper: &mut dyn Gatekeeper) {
        let selection = self.selection();
        let mut pods: Vec<&Arc<PodInfo>> = ctx
            .snapshot
            .nodes
            .values()
            .flat_map(|n| n.pods.values())
            .filter(|p| {
                !p.constraints.anti_affinity.is_empty() && still_movable(p, ctx, gatekeeper)
            })
            .collect();
        pods.sort_by(|a, b| victim_order(a).cmp(&victim_order(b)));
        let mut domains = Domains::default();
        for pod in pods {
            if !selection.admits(pod) {
                continue;
            }
            // Evictions admitted so far (by this strategy or an earlier one) no longer count against
            // the others: of two pods that repel each other, only one goes.
            let Some((other, domain)) = Self::violation(ctx, &mut domains, pod, gatekeeper) else {
                continue;
            };
            let reason = format!("required pod anti-affinity violated by {other} (same {domain})");
            gatekeeper.offer(Candidate::new(pod, ID, reason));
        }
    }
}

#[cfg(test)]
mod tests;
