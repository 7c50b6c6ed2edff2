//! What an eviction answer means for tidal. Pure: status code and message in, decision out.

use jiff::Timestamp;

use crate::framework::{Refusal, SkipReason};

/// The kind of answer the API server gave, as far as retrying is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// 2xx: evicted (or, in a dry run, would be).
    Accepted,
    /// 429: a PodDisruptionBudget (or API throttling) refuses for now. Expected, never retried in-cycle.
    TooManyRequests,
    /// 404: the pod is already gone.
    NotFound,
    /// 409: the uid precondition failed: the pod was replaced by a namesake.
    Conflict,
    /// 5xx, 408 or a transport error/timeout: worth another try within the cycle's deadline.
    Retryable,
    /// Any other 4xx (403 forbidden, 422 invalid, ...): retrying will not help.
    Rejected,
}

/// [`classify`], with the answers whose status code misleads told apart by their message.
pub fn classify_answer(code: u16, message: &str) -> Answer {
    // The eviction subresource answers 500 when several PodDisruptionBudgets select the pod: a
    // configuration error that no retry will fix.
    if code == 500 && message.contains("more than one PodDisruptionBudget") {
        return Answer::Rejected;
    }
    classify(code)
}

pub fn classify(code: u16) -> Answer {
    match code {
        200..=299 => Answer::Accepted,
        429 => Answer::TooManyRequests,
        404 => Answer::NotFound,
        409 => Answer::Conflict,
        408 | 500..=599 => Answer::Retryable,
        _ => Answer::Rejected,
    }
}

/// Which reason a 429 counts under: the eviction subresource answers `DisruptionBudget` causes (and a
/// message naming the budget) when a PDB refuses; anything else is API Priority and Fairness.
pub(crate) fn too_many_requests_reason(message: &str, causes: &[String]) -> SkipReason {
    let budget = |text: &str| {
        let text = text.to_ascii_lowercase();
        text.contains("disruption budget") || text.contains("disruptionbudget")
    };
    if budget(message) || causes.iter().any(|c| budget(c)) {
        SkipReason::Pdb
    } else {
        SkipReason::Throttled
    }
}

/// The final result of one eviction request, after any retries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Evicted,
    /// An attempt got no answer, and a retry found the pod gone (404) or replaced (409): the
    /// unanswered attempt evicted it. Counted as an eviction, once.
    EvictedUnconfirmed,
    /// A dry run the API server accepted: the eviction would go through now.
    WouldEvict,
    /// 429: skipped for this cycle, for `reason` ([`SkipReason::Pdb`] or [`SkipReason::Throttled`]).
    Refused {
        reason: SkipReason,
        detail: String,
    },
    /// 404: nothing to do.
    Gone,
    /// 409: the pod is not the one tidal planned for (recreated under the same name).
    Replaced,
    /// A rejection or retries exhausted within the deadline.
    Failed(String),
    /// Retries exhausted after an attempt that got no answer: the server may have applied it. The
    /// pod is held as leaving until the watch shows whether it went (`controller::unanswered`).
    /// `ended`: when the last attempt that got no answer ended, which is what the watch is compared
    /// with.
    Unanswered {
        why: String,
        ended: Timestamp,
    },
    /// Never sent, or abandoned: no longer leader, shutting down, or out of time.
    Abandoned(String),
    /// A DryRun policy's planned eviction that no dry run checked this cycle (past the cycle's
    /// verification budget, or not sent in time). It stays planned: a DryRun plan is the plan.
    Unverified(String),
}

