//! What each zone's drain has to do, read from a snapshot the way the controller would act on it: the
//! TDM strategy and the policy's gates are run with every zone of interest as if it were draining now,
//! and each preemptable pod's fate read off that plan (evicted now, later once its job's budget or its
//! cooldown allows, or never).

use std::collections::{BTreeMap, HashMap, HashSet};

use jiff::{SignedDuration, Timestamp};

use super::model::{JobDrain, PodDrain, Replacement};
use crate::{
    api::policy::Strategies,
    cluster::{ObjectKey, PodInfo, PodPhase, PolicyInfo, Setting, Snapshot},
    framework::{GateId, PlanContext, SkipReason, ZonePlacement, ZoneView},
    planner::{self, SkipRows},
    windows::ZoneState,
};

/// One zone's pods and jobs, as the drain model takes them.
#[derive(Clone, Debug, Default)]
pub struct ZonePods {
    pub jobs: Vec<JobDrain>,
    pub stays: BTreeMap<String, u32>,
    /// Preemptable pods on the zone's nodes (running, not bound to their node), those leaving included.
    pub remaining: u32,
    /// The most one round evicts in the zone (the policy's limits), if capped.
    pub round_cap: Option<u32>,
}

/// How long a pod of `zone` takes to terminate once evicted: what the zone showed so far, else the
/// pod's grace period.
pub type Termination<'a> = &'a dyn Fn(&str, &PodInfo) -> SignedDuration;

/// The pods of `zones` (each with the close it drains for) under `policy`'s TDM strategy and gates,
/// as of `now`. Pods whose evictions are queued and not yet sent count as pods to evict: the model
/// queues them again, in the same order of closes.
pub fn zone_pods(
    snapshot: &Snapshot,
    policy: &PolicyInfo,
    zones: &BTreeMap<String, Option<Timestamp>>,
    now: Timestamp,
    termination: Termination<'_>,
) -> BTreeMap<String, ZonePods> {
    let nothing_planned = HashSet::new();
    let (views, _) = crate::framework::zone_views(snapshot, now);
    // Zones whose nodes take no replacement now, whatever is drained: closed, draining, or with
    // windows that cannot be read.
    let shut_now: HashSet<&str> = snapshot
        .zones
        .values()
        .filter(|zone| !zone.state_at(now).is_ok_and(|state| !state.evicting()))
        .map(|zone| zone.name.as_str())
        .collect();
    // Every zone of interest as if it drained now and its round were due: the plan then says what a
    // round would take, and why it would leave the rest.
    let forced: BTreeMap<String, ZoneView> = views
        .into_iter()
        .map(|(name, mut view)| {
            if let Some(close) = zones.get(&name) {
                view.state = Ok(ZoneState {
                    open: true,
                    draining: true,
                    next_change: *close,
                });
                view.round_due = true;
                view.next_round = None;
            }
            (name, view)
        })
        .collect();
    let mut tdm_only = policy.clone();
    tdm_only.spec.strategies = Strategies {
        tdm: Some(policy.spec.strategies.tdm.clone().unwrap_or_default()),
        ..Strategies::default()
    };
    let plan = planner::plan_policy_with(
        snapshot,
        &tdm_only,
        now,
        &forced,
        &nothing_planned,
        SkipRows::All,
    );
    let mut fate: HashMap<&ObjectKey, Option<SkipReason>> = HashMap::new();
    for eviction in &plan.evictions {
        fate.insert(&eviction.candidate.pod.key, None);
    }
    for skip in &plan.skipped {
        fate.entry(&skip.candidate.pod.key)
            .or_insert(Some(skip.reason));
    }

    let ctx = PlanContext {
        snapshot,
        policy: &tdm_only,
        now,
        zones: &forced,
        planned_elsewhere: &nothing_planned,
    };
    let limits = &policy.spec.limits;
    let round_cap = [limits.total, limits.per_zone].into_iter().flatten().min();
    zones
        .keys()
        .map(|zone| {
            let mut pods = ZonePods {
                round_cap,
                ..ZonePods::default()
            };
            let mut by_job: BTreeMap<&crate::cluster::JobKey, Vec<PodDrain>> = BTreeMap::new();
            for node in snapshot.zone_nodes(zone) {
                for pod in node.pods.values() {
                    if !must_leave(&ctx, pod, zone) {
                        continue;
                    }
                    pods.remaining += 1;
                    if ctx.is_leaving(pod) {
                        // Counted with its job's leaving pods below.
                        by_job.entry(&pod.job).or_default();
                        continue;
                    }
                    let from = match fate.get(&pod.key) {
                        None | Some(None) => Some(now),
                        Some(Some(SkipReason::Gate(GateId::Budget | GateId::Limit))) => Some(now),
                        Some(Some(SkipReason::Gate(GateId::Cooldown))) => cooldown_end(&ctx, pod),
                        Some(Some(other)) => {
                            *pods.stays.entry(other.name().to_owned()).or_default() += 1;
                            continue;
                        }
                    };
                    let Some(from) = from else {
                        *pods.stays.entry("cooldown".to_owned()).or_default() += 1;
                        continue;
                    };
                    by_job.entry(&pod.job).or_default().push(PodDrain {
                        from,
                        terminates_in: termination(zone, pod),
                    });
                }
            }
            // Where the zone's evicted pods could run meanwhile: off this zone and every shut one.
            let room = snapshot
                .nodes
                .values()
                .filter_map(|n| n.node.as_ref())
                .any(|node| {
                    node.takes_replacements(|z| {
                        z == zone.as_str()
                            || shut_now.contains(z)
                            || !snapshot.zones.contains_key(z)
                    })
                });
            pods.jobs = by_job
                .into_iter()
                .map(|(job, mut to_evict)| {
                    let state = snapshot.job(job);
                    let budget = match ctx.job_budget_in(job, state) {
                        Setting::Valid(budget) => Some(budget),
                        Setting::Unset | Setting::Invalid(_) => None,
                    };
                    let stats = state
                        .map(|s| s.stats(|pod| ctx.is_leaving(pod)))
                        .unwrap_or_default();
                    let leaving_until = state
                        .into_iter()
                        .flat_map(|s| s.pods.values())
                        .filter(|pod| ctx.is_leaving(pod) && !pod.phase.is_finished())
                        .map(|pod| leaving_until(pod, zone, now, termination))
                        .collect();
                    // Cooldowns that end first go first; otherwise the strategy's order stands.
                    to_evict.sort_by_key(|pod| pod.from);
                    JobDrain {
                        job: job.to_string(),
                        budget,
                        stats,
                        replacement: match state {
                            Some(state)
                                if state.pods.values().any(|pod| pod.recreated_when_evicted()) =>
                            {
                                if room {
                                    Replacement::Runs
                                } else {
                                    Replacement::Pending
                                }
                            }
                            _ => Replacement::None,
                        },
                        leaving_until,
                        pods: to_evict,
                    }
                })
                .collect();
            (zone.clone(), pods)
        })
        .collect()
}

