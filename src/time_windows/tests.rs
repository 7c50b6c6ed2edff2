//! Schedule-level tests: boundaries, midnight, weekdays, DST, drain, and
//! property tests that cross-check `next_change` against `is_open`.

use std::time::Duration;

use jiff::{Timestamp, Zoned};
use proptest::prelude::*;

use super::*;
use Weekday::*;

fn window(text: &str, days: &[Weekday]) -> DailyWindow {
    DailyWindow::parse(text, days).unwrap()
}

fn schedule(windows: &[(&str, &[Weekday])], tz: &str) -> ZoneSchedule {
    ZoneSchedule::new(
        windows
            .iter()
            .map(|(text, days)| window(text, days))
            .collect(),
        tz,
    )
    .unwrap()
}

/// `"2026-03-04T21:00:00Z"`.
fn utc(text: &str) -> Timestamp {
    text.parse().unwrap()
}

/// A local time with an explicit zone (and offset where ambiguous), e.g.
/// `"2026-11-01T01:30-05:00[America/New_York]"`.
fn zoned(text: &str) -> Timestamp {
    text.parse::<Zoned>().unwrap().timestamp()
}

// 2026-03-02 is a Monday; 2026-03-06 a Friday.

#[test]
fn inclusive_boundaries() {
    let s = schedule(&[("08:00-21:00", &[])], "UTC");
    assert!(s.is_open(utc("2026-03-04T21:00:00Z")));
    assert!(!s.is_open(utc("2026-03-04T21:00:01Z")));
    assert!(s.is_open(utc("2026-03-04T08:00:00Z")));
    assert!(!s.is_open(utc("2026-03-04T07:59:59Z")));
    assert!(s.is_open(utc("2026-03-04T12:00:00Z")));
    assert!(!s.is_open(utc("2026-03-04T23:00:00Z")));
}

#[test]
fn sub_second_counts_as_its_whole_second() {
    let s = schedule(&[("08:00-21:00", &[])], "UTC");
    let t = utc("2026-03-04T21:00:00.5Z");
    assert!(s.is_open(t));
    assert!(s.is_open(utc("2026-03-04T21:00:00.999999999Z")));
    assert!(!s.is_open(utc("2026-03-04T07:59:59.999999999Z")));
    assert_eq!(s.next_change(t), Some(utc("2026-03-04T21:00:01Z")));
    assert_eq!(
        s.next_change(utc("2026-03-04T07:59:59.5Z")),
        Some(utc("2026-03-04T08:00:00Z"))
    );
}

#[test]
fn crossing_midnight_every_day() {
    let s = schedule(&[("22:00-06:00", &[])], "UTC");
    assert!(s.is_open(utc("2026-03-04T03:00:00Z")));
    assert!(s.is_open(utc("2026-03-04T22:00:00Z")));
    assert!(s.is_open(utc("2026-03-04T00:00:00Z")));
    assert!(s.is_open(utc("2026-03-04T23:59:59Z")));
    assert!(s.is_open(utc("2026-03-04T06:00:00Z")));
    assert!(!s.is_open(utc("2026-03-04T06:00:01Z")));
    assert!(!s.is_open(utc("2026-03-04T21:59:59Z")));
    assert!(!s.is_open(utc("2026-03-04T12:00:00Z")));
}

#[test]
fn crossing_midnight_belongs_to_start_day() {
    let s = schedule(&[("22:00-06:00", &[Fri])], "UTC");
    assert!(s.is_open(utc("2026-03-06T22:00:00Z")), "Fri 22:00");
    assert!(s.is_open(utc("2026-03-06T23:59:59Z")), "Fri 23:59:59");
    assert!(s.is_open(utc("2026-03-07T00:00:00Z")), "Sat 00:00");
    assert!(s.is_open(utc("2026-03-07T03:00:00Z")), "Sat 03:00");
    assert!(s.is_open(utc("2026-03-07T06:00:00Z")), "Sat 06:00");
    assert!(!s.is_open(utc("2026-03-07T06:00:01Z")), "Sat 06:00:01");
    assert!(!s.is_open(utc("2026-03-06T03:00:00Z")), "Fri 03:00");
    assert!(!s.is_open(utc("2026-03-07T22:30:00Z")), "Sat 22:30");
    assert!(!s.is_open(utc("2026-03-06T21:59:59Z")), "Fri 21:59:59");
}

