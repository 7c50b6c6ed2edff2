//! Kubernetes Events (events.k8s.io/v1), recorded so that every distinct message reaches the API.
//!
//! kube-runtime's `Recorder` folds repeats into a series keyed by type, reason, action, reporter and
//! object, *without* the note: a second event with a new message only bumps the first one's count and
//! the new message is lost. Here the note is part of the key: the same message again extends its
//! series, a different one is a new Event. Building the objects is pure; [`EventRecorder`] only sends.

use std::{
    collections::HashMap,
    sync::atomic::{AtomicU64, Ordering},
};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::{
    api::{
        core::v1::ObjectReference,
        events::v1::{Event as K8sEvent, EventSeries},
    },
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
};
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
    runtime::events::{Event, EventType},
};
use tokio::sync::Mutex;

/// A series is extended only while its last occurrence is this recent (as kube-runtime does); after
/// that, a repeat starts a new Event.
const SERIES_TTL: SignedDuration = SignedDuration::from_mins(6);
/// Namespace of events about cluster-scoped objects (zones, policies).
const CLUSTER_EVENTS_NAMESPACE: &str = "default";

/// What makes two events "the same" for series folding: everything a reader would tell apart.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct EventKey {
    type_: &'static str,
    reason: String,
    action: String,
    note: Option<String>,
    regarding: [Option<String>; 5],
}

pub(crate) fn event_key(event: &Event, regarding: &ObjectReference) -> EventKey {
    EventKey {
        type_: type_name(event.type_),
        reason: event.reason.clone(),
        action: event.action.clone(),
        note: event.note.clone(),
        regarding: [
            regarding.api_version.clone(),
            regarding.kind.clone(),
            regarding.namespace.clone(),
            regarding.name.clone(),
            regarding.uid.clone(),
        ],
    }
}

fn type_name(type_: EventType) -> &'static str {
    match type_ {
        EventType::Normal => "Normal",
        EventType::Warning => "Warning",
    }
}

/// Who reports: `reportingController` and `reportingInstance`.
#[derive(Clone, Debug)]
pub(crate) struct Reporter {
    pub controller: String,
    pub instance: String,
}

/// A new Event object. `sequence` keeps names unique when two events share an instant.
pub(crate) fn new_event(
    reporter: &Reporter,
    event: &Event,
    regarding: &ObjectReference,
    now: Timestamp,
    sequence: u64,
) -> K8sEvent {
    // Names are at most 253 characters; the suffix needs up to 50.
    let base: String = regarding
        .name
        .as_deref()
        .unwrap_or(&reporter.controller)
        .chars()
        .take(200)
        .collect();
    K8sEvent {
        metadata: ObjectMeta {
            name: Some(format!(
                "{base}.{:x}-{sequence:x}",
                now.as_nanosecond().unsigned_abs()
            )),
            namespace: Some(
                regarding
                    .namespace
                    .clone()
                    .unwrap_or_else(|| CLUSTER_EVENTS_NAMESPACE.to_owned()),
            ),
            ..ObjectMeta::default()
        },
        action: Some(event.action.clone()),
        reason: Some(event.reason.clone()),
        note: event.note.clone(),
        type_: Some(type_name(event.type_).to_owned()),
        event_time: Some(MicroTime(now)),
        regarding: Some(regarding.clone()),
        related: event.secondary.clone(),
        reporting_controller: Some(reporter.controller.clone()),
        reporting_instance: Some(reporter.instance.clone()),
        ..K8sEvent::default()
    }
}

/// The event as it becomes when the same thing happens again at `now`.
pub(crate) fn repeated(event: &K8sEvent, now: Timestamp) -> K8sEvent {
    let count = event
        .series
        .as_ref()
        .map_or(2, |s| s.count.saturating_add(1));
    K8sEvent {
        series: Some(EventSeries {
            count,
            last_observed_time: MicroTime(now),
        }),
        ..event.clone()
    }
}

/// When the event was last observed.
fn last_seen(event: &K8sEvent) -> Option<Timestamp> {
    event
        .series
        .as_ref()
        .map(|s| s.last_observed_time.0)
        .or(event.event_time.as_ref().map(|t| t.0))
}

/// Whether a cached event can still be extended at `now`.
pub(crate) fn series_open(event: &K8sEvent, now: Timestamp) -> bool {
    last_seen(event).is_some_and(|seen| {
        seen.saturating_add(SERIES_TTL)
            .is_ok_and(|until| until > now)
    })
}

/// Sends events, remembering recent ones to fold exact repeats into series.
pub(crate) struct EventRecorder {
    client: Client,
    reporter: Reporter,
    recent: Mutex<HashMap<EventKey, K8sEvent>>,
    sequence: AtomicU64,
}

