//! A zone's windows bound to its IANA time zone: open/closed state, the next
//! state change and the drain decision.

use std::time::Duration;

use jiff::civil::{Date, DateTime, Time};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Span, Timestamp};

use super::{DailyWindow, WindowError};

/// Search passes of `next_change`: `(civil days after today to enumerate,
/// whole days after t the answer is trusted for)`.
///
/// Boundary candidates are enumerated per local civil day. Candidates from
/// days up to `today + days` cover every boundary whose civil time is before
/// `today + days + 1` at 00:00. A UTC offset never moves by more than a day
/// within a few weeks (Samoa's 2011 skip of a whole day is the extreme), so
/// every instant up to `t + trusted` has a local time before that, which is
/// why `trusted = days - 1`. Most schedules change within a day, so the cheap
/// first search usually answers; the widest reaches past a weekly window that
/// a DST gap or a skipped day erased for one week.
const PASSES: [(i64, i64); 3] = [(2, 1), (9, 8), (23, 22)];

/// Extra civil days enumerated before today: a backward offset jump can make
/// local time after `t` fall on the previous civil day(s).
const DAYS_BEFORE: i64 = 2;

/// The daily windows of a revocable zone, evaluated in the zone's own time
/// zone so that "08:00" means 08:00 on the clocks of the people who own the
/// nodes, across DST changes.
#[derive(Clone, Debug)]
pub struct ZoneSchedule {
    windows: Vec<DailyWindow>,
    time_zone: TimeZone,
    time_zone_name: String,
}

/// The eviction-relevant state of a zone at one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneState {
    /// Inside at least one window at the instant.
    pub open: bool,
    /// Open, but closing within the configured drain period, so pods should
    /// already be moved while their replacements can still be scheduled
    /// elsewhere calmly.
    pub draining: bool,
    /// When `open` flips next; `None` if it never does (e.g. a whole-day
    /// window on every day).
    pub next_change: Option<Timestamp>,
}

impl ZoneState {
    /// A draining zone is treated exactly like a closed one: the point of
    /// draining is to leave before the deadline, not at it.
    pub fn evicting(&self) -> bool {
        !self.open || self.draining
    }
}

/// The IANA time zone `name` (case aside) from the bundled tz database.
pub fn time_zone_named(name: &str) -> Result<TimeZone, WindowError> {
    TimeZone::get(name).map_err(|_| WindowError::UnknownTimeZone {
        name: name.to_owned(),
        likely: likely_time_zone(name),
    })
}

/// The tz database's name that `wanted` most likely misspells (`Europe/Berln`): within two edits,
/// case aside.
fn likely_time_zone(wanted: &str) -> Option<String> {
    let wanted = wanted.to_lowercase();
    jiff::tz::db()
        .available()
        .map(|name| {
            let name = name.as_str().to_owned();
            (strsim::levenshtein(&wanted, &name.to_lowercase()), name)
        })
        .filter(|(distance, _)| *distance <= 2)
        .min()
        .map(|(_, name)| name)
}

impl ZoneSchedule {
    /// Builds a schedule; `time_zone` is an IANA name such as
    /// `"Europe/Berlin"` or `"UTC"`, looked up in the tz database bundled into
    /// the binary so behaviour does not depend on the container image.
    pub fn new(windows: Vec<DailyWindow>, time_zone: &str) -> Result<ZoneSchedule, WindowError> {
        if windows.is_empty() {
            return Err(WindowError::NoWindows);
        }
        let tz = time_zone_named(time_zone)?;
        // Prefer the database's spelling: the lookup is case-insensitive and
        // reports should show one canonical name.
        let name = tz.iana_name().unwrap_or(time_zone).to_owned();
        Ok(ZoneSchedule {
            windows,
            time_zone: tz,
            time_zone_name: name,
        })
    }

    /// The IANA name of the zone's time zone.
    pub fn time_zone_name(&self) -> &str {
        &self.time_zone_name
    }

    /// The configured windows, in configuration order.
    pub fn windows(&self) -> &[DailyWindow] {
        &self.windows
    }

    /// The jiff time zone, for callers that want to render instants in the
    /// zone's local time.
    pub fn time_zone(&self) -> &TimeZone {
        &self.time_zone
    }

