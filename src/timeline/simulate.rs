//! The simulation: cycles planned where the controller would run them, their evictions queued and sent
//! at the controller's pace, each pod gone once it has terminated. One cycle is, in order: the queue
//! brought up to the cycle's instant ([`Simulation::advance_queue`]), `auto` drains due started and
//! each zone's drain followed ([`Simulation::start_drains`]), the plan ([`Simulation::plan`]), its
//! rounds logged and queued ([`Simulation::log_cycle`], [`Simulation::queue_evictions`]), and the
//! instant of the next cycle ([`Simulation::next_cycle`]).

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    sync::Arc,
};

use jiff::{SignedDuration, Timestamp, tz::TimeZone};

use super::{
    Assumptions, Event, EventKind, MAX_SPAN, Move, Phase, PhaseChange, PolicyRun, RoundPace,
    Settings, Timeline, Waiting, ZoneTrack,
    drains::{Drains, ZoneAt},
    queue::{EvictionQueue, Happened, Request},
    render::draw_bars,
    zones::{next_phase, zone_track},
};
use crate::{
    api::{DrainBefore, PolicyMode},
    cluster::{
        ClusterCache, DrainStart, ObjectKey, PodInfo, PolicyInfo, Snapshot, model::keys::PodUid,
    },
    drain::{self, Urgency, ZoneOutlook},
    framework::{Candidate, GateId, PlanContext, StrategyId, zone_views},
    planner::{self, CyclePlan, SkipRows},
    text::clock,
};

/// Cycles simulated at most; a one-second policy interval over a week would be 604,800 plans.
const MAX_CYCLES: usize = 20_000;

/// Simulates `policies` on `cache` from `now` for `span` (at most [`MAX_SPAN`]) with the controller's
/// `settings`; the cache is left as the simulation ends, the evictions planned within the span sent
/// and their pods gone.
pub fn simulate(
    cache: &mut ClusterCache,
    policies: &[&PolicyInfo],
    now: Timestamp,
    span: SignedDuration,
    settings: &Settings,
) -> Timeline {
    let until = now
        .checked_add(span.clamp(SignedDuration::ZERO, MAX_SPAN))
        .unwrap_or(Timestamp::MAX);
    let mut simulation = Simulation::new(cache, policies, now, until, settings);
    simulation.run();
    simulation.finish()
}

struct Simulation<'c> {
    cache: &'c mut ClusterCache,
    snapshot: Snapshot,
    /// The policies as simulated: every one evicting.
    policies: Vec<PolicyInfo>,
    /// The policies as configured, for the output.
    reported: Vec<PolicyRun>,
    settings: Settings,
    now: Timestamp,
    until: Timestamp,
    /// The shortest policy interval: a cycle at least this often.
    tick: SignedDuration,
    zones: Vec<ZoneTrack>,
    zone_tz: BTreeMap<String, TimeZone>,
    events: Vec<Event>,
    warnings: Vec<String>,
    queue: EvictionQueue,
    drains: Drains,
    /// Each zone's rounds so far.
    rounds: BTreeMap<String, u32>,
    /// What the last event of each zone said was held, so that a cycle that changes nothing adds
    /// nothing.
    held_shown: BTreeMap<String, BTreeSet<(ObjectKey, String)>>,
    /// The pods the last cycle held, each shared with the events that list it.
    last_held: HashMap<ObjectKey, Arc<Waiting>>,
    was_evicting: BTreeMap<String, bool>,
    /// Zones whose due round evicted nothing while pods wait for their budget, limit or cooldown:
    /// tried again one `evictPeriod` later.
    retries: BTreeMap<String, Timestamp>,
    /// When each `auto` zone's drain is planned to start, by the last outlook.
    auto_starts: BTreeMap<String, Timestamp>,
    /// Each zone's last outlook made while it was open, about its close ahead.
    open_outlooks: BTreeMap<String, ZoneOutlook>,
    happened: Vec<Happened>,
    /// Pods that end by themselves (their deadline, or the run time they declare), by when.
    ends: BTreeMap<Timestamp, Vec<ObjectKey>>,
    /// Pods a drain left to finish, and the zone: their ends are events.
    left_to_finish: HashMap<ObjectKey, String>,
}

