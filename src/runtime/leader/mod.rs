//! Leader election on a `coordination.k8s.io/v1` Lease, so that of several replicas exactly one
//! evicts and writes status.
//!
//! Writes use the Lease's `resourceVersion` (optimistic concurrency): of two replicas claiming a free
//! lease, the API server lets one write and answers 409 to the other. A leader counts itself leader only
//! until `renew_deadline` after the start of its last successful renewal, while others wait the full
//! lease duration after they last saw the record change, so the old leader has stopped before a new one
//! can start. The check is local and cheap, made right before every eviction.
//!
//! We do not use the kube-lease-manager crate: it arbitrates with server-side-apply field ownership and
//! compares the holder's wall clock (`renewTime`) with the local one, and it exposes no validity instant
//! to check before each eviction. The rules here are client-go's, kept pure in [`decide`].

pub(crate) mod decide;

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::{
    Api, Client,
    api::{ObjectMeta, PostParams},
};
use tokio::{sync::watch, task::JoinHandle, time::Instant};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use decide::{Decision, Observed, claimed, decide, released};

#[derive(Clone, Debug)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    pub identity: String,
    /// How long others wait after the record last changed before taking over.
    pub lease_duration: Duration,
    /// How long the leader keeps acting without a successful renewal. Shorter than `lease_duration`.
    pub renew_deadline: Duration,
    /// Time between two attempts to acquire or renew.
    pub retry_period: Duration,
}

