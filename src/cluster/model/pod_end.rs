//! When a pod ends by itself: the kubelet ends it at `startTime + activeDeadlineSeconds`, and a pod
//! (or its PodGroup) may declare how long it runs (`tidal.dev/expected-run-time`). Drains let a pod that
//! ends before the close finish instead of throwing its work away, and admission keeps a pod that needs
//! longer than a zone has left off that zone.

use std::fmt;

use jiff::{SignedDuration, Timestamp};

use crate::{
    api::GoDuration,
    cluster::{PodInfo, Setting, model::workload::PodGroupInfo},
};

/// What ends a pod by itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndCause {
    /// `spec.activeDeadlineSeconds`: enforced by the kubelet.
    ActiveDeadline(u32),
    /// `tidal.dev/expected-run-time`: declared, not enforced.
    Declared(GoDuration),
}

impl EndCause {
    /// How long the pod runs from its start.
    pub fn run_time(self) -> SignedDuration {
        match self {
            EndCause::ActiveDeadline(seconds) => SignedDuration::from_secs(i64::from(seconds)),
            EndCause::Declared(run_time) => run_time.to_signed(),
        }
    }
}

impl fmt::Display for EndCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EndCause::ActiveDeadline(seconds) => write!(f, "activeDeadlineSeconds {seconds}"),
            EndCause::Declared(run_time) => write!(f, "expected-run-time {run_time}"),
        }
    }
}

/// The instant a started pod ends by itself, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodEnd {
    pub at: Timestamp,
    pub cause: EndCause,
}

/// The pod's own [`crate::api::labels::EXPECTED_RUN_TIME`], else its PodGroup's.
pub fn declared_run_time(pod: &PodInfo, group: Option<&PodGroupInfo>) -> Setting<GoDuration> {
    pod.expected_run_time()
        .or_else(|| group.map_or(Setting::Unset, |g| g.expected_run_time.clone()))
}

/// How long a pod says it runs, from its start: the shorter of its deadline and its declared run time
/// (its own, else its PodGroup's). `None` when it says neither or its declaration cannot be read (gate
/// `invalid` refuses such a pod).
pub fn run_time(pod: &PodInfo, group: Option<&PodGroupInfo>) -> Option<EndCause> {
    let declared = match declared_run_time(pod, group) {
        Setting::Valid(run_time) => Some(EndCause::Declared(run_time)),
        Setting::Unset | Setting::Invalid(_) => None,
    };
    let deadline = pod.active_deadline_seconds().map(EndCause::ActiveDeadline);
    [deadline, declared]
        .into_iter()
        .flatten()
        .min_by_key(|cause| cause.run_time())
}

/// When `pod` ends by itself: its start plus [`run_time`]. `None` for a pod not started (its
/// deadline counts from a start it has not had) or that says nothing of its end.
pub fn pod_end(pod: &PodInfo, group: Option<&PodGroupInfo>) -> Option<PodEnd> {
    let cause = run_time(pod, group)?;
    let at = pod
        .started_at()?
        .checked_add(cause.run_time())
        .unwrap_or(Timestamp::MAX);
    Some(PodEnd { at, cause })
}

/// Whether a pod that ends by itself at `end` is done early enough before a zone's close at `close`
/// that the zone's drain leaves it to finish rather than evicting it: `end + 2 × grace + evict_period
/// <= close`. One rule, read by the drain (which lets such a pod finish) and by admission (which lets
/// a pod onto a zone only when the drain would then let it finish), so that what admission places is
/// what the drain leaves alone.
///
/// The margin is what evicting the pod would still take were its end late: the zone's next round,
/// at most `evict_period` away, and the pod's termination grace twice (the pod stopping at its end,
/// then stopping again when evicted). `grace` is the pod's `terminationGracePeriodSeconds`; a negative
/// `grace` or `evict_period` counts as zero, so that no value lets a pod run past the close; an
/// instant past the end of time never finishes before anything.
pub fn finishes_before(
    end: Timestamp,
    grace: SignedDuration,
    evict_period: SignedDuration,
    close: Timestamp,
) -> bool {
    let grace = grace.max(SignedDuration::ZERO);
    let evict_period = evict_period.max(SignedDuration::ZERO);
    grace
        .checked_mul(2)
        .and_then(|twice| twice.checked_add(evict_period))
        .and_then(|margin| end.checked_add(margin).ok())
        .is_some_and(|done| done <= close)
}

