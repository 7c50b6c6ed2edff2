//! Watches that feed the shared cache: one kube-runtime watcher per kind, started together, each
//! marking its kind synced only when a complete list has been applied. A watcher's relist (after a
//! 410 Gone or a dropped stream) also removes what vanished meanwhile, and holds planning until done.

pub mod usage;

use std::collections::HashSet;

use futures::{StreamExt, future::BoxFuture};
use k8s_openapi::api::{
    core::v1::{Namespace, Node, Pod},
    policy::v1::PodDisruptionBudget,
};
use kube::{
    Api, Client,
    api::ListParams,
    runtime::{WatchStreamExt, watcher},
};
use tracing::{debug, info, warn};

use crate::{
    api::{DeschedulingPolicy, PodGroup, RevocableZone},
    cluster::{Ingest, ObjectKey, ObjectKind, SharedCache},
};

/// What a set of watches should cover.
#[derive(Clone, Debug)]
pub struct WatchPlan {
    pub kinds: Vec<ObjectKind>,
}

impl WatchPlan {
    /// Everything the controller reads.
    pub fn controller() -> Self {
        WatchPlan {
            kinds: ObjectKind::ALL.to_vec(),
        }
    }
}

/// Watch errors and events, for metrics and logs.
pub trait WatchObserver: Send + Sync + 'static {
    fn watch_error(&self, _kind: ObjectKind) {}
    fn relisted(&self, _kind: ObjectKind, _removed: usize) {}
    /// A metrics.k8s.io poll ended: `ok`, `unavailable` (not served) or `error`.
    fn usage_polled(&self, _result: &'static str) {}
}

/// An observer that only logs.
pub struct LogOnly;
impl WatchObserver for LogOnly {}

/// Starts a watcher per kind of `plan` and returns their futures (run them with `tokio::spawn` or a
/// `JoinSet`; they never finish on their own). PodGroups are watched only if Volcano's CRD is served:
/// otherwise the kind is marked synced and empty, so that clusters without Volcano work unchanged.
pub async fn start(
    client: Client,
    shared: SharedCache,
    plan: &WatchPlan,
    observer: std::sync::Arc<dyn WatchObserver>,
) -> Vec<BoxFuture<'static, ()>> {
    let mut tasks: Vec<BoxFuture<'static, ()>> = Vec::new();
    for kind in &plan.kinds {
        let (client, shared, observer) = (client.clone(), shared.clone(), observer.clone());
        let task: BoxFuture<'static, ()> = match kind {
            ObjectKind::Node => Box::pin(run::<Node>(Api::all(client), shared, observer)),
            ObjectKind::Pod => Box::pin(run::<Pod>(Api::all(client), shared, observer)),
            ObjectKind::Namespace => Box::pin(run::<Namespace>(Api::all(client), shared, observer)),
            ObjectKind::PodDisruptionBudget => Box::pin(run::<PodDisruptionBudget>(
                Api::all(client),
                shared,
                observer,
            )),
            ObjectKind::RevocableZone => {
                Box::pin(run::<RevocableZone>(Api::all(client), shared, observer))
            }
            ObjectKind::DeschedulingPolicy => Box::pin(run::<DeschedulingPolicy>(
                Api::all(client),
                shared,
                observer,
            )),
            ObjectKind::PodGroup => {
                let api: Api<PodGroup> = Api::all(client);
                if podgroups_served(&api).await {
                    Box::pin(run::<PodGroup>(api, shared, observer))
                } else {
                    info!(
                        "PodGroup CRD (scheduling.volcano.sh/v1beta1) not served: not watching PodGroups"
                    );
                    shared.set_synced(ObjectKind::PodGroup, true);
                    continue;
                }
            }
        };
        tasks.push(task);
    }
    tasks
}

/// Whether the API server serves Volcano PodGroups. A 404 on a one-item list means the CRD is absent;
/// any other failure is treated as present, so that the watcher's own retries deal with it.
async fn podgroups_served(api: &Api<PodGroup>) -> bool {
    match api.list(&ListParams::default().limit(1)).await {
        Ok(_) => true,
        Err(kube::Error::Api(status)) if status.code == 404 => false,
        Err(error) => {
            warn!(%error, "could not check for the PodGroup CRD; watching it anyway");
            true
        }
    }
}

/// Feeds one kind into the cache forever, recovering from errors with the watcher's backoff.
pub async fn run<K: Ingest>(
    api: Api<K>,
    shared: SharedCache,
    observer: std::sync::Arc<dyn WatchObserver>,
) {
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    let mut relist: Option<HashSet<ObjectKey>> = None;
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => apply_event(&shared, &mut relist, event, observer.as_ref()),
            Err(error) => {
                observer.watch_error(K::KIND);
                warn!(kind = K::KIND.as_str(), %error, "watch error; the watcher will retry");
            }
        }
    }
}

/// Applies one watcher event to the cache. Public so that tests can drive the relist logic directly.
pub fn apply_event<K: Ingest>(
    shared: &SharedCache,
    relist: &mut Option<HashSet<ObjectKey>>,
    event: watcher::Event<K>,
    observer: &dyn WatchObserver,
) {
    let config_kind = matches!(
        K::KIND,
        ObjectKind::RevocableZone | ObjectKind::DeschedulingPolicy
    );
    match event {
        watcher::Event::Init => {
            // Until this list completes, the cache may miss objects: hold planning.
            shared.set_synced(K::KIND, false);
            *relist = Some(HashSet::new());
        }
        watcher::Event::InitApply(object) => {
            if let Some(seen) = relist.as_mut() {
                seen.insert(object.key());
            }
            ingest(shared, &object);
        }
        watcher::Event::InitDone => {
            let seen = relist.take().unwrap_or_default();
            let removed = {
                let mut cache = shared.write();
                let gone: Vec<ObjectKey> = cache
                    .object_keys(K::KIND)
                    .into_iter()
                    .filter(|key| !seen.contains(key))
                    .collect();
                for key in &gone {
                    cache.delete_object(K::KIND, key);
                }
                gone.len()
            };
            observer.relisted(K::KIND, removed);
            info!(
                kind = K::KIND.as_str(),
                objects = seen.len(),
                removed,
                "list complete"
            );
            shared.set_synced(K::KIND, true);
            if config_kind {
                shared.notify_config_change();
            }
        }
        watcher::Event::Apply(object) => {
            ingest(shared, &object);
            if config_kind {
                shared.notify_config_change();
            }
        }
        watcher::Event::Delete(object) => {
            debug!(kind = K::KIND.as_str(), key = %object.key(), "deleted");
            shared.write().delete_object(K::KIND, &object.key());
            if config_kind {
                shared.notify_config_change();
            }
        }
    }
}

fn ingest<K: Ingest>(shared: &SharedCache, object: &K) {
    if let Err(error) = object.apply_to(&mut shared.write()) {
        warn!(kind = K::KIND.as_str(), %error, "ignoring object");
    }
}
