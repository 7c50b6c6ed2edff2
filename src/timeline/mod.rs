//! `tidal timeline`: what the next hours bring, simulated with the real planner and the controller's
//! pacing.
//!
//! From a cache at `now`, every zone's changes (drain start, close, open) are listed, and cycles are
//! planned where the controller would run them: at every zone phase change (open, close, drain start,
//! `evictPeriod` elapsed, a round that budgets held back tried again), at every `auto` drain start the
//! drain outlook decides, and on the policies' interval. Each planned eviction goes the way the
//! controller sends it: it is queued (earliest close first; other strategies' evictions after the
//! closing zones' and given up at the cycle timeout), counts as leaving from the moment it is planned,
//! goes out at the eviction rate (QPS, burst, concurrency, each request taking
//! [`Pacing::ASSUMED_REQUEST`](crate::drain::Pacing::ASSUMED_REQUEST)), and its pod is gone its
//! termination grace period later; its job's budget is held until then. Its controller then
//! replaces it elsewhere (on no node: where it lands is not known; a bare pod, or one owned by its
//! PodGroup alone, is not replaced), or, when no ready node outside closed and draining zones is
//! left, leaves it Pending, holding its job's budget, as the drain estimate does. Nothing else arrives, and `DryRun` policies are simulated as if they
//! were `Evict` (that is what they preview), so that later policies see their evictions as in
//! flight, as the controller would.
//!
//! Per zone and close, the simulation says when the zone is empty and the margin before the close, or
//! by how much the close is missed and how many pods are still there, with the drain outlook's
//! estimate, assumptions and fix from the moment the drain starts.
//!
//! Layout: the model here, the simulation in named steps (`simulate`, with the eviction queue in
//! `queue` and each drain's record in `drains`), the zones' phases in `zones`, the output in `render` (text, JSON, YAML) and `html` (a page with
//! a picture).
//! Pure: the cache is passed in and advanced; no clock, no I/O.

mod drains;
mod html;
mod queue;
mod render;
mod simulate;
#[cfg(test)]
mod tests;
mod zones;

use std::sync::Arc;

use jiff::{SignedDuration, Timestamp, tz::TimeZone};
use serde::Serialize;

pub use render::BAR_WIDTH;
pub use simulate::simulate;

use crate::{drain::DrainSettings, report::drain::DrainLine};

/// The longest span simulated: beyond a week the assumption that nothing new arrives means little.
pub const MAX_SPAN: SignedDuration = SignedDuration::from_hours(7 * 24);

/// What the simulation assumes of the controller beyond the cluster.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// The eviction rate, the request time and the `auto` drain margin.
    pub drain: DrainSettings,
    /// Evictions of strategies other than `tdm` not sent this long after their cycle started are given
    /// up until the policy's next cycle (`--cycle-timeout`); `tdm`'s stay queued until sent.
    pub cycle_timeout: SignedDuration,
}

impl Settings {
    /// `tidal run`'s default `--cycle-timeout`.
    pub const DEFAULT_CYCLE_TIMEOUT: SignedDuration = SignedDuration::from_mins(2);

    pub fn new(drain: DrainSettings) -> Settings {
        Settings {
            drain,
            cycle_timeout: Settings::DEFAULT_CYCLE_TIMEOUT,
        }
    }
}

/// What the timeline assumed, for its readers.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Assumptions {
    /// Eviction requests per second once the burst is spent (`--eviction-qps`).
    pub eviction_qps: f64,
    pub eviction_burst: u32,
    /// Requests on the wire at once (`--eviction-concurrency`).
    pub eviction_concurrency: u32,
    /// How long one eviction request is taken to last.
    pub request_seconds: f64,
    /// An `auto` drain starts this many times its estimate before the close (`--drain-margin`)...
    pub drain_margin: f64,
    /// ...plus this.
    pub drain_slack_seconds: i64,
    /// Other strategies' evictions not sent within this of their cycle are given up (`--cycle-timeout`).
    pub cycle_timeout_seconds: i64,
    /// In a sentence: termination, replacements, what arrives.
    pub pods: String,
}

