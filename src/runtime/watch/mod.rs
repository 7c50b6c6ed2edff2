//! Watches that feed the shared cache: one kube-runtime watcher per kind, started together, each
//! marking its kind synced only when a complete list has been applied. A watcher's relist (after a
//! 410 Gone or a dropped stream) also removes what vanished meanwhile, and holds planning until done.

mod events;
pub(crate) mod initial_sync;
pub(crate) mod lenient;
pub mod listwatch;
mod relist;
pub(crate) mod usage;

pub use lenient::Lenient;
use relist::Finished;
pub use relist::Relist;

use jiff::Timestamp;
use std::{collections::HashSet, sync::Arc, time::Duration};

use futures::{StreamExt, future::BoxFuture};
use k8s_openapi::api::{
    core::v1::{Namespace, Node, PersistentVolumeClaim, Pod},
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
    /// An object of `kind` could not be read and was left out (see [`Lenient`]).
    fn unreadable(&self, _kind: ObjectKind) {}
    /// A metrics.k8s.io poll ended: `ok`, `unavailable` (not served) or `error`.
    fn usage_polled(&self, _result: &'static str) {}
}

/// An observer that only logs.
pub struct LogOnly;
impl WatchObserver for LogOnly {}

/// Knobs of the watches.
#[derive(Clone, Debug)]
pub struct WatchOptions {
    /// How often to check whether Volcano's PodGroup CRD was installed or removed meanwhile.
    pub crd_recheck: Duration,
    /// The encoding asked for pods, nodes, namespaces and PDBs (default: from `$TIDAL_WIRE`).
    pub wire: listwatch::Wire,
    /// How their initial state is read (default: from `$TIDAL_INITIAL_SYNC`).
    pub initial_sync: listwatch::InitialSync,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            crd_recheck: Duration::from_secs(60),
            wire: listwatch::Wire::from_env(),
            initial_sync: listwatch::InitialSync::from_env(),
        }
    }
}

/// [`start_with`] with default options.
pub async fn start(
    client: Client,
    shared: SharedCache,
    plan: &WatchPlan,
    observer: Arc<dyn WatchObserver>,
) -> Vec<BoxFuture<'static, ()>> {
    start_with(client, shared, plan, observer, &WatchOptions::default()).await
}

/// Starts a watcher per kind of `plan` and returns their futures (run them with `tokio::spawn` or a
/// `JoinSet`; they never finish on their own). PodGroups are watched only while Volcano's CRD is
/// served: without it the kind counts as synced and empty, so that clusters without Volcano work
/// unchanged; the CRD is checked again every `crd_recheck`, and PodGroups are watched from when it
/// appears and forgotten when it goes.
pub async fn start_with(
    client: Client,
    shared: SharedCache,
    plan: &WatchPlan,
    observer: Arc<dyn WatchObserver>,
    options: &WatchOptions,
) -> Vec<BoxFuture<'static, ()>> {
    let mut tasks: Vec<BoxFuture<'static, ()>> = Vec::new();
    let (wire, initial) = (options.wire, options.initial_sync);
    for kind in &plan.kinds {
        let (client, shared, observer) = (client.clone(), shared.clone(), observer.clone());
        let task: BoxFuture<'static, ()> = match kind {
            // The core kinds: protobuf when the server speaks it, watch-list when it does that.
            ObjectKind::Node => Box::pin(listwatch::mirror::<Node>(
                client, shared, observer, wire, initial,
            )),
            ObjectKind::Pod => Box::pin(listwatch::mirror::<Pod>(
                client, shared, observer, wire, initial,
            )),
            ObjectKind::Namespace => Box::pin(listwatch::mirror::<Namespace>(
                client, shared, observer, wire, initial,
            )),
            ObjectKind::PodDisruptionBudget => Box::pin(listwatch::mirror::<PodDisruptionBudget>(
                client, shared, observer, wire, initial,
            )),
            // Few and small: the JSON watcher is enough.
            ObjectKind::PersistentVolumeClaim => Box::pin(mirror::<PersistentVolumeClaim>(
                Api::all(client),
                shared,
                observer,
            )),
            ObjectKind::RevocableZone => {
                Box::pin(mirror::<RevocableZone>(Api::all(client), shared, observer))
            }
            ObjectKind::DeschedulingPolicy => Box::pin(mirror::<DeschedulingPolicy>(
                Api::all(client),
                shared,
                observer,
            )),
            ObjectKind::PodGroup => Box::pin(podgroups(
                Api::all(client),
                shared,
                observer,
                options.crd_recheck,
            )),
        };
        tasks.push(task);
    }
    tasks
}

