//! Giving eviction notices: what [`crate::drain::notice::due`] says is due, written to each pod as the
//! `tidal.dev/EvictionNotice` condition (pods/status, the notice itself: its `lastTransitionTime` is
//! what gate `notice` counts from), then the two annotations the workload reads through the downward
//! API, then a Normal Event. Both writes carry the pod's uid, so a namesake created since is never
//! told. A pod whose condition fails to be written is not told: it stays until a later refresh tells
//! it, and the plan counts its notice from then.

use std::collections::{HashMap, HashSet};

use futures::{StreamExt, future::BoxFuture};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
};
use serde_json::json;
use tracing::{info, warn};

use super::{metrics::Metrics, status::StatusWriter};
use crate::{
    api::labels,
    cluster::ObjectKey,
    drain::notice::{Notice, Withdrawal},
};

/// Writes in flight at once.
const CONCURRENCY: usize = 8;
/// Notices written per refresh at most (a refresh comes every few seconds while drains are near):
/// a zone of tens of thousands of pods is told over a few refreshes rather than in one burst.
const PER_REFRESH: usize = 400;
/// A notice written but not yet seen in the cache is not written again for this long.
const SEEN_WITHIN: SignedDuration = SignedDuration::from_secs(60);
const FIELD_MANAGER: &str = "tidal";

/// The notices written whose condition the cache may not show yet.
#[derive(Debug, Default)]
pub(crate) struct Notifier {
    written: HashMap<ObjectKey, Timestamp>,
}

impl Notifier {
    /// Pods told within [`SEEN_WITHIN`]: not told again while the watch catches up.
    pub(crate) fn recently_told(&mut self, now: Timestamp) -> HashSet<ObjectKey> {
        self.written
            .retain(|_, at| now.duration_since(*at) < SEEN_WITHIN);
        self.written.keys().cloned().collect()
    }

    /// Forgets everything: a new leadership term reads the notices from the pods.
    pub(crate) fn reset(&mut self) {
        self.written.clear();
    }

    /// Writes `notices`, at most [`PER_REFRESH`] of them.
    pub(crate) async fn give(
        &mut self,
        client: &Client,
        status: &StatusWriter,
        metrics: &Metrics,
        mut notices: Vec<Notice>,
    ) {
        notices.truncate(PER_REFRESH);
        if notices.is_empty() {
            return;
        }
        let results = write_each(notices, |notice| {
            Box::pin(async move {
                let written = tell(client, &notice).await;
                if written.is_ok() {
                    status
                        .pod_noticed(&notice.pod, notice.uid.as_deref(), notice.message())
                        .await;
                }
                (notice, written)
            })
        })
        .await;
        let mut given: HashMap<&str, usize> = HashMap::new();
        for (notice, result) in &results {
            match result {
                Ok(()) => {
                    self.written.insert(notice.pod.clone(), notice.at);
                    metrics.add_notice(&notice.zone, "given");
                    *given.entry(notice.zone.as_str()).or_default() += 1;
                }
                Err(error) => {
                    metrics.add_notice(&notice.zone, "failed");
                    warn!(pod = %notice.pod, zone = %notice.zone, %error, "eviction notice not written; told again at the next refresh");
                }
            }
        }
        for (zone, pods) in given {
            info!(zone, pods, "pods told of their eviction");
        }
        let forbidden: HashSet<&str> = results
            .iter()
            .filter(|(_, result)| is_forbidden(result))
            .map(|(notice, _)| notice.zone.as_str())
            .collect();
        for zone in forbidden {
            status.warn_notice_forbidden(zone).await;
        }
    }

    /// Takes back `withdrawals`, at most [`PER_REFRESH`] of them.
    pub(crate) async fn withdraw(
        &mut self,
        client: &Client,
        metrics: &Metrics,
        mut withdrawals: Vec<Withdrawal>,
    ) {
        withdrawals.truncate(PER_REFRESH);
        let results = write_each(withdrawals, |withdrawal| {
            Box::pin(async move {
                let written = take_back(client, &withdrawal).await;
                (withdrawal, written)
            })
        })
        .await;
        for (withdrawal, result) in results {
            match result {
                Ok(()) => {
                    metrics.add_notice(&withdrawal.zone, "withdrawn");
                    self.written.insert(withdrawal.pod, withdrawal.at);
                }
                Err(error) => {
                    metrics.add_notice(&withdrawal.zone, "failed");
                    warn!(pod = %withdrawal.pod, zone = %withdrawal.zone, %error, "eviction notice not taken back; tried again at the next refresh");
                }
            }
        }
    }
}