#[test]
fn equal_times_mean_whole_day() {
    let s = schedule(&[("07:00-07:00", &[])], "UTC");
    for t in [
        "2026-03-04T00:00:00Z",
        "2026-03-04T06:59:59Z",
        "2026-03-04T07:00:00Z",
        "2026-03-04T07:00:01Z",
        "2026-03-04T23:59:59Z",
    ] {
        assert!(s.is_open(utc(t)), "{t}");
    }
    assert_eq!(s.next_change(utc("2026-03-04T12:00:00Z")), None);
}

#[test]
fn equal_times_with_days() {
    let s = schedule(&[("00:00-00:00", &[Sat])], "UTC");
    assert!(!s.is_open(utc("2026-03-06T23:59:59Z")), "Fri 23:59:59");
    assert!(s.is_open(utc("2026-03-07T00:00:00Z")), "Sat 00:00:00");
    assert!(s.is_open(utc("2026-03-07T23:59:59Z")), "Sat 23:59:59");
    assert!(!s.is_open(utc("2026-03-08T00:00:00Z")), "Sun 00:00:00");
    assert_eq!(
        s.next_change(utc("2026-03-06T12:00:00Z")),
        Some(utc("2026-03-07T00:00:00Z"))
    );
    assert_eq!(
        s.next_change(utc("2026-03-07T12:00:00Z")),
        Some(utc("2026-03-08T00:00:00Z"))
    );
    // From Sunday the next opening is six days later.
    assert_eq!(
        s.next_change(utc("2026-03-08T00:00:00Z")),
        Some(utc("2026-03-14T00:00:00Z"))
    );
}

#[test]
fn weekdays_limit_windows() {
    let s = schedule(&[("08:00-17:00", &[Mon, Tue, Wed, Thu, Fri])], "UTC");
    assert!(s.is_open(utc("2026-03-04T10:00:00Z")), "Wed");
    assert!(s.is_open(utc("2026-03-06T17:00:00Z")), "Fri 17:00");
    assert!(!s.is_open(utc("2026-03-07T10:00:00Z")), "Sat");
    assert!(!s.is_open(utc("2026-03-08T10:00:00Z")), "Sun");
    assert!(s.is_open(utc("2026-03-09T08:00:00Z")), "Mon 08:00");
}

#[test]
fn adjacent_and_overlapping_windows_have_no_fake_seam() {
    let adjacent = schedule(&[("08:00-12:00", &[]), ("12:00-18:00", &[])], "UTC");
    assert!(adjacent.is_open(utc("2026-03-04T12:00:00Z")));
    assert_eq!(
        adjacent.next_change(utc("2026-03-04T09:00:00Z")),
        Some(utc("2026-03-04T18:00:01Z"))
    );

    // The first window's close point (12:00:01) is inside the second window.
    let overlapping = schedule(&[("08:00-14:00", &[]), ("12:00-18:00", &[])], "UTC");
    assert_eq!(
        overlapping.next_change(utc("2026-03-04T09:00:00Z")),
        Some(utc("2026-03-04T18:00:01Z"))
    );

    // A window fully inside another is invisible.
    let nested = schedule(&[("08:00-18:00", &[]), ("10:00-11:00", &[])], "UTC");
    assert_eq!(
        nested.next_change(utc("2026-03-04T09:00:00Z")),
        Some(utc("2026-03-04T18:00:01Z"))
    );

    // Night + day windows touching at both ends are open around the clock.
    let always = schedule(&[("22:00-06:00", &[]), ("06:00-22:00", &[])], "UTC");
    assert!(always.is_open(utc("2026-03-04T06:00:00Z")));
    assert_eq!(always.next_change(utc("2026-03-04T09:00:00Z")), None);

    // A weekend-long chain: Fri night, whole Sat/Sun, Sun night into Monday.
    let weekend = schedule(
        &[
            ("18:00-00:00", &[Fri]),
            ("00:00-00:00", &[Sat, Sun]),
            ("23:00-07:00", &[Sun]),
        ],
        "UTC",
    );
    assert_eq!(
        weekend.next_change(utc("2026-03-06T19:00:00Z")),
        Some(utc("2026-03-09T07:00:01Z"))
    );
}