/// What a check for the PodGroup CRD found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrdProbe {
    Served,
    /// 404: the API server does not know the resource.
    Absent,
    /// Anything else (403, 5xx, timeouts, no connection): no conclusion; ask again.
    Unclear,
}

/// The probe's conclusion from a one-item list: `Ok`, or the HTTP status of the failure (`None` when
/// there was no HTTP answer at all).
pub fn crd_probe(answer: Result<(), Option<u16>>) -> CrdProbe {
    match answer {
        Ok(()) => CrdProbe::Served,
        Err(Some(404)) => CrdProbe::Absent,
        Err(_) => CrdProbe::Unclear,
    }
}

async fn probe(api: &Api<PodGroup>) -> CrdProbe {
    let answer = api.list(&ListParams::default().limit(1)).await;
    if let Err(error) = &answer
        && !matches!(error, kube::Error::Api(status) if status.code == 404)
    {
        warn!(%error, "could not tell whether the PodGroup CRD is served; asking again");
    }
    crd_probe(answer.map(|_| ()).map_err(|error| match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }))
}

/// Delay before asking again after an unclear probe: doubling from 1s, at most 30s.
pub fn probe_backoff(failures: u32) -> Duration {
    Duration::from_secs(1)
        .saturating_mul(2u32.saturating_pow(failures.saturating_sub(1).min(16)))
        .min(Duration::from_secs(30))
}

/// Keeps PodGroups in the cache in step with whether their CRD is served. Until a probe gives a clear
/// answer the kind stays unsynced, so no cycle plans without PodGroups that may exist.
async fn podgroups(
    api: Api<PodGroup>,
    shared: SharedCache,
    observer: Arc<dyn WatchObserver>,
    recheck: Duration,
) {
    let mut failures = 0;
    loop {
        match probe(&api).await {
            CrdProbe::Unclear => {
                failures += 1;
                tokio::time::sleep(probe_backoff(failures)).await;
            }
            CrdProbe::Absent => {
                failures = 0;
                let forgotten = forget_all(&shared, ObjectKind::PodGroup);
                if !shared.is_kind_synced(ObjectKind::PodGroup) || forgotten > 0 {
                    info!(
                        forgotten,
                        "PodGroup CRD (scheduling.volcano.sh/v1beta1) not served: not watching PodGroups"
                    );
                }
                shared.set_synced(ObjectKind::PodGroup, true);
                tokio::time::sleep(recheck).await;
            }
            CrdProbe::Served => {
                failures = 0;
                info!("PodGroup CRD served: watching PodGroups");
                let gone = async {
                    loop {
                        tokio::time::sleep(recheck).await;
                        if probe(&api).await == CrdProbe::Absent {
                            return;
                        }
                    }
                };
                tokio::select! {
                    () = mirror::<PodGroup>(api.clone(), shared.clone(), observer.clone()) => {}
                    () = gone => info!("PodGroup CRD no longer served: stopping the PodGroup watch"),
                }
            }
        }
    }
}

/// Removes every object of `kind` from the cache; returns how many there were.
fn forget_all(shared: &SharedCache, kind: ObjectKind) -> usize {
    let mut cache = shared.write();
    let keys = cache.object_keys(kind);
    let at = Timestamp::now();
    for key in &keys {
        cache.delete_object(kind, key, at);
    }
    keys.len()
}

