//! Each zone's phases over the span, and when the controller would next run a cycle for it.

use jiff::{Timestamp, tz::TimeZone};

use super::{Event, EventKind, Phase, PhaseChange, ZoneTrack};
use crate::{cluster::ZoneInfo, text::clock, time_windows::ZoneSchedule};

/// Zone changes enumerated per zone at most (a whole-day window flips at most a few times a day).
const MAX_CHANGES: usize = 10_000;

/// The zone's changes in `(now, until]` and its phases from `now`.
pub(super) fn zone_track(
    zone: &ZoneInfo,
    now: Timestamp,
    until: Timestamp,
) -> (ZoneTrack, Vec<Event>) {
    let windows = zone.spec.windows_line();
    let mut track = ZoneTrack {
        name: zone.name.clone(),
        time_zone: zone.spec.time_zone.clone(),
        windows,
        phases: Vec::new(),
        drain_before: zone.spec.drain_before.to_string(),
        bar: String::new(),
        error: None,
        tz: TimeZone::UTC,
    };
    let schedule = match &zone.schedule {
        Ok(schedule) => schedule,
        Err(error) => {
            track.error = Some(error.clone());
            return (track, Vec::new());
        }
    };
    track.time_zone = schedule.time_zone_name().to_owned();
    track.tz = schedule.time_zone().clone();
    let drain = zone.fixed_lead();
    let drain_signed = jiff::SignedDuration::try_from(drain).unwrap_or(jiff::SignedDuration::MAX);
    let change_event = |at: Timestamp, shown: Timestamp, kind: EventKind| {
        Event::new(at, shown, Some(zone.name.clone()), kind)
    };
    let mut events = Vec::new();
    // The zone's own state: an `auto` drain the status says started is draining too.
    let state = zone
        .state_at(now)
        .unwrap_or_else(|_| schedule.state_at(now, drain));
    track.phases.push(PhaseChange {
        from: now,
        phase: Phase::of(state.open, state.draining),
    });
    let mut at = now;
    let mut open = state.open;
    for _ in 0..MAX_CHANGES {
        let Some(change) = schedule.next_change(at) else {
            break;
        };
        if open
            && drain_signed.is_positive()
            && let Ok(drain_start) = change.checked_sub(drain_signed)
        {
            // Draining starts when the close is `drainBefore` away; already draining at `at` otherwise.
            if drain_start > at && drain_start <= until {
                let shown = clock::close_boundary(schedule.time_zone(), change)
                    .checked_sub(drain_signed)
                    .unwrap_or(drain_start);
                let mut starts = change_event(drain_start, shown, EventKind::DrainStarts);
                starts.detail = Some(format!(
                    "drainBefore {}: preemptable pods leave before the close",
                    zone.spec.drain_before
                ));
                events.push(starts);
                track.phases.push(PhaseChange {
                    from: drain_start,
                    phase: Phase::Draining,
                });
            }
        }
        if change > until {
            break;
        }
        let state = schedule.state_at(change, drain);
        open = state.open;
        let kind = if open {
            EventKind::Opens
        } else {
            EventKind::Closes
        };
        events.push(change_event(
            change,
            clock::shown_change(schedule, change),
            kind,
        ));
        track.phases.push(PhaseChange {
            from: change,
            phase: Phase::of(state.open, state.draining),
        });
        at = change;
    }
    (track, events)
}

/// The next instant after `at` at which the controller would run a cycle for this zone: it opens or
/// closes, starts draining, or its `evictPeriod` elapses after the last round. The same rule as the
/// controller's scheduler (controller/cycle_timer.rs), over the simulated zone.
pub(super) fn next_phase(zone: &ZoneInfo, at: Timestamp) -> Option<Timestamp> {
    let next_round = zone
        .last_eviction_round
        .and_then(|last| last.checked_add(zone.spec.evict_period.to_signed()).ok())
        .filter(|next| *next > at);
    let (change, drain_start) = match &zone.schedule {
        Ok(schedule) => changes(schedule, zone, at),
        Err(_) => (None, None),
    };
    [change, drain_start, next_round]
        .into_iter()
        .flatten()
        .filter(|t| *t > at)
        .min()
}

fn changes(
    schedule: &ZoneSchedule,
    zone: &ZoneInfo,
    at: Timestamp,
) -> (Option<Timestamp>, Option<Timestamp>) {
    let state = schedule.state_at(at, zone.fixed_lead());
    let drain_start = state
        .next_change
        .filter(|_| state.open && !state.draining)
        .and_then(|close| zone.fixed_drain_start(close));
    (state.next_change, drain_start)
}
