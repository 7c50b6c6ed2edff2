//! How the report and the timeline show instants to people: in one time zone per output, stated once
//! in its header, as the operator wrote the boundary, and relative to the planning instant.

use jiff::{SignedDuration, Timestamp, tz::TimeZone};

use crate::time_windows::ZoneSchedule;

pub(crate) use crate::time_windows::close_boundary;

/// The instant to show for a change of `schedule` at `change`: the boundary as written for a close,
/// the change itself for an opening.
pub(crate) fn shown_change(schedule: &ZoneSchedule, change: Timestamp) -> Timestamp {
    schedule.shown_change(change)
}

/// `Mon 06:40 CET`: weekday, local time and the zone's abbreviation (the RFC 3339 instant should the
/// format ever fail: time zones come from cluster data, and nothing on cluster data may panic).
pub(crate) fn local(time_zone: &TimeZone, at: Timestamp) -> String {
    formatted(time_zone, at, "%a %H:%M %Z")
}

/// `at` in `time_zone` by a `strftime` format, falling back to the RFC 3339 instant.
pub(crate) fn formatted(time_zone: &TimeZone, at: Timestamp, format: &str) -> String {
    jiff::fmt::strtime::format(format, &at.to_zoned(time_zone.clone()))
        .unwrap_or_else(|_| at.to_string())
}

/// One output's time zone: every instant a person reads in it (times of day, the instants inside
/// reasons and details) is shown in it, so that times compare at a glance and sort as they read.
#[derive(Clone, Debug)]
pub struct Clock {
    tz: TimeZone,
    now: Timestamp,
    /// `tz`'s abbreviation at `now`, said once in the header; a time across a DST change says its
    /// own.
    abbreviation: String,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new(TimeZone::UTC, Timestamp::UNIX_EPOCH)
    }
}

/// Instants this far from now show their date; nearer ones their weekday, which a week of output
/// never repeats.
const WEEKDAY_WITHIN: SignedDuration = SignedDuration::from_hours(6 * 24);

impl Clock {
    pub fn new(tz: TimeZone, now: Timestamp) -> Clock {
        let abbreviation = formatted(&tz, now, "%Z");
        Clock {
            tz,
            now,
            abbreviation,
        }
    }

    /// The time zone the zones share, else UTC: an operator whose zones all follow one clock reads
    /// that clock; zones on several clocks are compared in UTC. `chosen` (`--time-zone`) wins.
    pub fn for_zones<'a>(
        zones: impl IntoIterator<Item = &'a TimeZone>,
        chosen: Option<&TimeZone>,
        now: Timestamp,
    ) -> Clock {
        if let Some(tz) = chosen {
            return Clock::new(tz.clone(), now);
        }
        let mut names = zones
            .into_iter()
            .map(|tz| (tz.iana_name().map(str::to_owned), tz));
        let shared = match names.next() {
            Some((Some(first), tz)) if names.all(|(name, _)| name.as_deref() == Some(&first)) => {
                tz.clone()
            }
            _ => TimeZone::UTC,
        };
        Clock::new(shared, now)
    }

    pub fn time_zone(&self) -> &TimeZone {
        &self.tz
    }

    /// The instant the output is about, which relative times count from.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// UTC by any of its names (`Etc/UTC` is what many machines call their `local`).
    fn is_utc(&self) -> bool {
        matches!(
            self.tz.iana_name(),
            Some(
                "UTC"
                    | "Etc/UTC"
                    | "Etc/UCT"
                    | "UCT"
                    | "Etc/Universal"
                    | "Universal"
                    | "Etc/Zulu"
                    | "Zulu"
            )
        )
    }

    /// `times in Europe/Berlin (CET)`, `times in UTC`: the header's statement.
    pub fn stated(&self) -> String {
        if self.is_utc() {
            return "times in UTC".to_owned();
        }
        match self.tz.iana_name() {
            Some(name) if name == self.abbreviation => format!("times in {name}"),
            Some(name) => format!("times in {name} ({})", self.abbreviation),
            None => format!("times in {}", self.abbreviation),
        }
    }

    /// `2026-11-23T10:30:00+01:00` (`...Z` in UTC), to the second: the instant planned for, as
    /// `--now` takes it.
    pub fn instant(&self, at: Timestamp) -> String {
        let at = at.round(jiff::Unit::Second).unwrap_or(at);
        if self.is_utc() {
            return at.to_string();
        }
        formatted(&self.tz, at, "%Y-%m-%dT%H:%M:%S%:z")
    }

    /// `Mon 10:35`: to the minute, as windows are written; the date beyond a week (`2026-11-02
    /// 10:35`), and the abbreviation when it is not the header's (`Sun 03:00 CEST`).
    pub fn at(&self, at: Timestamp) -> String {
        self.shown(at, false)
    }

    /// As [`Clock::at`], with the seconds when there are any (`Mon 09:42:40`): for instants that
    /// are not on a schedule (a cooldown's end).
    pub fn at_precisely(&self, at: Timestamp) -> String {
        self.shown(at, true)
    }

    fn shown(&self, at: Timestamp, seconds: bool) -> String {
        let day = if at.duration_since(self.now).abs() > WEEKDAY_WITHIN {
            "%Y-%m-%d"
        } else {
            "%a"
        };
        let seconds = if seconds && at.as_second().rem_euclid(60) != 0 {
            ":%S"
        } else {
            ""
        };
        let mut text = formatted(&self.tz, at, &format!("{day} %H:%M{seconds}"));
        let abbreviation = formatted(&self.tz, at, "%Z");
        if abbreviation != self.abbreviation {
            text.push(' ');
            text.push_str(&abbreviation);
        }
        text
    }

    /// `Mon 10:35 (in 5m)`.
    pub fn when(&self, at: Timestamp) -> String {
        format!("{} ({})", self.at(at), relative(self.now, at))
    }

    /// `text` with every RFC 3339 instant in it (`opens 2026-11-23T20:00:00Z`, what strategies and
    /// gates write for machines and Events) shown as [`Clock::at_precisely`] shows it.
    pub fn text(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some((start, end, at)) = next_instant(rest) {
            out.push_str(&rest[..start]);
            out.push_str(&self.at_precisely(at));
            rest = &rest[end..];
        }
        out.push_str(rest);
        out
    }
}

