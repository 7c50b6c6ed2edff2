//! Job disruption budgets: how many pods of a job may be unavailable at once.

use std::{fmt, str::FromStr};

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Serialize;

use super::setting::{Setting, Sources};
use crate::api::{labels, policy::JobBudgetSpec};

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
                        Setting::Invalid(Box::new(super::setting::InvalidValue {
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

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
}