    /// Whether the zone is inside any window at `t`.
    ///
    /// Sub-second parts are ignored (the civil time is floored to the second)
    /// so that the inclusive end second is open for its whole duration.
    pub fn is_open(&self, t: Timestamp) -> bool {
        let local = self.time_zone.to_datetime(t);
        self.windows.iter().any(|window| window.contains(local))
    }

    /// The first whole-second instant strictly after `t` at which `is_open`
    /// differs from `is_open(t)`, or `None` if it never changes.
    ///
    /// Rather than reasoning about windows and DST analytically, we collect
    /// every instant at which the state *could* change and evaluate `is_open`
    /// at each. Because the local clock only jumps at time-zone transitions
    /// and otherwise advances with real time, the state can only change at
    /// (a) a window boundary's civil time under one of its valid offsets or
    /// (b) a transition. Evaluating rather than assuming keeps adjacent or
    /// overlapping windows from reporting fake changes, and makes a boundary
    /// that falls into a DST gap harmless: the real flip is found at the
    /// transition instead.
    ///
    /// "Never" is decided after searching about three weeks ahead, which is
    /// beyond any weekly pattern even when one occurrence was skipped.
    pub fn next_change(&self, t: Timestamp) -> Option<Timestamp> {
        let was_open = self.is_open(t);
        let today = self.time_zone.to_datetime(t).date();
        let mut candidates = Vec::new();
        for (days_after, trusted_days) in PASSES {
            let limit = t
                .checked_add(SignedDuration::from_hours(24 * trusted_days))
                .unwrap_or(Timestamp::MAX);
            candidates.clear();
            self.collect_candidates(today, days_after, t, limit, &mut candidates);
            candidates.sort_unstable();
            candidates.dedup();
            let change = candidates
                .iter()
                .copied()
                .find(|&candidate| self.is_open(candidate) != was_open);
            if change.is_some() {
                return change;
            }
            if limit == Timestamp::MAX {
                break;
            }
        }
        None
    }

    /// The whole-second instant at or before `t` from which the zone has been in the state it is in
    /// at `t` (the first second of that state, as `next_change` gives it), or `None` if it has been
    /// so for as far back as it searches (about three weeks) or always.
    pub fn previous_change(&self, t: Timestamp) -> Option<Timestamp> {
        let today = self.time_zone.to_datetime(t).date();
        let second = SignedDuration::from_secs(1);
        let mut candidates = Vec::new();
        for (days_before, trusted_days) in PASSES {
            let limit = t
                .checked_sub(SignedDuration::from_hours(24 * trusted_days))
                .unwrap_or(Timestamp::MIN);
            candidates.clear();
            self.collect_candidates_before(today, days_before, limit, t, &mut candidates);
            candidates.sort_unstable();
            candidates.dedup();
            let change = candidates.iter().rev().copied().find(|&candidate| {
                candidate
                    .checked_sub(second)
                    .is_ok_and(|before| self.is_open(before) != self.is_open(candidate))
            });
            if change.is_some() {
                return change;
            }
            if limit == Timestamp::MIN {
                break;
            }
        }
        None
    }

    /// The instant to show for a change at `change` (from `next_change`): the boundary as written for
    /// a close, the change itself for an opening.
    pub fn shown_change(&self, change: Timestamp) -> Timestamp {
        if self.is_open(change) {
            change
        } else {
            close_boundary(&self.time_zone, change)
        }
    }

    /// Evaluates the zone at `t` for eviction decisions: the zone is draining
    /// when it is open but its window ends no later than `t + drain_before`.
    pub fn state_at(&self, t: Timestamp, drain_before: Duration) -> ZoneState {
        let open = self.is_open(t);
        let next_change = self.next_change(t);
        let draining = open
            && next_change.is_some_and(|change| {
                // Compare durations instead of computing t + drain_before, so
                // an absurdly large drain period cannot overflow.
                Duration::try_from(change.duration_since(t))
                    .is_ok_and(|until_close| until_close <= drain_before)
            });
        ZoneState {
            open,
            draining,
            next_change,
        }
    }

