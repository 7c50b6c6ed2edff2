//! removeFailedPods: evict pods in phase `Failed` (which otherwise stay until garbage collection),
//! optionally only for given reasons or exit codes, older than a minimum, or not owned by given kinds.

pub mod args;

use crate::strategies::exit_codes::has_exit_code;
use crate::strategies::pod_age::{format_age, seconds_since};
use crate::strategies::selection::Selection;
use crate::strategies::victim_order::oldest_first;
use crate::{
    cluster::{ContainerScope, PodInfo, PodPhase},
    framework::{Candidate, Exemptions, PlanContext, Plugin, PodByPod, StrategyId},
};
use args::RemoveFailedPodsArgs;

const ID: StrategyId = StrategyId::RemoveFailedPods;

pub(crate) struct RemoveFailedPods {
    args: RemoveFailedPodsArgs,
}

impl RemoveFailedPods {
    pub(crate) fn new(args: RemoveFailedPodsArgs) -> Self {
        RemoveFailedPods { args }
    }

    fn selection(&self) -> Selection<'_> {
        Selection {
            namespaces: &self.args.namespaces,
            label_selector: self.args.label_selector.as_ref(),
        }
    }

    fn reason_for(&self, pod: &PodInfo, ctx: &PlanContext<'_>) -> Option<String> {
        let args = &self.args;
        if pod.phase != PodPhase::Failed
            || pod
                .owner_kinds()
                .any(|k| args.exclude_owner_kinds.iter().any(|w| w == k))
        {
            return None;
        }
        let scope = ContainerScope {
            init: args.including_init_containers,
            ephemeral: false,
        };
        let mut why = vec!["failed".to_owned()];
        if !args.reasons.is_empty() {
            let reason = pod
                .status
                .reason()
                .into_iter()
                .chain(pod.status.containers_in(scope).flat_map(|c| {
                    c.waiting
                        .as_deref()
                        .into_iter()
                        .chain(c.terminated.as_ref().and_then(|t| t.reason.as_deref()))
                }))
                .find(|r| args.reasons.iter().any(|w| w == r))?;
            why.push(format!("reason {reason}"));
        }
        if !args.exit_codes.is_empty() {
            if !has_exit_code(pod, &args.exit_codes, scope) {
                return None;
            }
            why.push("exit code matched".to_owned());
        }
        if let Some(min) = args.min_pod_lifetime_seconds {
            let age = seconds_since(pod.created_at, ctx.now)?;
            if age < i64::try_from(min).unwrap_or(i64::MAX) {
                return None;
            }
            why.push(format!("age {}", format_age(age)));
        }
        Some(why.join(", "))
    }
}

impl Plugin for RemoveFailedPods {
    fn id(&self) -> StrategyId {
        ID
    }

    fn validate(&self) -> Result<(), String> {
        self.selection().validate()
    }
}

impl PodByPod for RemoveFailedPods {
    fn propose(&self, ctx: &PlanContext<'_>) -> Vec<Candidate> {
        let selection = self.selection();
        let mut pods: Vec<_> = ctx
            .snapshot
            .nodes
            .values()
            .flat_map(|n| n.pods.values())
            .filter(|pod| !pod.is_static() && !ctx.is_leaving(pod) && selection.admits(pod))
            .filter_map(|pod| self.reason_for(pod, ctx).map(|why| (pod, why)))
            .collect();
        pods.sort_by(|a, b| oldest_first(a.0).cmp(&oldest_first(b.0)));
        let bare_allowed = self.args.evict_failed_bare_pods;
        pods.into_iter()
            .map(|(pod, why)| {
                let candidate = Candidate::new(pod, ID, why);
                if bare_allowed && !pod.has_owner() {
                    candidate.exempt(Exemptions {
                        bare_pod: true,
                        ..Exemptions::default()
                    })
                } else {
                    candidate
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
