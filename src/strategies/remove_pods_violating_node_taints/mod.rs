//! removePodsViolatingNodeTaints: evict pods that do not tolerate a `NoSchedule` taint of their node
//! (and, on request, a `PreferNoSchedule` one) — taints added after the pod was placed. `NoExecute`
//! taints are left to the kubelet's taint manager, which already evicts for them.

pub mod args;

use crate::strategies::selection::{Selection, movable};
use crate::{
    cluster::{Taint, rules::matching},
    framework::{Candidate, PlanContext, Plugin, PodByPod, StrategyId},
};
use args::NodeTaintsArgs;

const ID: StrategyId = StrategyId::NodeTaints;

pub(crate) struct NodeTaints {
    args: NodeTaintsArgs,
}

/// `key` matches every value of the key, `key=value` only that value.
fn taint_matches(pattern: &str, taint: &Taint) -> bool {
    match pattern.split_once('=') {
        Some((key, value)) => {
            taint.key == key && taint.value.as_deref().unwrap_or_default() == value
        }
        None => taint.key == pattern,
    }
}

impl NodeTaints {
    pub(crate) fn new(args: NodeTaintsArgs) -> Self {
        NodeTaints { args }
    }

    fn selection(&self) -> Selection<'_> {
        Selection {
            namespaces: &self.args.namespaces,
            label_selector: self.args.label_selector.as_ref(),
        }
    }

    fn counts(&self, taint: &Taint) -> bool {
        let effect_counts = taint.effect == "NoSchedule"
            || (self.args.include_prefer_no_schedule && taint.effect == "PreferNoSchedule");
        effect_counts
            && !self
                .args
                .excluded_taints
                .iter()
                .any(|p| taint_matches(p, taint))
            && (self.args.included_taints.is_empty()
                || self
                    .args
                    .included_taints
                    .iter()
                    .any(|p| taint_matches(p, taint)))
    }
}

impl Plugin for NodeTaints {
    fn id(&self) -> StrategyId {
        ID
    }

    fn validate(&self) -> Result<(), String> {
        self.selection().validate()?;
        if !self.args.excluded_taints.is_empty() && !self.args.included_taints.is_empty() {
            return Err("set excludedTaints or includedTaints, not both".to_owned());
        }
        Ok(())
    }
}

impl PodByPod for NodeTaints {
    fn propose(&self, ctx: &PlanContext<'_>) -> Vec<Candidate> {
        let mut out = Vec::new();
        let selection = self.selection();
        for state in ctx.snapshot.nodes.values() {
            let Some(node) = state.node.as_deref() else {
                continue;
            };
            let taints: Vec<&Taint> = node.taints.iter().filter(|t| self.counts(t)).collect();
            if taints.is_empty() {
                continue;
            }
            for pod in state.pods.values() {
                if !movable(pod, ctx) || !selection.admits(pod) {
                    continue;
                }
                let untolerated = taints.iter().find(|taint| {
                    !pod.constraints
                        .tolerations
                        .iter()
                        .any(|t| matching::tolerates(t, taint))
                });
                if let Some(taint) = untolerated {
                    out.push(Candidate::new(
                        pod,
                        ID,
                        format!(
                            "does not tolerate taint {} of node {}",
                            matching::taint_string(taint),
                            node.name
                        ),
                    ));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
