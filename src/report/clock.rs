//! How the report and the timeline show instants to people: in the zone's own time zone, as the
//! operator wrote the boundary, and relative to the planning instant.

use jiff::{Timestamp, tz::TimeZone};

use crate::windows::ZoneSchedule;

pub(crate) use crate::windows::close_boundary;

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
    use crate::windows::DailyWindow;

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
