//! podLifeTime: evict pods older than `maxPodLifeTimeSeconds`, optionally only those in given states,
//! with given conditions or exit codes, or with given owner kinds. Every filter that is set must match
//! (AND); within a filter any entry may (OR). Oldest first.

use jiff::Timestamp;

use super::shared::{Selection, format_age, has_exit_code, seconds_since};
use crate::api::args::{ConditionFilter, PodLifeTimeArgs};
use crate::{
    cluster::{ContainerScope, PodInfo, PodPhase},
    framework::{Candidate, PlanContext, Plugin, PodByPod, StrategyId},
};

const ID: StrategyId = StrategyId::PodLifeTime;

pub(crate) struct PodLifeTime {
    args: PodLifeTimeArgs,
}

impl ConditionFilter {
    fn fields_match(&self, condition: &crate::cluster::model::pod_status::ConditionInfo) -> bool {
        self.type_.as_ref().is_none_or(|t| *t == condition.type_)
            && self.status.as_ref().is_none_or(|s| *s == condition.status)
            && self
                .reason
                .as_ref()
                .is_none_or(|r| condition.reason.as_deref() == Some(r.as_str()))
    }
}

pub(super) fn phase_name(phase: PodPhase) -> &'static str {
    match phase {
        PodPhase::Pending => "Pending",
        PodPhase::Running => "Running",
        PodPhase::Succeeded => "Succeeded",
        PodPhase::Failed => "Failed",
        PodPhase::Unknown => "Unknown",
    }
}

/// The pod's phase, its status reason, and its containers' waiting and terminated reasons.
pub(super) fn pod_states(pod: &PodInfo, scope: ContainerScope) -> impl Iterator<Item = &str> {
    std::iter::once(phase_name(pod.phase))
        .chain(pod.status.reason())
        .chain(pod.status.containers_in(scope).flat_map(|c| {
            c.waiting
                .as_deref()
                .into_iter()
                .chain(c.terminated.as_ref().and_then(|t| t.reason.as_deref()))
        }))
}

impl PodLifeTime {
    pub(crate) fn new(args: PodLifeTimeArgs) -> Self {
        PodLifeTime { args }
    }

    fn selection(&self) -> Selection<'_> {
        Selection {
            namespaces: &self.args.namespaces,
            label_selector: self.args.label_selector.as_ref(),
        }
    }

    fn scope(&self) -> ContainerScope {
        ContainerScope {
            init: self.args.including_init_containers,
            ephemeral: self.args.including_ephemeral_containers,
        }
    }

    /// When the pod matched, for ordering (oldest first) and the reason, or `None` if it does not match.
    fn matches(&self, pod: &PodInfo, now: Timestamp) -> Option<(Timestamp, String)> {
        let args = &self.args;
        let mut why = Vec::new();
        if let Some(max) = args.max_pod_life_time_seconds {
            let age = seconds_since(pod.created_at, now)?;
            if age <= i64::try_from(max).unwrap_or(i64::MAX) {
                return None;
            }
            why.push(format!(
                "age {} > {}",
                format_age(age),
                format_age(max as i64)
            ));
        }
        if !args.states.is_empty() {
            let state =
                pod_states(pod, self.scope()).find(|s| args.states.iter().any(|w| w == s))?;
            why.push(format!("state {state}"));
        }
        let mut relevant: Option<Timestamp> = None;
        if !args.conditions.is_empty() {
            let mut matched = false;
            for filter in &args.conditions {
                for condition in pod
                    .status
                    .conditions
                    .iter()
                    .filter(|c| filter.fields_match(c))
                {
                    if let Some(min) = filter.min_time_since_last_transition_seconds {
                        let Some(since) = seconds_since(condition.last_transition, now) else {
                            continue;
                        };
                        if since < i64::try_from(min).unwrap_or(i64::MAX) {
                            continue;
                        }
                        relevant = relevant.max(condition.last_transition);
                    }
                    if !matched {
                        why.push(format!(
                            "condition {}={}",
                            condition.type_, condition.status
                        ));
                    }
                    matched = true;
                }
            }
            if !matched {
                return None;
            }
        }
        if !args.exit_codes.is_empty() {
            if !has_exit_code(pod, &args.exit_codes, self.scope()) {
                return None;
            }
            why.push("exit code matched".to_owned());
        }
        if !args.owner_kinds.admits(pod) {
            return None;
        }
        let at = relevant.or(pod.created_at).unwrap_or(Timestamp::MIN);
        Some((at, why.join(", ")))
    }
}

impl Plugin for PodLifeTime {
    fn id(&self) -> StrategyId {
        ID
    }

