//! What each zone's drain has to do, read from a snapshot the way the controller would act on it: the
//! TDM strategy and the policy's gates are run with every zone of interest as if it were draining now,
//! and each preemptable pod's fate read off that plan (evicted now, later once its job's budget or its
//! cooldown allows, or never). Pods whose evictions the controller's queue holds are taken as queued,
//! in the queue's order. And how soon a round's evictions must go ([`round_urgencies`]): the one rule
//! by which the controller and the timeline order their queues.

use std::collections::{BTreeMap, HashMap, HashSet};

use jiff::{SignedDuration, Timestamp};

use super::{
    model::{JobAtRound, JobDrain, PodDrain, QueuedPod},
    queue::{Replacement, Urgency},
};
use crate::{
    api::policy::Strategies,
    cluster::{JobKey, JobState, ObjectKey, PodInfo, PodPhase, PolicyInfo, Setting, Snapshot},
    framework::{Candidate, Gang, GateId, PlanContext, SkipReason, ZonePlacement, ZoneView},
    planner::{self, SkipRows},
    time_windows::ZoneState,
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

/// An eviction the controller's queue holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InQueue {
    pub urgency: Urgency,
    /// Its place in the queue.
    pub position: usize,
    /// On the wire, its answer not in yet.
    pub sent: bool,
}

/// The evictions the controller's queue holds, by pod.
pub type Queued = HashMap<ObjectKey, InQueue>;

/// The pods of `zones` (each with the close it drains for) under `policy`'s TDM strategy and gates,
/// as of `now`. Pods in `queued` are taken as the queue holds them: they are not planned again, and
/// their jobs' budgets count them as leaving.
pub fn zone_pods(
    snapshot: &Snapshot,
    policy: &PolicyInfo,
    zones: &BTreeMap<String, Option<Timestamp>>,
    now: Timestamp,
    termination: Termination<'_>,
    queued: &Queued,
) -> BTreeMap<String, ZonePods> {
    let in_queue: HashSet<ObjectKey> = queued.keys().cloned().collect();
    let (views, _) = crate::framework::zone_views(snapshot, now);
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
    let tdm_only = tdm_only(policy);
    let plan =
        planner::plan_policy_with(snapshot, &tdm_only, now, &forced, &in_queue, SkipRows::All);
    let mut fate: HashMap<&ObjectKey, Option<SkipReason>> = HashMap::new();
    for eviction in &plan.evictions {
        fate.insert(&eviction.candidate.pod.key, None);
    }
    for skip in &plan.skipped {
        fate.entry(&skip.candidate.pod.key)
            .or_insert(Some(skip.reason));
    }
    let gangs = gangs(&plan);

    let ctx = PlanContext {
        snapshot,
        policy: &tdm_only,
        now,
        zones: &forced,
        planned_elsewhere: &in_queue,
    };
    let limits = &policy.spec.limits;
    let round_cap = [limits.total, limits.per_zone].into_iter().flatten().min();
    let shut = Shut::now(snapshot, now);
    zones
        .keys()
        .map(|zone| {
            let mut pods = ZonePods {
                round_cap,
                ..ZonePods::default()
            };
            let mut by_job: BTreeMap<&JobKey, JobPods> = BTreeMap::new();
            for node in snapshot.zone_nodes(zone) {
                for pod in node.pods.values() {
                    if !must_leave(&ctx, pod, zone) {
                        continue;
                    }
                    pods.remaining += 1;
                    let entry = by_job.entry(&pod.job).or_default();
                    if let Some(held) = queued.get(&pod.key).filter(|q| !q.sent) {
                        entry.queued.push(QueuedPod {
                            urgency: held.urgency,
                            position: held.position,
                            terminates_in: termination(zone, pod),
                        });
                        continue;
                    }
                    if ctx.is_leaving(pod) {
                        // Counted with its job's leaving pods below.
                        continue;
                    }
                    let from = match fate.get(&pod.key) {
                        None | Some(None) => Some(now),
                        Some(Some(SkipReason::Gate(GateId::Budget | GateId::Limit))) => Some(now),
                        Some(Some(SkipReason::Gate(GateId::Cooldown))) => cooldown_end(&ctx, pod),
                        // Told now at the latest, the pod goes its notice later.
                        Some(Some(SkipReason::Gate(GateId::Notice))) => snapshot
                            .zones
                            .get(zone)
                            .and_then(|info| crate::cluster::evictable_from(pod, info, now))
                            .or(Some(now)),
                        Some(Some(SkipReason::Gate(GateId::Finishes))) => {
                            if let Some(end) = ctx.pod_end(pod) {
                                entry.ends.push(end.at);
                                continue;
                            }
                            Some(now)
                        }
                        Some(Some(other)) => {
                            *pods.stays.entry(other.name().to_owned()).or_default() += 1;
                            continue;
                        }
                    };
                    let Some(from) = from else {
                        *pods.stays.entry("cooldown".to_owned()).or_default() += 1;
                        continue;
                    };
                    entry.to_evict.push(PodDrain {
                        from,
                        terminates_in: termination(zone, pod),
                    });
                }
            }
            let room = shut.room_outside(snapshot, zone);
            pods.jobs = by_job
                .into_iter()
                .map(|(job, pods)| {
                    let JobPods {
                        mut to_evict,
                        queued: in_queue,
                        ends,
                    } = pods;
                    let state = snapshot.job(job);
                    let (budget, stats, replacement) = job_counts(&ctx, job, state, room);
                    let leaving_until = state
                        .into_iter()
                        .flat_map(|s| s.pods.values())
                        .filter(|pod| ctx.is_leaving(pod) && !pod.phase.is_finished())
                        .filter(|pod| queued.get(&pod.key).is_none_or(|q| q.sent))
                        .map(|pod| leaving_until(pod, zone, now, termination))
                        .collect();
                    // Cooldowns that end first go first; otherwise the strategy's order stands.
                    to_evict.sort_by_key(|pod| pod.from);
                    JobDrain {
                        job: job.to_string(),
                        budget,
                        stats,
                        replacement,
                        leaving_until,
                        queued: in_queue,
                        pods: to_evict,
                        ends,
                        gang: gangs.get(&(zone.as_str(), job)).copied(),
                    }
                })
                .collect();
            // Gangs first, as the strategy offers them.
            pods.jobs.sort_by_key(|job| job.gang.is_none());
            (zone.clone(), pods)
        })
        .collect()
}

