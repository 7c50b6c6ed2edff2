//! removePodsViolatingNodeTaints: evict pods that do not tolerate a `NoSchedule` taint of their node
//! (and, on request, a `PreferNoSchedule` one) — taints added after the pod was placed. `NoExecute`
//! taints are left to the kubelet's taint manager, which already evicts for them.

use super::shared::{Selection, movable};
use crate::api::args::NodeTaintsArgs;
use crate::{
    cluster::{Taint, rules::matching},
    framework::{Candidate, PlanContext, Plugin, PodByPod, StrategyId},
};

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
mod tests {
    use crate::testkit::*;
    use serde_json::json;

    fn cluster() -> Cluster {
        Cluster::new()
            .node(node("n1").allocatable("4", "8Gi", 110).taint("dedicated", "gpu", "NoSchedule"))
            .node(node("n2").allocatable("4", "8Gi", 110).taint("soft", "x", "PreferNoSchedule"))
            .node(node("n3").allocatable("4", "8Gi", 110).taint("gone", "x", "NoExecute"))
            .pod(pod("a/plain", "n1").requests("100m", "1Gi"))
            .pod(pod("a/tolerant", "n1").requests("100m", "1Gi").spec(
                "tolerations",
                json!([{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]),
            ))
            .pod(pod("a/wildcard", "n1").requests("100m", "1Gi").spec("tolerations", json!([{"operator": "Exists"}])))
            .pod(pod("a/soft", "n2").requests("100m", "1Gi"))
            .pod(pod("a/noexec", "n3").requests("100m", "1Gi"))
            .pod(pod("a/ds", "n1").requests("100m", "1Gi").owned_by("DaemonSet", "agent"))
            .pod(pod("a/done", "n1").requests("100m", "1Gi").phase("Succeeded"))
    }

    #[test]
    fn evicts_only_untolerated_no_schedule_by_default() {
        let out = cluster().plan("mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints: {}\n");
        assert_eq!(out.evicted(), ["a/plain"]);
        assert_eq!(
            out.skipped(),
            ["a/ds protected"],
            "DaemonSet pods are protected"
        );
        assert!(out.reason("a/plain").contains("dedicated=gpu:NoSchedule"));
    }

    #[test]
    fn prefer_no_schedule_on_request() {
        let out = cluster().plan(
            "mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints: {includePreferNoSchedule: true}\n",
        );
        assert_eq!(out.evicted(), ["a/plain", "a/soft"]);
    }

    #[test]
    fn excluded_and_included_taints() {
        let out = cluster().plan(
            "mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints: {excludedTaints: [dedicated]}\n",
        );
        assert!(out.evicted().is_empty());
        let out = cluster().plan(
            "mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints: {excludedTaints: [dedicated=cpu]}\n",
        );
        assert_eq!(
            out.evicted(),
            ["a/plain"],
            "key=value excludes that value only"
        );
        let out = cluster().plan(
            "mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints:\n    includedTaints: [soft]\n    includePreferNoSchedule: true\n",
        );
        assert_eq!(out.evicted(), ["a/soft"]);
        let out = cluster().plan(
            "mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints: {includedTaints: [a], excludedTaints: [b]}\n",
        );
        assert!(out.error().is_some_and(|e| e.contains("not both")));
    }

    #[test]
    fn daemon_set_protection_can_be_lifted() {
        let out = cluster().plan(
            "mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints: {}\nprotections: {daemonSetPods: false}\n",
        );
        assert_eq!(out.evicted(), ["a/ds", "a/plain"]);
    }
}
