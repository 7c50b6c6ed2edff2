//! The drain plan: every zone's drain ahead of its next close (and every closed zone's that still
//! holds pods), planned together in one eviction queue. When each `auto` drain starts is chosen with
//! all the others in the queue, so that each keeps its margin given the rest; the controller starts
//! the drains it says are due, its zones' status, Events and metrics say what it expects, and
//! `tidal report`, `explain` and `timeline` read the same plan.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};

use super::{
    advice,
    inputs::{self, Queued, Termination},
    model::{self, DrainEstimate, Sending, ZoneDrain},
    outlook::{AutoLead, SharedDrain, ZoneOutlook, misses},
    pacing::TokenBucket,
    settings::DrainSettings,
};
use crate::{
    api::{BudgetsAfterClose, PolicyMode},
    cluster::{PodInfo, PolicyInfo, Snapshot, ZoneInfo},
};

/// What the controller knows that the cluster does not show: what it has seen of terminations, its
/// queue, its rate limit. Offline commands know none of it.
pub struct Live<'a> {
    /// How long evicted pods of a zone took to go, where enough were seen.
    pub observed: &'a dyn Fn(&str) -> Option<SignedDuration>,
    /// The evictions its queue holds.
    pub queued: &'a Queued,
    /// Its token bucket as it stands.
    pub bucket: Option<TokenBucket>,
}

impl Live<'_> {
    /// Nothing seen, nothing queued: a plan from the cluster alone.
    pub fn none() -> Live<'static> {
        static NOTHING_QUEUED: std::sync::OnceLock<Queued> = std::sync::OnceLock::new();
        Live {
            observed: &|_| None,
            queued: NOTHING_QUEUED.get_or_init(Queued::default),
            bucket: None,
        }
    }
}

/// Times the `auto` starts are revised together at most.
const START_REVISIONS: usize = 8;

/// Starts closer than this are the same start: the estimate's rounding.
const SECOND: SignedDuration = SignedDuration::from_secs(1);

/// The policy whose TDM strategy drains the zones: the first in `Evict` mode, else the first in
/// `DryRun` (what a report previews).
pub fn draining_policy<'p>(policies: &[&'p PolicyInfo]) -> Option<&'p PolicyInfo> {
    let tdm = |mode: PolicyMode| {
        policies
            .iter()
            .copied()
            .find(|p| p.spec.mode == mode && p.spec.strategies.tdm.is_some())
    };
    tdm(PolicyMode::Evict).or_else(|| tdm(PolicyMode::DryRun))
}

/// How a zone's drain starts, for the plan.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Start {
    /// Closed, or draining: the drain is under way (since when, for a close ahead), its next round
    /// at `next_round`.
    Evicting {
        since: Option<Timestamp>,
        capped: Option<SignedDuration>,
        next_round: Timestamp,
    },
    /// A fixed lead: the drain starts then.
    Fixed(Timestamp),
    /// `auto`, not started: the plan chooses, within `maxDrainBefore` (`max`).
    Auto {
        at: Timestamp,
        capped: Option<SignedDuration>,
        max: SignedDuration,
    },
}

impl Start {
    /// When the drain's first round may start, seen from `now`.
    fn first_round(self, now: Timestamp) -> Timestamp {
        match self {
            Start::Evicting { next_round, .. } => next_round,
            Start::Fixed(at) | Start::Auto { at, .. } => at.max(now),
        }
    }
}