#[test]
fn touching_windows_a_minute_apart_do_close_in_between() {
    // 11:59 is inclusive to 11:59:00 only, so 11:59:01..11:59:59 is closed.
    let s = schedule(&[("08:00-11:59", &[]), ("12:00-18:00", &[])], "UTC");
    assert_eq!(
        s.next_change(utc("2026-03-04T09:00:00Z")),
        Some(utc("2026-03-04T11:59:01Z"))
    );
    assert_eq!(
        s.next_change(utc("2026-03-04T11:59:01Z")),
        Some(utc("2026-03-04T12:00:00Z"))
    );
    // Likewise 00:00-23:59 is closed for the last 59 seconds of each day.
    let s = schedule(&[("00:00-23:59", &[])], "UTC");
    assert_eq!(
        s.next_change(utc("2026-03-04T12:00:00Z")),
        Some(utc("2026-03-04T23:59:01Z"))
    );
    assert_eq!(
        s.next_change(utc("2026-03-04T23:59:30Z")),
        Some(utc("2026-03-05T00:00:00Z"))
    );
}

#[test]
fn next_change_basic_and_across_midnight() {
    let s = schedule(&[("22:00-06:00", &[])], "UTC");
    assert_eq!(
        s.next_change(utc("2026-03-04T23:00:00Z")),
        Some(utc("2026-03-05T06:00:01Z"))
    );
    assert_eq!(
        s.next_change(utc("2026-03-04T12:00:00Z")),
        Some(utc("2026-03-04T22:00:00Z"))
    );
    // Strictly after t: at the opening instant itself the next change is the close.
    assert_eq!(
        s.next_change(utc("2026-03-04T22:00:00Z")),
        Some(utc("2026-03-05T06:00:01Z"))
    );
    assert_eq!(
        s.next_change(utc("2026-03-04T21:59:59Z")),
        Some(utc("2026-03-04T22:00:00Z"))
    );
}

#[test]
fn next_change_across_weekend() {
    let weekdays = schedule(&[("08:00-18:00", &[Mon, Tue, Wed, Thu, Fri])], "UTC");
    assert_eq!(
        weekdays.next_change(utc("2026-03-06T19:00:00Z")),
        Some(utc("2026-03-09T08:00:00Z"))
    );
    assert_eq!(
        weekdays.next_change(utc("2026-03-06T12:00:00Z")),
        Some(utc("2026-03-06T18:00:01Z"))
    );

    let friday_night = schedule(&[("22:00-06:00", &[Fri])], "UTC");
    assert_eq!(
        friday_night.next_change(utc("2026-03-06T12:00:00Z")),
        Some(utc("2026-03-06T22:00:00Z"))
    );
    assert_eq!(
        friday_night.next_change(utc("2026-03-07T03:00:00Z")),
        Some(utc("2026-03-07T06:00:01Z"))
    );
    assert_eq!(
        friday_night.next_change(utc("2026-03-07T07:00:00Z")),
        Some(utc("2026-03-13T22:00:00Z"))
    );
}

#[test]
fn next_change_none_when_always_open() {
    let s = schedule(&[("00:00-00:00", &[])], "America/New_York");
    for t in [
        "2026-03-08T07:00:00Z",
        "2026-11-01T06:00:00Z",
        "2026-06-01T00:00:00Z",
    ] {
        assert!(s.is_open(utc(t)));
        assert_eq!(s.next_change(utc(t)), None, "{t}");
    }
    let all_days = schedule(&[("05:00-05:00", &Weekday::ALL)], "Europe/Berlin");
    assert_eq!(all_days.next_change(utc("2026-03-29T01:00:00Z")), None);
}

