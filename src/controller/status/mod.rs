//! Writing back what happened: `status` of DeschedulingPolicies and RevocableZones (JSON patches on the
//! status subresource, sent only when the content changed) and Kubernetes Events (events.k8s.io/v1) on
//! evicted pods, on policies after cycles that did something, and Warnings on invalid zones/policies.

pub(crate) mod compute;
pub(crate) mod events;
mod write;

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    sync::{Arc, Mutex, MutexGuard},
};

use futures::{StreamExt, future::BoxFuture};

use jiff::Timestamp;
use k8s_openapi::{
    api::core::v1::ObjectReference,
    apimachinery::pkg::apis::meta::v1::{Condition, MicroTime},
};
use kube::{
    Api, Client,
    api::{Patch, PatchParams},
    runtime::events::{Event, EventType},
};
use serde::Serialize;
use tracing::{debug, warn};

use events::{EventRecorder, Reporter};

use crate::{
    api::{
        DeschedulingPolicy, RevocableZone, policy::DeschedulingPolicyStatus,
        zone::RevocableZoneStatus,
    },
    cluster::{ObjectKey, ObjectKind, PodInfo, Unreadable},
    controller::metrics::{KindLabel, Metrics},
    framework::Candidate,
    runtime::leader::LeaderHandle,
};

pub(crate) use compute::preemptable_pods;
pub(crate) use write::{CycleObjects, ZoneWrite};

const CONTROLLER: &str = "tidal";
/// New invalid-annotation warnings per cycle: a job whose PodGroup carries a bad budget warns on each
/// of its pods, and thousands of events in one cycle would only flood the API server.
const MAX_POD_WARNINGS_PER_CYCLE: usize = 50;

/// The reason of the Event on a pod tidal evicted.
pub(crate) const POD_EVENT_REASON: &str = "Descheduled";

/// The reason of the Event on a pod told that a drain evicts it.
pub(crate) const NOTICE_EVENT_REASON: &str = "EvictionNotice";

/// Writes status and events; remembers what it wrote so that unchanged status is not re-sent. Every
/// write first checks that this replica still leads: the lease can be lost between two writes.
pub struct StatusWriter {
    client: Client,
    recorder: EventRecorder,
    leader: LeaderHandle,
    metrics: Arc<Metrics>,
    /// What was written and warned about; shared by the cycles and the writes their evictions
    /// finish with, and never held across a request.
    memory: Mutex<Memory>,
}