    /// Pushes every possible change instant in `(t, limit]`: window boundaries
    /// of the occurrences starting on `today - DAYS_BEFORE ..= today +
    /// days_after`, under every offset valid for their civil time, plus all
    /// time-zone transitions.
    fn collect_candidates(
        &self,
        today: Date,
        days_after: i64,
        t: Timestamp,
        limit: Timestamp,
        out: &mut Vec<Timestamp>,
    ) {
        let mut push = |candidate: Timestamp| {
            if candidate > t && candidate <= limit {
                out.push(candidate);
            }
        };
        self.window_boundaries(today, -DAYS_BEFORE..=days_after, &mut push);
        for transition in self.time_zone.following(t) {
            let at = transition.timestamp();
            if at > limit {
                break;
            }
            push(at);
        }
    }

    /// Pushes every possible change instant in `(limit, t]`, as
    /// [`Self::collect_candidates`] does ahead: boundaries of the occurrences
    /// starting from `today - days_before` to a little after today, and the
    /// time-zone transitions.
    fn collect_candidates_before(
        &self,
        today: Date,
        days_before: i64,
        limit: Timestamp,
        t: Timestamp,
        out: &mut Vec<Timestamp>,
    ) {
        let mut push = |candidate: Timestamp| {
            if candidate > limit && candidate <= t {
                out.push(candidate);
            }
        };
        self.window_boundaries(today, -(days_before + DAYS_BEFORE)..=DAYS_BEFORE, &mut push);
        let after_t = t.checked_add(SignedDuration::from_secs(1)).unwrap_or(t);
        for transition in self.time_zone.preceding(after_t) {
            let at = transition.timestamp();
            if at <= limit {
                break;
            }
            push(at);
        }
    }

    /// Gives `push` the boundaries of the windows' occurrences starting on the days `days` from
    /// `today`, under every offset valid for their civil time. In a fold the civil time occurs twice
    /// and both are real boundaries; in a gap neither occurs, and evaluating both candidates is
    /// harmless.
    fn window_boundaries(
        &self,
        today: Date,
        days: std::ops::RangeInclusive<i64>,
        push: &mut impl FnMut(Timestamp),
    ) {
        for day_offset in days {
            let Some(day) = add_days(today, day_offset) else {
                continue;
            };
            let weekday = day.weekday().into();
            for window in self.windows.iter().filter(|w| w.starts_on(weekday)) {
                let (open, close) = window.occurrence_bounds();
                for second in [open, close] {
                    let Some(civil) = civil_at(day, second) else {
                        continue;
                    };
                    let ambiguous = self.time_zone.to_ambiguous_timestamp(civil);
                    if let Ok(earlier) = ambiguous.earlier() {
                        push(earlier);
                    }
                    if let Ok(later) = ambiguous.later() {
                        push(later);
                    }
                }
            }
        }
    }
}

/// The instant a close reads as in the zone's windows. A window `19:00-07:00` includes the second
/// 07:00:00 and is closed from 07:00:01 (what `next_change` returns), but the operator wrote `07:00`:
/// messages show that. When the last open second is not on a minute boundary, the close came from a
/// time-zone transition (a window running into the skipped hour of a spring change), and the
/// transition is the boundary.
pub fn close_boundary(time_zone: &TimeZone, closed_at: Timestamp) -> Timestamp {
    match closed_at.checked_sub(SignedDuration::from_secs(1)) {
        Ok(last_open) if time_zone.to_datetime(last_open).second() == 0 => last_open,
        _ => closed_at,
    }
}

/// `day + days`, or `None` at the edges of the supported date range.
fn add_days(day: Date, days: i64) -> Option<Date> {
    let span = Span::new().try_days(days).ok()?;
    day.checked_add(span).ok()
}

/// The civil date-time `second` seconds after midnight of `day`; `second` may
/// exceed one day (a close point of a midnight-crossing window).
fn civil_at(day: Date, second: u32) -> Option<DateTime> {
    let whole_days = i64::from(second / super::window::SECONDS_PER_DAY);
    let rest = second % super::window::SECONDS_PER_DAY;
    let date = add_days(day, whole_days)?;
    // `rest` < 86400, so these casts cannot truncate.
    let time = Time::new(
        (rest / 3600) as i8,
        (rest % 3600 / 60) as i8,
        (rest % 60) as i8,
        0,
    )
    .ok()?;
    Some(date.to_datetime(time))
}