impl<'c> Simulation<'c> {
    fn new(
        cache: &'c mut ClusterCache,
        policies: &[&PolicyInfo],
        now: Timestamp,
        until: Timestamp,
        settings: &Settings,
    ) -> Simulation<'c> {
        let snapshot = cache.snapshot();
        let mut zones = Vec::new();
        let mut events = Vec::new();
        // Without a policy running `tdm` a drain start evicts nothing: it is not an event of the
        // timeline, and the zone is open until it closes.
        let drains = drain::draining_policy(policies).is_some();
        for zone in snapshot.zones.values() {
            let (mut track, mut changes) = zone_track(zone, now, until);
            if !drains {
                changes.retain(|e| e.event != EventKind::DrainStarts);
                for change in &mut track.phases {
                    if change.phase == Phase::Draining {
                        change.phase = Phase::Open;
                    }
                }
            }
            zones.push(track);
            events.extend(changes);
        }
        let zone_tz = zones
            .iter()
            .map(|z| (z.name.clone(), z.tz.clone()))
            .collect();
        let tick = policies
            .iter()
            .map(|p| p.spec.interval.to_signed())
            .min()
            .unwrap_or(SignedDuration::from_mins(5))
            .max(SignedDuration::from_secs(1));
        Simulation {
            cache,
            policies: policies
                .iter()
                .map(|policy| {
                    let mut policy = (*policy).clone();
                    policy.spec.mode = PolicyMode::Evict;
                    policy
                })
                .collect(),
            reported: policies
                .iter()
                .map(|p| PolicyRun {
                    name: p.name.clone(),
                    mode: format!("{:?}", p.spec.mode),
                })
                .collect(),
            settings: *settings,
            now,
            until,
            tick,
            zones,
            zone_tz,
            events,
            warnings: Vec::new(),
            queue: EvictionQueue::new(settings.drain.pacing, now),
            drains: Drains::default(),
            rounds: BTreeMap::new(),
            held_shown: BTreeMap::new(),
            last_held: HashMap::new(),
            was_evicting: BTreeMap::new(),
            retries: BTreeMap::new(),
            auto_starts: BTreeMap::new(),
            open_outlooks: BTreeMap::new(),
            happened: Vec::new(),
            ends: pod_ends(&snapshot, now),
            left_to_finish: HashMap::new(),
            snapshot,
        }
    }

    fn run(&mut self) {
        let mut at = self.now;
        for cycle_number in 0.. {
            if cycle_number == MAX_CYCLES {
                self.warnings.push(format!(
                    "simulated {MAX_CYCLES} cycles (the policies' interval is {}); stopped at {at}",
                    self.tick
                ));
                break;
            }
            self.advance_queue(at);
            self.end_pods(at);
            self.start_drains(at);
            self.give_notices(at);
            let (cycle, urgencies) = self.plan(at);
            if cycle_number == 0 {
                self.warn_once(&cycle);
            }
            let queued = self.log_cycle(&cycle, at);
            self.queue_evictions(&cycle, &urgencies, queued, at);
            let next = self.next_cycle(at);
            if next > self.until || next <= at {
                break;
            }
            at = next;
        }
        // What the span planned still goes out after it, and its pods go: the drains it started end.
        self.advance_queue(Timestamp::MAX);
    }

    /// Sends, gives up and lets go whatever the queue has due by `at`, and applies it to the cache as
    /// the controller's watches would see it.
    fn advance_queue(&mut self, at: Timestamp) {
        let mut happened = std::mem::take(&mut self.happened);
        // Whether replacements have anywhere to go, found once per step: it reads every node.
        let mut room: Option<bool> = None;
        self.queue.advance(at, &mut happened);
        for event in happened.drain(..) {
            match event {
                Happened::Sent {
                    key,
                    event,
                    index,
                    at,
                    answered,
                    gone,
                } => {
                    if let Some(pod) = self.cache.pod(&key) {
                        let work = pod.work_since_saved(at).as_secs_f64();
                        self.drains.evicted(&key, work);
                    }
                    // Leaving from its answer on, as the controller marks it.
                    self.cache.mark_evicting(&key, answered);
                    let round = &mut self.events[event];
                    if let Some(pod) = round.evictions.get_mut(index) {
                        pod.sent_at = Some(at);
                        pod.gone_at = Some(gone);
                    }
                    let pace = round.pace.get_or_insert_with(RoundPace::default);
                    pace.sent_from = Some(pace.sent_from.map_or(at, |t| t.min(at)));
                    pace.sent_by = Some(pace.sent_by.map_or(at, |t| t.max(at)));
                    pace.gone_by = Some(pace.gone_by.map_or(gone, |t| t.max(gone)));
                }
                Happened::GivenUp { event, .. } => {
                    if let Some(pace) = self.events[event].pace.as_mut() {
                        pace.given_up += 1;
                    }
                }
                Happened::Gone { key, at } => {
                    let room = *room.get_or_insert_with(|| room_elsewhere(self.cache, at));
                    let replacement = self
                        .cache
                        .pod(&key)
                        .and_then(|pod| replacement(pod, at, room));
                    self.cache.delete_pod(&key, at);
                    if let Some(replacement) = replacement {
                        self.cache.apply_pod(replacement, at);
                    }
                    self.drains.gone(&key, at);
                }
            }
        }
        self.happened = happened;
    }

    /// Pods whose own end has come by `at` end (as the kubelet or the workload ends them); those a
    /// drain left to finish are events of their zone.
    fn end_pods(&mut self, at: Timestamp) {
        while let Some(entry) = self.ends.first_entry() {
            if *entry.key() > at {
                break;
            }
            let (end, keys) = entry.remove_entry();
            for key in keys {
                let Some(pod) = self.cache.pod(&key) else {
                    continue;
                };
                if pod.phase != crate::cluster::PodPhase::Running || pod.is_leaving() {
                    continue;
                }
                let mut ended = PodInfo::clone(pod);
                ended.phase = crate::cluster::PodPhase::Succeeded;
                self.cache.apply_pod(ended, end);
                self.drains.gone(&key, end);
                if let Some(zone) = self.left_to_finish.remove(&key) {
                    let mut event = Event::new(end, end, Some(zone), EventKind::Finishes);
                    event.pod = Some(key.to_string());
                    self.events.push(event);
                }
            }
        }
    }

    /// What the controller does before each cycle: starts the `auto` drains the outlook says are due
    /// (noted in the cache, so that the plan sees the zones draining), and follows each zone's drain.
    fn start_drains(&mut self, at: Timestamp) {
        self.cache.update_snapshot(&mut self.snapshot);
        let outlooks = {
            let refs: Vec<&PolicyInfo> = self.policies.iter().collect();
            if drain::draining_policy(&refs).is_none() {
                return;
            }
            if self.outlook_needed(at) {
                let queued = self.queue.queued();
                let live = drain::Live {
                    queued: &queued,
                    bucket: Some(self.queue.bucket()),
                    ..drain::Live::none()
                };
                drain::plan(&self.snapshot, &refs, at, &self.settings.drain, &live)
            } else {
                Vec::new()
            }
        };
        if !outlooks.is_empty() {
            self.auto_starts.clear();
        }
        let mut started = false;
        for outlook in &outlooks {
            let Some(close) = outlook.close else {
                continue;
            };
            if outlook.start_now {
                started |= self
                    .cache
                    .note_drain_start(&outlook.zone, DrainStart { close, at });
                self.drain_started(outlook, at);
            } else if !outlook.evicting
                && outlook.drain_before == DrainBefore::Auto
                && let Some(start) = outlook.drain_start.filter(|start| *start > at)
            {
                self.auto_starts.insert(outlook.zone.clone(), start);
            }
        }
        if started {
            self.cache.update_snapshot(&mut self.snapshot);
        }
        let refs: Vec<&PolicyInfo> = self.policies.iter().collect();
        if let Some(policy) = drain::draining_policy(&refs) {
            follow_drains(
                &mut self.drains,
                &self.snapshot,
                policy,
                (self.now, at),
                (&outlooks, &self.open_outlooks),
            );
        }
        for outlook in outlooks {
            if outlook.close.is_some() {
                self.open_outlooks.insert(outlook.zone.clone(), outlook);
            }
        }
    }

    /// Whether the drain outlook has anything to say at `at`: at the start, while an `auto` zone waits
    /// for its drain to start, and when a zone starts evicting for a close (its estimate, assumptions
    /// and fix are taken then).
    fn outlook_needed(&self, at: Timestamp) -> bool {
        if at == self.now {
            return true;
        }
        let horizon = at
            .checked_add(self.settings.drain.horizon)
            .unwrap_or(Timestamp::MAX);
        self.snapshot.zones.values().any(|zone| {
            let Ok(state) = zone.state_at(at) else {
                return false;
            };
            let close = state.next_change.filter(|_| state.open);
            let waits_for_auto = zone.drains_automatically()
                && state.open
                && !state.draining
                && close.is_some_and(|close| close <= horizon);
            let new_drain = state.evicting()
                && match self.drains.priority(&zone.name) {
                    None => true,
                    Some(known) => state.open && Some(known) != close,
                };
            waits_for_auto || new_drain
        })
    }

    /// When each zone asking for `evictionNotice` tells its pods, as of `at`: from its `auto` start as
    /// planned, or its fixed lead.
    fn noticing(&self, at: Timestamp) -> Vec<drain::notice::Noticing> {
        self.snapshot
            .zones
            .values()
            .filter_map(|zone| {
                drain::notice::noticing(zone, at, self.auto_starts.get(&zone.name).copied())
            })
            .collect()
    }

    /// What the controller does once a zone's pods are to be told: the notices written to the pods
    /// (as their watch would show them), an event per zone.
    fn give_notices(&mut self, at: Timestamp) {
        let noticing = self.noticing(at);
        if noticing.is_empty() {
            return;
        }
        let refs: Vec<&PolicyInfo> = self.policies.iter().collect();
        let Some(policy) = drain::draining_policy(&refs) else {
            return;
        };
        let notices = drain::notice::due(&self.snapshot, policy, &noticing, at, &HashSet::new());
        if notices.is_empty() {
            return;
        }
        let mut told: BTreeMap<&str, (usize, Timestamp)> = BTreeMap::new();
        for notice in &notices {
            let Some(pod) = self.cache.pod(&notice.pod) else {
                continue;
            };
            let mut noticed = PodInfo::clone(pod);
            noticed
                .status
                .set_condition(crate::api::labels::EVICTION_NOTICE, "True", notice.at);
            self.cache.apply_pod(noticed, at);
            let zone = told
                .entry(notice.zone.as_str())
                .or_insert((0, notice.evict_after));
            zone.0 += 1;
        }
        for (zone, (pods, from)) in told {
            let mut event = Event::new(at, at, Some(zone.to_owned()), EventKind::Notified);
            event.detail = Some(format!(
                "{pods} pod{} told that a drain evicts {} from {} on",
                if pods == 1 { "" } else { "s" },
                if pods == 1 { "it" } else { "them" },
                from
            ));
            self.events.push(event);
        }
        self.cache.update_snapshot(&mut self.snapshot);
    }

    /// An `auto` drain starts at `at`: an event, and the zone's phase.
    fn drain_started(&mut self, outlook: &ZoneOutlook, at: Timestamp) {
        self.auto_starts.remove(&outlook.zone);
        let mut event = Event::new(at, at, Some(outlook.zone.clone()), EventKind::DrainStarts);
        event.detail = Some(drain::advice::start_text(outlook, &self.settings.drain));
        self.events.push(event);
        if let Some(track) = self.zones.iter_mut().find(|z| z.name == outlook.zone) {
            let position = track.phases.partition_point(|p| p.from <= at);
            track.phases.insert(
                position,
                PhaseChange {
                    from: at,
                    phase: Phase::Draining,
                },
            );
        }
    }

    /// One plan of every policy, as the controller's cycle makes it: the evictions still queued
    /// count as leaving. With how soon each of its evictions must go.
    fn plan(&mut self, at: Timestamp) -> (CyclePlan, Vec<Urgency>) {
        self.cache.update_snapshot(&mut self.snapshot);
        let refs: Vec<&PolicyInfo> = self.policies.iter().collect();
        let in_flight: HashSet<ObjectKey> = self.queue.queued().into_keys().collect();
        let cycle = planner::plan_all_in_flight(
            &self.snapshot,
            &refs,
            at,
            SkipRows::All,
            in_flight.clone(),
        );
        let evictions: Vec<&Candidate> = cycle
            .plans
            .iter()
            .flat_map(|plan| plan.evictions.iter().map(|e| &e.candidate))
            .collect();
        let drain = self.settings.drain;
        let urgencies = match drain::draining_policy(&refs) {
            Some(policy) => {
                let ctx = PlanContext {
                    snapshot: &self.snapshot,
                    policy,
                    now: at,
                    zones: &cycle.zones,
                    planned_elsewhere: &in_flight,
                };
                drain::inputs::round_urgencies(&ctx, &evictions, &|_, pod| {
                    drain
                        .pacing
                        .request
                        .saturating_add(drain.terminates_in(None, pod))
                })
            }
            None => vec![Urgency::NO_CLOSE; evictions.len()],
        };
        // Read no more this cycle: the simulated evictions change the cache's aggregates in place.
        self.cache.lend_snapshot(&mut self.snapshot);
        (cycle, urgencies)
    }

    fn warn_once(&mut self, cycle: &CyclePlan) {
        self.warnings
            .extend(cycle.warnings.iter().map(|w| w.text.clone()));
        for plan in &cycle.plans {
            if let Some(error) = &plan.error {
                self.warnings
                    .push(format!("policy {} did not run: {error}", plan.policy));
            }
        }
    }

    /// The cycle's rounds (one event per zone, and one for evictions outside zones) and what closing
    /// zones hold back. Returns where each evicted pod is logged, by its key: its event and index.
    fn log_cycle<'p>(
        &mut self,
        cycle: &'p CyclePlan,
        at: Timestamp,
    ) -> HashMap<&'p ObjectKey, (usize, usize)> {
        // Each pod once, under the first policy that plans it (later ones see it as leaving anyway).
        let mut evicted: HashSet<&ObjectKey> = HashSet::new();
        let mut moves: BTreeMap<Option<String>, Vec<Move>> = BTreeMap::new();
        // Each evicted pod's zone (its round) and place in the round.
        let mut places: Vec<(&ObjectKey, Option<&str>, usize)> = Vec::new();
        for plan in &cycle.plans {
            for eviction in &plan.evictions {
                let candidate = &eviction.candidate;
                if evicted.insert(&candidate.pod.key) {
                    let round = moves.entry(candidate.zone.clone()).or_default();
                    places.push((&candidate.pod.key, candidate.zone.as_deref(), round.len()));
                    round.push(Move::of(candidate, &plan.policy));
                }
            }
        }
        let mut held = held_pods(cycle, &evicted, &mut self.last_held);
        self.drains.note_held(&held);
        for (zone, waiting) in &held {
            for pod in waiting.iter().filter(|w| w.gate == GateId::Finishes.name()) {
                self.left_to_finish.insert(
                    ObjectKey::new(pod.namespace.as_str(), pod.name.as_str()),
                    zone.clone(),
                );
            }
        }

        // When a zone starts closing again, what it holds is news again.
        let mut evicting_zones = BTreeSet::new();
        for (name, view) in &cycle.zones {
            let now_evicting = view.state.as_ref().is_ok_and(|s| s.evicting());
            if self.was_evicting.insert(name.clone(), now_evicting) == Some(false) && now_evicting {
                self.held_shown.remove(name);
            }
            if now_evicting {
                evicting_zones.insert(name.clone());
            }
        }
        // As the controller's attempts: a zone that evicted this cycle is not tried again early.
        self.retries
            .retain(|zone, retry| *retry > at && !moves.contains_key(&Some(zone.clone())));
        for (name, view) in &cycle.zones {
            let blocked = view.evicting_now()
                && !moves.contains_key(&Some(name.clone()))
                && held.get(name).is_some_and(|waiting| {
                    waiting.iter().any(|w| RETRIED.contains(&w.gate.as_str()))
                });
            if blocked
                && let Ok(retry) = at.checked_add(
                    self.cache
                        .zone(name)
                        .map_or(SignedDuration::ZERO, |z| z.spec.evict_period.to_signed()),
                )
            {
                self.retries.insert(name.clone(), retry);
            }
        }

        let mut round_events: BTreeMap<Option<String>, usize> = BTreeMap::new();
        for (zone, pods) in moves {
            let mut round = Event::new(at, at, zone.clone(), EventKind::Round);
            round.pace = Some(RoundPace::of(&pods));
            round.evictions = pods;
            if let Some(zone) = &zone {
                let number = self.rounds.entry(zone.clone()).or_default();
                *number += 1;
                round.round = Some(*number);
                round.waiting.pods = held.remove(zone).unwrap_or_default();
                self.held_shown
                    .insert(zone.clone(), signature(&round.waiting));
            }
            round_events.insert(zone, self.events.len());
            self.events.push(round);
        }
        // Only closing zones: an open zone holds placement violations at every cycle, which the
        // report lists; the timeline is about what closing zones leave behind.
        for (zone, waiting) in held {
            if !evicting_zones.contains(&zone) {
                continue;
            }
            let seen = signature(&waiting);
            if self.held_shown.get(&zone) != Some(&seen) {
                let mut stuck = Event::new(at, at, Some(zone.clone()), EventKind::Held);
                stuck.waiting.pods = waiting;
                self.events.push(stuck);
                self.held_shown.insert(zone, seen);
            }
        }
        places
            .into_iter()
            .filter_map(|(key, zone, index)| {
                let event = round_events.get(&zone.map(str::to_owned))?;
                Some((key, (*event, index)))
            })
            .collect()
    }

    /// What the controller's cycle does with its plan: each eviction queued with how soon it must go
    /// (`urgencies`, in plan order), leaving once it is answered; and each zone's round noted.
    fn queue_evictions(
        &mut self,
        cycle: &CyclePlan,
        urgencies: &[Urgency],
        logged: HashMap<&ObjectKey, (usize, usize)>,
        at: Timestamp,
    ) {
        let give_up_at = at
            .checked_add(self.settings.cycle_timeout)
            .unwrap_or(Timestamp::MAX);
        let mut queued: HashSet<&ObjectKey> = HashSet::new();
        let evictions = cycle.plans.iter().flat_map(|plan| &plan.evictions);
        for (eviction, urgency) in evictions.zip(urgencies) {
            let candidate = &eviction.candidate;
            let key = &candidate.pod.key;
            let Some(&(event, index)) = logged.get(key) else {
                continue;
            };
            if !queued.insert(key) {
                continue;
            }
            let tdm = candidate.strategy == StrategyId::Tdm;
            self.queue.push(Request {
                key: key.clone(),
                urgency: *urgency,
                queued_at: at,
                terminates_in: self.settings.drain.terminates_in(None, &candidate.pod),
                give_up_at: (!tdm).then_some(give_up_at),
                event,
                index,
            });
        }
        let zones: BTreeSet<&str> = cycle
            .plans
            .iter()
            .flat_map(|plan| plan.zones_with_evictions())
            .collect();
        for zone in zones {
            self.cache.note_eviction_round(zone, at);
        }
    }

    /// The next instant the controller would run a cycle: the policies' interval, a zone's change or
    /// `evictPeriod`, a round tried again, an `auto` drain's planned start.
    fn next_cycle(&self, at: Timestamp) -> Timestamp {
        let mut next = at.checked_add(self.tick).unwrap_or(Timestamp::MAX);
        for zone in self.cache.zones().values() {
            if let Some(change) = next_phase(zone, at) {
                next = next.min(change);
            }
        }
        let notices = self.noticing(at).into_iter().map(|noticing| noticing.from);
        self.retries
            .values()
            .copied()
            .chain(self.auto_starts.values().copied())
            .chain(notices)
            .chain(self.ends.keys().find(|end| **end > at).copied())
            .filter(|t| *t > at)
            .fold(next, Timestamp::min)
    }

    fn finish(self) -> Timeline {
        let Simulation {
            mut events,
            zones,
            zone_tz,
            drains,
            warnings,
            reported,
            settings,
            now,
            until,
            ..
        } = self;
        let drains = drains.lines(until, &settings.drain, &zone_tz);
        for event in &mut events {
            if event.event != EventKind::Closes {
                continue;
            }
            let left = drains
                .iter()
                .find(|d| {
                    Some(d.zone.as_str()) == event.zone.as_deref() && d.close == Some(event.at)
                })
                .and_then(|d| d.at_close)
                .filter(|n| *n > 0);
            if let Some(left) = left {
                event.detail = Some(format!(
                    "{left} preemptable pod{} still there",
                    if left == 1 { "" } else { "s" }
                ));
            }
        }
        finish(&mut events, &zone_tz, now);
        let readable = zones.iter().filter(|z| z.error.is_none()).map(|z| &z.tz);
        let clock = clock::Clock::for_zones(readable, None, now);
        let mut timeline = Timeline {
            now,
            until,
            policies: reported,
            zones,
            events,
            warnings,
            drains,
            assumptions: Assumptions::of(&settings),
            clock,
        };
        draw_bars(&mut timeline);
        timeline
    }
}