/// Mirrors one kind into the cache forever (a JSON watcher: the custom resources), recovering from errors with the watcher's backoff. Objects
/// are decoded one by one ([`Lenient`]): one that cannot be read is left out, not the whole list.
pub async fn mirror<K>(api: Api<K>, shared: SharedCache, observer: Arc<dyn WatchObserver>)
where
    K: Ingest + kube::Resource<DynamicType = ()>,
{
    let api: Api<Lenient<K>> = Api::all(api.into_client());
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    let mut relist = Relist::default();
    let mut logged = HashSet::new();
    // The last error said: the watcher retries every few seconds, and the same line every time
    // says nothing new.
    let mut said: Option<String> = None;
    while let Some(event) = stream.next().await {
        match event {
            Ok(event) => {
                if said.take().is_some() {
                    info!(kind = K::KIND.as_str(), "watch answering again");
                }
                apply_lenient_event(&shared, &mut relist, event, observer.as_ref(), &mut logged)
            }
            Err(error) => {
                observer.watch_error(K::KIND);
                let line = describe_error(K::KIND, &error);
                if said.as_deref() != Some(line.as_str()) {
                    warn!(
                        kind = K::KIND.as_str(),
                        "{line}; retrying (said once until it changes)"
                    );
                    said = Some(line);
                }
            }
        }
    }
}

/// A watch error in one line a person reads: what failed and the API server's answer, never the
/// debug form of its status.
pub fn describe_error(kind: ObjectKind, error: &watcher::Error) -> String {
    let (what, inner) = match error {
        watcher::Error::InitialListFailed(e) => ("listing", e),
        watcher::Error::WatchStartFailed(e) => ("starting the watch", e),
        watcher::Error::WatchFailed(e) => ("watching", e),
        watcher::Error::WatchError(status) => {
            return format!(
                "the watch of {} ended: HTTP {} {}",
                kind.as_str(),
                status.code,
                status.message
            );
        }
        watcher::Error::NoResourceVersion => {
            return format!("the list of {} had no resourceVersion", kind.as_str());
        }
    };
    let (group, resource) = kind.api_resource();
    let answer = match inner {
        kube::Error::Api(status) if status.code == 404 && group == "tidal.dev" => format!(
            "HTTP 404: the {resource}.{group} CRD is not installed (`tidal crds | kubectl apply -f -`)"
        ),
        kube::Error::Api(status) => {
            let reason = if status.reason.is_empty() {
                String::new()
            } else {
                format!(" {}", status.reason)
            };
            format!("HTTP {}{reason}: {}", status.code, status.message)
        }
        other => {
            let mut current: &dyn std::error::Error = other;
            while let Some(source) = current.source() {
                current = source;
            }
            current.to_string()
        }
    };
    format!("{what} {} failed: {answer}", kind.as_str())
}