#[test]
fn new_york_spring_forward() {
    // 2026-03-08 02:00 EST jumps to 03:00 EDT at 07:00Z.
    let s = schedule(&[("02:30-05:00", &[])], "America/New_York");
    assert!(!s.is_open(zoned("2026-03-08T01:59:59[America/New_York]")));
    assert!(!s.is_open(utc("2026-03-08T06:59:59Z")));
    assert!(s.is_open(zoned("2026-03-08T03:00:00[America/New_York]")));
    assert!(s.is_open(utc("2026-03-08T07:00:00Z")));
    // The 02:30 boundary does not exist; the flip happens at the gap's end.
    assert_eq!(
        s.next_change(zoned("2026-03-08T01:00:00[America/New_York]")),
        Some(zoned("2026-03-08T03:00:00-04:00[America/New_York]"))
    );
    assert_eq!(
        s.next_change(utc("2026-03-08T07:00:00Z")),
        Some(zoned("2026-03-08T05:00:01-04:00[America/New_York]"))
    );
}

#[test]
fn new_york_window_inside_the_gap_never_opens_that_day() {
    let s = schedule(&[("02:00-02:30", &[])], "America/New_York");
    // Every second the local day has, sampled each 15 s.
    let mut t = zoned("2026-03-08T00:00:00[America/New_York]");
    let end = zoned("2026-03-09T00:00:00[America/New_York]");
    while t < end {
        assert!(!s.is_open(t), "{t}");
        t += jiff::SignedDuration::from_secs(15);
    }
    assert_eq!(
        s.next_change(zoned("2026-03-08T00:00:00[America/New_York]")),
        Some(zoned("2026-03-09T02:00:00[America/New_York]"))
    );
    // The day before behaves normally.
    assert_eq!(
        s.next_change(zoned("2026-03-07T02:10:00[America/New_York]")),
        Some(zoned("2026-03-07T02:30:01[America/New_York]"))
    );
}

#[test]
fn new_york_fall_back_opens_in_both_repetitions() {
    // 2026-11-01 02:00 EDT falls back to 01:00 EST at 06:00Z.
    let s = schedule(&[("01:30-01:45", &[])], "America/New_York");
    let first = "-04:00[America/New_York]";
    let second = "-05:00[America/New_York]";
    let at = |time: &str, offset: &str| zoned(&format!("2026-11-01T{time}{offset}"));

    assert!(s.is_open(at("01:30:00", first)));
    assert!(s.is_open(at("01:45:00", first)));
    assert!(!s.is_open(at("01:45:01", first)));
    assert!(!s.is_open(at("01:00:00", second)));
    assert!(s.is_open(at("01:30:00", second)));
    assert!(s.is_open(at("01:45:00", second)));
    assert!(!s.is_open(at("01:45:01", second)));

    assert_eq!(
        s.next_change(utc("2026-11-01T05:00:00Z")),
        Some(at("01:30:00", first))
    );
    assert_eq!(
        s.next_change(at("01:40:00", first)),
        Some(at("01:45:01", first))
    );
    assert_eq!(
        s.next_change(at("01:50:00", first)),
        Some(at("01:30:00", second))
    );
    assert_eq!(
        s.next_change(at("01:35:00", second)),
        Some(at("01:45:01", second))
    );
    assert_eq!(
        s.next_change(at("01:50:00", second)),
        Some(zoned("2026-11-02T01:30:00[America/New_York]"))
    );
    assert_eq!(utc("2026-11-01T06:30:00Z"), at("01:30:00", second));
}

