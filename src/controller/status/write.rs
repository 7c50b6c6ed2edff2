//! What a cycle writes back, each in one call: the zones' status (state, drain, conditions, warnings)
//! and, once its evictions all have an outcome, its policies' status, Events and warnings.

use std::collections::BTreeMap;

use jiff::Timestamp;
use kube::runtime::events::{Event, EventType};
use tracing::info;

use super::{
    StatusWriter, compute,
    compute::{PolicyCounts, ZoneDrainStatus},
    truncate, zone_reference,
};
use crate::{
    cluster::{AtRiskCall, ObjectKey, ObjectKind, Unreadable},
    controller::cycle_result::{CycleResult, invalid_pods},
    drain::{
        DrainSettings, ZoneOutlook,
        advice::{self, human},
    },
    framework::ZoneView,
};

/// One zone's status to write.
pub(crate) struct ZoneWrite<'a> {
    pub view: &'a ZoneView,
    pub uid: Option<String>,
    pub last_round: Option<Timestamp>,
    /// The close an `auto` drain started for, and when.
    pub started: Option<(Timestamp, Timestamp)>,
    pub preemptable: u32,
    pub outlook: Option<&'a ZoneOutlook>,
    /// The drain the zone's status calls at risk, as the cache last saw it.
    pub at_risk_written: Option<AtRiskCall>,
}

/// What the cache says of the objects a cycle's write-back is about.
pub(crate) struct CycleObjects {
    /// Each planned policy's generation, as the cycle planned it.
    pub generations: BTreeMap<String, Option<i64>>,
    /// The uid of each policy, as the watch last saw it.
    pub uids: BTreeMap<String, Option<String>>,
    pub unreadable: BTreeMap<(ObjectKind, ObjectKey), Unreadable>,
}

const ZONE: &str = "RevocableZone";
const POLICY: &str = "DeschedulingPolicy";
/// The memory key of the at-risk warning sent for a zone's close.
const DRAIN_AT_RISK: &str = "DrainAtRisk";

