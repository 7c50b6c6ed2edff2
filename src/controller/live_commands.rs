//! The live machinery used once, for the commands that read a cluster and exit (`tidal report`,
//! `tidal timeline`, `tidal explain`): list everything through the same watches `tidal run` uses, and
//! for `tidal report --verify` check each planned eviction with a server-side dry run so that the
//! report reflects real PodDisruptionBudgets.

use std::{sync::Arc, time::Duration};

use kube::Client;
use tokio::{task::JoinSet, time::Instant};

use crate::{
    cluster::{ObjectKind, SharedCache},
    controller::evictor::{Always, EvictionRequest, Evictor, EvictorConfig},
    framework::{SkipReason, Skipped},
    planner::{CyclePlan, Verification},
    runtime::watch::{self, LogOnly, WatchPlan},
};

/// A cache filled by one complete list of every kind tidal reads. Asks each kind for one object
/// first, so that what cannot work says so at once, in one line: tidal's CRDs not installed (said on
/// stderr; the lists go on without them), a kind the server does not serve or the credentials may
/// not list (an error, without waiting for `timeout`).
pub(crate) async fn live_cache(client: Client, timeout: Duration) -> anyhow::Result<SharedCache> {
    let (plan, absent, notes) = preflight(&client, timeout).await?;
    for note in notes {
        crate::runtime::logs::say(&format!("warning: {note}"));
    }
    let shared = SharedCache::new(&ObjectKind::ALL);
    for kind in absent {
        shared.set_synced(kind, true);
    }
    let mut tasks = JoinSet::new();
    for task in watch::start(client, shared.clone(), &plan, Arc::new(LogOnly)).await {
        tasks.spawn(task);
    }
    let synced = tokio::time::timeout(timeout, shared.wait_synced()).await;
    tasks.abort_all();
    if synced.is_err() {
        let waiting: Vec<&str> = shared.unsynced().iter().map(|k| k.as_str()).collect();
        anyhow::bail!(
            "the cluster did not answer the lists within {timeout:?} (still waiting for: {})",
            waiting.join(", ")
        );
    }
    Ok(shared)
}

/// What one-item lists of each kind say: the kinds to watch, the ones to count as empty, and notes.
async fn preflight(
    client: &Client,
    timeout: Duration,
) -> anyhow::Result<(WatchPlan, Vec<ObjectKind>, Vec<String>)> {
    let probes = ObjectKind::ALL
        .into_iter()
        // PodGroups without their CRD are Volcano's absence, which the watch handles.
        .filter(|kind| *kind != ObjectKind::PodGroup)
        .map(|kind| async move {
            let answer = tokio::time::timeout(timeout, probe(client, kind)).await;
            (kind, answer.unwrap_or(Probe::Unclear))
        });
    let answers = futures::future::join_all(probes).await;
    let mut absent = Vec::new();
    let mut missing_crds = Vec::new();
    let mut notes = Vec::new();
    for (kind, answer) in answers {
        let (group, resource) = kind.api_resource();
        let name = if group.is_empty() {
            resource.to_owned()
        } else {
            format!("{resource}.{group}")
        };
        match (answer, kind) {
            (Probe::Served | Probe::Unclear, _) => {}
            (Probe::NotFound, ObjectKind::RevocableZone | ObjectKind::DeschedulingPolicy) => {
                absent.push(kind);
                missing_crds.push(name);
            }
            (Probe::Forbidden(_), ObjectKind::PersistentVolumeClaim) => {
                absent.push(kind);
                notes.push(format!(
                    "may not list {name}: claims are read as unknown, so protectedStorageClasses \
                     protects every pod with a claim"
                ));
            }
            (Probe::NotFound, _) => anyhow::bail!(
                "the API server does not serve {name} (404 Not Found): is it a Kubernetes API \
                 server, and the cluster --kubeconfig and --context name?"
            ),
            (Probe::Forbidden(message), _) => anyhow::bail!(
                "the credentials may not list {name} (403 Forbidden: {message}); tidal reads \
                 with get, list and watch on it"
            ),
            (Probe::Unauthorized, _) => anyhow::bail!(
                "the API server refused the credentials (401 Unauthorized): check --kubeconfig \
                 and --context, or log in again"
            ),
        }
    }
    if !missing_crds.is_empty() {
        notes.insert(
            0,
            format!(
                "tidal's CRDs are not installed ({} not served): install them with `tidal crds | \
                 kubectl apply -f -`; until then there are no DeschedulingPolicies or \
                 RevocableZones to read, and the built-in dry-run TDM policy stands in",
                missing_crds.join(", ")
            ),
        );
    }
    let plan = WatchPlan {
        kinds: ObjectKind::ALL
            .into_iter()
            .filter(|k| !absent.contains(k))
            .collect(),
    };
    Ok((plan, absent, notes))
}