#[test]
fn berlin_fall_back_reopens_at_the_transition() {
    // 2026-10-25 03:00 CEST falls back to 02:00 CET at 01:00Z; a window
    // ending 02:30 closes in the first 02:30 and reopens for the second.
    let s = schedule(&[("22:00-02:30", &[])], "Europe/Berlin");
    assert!(s.is_open(utc("2026-10-24T20:00:00Z")));
    assert_eq!(
        s.next_change(utc("2026-10-24T21:00:00Z")),
        Some(utc("2026-10-25T00:30:01Z"))
    );
    assert_eq!(
        s.next_change(utc("2026-10-25T00:30:01Z")),
        Some(utc("2026-10-25T01:00:00Z"))
    );
    assert_eq!(
        s.next_change(utc("2026-10-25T01:00:00Z")),
        Some(utc("2026-10-25T01:30:01Z"))
    );
    assert_eq!(
        s.next_change(utc("2026-10-25T01:30:01Z")),
        Some(utc("2026-10-25T21:00:00Z"))
    );
}

/// docs/controller.md, "Windows on DST days": the repeated hour closes and reopens a window in it.
#[test]
fn dst_doc_berlin_repeated_hour_closes_and_reopens_the_window() {
    // 2026-10-25: 03:00 CEST falls back to 02:00 CET at 01:00Z, so 02:00-02:59 happens twice.
    let s = schedule(&[("01:00-02:30", &[])], "Europe/Berlin");
    let changes: Vec<Timestamp> =
        std::iter::successors(Some(utc("2026-10-24T22:00:00Z")), |t| s.next_change(*t))
            .skip(1)
            .take(4)
            .collect();
    assert_eq!(
        changes,
        [
            zoned("2026-10-25T01:00:00+02:00[Europe/Berlin]"), // opens 01:00 CEST
            zoned("2026-10-25T02:30:01+02:00[Europe/Berlin]"), // closes after the first 02:30
            zoned("2026-10-25T02:00:00+01:00[Europe/Berlin]"), // reopens when 02:00 comes again
            zoned("2026-10-25T02:30:01+01:00[Europe/Berlin]"), // closes after the second 02:30
        ]
    );
    assert!(!s.is_open(utc("2026-10-25T00:45:00Z")), "closed 02:45 CEST");
    assert!(s.is_open(utc("2026-10-25T01:15:00Z")), "open 02:15 CET");
}

/// docs/controller.md: on the spring change the local clock jumps from 02:00 EST to 03:00 EDT, and
/// both ends are inclusive, so `02:00-03:00` is open for the one second 03:00:00 EDT.
#[test]
fn dst_doc_new_york_spring_change_opens_a_two_to_three_window_for_one_second() {
    let s = schedule(&[("02:00-03:00", &[])], "America/New_York");
    let jump = utc("2026-03-08T07:00:00Z");
    assert_eq!(jump, zoned("2026-03-08T03:00:00-04:00[America/New_York]"));
    assert_eq!(s.next_change(utc("2026-03-08T06:00:00Z")), Some(jump));
    assert!(!s.is_open(jump - jiff::SignedDuration::from_secs(1)));
    assert!(s.is_open(jump));
    assert_eq!(
        s.next_change(jump),
        Some(jump + jiff::SignedDuration::from_secs(1))
    );
    // The next day it is open for its full hour again.
    let next_day = zoned("2026-03-09T02:00:00[America/New_York]");
    assert_eq!(s.next_change(jump), Some(utc("2026-03-08T07:00:01Z")));
    assert_eq!(s.next_change(utc("2026-03-08T07:00:01Z")), Some(next_day));
    assert_eq!(
        s.next_change(next_day),
        Some(zoned("2026-03-09T03:00:01[America/New_York]"))
    );
}

/// docs/controller.md: a window that lies wholly inside the skipped hour does not open that day (and no
/// other instant stands in for it).
#[test]
fn dst_doc_a_window_inside_the_skipped_hour_skips_that_day() {
    let s = schedule(&[("02:15-02:45", &[])], "Europe/Berlin");
    // 2026-03-29: 02:00 CET jumps to 03:00 CEST at 01:00Z.
    let before = zoned("2026-03-29T00:00:00[Europe/Berlin]");
    assert_eq!(
        s.next_change(before),
        Some(zoned("2026-03-30T02:15:00[Europe/Berlin]"))
    );
    assert!(!s.is_open(utc("2026-03-29T01:00:00Z")), "03:00 CEST");
    // The day before, it opens as usual.
    assert_eq!(
        s.next_change(zoned("2026-03-28T00:00:00[Europe/Berlin]")),
        Some(zoned("2026-03-28T02:15:00[Europe/Berlin]"))
    );
}