impl Assumptions {
    fn of(settings: &Settings) -> Assumptions {
        let pacing = settings.drain.pacing;
        Assumptions {
            eviction_qps: pacing.qps,
            eviction_burst: pacing.burst,
            eviction_concurrency: pacing.concurrency,
            request_seconds: pacing.request.as_secs_f64(),
            drain_margin: settings.drain.margin,
            drain_slack_seconds: settings.drain.slack.as_secs(),
            cycle_timeout_seconds: settings.cycle_timeout.as_secs(),
            pods: "an evicted pod is gone its terminationGracePeriodSeconds (30s unless set) after its \
                   eviction is sent, replaced on another node by its controller (a bare pod, or one owned by its \
                   PodGroup alone, is not; with no ready node outside closed and draining zones, the \
                   replacement stays Pending); nothing else arrives"
                .to_owned(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Phase {
    Open,
    Draining,
    Closed,
}

impl Phase {
    fn of(open: bool, draining: bool) -> Phase {
        match (open, draining) {
            (false, _) => Phase::Closed,
            (true, true) => Phase::Draining,
            (true, false) => Phase::Open,
        }
    }

    /// The bar's character.
    fn symbol(self) -> char {
        match self {
            Phase::Open => '.',
            Phase::Draining => '~',
            Phase::Closed => '#',
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PhaseChange {
    pub from: Timestamp,
    pub phase: Phase,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ZoneTrack {
    pub name: String,
    pub time_zone: String,
    pub windows: String,
    /// The zone's phase from `now` on, one entry per change within the span; empty when the windows
    /// cannot be read.
    pub phases: Vec<PhaseChange>,
    /// `auto` or the zone's fixed lead.
    pub drain_before: String,
    /// One character per slot of the span: `#` closed, `~` draining, `.` open (the most disruptive
    /// phase of the slot).
    pub bar: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip)]
    tz: TimeZone,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum EventKind {
    Opens,
    /// A zone's pods are told of their eviction (`evictionNotice`).
    Notified,
    DrainStarts,
    Closes,
    /// An eviction round: the pods a cycle evicts (in a zone, or elsewhere for other strategies).
    Round,
    /// A closing zone evicted nothing this cycle but still holds pods (budget, cooldown, ...).
    Held,
    /// A pod the drain left to finish ends by itself.
    Finishes,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// When it takes effect: a window `19:00-07:00` closes at 07:00:01.
    pub at: Timestamp,
    /// The instant as the operator wrote it (07:00 for that close); `when` and `in` show this one.
    pub shown: Timestamp,
    /// `shown` in the zone's time zone (UTC for evictions outside zones).
    pub when: String,
    /// `shown` relative to now.
    #[serde(rename = "in")]
    pub relative: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    pub event: EventKind,
    /// The zone's round number within the simulation, from 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evictions: Vec<Move>,
    /// Pods of the zone that this round (or cycle) could not take yet.
    #[serde(skip_serializing_if = "Waitlist::is_empty")]
    pub waiting: Waitlist,
    /// A round's or cycle's evictions, as the eviction queue sends them.
    #[serde(flatten)]
    pub pace: Option<RoundPace>,
    /// What a drain start rests on, or what a close leaves behind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The pod that ends by itself (`namespace/name`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
}

/// How a round's evictions go out.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RoundPace {
    /// Pods evicted, their jobs and namespaces.
    pub pods: u32,
    pub jobs: u32,
    pub namespaces: u32,
    /// When the first and the last of its evictions were sent (`null` if none was).
    pub sent_from: Option<Timestamp>,
    pub sent_by: Option<Timestamp>,
    /// When the last of its pods was gone.
    pub gone_by: Option<Timestamp>,
    /// Evictions given up at the cycle timeout, not sent (other strategies than `tdm` only).
    #[serde(skip_serializing_if = "is_zero")]
    pub given_up: u32,
    /// The gangs it takes whole: `PodGroup ml/train (gang of 8 (minMember 6))`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gangs: Vec<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Event {
    /// An event at `at` (shown as `shown`), with nothing in it yet.
    fn new(at: Timestamp, shown: Timestamp, zone: Option<String>, event: EventKind) -> Event {
        Event {
            at,
            shown,
            when: String::new(),
            relative: String::new(),
            zone,
            event,
            round: None,
            evictions: Vec::new(),
            waiting: Waitlist::default(),
            pace: None,
            detail: None,
            pod: None,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Move {
    pub namespace: String,
    pub name: String,
    pub node: Option<String>,
    pub job: String,
    pub policy: String,
    pub strategy: String,
    pub reason: String,
    /// The gang its job is, taken whole with it (`gang of 8 (minMember 6)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gang: Option<String>,
    /// When its eviction was sent; `null` if it was given up.
    pub sent_at: Option<Timestamp>,
    /// When the pod was gone (the eviction sent, then its termination grace period).
    pub gone_at: Option<Timestamp>,
}

/// A pod a round could not take yet, as the plan said: shared by every event that lists it while
/// nothing about it changes, so that a zone of many rounds holds each waiting pod once and not once
/// per round (60,000 pods waiting through 50 rounds were half a gigabyte).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Waiting {
    pub namespace: String,
    pub name: String,
    pub node: Option<String>,
    pub gate: String,
    pub detail: String,
    pub policy: String,
}

/// The pods of a zone that a round (or cycle) could not take yet, and the zone's next round. In JSON
/// and YAML each pod carries that round as `nextRound` and `nextRoundWhen`.
#[derive(Clone, Debug, Default)]
pub struct Waitlist {
    pub pods: Vec<Arc<Waiting>>,
    /// The zone's next round within the span, when these pods are tried again; `None` if there is
    /// none: they stay until the zone opens or the span ends.
    pub next_round: Option<Timestamp>,
    /// `next_round` in the zone's time zone.
    pub next_round_when: Option<String>,
}

impl Waitlist {
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }
}

impl std::ops::Deref for Waitlist {
    type Target = [Arc<Waiting>];

    fn deref(&self) -> &[Arc<Waiting>] {
        &self.pods
    }
}

impl Serialize for Waitlist {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Entry<'a> {
            #[serde(flatten)]
            pod: &'a Waiting,
            next_round: Option<Timestamp>,
            #[serde(skip_serializing_if = "Option::is_none")]
            next_round_when: Option<&'a str>,
        }
        serializer.collect_seq(self.pods.iter().map(|pod| Entry {
            pod,
            next_round: self.next_round,
            next_round_when: self.next_round_when.as_deref(),
        }))
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRun {
    pub name: String,
    pub mode: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    pub now: Timestamp,
    pub until: Timestamp,
    pub policies: Vec<PolicyRun>,
    pub zones: Vec<ZoneTrack>,
    /// In time order; at one instant, rounds before zone changes.
    pub events: Vec<Event>,
    pub warnings: Vec<String>,
    /// Every zone's drain for each close within the span (and a zone closed at `now` with pods on
    /// it): when it is empty and the margin before the close, or the miss, what is left and the fix.
    pub drains: Vec<DrainLine>,
    pub assumptions: Assumptions,
    /// For people: the one time zone the table shows times in (the zones' own when they share
    /// one, else UTC, unless [`Timeline::show_in`] chose another).
    #[serde(skip)]
    pub clock: crate::text::clock::Clock,
}

impl Timeline {
    /// Shows the table's times in `time_zone` (`--time-zone`), not the default.
    pub fn show_in(&mut self, time_zone: Option<&TimeZone>) {
        let readable = self
            .zones
            .iter()
            .filter(|z| z.error.is_none())
            .map(|z| &z.tz);
        self.clock = crate::text::clock::Clock::for_zones(readable, time_zone, self.now);
    }
}
