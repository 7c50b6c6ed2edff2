//! What a cycle did, as data: each policy's plan paired with the evictor's outcomes, and the pure
//! functions that turn it into what the cycle writes back and counts.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};

use super::{
    evictor::Outcome,
    metrics::{EvictionKey, PolicyStrategy, SkipLabels, ZoneGauges},
};
use crate::{
    api::PolicyMode,
    framework::{Candidate, GateId, PlannedEviction, SkipReason, Warning, WarningKey, ZoneView},
    planner::Plan,
};

/// Why a DryRun policy's planned eviction was not checked this cycle: the cycle sent as many dry
/// runs as its verification budget allows, and this one was not among them.
const OVER_VERIFY_BUDGET: &str =
    "not verified this cycle: the cycle's dry-run budget (--dry-run-verify-per-cycle) was used up";

/// One policy's plan, and what became of each of its planned evictions.
pub(crate) struct PolicyResult {
    pub plan: Plan,
    /// One per `plan.evictions`, in order (see [`PolicyResult::new`]).
    outcomes: Vec<Outcome>,
}

impl PolicyResult {
    /// Pairs the plan with the evictor's outcomes, which cover the first evictions of the plan (all
    /// of them unless [`sends`] held some back). Evictions without an outcome count as never sent
    /// (Evict) or unverified (DryRun), rather than shifting the others. In a DryRun policy a dry
    /// run not sent in time is unverified too: the plan stands, only its check is missing.
    pub(crate) fn new(plan: Plan, mut outcomes: Vec<Outcome>) -> Self {
        outcomes.truncate(plan.evictions.len());
        let dry_run = plan.mode == PolicyMode::DryRun;
        if dry_run {
            for outcome in &mut outcomes {
                if let Outcome::Abandoned(why) = outcome {
                    *outcome = Outcome::Unverified(std::mem::take(why));
                }
            }
        }
        while outcomes.len() < plan.evictions.len() {
            outcomes.push(if dry_run {
                Outcome::Unverified(OVER_VERIFY_BUDGET.to_owned())
            } else {
                Outcome::Abandoned("never sent".to_owned())
            });
        }
        PolicyResult { plan, outcomes }
    }

    pub(crate) fn outcomes(&self) -> &[Outcome] {
        &self.outcomes
    }

    /// Each planned eviction with its outcome.
    pub(crate) fn results(&self) -> impl Iterator<Item = (&PlannedEviction, &Outcome)> {
        self.plan.evictions.iter().zip(&self.outcomes)
    }
}

/// What a finished cycle did.
pub(crate) struct CycleResult {
    pub now: Timestamp,
    pub policies: Vec<PolicyResult>,
}

/// The per-zone gauges of a cycle; zones whose windows cannot be read have none (their error is in
/// status and events).
pub(crate) fn zone_gauges(
    zones: &BTreeMap<String, ZoneView>,
    preemptable: impl Fn(&str) -> u32,
) -> Vec<ZoneGauges> {
    zones
        .values()
        .filter_map(|view| {
            let state = view.state.as_ref().ok()?;
            Some(ZoneGauges {
                zone: view.name.clone(),
                open: state.open,
                draining: state.evicting(),
                next_change: state
                    .next_change
                    .map(|t| t.as_millisecond() as f64 / 1000.0),
                preemptable_pods: preemptable(&view.name),
            })
        })
        .collect()
}

/// How long a warning that stays, saying other numbers, goes without being logged again.
pub(crate) const WARNING_REMINDER: SignedDuration = SignedDuration::from_hours(1);