#[test]
fn berlin_spring_forward_window_opens_on_local_clock() {
    // 2026-03-29 02:00 CET jumps to 03:00 CEST; 08:00 local is 06:00Z.
    let s = schedule(&[("08:00-21:00", &[Sun])], "Europe/Berlin");
    assert_eq!(
        s.next_change(utc("2026-03-28T21:00:00Z")),
        Some(utc("2026-03-29T06:00:00Z"))
    );
    assert!(!s.is_open(utc("2026-03-29T05:59:59Z")));
    assert!(s.is_open(utc("2026-03-29T06:00:00Z")));
    assert_eq!(
        s.next_change(utc("2026-03-29T06:00:00Z")),
        Some(utc("2026-03-29T19:00:01Z"))
    );
}

#[test]
fn drain_marks_closing_zone_as_evicting() {
    // The last open second is 20:50:00, so the zone closes at 20:50:01.
    let s = schedule(&[("08:00-20:50", &[])], "UTC");
    let t = utc("2026-03-04T20:40:01Z"); // closes at 20:50:01, i.e. in exactly 10 minutes
    let fifteen = Duration::from_secs(15 * 60);
    let five = Duration::from_secs(5 * 60);

    let state = s.state_at(t, fifteen);
    assert_eq!(
        state,
        ZoneState {
            open: true,
            draining: true,
            next_change: Some(utc("2026-03-04T20:50:01Z")),
        }
    );
    assert!(state.evicting());

    let state = s.state_at(t, five);
    assert!(state.open && !state.draining && !state.evicting());

    // Exactly at the drain horizon counts as draining.
    assert!(s.state_at(t, Duration::from_secs(600)).draining);
    assert!(!s.state_at(t, Duration::from_secs(599)).draining);
    // No drain period: open zones are never draining.
    assert!(!s.state_at(t, Duration::ZERO).draining);

    let closed = s.state_at(utc("2026-03-04T22:00:00Z"), fifteen);
    assert!(!closed.open && !closed.draining && closed.evicting());
    assert_eq!(closed.next_change, Some(utc("2026-03-05T08:00:00Z")));
}

#[test]
fn always_open_zone_never_drains() {
    let s = schedule(&[("00:00-00:00", &[])], "UTC");
    let state = s.state_at(utc("2026-03-04T12:00:00Z"), Duration::MAX);
    assert_eq!(
        state,
        ZoneState {
            open: true,
            draining: false,
            next_change: None
        }
    );
    assert!(!state.evicting());
}

#[test]
fn schedule_errors() {
    assert_eq!(
        ZoneSchedule::new(vec![], "UTC").unwrap_err(),
        WindowError::NoWindows
    );
    let err = ZoneSchedule::new(vec![window("08:00-21:00", &[])], "Mars/Olympus").unwrap_err();
    assert_eq!(
        err,
        WindowError::UnknownTimeZone {
            name: "Mars/Olympus".into(),
            likely: None,
        }
    );
    let typo = ZoneSchedule::new(vec![window("08:00-21:00", &[])], "Europe/Berln").unwrap_err();
    assert!(
        typo.to_string()
            .ends_with("; did you mean \"Europe/Berlin\"?"),
        "{typo}"
    );
    assert!(err.to_string().contains("\"Mars/Olympus\""), "{err}");
    assert!(err.to_string().contains("IANA"), "{err}");
    assert!(ZoneSchedule::new(vec![window("08:00-21:00", &[])], "").is_err());
    assert!(
        WindowError::NoWindows
            .to_string()
            .contains("at least one time window")
    );
}

