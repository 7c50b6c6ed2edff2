//! Gate `notice`: a drain of a zone that asks for `evictionNotice` evicts a pod only once it has been
//! told that long ago (see [`crate::drain::notice`]). A pod not told yet is told by the controller
//! when its zone's drain nears; until its notice has run, it stays.

use jiff::Timestamp;

use crate::{
    cluster::noticed_at,
    framework::{Candidate, Gate, GateId, PlanContext},
};

pub(crate) struct Notice;

impl Gate for Notice {
    fn id(&self) -> GateId {
        GateId::Notice
    }

    fn check(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) -> Result<(), String> {
        let Some(name) = candidate.drained_zone() else {
            return Ok(());
        };
        let Some(zone) = ctx.snapshot.zones.get(name) else {
            return Ok(());
        };
        let Some(notice) = zone.eviction_notice() else {
            return Ok(());
        };
        let shown = humantime::format_duration(notice.unsigned_abs());
        let Some(told) = noticed_at(&candidate.pod, zone, ctx.now) else {
            return Err(format!(
                "zone {name} gives {shown} of notice and the pod has not been told yet: it is told \
                 as the drain nears (at once during one) and goes {shown} after"
            ));
        };
        let from = told.checked_add(notice).unwrap_or(Timestamp::MAX);
        if ctx.now < from {
            return Err(format!(
                "told at {told} that it goes, with {shown} of notice: evicted from {from} on"
            ));
        }
        Ok(())
    }
}
