//! A single daily window (`"22:00-06:00"` plus optional weekdays) and its pure,
//! zone-independent evaluation against a local civil date-time.

// The schema derives (KubeSchema, CustomResource, JsonSchema) copy each type's visibility into items
// they generate, which `unreachable_pub` then reports; these are the public CRD and window types.
#![allow(unreachable_pub)]

use std::fmt;

use jiff::civil::DateTime;

use super::WindowError;

/// Seconds in one civil day; window ends are always strictly below this.
pub(crate) const SECONDS_PER_DAY: u32 = 86_400;

// Our own type rather than `jiff::civil::Weekday`, so that the configuration format (`"Mon"`..`"Sun"`)
// and its JSON schema do not change with a dependency upgrade.
/// Day of the week.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
pub enum Weekday {
    Mon,
    Tue,
    Wed,
    Thu,
    Fri,
    Sat,
    Sun,
}

impl Weekday {
    /// Monday first, matching ISO 8601 and the bit order of the day set.
    pub const ALL: [Weekday; 7] = [
        Weekday::Mon,
        Weekday::Tue,
        Weekday::Wed,
        Weekday::Thu,
        Weekday::Fri,
        Weekday::Sat,
        Weekday::Sun,
    ];

    /// The configuration spelling, so logs and reports echo what users write.
    pub fn as_str(self) -> &'static str {
        match self {
            Weekday::Mon => "Mon",
            Weekday::Tue => "Tue",
            Weekday::Wed => "Wed",
            Weekday::Thu => "Thu",
            Weekday::Fri => "Fri",
            Weekday::Sat => "Sat",
            Weekday::Sun => "Sun",
        }
    }

    /// Position in the week, Monday = 0; also the bit index in a day set.
    fn index(self) -> u8 {
        self as u8
    }
}

impl fmt::Display for Weekday {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<jiff::civil::Weekday> for Weekday {
    fn from(day: jiff::civil::Weekday) -> Self {
        match day {
            jiff::civil::Weekday::Monday => Weekday::Mon,
            jiff::civil::Weekday::Tuesday => Weekday::Tue,
            jiff::civil::Weekday::Wednesday => Weekday::Wed,
            jiff::civil::Weekday::Thursday => Weekday::Thu,
            jiff::civil::Weekday::Friday => Weekday::Fri,
            jiff::civil::Weekday::Saturday => Weekday::Sat,
            jiff::civil::Weekday::Sunday => Weekday::Sun,
        }
    }
}

impl From<Weekday> for jiff::civil::Weekday {
    fn from(day: Weekday) -> Self {
        match day {
            Weekday::Mon => jiff::civil::Weekday::Monday,
            Weekday::Tue => jiff::civil::Weekday::Tuesday,
            Weekday::Wed => jiff::civil::Weekday::Wednesday,
            Weekday::Thu => jiff::civil::Weekday::Thursday,
            Weekday::Fri => jiff::civil::Weekday::Friday,
            Weekday::Sat => jiff::civil::Weekday::Saturday,
            Weekday::Sun => jiff::civil::Weekday::Sunday,
        }
    }
}

/// Bit set of weekdays, bit 0 = Monday. A `u8` keeps `DailyWindow` `Copy`
/// and makes the per-cycle `is_open` check allocation-free.
const EVERY_DAY: u8 = 0b111_1111;

/// One daily time window of a revocable zone, e.g. `22:00-06:00` on Fridays.
///
/// Ends are stored as seconds of the day and are both inclusive, because
/// operators read `08:00-21:00` as "until 21:00 o'clock" and expect the zone
/// to still be usable during the second 21:00:00.
///
/// A window whose end is before its start crosses midnight and belongs to the
/// day it starts on: `22:00-06:00 Fri` covers Friday night into Saturday
/// morning. This is the behaviour Volcano got wrong (it treated the part after
/// midnight as closed). A window whose start equals its end covers the whole
/// day, since a zero-length window would be a useless configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DailyWindow {
    start: u32,
    end: u32,
    days: u8,
}

