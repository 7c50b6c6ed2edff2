//! Job disruption budgets: how many pods of a job may be unavailable at once.

use std::{fmt, str::FromStr};

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Serialize;

use crate::api::{labels, policy::JobBudgetSpec};
use crate::cluster::model::setting::{Setting, Sources};

/// An absolute count or a percentage of the job's pods (percentages round up, as Volcano does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum IntOrPercent {
    Int(u32),
    Percent(u32),
}

impl IntOrPercent {
    /// The absolute amount for a job of `total` pods.
    pub fn resolve(self, total: u32) -> u32 {
        match self {
            IntOrPercent::Int(n) => n,
            IntOrPercent::Percent(p) => {
                let scaled = u64::from(total) * u64::from(p);
                u32::try_from(scaled.div_ceil(100)).unwrap_or(u32::MAX)
            }
        }
    }
}

impl FromStr for IntOrPercent {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let expected = || "expected a non-negative integer or a percentage such as 25%".to_owned();
        match text.strip_suffix('%') {
            Some(number) => {
                let percent: u32 = number.parse().map_err(|_| expected())?;
                if percent > 100 {
                    return Err("a percentage must be at most 100%".to_owned());
                }
                Ok(IntOrPercent::Percent(percent))
            }
            None => text.parse().map(IntOrPercent::Int).map_err(|_| expected()),
        }
    }
}

impl fmt::Display for IntOrPercent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntOrPercent::Int(n) => write!(f, "{n}"),
            IntOrPercent::Percent(p) => write!(f, "{p}%"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum JobBudget {
    MaxUnavailable(IntOrPercent),
    MinAvailable(IntOrPercent),
}

impl fmt::Display for JobBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobBudget::MaxUnavailable(v) => write!(f, "maxUnavailable {v}"),
            JobBudget::MinAvailable(v) => write!(f, "minAvailable {v}"),
        }
    }
}

impl JobBudget {
    /// Reads the budget annotations of one object. MaxUnavailable wins over a valid MinAvailable. Any
    /// malformed budget key, or two spellings of one budget that disagree, make the whole budget
    /// invalid: which one the author meant is unknown, and guessing the wider one disrupts the job.
    pub fn read(sources: &Sources<'_>) -> Setting<JobBudget> {
        let mut max = None;
        let mut min = None;
        for map in sources.maps.iter().flatten() {
            for (keys, slot) in [
                (&labels::MAX_UNAVAILABLE, &mut max),
                (&labels::MIN_AVAILABLE, &mut min),
            ] {
                for key in keys.iter() {
                    let Some(value) = map.get(*key) else {
                        continue;
                    };
                    let invalid = |error: String| {
                        Setting::Invalid(Box::new(crate::cluster::model::setting::InvalidValue {
                            object: sources.object.to_owned(),
                            key: (*key).to_owned(),
                            value: value.clone(),
                            error,
                        }))
                    };
                    let parsed = match value.parse::<IntOrPercent>() {
                        Ok(parsed) => parsed,
                        Err(error) => return invalid(error.to_string()),
                    };
                    match slot {
                        Some((first, earlier)) if *earlier != parsed => {
                            return invalid(format!("conflicts with {first}={earlier}"));
                        }
                        Some(_) => {}
                        None => *slot = Some((*key, parsed)),
                    }
                }
            }
        }
        match (max, min) {
            (Some((_, max)), _) => Setting::Valid(JobBudget::MaxUnavailable(max)),
            (None, Some((_, min))) => Setting::Valid(JobBudget::MinAvailable(min)),
            (None, None) => Setting::Unset,
        }
    }

    /// The policy's default budget. The CRD schema has already checked it; a value that slipped past the
    /// schema (e.g. from a dump file) is an error, not a guess.
    pub fn from_spec(spec: &JobBudgetSpec) -> Result<JobBudget, String> {
        fn convert(value: &IntOrString) -> Result<IntOrPercent, String> {
            match value {
                IntOrString::Int(n) => u32::try_from(*n)
                    .map(IntOrPercent::Int)
                    .map_err(|_| format!("{n} must not be negative")),
                // As in the schema: a string is a percentage; a bare number belongs in the integer form.
                IntOrString::String(text) if text.ends_with('%') => text.parse(),
                IntOrString::String(text) => Err(format!(
                    "{text:?} must be an integer or a percentage such as 25%"
                )),
            }
        }
        match (&spec.max_unavailable, &spec.min_available) {
            (Some(max), _) => convert(max).map(JobBudget::MaxUnavailable),
            (None, Some(min)) => convert(min).map(JobBudget::MinAvailable),
            (None, None) => Err("set maxUnavailable or minAvailable".to_owned()),
        }
    }
}