    fn validate(&self) -> Result<(), String> {
        let args = &self.args;
        self.selection().validate()?;
        args.owner_kinds.validate()?;
        if args.max_pod_life_time_seconds.is_none()
            && args.states.is_empty()
            && args.conditions.is_empty()
            && args.exit_codes.is_empty()
        {
            return Err(
                "set at least one of maxPodLifeTimeSeconds, states, conditions, exitCodes"
                    .to_owned(),
            );
        }
        if args
            .conditions
            .iter()
            .any(|c| *c == ConditionFilter::default())
        {
            return Err("every condition filter needs at least one field".to_owned());
        }
        Ok(())
    }
}

impl PodByPod for PodLifeTime {
    fn propose(&self, ctx: &PlanContext<'_>) -> Vec<Candidate> {
        let selection = self.selection();
        let mut matched: Vec<(Timestamp, &std::sync::Arc<PodInfo>, String)> = ctx
            .snapshot
            .nodes
            .values()
            .flat_map(|n| n.pods.values())
            .filter(|pod| !pod.is_static() && !ctx.is_leaving(pod) && selection.admits(pod))
            .filter_map(|pod| self.matches(pod, ctx.now).map(|(at, why)| (at, pod, why)))
            .collect();
        matched.sort_by(|a, b| (a.0, &a.1.key).cmp(&(b.0, &b.1.key)));
        matched
            .into_iter()
            .map(|(_, pod, why)| Candidate::new(pod, ID, why))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::*;
    use serde_json::json;

    fn cluster() -> Cluster {
        Cluster::new()
            .node(node("n1").allocatable("4", "8Gi", 110))
            .pod(pod("a/week", "n1").requests("100m", "1Gi").created("2026-11-15T04:00:00Z"))
            .pod(pod("a/day", "n1").requests("100m", "1Gi"))
            .pod(pod("a/hour", "n1").requests("100m", "1Gi").created("2026-11-22T03:00:00Z"))
            .pod(
                pod("a/oom", "n1").requests("100m", "1Gi")
                    .created("2026-11-17T04:00:00Z")
                    .status(
                        "containerStatuses",
                        json!([{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 1,
                                "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]),
                    ),
            )
            .pod(
                pod("a/done", "n1").requests("100m", "1Gi")
                    .phase("Succeeded")
                    .owned_by("Job", "batch")
                    .status(
                        "conditions",
                        json!([{"type": "Ready", "status": "False", "reason": "PodCompleted",
                                "lastTransitionTime": "2026-11-21T22:00:00Z"}]),
                    ),
            )
    }

    #[test]
    fn evicts_pods_older_than_the_maximum_oldest_first() {
        let out = cluster()
            .plan("mode: Evict\nstrategies:\n  podLifeTime: {maxPodLifeTimeSeconds: 7200}\n");
        // Each ReplicaSet has one pod: the budget allows one per job, so all go.
        assert_eq!(out.evicted(), ["a/week", "a/oom", "a/day", "a/done"]);
        assert!(out.reason("a/week").contains("age 7d0h > 2h0m"));
    }

    #[test]
    fn states_exit_codes_and_owner_kinds() {
        let out = cluster().plan(
            "mode: Evict\nstrategies:\n  podLifeTime: {maxPodLifeTimeSeconds: 7200, states: [OOMKilled, Succeeded]}\n",
        );
        assert_eq!(out.evicted(), ["a/oom", "a/done"]);
        let out = cluster().plan("mode: Evict\nstrategies:\n  podLifeTime: {exitCodes: [137]}\n");
        assert_eq!(out.evicted(), ["a/oom"]);
        let out = cluster().plan(
            "mode: Evict\nstrategies:\n  podLifeTime: {maxPodLifeTimeSeconds: 7200, ownerKinds: {exclude: [Job]}}\n",
        );
        assert_eq!(out.evicted(), ["a/week", "a/oom", "a/day"]);
    }

    #[test]
    fn conditions_with_time_since_transition() {
        let spec = |secs: u64| {
            format!(
                "mode: Evict\nstrategies:\n  podLifeTime:\n    states: [Succeeded]\n    conditions:\n    - {{reason: PodCompleted, minTimeSinceLastTransitionSeconds: {secs}}}\n"
            )
        };
        assert_eq!(cluster().plan(&spec(3600)).evicted(), ["a/done"]);
        assert!(cluster().plan(&spec(8 * 3600)).evicted().is_empty());
    }

    #[test]
    fn needs_a_criterion() {
        let out = cluster().plan("mode: Evict\nstrategies:\n  podLifeTime: {}\n");
        assert!(out.error().is_some_and(|e| e.contains("at least one")));
    }
}
