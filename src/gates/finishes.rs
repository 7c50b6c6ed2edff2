//! Gate `finishes`: a pod that ends by itself before its zone's close (its `activeDeadlineSeconds`, or
//! the run time it or its PodGroup declares) is left to finish rather than have its work thrown away by
//! a drain. Only drains: the close is what makes waiting for the pod's end free. Should the pod overstay
//! its end, the gate lets it through and the drain evicts it, still before the close
//! ([`crate::cluster::finishes_before`] leaves the time for that).

use jiff::{SignedDuration, Timestamp};

use crate::{
    cluster::{PodEnd, finishes_before, overstayed},
    framework::{Candidate, Gate, GateId, PlanContext},
};

pub(crate) struct Finishes;

/// When a drained candidate ends by itself in time for `close`: its end, if it is left to finish.
fn left_to_finish(
    end: Option<PodEnd>,
    grace: SignedDuration,
    evict_period: SignedDuration,
    close: Timestamp,
    now: Timestamp,
) -> Option<PodEnd> {
    end.filter(|end| {
        finishes_before(end.at, grace, evict_period, close) && !overstayed(end.at, grace, now)
    })
}

/// The close the candidate's zone drains for, and its `evictPeriod`: `None` unless the candidate is a
/// drain's and its zone is open with a close ahead.
fn drain_close(
    candidate: &Candidate,
    ctx: &PlanContext<'_>,
) -> Option<(Timestamp, SignedDuration)> {
    let zone = candidate.drained_zone()?;
    let state = ctx.zones.get(zone)?.state.as_ref().ok()?;
    let close = state.next_change.filter(|_| state.open)?;
    let evict_period = ctx.snapshot.zones.get(zone)?.spec.evict_period.to_signed();
    Some((close, evict_period))
}

impl Gate for Finishes {
    fn id(&self) -> GateId {
        GateId::Finishes
    }

    fn check(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) -> Result<(), String> {
        let lets_finish = ctx
            .policy
            .spec
            .strategies
            .tdm
            .as_ref()
            .is_none_or(|tdm| tdm.let_pods_finish);
        if !lets_finish {
            return Ok(());
        }
        let Some((close, evict_period)) = drain_close(candidate, ctx) else {
            return Ok(());
        };
        let pod = &candidate.pod;
        let grace = SignedDuration::from_secs(i64::from(pod.termination_grace_seconds()));
        let Some(end) = left_to_finish(ctx.pod_end(pod), grace, evict_period, close, ctx.now)
        else {
            return Ok(());
        };
        let started = pod
            .started_at()
            .map_or_else(String::new, |start| format!(" from its start at {start}"));
        // The close as the operator wrote it (10:00), not its first closed second (10:00:01).
        let shown = candidate
            .drained_zone()
            .and_then(|zone| ctx.zones.get(zone))
            .and_then(|view| jiff::tz::TimeZone::get(&view.time_zone).ok())
            .map_or(close, |tz| crate::time_windows::close_boundary(&tz, close));
        Err(format!(
            "ends by itself at {} ({}{started}), before the close at {shown}: left to finish, with \
             time to evict it should it overstay",
            end.at, end.cause
        ))
    }
}
