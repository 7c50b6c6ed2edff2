//! removePodsViolatingNodeAffinity: evict pods whose node no longer satisfies their node affinity.
//!
//! - `requiredDuringSchedulingIgnoredDuringExecution`: the node no longer matches the pod's required
//!   affinity or node selector, and another node would take the pod (otherwise evicting it only makes it
//!   pending). With `nodeSelectorAsRequired: false`, only pods with required affinity terms, as in
//!   the descheduler.
//! - `preferredDuringSchedulingIgnoredDuringExecution`: another node that would take the pod scores
//!   strictly higher on the pod's preferred terms than its current node.

pub mod args;

use crate::cluster::rules::anti_affinity::AntiAffinityFit;
use crate::framework::{Candidate, PlanContext, Plugin, PodByPod, StrategyId};
use crate::strategies::node_fit::{fits_elsewhere, fits_on};
use crate::strategies::selection::{Selection, movable};
use args::{AffinityType, NodeAffinityArgs};

const ID: StrategyId = StrategyId::NodeAffinity;

const REQUIRED: &str = "requiredDuringSchedulingIgnoredDuringExecution";
const PREFERRED: &str = "preferredDuringSchedulingIgnoredDuringExecution";

pub(crate) struct NodeAffinity {
    args: NodeAffinityArgs,
}

impl NodeAffinity {
    pub(crate) fn new(args: NodeAffinityArgs) -> Self {
        NodeAffinity { args }
    }

    fn selection(&self) -> Selection<'_> {
        Selection {
            namespaces: &self.args.namespaces,
            label_selector: self.args.label_selector.as_ref(),
        }
    }
}

impl Plugin for NodeAffinity {
    fn id(&self) -> StrategyId {
        ID
    }

    fn validate(&self) -> Result<(), String> {
        self.selection().validate()
    }
}

impl PodByPod for NodeAffinity {
    fn propose(&self, ctx: &PlanContext<'_>) -> Vec<Candidate> {
        let required = self
            .args
            .node_affinity_type
            .contains(&AffinityType::Required);
        let preferred = self
            .args
            .node_affinity_type
            .contains(&AffinityType::Preferred);
        let selection = self.selection();
        let mut out = Vec::new();
        // The descheduler's plugin asks its NodeFit (PodFitsAnyNode), anti-affinity included.
        let mut anti_affinity = AntiAffinityFit::default();
        for state in ctx.snapshot.nodes.values() {
            let Some(node) = state.node.as_deref() else {
                continue;
            };
            for pod in state.pods.values() {
                if !movable(pod, ctx) || !selection.admits(pod) {
                    continue;
                }
                let placement = &pod.constraints;
                let has_required =
                    placement.required.is_some() || self.args.node_selector_as_required;
                if required && has_required && !placement.matches_node(node) {
                    if let Some(other) = fits_elsewhere(pod, ctx, &mut anti_affinity) {
                        out.push(Candidate::new(
                            pod,
                            ID,
                            format!(
                                "node {} no longer satisfies the pod's node selector or {REQUIRED}; \
                                 node {other} would",
                                node.name
                            ),
                        ));
                    }
                    continue;
                }
                if preferred && !placement.preferred.is_empty() {
                    let current = placement.preferred_score(node);
                    if current >= placement.max_preferred_score() {
                        continue;
                    }
                    let better = ctx.snapshot.nodes.iter().find_map(|(name, other)| {
                        let score = other
                            .node
                            .as_deref()
                            .map(|n| placement.preferred_score(n))?;
                        (name != &node.name
                            && score > current
                            && fits_on(pod, other, ctx, &mut anti_affinity))
                        .then_some((name, score))
                    });
                    if let Some((name, score)) = better {
                        out.push(Candidate::new(
                            pod,
                            ID,
                            format!(
                                "{PREFERRED} scores {current} on node {} but {score} on node {name}",
                                node.name
                            ),
                        ));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