impl LeaseConfig {
    pub fn new(namespace: String, name: String, identity: String) -> Self {
        LeaseConfig {
            namespace,
            name,
            identity,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LeaderState {
    Follower,
    /// Leader as long as the monotonic clock is before `until`.
    Leader {
        until: Instant,
    },
}

/// A view of this replica's leadership, cheap to clone and to query.
#[derive(Clone, Debug)]
pub struct LeaderHandle {
    rx: watch::Receiver<LeaderState>,
}

impl LeaderHandle {
    /// Leadership without election (`--leader-elect=false`): always leader.
    pub fn always() -> Self {
        let far = Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600);
        let (_tx, rx) = watch::channel(LeaderState::Leader { until: far });
        LeaderHandle { rx }
    }

    /// Never leader: a replica that lost (or never had) the lease, for tests of what followers do.
    pub fn never() -> Self {
        let (_tx, rx) = watch::channel(LeaderState::Follower);
        LeaderHandle { rx }
    }

    pub fn is_leader(&self) -> bool {
        match *self.rx.borrow() {
            LeaderState::Leader { until } => Instant::now() < until,
            LeaderState::Follower => false,
        }
    }

    /// Resolves once this replica leads (at once if it does now).
    pub async fn acquired(&mut self) {
        loop {
            if self.is_leader() {
                return;
            }
            if self.rx.changed().await.is_err() {
                // The election task ended (shutdown): never leader again.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Resolves once this replica no longer leads: the lease was lost or not renewed in time.
    pub async fn lost(&mut self) {
        loop {
            let state = *self.rx.borrow_and_update();
            match state {
                LeaderState::Follower => return,
                LeaderState::Leader { until } => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(until) => return,
                        changed = self.rx.changed() => if changed.is_err() {
                            // No more renewals: leadership ends when the current term does.
                            tokio::time::sleep_until(until).await;
                            return;
                        },
                    }
                }
            }
        }
    }
}

/// Starts the election loop. On `shutdown` it stops acting at once and hands the lease back.
pub(crate) fn spawn(
    client: Client,
    config: LeaseConfig,
    shutdown: CancellationToken,
) -> (LeaderHandle, JoinHandle<()>) {
    let (tx, rx) = watch::channel(LeaderState::Follower);
    let api: Api<Lease> = Api::namespaced(client, &config.namespace);
    let task = tokio::spawn(elect(api, config, tx, shutdown));
    (LeaderHandle { rx }, task)
}

async fn elect(
    api: Api<Lease>,
    config: LeaseConfig,
    tx: watch::Sender<LeaderState>,
    shutdown: CancellationToken,
) {
    let mut observed: Option<Observed> = None;
    let mut leading = false;
    loop {
        let started = Instant::now();
        let attempt = tokio::select! {
            attempt = tokio::time::timeout(config.renew_deadline, try_claim(&api, &config, &mut observed)) => attempt,
            () = shutdown.cancelled() => break,
        };
        match attempt {
            Ok(Ok(true)) => {
                if !leading {
                    info!(identity = %config.identity, lease = %config.name, "acquired the lease: leading");
                }
                leading = true;
                tx.send_replace(LeaderState::Leader {
                    until: started + config.renew_deadline,
                });
            }
            Ok(Ok(false)) => {
                if leading {
                    warn!(identity = %config.identity, "lost the lease: no longer leading");
                }
                leading = false;
                tx.send_replace(LeaderState::Follower);
            }
            // Keep the current term: it ends by itself at `until` unless a renewal succeeds first.
            Ok(Err(error)) => warn!(%error, "lease update failed"),
            Err(_) => warn!("lease update timed out"),
        }
        tokio::select! {
            () = tokio::time::sleep(config.retry_period) => {}
            () = shutdown.cancelled() => break,
        }
    }
    tx.send_replace(LeaderState::Follower);
    // Not only when `leading`: a claim abandoned at shutdown, or a renewal answered 409 by a server
    // that wrote an earlier one, may still have left our name on the lease. `release` reads first.
    match tokio::time::timeout(config.renew_deadline, release(&api, &config)).await {
        Ok(Ok(true)) => info!(lease = %config.name, "released the lease"),
        Ok(Ok(false)) => {}
        Ok(Err(error)) => warn!(%error, "could not release the lease; it expires by itself"),
        Err(_) => warn!("releasing the lease timed out; it expires by itself"),
    }
}

/// One acquire-or-renew attempt. `Ok(false)`: someone else holds the lease, or won the race.
async fn try_claim(
    api: &Api<Lease>,
    config: &LeaseConfig,
    observed: &mut Option<Observed>,
) -> Result<bool, kube::Error> {
    let Some(mut lease) = api.get_opt(&config.name).await? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(config.name.clone()),
                namespace: Some(config.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(claimed(
                &config.identity,
                &LeaseSpec::default(),
                config.lease_duration,
                Timestamp::now(),
            )),
        };
        return match api.create(&PostParams::default(), &lease).await {
            Ok(created) => {
                *observed = Some(Observed::update(
                    None,
                    created.spec.unwrap_or_default(),
                    Instant::now(),
                ));
                Ok(true)
            }
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(error) => Err(error),
        };
    };
    let spec = lease.spec.clone().unwrap_or_default();
    let now = Instant::now();
    let seen = Observed::update(observed.take(), spec.clone(), now);
    let decision = decide(&config.identity, &seen, now);
    *observed = Some(seen);
    if decision == Decision::Wait {
        return Ok(false);
    }
    // `replace` sends the resourceVersion we read: a concurrent writer makes this a 409.
    lease.spec = Some(claimed(
        &config.identity,
        &spec,
        config.lease_duration,
        Timestamp::now(),
    ));
    match api
        .replace(&config.name, &PostParams::default(), &lease)
        .await
    {
        Ok(written) => {
            *observed = Some(Observed::update(
                None,
                written.spec.unwrap_or_default(),
                Instant::now(),
            ));
            Ok(true)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
        Err(error) => Err(error),
    }
}

/// Hands the lease back if it names us. True when it did. A 409 means a write of ours abandoned at
/// shutdown (a renewal in flight) landed between our read and our write: read again and retry.
async fn release(api: &Api<Lease>, config: &LeaseConfig) -> Result<bool, kube::Error> {
    loop {
        let Some(mut lease) = api.get_opt(&config.name).await? else {
            return Ok(false);
        };
        let spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(config.identity.as_str()) {
            return Ok(false);
        }
        lease.spec = Some(released(&spec, Timestamp::now()));
        match api
            .replace(&config.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(error) => return Err(error),
        }
    }
}

/// Waits until this replica leads and every watched kind has listed: the opening of every leader loop
/// (cycles, taints), so that nothing acts on another replica's term or plans from a half-filled cache.
/// `while_following` runs each time leadership is found missing (a new term starts afresh: another
/// replica may have acted meanwhile). `role` names the loop in logs. False once `shutdown` is cancelled.
pub async fn until_leading_and_synced(
    role: &'static str,
    leader: &LeaderHandle,
    shared: &crate::cluster::SharedCache,
    shutdown: &CancellationToken,
    mut while_following: impl FnMut(),
) -> bool {
    let mut leadership = leader.clone();
    loop {
        if shutdown.is_cancelled() {
            return false;
        }
        if !leader.is_leader() {
            while_following();
            tokio::select! {
                () = leadership.acquired() => info!(role, "leading: acting once caches are synced"),
                () = shutdown.cancelled() => return false,
            }
            continue;
        }
        if !shared.is_synced() {
            // Initial lists, or a relist after a 410 / dropped watch: never act on a partial cache.
            let waiting = shared.unsynced();
            info!(role, ?waiting, "waiting for watches to list");
            tokio::select! {
                () = shared.wait_synced() => {}
                () = leadership.lost() => {}
                () = shutdown.cancelled() => return false,
            }
            continue;
        }
        return true;
    }
}

/// `$POD_NAME` (downward API), else `<hostname>_<pid>`: unique per process, so that two local runs on
/// one machine never share an identity (and so a lease).
pub(crate) fn default_identity() -> String {
    if let Ok(name) = std::env::var("POD_NAME")
        && !name.is_empty()
    {
        return name;
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "tidal".to_owned());
    format!("{host}_{}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn leadership_ends_when_the_term_does_without_renewal() {
        let (tx, rx) = watch::channel(LeaderState::Leader {
            until: Instant::now() + Duration::from_secs(10),
        });
        let mut handle = LeaderHandle { rx };
        assert!(handle.is_leader());
        let lost = tokio::spawn({
            let mut handle = handle.clone();
            async move { handle.lost().await }
        });
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert!(handle.is_leader());
        assert!(!lost.is_finished());
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!handle.is_leader());
        lost.await.unwrap();
        tx.send_replace(LeaderState::Follower);
        tokio::time::timeout(Duration::from_secs(1), handle.lost())
            .await
            .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn acquired_waits_for_leadership() {
        let (tx, rx) = watch::channel(LeaderState::Follower);
        let mut handle = LeaderHandle { rx };
        let waiter = tokio::spawn(async move { handle.acquired().await });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        tx.send_replace(LeaderState::Leader {
            until: Instant::now() + Duration::from_secs(5),
        });
        waiter.await.unwrap();
        assert!(LeaderHandle::always().is_leader());
    }
}
