//! `RevocableZone`: the daily windows during which Kubernetes may use a zone's revocable nodes.

// The schema derives (KubeSchema, CustomResource, JsonSchema) copy each type's visibility into items
// they generate, which `unreachable_pub` then reports; these are the public CRD and window types.
#![allow(unreachable_pub)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::duration::GoDuration;
use crate::windows::Weekday;

/// A zone of nodes labelled `volcano.sh/revocable-zone=<name>`, shared with another system and usable by
/// Kubernetes only inside its windows. Outside them tidal evicts the zone's preemptable pods.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "tidal.dev",
    doc = "A revocable zone: nodes shared with another system, usable by Kubernetes only inside daily windows.",
    version = "v1alpha1",
    kind = "RevocableZone",
    plural = "revocablezones",
    shortname = "rz",
    category = "tidal",
    status = "RevocableZoneStatus",
    printcolumn = r#"{"name":"Windows","type":"string","jsonPath":".status.schedule"}"#,
    printcolumn = r#"{"name":"Time-Zone","type":"string","jsonPath":".spec.timeZone"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Open","type":"boolean","jsonPath":".status.open"}"#,
    printcolumn = r#"{"name":"Draining","type":"boolean","jsonPath":".status.draining"}"#,
    printcolumn = r#"{"name":"Nodes","type":"integer","jsonPath":".status.nodes"}"#,
    // A string, not a date: kubectl prints a future date as `<invalid>`, and the next change is
    // always in the future.
    printcolumn = r#"{"name":"Next-Change","type":"string","jsonPath":".status.nextChange"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("self.windows.all(w, self.windows.exists_one(o, o == w))").message("windows must not repeat"))]
#[x_kube(validation = Rule::new("!has(self.drainBefore) || duration(self.drainBefore) < duration('24h')").message("drainBefore must be shorter than 24h"))]
#[x_kube(validation = Rule::new("!has(self.evictPeriod) || duration(self.evictPeriod) >= duration('1s')").message("evictPeriod must be at least 1s"))]
pub struct RevocableZoneSpec {
    /// Daily windows during which the zone is open to Kubernetes. The zone is open when any window is.
    #[schemars(length(min = 1, max = 32))]
    pub windows: Vec<WindowSpec>,
    /// IANA time zone the windows are written in, e.g. `Europe/Berlin`. DST is applied by the tz database.
    #[serde(default = "default_time_zone")]
    #[schemars(
        length(min = 1, max = 64),
        regex(pattern = r"^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*$")
    )]
    pub time_zone: String,
    /// Minimum time between two eviction rounds in this zone, so that a closing zone drains job by job.
    #[serde(default = "default_evict_period")]
    pub evict_period: GoDuration,
    /// Start evicting this long before a window closes, so that pods are gone when the other system arrives.
    #[serde(default)]
    pub drain_before: GoDuration,
    /// Keep a `tidal.dev/zone-closed:NoSchedule` taint on the zone's nodes while it is closed (or draining),
    /// so that no scheduler even tries to place pods there; removed when the zone opens.
    #[serde(default = "default_taint_when_closed")]
    pub taint_when_closed: bool,
}

/// One daily window.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WindowSpec {
    /// `HH:MM-HH:MM`, 24-hour clock, both ends included. A start later than the end crosses midnight
    /// (`22:00-06:00`); equal ends mean the whole day.
    #[schemars(regex(pattern = r"^([01][0-9]|2[0-3]):[0-5][0-9]-([01][0-9]|2[0-3]):[0-5][0-9]$"))]
    pub time: String,
    /// Days on which the window starts (a window crossing midnight ends the next day). Empty: every day.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 7), extend("x-kubernetes-list-type" = "set"))]
    pub days: Vec<Weekday>,
}

/// What the controller last observed of the zone.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevocableZoneStatus {
    /// The windows as one line, for `kubectl get`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// Whether the zone is open to Kubernetes now (inside one of its windows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open: Option<bool>,
    /// Whether the zone is open but closes within `drainBefore`, so that tidal already evicts its
    /// preemptable pods (as it does while the zone is closed: see `open`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draining: Option<bool>,
    /// When the zone next opens or closes (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_change: Option<Time>,
    /// When tidal last started an eviction round in this zone; `evictPeriod` is counted from here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_eviction_round: Option<Time>,
    /// Nodes labelled `volcano.sh/revocable-zone=<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u32>,
    /// Preemptable pods running on the zone's nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptable_pods: Option<u32>,
    /// The `metadata.generation` of the spec this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` is `False` with a reason when the spec cannot be read (for example an unknown time zone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

impl RevocableZoneSpec {
    /// The windows as one line (`20:00-06:00; 00:00-00:00 Sat,Sun`), as `kubectl get` and the report
    /// show them.
    pub fn windows_line(&self) -> String {
        self.windows
            .iter()
            .map(|w| {
                let days: Vec<String> = w.days.iter().map(|d| format!("{d:?}")).collect();
                if days.is_empty() {
                    w.time.clone()
                } else {
                    format!("{} {}", w.time, days.join(","))
                }
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

fn default_time_zone() -> String {
    "UTC".to_owned()
}

fn default_taint_when_closed() -> bool {
    true
}

fn default_evict_period() -> GoDuration {
    GoDuration::from_secs(60)
}