/// One job's pods on a zone, by what the drain does with them.
#[derive(Default)]
struct JobPods {
    to_evict: Vec<PodDrain>,
    queued: Vec<QueuedPod>,
    /// Left to finish: when each ends by itself.
    ends: Vec<Timestamp>,
}

/// The gangs the plan takes whole, by zone and job.
fn gangs(plan: &planner::Plan) -> HashMap<(&str, &JobKey), Gang> {
    let candidates = plan
        .evictions
        .iter()
        .map(|eviction| &eviction.candidate)
        .chain(plan.skipped.iter().map(|skip| &skip.candidate));
    candidates
        .filter_map(|c| Some(((c.drained_zone()?, &c.pod.job), c.gang?)))
        .collect()
}

/// The policy with its TDM strategy alone: what drains the zones.
fn tdm_only(policy: &PolicyInfo) -> PolicyInfo {
    let mut tdm_only = policy.clone();
    tdm_only.spec.strategies = Strategies {
        tdm: Some(policy.spec.strategies.tdm.clone().unwrap_or_default()),
        ..Strategies::default()
    };
    tdm_only
}

/// A job's budget, its pods as the budget counts them (leaving ones as `ctx` says), and what takes
/// an evicted pod's place given whether replacements have `room` to run.
fn job_counts(
    ctx: &PlanContext<'_>,
    job: &JobKey,
    state: Option<&JobState>,
    room: bool,
) -> (
    Option<crate::cluster::JobBudget>,
    crate::cluster::JobStats,
    Replacement,
) {
    let budget = match ctx.job_budget_in(job, state) {
        Setting::Valid(budget) => Some(budget),
        Setting::Unset | Setting::Invalid(_) => None,
    };
    let stats = state
        .map(|s| s.stats(|pod| ctx.is_leaving(pod)))
        .unwrap_or_default();
    let replacement = match state {
        Some(state) if state.pods.values().any(|pod| pod.recreated_when_evicted()) => {
            if room {
                Replacement::Runs
            } else {
                Replacement::Pending
            }
        }
        _ => Replacement::None,
    };
    (budget, stats, replacement)
}

/// Zones whose nodes take no replacement now, whatever is drained: closed, draining, or with windows
/// that cannot be read.
struct Shut<'a>(HashSet<&'a str>);

