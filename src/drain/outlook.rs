//! Every zone's drain ahead of its next close: when it starts (`auto` decides from the estimate),
//! when the zone is expected to be empty, and whether that is before the close. One function for the
//! controller, the report and the timeline, so that all three say the same.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};

use super::{
    advice,
    inputs::{self, Termination},
    model::{self, DrainEstimate, Pacing, ZoneDrain},
};
use crate::{
    api::{BudgetsAfterClose, DrainBefore, PolicyMode},
    cluster::{PodInfo, PolicyInfo, Snapshot, ZoneInfo},
};

/// What the drain estimate takes beyond the cluster.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DrainSettings {
    pub pacing: Pacing,
    /// An `auto` drain starts this many times its estimated length before the close...
    pub margin: f64,
    /// ...plus this much (a cycle's start, the watch's delay, a slow first request).
    pub slack: SignedDuration,
    /// Closes further ahead than this are not estimated.
    pub horizon: SignedDuration,
    /// The grace period every eviction sets (`--eviction-grace-period-seconds`): a pod then takes
    /// this long to go, not its own `terminationGracePeriodSeconds`. `None`: each pod's own.
    pub grace_period: Option<SignedDuration>,
}

/// `--eviction-grace-period-seconds` as the outlook reads it.
pub fn grace_period(seconds: Option<i64>) -> Option<SignedDuration> {
    seconds.map(|s| SignedDuration::from_secs(s.max(0)))
}

impl DrainSettings {
    pub fn new(pacing: Pacing) -> Self {
        DrainSettings {
            pacing,
            margin: DEFAULT_MARGIN,
            slack: SignedDuration::from_secs(30),
            horizon: SignedDuration::from_hours(24),
            grace_period: None,
        }
    }

    /// The lead an `auto` drain of this length needs, before `maxDrainBefore` bounds it.
    pub fn lead_for(&self, duration: SignedDuration) -> SignedDuration {
        let scaled = duration.as_secs_f64() * self.margin.max(1.0);
        SignedDuration::try_from_secs_f64(scaled)
            .unwrap_or(SignedDuration::MAX)
            .saturating_add(self.slack)
    }
}

/// `--drain-margin`'s default: half as long again as the estimate.
pub const DEFAULT_MARGIN: f64 = 1.5;

/// One zone's drain.
#[derive(Clone, Debug, PartialEq)]
pub struct ZoneOutlook {
    pub zone: String,
    pub drain_before: DrainBefore,
    pub budgets_after_close: BudgetsAfterClose,
    /// The close ahead; `None` for a closed zone (its close has passed).
    pub close: Option<Timestamp>,
    /// The zone evicts now: it is closed, or draining ahead of its close.
    pub evicting: bool,
    /// When the drain for `close` starts (or started, or would start for an `auto` zone).
    pub drain_start: Option<Timestamp>,
    /// An `auto` drain is due to start now: the caller records it.
    pub start_now: bool,
    /// The lead an `auto` drain needs, when `maxDrainBefore` is shorter.
    pub capped_lead: Option<SignedDuration>,
    /// Preemptable pods on the zone now.
    pub remaining: u32,
    pub estimate: DrainEstimate,
    /// The zone will not be empty at its close (or is closed and still holds pods).
    pub at_risk: bool,
    /// What the estimate rests on, in a line.
    pub summary: String,
    /// What would make the close, when at risk.
    pub fix: Option<String>,
}

impl ZoneOutlook {
    /// Time from the expected empty zone to the close; negative when it will be missed.
    pub fn margin(&self) -> Option<SignedDuration> {
        self.estimate.margin()
    }

    /// Nothing to drain: no preemptable pod on the zone, none to evict.
    pub fn idle(&self) -> bool {
        self.remaining == 0 && self.estimate.pods == 0
    }

    /// When the zone is expected to hold no preemptable pod; `None` when it holds none already (the
    /// estimate would say "now", a value that moves at every refresh) or some will stay.
    pub fn expected_empty_at(&self) -> Option<Timestamp> {
        self.estimate.empty_at().filter(|_| !self.idle())
    }
}

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

