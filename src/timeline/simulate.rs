//! The simulation: cycles planned where the controller would run them, their evictions applied to the
//! cache as the controller's cycle applies them.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use jiff::{SignedDuration, Timestamp, tz::TimeZone};

use super::{
    Event, EventKind, MAX_SPAN, Move, PolicyRun, Timeline, Waiting,
    render::draw_bars,
    zones::{next_phase, zone_track},
};
use crate::{
    api::PolicyMode,
    cluster::{ClusterCache, ObjectKey, PolicyInfo},
    framework::Candidate,
    planner,
    report::clock,
};

/// Cycles simulated at most; a one-second policy interval over a week would be 604,800 plans.
const MAX_CYCLES: usize = 20_000;

/// Simulates `policies` on `cache` from `now` for `span` (at most [`MAX_SPAN`]); the cache is left as
/// the simulation ends.
pub fn simulate(
    cache: &mut ClusterCache,
    policies: &[&PolicyInfo],
    now: Timestamp,
    span: SignedDuration,
) -> Timeline {
    let until = now
        .checked_add(span.clamp(SignedDuration::ZERO, MAX_SPAN))
        .unwrap_or(Timestamp::MAX);
    let mut snapshot = cache.snapshot();
    let mut zones = Vec::new();
    let mut events = Vec::new();
    for zone in snapshot.zones.values() {
        let (track, changes) = zone_track(zone, now, until);
        zones.push(track);
        events.extend(changes);
    }
    let zone_tz: BTreeMap<String, TimeZone> = zones
        .iter()
        .map(|z| (z.name.clone(), z.tz.clone()))
        .collect();

    let evicting: Vec<PolicyInfo> = policies
        .iter()
        .map(|policy| {
            let mut policy = (*policy).clone();
            policy.spec.mode = PolicyMode::Evict;
            policy
        })
        .collect();
    let evicting: Vec<&PolicyInfo> = evicting.iter().collect();
    let tick = policies
        .iter()
        .map(|p| p.spec.interval.to_signed())
        .min()
        .unwrap_or(SignedDuration::from_mins(5))
        .max(SignedDuration::from_secs(1));
    let mut warnings = Vec::new();
    let mut rounds: BTreeMap<String, u32> = BTreeMap::new();
    // What the last event of each zone said was held, so that a cycle that changes nothing adds nothing.
    let mut held_shown: BTreeMap<String, BTreeSet<(ObjectKey, String)>> = BTreeMap::new();
    let mut was_evicting: BTreeMap<String, bool> = BTreeMap::new();
    let mut at = now;
    for cycle_number in 0.. {
        if cycle_number == MAX_CYCLES {
            warnings.push(format!(
                "simulated {MAX_CYCLES} cycles (the policies' interval is {tick}); stopped at {at}"
            ));
            break;
        }
        cache.update_snapshot(&mut snapshot);
        let cycle = planner::plan_all(&snapshot, &evicting, at);
        // Read no more this cycle: the simulated evictions change the cache's aggregates in place.
        cache.lend_snapshot(&mut snapshot);
        if cycle_number == 0 {
            warnings.extend(cycle.warnings.iter().cloned());
            for plan in &cycle.plans {
                if let Some(error) = &plan.error {
                    warnings.push(format!("policy {} did not run: {error}", plan.policy));
                }
            }
        }

        // Each pod once, under the first policy that plans it (later ones see it as leaving anyway).
        let mut evicted: HashSet<ObjectKey> = HashSet::new();
        let mut moves: BTreeMap<Option<String>, Vec<Move>> = BTreeMap::new();
        for plan in &cycle.plans {
            for eviction in &plan.evictions {
                let candidate = &eviction.candidate;
                if evicted.insert(candidate.pod.key.clone()) {
                    moves
                        .entry(candidate.zone.clone())
                        .or_default()
                        .push(Move::of(candidate, &plan.policy));
                }
            }
        }
        let mut held: BTreeMap<String, Vec<Waiting>> = BTreeMap::new();
        let mut held_keys: HashSet<ObjectKey> = HashSet::new();
        for plan in &cycle.plans {
            for skip in &plan.skipped {
                let candidate = &skip.candidate;
                let Some(zone) = &candidate.zone else {
                    continue;
                };
                let key = &candidate.pod.key;
                if !evicted.contains(key) && held_keys.insert(key.clone()) {
                    held.entry(zone.clone()).or_default().push(Waiting {
                        namespace: key.namespace.to_string(),
                        name: key.name.to_string(),
                        node: candidate.pod.node_name.as_deref().map(String::from),
                        gate: skip.reason.to_string(),
                        detail: skip.detail.clone(),
                        policy: plan.policy.clone(),
                        next_round: None,
                        next_round_when: None,
                    });
                }
            }
        }

        let event = |zone: Option<String>, kind: EventKind| Event {
            at,
            shown: at,
            when: String::new(),
            relative: String::new(),
            zone,
            event: kind,
            round: None,
            evictions: Vec::new(),
            waiting: Vec::new(),
        };
        // When a zone starts closing again, what it holds is news again.
        let mut evicting_zones = BTreeSet::new();
        for (name, view) in &cycle.zones {
            let now_evicting = view.state.as_ref().is_ok_and(|s| s.evicting());
            if was_evicting.insert(name.clone(), now_evicting) == Some(false) && now_evicting {
                held_shown.remove(name);
            }
            if now_evicting {
                evicting_zones.insert(name.clone());
            }
        }
        for (zone, pods) in moves {
            let mut round = event(zone.clone(), EventKind::Round);
            round.evictions = pods;
            if let Some(zone) = &zone {
                let number = rounds.entry(zone.clone()).or_default();
                *number += 1;
                round.round = Some(*number);
                round.waiting = held.remove(zone).unwrap_or_default();
                held_shown.insert(zone.clone(), signature(&round.waiting));
            }
            events.push(round);
        }
        // Only closing zones: an open zone holds placement violations at every cycle, which the
        // report lists; the timeline is about what closing zones leave behind.
        for (zone, waiting) in held {
            if !evicting_zones.contains(&zone) {
                continue;
            }
            let seen = signature(&waiting);
            if held_shown.get(&zone) != Some(&seen) {
                let mut stuck = event(Some(zone.clone()), EventKind::Held);
                stuck.waiting = waiting;
                events.push(stuck);
                held_shown.insert(zone, seen);
            }
        }

        // What the controller's cycle does with an accepted eviction; the pod is then gone for good.
        for key in &evicted {
            cache.delete_pod(key, at);
        }
        let zones_evicted: BTreeSet<&str> = cycle
            .plans
            .iter()
            .flat_map(|plan| plan.zones_with_evictions())
            .collect();
        for zone in zones_evicted {
            cache.note_eviction_round(zone, at);
        }

        let mut next = at.checked_add(tick).unwrap_or(Timestamp::MAX);
        for zone in cache.zones().values() {
            if let Some(phase_change) = next_phase(zone, at) {
                next = next.min(phase_change);
            }
        }
        if next > until || next <= at {
            break;
        }
        at = next;
    }

    finish(&mut events, &zone_tz, now);
    let mut timeline = Timeline {
        now,
        until,
        policies: policies
            .iter()
            .map(|p| PolicyRun {
                name: p.name.clone(),
                mode: format!("{:?}", p.spec.mode),
            })
            .collect(),
        zones,
        events,
        warnings,
    };
    draw_bars(&mut timeline);
    timeline
}