impl Outcome {
    /// The label metrics and logs use.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Evicted => "evicted",
            Outcome::EvictedUnconfirmed => "evicted_unconfirmed",
            Outcome::WouldEvict => "dry_run",
            Outcome::Refused { .. } => "refused",
            Outcome::Gone => "gone",
            Outcome::Replaced => "replaced",
            Outcome::Failed(_) => "failed",
            Outcome::Unanswered { .. } => "unanswered",
            Outcome::Abandoned(_) => "abandoned",
            Outcome::Unverified(_) => "unverified",
        }
    }

    /// The API server (as far as tidal can tell) evicted the pod: mark it, count it, tell it.
    pub fn evicted(&self) -> bool {
        matches!(self, Outcome::Evicted | Outcome::EvictedUnconfirmed)
    }

    /// The API server did not take the eviction for reasons of its own rather than the pod's: it
    /// throttled it (a 429 that no disruption budget caused), or it was never sent or given up on (the
    /// server away, leadership lost). The round it belonged to is not done.
    pub fn cuts_round_short(&self) -> bool {
        matches!(
            self,
            Outcome::Refused {
                reason: SkipReason::Throttled,
                ..
            } | Outcome::Abandoned(_)
        )
    }

    /// Status and report treat every outcome but a (would-be) eviction as a skip, for this reason.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            Outcome::Evicted
            | Outcome::EvictedUnconfirmed
            | Outcome::WouldEvict
            | Outcome::Unverified(_) => None,
            Outcome::Refused { reason, detail } => Some(Refusal::new(*reason, detail.clone())),
            Outcome::Gone => Some(Refusal::new(SkipReason::Gone, "the pod no longer exists")),
            Outcome::Replaced => Some(Refusal::new(
                SkipReason::Gone,
                "the pod was replaced by another with the same name",
            )),
            Outcome::Failed(why) => Some(Refusal::new(SkipReason::Error, why.clone())),
            Outcome::Unanswered { why, .. } => Some(Refusal::new(
                SkipReason::Error,
                format!(
                    "{why}; an attempt got no answer, so the pod counts as leaving until the watch shows whether it went"
                ),
            )),
            Outcome::Abandoned(why) => Some(Refusal::new(SkipReason::Abandoned, why.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes() {
        assert_eq!(classify(200), Answer::Accepted);
        assert_eq!(classify(201), Answer::Accepted);
        assert_eq!(classify(429), Answer::TooManyRequests);
        assert_eq!(classify(404), Answer::NotFound);
        assert_eq!(classify(409), Answer::Conflict);
        assert_eq!(classify(500), Answer::Retryable);
        assert_eq!(classify(503), Answer::Retryable);
        assert_eq!(classify(504), Answer::Retryable);
        assert_eq!(classify(408), Answer::Retryable);
        assert_eq!(classify(403), Answer::Rejected);
        assert_eq!(classify(422), Answer::Rejected);
        assert_eq!(classify(400), Answer::Rejected);
    }

    #[test]
    fn several_budgets_on_one_pod_is_not_worth_retrying() {
        let message = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";
        assert_eq!(classify_answer(500, message), Answer::Rejected);
        assert_eq!(
            classify_answer(500, "etcdserver: request timed out"),
            Answer::Retryable
        );
        assert_eq!(classify_answer(404, message), Answer::NotFound);
    }

    #[test]
    fn pdb_refusals_are_told_from_throttling() {
        assert_eq!(
            too_many_requests_reason(
                "Cannot evict pod as it would violate the pod's disruption budget.",
                &[]
            ),
            SkipReason::Pdb
        );
        assert_eq!(
            too_many_requests_reason("", &["DisruptionBudget".to_owned()]),
            SkipReason::Pdb
        );
        assert_eq!(
            too_many_requests_reason("too many requests, please try again later", &[]),
            SkipReason::Throttled
        );
    }

    #[test]
    fn only_evictions_are_not_skips() {
        assert_eq!(Outcome::Evicted.refusal(), None);
        assert_eq!(Outcome::WouldEvict.refusal(), None);
        assert_eq!(Outcome::Unverified("budget".into()).refusal(), None);
        let refused = Outcome::Refused {
            reason: SkipReason::Pdb,
            detail: "x".into(),
        };
        assert_eq!(refused.refusal().unwrap().reason, SkipReason::Pdb);
        assert_eq!(Outcome::Gone.refusal().unwrap().reason, SkipReason::Gone);
        assert_eq!(
            Outcome::Replaced.refusal().unwrap().reason,
            SkipReason::Gone
        );
        assert_eq!(
            Outcome::Failed("boom".into()).refusal().unwrap().reason,
            SkipReason::Error
        );
    }
}
