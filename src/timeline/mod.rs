//! `tidal timeline`: what the next hours bring, simulated with the real planner.
//!
//! From a cache at `now`, every zone's changes (drain start, close, open) are listed, and cycles are
//! planned where the controller would run them: at every zone phase change (open, close, drain start,
//! `evictPeriod` elapsed) and on the policies' interval. Each planned eviction is applied to the cache
//! the way the controller's cycle applies it (the pod leaves, the zone's round is noted), so budgets and
//! `evictPeriod` hold across rounds exactly as they would. Nothing new arrives: evicted pods are not
//! replaced, and `DryRun` policies are simulated as if they were `Evict` (that is what they preview),
//! so that later policies see their evictions as in flight, as the controller would.
//!
//! Pure: the cache is passed in and advanced; no clock, no I/O.

mod render;
mod simulate;
mod zones;

use jiff::{SignedDuration, Timestamp, tz::TimeZone};
use serde::Serialize;

pub use render::BAR_WIDTH;
pub use simulate::simulate;

/// The longest span simulated: beyond a week the assumption that nothing new arrives means little.
pub const MAX_SPAN: SignedDuration = SignedDuration::from_hours(7 * 24);

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
    DrainStarts,
    Closes,
    /// An eviction round: the pods a cycle evicts (in a zone, or elsewhere for other strategies).
    Round,
    /// A closing zone evicted nothing this cycle but still holds pods (budget, cooldown, ...).
    Held,
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
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<Waiting>,
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
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Waiting {
    pub namespace: String,
    pub name: String,
    pub node: Option<String>,
    pub gate: String,
    pub detail: String,
    pub policy: String,
    /// The zone's next round within the span, when the pod is tried again; `null` if there is none:
    /// the pod stays until the zone opens or the span ends.
    pub next_round: Option<Timestamp>,
    /// `nextRound` in the zone's time zone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_round_when: Option<String>,
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
}
