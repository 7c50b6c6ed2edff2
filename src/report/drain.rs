//! A zone's drain as the report and the timeline show it: when it starts, when the zone is expected to
//! be empty and the margin before the close (or by how much the close is missed and how many pods
//! would still be there), what would fix it, what the estimate assumed, and what happens to pods left at
//! the close. The report fills it from the drain outlook at its instant; the timeline from its
//! simulation, with the outlook at the drain's start alongside.

use jiff::{SignedDuration, Timestamp, tz::TimeZone};
use serde::Serialize;

use crate::{
    api::BudgetsAfterClose,
    drain::{ZoneOutlook, advice::human},
    text::clock,
};

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DrainLine {
    pub zone: String,
    /// The close the drain is for; `null` when the zone closed before the instant planned for.
    pub close: Option<Timestamp>,
    /// `auto` or the zone's fixed lead.
    pub drain_before: String,
    /// When the drain starts (or started); `null` for a zone closed before the instant planned for.
    pub drain_start: Option<Timestamp>,
    /// Preemptable pods on the zone: now (report), or when the drain starts (timeline).
    pub remaining_pods: u32,
    /// When the last of them is expected gone; `null` while some would never leave (or, in the
    /// timeline, when it is not within the simulated time).
    pub expected_empty_at: Option<Timestamp>,
    /// Seconds from the expected empty zone to the close; negative when the close is missed.
    pub margin_seconds: Option<i64>,
    /// Preemptable pods expected still on the zone at its close.
    pub at_close: Option<u32>,
    /// The zone will not be empty at its close by more than the estimate's error (or is closed and
    /// will not be empty within it).
    pub at_risk: bool,
    /// What would make the close, when it is missed (at risk, or within the estimate's error).
    pub fix: Option<String>,
    /// What the estimate rests on: pods, jobs, rounds, what bounds the drain, the rate and the
    /// termination it assumed.
    pub summary: String,
    pub budgets_after_close: BudgetsAfterClose,
    /// What happens to pods still there at the close, in a sentence.
    pub after_close: String,
    /// Timeline only: the drain estimate made when the drain started, to compare with the simulation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<DrainEstimateLine>,
    /// Timeline only: pod-seconds of work the drain's evictions throw away (each evicted pod's run
    /// since its start or its last checkpoint, at its eviction).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_lost_seconds: Option<f64>,
    /// The zone's time zone, in which a close reads as the operator wrote it (`07:00`, not the
    /// first closed second).
    #[serde(skip)]
    pub tz: TimeZone,
}

/// The drain plan's own figures (`drain::plan`).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DrainEstimateLine {
    pub expected_empty_at: Option<Timestamp>,
    pub margin_seconds: Option<i64>,
    pub at_close: Option<u32>,
    pub at_risk: bool,
}

impl DrainEstimateLine {
    pub fn of(outlook: &ZoneOutlook) -> DrainEstimateLine {
        DrainEstimateLine {
            expected_empty_at: outlook.estimate.empty_at(),
            margin_seconds: outlook.margin().map(|m| m.as_secs()),
            at_close: outlook.close.map(|_| outlook.estimate.at_close),
            at_risk: outlook.at_risk,
        }
    }
}

impl DrainLine {
    /// The drain as the outlook estimates it at its instant.
    pub fn from_outlook(outlook: &ZoneOutlook, tz: TimeZone) -> DrainLine {
        let estimate = DrainEstimateLine::of(outlook);
        DrainLine {
            zone: outlook.zone.clone(),
            close: outlook.close,
            drain_before: outlook.drain_before.to_string(),
            drain_start: outlook.drain_start,
            remaining_pods: outlook.remaining,
            expected_empty_at: estimate.expected_empty_at,
            margin_seconds: estimate.margin_seconds,
            at_close: estimate.at_close,
            at_risk: outlook.at_risk,
            fix: outlook.fix.clone(),
            summary: outlook.summary.clone(),
            budgets_after_close: outlook.budgets_after_close,
            after_close: after_close(outlook.budgets_after_close),
            estimate: None,
            work_lost_seconds: None,
            tz,
        }
    }

