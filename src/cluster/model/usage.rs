//! Actual usage, as metrics-server reports it: a short series of samples per node and per pod, so that
//! strategies can average over a window of their choosing instead of reacting to one spike.

use std::{collections::VecDeque, time::Duration};

use jiff::{SignedDuration, Timestamp};

use crate::api::{
    GoDuration,
    usage::{NodeMetrics, PodMetrics},
};
use crate::cluster::{
    model::keys::ObjectKey, model::resources::Resources, store::versioned::Aggregate,
};

/// Samples older than this (relative to the newest) are dropped: no strategy averages over more.
pub(crate) const RETENTION: Duration = Duration::from_secs(3600);
/// At most this many samples per object, whatever their spacing.
pub(crate) const MAX_SAMPLES: usize = 120;
/// The measurement window assumed when a sample does not state one (metrics-server's are 10–30 s).
pub(crate) const ASSUMED_SAMPLE_WINDOW: SignedDuration = SignedDuration::from_secs(60);

/// Usage measured over `(from, at]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageSample {
    pub from: Timestamp,
    pub at: Timestamp,
    pub usage: Resources,
}

impl UsageSample {
    /// A sample over the `window` (a Go duration as metrics-server writes it, e.g. `20.043s`) that ends
    /// at `at`; without a readable window, [`ASSUMED_SAMPLE_WINDOW`].
    pub fn new(at: Timestamp, window: Option<&str>, usage: Resources) -> Self {
        let window = window
            .and_then(|w| w.parse::<GoDuration>().ok())
            .map_or(ASSUMED_SAMPLE_WINDOW, GoDuration::to_signed);
        UsageSample {
            from: at.checked_sub(window).unwrap_or(Timestamp::MIN),
            at,
            usage,
        }
    }
}

/// A pod that left a node (deleted, finished, or evicted by tidal), with what it last measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Departure {
    pub at: Timestamp,
    /// The pod's last measured usage; `None` if it was never measured, in which case samples taken
    /// before it left cannot be corrected and are not used.
    pub usage: Option<Resources>,
}