/// Every zone's drain ahead of its next close (within the horizon), and of closed zones that still
/// hold pods, planned together at `now`.
pub fn plan(
    snapshot: &Snapshot,
    policies: &[&PolicyInfo],
    now: Timestamp,
    settings: &DrainSettings,
    live: &Live<'_>,
) -> Vec<ZoneOutlook> {
    let Some(policy) = draining_policy(policies) else {
        return Vec::new();
    };
    let horizon = now.checked_add(settings.horizon).unwrap_or(Timestamp::MAX);
    // The zones to plan, each with its close (`None`: closed) and state.
    let mut ahead: BTreeMap<String, (Option<Timestamp>, bool)> = BTreeMap::new();
    for zone in snapshot.zones.values() {
        let Ok(state) = zone.state_at(now) else {
            continue;
        };
        if state.open {
            if let Some(close) = state.next_change.filter(|close| *close <= horizon) {
                ahead.insert(zone.name.clone(), (Some(close), state.draining));
            }
        } else {
            ahead.insert(zone.name.clone(), (None, true));
        }
    }
    let closes: BTreeMap<String, Option<Timestamp>> = ahead
        .iter()
        .map(|(z, (close, _))| (z.clone(), *close))
        .collect();
    let termination =
        |zone: &str, pod: &PodInfo| settings.terminates_in((live.observed)(zone), pod);
    let termination: Termination<'_> = &termination;
    let mut pods = inputs::zone_pods(snapshot, policy, &closes, now, termination, live.queued);

    let mut zones: Vec<(&ZoneInfo, u32)> = Vec::new();
    let mut drains: Vec<ZoneDrain> = Vec::new();
    let mut starts: Vec<Start> = Vec::new();
    let mut durations_alone = Vec::new();
    for (name, (close, evicting)) in &ahead {
        let (Some(zone), Some(zone_pods)) = (snapshot.zones.get(name), pods.remove(name)) else {
            continue;
        };
        let notice = zone.eviction_notice();
        let drain = ZoneDrain {
            zone: name.clone(),
            // The earliest its pods, told from now, can go: what an `auto` drain's length is counted
            // from, so that its notice is given before it rather than added to it. The starts weighed
            // together set each drain's own first round.
            first_round: notice.map_or(now, |notice| now.checked_add(notice).unwrap_or(now)),
            evict_period: zone.spec.evict_period.to_signed(),
            close: *close,
            ignore_budgets_after_close: zone.spec.budgets_after_close == BudgetsAfterClose::Ignore,
            round_cap: zone_pods.round_cap,
            notice,
            jobs: zone_pods.jobs,
            stays: zone_pods.stays,
        };
        // How long an `auto` drain takes on its own: its first start, and what its messages compare.
        let alone = if zone.drains_automatically() {
            alone(&drain, now, settings)
        } else {
            Default::default()
        };
        starts.push(first_start(zone, &drain, *evicting, alone, now, settings));
        zones.push((zone, zone_pods.remaining));
        drains.push(drain);
        durations_alone.push(alone);
    }
    let alone = durations_alone;
    let sending = Sending {
        pacing: settings.pacing,
        now,
        bucket: live.bucket.clone(),
    };
    let (estimates, set_by) = plan_starts(&mut drains, &mut starts, now, settings, &sending);
    let overlaps = overlaps(&estimates);
    zones
        .into_iter()
        .zip(drains.into_iter().zip(starts))
        .zip(estimates)
        .zip(alone.into_iter().zip(set_by))
        .enumerate()
        .map(
            |(index, ((((zone, remaining), (drain, start)), estimate), (alone, set_by)))| {
                let (drain_start, start_now, capped_lead, lead) = match start {
                    Start::Evicting { since, capped, .. } => {
                        (since.or(drain.close.map(|_| now)), false, capped, None)
                    }
                    Start::Fixed(at) => (Some(at), false, None, None),
                    Start::Auto { at, capped, .. } => (
                        Some(at),
                        at <= now,
                        capped,
                        Some(AutoLead {
                            needs: estimate.duration(),
                            alone,
                            shared_with: overlaps[index].clone(),
                            later: set_by.filter(|later| later.needs > estimate.duration()),
                        }),
                    ),
                };
                let tolerance = estimate
                    .empty_at()
                    .map_or(settings.slack, |empty| settings.tolerance(now, empty));
                let closed_at = drain
                    .close
                    .is_none()
                    .then(|| zone.schedule.as_ref().ok()?.previous_change(now))
                    .flatten();
                let at_risk = misses(
                    &estimate,
                    (drain.close, closed_at),
                    remaining,
                    now,
                    tolerance,
                );
                let mut outlook = ZoneOutlook {
                    zone: zone.name.clone(),
                    drain_before: zone.spec.drain_before,
                    budgets_after_close: zone.spec.budgets_after_close,
                    close: drain.close,
                    closed_at,
                    evicting: matches!(start, Start::Evicting { .. }),
                    drain_start: drain.close.and(drain_start),
                    notices_from: super::notice::noticing(zone, now, drain.close.and(drain_start))
                        .map(|noticing| noticing.from),
                    start_now,
                    capped_lead,
                    lead,
                    remaining,
                    estimate,
                    tolerance,
                    at_risk,
                    summary: String::new(),
                    fix: None,
                };
                outlook.summary = advice::summary(&outlook, &drain, settings);
                // Also for a miss within the estimate's error: a verdict held from an earlier plan
                // still says what would fix it.
                let short = outlook.margin().is_none_or(|margin| margin.is_negative());
                if at_risk || (short && !outlook.idle()) {
                    outlook.fix = Some(advice::fix(&outlook, &drain, zone, settings));
                }
                outlook
            },
        )
        .collect()
}

