//! One zone's drain as the plan sees it: when it starts, when the zone is expected empty, whether the
//! close will be missed by more than the estimate's own error, and what would fix it.

use jiff::{SignedDuration, Timestamp};

use super::model::DrainEstimate;
use crate::api::{BudgetsAfterClose, DrainBefore};

/// One zone's drain.
#[derive(Clone, Debug, PartialEq)]
pub struct ZoneOutlook {
    pub zone: String,
    pub drain_before: DrainBefore,
    pub budgets_after_close: BudgetsAfterClose,
    /// The close ahead; `None` for a closed zone (its close has passed).
    pub close: Option<Timestamp>,
    /// When a closed zone closed, where its windows say.
    pub closed_at: Option<Timestamp>,
    /// The zone evicts now: it is closed, or draining ahead of its close.
    pub evicting: bool,
    /// When the drain for `close` starts (or started, or would start for an `auto` zone).
    pub drain_start: Option<Timestamp>,
    /// From when the zone's pods are told of their eviction (`evictionNotice`): its notice before
    /// the drain starts, the distant past while it evicts; `None` when it asks no notice.
    pub notices_from: Option<Timestamp>,
    /// An `auto` drain is due to start now: the caller records it.
    pub start_now: bool,
    /// The lead an `auto` drain needs, when `maxDrainBefore` is shorter.
    pub capped_lead: Option<SignedDuration>,
    /// How an `auto` drain not started before this plan had its start chosen.
    pub lead: Option<AutoLead>,
    /// Preemptable pods on the zone now.
    pub remaining: u32,
    pub estimate: DrainEstimate,
    /// How far off the expected empty instant may be: a miss by less is not called one.
    pub tolerance: SignedDuration,
    /// The close will be missed by more than [`Self::tolerance`] (or the zone is closed and will not
    /// be empty within it).
    pub at_risk: bool,
    /// What the estimate rests on, in a line.
    pub summary: String,
    /// What would make the close, when at risk.
    pub fix: Option<String>,
}

/// How an `auto` drain's start was chosen: its length as planned with every other drain in the same
/// queue, and alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoLead {
    pub needs: SignedDuration,
    pub alone: SignedDuration,
    /// The zones whose evictions share the queue with this drain's (they overlap it).
    pub shared_with: Vec<String>,
    /// What a later start would have needed, when that set the start earlier than this drain needs
    /// from it: the drains it would have shared the queue with lengthen it.
    pub later: Option<SharedDrain>,
}

/// A drain's length in the queue with others'.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedDrain {
    pub needs: SignedDuration,
    pub shared_with: Vec<String>,
}

impl ZoneOutlook {
    /// Time from the expected empty zone to the close; negative when it will be missed.
    pub fn margin(&self) -> Option<SignedDuration> {
        self.estimate.margin()
    }

    /// Nothing to drain: no preemptable pod on the zone, none to evict.
    pub fn idle(&self) -> bool {
        self.remaining == 0 && self.estimate.pods == 0
    }

    /// When the zone is expected to hold no preemptable pod; `None` when it holds none already (the
    /// estimate would say "now", a value that moves at every refresh) or some will stay.
    pub fn expected_empty_at(&self) -> Option<Timestamp> {
        self.estimate.empty_at().filter(|_| !self.idle())
    }

    /// Whether a drain already called at risk still is: until the plan expects the close kept (or the
    /// closed zone empty), not merely a miss within the estimate's error, so that a verdict near the
    /// line does not flap.
    pub fn still_at_risk(&self, was: bool) -> bool {
        if self.at_risk || !was {
            return self.at_risk;
        }
        match self.close {
            Some(_) => self.margin().is_none_or(|margin| margin.is_negative()),
            None => self.remaining > 0,
        }
    }
}

/// Whether the drain misses its close (`close`, ahead, or `closed_at`, past) by more than the
/// estimate's error: the zone not empty `tolerance` past it. A closed zone whose close is not known is
/// taken to have closed `now`.
pub(super) fn misses(
    estimate: &DrainEstimate,
    (close, closed_at): (Option<Timestamp>, Option<Timestamp>),
    remaining: u32,
    now: Timestamp,
    tolerance: SignedDuration,
) -> bool {
    if close.is_none() && remaining == 0 {
        return false;
    }
    let Some(empty) = estimate.empty_at() else {
        return true;
    };
    let by = close.or(closed_at).unwrap_or(now);
    empty.duration_since(by) > tolerance
}