/// A node's or pod's samples, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UsageSeries {
    pub samples: VecDeque<UsageSample>,
    /// Pods that left the node while its samples still count them. Without correcting for them a node
    /// keeps looking busy for a whole averaging window after its pods were moved, and every cycle
    /// would move more.
    pub departures: VecDeque<Departure>,
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
        self.forget_old_departures();
    }

    /// The newest sample's usage: what a pod leaving now takes away.
    pub fn latest(&self) -> Option<&Resources> {
        self.samples.back().map(|s| &s.usage)
    }

    /// Records that a pod left at `at` having last used `usage`.
    pub fn note_departure(&mut self, at: Timestamp, usage: Option<Resources>) {
        let i = self.departures.partition_point(|d| d.at <= at);
        self.departures.insert(i, Departure { at, usage });
        self.forget_old_departures();
    }

    /// Departures before every sample's measurement began no longer matter.
    fn forget_old_departures(&mut self) {
        let oldest = self.samples.iter().map(|s| s.from).min();
        match oldest {
            Some(oldest) => {
                while self.departures.front().is_some_and(|d| d.at <= oldest) {
                    self.departures.pop_front();
                }
            }
            None => self.departures.clear(),
        }
    }

    /// A sample as it would read without the pods that have left since its measurement began
    /// (never below zero); `None` when one of them was never measured.
    fn corrected(&self, sample: &UsageSample) -> Option<Resources> {
        let mut usage = sample.usage.clone();
        for departure in self.departures.iter().filter(|d| d.at > sample.from) {
            let gone = departure.usage.as_ref()?;
            usage.milli_cpu = (usage.milli_cpu - gone.milli_cpu).max(0);
            usage.memory = (usage.memory - gone.memory).max(0);
        }
        Some(usage)
    }

    /// Mean usage of the samples taken in `(now - window, now]`, each without the pods that have left
    /// since, or `None` if there are none: a missing measurement is not zero usage.
    pub fn average(&self, now: Timestamp, window: GoDuration) -> Option<Resources> {
        let from = now
            .checked_sub(window.to_signed())
            .unwrap_or(Timestamp::MIN);
        let mut sum = Resources::default();
        let mut count: i64 = 0;
        for sample in self.samples.iter().filter(|s| s.at > from && s.at <= now) {
            let Some(usage) = self.corrected(sample) else {
                continue;
            };
            sum.add(&usage);
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
pub(crate) fn node_sample(metrics: &NodeMetrics) -> Result<(String, UsageSample), String> {
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
    Ok((name, UsageSample::new(at, metrics.window.as_deref(), usage)))
}

/// A pod's sample from a `PodMetrics` object: the sum of its containers.
pub(crate) fn pod_sample(metrics: &PodMetrics) -> Result<(ObjectKey, UsageSample), String> {
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
    Ok((key, UsageSample::new(at, metrics.window.as_deref(), usage)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn sample(at: &str, cpu: i64) -> UsageSample {
        UsageSample::new(
            ts(at),
            Some("20s"),
            Resources {
                milli_cpu: cpu,
                ..Default::default()
            },
        )
    }

    fn cpu(milli_cpu: i64) -> Option<Resources> {
        Some(Resources {
            milli_cpu,
            ..Default::default()
        })
    }

    #[test]
    fn samples_taken_before_a_pod_left_are_read_without_it() {
        let mut series = UsageSeries::default();
        series.record(sample("2026-01-01T10:00:00Z", 900));
        series.record(sample("2026-01-01T10:01:00Z", 900));
        series.note_departure(ts("2026-01-01T10:01:30Z"), cpu(400));
        let five = GoDuration::from_secs(300);
        let at = |t| series.average(ts(t), five).map(|r| r.milli_cpu);
        assert_eq!(at("2026-01-01T10:01:40Z"), Some(500));
        // Measured partly before the pod left: corrected too (never below zero).
        series.record(sample("2026-01-01T10:01:45Z", 300));
        series.record(sample("2026-01-01T10:02:00Z", 500));
        let at = |t| series.average(ts(t), five).map(|r| r.milli_cpu);
        assert_eq!(at("2026-01-01T10:02:05Z"), Some(375)); // 500, 500, 0, 500
        // A pod that was never measured: the samples from before it left cannot be corrected.
        series.note_departure(ts("2026-01-01T10:02:10Z"), None);
        series.record(sample("2026-01-01T10:02:40Z", 200));
        let at = |t| series.average(ts(t), five).map(|r| r.milli_cpu);
        assert_eq!(at("2026-01-01T10:02:45Z"), Some(200));
        assert_eq!(
            at("2026-01-01T10:02:15Z"),
            None,
            "only uncorrectable samples"
        );
    }

    #[test]
    fn departures_are_kept_only_while_a_sample_predates_them() {
        let mut series = UsageSeries::default();
        series.note_departure(ts("2026-01-01T10:00:00Z"), cpu(1));
        assert!(series.departures.is_empty(), "no samples to correct");
        series.record(sample("2026-01-01T10:00:00Z", 900));
        series.note_departure(ts("2026-01-01T10:00:10Z"), cpu(100));
        assert_eq!(series.departures.len(), 1);
        series.record(sample("2026-01-01T11:00:30Z", 900));
        assert!(series.departures.is_empty(), "the old sample aged out");
    }

    #[test]
    fn the_sample_window_comes_from_metrics_server_or_is_assumed() {
        let at = ts("2026-01-01T10:00:00Z");
        let stated = UsageSample::new(at, Some("20.5s"), Resources::default());
        assert_eq!(stated.from, ts("2026-01-01T09:59:39.5Z"));
        for unreadable in [None, Some("soon")] {
            let assumed = UsageSample::new(at, unreadable, Resources::default());
            assert_eq!(assumed.from, ts("2026-01-01T09:59:00Z"));
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

/// What a Prometheus instant query answered for the nodes (`usage.source: Prometheus`): each node's
/// value in [0, 1], by the sample's `instance` label, or why there is no usable answer.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricSample {
    pub at: Timestamp,
    pub values: Result<std::collections::BTreeMap<String, f64>, String>,
}
