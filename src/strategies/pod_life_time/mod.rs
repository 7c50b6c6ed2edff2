//! podLifeTime: evict pods older than `maxPodLifeTimeSeconds`, optionally only those in given states,
//! with given conditions or exit codes, or with given owner kinds. Every filter that is set must match
//! (AND); within a filter any entry may (OR). Oldest first.

pub mod args;

use jiff::Timestamp;

use crate::strategies::exit_codes::has_exit_code;
use crate::strategies::pod_age::{format_age, seconds_since};
use crate::strategies::selection::Selection;
use crate::{
    cluster::{ContainerScope, PodInfo, PodPhase},
    framework::{Candidate, PlanContext, Plugin, PodByPod, StrategyId},
};
use args::{ConditionFilter, PodLifeTimeArgs};

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
mod tests;