/// Sorts the events, fills in each waiting pod's next round and the shown times.
fn finish(events: &mut [Event], zone_tz: &BTreeMap<String, TimeZone>, now: Timestamp) {
    events
        .sort_by(|a, b| (a.at, a.event, &a.zone, a.round).cmp(&(b.at, b.event, &b.zone, b.round)));
    let mut next_round: BTreeMap<&str, Timestamp> = BTreeMap::new();
    let mut fills: Vec<(usize, Option<Timestamp>)> = Vec::new();
    for (index, event) in events.iter().enumerate().rev() {
        let Some(zone) = event.zone.as_deref() else {
            continue;
        };
        if !event.waiting.is_empty() {
            fills.push((index, next_round.get(zone).copied()));
        }
        if event.event == EventKind::Round {
            next_round.insert(zone, event.at);
        }
        // A zone that opens ends the waiting: the next close starts again.
        if event.event == EventKind::Opens {
            next_round.remove(zone);
        }
    }
    for (index, round) in fills {
        for waiting in &mut events[index].waiting {
            waiting.next_round = round;
        }
    }
    for event in events.iter_mut() {
        let tz = event
            .zone
            .as_ref()
            .and_then(|zone| zone_tz.get(zone))
            .cloned()
            .unwrap_or(TimeZone::UTC);
        event.when = clock::local(&tz, event.shown);
        event.relative = clock::relative(now, event.shown);
        for waiting in &mut event.waiting {
            waiting.next_round_when = waiting.next_round.map(|at| clock::local(&tz, at));
        }
    }
}