impl<'a> Shut<'a> {
    fn now(snapshot: &'a Snapshot, now: Timestamp) -> Self {
        Shut(
            snapshot
                .zones
                .values()
                .filter(|zone| !zone.state_at(now).is_ok_and(|state| !state.evicting()))
                .map(|zone| zone.name.as_str())
                .collect(),
        )
    }

    /// Whether the pods evicted from `zone` can run somewhere meanwhile: off this zone and every
    /// shut one.
    fn room_outside(&self, snapshot: &Snapshot, zone: &str) -> bool {
        snapshot
            .nodes
            .values()
            .filter_map(|n| n.node.as_ref())
            .any(|node| {
                node.takes_replacements(|z| {
                    z == zone || self.0.contains(z) || !snapshot.zones.contains_key(z)
                })
            })
    }
}

/// How soon each of a cycle's evictions must go, in the order given: the controller queues them so,
/// and the timeline too. A TDM eviction of a zone that closes ahead goes by the rounds its job still
/// needs once this cycle's are queued; one of a closed zone is overdue; any other has no close.
/// `gone_after` is how long one takes from its send until its pod is gone.
pub fn round_urgencies(
    ctx: &PlanContext<'_>,
    evictions: &[&Candidate],
    gone_after: &dyn Fn(&str, &PodInfo) -> SignedDuration,
) -> Vec<Urgency> {
    let mut taken: HashMap<(&str, &JobKey), (u32, bool)> = HashMap::new();
    for candidate in evictions {
        if let Some(zone) = candidate.drained_zone() {
            let job = taken.entry((zone, &candidate.pod.job)).or_default();
            job.0 += 1;
            job.1 |= candidate.gang.is_some();
        }
    }
    let shut = Shut::now(ctx.snapshot, ctx.now);
    let mut room: HashMap<&str, bool> = HashMap::new();
    let mut jobs: HashMap<(&str, &JobKey), Option<JobAtRound>> = HashMap::new();
    evictions
        .iter()
        .map(|candidate| {
            let Some(zone) = candidate.drained_zone() else {
                return Urgency::NO_CLOSE;
            };
            let Some(Ok(state)) = ctx.zones.get(zone).map(|v| v.state.as_ref()) else {
                return Urgency::NO_CLOSE;
            };
            let close = state.next_change.filter(|_| state.open);
            if state.open && close.is_none() {
                return Urgency::NO_CLOSE;
            }
            let job = &candidate.pod.job;
            let at_round = *jobs.entry((zone, job)).or_insert_with(|| {
                let room = *room
                    .entry(zone)
                    .or_insert_with(|| shut.room_outside(ctx.snapshot, zone));
                let (taken, whole) = taken[&(zone, job)];
                job_at_round(ctx, zone, job, taken, room).map(|at| JobAtRound { whole, ..at })
            });
            let Some(at_round) = at_round else {
                return Urgency::NO_CLOSE;
            };
            let evict_period = ctx
                .snapshot
                .zones
                .get(zone)
                .map_or(SignedDuration::from_mins(1), |z| {
                    z.spec.evict_period.to_signed()
                });
            at_round.urgency(close, evict_period, gone_after(zone, &candidate.pod))
        })
        .collect()
}

/// A job of `zone` as a round that takes `taken` of its pods leaves it.
fn job_at_round(
    ctx: &PlanContext<'_>,
    zone: &str,
    job: &JobKey,
    taken: u32,
    room: bool,
) -> Option<JobAtRound> {
    let state = ctx.snapshot.job(job)?;
    let (budget, mut stats, replacement) = job_counts(ctx, job, Some(state), room);
    let zone_nodes_pods = state
        .pods
        .values()
        .filter(|pod| {
            pod.node_name
                .as_deref()
                .and_then(|node| ctx.snapshot.nodes.get(node))
                .and_then(|node| node.node.as_ref())
                .is_some_and(|node| node.revocable_zone.as_deref() == Some(zone))
        })
        .filter(|pod| must_leave(ctx, pod, zone) && !ctx.is_leaving(pod))
        .count();
    let on_zone = u32::try_from(zone_nodes_pods).unwrap_or(u32::MAX);
    stats.running = stats.running.saturating_sub(taken);
    stats.leaving = stats.leaving.saturating_add(taken);
    Some(JobAtRound {
        budget,
        replacement,
        stats,
        left: on_zone.saturating_sub(taken),
        whole: false,
    })
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

/// When a pod already on its way out is expected gone: its termination after tidal's eviction of it
/// was answered, or from now when that instant is unknown (terminating for another reason, or on the
/// wire).
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
