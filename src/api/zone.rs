//! `RevocableZone`: the daily windows during which Kubernetes may use a zone's revocable nodes.

// The schema derives (KubeSchema, CustomResource, JsonSchema) copy each type's visibility into items
// they generate, which `unreachable_pub` then reports; these are the public CRD and window types.
#![allow(unreachable_pub)]

use std::{borrow::Cow, fmt, str::FromStr};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, MicroTime, Time};
use kube::{CustomResource, KubeSchema};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

use super::duration::{DurationError, GO_DURATION_PATTERN, GoDuration};
use crate::time_windows::Weekday;

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
    printcolumn = r#"{"name":"Remaining","type":"integer","jsonPath":".status.drain.remainingPods"}"#,
    printcolumn = r#"{"name":"Empty-By","type":"string","jsonPath":".status.drain.expectedEmptyAt"}"#,
    printcolumn = r#"{"name":"On-Track","type":"string","jsonPath":".status.conditions[?(@.type==\"DrainOnTrack\")].status"}"#,
    // A string, not a date: kubectl prints a future date as `<invalid>`, and the next change is
    // always in the future.
    printcolumn = r#"{"name":"Next-Change","type":"string","jsonPath":".status.nextChange"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("self.windows.all(w, self.windows.exists_one(o, o == w))").message("windows must not repeat"))]
#[x_kube(validation = Rule::new("!has(self.drainBefore) || self.drainBefore == 'auto' || duration(self.drainBefore) < duration('24h')").message("drainBefore must be auto or shorter than 24h"))]
#[x_kube(validation = Rule::new("!has(self.maxDrainBefore) || duration(self.maxDrainBefore) < duration('24h')").message("maxDrainBefore must be shorter than 24h"))]
#[x_kube(validation = Rule::new("!has(self.evictPeriod) || duration(self.evictPeriod) >= duration('1s')").message("evictPeriod must be at least 1s"))]
#[x_kube(validation = Rule::new("!has(self.evictionNotice) || duration(self.evictionNotice) < duration('24h')").message("evictionNotice must be shorter than 24h"))]
pub struct RevocableZoneSpec {
    /// Daily windows during which the zone is open to Kubernetes. The zone is open when any window is.
    #[schemars(length(min = 1, max = 32))]
    pub windows: Vec<WindowSpec>,
    /// IANA time zone the windows are written in, e.g. `Europe/Berlin`. DST is applied by the tz database.
    #[serde(default = "default_time_zone")]
    #[schemars(
        length(min = 1, max = 64),
        regex(pattern = TIME_ZONE_PATTERN)
    )]
    pub time_zone: String,
    /// Minimum time between two eviction rounds in this zone, so that a closing zone drains job by job.
    #[serde(default = "default_evict_period")]
    pub evict_period: GoDuration,
    /// When to start evicting before a window closes, so that the zone is empty when the other system
    /// arrives. `auto` (the default) starts as late as the zone's drain allows, from an estimate of how
    /// long it takes (its pods, their jobs' budgets, `evictPeriod`, the eviction rate and how long pods
    /// take to terminate) times the controller's `--drain-margin`, at most `maxDrainBefore` ahead. A Go
    /// duration starts exactly that long before (`0s`: only at the close).
    #[serde(default)]
    pub drain_before: DrainBefore,
    /// The earliest an `auto` drain starts before a close.
    #[serde(default = "default_max_drain_before")]
    pub max_drain_before: GoDuration,
    /// What job budgets do once the zone is closed and preemptable pods are still on it. `Respect` (the
    /// default) keeps evicting round by round within budgets; `Ignore` evicts every remaining preemptable
    /// pod in the next round, budgets aside (PodDisruptionBudgets still hold: the Eviction API enforces
    /// them).
    #[serde(default)]
    pub budgets_after_close: BudgetsAfterClose,
    /// Keep a `tidal.dev/zone-closed:NoSchedule` taint on the zone's nodes while it is closed (or draining),
    /// so that no scheduler even tries to place pods there; removed when the zone opens.
    #[serde(default = "default_taint_when_closed")]
    pub taint_when_closed: bool,
    /// How long before its eviction each preemptable pod is told that it goes, so that it can save
    /// its work: a `tidal.dev/EvictionNotice` pod condition and the `tidal.dev/evict-after` and
    /// `tidal.dev/evict-by` annotations (readable in the pod through the downward API). A drain
    /// notices the zone's pods this long before it starts and evicts none sooner than this after its
    /// notice. Unset: no notice, pods learn of the eviction from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_notice: Option<GoDuration>,
}