/// A pod still running once its end and its grace period have passed did not end as it said (a
/// deadline the kubelet failed to enforce, a declaration that was wrong): it is evicted like any other.
pub fn overstayed(end: Timestamp, grace: SignedDuration, now: Timestamp) -> bool {
    end.checked_add(grace).is_ok_and(|until| now >= until)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testkit::{pod, podgroup, ts};

    /// Started at 08:00.
    fn started() -> crate::testkit::PodBuilder {
        pod("ns/p", "n1").created("2026-03-04T08:00:00Z")
    }

    #[test]
    fn the_deadline_counts_from_the_start_and_the_shorter_of_two_ends_wins() {
        let deadline = started().spec("activeDeadlineSeconds", json!(7200)).build();
        assert_eq!(
            pod_end(&deadline, None),
            Some(PodEnd {
                at: ts("2026-03-04T10:00:00Z"),
                cause: EndCause::ActiveDeadline(7200)
            })
        );
        let both = started()
            .spec("activeDeadlineSeconds", json!(7200))
            .annotation("tidal.dev/expected-run-time", "90m")
            .build();
        assert_eq!(
            pod_end(&both, None).map(|end| end.at),
            Some(ts("2026-03-04T09:30:00Z"))
        );
    }

    #[test]
    fn a_group_declares_for_pods_that_do_not() {
        let group = podgroup("ns/g")
            .annotation("tidal.dev/expected-run-time", "1h")
            .build();
        assert_eq!(
            pod_end(&started().build(), Some(&group)).map(|end| end.at),
            Some(ts("2026-03-04T09:00:00Z"))
        );
        let own = started()
            .annotation("tidal.dev/expected-run-time", "2h")
            .build();
        assert_eq!(
            pod_end(&own, Some(&group)).map(|end| end.at),
            Some(ts("2026-03-04T10:00:00Z"))
        );
    }

    #[test]
    fn a_pod_finishes_before_the_close_with_twice_its_grace_and_one_period_to_spare() {
        let close = ts("2026-03-04T21:00:00Z");
        let grace = SignedDuration::from_secs(30);
        let period = SignedDuration::from_mins(5);
        // 21:00 - 5m - 2 × 30s = 20:54: the latest end the drain leaves to finish.
        assert!(finishes_before(
            ts("2026-03-04T20:54:00Z"),
            grace,
            period,
            close
        ));
        assert!(!finishes_before(
            ts("2026-03-04T20:54:01Z"),
            grace,
            period,
            close
        ));
        assert!(!finishes_before(
            ts("2026-03-04T21:30:00Z"),
            SignedDuration::ZERO,
            SignedDuration::ZERO,
            close
        ));
        // A negative margin never lets a pod end after the close.
        assert!(!finishes_before(
            ts("2026-03-04T21:00:01Z"),
            SignedDuration::from_secs(-60),
            SignedDuration::from_secs(-60),
            close
        ));
        // A margin past the end of time does not finish, and does not panic.
        assert!(!finishes_before(
            ts("2026-03-04T20:00:00Z"),
            SignedDuration::MAX,
            SignedDuration::MAX,
            close
        ));
        assert!(!finishes_before(Timestamp::MAX, grace, period, close));
        let end = ts("2026-03-04T09:00:00Z");
        assert!(!overstayed(end, grace, ts("2026-03-04T09:00:29Z")));
        assert!(overstayed(end, grace, ts("2026-03-04T09:00:30Z")));
    }

    #[test]
    fn the_work_an_eviction_throws_away_is_a_batch_pod_s_run_since_its_last_checkpoint() {
        let now = ts("2026-03-04T10:00:00Z");
        let batch = started().owned_by("Job", "report");
        assert_eq!(
            batch.clone().build().work_since_saved(now),
            SignedDuration::from_hours(2)
        );
        let saved = batch
            .annotation("tidal.dev/checkpointed-at", "2026-03-04T09:45:00Z")
            .build();
        assert_eq!(saved.work_since_saved(now), SignedDuration::from_mins(15));
        // A service replica's run is not lost: its replacement takes over. It still orders victims.
        let replica = started().owned_by("ReplicaSet", "web").build();
        assert_eq!(replica.work_since_saved(now), SignedDuration::ZERO);
        assert_eq!(replica.run_since_saved(now), SignedDuration::from_hours(2));
        let gang_member = started()
            .owned_by("ReplicaSet", "web")
            .in_group("train")
            .build();
        assert_eq!(
            gang_member.work_since_saved(now),
            SignedDuration::from_hours(2)
        );
    }

    #[test]
    fn no_end_without_a_start_a_readable_declaration_or_a_deadline() {
        assert_eq!(pod_end(&started().build(), None), None);
        let unreadable = started()
            .annotation("tidal.dev/expected-run-time", "soon")
            .build();
        assert_eq!(pod_end(&unreadable, None), None);
        assert!(matches!(
            unreadable.expected_run_time(),
            Setting::Invalid(_)
        ));
        let unstarted = pod("ns/p", "")
            .spec("activeDeadlineSeconds", json!(60))
            .build();
        assert_eq!(pod_end(&unstarted, None), None);
    }
}
