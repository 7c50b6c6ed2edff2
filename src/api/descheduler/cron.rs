//! The descheduler chart's CronJob `schedule` as the interval a tidal policy runs on.
//!
//! The schedule is read as the CronJob controller reads it (robfig/cron's standard parser: five
//! fields with lists, ranges, steps and names, `?`, and the `@hourly`-style descriptors and `@every`).
//! tidal runs a policy every `interval`, with its limits per run, as the descheduler applies its caps
//! per run. The interval is the longest gap between two runs of the schedule: every gap is then at most
//! the interval, so over the schedule's whole cycle tidal runs no more often than the descheduler did,
//! and evicts no more per hour. Taking the shortest gap instead would turn `0 9,10 * * *` (two runs a
//! day) into a run every hour. Runs are counted in UTC over 400 years, the Gregorian calendar's cycle.

use jiff::civil::{Date, Weekday};

/// How often a schedule runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cadence {
    /// The longest gap between two consecutive runs, in seconds.
    pub longest: u64,
    /// Every gap is the same: the schedule is a fixed interval.
    pub uniform: bool,
}

/// A parsed five-field schedule: one bit per allowed value.
#[derive(Debug)]
struct Fields {
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    weekdays: u8,
    /// robfig/cron: when either day field is `*` (or `?`, without a step) a day must match both, else
    /// either.
    any_day_star: bool,
}