type ObjectName = (&'static str, String);

#[derive(Default)]
struct Memory {
    written: HashMap<ObjectName, serde_json::Value>,
    warned: HashMap<ObjectName, String>,
    /// The uid of each zone and policy that `written` and `warned` remember something of. A name that
    /// comes back with another uid is another object (deleted and created again): it has no status
    /// and was never warned about, whatever was remembered of its namesake.
    uids: HashMap<ObjectName, String>,
    /// The objects whose warnings, as their status shows them, this leadership term has taken over:
    /// a warning the previous leader sent is not sent again.
    adopted: HashSet<ObjectName>,
}

impl StatusWriter {
    pub fn new(
        client: Client,
        identity: &str,
        leader: LeaderHandle,
        metrics: Arc<Metrics>,
    ) -> Self {
        let recorder = EventRecorder::new(
            client.clone(),
            Reporter {
                controller: CONTROLLER.to_owned(),
                instance: identity.to_owned(),
            },
        );
        StatusWriter {
            client,
            recorder,
            leader,
            metrics,
            memory: Mutex::new(Memory::default()),
        }
    }

    fn memory(&self) -> MutexGuard<'_, Memory> {
        self.memory
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Forgets what was written (after leadership changes hands, another replica may have written since).
    pub fn forget(&self) {
        *self.memory() = Memory::default();
    }

    /// Notes which object the zone or policy `name` is, before its status and warnings: what was
    /// remembered of a namesake with another uid is forgotten.
    pub fn identify(&self, kind: &'static str, name: &str, uid: Option<&str>) {
        let Some(uid) = uid else {
            return;
        };
        let key = (kind, name.to_owned());
        let mut memory = self.memory();
        if memory.uids.get(&key).is_some_and(|known| known != uid) {
            memory.written.remove(&key);
            memory.warned.remove(&key);
            memory.adopted.remove(&key);
        }
        memory.uids.insert(key, uid.to_owned());
    }

    /// Forgets the zones or policies of `kind` that no longer exist.
    pub fn retain(&self, kind: &'static str, exists: impl Fn(&str) -> bool) {
        let keep = |key: &ObjectName| key.0 != kind || exists(&key.1);
        let mut memory = self.memory();
        memory.written.retain(|key, _| keep(key));
        memory.warned.retain(|key, _| keep(key));
        memory.uids.retain(|key, _| keep(key));
        memory.adopted.retain(keep);
    }

    /// Once per leadership term and object: takes `warning` (under `memory_key`, for `name`) as
    /// already sent when the object's status shows it, so that a new leader does not send it again.
    fn adopt_warning(&self, memory_key: &'static str, name: &str, warning: Option<String>) {
        let mut memory = self.memory();
        if !memory.adopted.insert((memory_key, name.to_owned())) {
            return;
        }
        if let Some(warning) = warning {
            memory
                .warned
                .entry((memory_key, name.to_owned()))
                .or_insert(warning);
        }
    }

    /// The Ready condition last written for a policy, for transition times.
    pub fn policy_ready(&self, name: &str) -> Option<Condition> {
        self.previous_ready("DeschedulingPolicy", name)
    }

    pub fn zone_ready(&self, name: &str) -> Option<Condition> {
        self.previous_ready("RevocableZone", name)
    }

    fn previous_ready(&self, kind: &'static str, name: &str) -> Option<Condition> {
        self.previous_condition(kind, name, compute::READY)
    }

    /// A condition last written for an object, for its transition time.
    pub fn previous_condition(
        &self,
        kind: &'static str,
        name: &str,
        type_: &str,
    ) -> Option<Condition> {
        let memory = self.memory();
        let written = memory.written.get(&(kind, name.to_owned()))?;
        let conditions = written.get("conditions")?.clone();
        let conditions: Vec<Condition> = serde_json::from_value(conditions).ok()?;
        conditions.into_iter().find(|c| c.type_ == type_)
    }

    pub async fn policy(&self, name: &str, status: &DeschedulingPolicyStatus) {
        let api: Api<DeschedulingPolicy> = Api::all(self.client.clone());
        self.write("DeschedulingPolicy", &api, name, status).await;
    }

    pub async fn zone(&self, name: &str, status: &RevocableZoneStatus) {
        let api: Api<RevocableZone> = Api::all(self.client.clone());
        self.write("RevocableZone", &api, name, status).await;
    }

    /// Records at once that an eviction round started in `zone` at `at` (`status.lastEvictionRound`
    /// only, merged into the rest): `evictPeriod` then holds for any replica that takes over, even if
    /// this one stops before the cycle's full status write. Returns whether it was written.
    pub async fn eviction_round(&self, zone: &str, at: Timestamp) -> bool {
        if !self.may_write("RevocableZone", zone) {
            return false;
        }
        let api: Api<RevocableZone> = Api::all(self.client.clone());
        let patch = round_patch(at);
        match api
            .patch_status(zone, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                debug!(zone, "eviction round recorded");
                true
            }
            Err(error) => {
                self.count_error("RevocableZone");
                warn!(zone, %error, "recording the eviction round failed; the cycle's status write retries it");
                false
            }
        }
    }

    fn may_write(&self, kind: &str, name: &str) -> bool {
        let leading = self.leader.is_leader();
        if !leading {
            debug!(kind, name, "not written: no longer the leader");
        }
        leading
    }

    async fn write<K, S>(&self, kind: &'static str, api: &Api<K>, name: &str, status: &S)
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
        S: Serialize,
    {
        let Ok(value) = serde_json::to_value(status) else {
            return;
        };
        let key = (kind, name.to_owned());
        if self.memory().written.get(&key) == Some(&value) || !self.may_write(kind, name) {
            return;
        }
        // Replace the whole status: a merge patch would keep counts of gates that no longer skip.
        let patch = match serde_json::from_value::<json_patch::Patch>(serde_json::json!([
            {"op": "add", "path": "/status", "value": value}
        ])) {
            Ok(patch) => patch,
            Err(error) => {
                warn!(%error, "building the status patch");
                return;
            }
        };
        match api
            .patch_status(name, &PatchParams::default(), &Patch::Json::<()>(patch))
            .await
        {
            Ok(_) => {
                debug!(kind, name, "status written");
                self.memory().written.insert(key, value);
            }
            Err(error) => {
                self.count_error(kind);
                warn!(kind, name, %error, "writing status failed");
            }
        }
    }

    fn count_error(&self, kind: &str) {
        self.metrics
            .status_errors
            .get_or_create(&KindLabel {
                kind: kind.to_owned(),
            })
            .inc();
    }

    async fn publish(&self, event: Event, reference: ObjectReference, kind: &str) {
        let name = reference.name.as_deref().unwrap_or_default();
        if !self.may_write(kind, name) {
            return;
        }
        if let Err(error) = self.recorder.publish(&event, &reference).await {
            self.count_error(&format!("{kind}Event"));
            warn!(%error, reason = %event.reason, object = ?reference.name, "publishing an event failed");
        }
    }

    /// A Normal event on a pod tidal evicted.
    /// (The reason is [`POD_EVENT_REASON`].)
    /// `confirmed` is false when the API server's answer was lost and a retry found the pod gone.
    pub async fn pod_evicted(&self, policy: &str, candidate: &Candidate, confirmed: bool) {
        let pod = &candidate.pod;
        let mut note = format!(
            "Evicted by tidal policy {policy}, strategy {}: {} (job {}",
            candidate.strategy, candidate.reason, pod.job
        );
        if !confirmed {
            note.push_str(", unconfirmed: the answer was lost and the pod was gone afterwards");
        }
        if let Some(zone) = &candidate.zone {
            note.push_str(&format!(", zone {zone}"));
        }
        note.push(')');
        // Not `Evicted`: that is the kubelet's reason for node-pressure evictions, and alerts on it
        // must not fire for a planned descheduling.
        let event = Event {
            type_: EventType::Normal,
            reason: POD_EVENT_REASON.to_owned(),
            note: Some(truncate(note)),
            action: "Evict".to_owned(),
            secondary: None,
        };
        self.publish(event, pod_reference(pod), "Pod").await;
    }

    /// A Normal event on a pod told that a drain evicts it (`evictionNotice`).
    pub async fn pod_noticed(&self, pod: &ObjectKey, uid: Option<&str>, note: String) {
        let event = Event {
            type_: EventType::Normal,
            reason: NOTICE_EVENT_REASON.to_owned(),
            note: Some(truncate(note)),
            action: "Notify".to_owned(),
            secondary: None,
        };
        let reference = ObjectReference {
            api_version: Some("v1".to_owned()),
            kind: Some("Pod".to_owned()),
            name: Some(pod.name.to_string()),
            namespace: Some(pod.namespace.to_string()),
            uid: uid.map(str::to_owned),
            ..ObjectReference::default()
        };
        self.publish(event, reference, "Pod").await;
    }

    /// A Warning on a zone whose pods tidal may not tell of their eviction (403 on the pod writes):
    /// without notice they are never evicted, so the operator must grant it. Once per leadership term.
    pub async fn warn_notice_forbidden(&self, zone: &str) {
        let key = ("RevocableZoneNotice", zone.to_owned());
        if self.memory().warned.contains_key(&key) || !self.may_write("RevocableZone", zone) {
            return;
        }
        let message = format!(
            "zone {zone} asks for evictionNotice, but tidal may not patch pods or pods/status (403): \
             its pods cannot be told, so they are not evicted. Install the chart with \
             evictionNotice.enabled=true, or remove spec.evictionNotice"
        );
        self.memory().warned.insert(key, message.clone());
        let event = Event {
            type_: EventType::Warning,
            reason: "EvictionNoticeForbidden".to_owned(),
            note: Some(truncate(message)),
            action: "Notify".to_owned(),
            secondary: None,
        };
        self.publish(event, zone_reference(zone, None), "RevocableZone")
            .await;
    }

    /// A Normal event on a policy summing up a cycle that planned or skipped something.
    pub async fn policy_cycle(&self, policy: &str, uid: Option<&str>, summary: String) {
        let event = Event {
            type_: EventType::Normal,
            reason: "Cycle".to_owned(),
            note: Some(truncate(summary)),
            action: "Deschedule".to_owned(),
            secondary: None,
        };
        self.publish(event, policy_reference(policy, uid), "DeschedulingPolicy")
            .await;
    }

    /// A Warning on an invalid policy or zone, sent again only when the message changes.
    pub async fn warn_invalid(
        &self,
        kind: &'static str,
        name: &str,
        uid: Option<&str>,
        message: Option<&str>,
    ) {
        let key = (kind, name.to_owned());
        let Some(message) = message else {
            self.memory().warned.remove(&key);
            return;
        };
        if self.memory().warned.get(&key).map(String::as_str) == Some(message)
            || !self.may_write(kind, name)
        {
            return;
        }
        self.memory().warned.insert(key, message.to_owned());
        let (reason, reference) = match kind {
            "RevocableZone" => ("InvalidZone", zone_reference(name, uid)),
            _ => ("InvalidPolicy", policy_reference(name, uid)),
        };
        let event = Event {
            type_: EventType::Warning,
            reason: reason.to_owned(),
            note: Some(truncate(message.to_owned())),
            action: "Validate".to_owned(),
            secondary: None,
        };
        self.publish(event, reference, kind).await;
    }

    /// Warning events on pods that cannot be evicted because their (or their job's) tidal annotations
    /// do not parse: each pod once per distinct message while it stays invalid. `invalid` is this
    /// cycle's complete list; pods missing from it are forgotten, so a pod that turns invalid again is
    /// warned again. Returns how many were sent.
    pub async fn warn_invalid_pods(&self, invalid: &[(&Candidate, &str)]) -> usize {
        let current: std::collections::HashSet<String> = invalid
            .iter()
            .map(|(candidate, _)| candidate.pod.key.to_string())
            .collect();
        let fresh = {
            let mut memory = self.memory();
            memory
                .warned
                .retain(|(kind, name), _| *kind != "Pod" || current.contains(name));
            let mut fresh = Vec::new();
            for (candidate, detail) in invalid {
                let key = ("Pod", candidate.pod.key.to_string());
                if memory.warned.get(&key).map(String::as_str) == Some(*detail) {
                    continue;
                }
                if fresh.len() == MAX_POD_WARNINGS_PER_CYCLE {
                    warn!(
                        remaining = invalid.len() - fresh.len(),
                        "more pods with invalid tidal annotations; their warnings follow in later cycles"
                    );
                    break;
                }
                warn!(pod = %candidate.pod.key, "not evicted: {detail}");
                memory.warned.insert(key, (*detail).to_owned());
                fresh.push((*candidate, *detail));
            }
            fresh
        };
        let sent = fresh.len();
        let events = fresh.into_iter().map(|(candidate, detail)| {
            let event = Event {
                type_: EventType::Warning,
                reason: "InvalidAnnotation".to_owned(),
                note: Some(truncate(format!("tidal will not evict this pod: {detail}"))),
                action: "Validate".to_owned(),
                secondary: None,
            };
            (event, pod_reference(&candidate.pod), "Pod")
        });
        self.publish_all(events.collect()).await;
        sent
    }

    /// Publishes `events`, a few at a time.
    async fn publish_all(&self, events: Vec<(Event, ObjectReference, &'static str)>) {
        // Boxed with an explicit lifetime: see `Evictor::evict_all`.
        let sends: Vec<BoxFuture<'_, ()>> = events
            .into_iter()
            .map(|(event, reference, kind)| -> BoxFuture<'_, ()> {
                Box::pin(self.publish(event, reference, kind))
            })
            .collect();
        futures::stream::iter(sends)
            .buffer_unordered(8)
            .collect::<Vec<()>>()
            .await;
    }

    /// A Warning Event on each object the watches serve but tidal cannot read (left out of the cache,
    /// so never evicted and never planned from): once per object and message while it stays
    /// unreadable, again if it turns unreadable anew. Returns how many were sent.
    pub async fn warn_unreadable(
        &self,
        unreadable: &BTreeMap<(ObjectKind, ObjectKey), Unreadable>,
    ) -> usize {
        const TAG: &str = "Unreadable";
        let name = |kind: &ObjectKind, key: &ObjectKey| format!("{}/{key}", kind.as_str());
        let current: std::collections::HashSet<String> = unreadable
            .keys()
            .map(|(kind, key)| name(kind, key))
            .collect();
        let fresh = {
            let mut memory = self.memory();
            memory
                .warned
                .retain(|(tag, object), _| *tag != TAG || current.contains(object));
            let mut fresh = Vec::new();
            for ((kind, key), object) in unreadable {
                let warned = (TAG, name(kind, key));
                if memory.warned.get(&warned) == Some(&object.error)
                    || !self.may_write(TAG, &warned.1)
                {
                    continue;
                }
                memory.warned.insert(warned, object.error.clone());
                fresh.push((*kind, key, object));
            }
            fresh
        };
        let sent = fresh.len();
        let events = fresh.into_iter().map(|(kind, key, object)| {
            let event = Event {
                type_: EventType::Warning,
                reason: "Unreadable".to_owned(),
                note: Some(truncate(format!(
                    "tidal cannot read this {}, so it leaves it out (never evicted, never \
                     planned from): {}",
                    kind.as_str(),
                    object.error
                ))),
                action: "Read".to_owned(),
                secondary: None,
            };
            let reference = object_reference(kind, key, object.uid.as_deref());
            (event, reference, kind.as_str())
        });
        self.publish_all(events.collect()).await;
        sent
    }
}

/// Any object tidal watches, by kind. The uid matters: `kubectl describe` lists only events whose uid
/// matches.
fn object_reference(kind: ObjectKind, key: &ObjectKey, uid: Option<&str>) -> ObjectReference {
    let api_version = match kind.api_resource().0 {
        "" => "v1".to_owned(),
        "policy" => "policy/v1".to_owned(),
        "scheduling.volcano.sh" => "scheduling.volcano.sh/v1beta1".to_owned(),
        group => format!("{group}/v1alpha1"),
    };
    ObjectReference {
        api_version: Some(api_version),
        kind: Some(kind.as_str().to_owned()),
        name: Some(key.name.to_string()),
        namespace: (!key.namespace.is_empty()).then(|| key.namespace.to_string()),
        uid: uid.map(str::to_owned),
        ..ObjectReference::default()
    }
}

/// Event notes are limited to 1 kB.
fn truncate(mut text: String) -> String {
    const MAX: usize = 1000;
    if text.len() > MAX {
        let mut end = MAX;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

fn pod_reference(pod: &PodInfo) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("Pod".to_owned()),
        name: Some(pod.key.name.to_string()),
        namespace: Some(pod.key.namespace.to_string()),
        uid: (!pod.uid.is_empty()).then(|| pod.uid.to_string()),
        ..ObjectReference::default()
    }
}

fn policy_reference(name: &str, uid: Option<&str>) -> ObjectReference {
    config_reference("DeschedulingPolicy", name, uid)
}

fn zone_reference(name: &str, uid: Option<&str>) -> ObjectReference {
    config_reference("RevocableZone", name, uid)
}

/// A zone or policy. The uid matters: `kubectl describe` lists only events whose uid matches.
fn config_reference(kind: &str, name: &str, uid: Option<&str>) -> ObjectReference {
    ObjectReference {
        api_version: Some("tidal.dev/v1alpha1".to_owned()),
        kind: Some(kind.to_owned()),
        name: Some(name.to_owned()),
        uid: uid.map(str::to_owned),
        ..ObjectReference::default()
    }
}

/// The status patch recording a round. To the microsecond: `evictPeriod` counts from it across
/// restarts and failovers, and a round written to the second lets the next come up to a second early.
fn round_patch(at: Timestamp) -> serde_json::Value {
    serde_json::json!({"status": {"lastEvictionRound": MicroTime(at)}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_is_recorded_and_read_back_to_the_microsecond() {
        let at: Timestamp = "2026-11-22T11:41:46.368215Z".parse().unwrap();
        let patch = round_patch(at);
        assert_eq!(
            patch["status"]["lastEvictionRound"],
            "2026-11-22T11:41:46.368215Z"
        );
        let zone: crate::api::RevocableZone = serde_json::from_value(serde_json::json!({
            "apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone",
            "metadata": {"name": "rz"},
            "spec": {"windows": [{"time": "08:00-09:00"}]},
            "status": patch["status"],
        }))
        .unwrap();
        let info = crate::cluster::ZoneInfo::from_zone(&zone).unwrap();
        assert_eq!(info.last_eviction_round, Some(at));
    }

    /// A client whose every request fails at once (nothing listens on port 1).
    fn unreachable_client() -> Client {
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        Client::try_from(config).unwrap()
    }

    fn errors(metrics: &Metrics) -> String {
        metrics
            .encode()
            .lines()
            .filter(|l| l.starts_with("tidal_status_write_errors_total{"))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Sends one write of each kind; returns whether the round was recorded.
    async fn write_everything(writer: &mut StatusWriter) -> bool {
        writer.zone("rz", &RevocableZoneStatus::default()).await;
        writer
            .warn_invalid("RevocableZone", "rz", Some("u"), Some("bad windows"))
            .await;
        writer.policy_cycle("p", None, "planned 1".to_owned()).await;
        writer.eviction_round("rz", Timestamp::UNIX_EPOCH).await
    }

    #[tokio::test]
    async fn a_replica_that_no_longer_leads_writes_nothing() {
        let metrics = Arc::new(Metrics::new());
        let writer = |leader| StatusWriter::new(unreachable_client(), "a", leader, metrics.clone());
        assert!(!write_everything(&mut writer(LeaderHandle::never())).await);
        // Nothing was even attempted: an attempt would have failed and been counted.
        assert_eq!(errors(&metrics), "");

        // The same writes as leader reach the (unreachable) server and fail.
        assert!(!write_everything(&mut writer(LeaderHandle::always())).await);
        let errors = errors(&metrics);
        for kind in [
            "RevocableZone",
            "RevocableZoneEvent",
            "DeschedulingPolicyEvent",
        ] {
            assert!(errors.contains(&format!("kind=\"{kind}\"")), "{errors}");
        }
    }
}
