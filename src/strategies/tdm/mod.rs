//! Time-division multiplexing: when a revocable zone closes (or is about to), evict the preemptable pods
//! from its nodes, job by job; and evict pods that should never have been placed there at all.

pub mod args;

use std::{collections::HashMap, sync::Arc};

use crate::{
    cluster::{JobKey, JobKind, PodInfo, PodPhase, Setting},
    framework::{
        Candidate, Exemptions, Gang, Gatekeeper, PlanContext, Plugin, PodByPod, StrategyId,
        Violation, ZonePlacement, ZoneView,
    },
};
use args::TdmArgs;

const ID: StrategyId = StrategyId::Tdm;

pub(crate) struct Tdm {
    args: TdmArgs,
}

impl Tdm {
    pub(crate) fn new(args: TdmArgs) -> Self {
        Tdm { args }
    }

    fn closing_reason(zone: &ZoneView) -> String {
        let Ok(state) = &zone.state else {
            return format!("zone {} closed", zone.name);
        };
        // A close shows the end as the operator wrote it (07:00), not its first closed second
        // (07:00:01); an opening is exact.
        let when = state
            .next_change
            .map(|change| {
                let shown = if state.open {
                    jiff::tz::TimeZone::get(&zone.time_zone).map_or(change, |tz| {
                        crate::time_windows::close_boundary(&tz, change)
                    })
                } else {
                    change
                };
                shown.to_string()
            })
            .unwrap_or_else(|| "never".to_owned());
        if state.open {
            format!("zone {} closes at {when} (draining)", zone.name)
        } else {
            // The windows are in the zone's own line of the report, not repeated on every pod.
            format!("zone {} closed; opens {when}", zone.name)
        }
    }
}

impl Plugin for Tdm {
    fn id(&self) -> StrategyId {
        ID
    }
}

impl PodByPod for Tdm {
    fn propose(&self, ctx: &PlanContext<'_>) -> Vec<Candidate> {
        let mut out = Vec::new();
        for zone in due_zones(ctx) {
            let evicting = zone.evicting_now();
            let mut in_zone: Vec<Candidate> = Vec::new();
            // Which of `in_zone` must leave the zone for its drain: the pods a gang is counted by.
            let mut draining: Vec<bool> = Vec::new();
            for pod in movable_pods(ctx, zone) {
                let placement = ctx.zone_placement(pod, &zone.name);
                let candidate = match placement {
                    ZonePlacement::Allowed if evicting => {
                        Candidate::new(pod, ID, Self::closing_reason(zone))
                    }
                    ZonePlacement::Allowed => continue,
                    ZonePlacement::Unknown => Candidate::new(
                        pod,
                        ID,
                        format!("on revocable zone {}, preemptable unknown", zone.name),
                    ),
                    ZonePlacement::Violation(why) if self.args.evict_placement_violations => {
                        violation(pod, zone, why)
                    }
                    // Held: see `hold`.
                    ZonePlacement::Violation(_) => continue,
                };
                draining.push(evicting && placement == ZonePlacement::Allowed);
                in_zone.push(
                    candidate
                        .in_zone(&zone.name)
                        .exempt(exemptions(ctx, pod, zone, placement)),
                );
            }
            if evicting {
                mark_gangs(ctx, &mut in_zone, &draining);
            }
            // Gangs first: one needs room for all its pods in a round, where other jobs' pods fill
            // whatever room is left, and behind them it could wait for ever under a per-zone limit.
            in_zone.sort_by_cached_key(|c| (c.gang.is_none(), victim_order(&c.pod, ctx.now)));
            out.extend(in_zone);
        }
        out
    }

    /// Placement violations with `evictPlacementViolations: false`: once a closed zone is drained,
    /// every pod left on it is one, every round.
    fn hold(&self, ctx: &PlanContext<'_>, gatekeeper: &mut dyn Gatekeeper) {
        if self.args.evict_placement_violations {
            return;
        }
        for zone in due_zones(ctx) {
            for pod in movable_pods(ctx, zone) {
                let placement = ctx.zone_placement(pod, &zone.name);
                let ZonePlacement::Violation(why) = placement else {
                    continue;
                };
                gatekeeper.hold(pod, &mut || {
                    violation(pod, zone, why)
                        .in_zone(&zone.name)
                        .exempt(exemptions(ctx, pod, zone, placement))
                        .held("evictPlacementViolations is off")
                });
            }
        }
    }
}

