//! The leader-election rules, as client-go's `leaderelection` applies them to a Lease, as pure functions.
//!
//! Expiry is judged on the observer's own monotonic clock: a lease held by someone else counts as expired
//! only once its record has stayed unchanged for `leaseDurationSeconds` since *we* first saw it. Clocks
//! of different nodes are never compared, so skew cannot make two replicas lead at once.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::{api::coordination::v1::LeaseSpec, apimachinery::pkg::apis::meta::v1::MicroTime};
use tokio::time::Instant;

/// The record as last seen, and when we saw it change.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Observed {
    pub spec: LeaseSpec,
    pub changed_at: Instant,
}

impl Observed {
    /// Updates the observation with what the server returned at `now`.
    pub(crate) fn update(previous: Option<Observed>, spec: LeaseSpec, now: Instant) -> Observed {
        match previous {
            Some(previous) if previous.spec == spec => previous,
            _ => Observed {
                spec,
                changed_at: now,
            },
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Write ourselves into the lease (acquire or renew).
    Claim,
    /// Someone else holds a lease that has not expired by our clock.
    Wait,
}

pub(crate) fn decide(identity: &str, observed: &Observed, now: Instant) -> Decision {
    let holder = observed
        .spec
        .holder_identity
        .as_deref()
        .filter(|h| !h.is_empty());
    match holder {
        None => Decision::Claim,
        Some(holder) if holder == identity => Decision::Claim,
        Some(_) => {
            let seconds = observed.spec.lease_duration_seconds.unwrap_or(0).max(0);
            let duration = Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
            if now >= observed.changed_at + duration {
                Decision::Claim
            } else {
                Decision::Wait
            }
        }
    }
}

/// The record that claims the lease for `identity` at wall-clock `now`.
pub(crate) fn claimed(
    identity: &str,
    current: &LeaseSpec,
    lease_duration: Duration,
    now: Timestamp,
) -> LeaseSpec {
    let ours = current.holder_identity.as_deref() == Some(identity);
    let transitions = current.lease_transitions.unwrap_or(0);
    LeaseSpec {
        holder_identity: Some(identity.to_owned()),
        lease_duration_seconds: Some(duration_seconds(lease_duration)),
        acquire_time: if ours {
            current.acquire_time.clone().or(Some(MicroTime(now)))
        } else {
            Some(MicroTime(now))
        },
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(if ours {
            transitions
        } else {
            transitions.saturating_add(1)
        }),
        ..current.clone()
    }
}

/// The record that hands the lease back, so that a standby takes over without waiting for expiry.
pub(crate) fn released(current: &LeaseSpec, now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: None,
        lease_duration_seconds: Some(1),
        renew_time: Some(MicroTime(now)),
        ..current.clone()
    }
}

/// Whole seconds, rounded up and at least 1, as the Lease field holds.
pub(crate) fn duration_seconds(duration: Duration) -> i32 {
    let secs = duration.as_secs() + u64::from(duration.subsec_nanos() > 0);
    i32::try_from(secs.max(1)).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: Option<&str>, seconds: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(str::to_owned),
            lease_duration_seconds: Some(seconds),
            lease_transitions: Some(3),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn free_or_own_lease_is_claimed() {
        let now = Instant::now();
        let free = Observed::update(None, spec(None, 15), now);
        assert_eq!(decide("a", &free, now), Decision::Claim);
        let empty = Observed::update(None, spec(Some(""), 15), now);
        assert_eq!(decide("a", &empty, now), Decision::Claim);
        let ours = Observed::update(None, spec(Some("a"), 15), now);
        assert_eq!(decide("a", &ours, now), Decision::Claim);
    }

    #[test]
    fn others_lease_expires_on_our_clock_from_the_last_change_we_saw() {
        let t0 = Instant::now();
        let seen = Observed::update(None, spec(Some("b"), 15), t0);
        assert_eq!(
            decide("a", &seen, t0 + Duration::from_secs(14)),
            Decision::Wait
        );
        // Unchanged record seen again later: the clock keeps running from t0.
        let again = Observed::update(
            Some(seen),
            spec(Some("b"), 15),
            t0 + Duration::from_secs(10),
        );
        assert_eq!(again.changed_at, t0);
        assert_eq!(
            decide("a", &again, t0 + Duration::from_secs(15)),
            Decision::Claim
        );
        // A renewal (changed record) restarts it.
        let mut renewed = spec(Some("b"), 15);
        renewed.renew_time = Some(MicroTime(Timestamp::UNIX_EPOCH));
        let t1 = t0 + Duration::from_secs(12);
        let renewed = Observed::update(Some(again), renewed, t1);
        assert_eq!(renewed.changed_at, t1);
        assert_eq!(
            decide("a", &renewed, t0 + Duration::from_secs(20)),
            Decision::Wait
        );
    }

    #[test]
    fn claiming_counts_transitions_only_on_a_change_of_holder() {
        let now = Timestamp::UNIX_EPOCH;
        let taken = claimed("a", &spec(Some("b"), 15), Duration::from_millis(1500), now);
        assert_eq!(taken.holder_identity.as_deref(), Some("a"));
        assert_eq!(taken.lease_transitions, Some(4));
        assert_eq!(taken.lease_duration_seconds, Some(2));
        assert_eq!(taken.acquire_time, Some(MicroTime(now)));
        let later = now + jiff::SignedDuration::from_secs(5);
        let renewed = claimed("a", &taken, Duration::from_secs(15), later);
        assert_eq!(renewed.lease_transitions, Some(4));
        assert_eq!(renewed.acquire_time, Some(MicroTime(now)));
        assert_eq!(renewed.renew_time, Some(MicroTime(later)));
    }

    #[test]
    fn release_clears_the_holder() {
        let released = released(&spec(Some("a"), 15), Timestamp::UNIX_EPOCH);
        assert_eq!(released.holder_identity, None);
        assert_eq!(released.lease_transitions, Some(3));
    }

    #[test]
    fn durations_round_up_to_whole_seconds() {
        assert_eq!(duration_seconds(Duration::from_millis(200)), 1);
        assert_eq!(duration_seconds(Duration::from_secs(15)), 15);
        assert_eq!(duration_seconds(Duration::from_millis(15_001)), 16);
        assert_eq!(duration_seconds(Duration::ZERO), 1);
    }
}