#[test]
fn accessors() {
    let s = schedule(
        &[("08:00-21:00", &[Mon]), ("22:00-06:00", &[])],
        "Europe/Berlin",
    );
    assert_eq!(s.time_zone_name(), "Europe/Berlin");
    assert_eq!(s.windows().len(), 2);
    assert_eq!(s.windows()[0].to_string(), "08:00-21:00 Mon");
    assert_eq!(
        schedule(&[("08:00-21:00", &[])], "UTC").time_zone_name(),
        "UTC"
    );
}

#[test]
fn extreme_instants_do_not_panic() {
    for tz in [
        "UTC",
        "America/New_York",
        "Pacific/Apia",
        "Australia/Lord_Howe",
    ] {
        let s = schedule(&[("22:00-06:00", &[Fri]), ("00:00-00:00", &[Sun])], tz);
        for t in [
            Timestamp::MIN,
            Timestamp::MAX,
            Timestamp::UNIX_EPOCH,
            Timestamp::MAX
                .saturating_sub(jiff::SignedDuration::from_hours(24 * 3))
                .unwrap(),
            Timestamp::MIN
                .saturating_add(jiff::SignedDuration::from_hours(24 * 3))
                .unwrap(),
        ] {
            let state = s.state_at(t, Duration::MAX);
            if let Some(n) = state.next_change {
                assert!(n > t);
                assert_ne!(s.is_open(n), state.open, "{tz} {t}");
            }
        }
    }
}

#[test]
fn samoa_skipped_day_is_handled() {
    // Pacific/Apia skipped Friday 2011-12-30 entirely. A Friday-only window
    // therefore has a two-week gap, which next_change must still find.
    let s = schedule(&[("08:00-09:00", &[Fri])], "Pacific/Apia");
    let after_first = zoned("2011-12-23T10:00:00[Pacific/Apia]");
    assert_eq!(
        s.next_change(after_first),
        Some(zoned("2012-01-06T08:00:00[Pacific/Apia]"))
    );
}

// ---------------------------------------------------------------------------
// Property tests
// ---------------------------------------------------------------------------

fn arb_window() -> impl Strategy<Value = DailyWindow> {
    (0u32..1440, 0u32..1440, 0u8..128).prop_map(|(start, end, days)| {
        let text = format!(
            "{:02}:{:02}-{:02}:{:02}",
            start / 60,
            start % 60,
            end / 60,
            end % 60
        );
        let days: Vec<Weekday> = Weekday::ALL
            .into_iter()
            .enumerate()
            .filter(|(i, _)| days & (1 << i) != 0)
            .map(|(_, d)| d)
            .collect();
        DailyWindow::parse(&text, &days).unwrap()
    })
}

fn arb_tz() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("UTC"),
        Just("America/New_York"),
        Just("Europe/Berlin"),
        Just("Australia/Lord_Howe"),
    ]
}

/// Instants spread over a decade, plus a strong bias towards the days around
/// DST transitions where the interesting bugs live.
fn arb_instant() -> impl Strategy<Value = Timestamp> {
    let decade = (1_577_836_800i64..1_893_456_000i64).boxed();
    let near_transition = (
        prop_oneof![
            Just(utc("2026-03-08T07:00:00Z")), // New York spring
            Just(utc("2026-11-01T06:00:00Z")), // New York fall
            Just(utc("2026-03-29T01:00:00Z")), // Berlin spring
            Just(utc("2026-10-25T01:00:00Z")), // Berlin fall
            Just(utc("2026-04-04T15:00:00Z")), // Lord Howe fall (30 min)
            Just(utc("2026-10-03T15:30:00Z")), // Lord Howe spring
        ],
        -3 * 86_400i64..3 * 86_400,
    )
        .prop_map(|(base, delta)| base.as_second() + delta)
        .boxed();
    (
        prop_oneof![decade, near_transition],
        prop_oneof![Just(0i32), 0i32..1_000_000_000],
    )
        .prop_map(|(second, nanos)| Timestamp::new(second, nanos).unwrap())
}