/// Whether `pod` is one of the preemptable pods a drain of `zone` waits for: running on one of the
/// zone's nodes, not bound to it, and allowed there (preemptable, not opted into another zone).
pub fn must_leave(ctx: &PlanContext<'_>, pod: &PodInfo, zone: &str) -> bool {
    pod.phase == PodPhase::Running
        && !pod.is_node_bound()
        && ctx.zone_placement(pod, zone) == ZonePlacement::Allowed
}

/// When a pod in its cooldown may go; `None` when it never can be shown to (no scheduling time).
fn cooldown_end(ctx: &PlanContext<'_>, pod: &PodInfo) -> Option<Timestamp> {
    let Setting::Valid(cooldown) = ctx.cooldown(pod) else {
        return Some(ctx.now);
    };
    let scheduled = pod.scheduled_at?;
    Some(
        scheduled
            .checked_add(cooldown.to_signed())
            .unwrap_or(Timestamp::MAX),
    )
}

/// When a pod already on its way out is expected gone: its termination after tidal evicted it, or
/// from now when the eviction's instant is unknown (terminating for another reason, or queued).
fn leaving_until(
    pod: &PodInfo,
    zone: &str,
    now: Timestamp,
    termination: Termination<'_>,
) -> Timestamp {
    let takes = termination(zone, pod);
    let since = pod.evicting_since.as_deref().copied().unwrap_or(now);
    since.checked_add(takes).unwrap_or(Timestamp::MAX).max(now)
}

/// A pod's grace period as a duration.
pub fn grace_of(pod: &PodInfo) -> SignedDuration {
    SignedDuration::from_secs(i64::from(pod.termination_grace_seconds()))
}