/// Each zone's drain brought up to the cycle at `at` (`now` is the simulation's start).
fn follow_drains(
    drains: &mut Drains,
    snapshot: &Snapshot,
    policy: &PolicyInfo,
    (now, at): (Timestamp, Timestamp),
    (outlooks, open_outlooks): (&[ZoneOutlook], &BTreeMap<String, ZoneOutlook>),
) {
    let (views, _) = zone_views(snapshot, at);
    let nothing_planned = HashSet::new();
    let ctx = PlanContext {
        snapshot,
        policy,
        now: at,
        zones: &views,
        planned_elsewhere: &nothing_planned,
    };
    for zone in snapshot.zones.values() {
        let Ok(state) = zone.state_at(at) else {
            continue;
        };
        drains.observe(
            ZoneAt {
                zone,
                open: state.open,
                evicting: state.evicting(),
                close: state.next_change.filter(|_| state.open),
            },
            now,
            &ctx,
            [
                outlooks.iter().find(|o| o.zone == zone.name),
                open_outlooks.get(&zone.name),
            ],
        );
    }
}

/// Whether a replacement could be scheduled at `at`: some ready, schedulable node outside every
/// closed or draining zone. Where none is (say, a cluster whose only nodes are the closing zone's),
/// replacements stay Pending and hold their jobs' budgets, as the controller then sees.
fn room_elsewhere(cache: &ClusterCache, at: Timestamp) -> bool {
    let zones = cache.zones();
    cache.nodes().any(|node| {
        node.takes_replacements(|zone| {
            zones
                .get(zone)
                .is_none_or(|zone| zone.state_at(at).is_ok_and(|state| state.evicting()))
        })
    })
}