/// The first RFC 3339 instant in `text` (`2026-11-23T09:42:40Z`, `2026-11-23T09:32:30.1Z`,
/// `2026-11-23T10:30:00+01:00`): where it starts and ends, and the instant.
fn next_instant(text: &str) -> Option<(usize, usize, Timestamp)> {
    let bytes = text.as_bytes();
    let digits = |at: usize, n: usize| {
        bytes
            .get(at..at + n)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    let is = |at: usize, c: u8| bytes.get(at) == Some(&c);
    let mut from = 0;
    while let Some(t) = text[from..].find('T').map(|i| from + i) {
        from = t + 1;
        let Some(start) = t.checked_sub(10) else {
            continue;
        };
        let date = digits(start, 4) && is(start + 4, b'-') && digits(start + 5, 2);
        let date = date && is(start + 7, b'-') && digits(start + 8, 2);
        let time = digits(t + 1, 2) && is(t + 3, b':') && digits(t + 4, 2);
        let time = time && is(t + 6, b':') && digits(t + 7, 2);
        if !date || !time {
            continue;
        }
        let mut end = t + 9;
        if is(end, b'.') && digits(end + 1, 1) {
            end += 1;
            while digits(end, 1) {
                end += 1;
            }
        }
        if is(end, b'Z') {
            end += 1;
        } else if (is(end, b'+') || is(end, b'-')) && digits(end + 1, 2) && is(end + 3, b':') {
            end += 6;
        } else {
            continue;
        }
        if let Ok(at) = text[start..end].parse::<Timestamp>() {
            return Some((start, end, at));
        }
    }
    None
}

/// `in 8h30m`, `in 45s`, `now`, `5m ago`: minutes and hours, seconds only under a minute.
pub(crate) fn relative(now: Timestamp, at: Timestamp) -> String {
    let seconds = at.duration_since(now).as_secs();
    if seconds == 0 {
        return "now".to_owned();
    }
    let text = duration(seconds.unsigned_abs());
    if seconds > 0 {
        format!("in {text}")
    } else {
        format!("{text} ago")
    }
}

/// `8h30m`, `2h`, `5m`, `45s`: hours and minutes, seconds only under a minute.
pub(crate) fn duration(seconds: u64) -> String {
    if seconds < 60 {
        return format!("{seconds}s");
    }
    match (seconds / 3600, seconds % 3600 / 60) {
        (0, m) => format!("{m}m"),
        (h, 0) => format!("{h}h"),
        (h, m) => format!("{h}h{m}m"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time_windows::DailyWindow;

    fn ts(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn schedule(window: &str, tz: &str) -> ZoneSchedule {
        ZoneSchedule::new(vec![DailyWindow::parse(window, &[]).unwrap()], tz).unwrap()
    }

    #[test]
    fn a_close_shows_the_end_the_operator_wrote_not_the_first_closed_second() {
        let berlin = schedule("19:00-07:00", "Europe/Berlin");
        let closes = berlin.next_change(ts("2026-11-23T05:30:00Z")).unwrap();
        assert_eq!(closes, ts("2026-11-23T06:00:01Z"));
        let shown = shown_change(&berlin, closes);
        assert_eq!(shown, ts("2026-11-23T06:00:00Z"));
        assert_eq!(local(berlin.time_zone(), shown), "Mon 07:00 CET");
        // An opening is shown as it is.
        let opens = berlin.next_change(closes).unwrap();
        assert_eq!(shown_change(&berlin, opens), opens);
        assert_eq!(local(berlin.time_zone(), opens), "Mon 19:00 CET");
    }

    #[test]
    fn a_close_at_a_spring_change_shows_the_transition() {
        // 01:00-02:30 Berlin on 2026-03-29: the clock jumps from 01:59:59 CET to 03:00 CEST.
        let s = schedule("01:00-02:30", "Europe/Berlin");
        let closes = s.next_change(ts("2026-03-29T00:30:00Z")).unwrap();
        assert_eq!(closes, ts("2026-03-29T01:00:00Z"));
        assert_eq!(shown_change(&s, closes), closes);
        assert_eq!(local(s.time_zone(), closes), "Sun 03:00 CEST");
    }

    #[test]
    fn one_output_shows_every_instant_in_one_time_zone_stated_once() {
        let now = ts("2026-11-23T09:30:00Z");
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        // Zones on two clocks are compared in UTC; on one, in theirs; `--time-zone` wins.
        let mixed = Clock::for_zones([&TimeZone::UTC, &berlin], None, now);
        assert_eq!(mixed.stated(), "times in UTC");
        assert_eq!(mixed.instant(now), "2026-11-23T09:30:00Z");
        let shared = Clock::for_zones([&berlin, &berlin], None, now);
        assert_eq!(shared.stated(), "times in Europe/Berlin (CET)");
        assert_eq!(shared.instant(now), "2026-11-23T10:30:00+01:00");
        let chosen = Clock::for_zones([&berlin], Some(&TimeZone::UTC), now);
        assert_eq!(chosen.stated(), "times in UTC");
        let etc = Clock::new(TimeZone::get("Etc/UTC").unwrap(), now);
        assert_eq!(
            (etc.stated(), etc.instant(now)),
            (chosen.stated(), chosen.instant(now))
        );
        assert_eq!(Clock::for_zones([], None, now).stated(), "times in UTC");
        // Times of day without their zone, which the header said; seconds only where asked.
        assert_eq!(shared.at(ts("2026-11-23T18:00:00Z")), "Mon 19:00");
        assert_eq!(shared.at(ts("2026-11-23T09:42:40Z")), "Mon 10:42");
        assert_eq!(
            shared.at_precisely(ts("2026-11-23T09:42:40.5Z")),
            "Mon 10:42:40"
        );
        assert_eq!(shared.when(ts("2026-11-23T09:35:00Z")), "Mon 10:35 (in 5m)");
        // Past a week the date; across a DST change the other abbreviation.
        assert_eq!(shared.at(ts("2026-12-05T09:00:00Z")), "2026-12-05 10:00");
        let spring = Clock::new(berlin, ts("2026-03-28T12:00:00Z"));
        assert_eq!(spring.at(ts("2026-03-29T12:00:00Z")), "Sun 14:00 CEST");
        // The instants strategies and gates write for machines, read in the output's zone.
        assert_eq!(
            shared.text(
                "zone z closed; opens 2026-11-23T18:00:00Z; expected empty 2026-11-23T09:32:30.1Z, \
                 until 2026-11-23T10:42:40+01:00; not an instant: 2026-11-23 or T12:00"
            ),
            "zone z closed; opens Mon 19:00; expected empty Mon 10:32:30, until Mon 10:42:40; \
             not an instant: 2026-11-23 or T12:00"
        );
    }

    #[test]
    fn relative_times_read_like_durations() {
        let now = ts("2026-11-23T09:30:00Z");
        assert_eq!(relative(now, now), "now");
        assert_eq!(relative(now, ts("2026-11-23T18:00:00Z")), "in 8h30m");
        assert_eq!(relative(now, ts("2026-11-23T11:30:00Z")), "in 2h");
        assert_eq!(relative(now, ts("2026-11-23T09:35:00Z")), "in 5m");
        assert_eq!(relative(now, ts("2026-11-23T09:30:45Z")), "in 45s");
        assert_eq!(relative(now, ts("2026-11-23T09:25:00Z")), "5m ago");
        assert_eq!(relative(now, ts("2026-11-24T10:31:30Z")), "in 25h1m");
    }
}