/// What a one-item list of a kind answered.
enum Probe {
    Served,
    NotFound,
    Unauthorized,
    Forbidden(String),
    /// Anything else (5xx, no answer): the watches retry and say.
    Unclear,
}

async fn probe(client: &Client, kind: ObjectKind) -> Probe {
    use k8s_openapi::api::{
        core::v1::{Namespace, Node, PersistentVolumeClaim, Pod},
        policy::v1::PodDisruptionBudget,
    };
    use kube::Resource;
    let path = match kind {
        ObjectKind::Node => Node::url_path(&(), None),
        ObjectKind::Pod => Pod::url_path(&(), None),
        ObjectKind::Namespace => Namespace::url_path(&(), None),
        ObjectKind::PodDisruptionBudget => PodDisruptionBudget::url_path(&(), None),
        ObjectKind::PersistentVolumeClaim => PersistentVolumeClaim::url_path(&(), None),
        ObjectKind::RevocableZone => crate::api::RevocableZone::url_path(&(), None),
        ObjectKind::DeschedulingPolicy => crate::api::DeschedulingPolicy::url_path(&(), None),
        ObjectKind::PodGroup => crate::api::PodGroup::url_path(&(), None),
    };
    let request = kube::core::Request::new(path)
        .list(&kube::api::ListParams::default().limit(1))
        .map(|r| r.map(|_| Vec::new()));
    let Ok(request) = request else {
        return Probe::Unclear;
    };
    match client.request_text(request).await {
        Ok(_) => Probe::Served,
        Err(kube::Error::Api(status)) => match status.code {
            404 => Probe::NotFound,
            401 => Probe::Unauthorized,
            403 => Probe::Forbidden(status.message.clone()),
            _ => Probe::Unclear,
        },
        Err(_) => Probe::Unclear,
    }
}

/// Sends a dry-run eviction for every planned eviction; those the API server refuses (a PDB's 429,
/// a pod already gone, ...) move to the skipped list under the gate that names why (`pdb`, `gone`, ...).
/// Those not sent within `timeout` stay planned and are returned as unverified: not being checked
/// is not a refusal. Each check is independent: two pods under one budget that allows one
/// disruption are both accepted here, while a real cycle would get a 429 for the second.
pub(crate) async fn verify(
    client: Client,
    cycle: &mut CyclePlan,
    config: EvictorConfig,
    timeout: Duration,
) -> Verification {
    let mut verification = Verification::default();
    let evictor = Evictor::new(client, config);
    let deadline = Instant::now() + timeout;
    for plan in &mut cycle.plans {
        let requests: Vec<EvictionRequest> = plan
            .evictions
            .iter()
            .map(|e| EvictionRequest::of(&e.candidate.pod, true))
            .collect();
        let outcomes = evictor
            .evict_all(&requests, deadline, &Always, &|_, _| {})
            .await;
        let mut kept = Vec::with_capacity(plan.evictions.len());
        let verified = verification
            .policies
            .entry(plan.policy.clone())
            .or_default();
        for (eviction, outcome) in std::mem::take(&mut plan.evictions)
            .into_iter()
            .zip(outcomes)
        {
            match outcome.refusal() {
                None => {
                    verified.accepted += 1;
                    kept.push(eviction);
                }
                Some(refusal) if refusal.reason == SkipReason::Abandoned => {
                    verified
                        .unverified
                        .insert(eviction.candidate.pod.key.clone());
                    kept.push(eviction);
                }
                Some(refusal) => plan.add_skip(Skipped {
                    candidate: eviction.candidate,
                    reason: refusal.reason,
                    detail: refusal.detail,
                }),
            }
        }
        plan.evictions = kept;
    }
    verification
}