impl StatusWriter {
    /// Writes each zone's status and warns about what needs it: unreadable windows, and once per
    /// close, a drain that will not be done in time. Zones not among `zones` are forgotten.
    pub(crate) async fn write_zones(&self, zones: &[ZoneWrite<'_>], now: Timestamp) {
        for zone in zones {
            let name = zone.view.name.as_str();
            let uid = zone.uid.as_deref();
            self.identify(ZONE, name, uid);
            let previous = self.zone_ready(name);
            let previous_drain = self.previous_condition(ZONE, name, compute::DRAIN_ON_TRACK);
            let drain = ZoneDrainStatus {
                outlook: zone.outlook,
                started: zone.started,
                previous: previous_drain.as_ref(),
            };
            let status = compute::zone_status(
                zone.view,
                zone.preemptable,
                zone.last_round,
                now,
                previous.as_ref(),
                &drain,
            );
            self.zone(name, &status).await;
            let error = zone.view.state.as_ref().err().map(String::as_str);
            self.warn_invalid(ZONE, name, uid, error).await;
            self.adopt_warning(
                DRAIN_AT_RISK,
                name,
                zone.at_risk_written.map(|call| at_risk_key(call.close)),
            );
            self.warn_drain(name, uid, zone.outlook).await;
        }
        self.retain(ZONE, |name| zones.iter().any(|z| z.view.name == name));
        self.retain(DRAIN_AT_RISK, |name| {
            zones.iter().any(|z| z.view.name == name)
        });
    }

    /// A Warning Event when a close is called at risk (once per close: the verdict is followed from
    /// plan to plan, so it does not flap), naming what would fix it; a Normal Event when that call is
    /// withdrawn.
    async fn warn_drain(&self, zone: &str, uid: Option<&str>, outlook: Option<&ZoneOutlook>) {
        let key = (DRAIN_AT_RISK, zone.to_owned());
        let warned = self.memory().warned.get(&key).cloned();
        let Some(outlook) = outlook.filter(|o| o.at_risk) else {
            if warned.is_some() && self.may_write(ZONE, zone) {
                self.memory().warned.remove(&key);
                let event = Event {
                    type_: EventType::Normal,
                    reason: "DrainOnTrack".to_owned(),
                    note: Some(truncate(back_on_track(outlook))),
                    action: "Drain".to_owned(),
                    secondary: None,
                };
                info!(zone, "drain back on track");
                self.publish(event, zone_reference(zone, uid), ZONE).await;
            }
            return;
        };
        let close = at_risk_key(outlook.close);
        if warned.as_ref() == Some(&close) || !self.may_write(ZONE, zone) {
            return;
        }
        self.memory().warned.insert(key, close);
        let fix = outlook.fix.as_deref().unwrap_or_default();
        let note = match (outlook.close, outlook.estimate.empty_at()) {
            (Some(close), Some(empty)) => format!(
                "the drain will not be done by the close at {close}: expected empty at {empty} \
                 ({} late, more than the estimate's error of {}), {} pods still there at the \
                 close. {fix}",
                human(empty.duration_since(close)),
                human(outlook.tolerance),
                outlook.estimate.at_close
            ),
            (Some(close), None) => format!(
                "the zone will not be empty at the close at {close}: {} pods still there. {fix}",
                outlook.estimate.at_close
            ),
            (None, _) => format!(
                "the zone is closed and {} preemptable pods are still on it. {fix}",
                outlook.remaining
            ),
        };
        info!(zone, "drain at risk: {note}");
        let event = Event {
            type_: EventType::Warning,
            reason: "DrainAtRisk".to_owned(),
            note: Some(truncate(note)),
            action: "Drain".to_owned(),
            secondary: None,
        };
        self.publish(event, zone_reference(zone, uid), ZONE).await;
    }

    /// A Normal Event when an `auto` drain starts, with what it expects.
    pub(crate) async fn drain_started(
        &self,
        zone: &str,
        uid: Option<&str>,
        outlook: &ZoneOutlook,
        settings: &DrainSettings,
    ) {
        let close = outlook.close.map_or_else(String::new, |c| c.to_string());
        let event = Event {
            type_: EventType::Normal,
            reason: "DrainStarted".to_owned(),
            note: Some(truncate(format!(
                "draining ahead of the close at {close}: {}. {}",
                advice::start_text(outlook, settings),
                outlook.summary
            ))),
            action: "Drain".to_owned(),
            secondary: None,
        };
        self.publish(event, zone_reference(zone, uid), ZONE).await;
    }

    /// Writes what a cycle did once its evictions all have an outcome: the policies' status, their
    /// Events, and warnings on pods and objects tidal cannot read.
    pub(crate) async fn write_cycle(&self, cycle: &CycleResult, objects: &CycleObjects) {
        self.warn_invalid_pods(&invalid_pods(&cycle.policies)).await;
        self.warn_unreadable(&objects.unreadable).await;
        for result in &cycle.policies {
            let plan = &result.plan;
            let counts = PolicyCounts::of(plan, result.outcomes());
            let generation = objects.generations.get(&plan.policy).copied().flatten();
            let uid = objects.uids.get(&plan.policy).cloned().flatten();
            self.identify(POLICY, &plan.policy, uid.as_deref());
            let previous = self.policy_ready(&plan.policy);
            let written =
                compute::policy_status(plan, &counts, generation, cycle.now, previous.as_ref());
            self.policy(&plan.policy, &written).await;
            self.warn_invalid(POLICY, &plan.policy, uid.as_deref(), plan.error.as_deref())
                .await;
            if counts.planned > 0 {
                info!(policy = %plan.policy, "{}", counts.summary(plan.mode));
                self.policy_cycle(&plan.policy, uid.as_deref(), counts.summary(plan.mode))
                    .await;
            }
        }
        self.retain(POLICY, |name| objects.uids.contains_key(name));
    }
}

/// What the memory keeps of an at-risk warning: the close it was about.
fn at_risk_key(close: Option<Timestamp>) -> String {
    close.map_or_else(|| "closed".to_owned(), |close| close.to_string())
}

/// What a withdrawn at-risk call says: the close is expected kept again, or the closed zone is empty.
fn back_on_track(outlook: Option<&ZoneOutlook>) -> String {
    match outlook {
        Some(outlook) => match (outlook.close, outlook.expected_empty_at(), outlook.margin()) {
            (Some(close), Some(empty), Some(margin)) => format!(
                "the drain is expected done by the close at {close} again: expected empty at \
                 {empty}, {} before it",
                human(margin)
            ),
            (Some(close), _, _) => format!("the zone is expected empty by the close at {close}"),
            (None, Some(empty), _) => format!(
                "the closed zone's last {} preemptable pods are on their way out, expected gone \
                 at {empty}",
                outlook.remaining
            ),
            (None, None, _) => "the closed zone's preemptable pods are gone".to_owned(),
        },
        None => "the zone no longer drains: it is open, or no policy drains it".to_owned(),
    }
}