/// Each of `items` written by `write`, [`CONCURRENCY`] at a time, with how it went.
async fn write_each<'a, T>(
    items: Vec<T>,
    write: impl Fn(T) -> BoxFuture<'a, (T, Result<(), kube::Error>)>,
) -> Vec<(T, Result<(), kube::Error>)> {
    futures::stream::iter(items.into_iter().map(write))
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await
}

fn is_forbidden(result: &Result<(), kube::Error>) -> bool {
    matches!(result, Err(kube::Error::Api(response)) if response.code == 403)
}

/// Writes one notice: the condition, then the annotations. The pod counts as told once the
/// condition is written; the annotations only inform the workload.
async fn tell(client: &Client, notice: &Notice) -> Result<(), kube::Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &notice.pod.namespace);
    let uid = notice.uid.as_deref();
    write_condition(
        &pods,
        &notice.pod,
        uid,
        ("True", "ZoneClosing", notice.message()),
        notice.at,
    )
    .await?;
    let annotations = [
        (labels::EVICT_AFTER, Some(notice.evict_after.to_string())),
        (
            labels::EVICT_BY,
            notice.evict_by.map(|close| close.to_string()),
        ),
    ];
    if let Err(error) = write_annotations(&pods, &notice.pod, uid, annotations).await {
        warn!(pod = %notice.pod, %error, "eviction notice given, but its annotations were not written");
    }
    Ok(())
}

fn write_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    }
}

/// The pod's uid as a patch's metadata: the write then fails on a namesake created since (a uid is
/// immutable).
fn metadata_of(uid: Option<&str>) -> serde_json::Value {
    match uid {
        Some(uid) => json!({ "uid": uid }),
        None => json!({}),
    }
}

/// Writes the notice condition, `True` for a notice and `False` for one taken back.
async fn write_condition(
    pods: &Api<Pod>,
    pod: &ObjectKey,
    uid: Option<&str>,
    (status, reason, message): (&str, &str, String),
    at: jiff::Timestamp,
) -> Result<(), kube::Error> {
    let condition = json!({
        "metadata": metadata_of(uid),
        "status": {"conditions": [{
            "type": labels::EVICTION_NOTICE,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": at.to_string(),
        }]},
    });
    pods.patch_status(&pod.name, &write_params(), &Patch::Strategic(condition))
        .await
        .map(drop)
}

/// Writes the notice's annotations (`None`: removes them).
async fn write_annotations(
    pods: &Api<Pod>,
    pod: &ObjectKey,
    uid: Option<&str>,
    values: [(&str, Option<String>); 2],
) -> Result<(), kube::Error> {
    let mut metadata = metadata_of(uid);
    metadata["annotations"] = values
        .into_iter()
        .map(|(key, value)| {
            (
                key.to_owned(),
                value.map_or(serde_json::Value::Null, Into::into),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into();
    pods.patch(
        &pod.name,
        &write_params(),
        &Patch::Merge(json!({ "metadata": metadata })),
    )
    .await
    .map(drop)
}

/// Takes one notice back: the condition `False`, then the annotations removed.
async fn take_back(client: &Client, withdrawal: &Withdrawal) -> Result<(), kube::Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), &withdrawal.pod.namespace);
    let uid = withdrawal.uid.as_deref();
    let message = format!(
        "zone {} opened again: the eviction this pod was told of is off",
        withdrawal.zone
    );
    write_condition(
        &pods,
        &withdrawal.pod,
        uid,
        ("False", "ZoneOpen", message),
        withdrawal.at,
    )
    .await?;
    let removed = [(labels::EVICT_AFTER, None), (labels::EVICT_BY, None)];
    if let Err(error) = write_annotations(&pods, &withdrawal.pod, uid, removed).await {
        warn!(pod = %withdrawal.pod, %error, "eviction notice taken back, but its annotations were not removed");
    }
    Ok(())
}
