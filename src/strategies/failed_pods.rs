//! removeFailedPods: evict pods in phase `Failed` (which otherwise stay until garbage collection),
//! optionally only for given reasons or exit codes, older than a minimum, or not owned by given kinds.

use super::shared::{Selection, format_age, has_exit_code, oldest_first, seconds_since};
use crate::api::args::RemoveFailedPodsArgs;
use crate::{
    cluster::{ContainerScope, PodInfo, PodPhase},
    framework::{Candidate, Exemptions, PlanContext, Plugin, PodByPod, StrategyId},
};

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
mod tests {
    use crate::testkit::*;
    use serde_json::json;

    fn terminated(reason: &str, code: i32) -> serde_json::Value {
        json!([{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"terminated": {"reason": reason, "exitCode": code}}}])
    }

    fn cluster() -> Cluster {
        Cluster::new()
            .node(node("n1").allocatable("4", "8Gi", 110))
            .pod(pod("a/running", "n1").requests("100m", "1Gi"))
            .pod(
                pod("a/affinity", "n1")
                    .requests("100m", "1Gi")
                    .phase("Failed")
                    .status("reason", json!("NodeAffinity")),
            )
            .pod(
                pod("a/oom", "n1")
                    .requests("100m", "1Gi")
                    .phase("Failed")
                    .status("containerStatuses", terminated("OOMKilled", 137)),
            )
            .pod(
                pod("a/job", "n1")
                    .requests("100m", "1Gi")
                    .phase("Failed")
                    .owned_by("Job", "nightly")
                    .created("2026-11-22T03:30:00Z")
                    .status("containerStatuses", terminated("Error", 1)),
            )
            .pod(
                pod("a/bare", "n1")
                    .requests("100m", "1Gi")
                    .phase("Failed")
                    .bare(),
            )
    }

    #[test]
    fn evicts_failed_pods_and_bare_ones_only_when_asked() {
        let out = cluster().plan("mode: Evict\nstrategies:\n  removeFailedPods: {}\n");
        assert_eq!(out.evicted(), ["a/affinity", "a/oom", "a/job"]);
        assert!(out.detail("a/bare").contains("bare pod"));
        let out = cluster()
            .plan("mode: Evict\nstrategies:\n  removeFailedPods: {evictFailedBarePods: true}\n");
        assert_eq!(out.evicted(), ["a/affinity", "a/bare", "a/oom", "a/job"]);
        // Only failed bare pods, and only for this strategy: protection barePods holds elsewhere.
        let out = cluster()
            .pod(pod("a/bare-old", "n1").requests("100m", "1Gi").bare())
            .plan(
                "mode: Evict\nstrategies:\n  removeFailedPods: {evictFailedBarePods: true}\n  \
                 podLifeTime: {maxPodLifeTimeSeconds: 1}\n",
            );
        assert!(out.detail("a/bare-old").contains("bare pod"));
    }

    #[test]
    fn filters() {
        let run = |args: &str| {
            cluster()
                .plan(&format!(
                    "mode: Evict\nstrategies:\n  removeFailedPods: {args}\n"
                ))
                .evicted()
        };
        assert_eq!(
            run("{reasons: [NodeAffinity, OOMKilled]}"),
            ["a/affinity", "a/oom"]
        );
        assert_eq!(run("{exitCodes: [1]}"), ["a/job"]);
        assert_eq!(run("{excludeOwnerKinds: [Job]}"), ["a/affinity", "a/oom"]);
        assert_eq!(
            run("{minPodLifetimeSeconds: 3600}"),
            ["a/affinity", "a/oom"]
        );
    }
}