/// When a zone starts draining before a close: `auto` or a fixed lead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DrainBefore {
    /// As late as the estimated drain allows (see [`RevocableZoneSpec::drain_before`]).
    #[default]
    Auto,
    Fixed(GoDuration),
}

impl DrainBefore {
    /// The fixed lead, if the zone has one.
    pub fn fixed(self) -> Option<GoDuration> {
        match self {
            DrainBefore::Auto => None,
            DrainBefore::Fixed(lead) => Some(lead),
        }
    }
}

impl fmt::Display for DrainBefore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DrainBefore::Auto => f.write_str("auto"),
            DrainBefore::Fixed(lead) => lead.fmt(f),
        }
    }
}

impl FromStr for DrainBefore {
    type Err = DurationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "auto" {
            Ok(DrainBefore::Auto)
        } else {
            text.parse().map(DrainBefore::Fixed)
        }
    }
}

impl Serialize for DrainBefore {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for DrainBefore {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(deserializer)?;
        text.parse().map_err(de::Error::custom)
    }
}

impl JsonSchema for DrainBefore {
    fn schema_name() -> Cow<'static, str> {
        "DrainBefore".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let duration = GO_DURATION_PATTERN
            .trim_start_matches('^')
            .trim_end_matches('$');
        json_schema!({
            "type": "string",
            "pattern": format!("^(auto|{duration})$"),
        })
    }
}

/// What job budgets do for the pods still on a zone once it has closed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum BudgetsAfterClose {
    /// Keep evicting within job budgets, round by round.
    #[default]
    Respect,
    /// Evict every remaining preemptable pod at the next round; PodDisruptionBudgets still hold.
    Ignore,
}

/// What `spec.timeZone` may hold: the shape of an IANA name (the tz database decides the rest).
pub const TIME_ZONE_PATTERN: &str = r"^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*$";

/// What a window's `time` may hold: `HH:MM-HH:MM` on a 24-hour clock.
pub const WINDOW_PATTERN: &str = r"^([01][0-9]|2[0-3]):[0-5][0-9]-([01][0-9]|2[0-3]):[0-5][0-9]$";

/// One daily window.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WindowSpec {
    /// `HH:MM-HH:MM`, 24-hour clock, both ends included. A start later than the end crosses midnight
    /// (`22:00-06:00`); equal ends mean the whole day.
    #[schemars(regex(pattern = WINDOW_PATTERN))]
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
    /// Whether tidal is evicting the zone's preemptable pods now: the zone is closed, or it is draining
    /// ahead of its close.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draining: Option<bool>,
    /// When the zone next opens or closes (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_change: Option<Time>,
    /// When tidal last started an eviction round in this zone, to the microsecond; `evictPeriod` is
    /// counted from here, also by the next leader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_eviction_round: Option<MicroTime>,
    /// The drain ahead of the next close (or of the close that passed, while pods remain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain: Option<DrainStatus>,
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

/// The drain of a zone: when it started, how far it has come, and whether it will be done in time.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DrainStatus {
    /// The close this drain is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close: Option<Time>,
    /// When draining for that close started (`drainBefore: auto` decides it from the estimate; every
    /// replica and the webhook read it from here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// When an `auto` drain is planned to start, from the current estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starts_at: Option<Time>,
    /// Preemptable pods still on the zone's nodes (evicted ones that have not terminated included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_pods: Option<u32>,
    /// When the last of them is expected to be gone; absent when there are none, or some would never
    /// leave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_empty_at: Option<Time>,
    /// Seconds between the expected empty time and the close; negative when the close will be missed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin_seconds: Option<i64>,
    /// Pods expected to be still on the zone at its close.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_close: Option<u32>,
    /// What the estimate assumed and what bounds it, and when at risk what would fix it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
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

fn default_max_drain_before() -> GoDuration {
    GoDuration::from_secs(2 * 3600)
}
