//! removePodsHavingTooManyRestarts: evict pods whose containers restarted at least `podRestartThreshold`
//! times in all (a volume that never attaches, a node-local fault): another node may do better.

pub mod args;

use crate::strategies::selection::{Selection, movable};
use crate::{
    cluster::{ContainerScope, PodPhase},
    framework::{Candidate, PlanContext, Plugin, PodByPod, StrategyId},
};
use args::{RestartState, TooManyRestartsArgs};

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
mod tests;