fn secs(n: i64) -> jiff::SignedDuration {
    jiff::SignedDuration::from_secs(n)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn next_change_is_a_real_change(
        windows in prop::collection::vec(arb_window(), 1..4),
        tz in arb_tz(),
        t in arb_instant(),
    ) {
        let s = ZoneSchedule::new(windows, tz).unwrap();
        let was = s.is_open(t);
        match s.next_change(t) {
            Some(n) => {
                prop_assert!(n > t);
                prop_assert_eq!(n.subsec_nanosecond(), 0);
                prop_assert_ne!(s.is_open(n), was);
                prop_assert_eq!(s.is_open(n - secs(1)), was);
                let one_after = t + secs(1);
                if one_after < n {
                    prop_assert_eq!(s.is_open(one_after), was);
                }
                let mid = t + (n.duration_since(t) / 2);
                prop_assert_eq!(s.is_open(mid), was);
                let state = s.state_at(t, std::time::Duration::from_secs(900));
                prop_assert_eq!(state.open, was);
                prop_assert_eq!(state.next_change, Some(n));
                prop_assert_eq!(
                    state.draining,
                    was && n.duration_since(t) <= secs(900)
                );
            }
            None => prop_assert!(was, "a zone that never changes must be always open"),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Exhaustive check that no earlier change was missed. Windows are on
    /// whole minutes and these zones' offsets and transitions are whole
    /// minutes, so the state can only flip at seconds :00 and :01 of a
    /// minute; checking all of those between t and the answer is complete.
    #[test]
    fn next_change_is_the_first_change(
        windows in prop::collection::vec(arb_window(), 1..4),
        tz in arb_tz(),
        t in arb_instant(),
    ) {
        let s = ZoneSchedule::new(windows, tz).unwrap();
        let was = s.is_open(t);
        let next = s.next_change(t);
        let horizon = next.unwrap_or(t + secs(9 * 86_400));
        let mut minute = t.as_second().div_euclid(60) * 60;
        loop {
            for offset in [0, 1] {
                let probe = Timestamp::from_second(minute + offset).unwrap();
                if probe > t && probe < horizon {
                    prop_assert_eq!(s.is_open(probe), was, "changed early at {}", probe);
                }
            }
            if Timestamp::from_second(minute).unwrap() >= horizon {
                break;
            }
            minute += 60;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The previous change is a real change, and the state has not changed since: the next change
    /// after it (which `next_change_is_the_first_change` checks) is after `t`.
    #[test]
    fn previous_change_is_the_last_change(
        windows in prop::collection::vec(arb_window(), 1..4),
        tz in arb_tz(),
        t in arb_instant(),
    ) {
        let s = ZoneSchedule::new(windows, tz).unwrap();
        let now = s.is_open(t);
        match s.previous_change(t) {
            Some(p) => {
                prop_assert!(p <= t);
                prop_assert_eq!(p.subsec_nanosecond(), 0);
                prop_assert_eq!(s.is_open(p), now);
                prop_assert_ne!(s.is_open(p - secs(1)), now);
                prop_assert!(s.next_change(p).is_none_or(|next| next > t));
            }
            None => prop_assert!(
                s.next_change(t - secs(20 * 86_400)).is_none_or(|next| next > t),
                "a change within the last twenty days was missed"
            ),
        }
    }
}

#[test]
fn previous_change_finds_the_close_the_zone_is_closed_since() {
    let s = schedule(&[("22:00-06:00", &[])], "UTC");
    assert_eq!(
        s.previous_change(utc("2026-03-05T09:00:00Z")),
        Some(utc("2026-03-05T06:00:01Z"))
    );
    assert_eq!(
        s.previous_change(utc("2026-03-05T06:00:01Z")),
        Some(utc("2026-03-05T06:00:01Z"))
    );
    assert_eq!(
        s.previous_change(utc("2026-03-05T03:00:00Z")),
        Some(utc("2026-03-04T22:00:00Z"))
    );
    let always = schedule(&[("00:00-00:00", &[])], "UTC");
    assert_eq!(always.previous_change(utc("2026-03-05T03:00:00Z")), None);
}