/// Pod counts of a job, as its disruption budget reads them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobStats {
    pub total: u32,
    /// Running and not leaving.
    pub running: u32,
    /// Succeeded or failed.
    pub finished: u32,
    /// Unfinished and on their way out: terminating, being evicted, or planned this cycle.
    pub leaving: u32,
}

impl JobStats {
    /// Pods that are neither running nor finished: pending, unknown, terminating or being evicted.
    pub fn unavailable(&self) -> u32 {
        self.total - self.finished - self.running
    }
}

/// How many more pods of a job may be evicted this round.
///
/// - MaxUnavailable `m`: `max(0, m − unavailable)`, where unavailable = total − finished − running, so
///   pending, terminating and already-evicting pods all use up the budget.
/// - MinAvailable `m`: `max(0, running − m)`. Volcano falls through to 1 here when running < m; we don't.
/// - No budget: one pod at a time, `max(0, 1 − leaving)`: a round evicts one pod unless one is still on
///   its way out, so a short evictPeriod never has a whole job terminating at once. Pending pods do not
///   hold it back (a job short of capacity must still leave a closing zone).
pub(crate) fn allowed_evictions(budget: Option<JobBudget>, stats: JobStats) -> u32 {
    match budget {
        None => 1u32.saturating_sub(stats.leaving),
        Some(JobBudget::MaxUnavailable(max)) => {
            max.resolve(stats.total).saturating_sub(stats.unavailable())
        }
        Some(JobBudget::MinAvailable(min)) => {
            stats.running.saturating_sub(min.resolve(stats.total))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use IntOrPercent::{Int, Percent};

    fn read(pairs: &[(&str, &str)]) -> Setting<JobBudget> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        JobBudget::read(&Sources {
            object: "PodGroup ns/g",
            maps: &[Some(&map)],
        })
    }

    #[test]
    fn both_spellings_are_read() {
        assert_eq!(
            read(&[("volcano.sh/jdb-max-unavailable", "40%")]),
            Setting::Valid(JobBudget::MaxUnavailable(IntOrPercent::Percent(40)))
        );
        assert_eq!(
            read(&[("volcano.sh/job-disruption-budget-min-available", "2")]),
            Setting::Valid(JobBudget::MinAvailable(IntOrPercent::Int(2)))
        );
    }

    #[test]
    fn max_unavailable_wins() {
        assert_eq!(
            read(&[
                ("volcano.sh/jdb-min-available", "3"),
                ("volcano.sh/jdb-max-unavailable", "1")
            ]),
            Setting::Valid(JobBudget::MaxUnavailable(IntOrPercent::Int(1)))
        );
    }

    #[test]
    fn conflicting_or_partly_invalid_budgets_protect_the_job() {
        // Two spellings of one budget that disagree: neither is trusted.
        let conflict = read(&[
            ("volcano.sh/jdb-max-unavailable", "100%"),
            ("volcano.sh/job-disruption-budget-max-unavailable", "1"),
        ]);
        let invalid = conflict.invalid().expect("conflict accepted");
        assert!(invalid.error.contains("conflicts with"), "{invalid}");
        assert!(
            read(&[
                ("volcano.sh/jdb-max-unavailable", "100%"),
                ("volcano.sh/job-disruption-budget-max-unavailable", "abc"),
            ])
            .invalid()
            .is_some()
        );
        // A malformed MinAvailable beside a valid MaxUnavailable.
        let partly = read(&[
            ("volcano.sh/jdb-max-unavailable", "1"),
            ("volcano.sh/jdb-min-available", "abc"),
        ]);
        assert_eq!(
            partly.invalid().unwrap().key,
            "volcano.sh/jdb-min-available"
        );
        // Both spellings agreeing is fine.
        assert_eq!(
            read(&[
                ("volcano.sh/jdb-max-unavailable", "2"),
                ("volcano.sh/job-disruption-budget-max-unavailable", "2"),
            ]),
            Setting::Valid(JobBudget::MaxUnavailable(IntOrPercent::Int(2)))
        );
    }

    #[test]
    fn malformed_values_are_invalid_not_absent() {
        for bad in ["-1", "abc", "150%", "1.5", "%", ""] {
            let setting = read(&[("volcano.sh/jdb-max-unavailable", bad)]);
            let invalid = setting
                .invalid()
                .unwrap_or_else(|| panic!("{bad:?} accepted"));
            assert_eq!(invalid.value, bad);
        }
    }

    #[test]
    fn percentages_round_up() {
        assert_eq!(IntOrPercent::Percent(40).resolve(5), 2);
        assert_eq!(IntOrPercent::Percent(25).resolve(5), 2);
        assert_eq!(IntOrPercent::Percent(20).resolve(5), 1);
        assert_eq!(IntOrPercent::Percent(1).resolve(1), 1);
        assert_eq!(IntOrPercent::Percent(0).resolve(7), 0);
        assert_eq!(IntOrPercent::Percent(100).resolve(7), 7);
    }

    #[test]
    fn policy_default_budget() {
        let spec = JobBudgetSpec {
            max_unavailable: Some(IntOrString::String("25%".into())),
            min_available: None,
        };
        assert_eq!(
            JobBudget::from_spec(&spec).unwrap(),
            JobBudget::MaxUnavailable(IntOrPercent::Percent(25))
        );
        let negative = JobBudgetSpec {
            max_unavailable: None,
            min_available: Some(IntOrString::Int(-1)),
        };
        assert!(JobBudget::from_spec(&negative).is_err());
    }

    fn stats(total: u32, running: u32, finished: u32) -> JobStats {
        JobStats {
            total,
            running,
            finished,
            leaving: 0,
        }
    }

    #[test]
    fn max_unavailable_counts_everything_not_running() {
        let max2 = Some(JobBudget::MaxUnavailable(Int(2)));
        assert_eq!(allowed_evictions(max2, stats(5, 5, 0)), 2);
        assert_eq!(
            allowed_evictions(max2, stats(5, 4, 0)),
            1,
            "one pending or leaving"
        );
        assert_eq!(allowed_evictions(max2, stats(5, 3, 0)), 0);
        assert_eq!(allowed_evictions(max2, stats(5, 1, 0)), 0, "never negative");
        assert_eq!(
            allowed_evictions(max2, stats(5, 3, 2)),
            2,
            "finished pods are not unavailable"
        );
    }

    #[test]
    fn max_unavailable_percent_rounds_up_on_total() {
        let forty = Some(JobBudget::MaxUnavailable(Percent(40)));
        assert_eq!(allowed_evictions(forty, stats(5, 5, 0)), 2);
        assert_eq!(
            allowed_evictions(forty, stats(4, 4, 0)),
            2,
            "40% of 4 = 1.6 -> 2"
        );
        assert_eq!(allowed_evictions(forty, stats(1, 1, 0)), 1);
    }

    #[test]
    fn min_available_never_falls_through_to_one() {
        let min2 = Some(JobBudget::MinAvailable(Int(2)));
        assert_eq!(allowed_evictions(min2, stats(4, 4, 0)), 2);
        assert_eq!(allowed_evictions(min2, stats(4, 2, 0)), 0);
        assert_eq!(
            allowed_evictions(min2, stats(4, 1, 0)),
            0,
            "below threshold: Volcano evicts 1"
        );
        let half = Some(JobBudget::MinAvailable(Percent(50)));
        assert_eq!(
            allowed_evictions(half, stats(5, 5, 0)),
            2,
            "50% of 5 -> 3 must stay"
        );
    }

    #[test]
    fn no_budget_allows_one_at_a_time() {
        assert_eq!(allowed_evictions(None, stats(10, 10, 0)), 1);
        assert_eq!(
            allowed_evictions(None, stats(10, 8, 0)),
            1,
            "pending pods do not hold a drain back"
        );
        let one_leaving = JobStats {
            leaving: 1,
            ..stats(3, 1, 0)
        };
        assert_eq!(
            allowed_evictions(None, one_leaving),
            0,
            "one already on its way out"
        );
    }

    #[test]
    fn leaving_pods_are_unavailable_to_max_unavailable() {
        let max1 = Some(JobBudget::MaxUnavailable(Int(1)));
        let one_leaving = JobStats {
            leaving: 1,
            ..stats(3, 2, 0)
        };
        assert_eq!(allowed_evictions(max1, one_leaving), 0);
    }
}
