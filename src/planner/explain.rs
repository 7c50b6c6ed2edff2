//! For `tidal explain`: what a policy's gates would say of a pod no strategy proposed, as if one had.

use jiff::Timestamp;

use crate::{
    cluster::{PodInfo, PolicyInfo, Snapshot},
    framework::{Candidate, PlanContext, StrategyId, zone_views},
    gates::SharedCounts,
};

/// What stands between `pod` and an eviction under `policy`, outside any strategy: the policy's
/// scope (namespaces, nodes), then each gate's refusal in order, as if a strategy proposed it now.
/// Empty: nothing but the strategies themselves.
pub fn obstacles(
    snapshot: &Snapshot,
    policy: &PolicyInfo,
    pod: &std::sync::Arc<PodInfo>,
    now: Timestamp,
) -> Vec<(String, String)> {
    let (zones, _) = zone_views(snapshot, now);
    let planned = std::collections::HashSet::new();
    let ctx = PlanContext {
        snapshot,
        policy,
        now,
        zones: &zones,
        planned_elsewhere: &planned,
    };
    let mut out = Vec::new();
    if !policy.spec.namespaces.admits(&pod.key.namespace) {
        out.push((
            "scope".to_owned(),
            format!(
                "namespace {} is outside the policy's namespaces",
                pod.key.namespace
            ),
        ));
    }
    if !ctx.processes_pod(pod) {
        out.push((
            "scope".to_owned(),
            "its node is outside the policy's nodeSelector (or it is on no node)".to_owned(),
        ));
    }
    if pod.is_leaving() {
        out.push(("scope".to_owned(), "it is already leaving".to_owned()));
    }
    let candidate = Candidate::new(pod, StrategyId::PodLifeTime, String::new());
    for mut gate in super::chain::chain(policy, &SharedCounts::default()) {
        if let Err(detail) = gate.check(&candidate, &ctx) {
            out.push((gate.id().to_string(), detail));
        }
    }
    out
}

/// For each of `pods` (of jobs `policy`'s gate `budget` held this round), whether a later round can
/// take it: whether the job's budget lets one of its pods go once every unfinished pod of the job
/// runs again and none is leaving. `false`: the budget lets none go even then (`minAvailable` equal
/// to the job's pods, `maxUnavailable: 0`), so the pod stays until the job or its budget changes.
pub fn budget_lets_one_go(
    snapshot: &Snapshot,
    policy: &PolicyInfo,
    pods: &[&std::sync::Arc<PodInfo>],
) -> Vec<bool> {
    let zones = std::collections::BTreeMap::new();
    let planned = std::collections::HashSet::new();
    let ctx = PlanContext {
        snapshot,
        policy,
        now: Timestamp::UNIX_EPOCH,
        zones: &zones,
        planned_elsewhere: &planned,
    };
    pods.iter()
        .map(|pod| {
            let state = snapshot.job(&pod.job);
            let Some(stats) = state.map(crate::cluster::JobState::stats_as_is) else {
                return true;
            };
            let whole = crate::cluster::JobStats {
                running: stats.total - stats.finished,
                leaving: 0,
                ..stats
            };
            let budget = match ctx.job_budget_in(&pod.job, state) {
                crate::cluster::Setting::Valid(budget) => Some(budget),
                crate::cluster::Setting::Unset | crate::cluster::Setting::Invalid(_) => None,
            };
            crate::cluster::model::job_budget::allowed_evictions(budget, whole) > 0
        })
        .collect()
}