impl EventRecorder {
    pub(crate) fn new(client: Client, reporter: Reporter) -> Self {
        EventRecorder {
            client,
            reporter,
            recent: Mutex::new(HashMap::new()),
            sequence: AtomicU64::new(0),
        }
    }

    /// Creates the event, or extends the series of the same event (same note included).
    pub(crate) async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let now = Timestamp::now();
        let key = event_key(event, regarding);
        let previous = {
            let mut recent = self.recent.lock().await;
            recent.retain(|_, cached| series_open(cached, now));
            recent.get(&key).cloned()
        };
        let namespace = regarding
            .namespace
            .as_deref()
            .unwrap_or(CLUSTER_EVENTS_NAMESPACE);
        let api: Api<K8sEvent> = Api::namespaced(self.client.clone(), namespace);
        let fresh = || {
            let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
            new_event(&self.reporter, event, regarding, now, sequence)
        };
        let sent = match previous {
            Some(previous) => {
                let next = repeated(&previous, now);
                let name = next.metadata.name.clone().unwrap_or_default();
                match api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&next))
                    .await
                {
                    Ok(_) => next,
                    // The event expired on the server (or was deleted): start over.
                    Err(kube::Error::Api(status)) if status.code == 404 => {
                        let created = fresh();
                        api.create(&PostParams::default(), &created).await?;
                        created
                    }
                    Err(error) => return Err(error),
                }
            }
            None => {
                let created = fresh();
                api.create(&PostParams::default(), &created).await?;
                created
            }
        };
        self.recent.lock().await.insert(key, sent);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cycle(note: &str) -> Event {
        Event {
            type_: EventType::Normal,
            reason: "Cycle".to_owned(),
            note: Some(note.to_owned()),
            action: "Deschedule".to_owned(),
            secondary: None,
        }
    }

    fn policy() -> ObjectReference {
        ObjectReference {
            api_version: Some("tidal.dev/v1alpha1".to_owned()),
            kind: Some("DeschedulingPolicy".to_owned()),
            name: Some("p".to_owned()),
            uid: Some("u1".to_owned()),
            ..ObjectReference::default()
        }
    }

    fn reporter() -> Reporter {
        Reporter {
            controller: "tidal".to_owned(),
            instance: "a".to_owned(),
        }
    }

    #[test]
    fn a_different_note_is_a_different_event() {
        let first = event_key(&cycle("planned 1, evicted 1"), &policy());
        let second = event_key(&cycle("planned 2, evicted 2"), &policy());
        assert_ne!(first, second);
        assert_eq!(first, event_key(&cycle("planned 1, evicted 1"), &policy()));
        let mut other_uid = policy();
        other_uid.uid = Some("u2".to_owned());
        assert_ne!(first, event_key(&cycle("planned 1, evicted 1"), &other_uid));
    }

    #[test]
    fn cluster_scoped_objects_get_events_in_default_with_their_uid() {
        let now = Timestamp::UNIX_EPOCH + SignedDuration::from_secs(100);
        let event = new_event(&reporter(), &cycle("x"), &policy(), now, 7);
        assert_eq!(event.metadata.namespace.as_deref(), Some("default"));
        let name = event.metadata.name.unwrap();
        assert!(name.starts_with("p."), "{name}");
        assert_eq!(event.regarding.unwrap().uid.as_deref(), Some("u1"));
        assert_eq!(event.note.as_deref(), Some("x"));
        assert_eq!(event.type_.as_deref(), Some("Normal"));
        assert_eq!(event.reporting_instance.as_deref(), Some("a"));
        let other = new_event(&reporter(), &cycle("x"), &policy(), now, 8);
        assert_ne!(
            other.metadata.name.unwrap(),
            name,
            "same instant, distinct names"
        );
    }

    #[test]
    fn repeats_count_up_and_series_close_after_a_while() {
        let t0 = Timestamp::UNIX_EPOCH;
        let event = new_event(&reporter(), &cycle("x"), &policy(), t0, 0);
        let t1 = t0 + SignedDuration::from_secs(60);
        let again = repeated(&event, t1);
        assert_eq!(again.series.as_ref().unwrap().count, 2);
        assert_eq!(again.note, event.note);
        let third = repeated(&again, t1);
        assert_eq!(third.series.as_ref().unwrap().count, 3);
        assert!(series_open(&again, t1 + SignedDuration::from_mins(5)));
        assert!(!series_open(&again, t1 + SignedDuration::from_mins(6)));
    }
}
