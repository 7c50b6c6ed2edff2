//! Measured usage for the utilization strategies' `usage.source: Metrics`. metrics-server has no
//! watch, so it is polled; only while some policy asks for measured usage, so that clusters which do
//! not use it pay nothing. Samples go into the shared cache, which keeps a short series per node and
//! pod for the strategies to average over their window.

use std::{sync::Arc, time::Duration};

use kube::{Api, Client, api::ListParams};
use tracing::{debug, info, warn};

use super::WatchObserver;
use crate::{
    api::usage::{NodeMetrics, PodMetrics},
    cluster::{
        SharedCache,
        model::usage::{UsageSample, node_sample, pod_sample},
    },
};

/// What one poll brought back.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct PollCounts {
    pub nodes: usize,
    pub pods: usize,
    /// Items that could not be read (no name, no timestamp, a bad quantity): left out, never guessed.
    pub unreadable: usize,
}

#[derive(Debug)]
pub(crate) enum PollError {
    /// `metrics.k8s.io` is not served: metrics-server is not installed (or not yet ready).
    NotServed,
    Failed(kube::Error),
}

impl From<kube::Error> for PollError {
    fn from(error: kube::Error) -> Self {
        match error {
            // 404: the group is not registered; 503: the APIService exists but metrics-server is down.
            kube::Error::Api(status) if status.code == 404 || status.code == 503 => {
                PollError::NotServed
            }
            error => PollError::Failed(error),
        }
    }
}

/// Whether any policy in the cache reads measured usage.
pub(crate) fn wanted(shared: &SharedCache) -> bool {
    shared
        .read()
        .policies()
        .values()
        .any(|policy| policy.spec.strategies.uses_measured_usage())
}

/// Lists NodeMetrics and PodMetrics once and records them in the cache.
pub(crate) async fn poll_once(
    client: &Client,
    shared: &SharedCache,
) -> Result<PollCounts, PollError> {
    let nodes = Api::<NodeMetrics>::all(client.clone())
        .list(&ListParams::default())
        .await?;
    let pods = Api::<PodMetrics>::all(client.clone())
        .list(&ListParams::default())
        .await?;
    let mut counts = PollCounts::default();
    // Converted before taking the write lock, so planning is held up only by the inserts.
    let node_samples: Vec<(String, UsageSample)> = nodes
        .items
        .iter()
        .filter_map(|item| readable(node_sample(item), &mut counts.unreadable))
        .collect();
    let pod_samples: Vec<_> = pods
        .items
        .iter()
        .filter_map(|item| readable(pod_sample(item), &mut counts.unreadable))
        .collect();
    counts.nodes = node_samples.len();
    counts.pods = pod_samples.len();
    let mut cache = shared.write();
    for (node, sample) in node_samples {
        cache.record_node_usage(&node, sample);
    }
    for (pod, sample) in pod_samples {
        cache.record_pod_usage(&pod, sample);
    }
    Ok(counts)
}

fn readable<T>(item: Result<T, String>, unreadable: &mut usize) -> Option<T> {
    item.map_err(|error| {
        debug!(%error, "metrics item left out");
        *unreadable += 1;
    })
    .ok()
}

/// Polls every `interval` while some policy wants measured usage; never returns. Problems are logged
/// once when they start (not at every poll) and counted through `observer`.
pub(crate) async fn poll(
    client: Client,
    shared: SharedCache,
    interval: Duration,
    observer: Arc<dyn WatchObserver>,
) {
    let mut last: Option<&'static str> = None;
    loop {
        if wanted(&shared) {
            let result = match poll_once(&client, &shared).await {
                Ok(counts) => {
                    if counts.unreadable > 0 {
                        warn!(
                            unreadable = counts.unreadable,
                            "some NodeMetrics/PodMetrics could not be read and were left out"
                        );
                    }
                    if last != Some("ok") {
                        info!(
                            nodes = counts.nodes,
                            pods = counts.pods,
                            "reading measured usage from metrics.k8s.io"
                        );
                    }
                    "ok"
                }
                Err(PollError::NotServed) => {
                    if last != Some("unavailable") {
                        warn!(
                            "metrics.k8s.io is not served (is metrics-server installed and ready?): \
                             utilization strategies with usage.source Metrics see no measured usage"
                        );
                    }
                    "unavailable"
                }
                Err(PollError::Failed(error)) => {
                    if last != Some("error") {
                        warn!(%error, "reading metrics.k8s.io failed; retrying at the next poll");
                    }
                    "error"
                }
            };
            observer.usage_polled(result);
            last = Some(result);
        }
        tokio::time::sleep(interval).await;
    }
}
