//! When to run a cycle, and for which policies. Pure: everything is computed from plain data and an
//! instant, so the rules are tested without clocks or servers.
//!
//! A policy runs when it never ran (this term of leadership), when its spec changed (its generation),
//! and when its interval has passed. Every policy runs when any zone changes phase: it opens, closes,
//! starts draining (`drainBefore` ahead of a close), its `evictPeriod` elapses after a round, or its spec
//! changes. The loop wakes at the earliest of all those instants, so TDM starts on time rather than up
//! to one interval late.

use std::{collections::BTreeMap, time::Duration};

use jiff::{SignedDuration, Timestamp};

use crate::cluster::{PolicyInfo, ZoneInfo};

/// A policy as the cycle timer sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyClock {
    pub name: String,
    pub interval: Duration,
    pub generation: Option<i64>,
    pub uid: Option<String>,
}

impl PolicyClock {
    pub fn of(policy: &PolicyInfo, min_interval: Duration) -> Self {
        PolicyClock {
            name: policy.name.clone(),
            interval: policy.spec.interval.as_std().max(min_interval),
            generation: policy.generation,
            uid: policy.uid.clone(),
        }
    }
}

/// What about a zone, if it changes, calls for a cycle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZonePhase {
    pub valid: bool,
    pub open: bool,
    pub draining: bool,
    pub round_due: bool,
    /// The next instant at which one of the above changes. It only moves when a change happens or the
    /// spec is edited, so comparing it too makes spec edits count as a change.
    pub next: Option<Timestamp>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneClock {
    pub name: String,
    pub phase: ZonePhase,
}

/// The zone's phase at `now`; `last_round` is the latest known start of an eviction round in it (or
/// of a round that budgets held back entirely: it is tried again `evictPeriod` later), and
/// `planned_drain_start` when an `auto` drain is planned to start.
pub(crate) fn zone_clock(
    zone: &ZoneInfo,
    last_round: Option<Timestamp>,
    now: Timestamp,
    planned_drain_start: Option<Timestamp>,
) -> ZoneClock {
    let next_round = zone.next_round(last_round, now);
    let phase = match zone.state_at(now) {
        Err(_) => ZonePhase {
            valid: false,
            open: false,
            draining: false,
            round_due: next_round.is_none(),
            next: None,
        },
        Ok(state) => {
            let drain_start = state
                .next_change
                .filter(|_| state.open && !state.draining)
                .and_then(|close| zone.fixed_drain_start(close).or(planned_drain_start))
                .filter(|start| *start > now);
            let next = [state.next_change, drain_start, next_round]
                .into_iter()
                .flatten()
                .filter(|t| *t > now)
                .min();
            ZonePhase {
                valid: true,
                open: state.open,
                draining: state.draining,
                round_due: next_round.is_none(),
                next,
            }
        }
    };
    ZoneClock {
        name: zone.name.clone(),
        phase,
    }
}

/// Why a cycle runs, for metrics and logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// First cycle of a leadership term (or a policy never run).
    Leader,
    /// A policy was created or its spec changed.
    Config,
    Interval,
    /// A zone opened, closed, started draining, became due for a round, or was edited.
    Zone,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Leader => "leader",
            Trigger::Config => "config",
            Trigger::Interval => "interval",
            Trigger::Zone => "zone",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Due {
    /// Policies to plan (may be empty: a zone change with no policy still refreshes zone status).
    pub policies: Vec<String>,
    pub trigger: Trigger,
}

#[derive(Clone, Debug)]
struct LastRun {
    at: Timestamp,
    generation: Option<i64>,
    uid: Option<String>,
}

/// The timer's memory: when each policy last ran and the zone phases the last cycle saw.
#[derive(Clone, Debug, Default)]
pub(crate) struct CycleTimer {
    runs: BTreeMap<String, LastRun>,
    /// `None` until the first cycle of a leadership term.
    zones: Option<BTreeMap<String, ZonePhase>>,
}

impl CycleTimer {
    /// Forgets everything: a new leadership term starts with a full cycle.
    pub(crate) fn reset(&mut self) {
        *self = CycleTimer::default();
    }

    fn zones_changed(&self, zones: &[ZoneClock]) -> bool {
        let Some(seen) = &self.zones else {
            return true;
        };
        seen.len() != zones.len() || zones.iter().any(|z| seen.get(&z.name) != Some(&z.phase))
    }