struct Bounds {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTE: Bounds = Bounds {
    name: "minute",
    min: 0,
    max: 59,
    names: &[],
};
const HOUR: Bounds = Bounds {
    name: "hour",
    min: 0,
    max: 23,
    names: &[],
};
const DAY: Bounds = Bounds {
    name: "day of month",
    min: 1,
    max: 31,
    names: &[],
};
const MONTH: Bounds = Bounds {
    name: "month",
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const WEEKDAY: Bounds = Bounds {
    name: "day of week",
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// How often `schedule` runs: `Ok(None)` if it never does (`0 0 30 2 *`), `Err` with the reason if it
/// is not a schedule the CronJob controller accepts.
pub(crate) fn cadence(schedule: &str) -> Result<Option<Cadence>, String> {
    let schedule = schedule.trim();
    if let Some(every) = schedule.strip_prefix("@every ") {
        let duration: crate::api::GoDuration = every
            .trim()
            .parse()
            .map_err(|e| format!("@every {every}: {e}"))?;
        // robfig/cron runs `@every` at whole seconds, at least one apart.
        let secs = duration.as_std().as_secs().max(1);
        return Ok(Some(Cadence {
            longest: secs,
            uniform: true,
        }));
    }
    let expanded = match schedule.to_ascii_lowercase().as_str() {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        other if other.starts_with('@') => return Err(format!("unknown descriptor {other}")),
        _ => schedule,
    };
    let fields = parse(expanded)?;
    Ok(fields.cadence())
}

fn parse(schedule: &str) -> Result<Fields, String> {
    let parts: Vec<&str> = schedule.split_whitespace().collect();
    let [minute, hour, day, month, weekday] = parts.as_slice() else {
        return Err(format!(
            "expected five fields (minute hour day-of-month month day-of-week), got {}",
            parts.len()
        ));
    };
    let (minutes, _) = field(minute, &MINUTE)?;
    let (hours, _) = field(hour, &HOUR)?;
    let (days, day_star) = field(day, &DAY)?;
    let (months, _) = field(month, &MONTH)?;
    let (weekdays, weekday_star) = field(weekday, &WEEKDAY)?;
    Ok(Fields {
        minutes,
        hours: u32::try_from(hours).map_err(|_| "hour out of range")?,
        days: u32::try_from(days).map_err(|_| "day of month out of range")?,
        months: u16::try_from(months).map_err(|_| "month out of range")?,
        weekdays: u8::try_from(weekdays).map_err(|_| "day of week out of range")?,
        any_day_star: day_star || weekday_star,
    })
}

/// One field's bits, and whether it is a star (`*` or `?` without a step above 1).
fn field(text: &str, bounds: &Bounds) -> Result<(u64, bool), String> {
    let mut bits = 0u64;
    let mut star = false;
    for range in text.split(',') {
        let (span, step) = match range.split_once('/') {
            Some((span, step)) => {
                let step: u32 = step
                    .parse()
                    .map_err(|_| format!("{}: step {step:?} is not a number", bounds.name))?;
                if step == 0 {
                    return Err(format!("{}: a step must be positive", bounds.name));
                }
                (span, Some(step))
            }
            None => (range, None),
        };
        let (start, end) = if span == "*" || span == "?" {
            if step.is_none_or(|s| s == 1) {
                star = true;
            }
            (bounds.min, bounds.max)
        } else {
            match span.split_once('-') {
                Some((low, high)) => (value(low, bounds)?, value(high, bounds)?),
                // `N/step` is `N-max/step`.
                None if step.is_some() => (value(span, bounds)?, bounds.max),
                None => {
                    let v = value(span, bounds)?;
                    (v, v)
                }
            }
        };
        if start > end {
            return Err(format!("{}: {span:?} starts after it ends", bounds.name));
        }
        let step = step.unwrap_or(1);
        let mut v = start;
        while v <= end {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok((bits, star))
}

fn value(text: &str, bounds: &Bounds) -> Result<u32, String> {
    let lower = text.to_ascii_lowercase();
    let v = match bounds.names.iter().position(|n| *n == lower) {
        Some(i) => u32::try_from(i).unwrap_or(u32::MAX) + bounds.min,
        None => text
            .parse()
            .map_err(|_| format!("{}: {text:?} is not a number", bounds.name))?,
    };
    if v < bounds.min || v > bounds.max {
        return Err(format!(
            "{}: {v} is outside {}-{}",
            bounds.name, bounds.min, bounds.max
        ));
    }
    Ok(v)
}

impl Fields {
    fn runs_on(&self, date: Date) -> bool {
        let day = self.days & (1 << date.day()) != 0;
        let weekday = self.weekdays & (1 << date.weekday().to_sunday_zero_offset()) != 0;
        let month = self.months & (1 << date.month()) != 0;
        month
            && if self.any_day_star {
                day && weekday
            } else {
                day || weekday
            }
    }

    fn cadence(&self) -> Option<Cadence> {
        // Minutes of the day it runs at, the same on every day it runs.
        let times: Vec<i64> = (0..24)
            .filter(|h| self.hours & (1 << h) != 0)
            .flat_map(|h| {
                (0..60)
                    .filter(|m| self.minutes & (1u64 << m) != 0)
                    .map(move |m| h * 60 + m)
            })
            .collect();
        let (first, last) = (*times.first()?, *times.last()?);
        let mut longest = 0i64;
        let mut shortest = i64::MAX;
        for pair in times.windows(2) {
            longest = longest.max(pair[1] - pair[0]);
            shortest = shortest.min(pair[1] - pair[0]);
        }
        // 400 years and one more, so that the gap from the cycle's last run to the next cycle's
        // first is counted too.
        let start = jiff::civil::date(2000, 1, 1);
        debug_assert_eq!(start.weekday(), Weekday::Saturday);
        let mut previous: Option<i64> = None;
        let mut date = start;
        for day in 0..(146_097 + 366) {
            if self.runs_on(date) {
                if let Some(previous) = previous {
                    let gap = (day - previous) * 1440 + first - last;
                    longest = longest.max(gap);
                    shortest = shortest.min(gap);
                }
                previous = Some(day);
            }
            date = date.tomorrow().ok()?;
        }
        previous?;
        // A schedule that runs once in 400 years (none does, but the guard costs nothing) has no gap.
        if shortest == i64::MAX {
            return None;
        }
        Some(Cadence {
            longest: u64::try_from(longest).ok()? * 60,
            uniform: shortest == longest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(schedule: &str) -> (u64, bool) {
        let c = cadence(schedule).unwrap().unwrap();
        (c.longest, c.uniform)
    }

    const MIN: u64 = 60;
    const HOUR: u64 = 3600;
    const DAY: u64 = 86_400;

    #[test]
    fn fixed_intervals() {
        assert_eq!(of("0 * * * *"), (HOUR, true));
        assert_eq!(of("*/2 * * * *"), (2 * MIN, true));
        assert_eq!(of("* * * * *"), (MIN, true));
        assert_eq!(of("*/15 * * * *"), (15 * MIN, true));
        assert_eq!(of("30 */2 * * *"), (2 * HOUR, true));
        assert_eq!(of("0 3 * * *"), (DAY, true));
        assert_eq!(of("@hourly"), (HOUR, true));
        assert_eq!(of("@daily"), (DAY, true));
        assert_eq!(of("@weekly"), (7 * DAY, true));
        assert_eq!(of("0 0 * * MON"), (7 * DAY, true));
        assert_eq!(of("@every 90m"), (90 * MIN, true));
    }

    #[test]
    fn uneven_schedules_take_the_longest_gap() {
        // Every 7 minutes within the hour: :56 to :00 is 4 minutes, the others 7.
        assert_eq!(of("*/7 * * * *"), (7 * MIN, false));
        // Twice a day at 09:00 and 10:00: 23 hours.
        assert_eq!(of("0 9,10 * * *"), (23 * HOUR, false));
        // Hourly on weekdays, 9 to 17: Friday 17:00 to Monday 09:00.
        assert_eq!(of("0 9-17 * * 1-5"), (64 * HOUR, false));
        // Months: the 31st; May 31 to July 31 is 61 days.
        assert_eq!(of("0 0 31 * *"), (61 * DAY, false));
        assert_eq!(of("@monthly"), (31 * DAY, false));
        // Both day fields restricted: either matches (the 1st, or any Sunday).
        let (longest, _) = of("0 0 1 * 0");
        assert_eq!(longest, 7 * DAY);
        // A step from a value: minutes 10, 30, 50.
        assert_eq!(of("10/20 * * * *"), (20 * MIN, true));
    }

    #[test]
    fn no_more_runs_an_hour_than_the_schedule() {
        // Over a whole week, runs every `longest` are never more than the schedule's own runs.
        for (schedule, runs_a_week) in [
            ("0 * * * *", 168u64),
            ("*/7 * * * *", 9 * 168),
            ("0 9,10 * * *", 14),
            ("0 9-17 * * 1-5", 45),
            ("5,10 * * * *", 2 * 168),
        ] {
            let (longest, _) = of(schedule);
            assert!(
                7 * DAY / longest <= runs_a_week,
                "{schedule}: every {longest}s is {} runs a week, the schedule {runs_a_week}",
                7 * DAY / longest
            );
        }
    }

    #[test]
    fn schedules_that_never_run_or_do_not_parse() {
        assert_eq!(cadence("0 0 30 2 *"), Ok(None));
        for bad in [
            "0 3 * *",
            "61 * * * *",
            "*/0 * * * *",
            "0 0 * * 7",
            "0 5-3 * * *",
            "x * * * *",
            "@fortnightly",
            "@every soon",
            "CRON_TZ=UTC 0 * * * *",
            "",
        ] {
            assert!(cadence(bad).is_err(), "{bad}");
        }
    }
}