/// The pod that takes the place of `pod`, gone at `at`, in its job: its controller recreates it.
/// With `room` elsewhere it runs there, so that the job's budget is free again, as the drain
/// estimate assumes; without, it stays Pending. It is on no node: nothing is known of where it
/// lands, and it must not weigh on any node the policies balance. A pod nothing recreates (bare,
/// or owned by its PodGroup alone) is not replaced.
fn replacement(pod: &PodInfo, at: Timestamp, room: bool) -> Option<PodInfo> {
    if !pod.recreated_when_evicted() {
        return None;
    }
    let mut replacement = pod.clone();
    replacement.key = ObjectKey::new(
        pod.key.namespace.clone(),
        format!("{}-replacement", pod.key.name),
    );
    replacement.uid = PodUid::from(format!("{}-replacement", pod.uid));
    replacement.node_name = None;
    replacement.evicting_since = None;
    replacement.terminating = false;
    replacement.created_at = Some(at);
    if room {
        replacement.scheduled_at = Some(at);
    } else {
        replacement.phase = crate::cluster::PodPhase::Pending;
        replacement.scheduled_at = None;
    }
    Some(replacement)
}

/// The running pods of `snapshot` that end by themselves from `now` on, by when.
fn pod_ends(snapshot: &Snapshot, now: Timestamp) -> BTreeMap<Timestamp, Vec<ObjectKey>> {
    let mut ends: BTreeMap<Timestamp, Vec<ObjectKey>> = BTreeMap::new();
    for pod in snapshot.pods() {
        if pod.phase != crate::cluster::PodPhase::Running {
            continue;
        }
        let Some(end) = crate::cluster::pod_end(pod, snapshot.podgroup_of(pod)) else {
            continue;
        };
        // Still running past its end and its grace period: it did not end as it said, and the drain
        // evicts it as any other (gate `finishes`); expecting it to end now would hide that.
        if crate::cluster::overstayed(end.at, drain::inputs::grace_of(pod), now) {
            continue;
        }
        ends.entry(end.at.max(now))
            .or_default()
            .push(pod.key.clone());
    }
    ends
}