    /// What should run at `now`, if anything.
    pub(crate) fn due(
        &self,
        policies: &[PolicyClock],
        zones: &[ZoneClock],
        now: Timestamp,
    ) -> Option<Due> {
        let all = || policies.iter().map(|p| p.name.clone()).collect();
        if self.zones.is_none() {
            return Some(Due {
                policies: all(),
                trigger: Trigger::Leader,
            });
        }
        if self.zones_changed(zones) {
            return Some(Due {
                policies: all(),
                trigger: Trigger::Zone,
            });
        }
        let mut trigger = None;
        let mut due = Vec::new();
        for policy in policies {
            let why = match self.runs.get(&policy.name) {
                None => Some(Trigger::Config),
                // Another uid is a policy deleted and created again, maybe at the same generation:
                // as new as a policy never seen.
                Some(last) if last.generation != policy.generation || last.uid != policy.uid => {
                    Some(Trigger::Config)
                }
                Some(last) if next_run(last.at, policy.interval) <= now => Some(Trigger::Interval),
                Some(_) => None,
            };
            if let Some(why) = why {
                due.push(policy.name.clone());
                // A config change is the more telling reason when both apply.
                if trigger != Some(Trigger::Config) {
                    trigger = Some(why);
                }
            }
        }
        trigger.map(|trigger| Due {
            policies: due,
            trigger,
        })
    }

    /// Records a cycle at `now` that ran `ran`; `zones` are the phases after it (rounds it started
    /// included), so that the next check sees only changes made since.
    pub(crate) fn record(
        &mut self,
        ran: &[String],
        policies: &[PolicyClock],
        zones: &[ZoneClock],
        now: Timestamp,
    ) {
        for policy in policies.iter().filter(|p| ran.contains(&p.name)) {
            self.runs.insert(
                policy.name.clone(),
                LastRun {
                    at: now,
                    generation: policy.generation,
                    uid: policy.uid.clone(),
                },
            );
        }
        self.runs
            .retain(|name, _| policies.iter().any(|p| &p.name == name));
        self.zones = Some(
            zones
                .iter()
                .map(|z| (z.name.clone(), z.phase.clone()))
                .collect(),
        );
    }

    /// The earliest instant at which something becomes due: a policy's interval or a zone's next change.
    pub(crate) fn next_wakeup(
        &self,
        policies: &[PolicyClock],
        zones: &[ZoneClock],
    ) -> Option<Timestamp> {
        let policy_times = policies.iter().map(|p| match self.runs.get(&p.name) {
            Some(last) => next_run(last.at, p.interval),
            None => Timestamp::MIN,
        });
        let zone_times = zones.iter().filter_map(|z| z.phase.next);
        policy_times.chain(zone_times).min()
    }
}

fn next_run(last: Timestamp, interval: Duration) -> Timestamp {
    SignedDuration::try_from(interval)
        .ok()
        .and_then(|interval| last.checked_add(interval).ok())
        .unwrap_or(Timestamp::MAX)
}

