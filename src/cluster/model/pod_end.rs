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

/// How long a pod says it runs, from its start: the shorter of its deadline and its declared run time
/// (its own, else its PodGroup's). `None` when it says neither or its declaration cannot be read (gate
/// `invalid` refuses such a pod).
pub fn run_time(pod: &PodInfo, group: Option<&PodGroupInfo>) -> Option<EndCause> {
    let declared = pod
        .expected_run_time()
        .or_else(|| group.map_or(Setting::Unset, |g| g.expected_run_time.clone()));
    let declared = match declared {
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