/// Gates whose hold ends with time: a round they block is tried again one `evictPeriod` later.
const RETRIED: [&str; 4] = [
    GateId::Budget.name(),
    GateId::Limit.name(),
    GateId::Cooldown.name(),
    GateId::Notice.name(),
];

/// Per zone, the pods the cycle's plans held back (each once, and none evicted). A pod held as the
/// last cycle held it is the same `Waiting` (`last_held`, replaced by this cycle's).
fn held_pods(
    cycle: &CyclePlan,
    evicted: &HashSet<&ObjectKey>,
    last_held: &mut HashMap<ObjectKey, Arc<Waiting>>,
) -> BTreeMap<String, Vec<Arc<Waiting>>> {
    let mut held: BTreeMap<String, Vec<Arc<Waiting>>> = BTreeMap::new();
    let mut now_held: HashMap<ObjectKey, Arc<Waiting>> = HashMap::new();
    for plan in &cycle.plans {
        for skip in &plan.skipped {
            let candidate = &skip.candidate;
            let Some(zone) = &candidate.zone else {
                continue;
            };
            let key = &candidate.pod.key;
            if evicted.contains(key) || now_held.contains_key(key) {
                continue;
            }
            let gate = skip.reason.to_string();
            let node = candidate.pod.node_name.as_deref();
            let pod = match last_held.get(key) {
                Some(last)
                    if last.gate == gate
                        && last.detail == skip.detail
                        && last.policy == plan.policy
                        && last.node.as_deref() == node =>
                {
                    Arc::clone(last)
                }
                _ => Arc::new(Waiting {
                    namespace: key.namespace.to_string(),
                    name: key.name.to_string(),
                    node: node.map(String::from),
                    gate,
                    detail: skip.detail.clone(),
                    policy: plan.policy.clone(),
                }),
            };
            now_held.insert(key.clone(), Arc::clone(&pod));
            held.entry(zone.clone()).or_default().push(pod);
        }
    }
    *last_held = now_held;
    held
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
        events[index].waiting.next_round = round;
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
        event.waiting.next_round_when = event.waiting.next_round.map(|at| clock::local(&tz, at));
    }
}