fn signature(waiting: &[Waiting]) -> BTreeSet<(ObjectKey, String)> {
    waiting
        .iter()
        .map(|w| {
            (
                ObjectKey::new(w.namespace.clone(), w.name.clone()),
                w.gate.clone(),
            )
        })
        .collect()
}

impl Move {
    fn of(candidate: &Candidate, policy: &str) -> Move {
        Move {
            namespace: candidate.pod.key.namespace.to_string(),
            name: candidate.pod.key.name.to_string(),
            node: candidate.pod.node_name.as_deref().map(String::from),
            job: candidate.pod.job.to_string(),
            policy: policy.to_owned(),
            strategy: candidate.strategy.to_string(),
            reason: candidate.reason.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testkit::{node, pod, policy, ts, zone};
    use crate::timeline::{BAR_WIDTH, Phase};

    /// Zone `z` (node `rev-1`) open 19:00-07:00 in Berlin, drained 20 minutes before it closes, one
    /// round every 5 minutes; a job of five preemptable pods that may lose 2 at a time.
    /// Pods numbered in `cooling` were scheduled at 17:00 UTC with a 2h cooldown.
    fn cluster(status: Option<serde_json::Value>, cooling: &[usize]) -> ClusterCache {
        let mut cache = ClusterCache::new();
        cache.apply_node(node("rev-1").zone("z").build());
        let mut zone = zone("z")
            .window("19:00-07:00")
            .spec(json!({"timeZone": "Europe/Berlin", "evictPeriod": "5m", "drainBefore": "20m"}));
        if let Some(status) = status {
            zone = zone.status(status);
        }
        cache.apply_zone(zone.build());
        for i in 0..5 {
            let cools = cooling.contains(&i);
            let cooldown = if cools { "2h" } else { "0s" };
            let scheduled = if cools {
                "2026-11-23T17:00:00Z"
            } else {
                "2026-11-22T03:00:00Z"
            };
            cache.apply_pod(
                pod(&format!("batch/j-{i}"), "rev-1")
                    .owned_by("ReplicaSet", "j")
                    .preemptable()
                    .annotation("volcano.sh/jdb-max-unavailable", "2")
                    .annotation("volcano.sh/cooldown-time", cooldown)
                    .scheduled_at(scheduled)
                    .build(),
                Timestamp::UNIX_EPOCH,
            );
        }
        cache
    }

    fn simulate_hours(cache: &mut ClusterCache, now: &str, hours: i64) -> Timeline {
        let policy = policy(json!({"interval": "2m"}));
        simulate(
            cache,
            &[&policy],
            ts(now),
            SignedDuration::from_hours(hours),
        )
    }

    fn kinds(timeline: &Timeline) -> Vec<(String, EventKind, usize)> {
        timeline
            .events
            .iter()
            .map(|e| (e.at.to_string(), e.event, e.evictions.len()))
            .collect()
    }

    #[test]
    fn drain_starts_before_the_close_and_rounds_are_paced_by_evict_period_within_the_budget() {
        // 05:30 UTC is 06:30 CET: open, draining from 06:40 CET (05:40:01 UTC, when the close at
        // 07:00:01 CET is 20 minutes away).
        let mut cache = cluster(None, &[]);
        let timeline = simulate_hours(&mut cache, "2026-11-23T05:30:00Z", 1);
        assert_eq!(
            kinds(&timeline),
            [
                ("2026-11-23T05:40:01Z".into(), EventKind::DrainStarts, 0),
                ("2026-11-23T05:40:01Z".into(), EventKind::Round, 2),
                ("2026-11-23T05:45:01Z".into(), EventKind::Round, 2),
                ("2026-11-23T05:50:01Z".into(), EventKind::Round, 1),
                ("2026-11-23T06:00:01Z".into(), EventKind::Closes, 0),
            ]
        );
        let drain = &timeline.events[0];
        assert_eq!(drain.shown, ts("2026-11-23T05:40:00Z"));
        assert_eq!(drain.when, "Mon 06:40 CET");
        assert_eq!(drain.relative, "in 10m");
        let close = &timeline.events[4];
        assert_eq!(close.when, "Mon 07:00 CET", "the boundary as written");
        // Round 1 takes two pods (the budget); the other three wait for round 2 at 05:45:01.
        let first = &timeline.events[1];
        assert_eq!(first.round, Some(1));
        assert_eq!(first.waiting.len(), 3);
        assert!(first.waiting.iter().all(|w| w.gate == "budget"));
        assert_eq!(
            first.waiting[0].next_round,
            Some(ts("2026-11-23T05:45:01Z"))
        );
        assert_eq!(
            first.waiting[0].next_round_when.as_deref(),
            Some("Mon 06:45 CET")
        );
        assert_eq!(timeline.events[3].round, Some(3));
        assert!(timeline.events[3].waiting.is_empty());
        // The cache was advanced as the controller's would be: pods gone, last round noted.
        assert_eq!(cache.pod_count(), 0);
        assert_eq!(
            cache.zone("z").unwrap().last_eviction_round,
            Some(ts("2026-11-23T05:50:01Z"))
        );
        assert_eq!(
            timeline.zones[0]
                .phases
                .iter()
                .map(|p| p.phase)
                .collect::<Vec<_>>(),
            [Phase::Open, Phase::Draining, Phase::Closed]
        );
    }

    #[test]
    fn a_round_held_back_by_evict_period_at_now_comes_when_the_period_ends() {
        // The last round was at 09:28: the next may start at 09:33, not at 09:30.
        let mut cache = cluster(
            Some(json!({"lastEvictionRound": "2026-11-23T09:28:00Z"})),
            &[],
        );
        let timeline = simulate_hours(&mut cache, "2026-11-23T09:30:00Z", 1);
        let rounds: Vec<(String, usize)> = timeline
            .events
            .iter()
            .filter(|e| e.event == EventKind::Round)
            .map(|e| (e.at.to_string(), e.evictions.len()))
            .collect();
        assert_eq!(
            rounds,
            [
                ("2026-11-23T09:33:00Z".into(), 2),
                ("2026-11-23T09:38:00Z".into(), 2),
                ("2026-11-23T09:43:00Z".into(), 1),
            ]
        );
    }

    #[test]
    fn rounds_stop_when_the_zone_opens_and_pods_held_to_the_end_stay() {
        // 17:50 UTC (18:50 CET): closed, opens at 19:00 CET. A cooldown of 2h protects two pods.
        let mut cache = cluster(None, &[3, 4]);
        let timeline = simulate_hours(&mut cache, "2026-11-23T17:50:00Z", 1);
        assert_eq!(
            kinds(&timeline),
            [
                ("2026-11-23T17:50:00Z".into(), EventKind::Round, 2),
                ("2026-11-23T17:55:00Z".into(), EventKind::Round, 1),
                ("2026-11-23T18:00:00Z".into(), EventKind::Opens, 0),
            ]
        );
        // Round 2's waiting pods (cooldown) have no later round: the zone opens first.
        let second = &timeline.events[1];
        assert!(
            second.waiting.iter().all(|w| w.gate == "cooldown"),
            "{second:?}"
        );
        assert!(second.waiting.iter().all(|w| w.next_round.is_none()));
        assert_eq!(cache.pod_count(), 2);
    }

    #[test]
    fn dry_run_policies_are_simulated_as_evicting_so_two_of_them_keep_one_budget() {
        // j-0 and j-1 were just scheduled and name no cooldown: policy `careful` (default cooldown
        // 1h) takes j-2 and j-3, the budget's 2. Policy `quick` (no cooldown) must see those as
        // leaving, as it would if both evicted; as plain DryRun plans it would take j-0 and j-1 too.
        let mut cache = ClusterCache::new();
        cache.apply_node(node("rev-1").zone("z").build());
        cache.apply_zone(
            zone("z")
                .window("08:00-20:00")
                .spec(json!({"evictPeriod": "5m"}))
                .build(),
        );
        for i in 0..5 {
            let young = i < 2;
            let scheduled = if young {
                "2026-11-23T03:30:00Z"
            } else {
                "2026-11-22T03:00:00Z"
            };
            let mut pod = pod(&format!("batch/j-{i}"), "rev-1")
                .owned_by("ReplicaSet", "j")
                .preemptable()
                .annotation("volcano.sh/jdb-max-unavailable", "2")
                .scheduled_at(scheduled);
            if !young {
                pod = pod.annotation("volcano.sh/cooldown-time", "0s");
            }
            cache.apply_pod(pod.build(), Timestamp::UNIX_EPOCH);
        }
        let mut careful = policy(json!({"defaults": {"cooldown": "1h"}}));
        careful.name = "careful".into();
        let mut quick = policy(json!({}));
        quick.name = "quick".into();
        let timeline = simulate(
            &mut cache,
            &[&careful, &quick],
            ts("2026-11-23T04:00:00Z"),
            SignedDuration::from_mins(1),
        );
        let first = &timeline.events[0];
        let pods: Vec<&str> = first.evictions.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(pods, ["j-2", "j-3"], "{first:?}");
        assert_eq!(
            timeline.policies[0].mode, "DryRun",
            "reported as configured"
        );
    }

    #[test]
    fn held_pods_are_said_once_while_the_zone_closes_and_not_at_every_cycle_once_open() {
        // A bare, non-preemptable pod on the zone's node: a placement violation, protected (no owner
        // would recreate it). TDM proposes it at every cycle, open or closed.
        let mut cache = cluster(None, &[0, 1, 2, 3, 4]);
        cache.apply_pod(
            pod("batch/bare", "rev-1").bare().build(),
            Timestamp::UNIX_EPOCH,
        );
        // 16:00 UTC is 17:00 CET: closed until 18:00 UTC; the job's pods are all in cooldown.
        let timeline = simulate_hours(&mut cache, "2026-11-23T16:00:00Z", 4);
        let held: Vec<String> = timeline
            .events
            .iter()
            .filter(|e| e.waiting.iter().any(|w| w.name == "bare"))
            .map(|e| format!("{} {:?}", e.at, e.event))
            .collect();
        assert_eq!(
            held,
            ["2026-11-23T16:00:00Z Held"],
            "{:#?}",
            timeline.events
        );
    }

    #[test]
    fn bars_show_the_most_disruptive_phase_of_each_slot() {
        let mut cache = cluster(None, &[]);
        let timeline = simulate_hours(&mut cache, "2026-11-23T05:30:00Z", 24);
        let bar = &timeline.zones[0].bar;
        assert_eq!(bar.chars().count(), BAR_WIDTH);
        // 30-minute slots from 05:30 UTC: 05:30 open then draining, closed 06:00:01-18:00 UTC,
        // open from 18:00 to the end (the next drain, at 05:40:01, is after it).
        assert_eq!(
            bar,
            &format!("~{}{}", "#".repeat(24), ".".repeat(23)),
            "{bar}"
        );
    }

    #[test]
    fn an_unreadable_zone_has_no_phases_and_evicts_nothing() {
        let mut cache = cluster(None, &[]);
        let mut bad = zone("z").window("19:00-07:00").build();
        bad.schedule = Err("window \"25:00\" is invalid".into());
        cache.apply_zone(bad);
        let timeline = simulate_hours(&mut cache, "2026-11-23T05:30:00Z", 2);
        assert!(timeline.events.is_empty(), "{:?}", timeline.events);
        assert!(timeline.zones[0].error.is_some());
        assert_eq!(timeline.zones[0].bar, "?".repeat(BAR_WIDTH));
        assert_eq!(cache.pod_count(), 5);
    }
}
