//! Gate `cooldown` (Volcano's CDP): a pod is not evicted until its cooldown has passed since it was
//! scheduled, so that a freshly placed pod is not moved again before it has done any work.

use jiff::Timestamp;

use crate::{
    api::GoDuration,
    cluster::Setting,
    framework::{Candidate, Gate, GateId, PlanContext},
};

pub(crate) struct Cooldown;

/// `Ok` if a pod scheduled at `scheduled_at` with this cooldown may be evicted at `now`; otherwise the
/// instant from which it may. The pod is protected while `now - scheduled_at < cooldown`.
pub(crate) fn cooldown_until(
    scheduled_at: Timestamp,
    cooldown: GoDuration,
    now: Timestamp,
) -> Result<(), Timestamp> {
    let until = scheduled_at
        .checked_add(cooldown.to_signed())
        .unwrap_or(Timestamp::MAX);
    if now < until { Err(until) } else { Ok(()) }
}

/// `12m 5s`: what a person wants to read, to the second.
fn remaining(now: Timestamp, until: Timestamp) -> String {
    let seconds = until.as_second().saturating_sub(now.as_second()).max(1);
    humantime::format_duration(std::time::Duration::from_secs(seconds.unsigned_abs())).to_string()
}

impl Gate for Cooldown {
    fn id(&self) -> GateId {
        GateId::Cooldown
    }

    fn check(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) -> Result<(), String> {
        let Setting::Valid(cooldown) = ctx.cooldown(&candidate.pod) else {
            return Ok(());
        };
        if cooldown.as_std().is_zero() {
            return Ok(());
        }
        let Some(scheduled_at) = candidate.pod.scheduled_at else {
            // Without a scheduling time the cooldown cannot be shown to have passed.
            return Err(format!(
                "cooldown {cooldown}, but the pod has no PodScheduled time"
            ));
        };
        cooldown_until(scheduled_at, cooldown, ctx.now).map_err(|until| {
            format!(
                "cooldown {cooldown} since scheduled at {scheduled_at}: protected for {} more (until {until})",
                remaining(ctx.now, until)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn protected_strictly_before_the_cooldown_ends() {
        let scheduled = ts("2026-11-22T10:00:00Z");
        let hour = GoDuration::from_secs(3600);
        assert_eq!(
            cooldown_until(scheduled, hour, ts("2026-11-22T10:59:59Z")),
            Err(ts("2026-11-22T11:00:00Z"))
        );
        assert_eq!(
            cooldown_until(scheduled, hour, ts("2026-11-22T11:00:00Z")),
            Ok(())
        );
        assert_eq!(
            cooldown_until(scheduled, hour, ts("2026-11-23T00:00:00Z")),
            Ok(())
        );
    }

    #[test]
    fn huge_cooldowns_protect_forever_instead_of_overflowing() {
        let forever = GoDuration(std::time::Duration::from_secs(u64::MAX / 2));
        assert!(
            cooldown_until(
                ts("2026-11-22T10:00:00Z"),
                forever,
                ts("2099-01-01T00:00:00Z")
            )
            .is_err()
        );
    }
}
