//! One-shot use of the live machinery, for `tidal report` against a cluster: list everything through
//! the same watches `tidal run` uses, and optionally check each planned eviction with a server-side
//! dry run so that the report reflects real PodDisruptionBudgets.

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

/// A cache filled by one complete list of every kind tidal reads.
pub(crate) async fn live_cache(client: Client, timeout: Duration) -> anyhow::Result<SharedCache> {
    let shared = SharedCache::new(&ObjectKind::ALL);
    let mut tasks = JoinSet::new();
    for task in watch::start(
        client,
        shared.clone(),
        &WatchPlan::controller(),
        Arc::new(LogOnly),
    )
    .await
    {
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