/// Every zone's drain ahead of its next close (within the horizon), and of closed zones that still
/// hold pods. `observed` is how long evicted pods of a zone took to go, where the caller has seen
/// enough of them; otherwise each pod's grace period is assumed.
pub fn outlook(
    snapshot: &Snapshot,
    policies: &[&PolicyInfo],
    now: Timestamp,
    settings: &DrainSettings,
    observed: &dyn Fn(&str) -> Option<SignedDuration>,
) -> Vec<ZoneOutlook> {
    let Some(policy) = draining_policy(policies) else {
        return Vec::new();
    };
    let horizon = now.checked_add(settings.horizon).unwrap_or(Timestamp::MAX);
    // The zones to estimate, each with its close (`None`: closed) and state.
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
    let termination = |zone: &str, pod: &PodInfo| {
        observed(zone)
            .or(settings.grace_period)
            .unwrap_or_else(|| inputs::grace_of(pod))
    };
    let termination: Termination<'_> = &termination;
    let mut pods = inputs::zone_pods(snapshot, policy, &closes, now, termination);

    let mut plans = Vec::new();
    for (name, (close, evicting)) in &ahead {
        let (Some(zone), Some(zone_pods)) = (snapshot.zones.get(name), pods.remove(name)) else {
            continue;
        };
        let remaining = zone_pods.remaining;
        let mut drain = ZoneDrain {
            zone: name.clone(),
            first_round: now,
            evict_period: zone.spec.evict_period.to_signed(),
            close: *close,
            ignore_budgets_after_close: zone.spec.budgets_after_close == BudgetsAfterClose::Ignore,
            round_cap: zone_pods.round_cap,
            jobs: zone_pods.jobs,
            stays: zone_pods.stays,
        };
        let start = drain_start(zone, &drain, *close, *evicting, now, settings);
        drain.first_round = if *evicting {
            next_round(zone, now)
        } else {
            start.at.max(now)
        };
        plans.push((zone, drain, *evicting, start, remaining));
    }

    let drains: Vec<ZoneDrain> = plans.iter().map(|(_, drain, ..)| drain.clone()).collect();
    let estimates = model::estimate(&drains, settings.pacing);
    plans
        .into_iter()
        .zip(estimates)
        .map(|((zone, drain, evicting, start, remaining), estimate)| {
            let at_risk = match drain.close {
                Some(close) => estimate.empty_at().is_none_or(|empty| empty > close),
                None => remaining > 0,
            };
            let mut outlook = ZoneOutlook {
                zone: zone.name.clone(),
                drain_before: zone.spec.drain_before,
                budgets_after_close: zone.spec.budgets_after_close,
                close: drain.close,
                evicting,
                drain_start: drain.close.map(|_| start.at),
                start_now: start.now,
                capped_lead: start.capped,
                remaining,
                estimate,
                at_risk,
                summary: String::new(),
                fix: None,
            };
            outlook.summary = advice::summary(&outlook, &drain, settings);
            if at_risk {
                outlook.fix = Some(advice::fix(&outlook, &drain, zone, settings));
            }
            outlook
        })
        .collect()
}

/// When the drain for the close starts.
struct Start {
    at: Timestamp,
    /// An `auto` drain decided now.
    now: bool,
    capped: Option<SignedDuration>,
}

fn drain_start(
    zone: &ZoneInfo,
    drain: &ZoneDrain,
    close: Option<Timestamp>,
    evicting: bool,
    now: Timestamp,
    settings: &DrainSettings,
) -> Start {
    let Some(close) = close else {
        return Start {
            at: now,
            now: false,
            capped: None,
        };
    };
    if let Some(start) = zone.fixed_drain_start(close) {
        return Start {
            at: start,
            now: false,
            capped: None,
        };
    }
    // How long the drain takes on its own, started now: cooldowns that end later make it longer, so
    // the lead errs early.
    let alone = model::estimate(std::slice::from_ref(drain), settings.pacing);
    let duration = alone
        .first()
        .map_or(SignedDuration::ZERO, DrainEstimate::duration);
    let wanted = settings.lead_for(duration);
    let max = zone.spec.max_drain_before.to_signed();
    let capped = (wanted > max).then_some(wanted);
    if let Some(started) = zone.drain_started.filter(|s| s.close == close) {
        return Start {
            at: started.at,
            now: false,
            capped,
        };
    }
    let at = close.checked_sub(wanted.min(max)).unwrap_or(Timestamp::MIN);
    Start {
        at,
        now: !evicting && at <= now,
        capped,
    }
}

/// When an evicting zone's next round may start: now, or once `evictPeriod` has passed since the last.
fn next_round(zone: &ZoneInfo, now: Timestamp) -> Timestamp {
    zone.last_eviction_round
        .map(|last| last.min(now))
        .and_then(|last| last.checked_add(zone.spec.evict_period.to_signed()).ok())
        .map_or(now, |next| next.max(now))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{
        cluster::ClusterCache,
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
        let mut all = outlook(&snapshot, &[&evict], ts(now), &settings(qps), &|_| None);
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
    fn the_eviction_grace_period_replaces_each_pod_s_own() {
        let mut cache = cluster(json!({}), 40);
        let snapshot = cache.snapshot();
        let evict = policy(json!({"mode": "Evict"}));
        let lead = |grace: Option<i64>| {
            let settings = DrainSettings {
                grace_period: grace_period(grace),
                ..settings(1.0)
            };
            let all = outlook(
                &snapshot,
                &[&evict],
                ts("2026-11-22T04:00:00Z"),
                &settings,
                &|_| None,
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

    #[test]
    fn without_a_tdm_policy_there_is_no_outlook() {
        let mut cache = cluster(json!({}), 3);
        let snapshot = cache.snapshot();
        let lnu = policy(json!({"strategies": {"tdm": null, "removeDuplicates": {}}}));
        assert!(
            outlook(
                &snapshot,
                &[&lnu],
                ts("2026-11-22T04:00:00Z"),
                &settings(5.0),
                &|_| None
            )
            .is_empty()
        );
    }
}