impl DailyWindow {
    /// Parses `"HH:MM-HH:MM"` (strictly two digits each, no surrounding
    /// whitespace) limited to `days`; an empty `days` means every day.
    ///
    /// Parsing is strict so that a typo such as `"8:00-21:00 "` is reported
    /// at configuration time instead of silently meaning something else.
    pub fn parse(text: &str, days: &[Weekday]) -> Result<DailyWindow, WindowError> {
        let invalid = |reason: &'static str| WindowError::InvalidWindow {
            text: text.to_owned(),
            reason,
        };
        if text.is_empty() {
            return Err(invalid("window is empty"));
        }
        let (start_text, end_text) = text
            .split_once('-')
            .ok_or_else(|| invalid("missing \"-\" between start and end time"))?;
        let start = parse_clock(start_text.as_bytes())
            .map_err(|problem| invalid(problem.reason("start")))?;
        let end_bytes = end_text.as_bytes();
        // Distinguish "valid window followed by junk" from a malformed end so
        // the message points at the actual mistake.
        if end_bytes.len() > 5 && parse_clock(&end_bytes[..5]).is_ok() {
            return Err(invalid("unexpected text after the end time"));
        }
        let end = parse_clock(end_bytes).map_err(|problem| invalid(problem.reason("end")))?;

        let mut set = 0u8;
        for day in days {
            if set & (1 << day.index()) != 0 {
                return Err(WindowError::RepeatedDay {
                    text: text.to_owned(),
                    day: *day,
                });
            }
            set |= 1 << day.index();
        }
        if set == 0 {
            set = EVERY_DAY;
        }
        Ok(DailyWindow {
            start,
            end,
            days: set,
        })
    }

    /// Second of the day at which the window opens (inclusive).
    pub fn start_second_of_day(&self) -> u32 {
        self.start
    }

    /// Second of the day of the last open second (inclusive).
    pub fn end_second_of_day(&self) -> u32 {
        self.end
    }

    /// Days on which the window starts, Monday first. All seven when the
    /// window was configured without days.
    pub fn days(&self) -> Vec<Weekday> {
        Weekday::ALL
            .into_iter()
            .filter(|day| self.starts_on(*day))
            .collect()
    }

    /// True when the window opens on `day` (for a midnight-crossing window,
    /// the part after midnight belongs to the previous day).
    pub fn starts_on(&self, day: Weekday) -> bool {
        self.days & (1 << day.index()) != 0
    }

    /// True for windows like `22:00-06:00` that end on the following day.
    pub fn crosses_midnight(&self) -> bool {
        self.end < self.start
    }

    /// True for `HH:MM-HH:MM` with equal ends, which means the whole day.
    pub fn is_whole_day(&self) -> bool {
        self.end == self.start
    }

    /// Whether the local civil time `local` (sub-seconds ignored) is inside
    /// this window. Kept separate from any time zone so DST handling lives in
    /// exactly one place, the schedule.
    pub(crate) fn contains(&self, local: DateTime) -> bool {
        let day = Weekday::from(local.weekday());
        let second = u32::from(local.hour().unsigned_abs()) * 3600
            + u32::from(local.minute().unsigned_abs()) * 60
            + u32::from(local.second().unsigned_abs());
        if self.start < self.end {
            self.starts_on(day) && self.start <= second && second <= self.end
        } else if self.start > self.end {
            let yesterday = Weekday::ALL[usize::from((day.index() + 6) % 7)];
            (self.starts_on(day) && second >= self.start)
                || (self.starts_on(yesterday) && second <= self.end)
        } else {
            self.starts_on(day)
        }
    }

    /// Open and close points of the occurrence that starts on a day, as
    /// seconds relative to that day's midnight. The close point is the first
    /// closed second (end + 1), so it may reach into the next day.
    pub(crate) fn occurrence_bounds(&self) -> (u32, u32) {
        if self.start < self.end {
            (self.start, self.end + 1)
        } else if self.start > self.end {
            (self.start, SECONDS_PER_DAY + self.end + 1)
        } else {
            (0, SECONDS_PER_DAY)
        }
    }
}

impl fmt::Display for DailyWindow {
    /// Prints the configuration form so error messages and reports can be
    /// pasted back into the config; days are omitted when the window applies
    /// to every day.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:02}:{:02}-{:02}:{:02}",
            self.start / 3600,
            self.start % 3600 / 60,
            self.end / 3600,
            self.end % 3600 / 60
        )?;
        if self.days != EVERY_DAY {
            let mut separator = " ";
            for day in Weekday::ALL.into_iter().filter(|day| self.starts_on(*day)) {
                write!(f, "{separator}{day}")?;
                separator = ",";
            }
        }
        Ok(())
    }
}