/// Marks the pods of gangs that the zone's drain takes below their `minMember`
/// ([`PlanContext::gang_taken_below_minimum`]): those that must leave the zone (`draining`:
/// preemptable, allowed there) go together, and their reason says so.
fn mark_gangs(ctx: &PlanContext<'_>, in_zone: &mut [Candidate], draining: &[bool]) {
    let in_gang = |c: &Candidate, draining: bool| {
        draining && c.held.is_none() && matches!(c.pod.job.kind, JobKind::PodGroup)
    };
    let mut leaving: HashMap<&JobKey, u32> = HashMap::new();
    for (candidate, &draining) in in_zone.iter().zip(draining) {
        if in_gang(candidate, draining) {
            *leaving.entry(&candidate.pod.job).or_default() += 1;
        }
    }
    if leaving.is_empty() {
        return;
    }
    let gangs: HashMap<JobKey, Gang> = leaving
        .into_iter()
        .filter_map(|(job, n)| Some((job.clone(), ctx.gang_taken_below_minimum(job, n)?)))
        .collect();
    for (candidate, &draining) in in_zone.iter_mut().zip(draining) {
        if !in_gang(candidate, draining) {
            continue;
        }
        if let Some(gang) = gangs.get(&candidate.pod.job) {
            candidate.gang = Some(*gang);
            candidate.reason = format!("{}; {gang}, taken whole", candidate.reason);
        }
    }
}

/// Zones whose round is due: everything TDM evicts in a zone, placement violations included, is
/// that zone's round. Pacing violations by evictPeriod too keeps one timer per zone and never evicts
/// faster than asked.
fn due_zones<'c>(ctx: &'c PlanContext<'_>) -> impl Iterator<Item = &'c ZoneView> + 'c {
    ctx.zones
        .values()
        .filter(|zone| zone.state.is_ok() && zone.round_due)
}

/// The zone's pods an eviction would move: running, not already leaving, and not bound to their
/// node (DaemonSet and static pods belong to it; evicting them moves nothing).
fn movable_pods<'c>(
    ctx: &'c PlanContext<'_>,
    zone: &'c ZoneView,
) -> impl Iterator<Item = &'c Arc<PodInfo>> + 'c {
    ctx.snapshot
        .zone_nodes(&zone.name)
        .flat_map(|node| node.pods.values())
        .filter(move |pod| {
            pod.phase == PodPhase::Running && !ctx.is_leaving(pod) && !pod.is_node_bound()
        })
}

fn violation(pod: &Arc<PodInfo>, zone: &ZoneView, why: Violation) -> Candidate {
    Candidate::new(
        pod,
        ID,
        format!("placement violation: {}", why.describe(pod, &zone.name)),
    )
}

/// Its pods must leave the zone wherever they can go next; an owner who declared them preemptable
/// accepted exactly this eviction.
fn exemptions(
    ctx: &PlanContext<'_>,
    pod: &PodInfo,
    zone: &ZoneView,
    placement: ZonePlacement,
) -> Exemptions {
    Exemptions {
        node_fit: true,
        switchable_protections: ctx.declared_preemptable(pod) == Setting::Valid(true),
        bare_pod: false,
        budget: placement == ZonePlacement::Allowed && zone.lifts_budgets(),
    }
}

/// Job by job; within a job the least important pod first (lowest priority), then the one whose
/// eviction throws away the least work (the least run since its start, or since the checkpoint it
/// says), then by name so that the order never depends on map iteration.
fn victim_order(pod: &Arc<PodInfo>, now: jiff::Timestamp) -> impl Ord + use<> {
    (
        pod.job.clone(),
        pod.priority.unwrap_or(0),
        pod.run_since_saved(now),
        pod.key.clone(),
    )
}

#[cfg(test)]
mod tests;