/// [`apply_event`] for objects decoded one by one. An unreadable object is counted and left out:
/// whatever the cache had of it stays (a relist does not remove it), its deletion still applies, and
/// it is logged once (in `logged`) rather than on every relist.
pub fn apply_lenient_event<K: Ingest>(
    shared: &SharedCache,
    relist: &mut Relist,
    event: watcher::Event<Lenient<K>>,
    observer: &dyn WatchObserver,
    logged: &mut HashSet<ObjectKey>,
) {
    let mut read = |object: Lenient<K>, relist: &mut Relist| match object {
        Lenient::Read { object, clamped } => {
            let key = object.key();
            if clamped.is_empty() {
                if logged.remove(&key) {
                    // Readable again (or only clamped before): nothing to warn about any more.
                    shared.write().forget_unreadable(K::KIND, &key);
                }
            } else if logged.insert(key.clone()) {
                warn!(kind = K::KIND.as_str(), %key, fields = ?clamped,
                    "times past the latest instant tidal reads: read as that instant");
            }
            Some(object)
        }
        Lenient::Unreadable { meta, error } => {
            let key = ObjectKey::new(
                meta.namespace.unwrap_or_default(),
                meta.name.unwrap_or_default(),
            );
            observer.unreadable(K::KIND);
            relist.read(|| key.clone());
            shared.write().note_unreadable(
                K::KIND,
                key.clone(),
                crate::cluster::Unreadable {
                    uid: meta.uid.clone(),
                    error: error.clone(),
                },
            );
            if logged.insert(key.clone()) {
                warn!(kind = K::KIND.as_str(), %key, %error,
                    "cannot read this object: left out, the rest of its kind is read");
            }
            None
        }
    };
    let event = match event {
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
        watcher::Event::InitApply(object) => match read(object, relist) {
            Some(object) => watcher::Event::InitApply(object),
            None => return,
        },
        watcher::Event::Apply(object) => match read(object, relist) {
            Some(object) => watcher::Event::Apply(object),
            None => return,
        },
        watcher::Event::Delete(Lenient::Read { object, .. }) => watcher::Event::Delete(object),
        watcher::Event::Delete(Lenient::Unreadable { meta, .. }) => {
            let key = ObjectKey::new(
                meta.namespace.unwrap_or_default(),
                meta.name.unwrap_or_default(),
            );
            logged.remove(&key);
            relist.deleted(&key);
            let mut cache = shared.write();
            cache.forget_unreadable(K::KIND, &key);
            cache.delete_object(K::KIND, &key, Timestamp::now());
            if matches!(
                K::KIND,
                ObjectKind::RevocableZone | ObjectKind::DeschedulingPolicy
            ) {
                shared.notify_config_change();
            }
            return;
        }
    };
    apply_event(shared, relist, event, observer);
}

/// Applies one watcher event to the cache. Public so that tests can drive the relist logic directly.
pub fn apply_event<K: Ingest>(
    shared: &SharedCache,
    relist: &mut Relist,
    event: watcher::Event<K>,
    observer: &dyn WatchObserver,
) {
    // The event's instant is when it arrived: the API server's watch carries none.
    let at = Timestamp::now();
    let config_kind = matches!(
        K::KIND,
        ObjectKind::RevocableZone | ObjectKind::DeschedulingPolicy
    );
    match event {
        watcher::Event::Init => {
            // Until this list completes, the cache may miss objects: hold planning.
            shared.set_synced(K::KIND, false);
            let mut cache = shared.write();
            relist.start(cache.holds_any(K::KIND));
            cache.note_list_start(K::KIND, at);
        }
        watcher::Event::InitApply(object) => {
            relist.read(|| object.key());
            ingest(shared, &object, at);
        }
        watcher::Event::InitDone => {
            if K::KIND == ObjectKind::Node {
                shared.notify_node_change();
            }
            let Some(finished) = relist.finish() else {
                // Never sent by the watchers: a list's end without its start. Nothing was compared
                // with a whole list, so nothing is removed and the kind stays as it was.
                warn!(
                    kind = K::KIND.as_str(),
                    "a list ended that never began; ignored"
                );
                return;
            };
            let removed = match &finished {
                Finished::Fresh { .. } => 0,
                Finished::Relisted { .. } => {
                    let mut cache = shared.write();
                    let gone: Vec<ObjectKey> = cache
                        .object_keys(K::KIND)
                        .into_iter()
                        .filter(|key| !finished.read(key))
                        .collect();
                    for key in &gone {
                        cache.delete_object(K::KIND, key, at);
                    }
                    gone.len()
                }
            };
            shared.write().note_list_done(K::KIND);
            observer.relisted(K::KIND, removed);
            info!(
                kind = K::KIND.as_str(),
                objects = finished.count(),
                removed,
                "list complete"
            );
            shared.set_synced(K::KIND, true);
            if config_kind {
                shared.notify_config_change();
            }
        }
        watcher::Event::Apply(object) => {
            let before = taint_inputs::<K>(shared, &object);
            ingest(shared, &object, at);
            if config_kind {
                shared.notify_config_change();
            }
            if K::KIND == ObjectKind::Node && taint_inputs::<K>(shared, &object) != before {
                shared.notify_node_change();
            }
        }
        watcher::Event::Delete(object) => {
            let key = object.key();
            debug!(kind = K::KIND.as_str(), %key, "deleted");
            // Deleted while a watch-list's initial events arrive: not part of the state they end in.
            relist.deleted(&key);
            shared.write().delete_object(K::KIND, &key, at);
            if config_kind {
                shared.notify_config_change();
            }
        }
    }
}

