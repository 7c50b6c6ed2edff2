//! Actual usage, as metrics-server reports it: a short series of samples per node and per pod, so that
//! strategies can average over a window of their choosing instead of reacting to one spike.

use std::{collections::VecDeque, time::Duration};

use jiff::{SignedDuration, Timestamp};

use super::{keys::ObjectKey, resources::Resources, versioned::Aggregate};
use crate::api::{
    GoDuration,
    metrics::{NodeMetrics, PodMetrics},
};

/// Samples older than this (relative to the newest) are dropped: no strategy averages over more.
pub const RETENTION: Duration = Duration::from_secs(3600);
/// At most this many samples per object, whatever their spacing.
pub const MAX_SAMPLES: usize = 120;

/// Usage measured over the window that ends at `at`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageSample {
    pub at: Timestamp,
    pub usage: Resources,
}

/// A node's or pod's samples, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UsageSeries {
    pub samples: VecDeque<UsageSample>,
}

impl Aggregate for UsageSeries {
    fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}

impl UsageSeries {
    /// Adds a sample, keeping the series sorted, free of duplicates and within [`RETENTION`].
    pub fn record(&mut self, sample: UsageSample) {
        match self.samples.iter().rposition(|s| s.at <= sample.at) {
            Some(i) if self.samples[i].at == sample.at => self.samples[i] = sample,
            Some(i) => self.samples.insert(i + 1, sample),
            None => self.samples.push_front(sample),
        }
        if let Some(newest) = self.samples.back().map(|s| s.at) {
            let retention = SignedDuration::try_from(RETENTION).unwrap_or(SignedDuration::MAX);
            let oldest_kept = newest.checked_sub(retention).unwrap_or(Timestamp::MIN);
            while self.samples.front().is_some_and(|s| s.at < oldest_kept) {
                self.samples.pop_front();
            }
        }
        while self.samples.len() > MAX_SAMPLES {
            self.samples.pop_front();
        }
    }

    /// Mean usage of the samples taken in `(now - window, now]`, or `None` if there are none: a missing
    /// measurement is not zero usage.
    pub fn average(&self, now: Timestamp, window: GoDuration) -> Option<Resources> {
        let from = now
            .checked_sub(window.to_signed())
            .unwrap_or(Timestamp::MIN);
        let mut sum = Resources::default();
        let mut count: i64 = 0;
        for sample in self.samples.iter().filter(|s| s.at > from && s.at <= now) {
            sum.add(&sample.usage);
            count += 1;
        }
        if count == 0 {
            return None;
        }
        let mut mean = Resources::default();
        for name in sum.names().map(str::to_owned).collect::<Vec<_>>() {
            // Round up, as quantities are: usage is never under-reported.
            let total = sum.get(&name);
            let rounded_up = total / count + i64::from(total % count > 0);
            mean.set(&name, rounded_up);
        }
        Some(mean)
    }
}

/// A node's sample from a `NodeMetrics` object. Errors name the field that could not be read.
pub fn node_sample(metrics: &NodeMetrics) -> Result<(String, UsageSample), String> {
    let name = metrics
        .metadata
        .name
        .clone()
        .ok_or("NodeMetrics without metadata.name")?;
    let at = metrics
        .timestamp
        .as_ref()
        .map(|t| t.0)
        .ok_or_else(|| format!("NodeMetrics {name}: no timestamp"))?;
    let usage = Resources::from_list(&metrics.usage)
        .map_err(|(resource, e)| format!("NodeMetrics {name}: usage.{resource}: {e}"))?;
    Ok((name, UsageSample { at, usage }))
}

/// A pod's sample from a `PodMetrics` object: the sum of its containers.
pub fn pod_sample(metrics: &PodMetrics) -> Result<(ObjectKey, UsageSample), String> {
    let key = ObjectKey::new(
        metrics.metadata.namespace.clone().unwrap_or_default(),
        metrics
            .metadata
            .name
            .clone()
            .ok_or("PodMetrics without metadata.name")?,
    );
    let at = metrics
        .timestamp
        .as_ref()
        .map(|t| t.0)
        .ok_or_else(|| format!("PodMetrics {key}: no timestamp"))?;
    let mut usage = Resources::default();
    for container in &metrics.containers {
        let container_usage = Resources::from_list(&container.usage).map_err(|(resource, e)| {
            format!(
                "PodMetrics {key}: containers[{}].usage.{resource}: {e}",
                container.name
            )
        })?;
        usage.add(&container_usage);
    }
    Ok((key, UsageSample { at, usage }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn sample(at: &str, cpu: i64) -> UsageSample {
        UsageSample {
            at: ts(at),
            usage: Resources {
                milli_cpu: cpu,
                ..Default::default()
            },
        }
    }

    #[test]
    fn averages_only_the_window_and_rounds_up() {
        let mut series = UsageSeries::default();
        series.record(sample("2026-01-01T10:00:00Z", 100));
        series.record(sample("2026-01-01T10:04:00Z", 200));
        series.record(sample("2026-01-01T10:02:00Z", 301));
        series.record(sample("2026-01-01T10:02:00Z", 300)); // replaces, does not duplicate
        assert_eq!(series.samples.len(), 3);
        let now = ts("2026-01-01T10:04:30Z");
        let five = GoDuration::from_secs(300);
        assert_eq!(series.average(now, five).unwrap().milli_cpu, 200);
        let three = GoDuration::from_secs(180);
        assert_eq!(series.average(now, three).unwrap().milli_cpu, 250);
        let later = ts("2026-01-01T11:00:00Z");
        assert_eq!(
            series.average(later, five),
            None,
            "stale samples are not usage"
        );
        let earlier = ts("2026-01-01T09:00:00Z");
        assert_eq!(
            series.average(earlier, five),
            None,
            "future samples are ignored"
        );
    }

    #[test]
    fn drops_samples_past_retention() {
        let mut series = UsageSeries::default();
        series.record(sample("2026-01-01T08:00:00Z", 1));
        series.record(sample("2026-01-01T10:00:00Z", 2));
        assert_eq!(series.samples.len(), 1);
    }
}