/// A line to log about the plan's warnings.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum WarningLine<'w> {
    /// A warning the cycles before did not have.
    Appeared(&'w str),
    /// A warning still there whose numbers moved since it was last logged, at least
    /// [`WARNING_REMINDER`] ago.
    Reminder(&'w str),
    /// A warning gone from a plan that looked for what it was about.
    Cleared(WarningKey),
}

/// The plan's warnings as last logged, by what they are about. A warning is logged when it appears,
/// not at every cycle while it stays (the report keeps showing it): on a large cluster its counts
/// move every cycle while the problem is the same one.
#[derive(Debug, Default)]
pub(crate) struct WarningLog {
    logged: BTreeMap<WarningKey, (String, Timestamp)>,
}

impl WarningLog {
    /// What to log of a cycle's `warnings` at `now`, remembering it. `looked_for` says whether the
    /// cycle's plan looked for what a warning is about: one it did not look for (a cycle of other
    /// policies) has not cleared.
    pub(crate) fn update<'w>(
        &mut self,
        warnings: &'w [Warning],
        looked_for: impl Fn(&WarningKey) -> bool,
        now: Timestamp,
    ) -> Vec<WarningLine<'w>> {
        let current: BTreeSet<&WarningKey> = warnings.iter().map(|w| &w.key).collect();
        let mut lines = Vec::new();
        self.logged.retain(|key, _| {
            let cleared = !current.contains(key) && looked_for(key);
            if cleared {
                lines.push(WarningLine::Cleared(key.clone()));
            }
            !cleared
        });
        for warning in warnings {
            match self.logged.get_mut(&warning.key) {
                None => {
                    lines.push(WarningLine::Appeared(&warning.text));
                    self.logged
                        .insert(warning.key.clone(), (warning.text.clone(), now));
                }
                Some((text, at)) => {
                    if *text != warning.text && now.duration_since(*at) >= WARNING_REMINDER {
                        lines.push(WarningLine::Reminder(&warning.text));
                        text.clone_from(&warning.text);
                        *at = now;
                    }
                }
            }
        }
        lines
    }
}

/// Whether an eviction's outcome gets an Event on its pod, and whether that Event says the eviction
/// was confirmed: only pods the API server evicted get one (an unanswered attempt that a retry found
/// done is evicted, unconfirmed).
pub(crate) fn pod_event(outcome: &Outcome) -> Option<bool> {
    outcome.evicted().then_some(*outcome == Outcome::Evicted)
}

/// Pods refused for unreadable settings, with the detail: each gets a Warning Event.
pub(crate) fn invalid_pods(policies: &[PolicyResult]) -> Vec<(&Candidate, &str)> {
    policies
        .iter()
        .flat_map(|result| &result.plan.skipped)
        .filter(|skip| skip.reason == SkipReason::Gate(GateId::Invalid))
        .map(|skip| (&skip.candidate, skip.detail.as_str()))
        .collect()
}

/// What the cycle adds to the per-policy counters.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Tallies {
    pub planned: BTreeMap<PolicyStrategy, u64>,
    pub evictions: BTreeMap<EvictionKey, u64>,
    /// Refused by a gate of the plan, or by the API server at eviction time.
    pub skips: BTreeMap<SkipLabels, u64>,
}