fn signature(waiting: &[Arc<Waiting>]) -> BTreeSet<(ObjectKey, String)> {
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
            gang: candidate.gang.map(|gang| gang.to_string()),
            sent_at: None,
            gone_at: None,
        }
    }
}

impl RoundPace {
    /// A round of `pods`, none sent yet.
    fn of(pods: &[Move]) -> RoundPace {
        let count = |of: &dyn Fn(&Move) -> &str| {
            let distinct: BTreeSet<&str> = pods.iter().map(of).collect();
            u32::try_from(distinct.len()).unwrap_or(u32::MAX)
        };
        RoundPace {
            pods: u32::try_from(pods.len()).unwrap_or(u32::MAX),
            jobs: count(&|m| m.job.as_str()),
            namespaces: count(&|m| m.namespace.as_str()),
            gangs: pods
                .iter()
                .filter_map(|m| Some(format!("{} ({})", m.job, m.gang.as_deref()?)))
                .collect::<BTreeSet<String>>()
                .into_iter()
                .collect(),
            ..RoundPace::default()
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
    /// round every 5 minutes; a job of five preemptable pods that may lose 2 at a time; node
    /// `normal-1` outside the zone, where replacements go.
    /// Pods numbered in `cooling` were scheduled at 17:00 UTC with a 2h cooldown.
    fn cluster(status: Option<serde_json::Value>, cooling: &[usize]) -> ClusterCache {
        let mut cache = ClusterCache::new();
        cache.apply_node(node("rev-1").zone("z").build());
        cache.apply_node(node("normal-1").build());
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

    fn settings() -> Settings {
        Settings::new(drain::DrainSettings::new(drain::Pacing {
            qps: 20.0,
            burst: 40,
            concurrency: 8,
            request: drain::Pacing::ASSUMED_REQUEST,
        }))
    }

    fn simulate_hours(cache: &mut ClusterCache, now: &str, hours: i64) -> Timeline {
        let policy = policy(json!({"interval": "2m"}));
        simulate(
            cache,
            &[&policy],
            ts(now),
            SignedDuration::from_hours(hours),
            &settings(),
        )
    }

    /// How many pods each round evicts, in order.
    fn round_sizes(timeline: &Timeline) -> Vec<usize> {
        timeline
            .events
            .iter()
            .filter(|e| e.event == EventKind::Round)
            .map(|e| e.evictions.len())
            .collect()
    }

    fn kinds(timeline: &Timeline) -> Vec<(String, EventKind, usize)> {
        timeline
            .events
            .iter()
            .map(|e| (e.at.to_string(), e.event, e.evictions.len()))
            .collect()
    }

    #[test]
    fn the_table_is_in_the_zone_s_time_zone_and_fits_a_terminal() {
        let mut cache = cluster(None, &[]);
        let timeline = simulate_hours(&mut cache, "2026-11-23T05:30:00Z", 1);
        let natural = timeline.to_table();
        // The one zone's clock, stated once; the times on it.
        assert!(
            natural.starts_with(
                "tidal timeline from 2026-11-23T06:30:00+01:00 to 2026-11-23T07:30:00+01:00 \
                 (1h), times in Europe/Berlin (CET)\n"
            ),
            "{natural}"
        );
        assert!(
            natural.contains("\nMon 06:40  in 10m  z     starts draining"),
            "{natural}"
        );
        assert!(natural.lines().any(|l| l.chars().count() > 80), "{natural}");
        let fitted = timeline.to_table_for(crate::text::columns::Layout::Fit(80));
        for line in fitted.lines() {
            assert!(line.chars().count() <= 80, "{line}\n{fitted}");
        }
        // The same words, none split (a wrapped cell's lines come between its row's columns).
        let words = |t: &str| {
            let mut words: Vec<String> = t.split_whitespace().map(str::to_owned).collect();
            words.sort_unstable();
            words
        };
        assert_eq!(words(&fitted), words(&natural));
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
        assert_eq!(first.waiting.next_round, Some(ts("2026-11-23T05:45:01Z")));
        assert_eq!(
            first.waiting.next_round_when.as_deref(),
            Some("Mon 06:45 CET")
        );
        assert_eq!(timeline.events[3].round, Some(3));
        assert!(timeline.events[3].waiting.is_empty());
        // The cache was advanced as the controller's would be: pods gone from the zone (each
        // replaced, on no node), last round noted.
        assert!(cache.snapshot().node("rev-1").unwrap().pods.is_empty());
        assert_eq!(cache.pod_count(), 5, "the replacements");
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
    fn without_a_node_for_the_replacements_they_stay_pending_and_hold_the_budget() {
        // The zone's node is the only one: the first two evicted are replaced by Pending pods, which
        // count as unavailable, so the job's budget of 2 is spent until the zone opens again.
        let mut cache = cluster(None, &[]);
        cache.delete_node("normal-1");
        let timeline = simulate_hours(&mut cache, "2026-11-23T05:30:00Z", 1);
        let rounds = round_sizes(&timeline);
        assert_eq!(rounds.iter().sum::<usize>(), 2, "{:?}", kinds(&timeline));
        assert_eq!(cache.snapshot().node("rev-1").unwrap().pods.len(), 3);
    }

    #[test]
    fn pods_owned_by_their_pod_group_alone_are_not_replaced_and_the_job_shrinks() {
        // No node outside the zone, and nothing recreates a pod whose only owner is its PodGroup: the
        // job gets smaller instead of holding Pending replacements, so a 50% budget keeps allowing
        // evictions (2 of 4, then 1 of 2, then 1 of 1), as the controller sees it.
        let mut cache = cluster(None, &[]);
        cache.delete_node("normal-1");
        for i in 0..5 {
            cache.delete_pod(
                &ObjectKey::new("batch", format!("j-{i}")),
                Timestamp::UNIX_EPOCH,
            );
        }
        for i in 0..4 {
            cache.apply_pod(
                pod(&format!("batch/train-{i}"), "rev-1")
                    .owned_by("PodGroup", "train")
                    .annotation("scheduling.k8s.io/group-name", "train")
                    .preemptable()
                    .annotation("volcano.sh/jdb-max-unavailable", "50%")
                    .scheduled_at("2026-11-22T03:00:00Z")
                    .build(),
                Timestamp::UNIX_EPOCH,
            );
        }
        let timeline = simulate_hours(&mut cache, "2026-11-23T05:30:00Z", 1);
        let rounds = round_sizes(&timeline);
        assert_eq!(rounds, [2, 1, 1], "{:?}", kinds(&timeline));
        assert_eq!(cache.pod_count(), 0, "no replacement");
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
        assert!(second.waiting.next_round.is_none());
        assert_eq!(cache.snapshot().node("rev-1").unwrap().pods.len(), 2);
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
            &settings(),
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