/// Where each drain starts before the zones are weighed together: a drain under way goes on at its
/// next round, a fixed lead starts when it says, an `auto` drain as long before the close as it
/// needs alone.
fn first_start(
    zone: &ZoneInfo,
    drain: &ZoneDrain,
    evicting: bool,
    alone: SignedDuration,
    now: Timestamp,
    settings: &DrainSettings,
) -> Start {
    let max = zone.spec.max_drain_before.to_signed();
    let Some(close) = drain.close.filter(|_| !evicting) else {
        let fixed = drain.close.and_then(|close| zone.fixed_drain_start(close));
        let started = drain
            .close
            .and_then(|close| zone.drain_started.filter(|s| s.close == close));
        // An `auto` drain under way still says when `maxDrainBefore` was too short for it.
        let capped = match (drain.close, started) {
            (Some(close), Some(_)) => auto_start(close, alone, max, settings).1,
            _ => None,
        };
        return Start::Evicting {
            since: fixed.or(started.map(|s| s.at)),
            capped,
            next_round: next_round(zone, now),
        };
    };
    if let Some(start) = zone.fixed_drain_start(close) {
        return Start::Fixed(start);
    }
    let (at, capped) = auto_start(close, alone, max, settings);
    Start::Auto { at, capped, max }
}

/// How long a drain takes from its first round, on its own: cooldowns that end later make it longer,
/// so the lead errs early.
fn alone(drain: &ZoneDrain, now: Timestamp, settings: &DrainSettings) -> SignedDuration {
    model::estimate(
        std::slice::from_ref(drain),
        &Sending::fresh(settings.pacing, now),
    )
    .first()
    .map_or(SignedDuration::ZERO, DrainEstimate::duration)
}

/// The start an `auto` drain of this length wants, within `maxDrainBefore` (`max`), and the lead it
/// would want when `maxDrainBefore` is shorter.
fn auto_start(
    close: Timestamp,
    duration: SignedDuration,
    max: SignedDuration,
    settings: &DrainSettings,
) -> (Timestamp, Option<SignedDuration>) {
    let wanted = settings.lead_for(duration);
    let capped = (wanted > max).then_some(wanted);
    let at = close.checked_sub(wanted.min(max)).unwrap_or(Timestamp::MIN);
    (at, capped)
}

/// Estimates every drain together and moves `auto` starts until each keeps its margin given the
/// others: a drain that shares the queue takes longer than alone, and so needs a longer lead; a start
/// moved early for a drain that has moved away since goes later again if the drain keeps its margin
/// from there. Each drain's first round is set from its start; the estimates of the last revision
/// are returned, with the longer drain that set each start moved early.
fn plan_starts(
    drains: &mut [ZoneDrain],
    starts: &mut [Start],
    now: Timestamp,
    settings: &DrainSettings,
    sending: &Sending,
) -> (Vec<DrainEstimate>, Vec<Option<SharedDrain>>) {
    // What set each `auto` start that a revision moved: the longer drain a later start would have.
    let mut set_by: Vec<Option<SharedDrain>> = vec![None; drains.len()];
    let mut revision = 0;
    loop {
        for (drain, start) in drains.iter_mut().zip(starts.iter()) {
            drain.first_round = start.first_round(now);
        }
        let (estimates, rests) = model::estimate_with_rests(drains, sending);
        if revision == START_REVISIONS {
            return (estimates, set_by);
        }
        let shared = overlaps(&estimates);
        let mut moved = false;
        let mut later = Vec::new();
        for (index, ((drain, start), estimate)) in drains
            .iter()
            .zip(starts.iter_mut())
            .zip(&estimates)
            .enumerate()
        {
            let (Start::Auto { at, max, .. }, Some(close)) = (*start, drain.close) else {
                continue;
            };
            if at <= now {
                continue;
            }
            let (wanted, capped) = auto_start(close, estimate.duration(), max, settings);
            // A second's difference is the estimate's rounding, not a reason to revise.
            if wanted < at.checked_sub(SECOND).unwrap_or(at) {
                *start = Start::Auto {
                    at: wanted,
                    capped,
                    max,
                };
                set_by[index] = Some(SharedDrain {
                    needs: estimate.duration(),
                    shared_with: shared[index].clone(),
                });
                moved = true;
            } else if wanted > at.checked_add(SECOND).unwrap_or(at) {
                later.push((index, wanted, capped, max));
            }
        }
        // A start moved earlier than its drain needs (the drains it overlapped have moved since)
        // goes later again, where the drain still keeps its margin from there.
        for (index, wanted, capped, max) in later {
            let Some(close) = drains[index].close else {
                continue;
            };
            // Each start is tried against the others as they were estimated, so the one moved
            // goes back; the estimate goes on from where the queue rested before either start.
            let was = std::mem::replace(&mut drains[index].first_round, wanted.max(now));
            let from_there = model::estimate_moved(drains, sending, &rests, index);
            drains[index].first_round = was;
            let Some(from_there) = from_there else {
                continue;
            };
            let (needed, _) = auto_start(close, from_there.duration(), max, settings);
            if needed >= wanted.checked_sub(SECOND).unwrap_or(wanted) {
                starts[index] = Start::Auto {
                    at: wanted,
                    capped,
                    max,
                };
                set_by[index] = None;
                moved = true;
            }
        }
        if !moved {
            return (estimates, set_by);
        }
        revision += 1;
    }
}