/// How long to sleep until `next` from `now`: a little past it (clocks of sleep and wall time differ
/// slightly, and waking early would only loop), and never longer than `cap`, so that a wall-clock jump
/// is noticed.
pub(crate) fn sleep_for(next: Option<Timestamp>, now: Timestamp, cap: Duration) -> Duration {
    const MARGIN: Duration = Duration::from_millis(5);
    let Some(next) = next else {
        return cap;
    };
    let until = Duration::try_from(next.duration_since(now)).unwrap_or(Duration::ZERO);
    (until + MARGIN).min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{GoDuration, RevocableZone, RevocableZoneSpec, zone::WindowSpec};

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn zone(window: &str, drain_before: u64, evict_period: u64) -> ZoneInfo {
        let zone = RevocableZone::new(
            "rz",
            RevocableZoneSpec {
                windows: vec![WindowSpec {
                    time: window.to_owned(),
                    days: vec![],
                }],
                time_zone: "UTC".to_owned(),
                evict_period: GoDuration::from_secs(evict_period),
                drain_before: crate::api::DrainBefore::Fixed(GoDuration::from_secs(drain_before)),
                max_drain_before: crate::api::GoDuration::from_secs(7_200),
                budgets_after_close: Default::default(),
                taint_when_closed: true,
                eviction_notice: None,
            },
        );
        ZoneInfo::from_zone(&zone).unwrap()
    }

    fn policy(name: &str, interval: u64, generation: i64) -> PolicyClock {
        PolicyClock {
            name: name.to_owned(),
            interval: Duration::from_secs(interval),
            generation: Some(generation),
            uid: Some(format!("{name}-uid")),
        }
    }

    #[test]
    fn open_zone_wakes_at_drain_start_then_at_close() {
        let z = zone("08:00-20:00", 600, 60);
        let clock = zone_clock(&z, None, at("2026-03-02T12:00:00Z"), None);
        assert!(clock.phase.open && !clock.phase.draining);
        assert_eq!(clock.phase.next, Some(at("2026-03-02T19:50:01Z")));
        // The close is the first whole second outside the window (20:00:00 is still open).
        let draining = zone_clock(&z, None, at("2026-03-02T19:50:01Z"), None);
        assert!(draining.phase.open && draining.phase.draining);
        assert_eq!(draining.phase.next, Some(at("2026-03-02T20:00:01Z")));
    }

    #[test]
    fn without_drain_before_the_close_itself_is_next() {
        let z = zone("08:00-20:00", 0, 60);
        let clock = zone_clock(&z, None, at("2026-03-02T12:00:00Z"), None);
        assert_eq!(clock.phase.next, Some(at("2026-03-02T20:00:01Z")));
    }

    #[test]
    fn closed_zone_wakes_for_its_next_round_before_it_opens() {
        let z = zone("08:00-20:00", 0, 300);
        let now = at("2026-03-02T21:00:00Z");
        let fresh = zone_clock(&z, None, now, None);
        assert!(!fresh.phase.open && fresh.phase.round_due);
        assert_eq!(fresh.phase.next, Some(at("2026-03-03T08:00:00Z")));
        let after_round = zone_clock(&z, Some(at("2026-03-02T20:58:00Z")), now, None);
        assert!(!after_round.phase.round_due);
        assert_eq!(after_round.phase.next, Some(at("2026-03-02T21:03:00Z")));
        let later = zone_clock(
            &z,
            Some(at("2026-03-02T20:58:00Z")),
            at("2026-03-02T21:03:00Z"),
            None,
        );
        assert!(later.phase.round_due, "evictPeriod elapsed exactly");
    }

    #[test]
    fn a_round_the_server_cut_short_is_due_again_at_its_retry() {
        let mut z = zone("08:00-20:00", 0, 300);
        let round = at("2026-03-02T20:58:00Z");
        z.round_retry = Some(at("2026-03-02T20:58:10Z"));
        let clock = zone_clock(&z, Some(round), at("2026-03-02T20:58:05Z"), None);
        assert!(!clock.phase.round_due);
        assert_eq!(clock.phase.next, Some(at("2026-03-02T20:58:10Z")));
        let retry = zone_clock(&z, Some(round), at("2026-03-02T20:58:10Z"), None);
        assert!(retry.phase.round_due);
        // Once a later round has started, the retry is spent: evictPeriod paces again.
        let next_round = at("2026-03-02T20:58:10Z");
        let after = zone_clock(&z, Some(next_round), at("2026-03-02T20:59:00Z"), None);
        assert!(!after.phase.round_due);
        assert_eq!(after.phase.next, Some(at("2026-03-02T21:03:10Z")));
    }

    #[test]
    fn invalid_zone_never_wakes_anyone() {
        let mut z = zone("08:00-20:00", 0, 60);
        z.schedule = Err("bad".into());
        let clock = zone_clock(&z, None, at("2026-03-02T21:00:00Z"), None);
        assert!(!clock.phase.valid);
        assert_eq!(clock.phase.next, None);
    }

    #[test]
    fn first_cycle_runs_everything_then_intervals_apply() {
        let t0 = at("2026-03-02T12:00:00Z");
        let policies = [policy("fast", 60, 1), policy("slow", 300, 1)];
        let zones = [zone_clock(&zone("08:00-20:00", 0, 60), None, t0, None)];
        let mut s = CycleTimer::default();
        let due = s.due(&policies, &zones, t0).unwrap();
        assert_eq!(due.trigger, Trigger::Leader);
        assert_eq!(due.policies, vec!["fast", "slow"]);
        s.record(&due.policies, &policies, &zones, t0);
        assert_eq!(
            s.due(&policies, &zones, t0 + SignedDuration::from_secs(59)),
            None
        );
        assert_eq!(
            s.next_wakeup(&policies, &zones),
            Some(t0 + SignedDuration::from_secs(60))
        );
        let t1 = t0 + SignedDuration::from_secs(60);
        let due = s.due(&policies, &zones, t1).unwrap();
        assert_eq!(
            (due.trigger, due.policies.clone()),
            (Trigger::Interval, vec!["fast".to_owned()])
        );
        s.record(&due.policies, &policies, &zones, t1);
        assert_eq!(
            s.next_wakeup(&policies, &zones),
            Some(t0 + SignedDuration::from_secs(120))
        );
    }

    #[test]
    fn zone_transition_comes_before_a_long_interval_and_runs_all() {
        let z = zone("08:00-20:00", 0, 60);
        let t0 = at("2026-03-02T19:58:00Z");
        let policies = [policy("p", 3600, 1), policy("q", 3600, 1)];
        let zones = [zone_clock(&z, None, t0, None)];
        let mut s = CycleTimer::default();
        s.record(&["p".to_owned(), "q".to_owned()], &policies, &zones, t0);
        let close = at("2026-03-02T20:00:01Z");
        assert_eq!(s.next_wakeup(&policies, &zones), Some(close));
        assert_eq!(
            s.due(&policies, &zones, close - SignedDuration::from_millis(1)),
            None
        );
        let zones_now = [zone_clock(&z, None, close, None)];
        let due = s.due(&policies, &zones_now, close).unwrap();
        assert_eq!(due.trigger, Trigger::Zone);
        assert_eq!(due.policies, vec!["p", "q"]);
    }

    #[test]
    fn a_policy_edit_runs_that_policy_at_once() {
        let t0 = at("2026-03-02T12:00:00Z");
        let mut s = CycleTimer::default();
        let policies = [policy("p", 300, 1), policy("q", 300, 1)];
        s.record(&["p".to_owned(), "q".to_owned()], &policies, &[], t0);
        let edited = [policy("p", 300, 2), policy("q", 300, 1)];
        let due = s
            .due(&edited, &[], t0 + SignedDuration::from_secs(1))
            .unwrap();
        assert_eq!(
            (due.trigger, due.policies),
            (Trigger::Config, vec!["p".to_owned()])
        );
        let added = [
            policy("p", 300, 1),
            policy("q", 300, 1),
            policy("r", 300, 1),
        ];
        let due = s
            .due(&added, &[], t0 + SignedDuration::from_secs(1))
            .unwrap();
        assert_eq!(due.policies, vec!["r"]);
    }

    #[test]
    fn a_policy_deleted_and_created_again_runs_at_once() {
        let t0 = at("2026-03-02T12:00:00Z");
        let mut s = CycleTimer::default();
        let policies = [policy("p", 300, 1), policy("q", 300, 1)];
        s.record(&["p".to_owned(), "q".to_owned()], &policies, &[], t0);
        // No cycle saw it gone: the new object has the old one's name and generation.
        let again = [
            PolicyClock {
                uid: Some("p-uid-2".to_owned()),
                ..policy("p", 300, 1)
            },
            policy("q", 300, 1),
        ];
        let due = s
            .due(&again, &[], t0 + SignedDuration::from_secs(1))
            .unwrap();
        assert_eq!(
            (due.trigger, due.policies),
            (Trigger::Config, vec!["p".to_owned()])
        );
    }

    #[test]
    fn a_zone_edit_or_new_zone_runs_everything() {
        let t0 = at("2026-03-02T12:00:00Z");
        let policies = [policy("p", 300, 1)];
        let mut s = CycleTimer::default();
        let before = [zone_clock(&zone("08:00-20:00", 0, 60), None, t0, None)];
        s.record(&["p".to_owned()], &policies, &before, t0);
        let edited = [zone_clock(&zone("08:00-22:00", 0, 60), None, t0, None)];
        assert_eq!(
            s.due(&policies, &edited, t0).unwrap().trigger,
            Trigger::Zone
        );
        assert_eq!(s.due(&policies, &[], t0).unwrap().trigger, Trigger::Zone);
        assert_eq!(s.due(&policies, &before, t0), None);
    }

    #[test]
    fn a_round_recorded_in_the_cycle_does_not_retrigger() {
        let z = zone("08:00-20:00", 0, 60);
        let t0 = at("2026-03-02T21:00:00Z");
        let policies = [policy("p", 300, 1)];
        let mut s = CycleTimer::default();
        // The cycle at t0 started a round: the phases recorded are the ones after it.
        let after = [zone_clock(&z, Some(t0), t0, None)];
        s.record(&["p".to_owned()], &policies, &after, t0);
        assert_eq!(
            s.due(&policies, &after, t0 + SignedDuration::from_secs(1)),
            None
        );
        assert_eq!(
            s.next_wakeup(&policies, &after),
            Some(t0 + SignedDuration::from_secs(60))
        );
        let t1 = t0 + SignedDuration::from_secs(60);
        let due = s
            .due(&policies, &[zone_clock(&z, Some(t0), t1, None)], t1)
            .unwrap();
        assert_eq!(due.trigger, Trigger::Zone);
    }

    #[test]
    fn sleeping_is_capped_and_never_negative() {
        let now = at("2026-03-02T12:00:00Z");
        let cap = Duration::from_secs(30);
        assert_eq!(sleep_for(None, now, cap), cap);
        assert_eq!(
            sleep_for(Some(now + SignedDuration::from_secs(3600)), now, cap),
            cap
        );
        assert_eq!(
            sleep_for(Some(now - SignedDuration::from_secs(5)), now, cap),
            Duration::from_millis(5)
        );
        assert_eq!(
            sleep_for(Some(now + SignedDuration::from_secs(2)), now, cap),
            Duration::from_millis(2005)
        );
    }
}
