//! What the drain plan assumes of the controller beyond the cluster.

use jiff::{SignedDuration, Timestamp};

use super::{inputs::grace_of, pacing::Pacing};
use crate::cluster::PodInfo;

/// What the drain estimate takes beyond the cluster.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DrainSettings {
    pub pacing: Pacing,
    /// An `auto` drain starts this many times its estimated length before the close...
    pub margin: f64,
    /// ...plus this much (a cycle's start, the watch's delay, a slow first request). Also the least
    /// error the estimate is allowed: a close is called at risk only when missed by more.
    pub slack: SignedDuration,
    /// Closes further ahead than this are not estimated.
    pub horizon: SignedDuration,
    /// The grace period every eviction sets (`--eviction-grace-period-seconds`): a pod then takes
    /// this long to go, not its own `terminationGracePeriodSeconds`. `None`: each pod's own.
    pub grace_period: Option<SignedDuration>,
}

/// `--eviction-grace-period-seconds` as the drain plan reads it.
pub fn grace_period(seconds: Option<i64>) -> Option<SignedDuration> {
    seconds.map(|s| SignedDuration::from_secs(s.max(0)))
}

/// `--drain-margin`'s default: half as long again as the estimate.
pub const DEFAULT_MARGIN: f64 = 1.5;

/// The share of what is left of a drain by which the estimate may be off, beyond the slack: rounds
/// start a little late, requests and terminations vary.
const ERROR_SHARE: f64 = 0.05;

impl DrainSettings {
    pub fn new(pacing: Pacing) -> Self {
        DrainSettings {
            pacing,
            margin: DEFAULT_MARGIN,
            slack: SignedDuration::from_secs(30),
            horizon: SignedDuration::from_hours(24),
            grace_period: None,
        }
    }

    /// The lead an `auto` drain of this length needs, before `maxDrainBefore` bounds it.
    pub fn lead_for(&self, duration: SignedDuration) -> SignedDuration {
        let scaled = duration.as_secs_f64() * self.margin.max(1.0);
        SignedDuration::try_from_secs_f64(scaled)
            .unwrap_or(SignedDuration::MAX)
            .saturating_add(self.slack)
    }

    /// How long `pod` takes to go once its eviction is answered: what its zone showed (`observed`),
    /// else the grace period every eviction sets, else its own.
    pub fn terminates_in(&self, observed: Option<SignedDuration>, pod: &PodInfo) -> SignedDuration {
        observed
            .or(self.grace_period)
            .unwrap_or_else(|| grace_of(pod))
    }

    /// How far off the expected empty instant may be, seen from `now`: the slack, and a share of the
    /// time left until then.
    pub fn tolerance(&self, now: Timestamp, empty_at: Timestamp) -> SignedDuration {
        let left = empty_at.duration_since(now).max(SignedDuration::ZERO);
        SignedDuration::try_from_secs_f64(left.as_secs_f64() * ERROR_SHARE)
            .unwrap_or(SignedDuration::MAX)
            .saturating_add(self.slack)
    }
}