/// What is wrong with one `HH:MM` half; turned into a message naming the half.
#[derive(Debug)]
enum ClockProblem {
    Format,
    Hour,
    Minute,
}

impl ClockProblem {
    fn reason(self, half: &str) -> &'static str {
        match (self, half) {
            (ClockProblem::Format, "start") => "start time must be two-digit HH:MM",
            (ClockProblem::Format, _) => "end time must be two-digit HH:MM",
            (ClockProblem::Hour, _) => "hour must be 00-23",
            (ClockProblem::Minute, _) => "minute must be 00-59",
        }
    }
}

/// Parses exactly `HH:MM` from bytes (never slicing a `str`, so arbitrary
/// UTF-8 input cannot panic) into seconds of the day.
fn parse_clock(bytes: &[u8]) -> Result<u32, ClockProblem> {
    let [h1, h2, b':', m1, m2] = bytes else {
        return Err(ClockProblem::Format);
    };
    let digit = |b: &u8| {
        if b.is_ascii_digit() {
            Ok(u32::from(b - b'0'))
        } else {
            Err(ClockProblem::Format)
        }
    };
    let hour = digit(h1)? * 10 + digit(h2)?;
    let minute = digit(m1)? * 10 + digit(m2)?;
    if hour > 23 {
        return Err(ClockProblem::Hour);
    }
    if minute > 59 {
        return Err(ClockProblem::Minute);
    }
    Ok(hour * 3600 + minute * 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    fn reason_of(text: &str) -> &'static str {
        match DailyWindow::parse(text, &[]) {
            Err(WindowError::InvalidWindow { text: bad, reason }) => {
                assert_eq!(bad, text);
                reason
            }
            other => panic!("expected InvalidWindow for {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn parses_valid_windows() {
        let w = DailyWindow::parse("08:00-21:00", &[]).unwrap();
        assert_eq!(w.start_second_of_day(), 8 * 3600);
        assert_eq!(w.end_second_of_day(), 21 * 3600);
        assert_eq!(w.days(), Weekday::ALL.to_vec());
        assert!(!w.crosses_midnight());
        assert!(!w.is_whole_day());

        let w = DailyWindow::parse("22:30-06:05", &[Weekday::Fri, Weekday::Mon]).unwrap();
        assert_eq!(w.start_second_of_day(), 22 * 3600 + 30 * 60);
        assert_eq!(w.end_second_of_day(), 6 * 3600 + 5 * 60);
        assert_eq!(w.days(), vec![Weekday::Mon, Weekday::Fri]);
        assert!(w.crosses_midnight());

        let w = DailyWindow::parse("00:00-23:59", &[]).unwrap();
        assert_eq!(w.end_second_of_day(), 23 * 3600 + 59 * 60);
        assert!(
            DailyWindow::parse("07:00-07:00", &[])
                .unwrap()
                .is_whole_day()
        );
    }

    #[test]
    fn repeated_days_are_refused() {
        assert_eq!(
            DailyWindow::parse("08:00-09:00", &[Weekday::Sat, Weekday::Mon, Weekday::Sat]),
            Err(WindowError::RepeatedDay {
                text: "08:00-09:00".to_owned(),
                day: Weekday::Sat
            })
        );
    }

    #[test]
    fn rejects_bad_hours_and_minutes() {
        assert_eq!(reason_of("25:00-06:00"), "hour must be 00-23");
        assert_eq!(reason_of("24:00-06:00"), "hour must be 00-23");
        assert_eq!(reason_of("06:00-24:00"), "hour must be 00-23");
        assert_eq!(reason_of("06:60-07:00"), "minute must be 00-59");
        assert_eq!(reason_of("06:00-07:99"), "minute must be 00-59");
    }

    #[test]
    fn rejects_bad_format() {
        assert_eq!(reason_of(""), "window is empty");
        assert_eq!(
            reason_of("08:00"),
            "missing \"-\" between start and end time"
        );
        assert_eq!(
            reason_of("08:00 21:00"),
            "missing \"-\" between start and end time"
        );
        assert_eq!(
            reason_of("8:00-21:00"),
            "start time must be two-digit HH:MM"
        );
        assert_eq!(reason_of("08:00-9:00"), "end time must be two-digit HH:MM");
        assert_eq!(
            reason_of("08.00-21:00"),
            "start time must be two-digit HH:MM"
        );
        assert_eq!(
            reason_of("0a:00-21:00"),
            "start time must be two-digit HH:MM"
        );
        assert_eq!(
            reason_of(" 08:00-21:00"),
            "start time must be two-digit HH:MM"
        );
        assert_eq!(
            reason_of("08:00 -21:00"),
            "start time must be two-digit HH:MM"
        );
        assert_eq!(reason_of("08:00-"), "end time must be two-digit HH:MM");
        assert_eq!(reason_of("-21:00"), "start time must be two-digit HH:MM");
        assert_eq!(
            reason_of("08:00-21:00 "),
            "unexpected text after the end time"
        );
        assert_eq!(
            reason_of("08:00-21:00:00"),
            "unexpected text after the end time"
        );
        assert_eq!(
            reason_of("08:00-21:00-22:00"),
            "unexpected text after the end time"
        );
        // Multi-byte text must be rejected, not panic on a char boundary.
        assert_eq!(reason_of("08:00-2é:00"), "end time must be two-digit HH:MM");
        assert_eq!(
            reason_of("é8:00-21:00"),
            "start time must be two-digit HH:MM"
        );
    }

    #[test]
    fn error_message_quotes_text_and_expected_format() {
        let err = DailyWindow::parse("25:00-06:00", &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"window "25:00-06:00": hour must be 00-23 (expected "HH:MM-HH:MM")"#
        );
        let err = DailyWindow::parse("0800-2100", &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"window "0800-2100": start time must be two-digit HH:MM (expected "HH:MM-HH:MM")"#
        );
    }

    #[test]
    fn display_round_trips() {
        for (text, days) in [
            ("22:00-06:00", vec![]),
            ("08:05-21:30", vec![Weekday::Mon, Weekday::Fri]),
            ("00:00-00:00", vec![Weekday::Sun]),
        ] {
            let w = DailyWindow::parse(text, &days).unwrap();
            let shown = w.to_string();
            let (again_text, again_days) = match shown.split_once(' ') {
                Some((t, d)) => (
                    t.to_owned(),
                    d.split(',')
                        .map(|d| *Weekday::ALL.iter().find(|w| w.as_str() == d).unwrap())
                        .collect::<Vec<_>>(),
                ),
                None => (shown.clone(), vec![]),
            };
            assert_eq!(DailyWindow::parse(&again_text, &again_days).unwrap(), w);
        }
        let w = DailyWindow::parse("22:00-06:00", &[Weekday::Fri, Weekday::Mon]).unwrap();
        assert_eq!(w.to_string(), "22:00-06:00 Mon,Fri");
        assert_eq!(
            DailyWindow::parse("22:00-06:00", &[]).unwrap().to_string(),
            "22:00-06:00"
        );
        // Listing all seven days is the same window as listing none.
        assert_eq!(
            DailyWindow::parse("08:00-09:00", &Weekday::ALL)
                .unwrap()
                .to_string(),
            "08:00-09:00"
        );
    }

    #[test]
    fn weekday_serde_and_schema_are_plain_strings() {
        assert_eq!(serde_json::to_string(&Weekday::Mon).unwrap(), "\"Mon\"");
        assert_eq!(
            serde_json::from_str::<Weekday>("\"Sun\"").unwrap(),
            Weekday::Sun
        );
        assert!(serde_json::from_str::<Weekday>("\"Monday\"").is_err());
        let schema = serde_json::to_value(schemars::schema_for!(Weekday)).unwrap();
        assert_eq!(schema["type"], "string");
        assert_eq!(
            schema["enum"],
            serde_json::json!(["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"])
        );
    }

    #[test]
    fn weekday_conversion_matches_jiff() {
        // 2026-03-02 is a Monday.
        for (offset, day) in Weekday::ALL.into_iter().enumerate() {
            let d = date(2026, 3, 2 + offset as i8);
            assert_eq!(Weekday::from(d.weekday()), day);
            assert_eq!(jiff::civil::Weekday::from(day), d.weekday());
        }
    }

    #[test]
    fn contains_handles_both_inclusive_ends() {
        let w = DailyWindow::parse("08:00-21:00", &[]).unwrap();
        let day = date(2026, 3, 4);
        assert!(w.contains(day.at(8, 0, 0, 0)));
        assert!(w.contains(day.at(21, 0, 0, 0)));
        assert!(w.contains(day.at(21, 0, 0, 999_999_999)));
        assert!(!w.contains(day.at(21, 0, 1, 0)));
        assert!(!w.contains(day.at(7, 59, 59, 999_999_999)));
    }
}