pub(crate) fn tallies(policies: &[PolicyResult]) -> Tallies {
    let mut t = Tallies::default();
    for result in policies {
        let policy = &result.plan.policy;
        let skip = |reason: SkipReason| SkipLabels {
            policy: policy.clone(),
            gate: reason.to_string(),
        };
        // The counts, not the rows: a plan lists only the first skips in detail.
        for (reason, n) in &result.plan.skip_counts {
            *t.skips.entry(skip(*reason)).or_default() += u64::from(*n);
        }
        for (eviction, outcome) in result.results() {
            let c = &eviction.candidate;
            let planned = PolicyStrategy {
                policy: policy.clone(),
                strategy: c.strategy.to_string(),
            };
            *t.planned.entry(planned).or_default() += 1;
            let key = EvictionKey::of(policy, c, outcome.label());
            *t.evictions.entry(key).or_default() += 1;
            if let Some(refusal) = outcome.refusal() {
                *t.skips.entry(skip(refusal.reason)).or_default() += 1;
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::cluster::ObjectKey;
    use crate::controller::metrics::EvictionLabels;
    use crate::controller::{
        status::compute::PolicyCounts,
        verification::{LastVerified, order_for_verification, record_verified, sends},
    };
    use crate::{
        framework::{Skipped, StrategyId},
        testkit::pod,
    };

    fn candidate(name: &str, zone: Option<&str>) -> Candidate {
        let pod = Arc::new(
            pod(&format!("ns/{name}"), "n1")
                .requests("100m", "64Mi")
                .build(),
        );
        let candidate = Candidate::new(&pod, StrategyId::Tdm, "zone closed");
        match zone {
            Some(zone) => candidate.in_zone(zone),
            None => candidate,
        }
    }

    fn plan(policy: &str, evictions: &[&str], skipped: &[(&str, SkipReason)]) -> Plan {
        Plan {
            policy: policy.to_owned(),
            mode: PolicyMode::Evict,
            evictions: evictions
                .iter()
                .map(|name| PlannedEviction {
                    candidate: candidate(name, Some("rz")),
                })
                .collect(),
            skipped: skipped
                .iter()
                .map(|(name, reason)| Skipped {
                    candidate: candidate(name, Some("rz")),
                    reason: *reason,
                    detail: "why".to_owned(),
                })
                .collect(),
            skip_counts: skipped.iter().fold(BTreeMap::new(), |mut counts, (_, r)| {
                *counts.entry(*r).or_default() += 1;
                counts
            }),
            error: None,
            strategy_durations: Vec::new(),
        }
    }

    fn dry_run(plan: Plan) -> Plan {
        Plan {
            mode: PolicyMode::DryRun,
            ..plan
        }
    }

    #[test]
    fn dry_runs_are_sent_within_the_cycle_budget_and_real_evictions_in_full() {
        let many: Vec<String> = (0..3_000).map(|i| format!("p{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let plans = [
            dry_run(plan("first", &many[..30], &[])),
            plan("evict", &many[..500], &[]),
            dry_run(plan("second", &many, &[])),
            dry_run(plan("third", &many[..5], &[])),
        ];
        assert_eq!(sends(&plans, 50), [30, 500, 20, 0]);
        assert_eq!(sends(&plans, 0), [0, 500, 0, 0]);
        assert_eq!(sends(&plans, 10_000), [30, 500, 3_000, 5]);
    }

    #[test]
    fn a_large_dry_run_plan_is_planned_verified_up_to_the_budget_and_never_abandoned() {
        let many: Vec<String> = (0..4_225).map(|i| format!("p{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let budget = 50;
        let dry = dry_run(plan("dry", &many, &[]));
        let evict = plan("evict", &["e1", "e2"], &[]);
        let sent = sends(&[dry.clone(), evict.clone()], budget);
        // What the evictor answers: 48 accepted, a PDB refusal, one not sent before the deadline.
        let mut answers = vec![Outcome::WouldEvict; sent[0] - 2];
        answers.push(Outcome::Refused {
            reason: SkipReason::Pdb,
            detail: "budget".into(),
        });
        answers.push(Outcome::Abandoned("cycle deadline reached".into()));
        let policies = [
            PolicyResult::new(dry, answers),
            PolicyResult::new(evict, vec![Outcome::Evicted, Outcome::Evicted]),
        ];
        let t = tallies(&policies);
        let labels = |policy: &str, result: &str| EvictionKey {
            series: EvictionLabels {
                policy: policy.into(),
                strategy: "tdm".into(),
                result: result.into(),
                zone: "rz".into(),
            },
            namespace: "ns".into(),
            node: "n1".into(),
        };
        let planned = PolicyStrategy {
            policy: "dry".into(),
            strategy: "tdm".into(),
        };
        assert_eq!(t.planned[&planned], 4_225);
        assert_eq!(
            t.evictions,
            BTreeMap::from([
                (labels("dry", "dry_run"), 48),
                (labels("dry", "refused"), 1),
                (labels("dry", "unverified"), 4_225 - 49),
                (labels("evict", "evicted"), 2),
            ])
        );
        let pdb = SkipLabels {
            policy: "dry".into(),
            gate: "pdb".into(),
        };
        assert_eq!(t.skips, BTreeMap::from([(pdb, 1)]));

        let counts = PolicyCounts::of(&policies[0].plan, policies[0].outcomes());
        assert_eq!(
            (
                counts.planned,
                counts.accepted,
                counts.refused,
                counts.unverified
            ),
            (4_225, 48, 1, 4_176)
        );
        assert!(!counts.skipped.contains_key("abandoned"), "{counts:?}");
        // An Evict policy's unsent evictions are still abandoned: they were meant to happen.
        let short = PolicyResult::new(plan("evict", &["a", "b"], &[]), vec![Outcome::Evicted]);
        assert!(matches!(short.outcomes()[1], Outcome::Abandoned(_)));
    }

    fn names<'a>(list: impl IntoIterator<Item = &'a Candidate>) -> Vec<String> {
        list.into_iter().map(|c| c.pod.key.to_string()).collect()
    }

    #[test]
    fn zone_gauges_follow_the_zone_views_and_leave_out_unreadable_zones() {
        let snapshot = {
            let mut cache = crate::cluster::ClusterCache::new();
            cache.apply_zone(crate::testkit::closed_zone("closed").build());
            cache.apply_zone(crate::testkit::open_zone("open").build());
            cache.apply_zone(crate::testkit::zone("broken").window("25:00-26:00").build());
            cache.snapshot()
        };
        let now = crate::testkit::ts(crate::testkit::NOW);
        let (views, _) = crate::framework::zone_views(&snapshot, now);
        let gauges = zone_gauges(&views, |zone| if zone == "closed" { 3 } else { 0 });
        let by_zone: BTreeMap<&str, &ZoneGauges> =
            gauges.iter().map(|g| (g.zone.as_str(), g)).collect();
        assert_eq!(by_zone.len(), 2, "{gauges:?}");
        assert!(!by_zone["closed"].open && by_zone["closed"].preemptable_pods == 3);
        assert!(by_zone["open"].open);
        assert!(
            by_zone["closed"]
                .next_change
                .is_some_and(|t| t > now.as_second() as f64)
        );
    }

    fn unknown_zone(zone: &str, nodes: usize) -> Warning {
        Warning::new(
            WarningKey::UnknownZone {
                zone: zone.to_owned(),
            },
            format!("{nodes} node(s) in unknown zone {zone}"),
        )
    }

    fn capacity(nodes: usize) -> Warning {
        Warning::new(
            WarningKey::ImplausibleCapacity,
            format!("{nodes} node(s) hold more than their allocatable"),
        )
    }

    #[test]
    fn a_warning_is_logged_when_it_appears_not_every_cycle() {
        let t0 = crate::testkit::ts(crate::testkit::NOW);
        let minutes = |m: i64| t0 + SignedDuration::from_mins(m);
        let all = |_: &WarningKey| true;
        let mut log = WarningLog::default();
        let first = [unknown_zone("x", 2)];
        assert_eq!(
            log.update(&first, all, t0),
            [WarningLine::Appeared("2 node(s) in unknown zone x")]
        );
        assert!(log.update(&first, all, minutes(1)).is_empty());
        let more = [unknown_zone("x", 2), unknown_zone("y", 1)];
        assert_eq!(
            log.update(&more, all, minutes(2)),
            [WarningLine::Appeared("1 node(s) in unknown zone y")]
        );
        // The same problem, other numbers: not news.
        let moved = [unknown_zone("x", 3), unknown_zone("y", 1)];
        assert!(log.update(&moved, all, minutes(3)).is_empty());
        assert_eq!(
            log.update(&[unknown_zone("x", 3)], all, minutes(4)),
            [WarningLine::Cleared(WarningKey::UnknownZone {
                zone: "y".to_owned()
            })]
        );
        assert!(
            log.update(&[unknown_zone("x", 3)], all, minutes(5))
                .is_empty()
        );
    }

    /// A count that moves every cycle (pods churning on nodes with wrong capacity data) is logged
    /// once, then again at most hourly with the numbers of the moment; the same text is never
    /// repeated.
    #[test]
    fn a_warning_whose_count_moves_is_logged_once_then_hourly() {
        let t0 = crate::testkit::ts(crate::testkit::NOW);
        let all = |_: &WarningKey| true;
        let mut log = WarningLog::default();
        let mut logged = Vec::new();
        for minute in 0..150 {
            let now = t0 + SignedDuration::from_mins(minute);
            let warning = [capacity(171 + (minute as usize * 7) % 31)];
            for line in log.update(&warning, all, now) {
                logged.push((minute, format!("{line:?}")));
            }
        }
        let minutes: Vec<i64> = logged.iter().map(|(m, _)| *m).collect();
        assert_eq!(minutes, [0, 60, 120], "{logged:?}");
        assert!(
            logged[0].1.starts_with("Appeared(\"171 node(s)"),
            "{logged:?}"
        );
        assert!(logged[1].1.starts_with("Reminder(\""), "{logged:?}");
        // Unchanged since last logged: nothing to remind of, however long it stays.
        let mut log = WarningLog::default();
        let same = [capacity(171)];
        log.update(&same, all, t0);
        assert!(
            log.update(&same, all, t0 + SignedDuration::from_hours(5))
                .is_empty()
        );
    }

    /// A cycle of other policies (none reading node capacity) does not look for capacity warnings:
    /// their absence there is not a clearing, and their return is not news.
    #[test]
    fn a_warning_the_plan_did_not_look_for_has_not_cleared() {
        let t0 = crate::testkit::ts(crate::testkit::NOW);
        let mut log = WarningLog::default();
        let all = |_: &WarningKey| true;
        let no_capacity = |key: &WarningKey| *key != WarningKey::ImplausibleCapacity;
        assert_eq!(log.update(&[capacity(5)], all, t0).len(), 1);
        assert!(log.update(&[], no_capacity, t0).is_empty());
        assert!(log.update(&[capacity(5)], all, t0).is_empty());
        assert_eq!(
            log.update(&[], all, t0),
            [WarningLine::Cleared(WarningKey::ImplausibleCapacity)]
        );
    }

    #[test]
    fn outcomes_stay_paired_with_their_evictions_even_if_one_is_missing() {
        let result = PolicyResult::new(plan("p", &["a", "b"], &[]), vec![Outcome::Evicted]);
        let pairs: Vec<(String, &Outcome)> = result
            .results()
            .map(|(e, o)| (e.candidate.pod.key.to_string(), o))
            .collect();
        assert_eq!(pairs[0], ("ns/a".to_owned(), &Outcome::Evicted));
        assert_eq!(pairs[1].0, "ns/b");
        assert!(matches!(pairs[1].1, Outcome::Abandoned(_)));
        let extra = PolicyResult::new(
            plan("p", &["a"], &[]),
            vec![Outcome::Evicted, Outcome::Gone],
        );
        assert_eq!(extra.outcomes().len(), 1);
    }

    #[test]
    fn only_real_evictions_get_pod_events_and_unconfirmed_ones_say_so() {
        let policies = [
            PolicyResult::new(
                plan("p", &["a", "b", "c", "d"], &[]),
                vec![
                    Outcome::Evicted,
                    Outcome::EvictedUnconfirmed,
                    Outcome::WouldEvict,
                    Outcome::Refused {
                        reason: SkipReason::Pdb,
                        detail: "budget".to_owned(),
                    },
                ],
            ),
            PolicyResult::new(plan("q", &["e"], &[]), vec![Outcome::Gone]),
        ];
        let evicted: Vec<(&str, String, bool)> = policies
            .iter()
            .flat_map(|result| {
                result.results().filter_map(|(e, outcome)| {
                    let confirmed = pod_event(outcome)?;
                    Some((
                        result.plan.policy.as_str(),
                        e.candidate.pod.key.to_string(),
                        confirmed,
                    ))
                })
            })
            .collect();
        assert_eq!(
            evicted,
            [
                ("p", "ns/a".to_owned(), true),
                ("p", "ns/b".to_owned(), false)
            ]
        );
    }

    #[test]
    fn invalid_pods_are_those_the_invalid_gate_refused() {
        let policies = [PolicyResult::new(
            plan(
                "p",
                &[],
                &[
                    ("bad", SkipReason::Gate(GateId::Invalid)),
                    ("held", SkipReason::HeldByPolicy),
                    ("young", SkipReason::Gate(GateId::Cooldown)),
                ],
            ),
            vec![],
        )];
        let invalid = invalid_pods(&policies);
        assert_eq!(names(invalid.iter().map(|(c, _)| *c)), ["ns/bad"]);
        assert_eq!(invalid[0].1, "why");
    }

    #[test]
    fn tallies_count_plan_skips_and_eviction_refusals_under_one_label_set() {
        let policies = [PolicyResult::new(
            plan(
                "p",
                &["a", "b", "c"],
                &[("d", SkipReason::Gate(GateId::Budget))],
            ),
            vec![
                Outcome::Evicted,
                Outcome::Refused {
                    reason: SkipReason::Pdb,
                    detail: String::new(),
                },
                Outcome::Evicted,
            ],
        )];
        let t = tallies(&policies);
        let planned = PolicyStrategy {
            policy: "p".into(),
            strategy: "tdm".into(),
        };
        assert_eq!(t.planned, BTreeMap::from([(planned, 3)]));
        let result = |result: &str| EvictionKey {
            series: EvictionLabels {
                policy: "p".into(),
                strategy: "tdm".into(),
                result: result.into(),
                zone: "rz".into(),
            },
            namespace: "ns".into(),
            node: "n1".into(),
        };
        assert_eq!(
            t.evictions,
            BTreeMap::from([(result("evicted"), 2), (result("refused"), 1)])
        );
        let skip = |gate: &str| SkipLabels {
            policy: "p".into(),
            gate: gate.into(),
        };
        assert_eq!(
            t.skips,
            BTreeMap::from([(skip("budget"), 1), (skip("pdb"), 1)])
        );
    }

    fn keys(plan: &Plan) -> Vec<String> {
        plan.evictions
            .iter()
            .map(|e| e.candidate.pod.key.to_string())
            .collect()
    }

    /// One cycle of a stable plan: order, send within the budget, every dry run sent is answered.
    fn verify_once(
        plans: &[Plan],
        budget: usize,
        last: &mut LastVerified,
        at: &str,
    ) -> Vec<String> {
        let mut plans = plans.to_vec();
        order_for_verification(&mut plans, last);
        let sent = sends(&plans, budget);
        let results: Vec<PolicyResult> = plans
            .into_iter()
            .zip(sent)
            .map(|(plan, n)| PolicyResult::new(plan, vec![Outcome::WouldEvict; n]))
            .collect();
        let verified = results
            .iter()
            .flat_map(|r| r.results())
            .filter(|(_, outcome)| **outcome == Outcome::WouldEvict)
            .map(|(e, _)| e.candidate.pod.key.to_string())
            .collect();
        record_verified(last, &results, at.parse().unwrap());
        verified
    }

    #[test]
    fn a_stable_dry_run_plan_larger_than_the_budget_is_verified_in_turn() {
        let names: Vec<String> = (0..10).map(|i| format!("p{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let plans = [dry_run(plan("dry", &names, &[]))];
        let mut last = LastVerified::new();
        let cycles: Vec<Vec<String>> = [
            "2026-11-22T04:00:00Z",
            "2026-11-22T04:01:00Z",
            "2026-11-22T04:02:00Z",
            "2026-11-22T04:03:00Z",
        ]
        .iter()
        .map(|at| verify_once(&plans, 4, &mut last, at))
        .collect();
        let ns = |names: &[&str]| names.iter().map(|n| format!("ns/{n}")).collect::<Vec<_>>();
        assert_eq!(cycles[0], ns(&["p0", "p1", "p2", "p3"]));
        assert_eq!(cycles[1], ns(&["p4", "p5", "p6", "p7"]));
        // The two never checked, then the two checked longest ago, in plan order.
        assert_eq!(cycles[2], ns(&["p8", "p9", "p0", "p1"]));
        assert_eq!(cycles[3], ns(&["p2", "p3", "p4", "p5"]));
    }

    #[test]
    fn verification_order_leaves_evict_plans_and_the_planned_set_alone() {
        let mut plans = vec![
            plan("evict", &["e1", "e2", "e3"], &[]),
            dry_run(plan("dry", &["d1", "d2", "d3"], &[])),
        ];
        let at: Timestamp = "2026-11-22T04:00:00Z".parse().unwrap();
        let last: LastVerified = [
            (ObjectKey::new("ns", "e1"), at),
            (ObjectKey::new("ns", "d1"), at),
        ]
        .into();
        order_for_verification(&mut plans, &last);
        assert_eq!(keys(&plans[0]), ["ns/e1", "ns/e2", "ns/e3"]);
        assert_eq!(keys(&plans[1]), ["ns/d2", "ns/d3", "ns/d1"]);
    }

    #[test]
    fn only_answered_dry_runs_count_as_verified_and_pods_that_left_the_plan_are_forgotten() {
        let at: Timestamp = "2026-11-22T04:00:00Z".parse().unwrap();
        let mut last: LastVerified = [(ObjectKey::new("ns", "gone-from-plan"), at)].into();
        let results = vec![PolicyResult::new(
            dry_run(plan("dry", &["ok", "pdb", "late", "failed"], &[])),
            vec![
                Outcome::WouldEvict,
                Outcome::Refused {
                    reason: SkipReason::Pdb,
                    detail: "budget".into(),
                },
                Outcome::Abandoned("out of time".into()),
                Outcome::Failed("403".into()),
            ],
        )];
        record_verified(&mut last, &results, at);
        let mut verified: Vec<String> = last.keys().map(ToString::to_string).collect();
        verified.sort();
        assert_eq!(verified, ["ns/ok", "ns/pdb"]);
    }
}
