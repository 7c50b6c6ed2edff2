//! removePodsHavingTooManyRestarts: evict pods whose containers restarted at least `podRestartThreshold`
//! times in all (a volume that never attaches, a node-local fault): another node may do better.

use super::shared::{Selection, movable};
use crate::api::args::{RestartState, TooManyRestartsArgs};
use crate::{
    cluster::{ContainerScope, PodPhase},
    framework::{Candidate, PlanContext, Plugin, PodByPod, StrategyId},
};

const ID: StrategyId = StrategyId::TooManyRestarts;

pub(crate) struct TooManyRestarts {
    args: TooManyRestartsArgs,
}

impl TooManyRestarts {
    pub(crate) fn new(args: TooManyRestartsArgs) -> Self {
        TooManyRestarts { args }
    }

    fn selection(&self) -> Selection<'_> {
        Selection {
            namespaces: &self.args.namespaces,
            label_selector: self.args.label_selector.as_ref(),
        }
    }
}

impl Plugin for TooManyRestarts {
    fn id(&self) -> StrategyId {
        ID
    }

    fn validate(&self) -> Result<(), String> {
        if self.args.pod_restart_threshold < 1 {
            return Err("podRestartThreshold must be at least 1".to_owned());
        }
        self.selection().validate()
    }
}

impl PodByPod for TooManyRestarts {
    fn propose(&self, ctx: &PlanContext<'_>) -> Vec<Candidate> {
        let scope = ContainerScope {
            init: self.args.including_init_containers,
            ephemeral: false,
        };
        let selection = self.selection();
        let mut out = Vec::new();
        for pod in ctx.snapshot.nodes.values().flat_map(|n| n.pods.values()) {
            if !movable(pod, ctx) || !selection.admits(pod) {
                continue;
            }
            let restarts: i64 = pod
                .status
                .containers_in(scope)
                .map(|c| i64::from(c.restarts.max(0)))
                .sum();
            if restarts < i64::from(self.args.pod_restart_threshold) {
                continue;
            }
            let in_state = self.args.states.is_empty()
                || self.args.states.iter().any(|state| match state {
                    RestartState::Running => pod.phase == PodPhase::Running,
                    RestartState::CrashLoopBackOff => pod
                        .status
                        .containers_in(scope)
                        .any(|c| c.waiting.as_deref() == Some("CrashLoopBackOff")),
                });
            if in_state {
                out.push(Candidate::new(
                    pod,
                    ID,
                    format!(
                        "{restarts} container restarts (threshold {})",
                        self.args.pod_restart_threshold
                    ),
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::*;
    use serde_json::json;

    fn statuses(restarts: &[i32], waiting: Option<&str>) -> serde_json::Value {
        json!(restarts
            .iter()
            .map(|r| {
                let state = match waiting {
                    Some(reason) => json!({"waiting": {"reason": reason}}),
                    None => json!({"running": {}}),
                };
                json!({"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": r, "state": state})
            })
            .collect::<Vec<_>>())
    }

    fn cluster() -> Cluster {
        Cluster::new()
            .node(node("n1").allocatable("4", "8Gi", 110))
            .pod(
                pod("a/many", "n1")
                    .requests("100m", "1Gi")
                    .status("containerStatuses", statuses(&[3, 2], None)),
            )
            .pod(
                pod("a/few", "n1")
                    .requests("100m", "1Gi")
                    .status("containerStatuses", statuses(&[4], None)),
            )
            .pod(
                pod("a/crashing", "n1")
                    .requests("100m", "1Gi")
                    .phase("Running")
                    .status(
                        "containerStatuses",
                        statuses(&[9], Some("CrashLoopBackOff")),
                    ),
            )
            .pod(
                pod("a/init", "n1")
                    .requests("100m", "1Gi")
                    .status("containerStatuses", statuses(&[1], None))
                    .status("initContainerStatuses", statuses(&[8], None)),
            )
    }

    #[test]
    fn threshold_counts_app_containers_and_optionally_init_containers() {
        let out = cluster().plan(
            "mode: Evict\nstrategies:\n  removePodsHavingTooManyRestarts: {podRestartThreshold: 5}\n",
        );
        assert_eq!(out.evicted(), ["a/crashing", "a/many"]);
        let out = cluster().plan(
            "mode: Evict\nstrategies:\n  removePodsHavingTooManyRestarts: {podRestartThreshold: 5, includingInitContainers: true}\n",
        );
        assert_eq!(out.evicted(), ["a/crashing", "a/init", "a/many"]);
    }

    #[test]
    fn states_filter() {
        let out = cluster().plan(
            "mode: Evict\nstrategies:\n  removePodsHavingTooManyRestarts: {podRestartThreshold: 5, states: [CrashLoopBackOff]}\n",
        );
        assert_eq!(out.evicted(), ["a/crashing"]);
    }

    #[test]
    fn zero_threshold_is_refused() {
        let out = cluster().plan(
            "mode: Evict\nstrategies:\n  removePodsHavingTooManyRestarts: {podRestartThreshold: 0}\n",
        );
        assert!(out.plan.evictions.is_empty());
        assert!(
            out.error()
                .is_some_and(|e| e.contains("podRestartThreshold"))
        );
    }
}