/// For each drain, the others whose evictions are queued while it is: from its first round to its
/// last send.
fn overlaps(estimates: &[DrainEstimate]) -> Vec<Vec<String>> {
    let span = |e: &DrainEstimate| e.sent_by.map(|sent| (e.first_round, sent));
    estimates
        .iter()
        .map(|this| {
            let Some((from, to)) = span(this) else {
                return Vec::new();
            };
            estimates
                .iter()
                .filter(|other| other.zone != this.zone)
                .filter(|other| span(other).is_some_and(|(f, t)| f <= to && t >= from))
                .map(|other| other.zone.clone())
                .collect()
        })
        .collect()
}

/// When an evicting zone's next round may start: now, or once `evictPeriod` has passed since the last.
fn next_round(zone: &ZoneInfo, now: Timestamp) -> Timestamp {
    zone.next_round(zone.last_eviction_round.map(|last| last.min(now)), now)
        .unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{
        cluster::ClusterCache,
        drain::{pacing::Pacing, settings::grace_period},
        testkit::{Cluster, node, pod, policy, ts, zone},
    };

    /// Zone `z` (node `rev-1`, plenty of room) open 20:00-05:00 UTC: at 04:00 it closes in an hour.
    /// Zone `z` of one node, and a node outside it where evicted pods' replacements run.
    fn cluster(spec: serde_json::Value, pods: usize) -> ClusterCache {
        cluster_where(spec, pods, true)
    }

    fn cluster_where(spec: serde_json::Value, pods: usize, room_elsewhere: bool) -> ClusterCache {
        let mut world = Cluster::new()
            .node(
                node("rev-1")
                    .zone("z")
                    .allocatable("1000", "1000Gi", 10_000),
            )
            .zone(zone("z").window("20:00-05:00").spec(spec));
        if room_elsewhere {
            world = world.node(node("plain-1"));
        }
        let world = world.pods((0..pods).map(|i| {
            pod(&format!("batch/p{i}"), "rev-1")
                .owned_by("ReplicaSet", &format!("rs{i}"))
                .preemptable()
        }));
        world.cache
    }

    fn settings(qps: f64) -> DrainSettings {
        DrainSettings::new(Pacing {
            qps,
            burst: 1,
            concurrency: 4,
            request: SignedDuration::from_millis(50),
        })
    }

    fn outlook_at(cache: &mut ClusterCache, now: &str, qps: f64) -> ZoneOutlook {
        let snapshot = cache.snapshot();
        let evict = policy(json!({"mode": "Evict"}));
        let mut all = plan(&snapshot, &[&evict], ts(now), &settings(qps), &Live::none());
        assert_eq!(all.len(), 1);
        all.remove(0)
    }

    #[test]
    fn an_auto_drain_starts_its_estimated_length_times_the_margin_before_the_close() {
        let mut cache = cluster(json!({}), 40);
        // 40 pods at 1 a second (after a burst of 1), the last gone 30 s (its grace) later: about
        // 70 s; with the margin and slack the drain starts 135 s before the close at 05:00:01.
        let early = outlook_at(&mut cache, "2026-11-22T04:00:00Z", 1.0);
        assert!(!early.start_now && !early.evicting && !early.at_risk);
        let start = early.drain_start.unwrap();
        let lead = early.close.unwrap().duration_since(start).as_secs_f64();
        assert!((133.0..138.0).contains(&lead), "{lead}");
        assert!(
            early.summary.contains("40 pods in 40 jobs"),
            "{}",
            early.summary
        );
        // Once that instant comes, the drain starts.
        let due = outlook_at(&mut cache, "2026-11-22T04:57:50Z", 1.0);
        assert!(due.start_now, "{due:?}");
        assert!(!due.at_risk);
        assert!(due.margin().unwrap().is_positive());
    }

    #[test]
    fn a_notice_that_cannot_be_given_before_the_close_is_a_risk_with_its_fix() {
        let spec = json!({"evictionNotice": "10m", "drainBefore": "10m"});
        // Draining since 04:50:01; at 04:55 no pod is told yet: none can go before 05:05.
        let mut late = cluster(spec.clone(), 5);
        let outlook = outlook_at(&mut late, "2026-11-22T04:55:00Z", 10.0);
        assert!(outlook.at_risk, "{outlook:?}");
        assert!(
            outlook.estimate.empty_at().unwrap() > ts("2026-11-22T05:05:00Z"),
            "{outlook:?}"
        );
        assert_eq!(
            outlook.estimate.bound,
            crate::drain::Bound::Notice {
                notice: SignedDuration::from_mins(10)
            }
        );
        let fix = outlook.fix.unwrap();
        assert!(fix.contains("spec.evictionNotice"), "{fix}");
        // At 04:00 the pods are told at 04:39:51 and go from 04:50:01, when the drain starts.
        let mut early = cluster(spec, 5);
        let outlook = outlook_at(&mut early, "2026-11-22T04:00:00Z", 10.0);
        assert!(!outlook.at_risk, "{outlook:?}");
        assert_eq!(outlook.notices_from, Some(ts("2026-11-22T04:39:51Z")));
    }

    #[test]
    fn the_eviction_grace_period_replaces_each_pod_s_own() {
        let mut cache = cluster(json!({}), 40);
        let snapshot = cache.snapshot();
        let evict = policy(json!({"mode": "Evict"}));
        let lead = |grace: Option<i64>| {
            let settings = DrainSettings {
                grace_period: grace_period(grace),
                ..settings(1.0)
            };
            let all = plan(
                &snapshot,
                &[&evict],
                ts("2026-11-22T04:00:00Z"),
                &settings,
                &Live::none(),
            );
            let start = all[0].drain_start.unwrap();
            all[0].close.unwrap().duration_since(start).as_secs_f64()
        };
        // The pods' own 30 s, then none (killed at once), then five minutes each: the last pod's
        // termination adds to the drain, times the margin.
        let own = lead(None);
        assert!((lead(Some(0)) - (own - 45.0)).abs() < 2.0, "{own}");
        assert!((lead(Some(300)) - (own + 405.0)).abs() < 2.0, "{own}");
    }

    #[test]
    fn a_fixed_lead_too_short_for_the_rate_is_at_risk_with_the_fix_named() {
        let mut cache = cluster(json!({"drainBefore": "4m"}), 600);
        let outlook = outlook_at(&mut cache, "2026-11-22T04:00:00Z", 1.0);
        assert!(outlook.at_risk);
        assert_eq!(outlook.estimate.bound, crate::drain::Bound::Rate);
        let fix = outlook.fix.unwrap();
        assert!(fix.contains("drainBefore 4m0s is shorter than"), "{fix}");
        assert!(fix.contains("--eviction-qps to at least 3"), "{fix}");
        assert!(
            outlook.estimate.at_close > 300,
            "{}",
            outlook.estimate.at_close
        );
    }

    #[test]
    fn a_job_that_loses_one_pod_at_a_time_is_at_risk_whatever_the_rate() {
        let mut cache = cluster(json!({"maxDrainBefore": "10m"}), 0);
        for i in 0..100 {
            cache.apply_pod(
                pod(&format!("batch/big-{i}"), "rev-1")
                    .owned_by("ReplicaSet", "big")
                    .preemptable()
                    .annotation("volcano.sh/jdb-max-unavailable", "1")
                    .spec("terminationGracePeriodSeconds", json!(60))
                    .build(),
                Timestamp::UNIX_EPOCH,
            );
        }
        let outlook = outlook_at(&mut cache, "2026-11-22T04:51:00Z", 1000.0);
        assert!(outlook.at_risk);
        assert!(
            outlook.start_now,
            "capped at maxDrainBefore, it starts at once"
        );
        assert!(outlook.capped_lead.is_some());
        let fix = outlook.fix.unwrap();
        assert!(
            fix.contains("job ReplicaSet batch/big needs 100 rounds"),
            "{fix}"
        );
        assert!(fix.contains("raise maxDrainBefore"), "{fix}");
        assert!(
            outlook.summary.contains("bounded by the budget"),
            "{}",
            outlook.summary
        );
    }

    #[test]
    fn a_job_whose_replacements_cannot_run_elsewhere_is_at_risk_with_the_reason() {
        // The zone's node is the only one: the first evicted pod's replacement stays Pending and
        // holds maxUnavailable 1 until the zone opens again.
        let mut cache = cluster_where(json!({}), 0, false);
        for i in 0..4 {
            cache.apply_pod(
                pod(&format!("batch/etl-{i}"), "rev-1")
                    .owned_by("ReplicaSet", "etl")
                    .preemptable()
                    .annotation("volcano.sh/jdb-max-unavailable", "1")
                    .build(),
                Timestamp::UNIX_EPOCH,
            );
        }
        let outlook = outlook_at(&mut cache, "2026-11-22T04:00:00Z", 5.0);
        assert!(outlook.at_risk);
        assert_eq!(outlook.estimate.rounds.len(), 1);
        assert_eq!(
            outlook
                .estimate
                .stays
                .get(crate::drain::model::STAYS_NO_ROOM),
            Some(&3)
        );
        let fix = outlook.fix.unwrap();
        assert!(
            fix.contains("3 preemptable pods wait for their jobs' evicted pods")
                && fix.contains("add schedulable nodes outside revocable zones"),
            "{fix}"
        );
    }

    #[test]
    fn a_closed_zone_held_by_a_pending_replacement_says_so() {
        // Closed, as the controller sees it after one round: the evicted pod's replacement is Pending
        // (no node outside the zone) and holds maxUnavailable 1, so the two left stay for that reason.
        let mut cache = cluster_where(json!({}), 0, false);
        for (name, node) in [("etl-0", "rev-1"), ("etl-1", "rev-1"), ("etl-2", "")] {
            cache.apply_pod(
                pod(&format!("batch/{name}"), node)
                    .owned_by("ReplicaSet", "etl")
                    .preemptable()
                    .annotation("volcano.sh/jdb-max-unavailable", "1")
                    .build(),
                Timestamp::UNIX_EPOCH,
            );
        }
        let outlook = outlook_at(&mut cache, "2026-11-22T06:00:00Z", 5.0);
        assert!(outlook.at_risk && outlook.close.is_none());
        assert_eq!(
            outlook
                .estimate
                .stays
                .get(crate::drain::model::STAYS_NO_ROOM),
            Some(&2),
            "{:?}",
            outlook.estimate.stays
        );
        assert!(
            outlook
                .summary
                .starts_with("2 pods, no round can take any; 2 stay"),
            "{}",
            outlook.summary
        );
        let fix = outlook.fix.unwrap();
        assert!(fix.starts_with("2 preemptable pods wait for"), "{fix}");
        assert!(!fix.contains("the zone closed with"), "{fix}");
    }

    #[test]
    fn an_empty_zone_expects_nothing() {
        let mut cache = cluster(json!({}), 0);
        let outlook = outlook_at(&mut cache, "2026-11-22T04:00:00Z", 5.0);
        assert!(outlook.idle() && !outlook.at_risk);
        assert_eq!(outlook.expected_empty_at(), None);
        assert_eq!(outlook.summary, "no preemptable pods");
        let mut busy = cluster(json!({}), 2);
        let outlook = outlook_at(&mut busy, "2026-11-22T04:00:00Z", 5.0);
        assert!(outlook.expected_empty_at().is_some());
    }

    #[test]
    fn a_closed_zone_with_pods_left_is_at_risk_and_evicting() {
        let mut cache = cluster(json!({}), 3);
        let outlook = outlook_at(&mut cache, "2026-11-22T06:00:00Z", 5.0);
        assert!(outlook.evicting && outlook.at_risk);
        assert_eq!(outlook.close, None);
        assert_eq!(outlook.remaining, 3);
    }

    /// An `auto` start as the plan makes it before the drains are weighed together: from the drain's
    /// length alone, within the default `maxDrainBefore`.
    fn auto(drain: &ZoneDrain, now: Timestamp, settings: &DrainSettings) -> Start {
        let max = SignedDuration::from_hours(2);
        let length = alone(drain, now, settings);
        let (at, capped) = auto_start(drain.close.unwrap(), length, max, settings);
        Start::Auto { at, capped, max }
    }

    #[test]
    fn starts_weighed_together_through_every_revision() {
        use crate::{
            cluster::{IntOrPercent, JobBudget},
            drain::model::fixtures::{job, one_pod_jobs, pacing, zone},
            testkit::at,
        };
        // Seven drains in one queue at 5 a second: three of one-pod jobs closing together, one
        // bound by its budget closing earlier, one closing later, one with a fixed start and one
        // under way. The `auto` starts of a, b and c move earlier and later again through all
        // eight revisions, some later starts kept and some refused: what each revision decides
        // rests on every estimate of a start tried later.
        let now = at(0);
        let pacing = pacing(5.0, 10, 4);
        let settings = DrainSettings::new(pacing);
        let budget = Some(JobBudget::MaxUnavailable(IntOrPercent::Int(4)));
        let mut drains = vec![
            zone("a", 3_600, one_pod_jobs("a", 600, 30)),
            zone("b", 3_600, one_pod_jobs("b", 300, 30)),
            zone("c", 3_600, one_pod_jobs("c", 100, 30)),
            zone("d", 3_300, vec![job("big", 40, budget, 20)]),
            zone("e", 4_200, one_pod_jobs("e", 400, 10)),
            zone("f", 3_600, one_pod_jobs("f", 200, 30)),
            zone("g", 1_200, one_pod_jobs("g", 100, 30)),
        ];
        let mut starts: Vec<Start> = drains
            .iter()
            .map(|drain| auto(drain, now, &settings))
            .collect();
        starts[5] = Start::Fixed(at(3_000));
        starts[6] = Start::Evicting {
            since: Some(at(-100)),
            capped: None,
            next_round: at(30),
        };
        let (estimates, set_by) = plan_starts(
            &mut drains,
            &mut starts,
            now,
            &settings,
            &Sending::fresh(pacing, now),
        );
        let micros = |at: Timestamp| at.duration_since(now).as_micros();
        let first_rounds: Vec<i128> = drains.iter().map(|d| micros(d.first_round)).collect();
        assert_eq!(
            first_rounds,
            [
                3_332_690_625,
                3_310_190_625,
                3_331_987_500,
                2_429_925_000,
                4_037_925_000,
                3_000_000_000,
                30_000_000
            ]
        );
        for (drain, start) in drains.iter().zip(&starts) {
            assert_eq!(drain.first_round, start.first_round(now), "{}", drain.zone);
        }
        // a and b start earlier than they need from there: a later start would share the queue.
        let set: Vec<Option<(i64, Vec<String>)>> = set_by
            .iter()
            .map(|by| {
                Some((
                    by.as_ref()?.needs.as_secs(),
                    by.as_ref()?.shared_with.clone(),
                ))
            })
            .collect();
        let names = |zones: &[&str]| zones.iter().map(|z| (*z).to_owned()).collect();
        assert_eq!(
            set,
            [
                Some((158, names(&["b", "c"]))),
                Some((173, names(&["a"]))),
                None,
                None,
                None,
                None,
                None
            ]
        );
        let margins: Vec<Option<i64>> = estimates
            .iter()
            .map(|e| Some(e.margin()?.as_secs()))
            .collect();
        assert_eq!(
            margins,
            [
                Some(61),
                Some(201),
                Some(181),
                Some(310),
                Some(74),
                Some(531),
                Some(1_121)
            ]
        );
    }

    #[test]
    fn without_a_tdm_policy_there_is_no_outlook() {
        let mut cache = cluster(json!({}), 3);
        let snapshot = cache.snapshot();
        let lnu = policy(json!({"strategies": {"tdm": null, "removeDuplicates": {}}}));
        assert!(
            plan(
                &snapshot,
                &[&lnu],
                ts("2026-11-22T04:00:00Z"),
                &settings(5.0),
                &Live::none()
            )
            .is_empty()
        );
    }
}