/// A node's zone label and taints as cached (`None` for other kinds): when they change, closed-zone
/// taints may need reconciling.
fn taint_inputs<K: Ingest>(
    shared: &SharedCache,
    object: &K,
) -> Option<(Option<String>, Vec<crate::cluster::Taint>)> {
    (K::KIND == ObjectKind::Node)
        .then(|| shared.read().node_taint_inputs(&object.key().name))
        .flatten()
}

fn ingest<K: Ingest>(shared: &SharedCache, object: &K, at: Timestamp) {
    let mut cache = shared.write();
    if let Err(error) = object.apply_to(&mut cache, at) {
        warn!(kind = K::KIND.as_str(), %error, "ignoring object");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_errors_are_one_readable_line() {
        use kube::core::Status;
        // Never the debug form of kube's types, never more than one line.
        let readable = |line: &str| {
            for debug in ["Status {", "Some(", "code:", "\n"] {
                assert!(!line.contains(debug), "{line}");
            }
        };
        let api = |code: u16, reason: &str, message: &str| {
            kube::Error::Api(Status::failure(message, reason).with_code(code).boxed())
        };
        let line = describe_error(
            ObjectKind::DeschedulingPolicy,
            &watcher::Error::InitialListFailed(api(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )),
        );
        readable(&line);
        assert!(line.starts_with("listing "), "{line}");
        assert!(
            line.ends_with("failed: HTTP 404: the deschedulingpolicies.tidal.dev CRD is not installed (`tidal crds | kubectl apply -f -`)"),
            "{line}"
        );
        let line = describe_error(
            ObjectKind::Pod,
            &watcher::Error::WatchFailed(api(
                403,
                "Forbidden",
                "pods is forbidden: User \"x\" cannot watch",
            )),
        );
        readable(&line);
        assert!(line.starts_with("watching "), "{line}");
        assert!(
            line.ends_with(
                "failed: HTTP 403 Forbidden: pods is forbidden: User \"x\" cannot watch"
            ),
            "{line}"
        );
        let line = describe_error(
            ObjectKind::Node,
            &watcher::Error::WatchError(
                Status::failure("too old resource version", "Expired")
                    .with_code(410)
                    .boxed(),
            ),
        );
        assert!(
            line.ends_with("ended: HTTP 410 too old resource version"),
            "{line}"
        );
    }

    #[test]
    fn only_a_404_means_the_crd_is_absent() {
        assert_eq!(crd_probe(Ok(())), CrdProbe::Served);
        assert_eq!(crd_probe(Err(Some(404))), CrdProbe::Absent);
        for unclear in [Some(403), Some(500), Some(503), None] {
            assert_eq!(crd_probe(Err(unclear)), CrdProbe::Unclear, "{unclear:?}");
        }
    }

    #[test]
    fn unclear_probes_back_off_up_to_a_cap() {
        assert_eq!(probe_backoff(1), Duration::from_secs(1));
        assert_eq!(probe_backoff(2), Duration::from_secs(2));
        assert_eq!(probe_backoff(5), Duration::from_secs(16));
        assert_eq!(probe_backoff(6), Duration::from_secs(30));
        assert_eq!(probe_backoff(u32::MAX), Duration::from_secs(30));
    }
}