    /// `empty by Mon 06:52, 7m 30s before the close`, `misses the close by 17m: 5090 pods still
    /// there at the close`, `closed with 3 pods still on it; empty by Mon 10:12`.
    pub fn verdict(&self, clock: &clock::Clock) -> String {
        let at = |t: Timestamp| clock.at(t);
        let left = |n: u32| format!("{n} pod{} still there", plural(n));
        match (self.close, self.expected_empty_at) {
            (Some(close), Some(empty)) if empty <= close => format!(
                "empty by {}, {} before the close",
                at(empty),
                human(close.duration_since(empty))
            ),
            (Some(close), Some(empty)) if !self.at_risk => format!(
                "empty by {}, {} after the close: within the estimate's error, tight",
                at(empty),
                human(empty.duration_since(close))
            ),
            (Some(close), Some(empty)) => format!(
                "misses the close by {}: {} at the close",
                human(empty.duration_since(close)),
                left(self.at_close.unwrap_or(self.remaining_pods))
            ),
            (Some(_), None) => match self.at_close {
                Some(0) => "empty at the close; some pods leave later".to_owned(),
                Some(n) => format!("misses the close: {} at the close, not all leave", left(n)),
                None => format!(
                    "not empty: {} pod{} do not all leave",
                    self.remaining_pods,
                    plural(self.remaining_pods)
                ),
            },
            (None, Some(empty)) if self.remaining_pods > 0 => format!(
                "closed with {}; empty by {}",
                left(self.remaining_pods),
                at(empty)
            ),
            (None, Some(_)) => "closed and empty".to_owned(),
            (None, None) => format!("closed with {}; not all leave", left(self.remaining_pods)),
        }
    }

    /// `Mon 06:40 (auto)`, `Mon 06:40 (drainBefore 20m0s)`, or `-`.
    pub fn start_text(&self, clock: &clock::Clock) -> String {
        match self.drain_start {
            Some(start) if self.drain_before == "auto" => {
                format!("{} (auto)", clock.at(start))
            }
            Some(start) => format!("{} (drainBefore {})", clock.at(start), self.drain_before),
            None => "-".to_owned(),
        }
    }

    /// The margin (or the miss, negative) as a duration for people.
    pub fn margin_text(&self) -> String {
        self.margin_seconds
            .map_or("-".to_owned(), |s| human(SignedDuration::from_secs(s)))
    }
}

/// What happens to preemptable pods still on a zone once it has closed.
pub fn after_close(budgets: BudgetsAfterClose) -> String {
    match budgets {
        BudgetsAfterClose::Respect => "pods left at the close keep leaving round by round within \
                                       their job budgets (budgetsAfterClose: Respect)"
            .to_owned(),
        BudgetsAfterClose::Ignore => "pods left at the close all go at the next round, their job \
                                      budgets lifted; PodDisruptionBudgets still hold \
                                      (budgetsAfterClose: Ignore)"
            .to_owned(),
    }
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(close: Option<i64>, empty: Option<i64>, at_close: Option<u32>) -> DrainLine {
        let t = |s: i64| Timestamp::from_second(1_800_000_000 + s).unwrap();
        DrainLine {
            zone: "z".into(),
            close: close.map(t),
            drain_before: "auto".into(),
            drain_start: Some(t(0)),
            remaining_pods: 10,
            expected_empty_at: empty.map(t),
            margin_seconds: close.zip(empty).map(|(c, e)| c - e),
            at_close,
            at_risk: false,
            fix: None,
            summary: String::new(),
            budgets_after_close: BudgetsAfterClose::Respect,
            after_close: after_close(BudgetsAfterClose::Respect),
            estimate: None,
            work_lost_seconds: None,
            tz: TimeZone::UTC,
        }
    }

    #[test]
    fn the_verdict_says_the_margin_or_the_miss_and_what_is_left() {
        let clock = clock::Clock::new(
            TimeZone::UTC,
            Timestamp::from_second(1_800_000_000).unwrap(),
        );
        assert_eq!(
            line(Some(600), Some(150), Some(0)).verdict(&clock),
            "empty by Fri 08:02, 7m 30s before the close"
        );
        let mut late = line(Some(600), Some(1_620), Some(7));
        late.at_risk = true;
        assert_eq!(
            late.verdict(&clock),
            "misses the close by 17m: 7 pods still there at the close"
        );
        // A miss the estimate cannot tell from its own error is said as such.
        assert_eq!(
            line(Some(600), Some(620), Some(1)).verdict(&clock),
            "empty by Fri 08:10, 20s after the close: within the estimate's error, tight"
        );
        assert_eq!(
            line(Some(600), None, Some(1)).verdict(&clock),
            "misses the close: 1 pod still there at the close, not all leave"
        );
        assert_eq!(
            line(None, Some(60), None).verdict(&clock),
            "closed with 10 pods still there; empty by Fri 08:01"
        );
        assert_eq!(line(Some(600), Some(1_620), Some(7)).margin_text(), "-17m");
    }
}
