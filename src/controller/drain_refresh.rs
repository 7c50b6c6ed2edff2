//! The controller's side of draining in time: every few seconds while a drain is near or under way
//! (every minute otherwise), the drain plan is made again from the cache, the queue and the rate
//! limit as they stand. An `auto` drain the plan says is due starts at once (noted in the cache, so
//! that the next plan, the taint keeper and the zone's status all see it); the zones' drain status,
//! the `DrainOnTrack` condition, the drain gauges and the Events follow the plan.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use tracing::info;

use super::{
    cycle::CycleRunner,
    status::{self, ZoneWrite},
};
use crate::{
    cluster::{DrainStart, ObjectKind, PolicyInfo},
    drain::{self, DrainSettings, Pacing},
    framework::{ZoneView, zone_views},
};

impl CycleRunner {
    /// Brings the drain plan up to `now` when it is due (or `force`d, at a cycle's start): starts
    /// `auto` drains that are due, and writes the drain gauges; between cycles also the zones' status.
    pub async fn refresh_drains(&mut self, now: Timestamp, force: bool) {
        if !force && self.drains.next_refresh(now) > now {
            return;
        }
        let retired = self.refresh_snapshot(now);
        let policies: Vec<&PolicyInfo> =
            self.snapshot.policies.values().map(AsRef::as_ref).collect();
        let observed: BTreeMap<String, SignedDuration> = {
            let cache = self.shared.read();
            self.snapshot
                .zones
                .keys()
                .filter_map(|zone| Some((zone.clone(), cache.observed_termination(zone)?)))
                .collect()
        };
        let settings = self.drain_settings();
        let queued = self.queue.holds();
        let plan = {
            let observed = |zone: &str| observed.get(zone).copied();
            let live = drain::Live {
                observed: &observed,
                queued: &queued,
                bucket: Some(self.evictor.bucket()),
            };
            drain::plan(&self.snapshot, &policies, now, &settings, &live)
        };
        let mut started = Vec::new();
        for zone in plan.iter().filter(|o| o.start_now) {
            let Some(close) = zone.close else {
                continue;
            };
            info!(
                zone = %zone.zone,
                close = %close,
                "drain starts: {}",
                drain::advice::start_text(zone, &settings)
            );
            self.shared
                .write()
                .note_drain_start(&zone.zone, DrainStart { close, at: now });
            started.push(zone.clone());
        }
        if !started.is_empty() {
            // The taint keeper and the control loop act on the zone's new phase.
            self.shared.notify_config_change();
            drop(self.refresh_snapshot(now));
        }
        let (notices, withdrawals) = self.notices_due(&plan, now);
        let (views, _) = zone_views(&self.snapshot, now);
        let preemptable: BTreeMap<String, u32> = views
            .keys()
            .map(|zone| (zone.clone(), status::preemptable_pods(&self.snapshot, zone)))
            .collect();
        self.shared.write().lend_snapshot(&mut self.snapshot);
        drop(retired);
        self.drains.take(plan, now);
        self.metrics.set_drains(&self.drains.gauges());
        for zone in &started {
            let uid = self.uid_of(ObjectKind::RevocableZone, &zone.zone);
            self.status
                .drain_started(&zone.zone, uid.as_deref(), zone, &settings)
                .await;
        }
        if !force {
            self.write_zones(&views, &preemptable, now).await;
        }
        let (client, status, metrics) = (
            self.client.clone(),
            self.status.clone(),
            self.metrics.clone(),
        );
        self.notifier
            .give(&client, &status, &metrics, notices)
            .await;
        self.notifier.withdraw(&client, &metrics, withdrawals).await;
    }

    /// The eviction notices due at `now` by `plan`, and those to take back: none unless the
    /// draining policy evicts (a DryRun policy tells no pod) and this replica may act.
    fn notices_due(
        &mut self,
        plan: &[drain::ZoneOutlook],
        now: Timestamp,
    ) -> (Vec<drain::notice::Notice>, Vec<drain::notice::Withdrawal>) {
        use crate::controller::evictor::Guard;
        let policies: Vec<&PolicyInfo> =
            self.snapshot.policies.values().map(AsRef::as_ref).collect();
        let Some(policy) = drain::draining_policy(&policies)
            .filter(|policy| policy.spec.mode == crate::api::PolicyMode::Evict)
        else {
            return Default::default();
        };
        if self.guard.may_act(false).is_err() {
            return Default::default();
        }
        let noticing: Vec<drain::notice::Noticing> = plan
            .iter()
            .filter_map(drain::notice::Noticing::of)
            .collect();
        let told = self.notifier.recently_told(now);
        (
            drain::notice::due(&self.snapshot, policy, &noticing, now, &told),
            drain::notice::withdrawals(&self.snapshot, &noticing, now, &told),
        )
    }

    /// What the plan assumes of the evictor: its settings, and how long its requests took so far.
    pub(crate) fn drain_settings(&self) -> DrainSettings {
        let config = self.evictor.config();
        DrainSettings {
            margin: self.drains.margin,
            grace_period: crate::drain::grace_period(config.grace_period_seconds),
            ..DrainSettings::new(Pacing {
                qps: config.qps,
                burst: config.burst,
                concurrency: u32::try_from(config.concurrency).unwrap_or(u32::MAX),
                request: self
                    .evictor
                    .typical_request()
                    .and_then(|d| SignedDuration::try_from(d).ok())
                    .unwrap_or(Pacing::ASSUMED_REQUEST),
            })
        }
    }

    pub(crate) fn uid_of(&self, kind: ObjectKind, name: &str) -> Option<String> {
        self.shared.read().uid_of(kind, name).map(str::to_owned)
    }

    /// Writes every zone's status (its state, its drain), its gauges, and the warnings about it.
    pub(crate) async fn write_zones(
        &self,
        views: &BTreeMap<String, ZoneView>,
        preemptable: &BTreeMap<String, u32>,
        now: Timestamp,
    ) {
        self.metrics
            .set_zones(&super::cycle_result::zone_gauges(views, |zone| {
                preemptable.get(zone).copied().unwrap_or(0)
            }));
        let writes: Vec<ZoneWrite<'_>> = {
            let cache = self.shared.read();
            views
                .values()
                .map(|view| {
                    let zone = cache.zone(&view.name);
                    ZoneWrite {
                        view,
                        uid: zone.and_then(|z| z.uid.clone()),
                        // From the cache, not a snapshot: it holds the rounds this process started.
                        last_round: zone.and_then(|z| z.last_eviction_round),
                        started: zone
                            .and_then(|z| z.drain_started)
                            .map(|start| (start.close, start.at)),
                        preemptable: preemptable.get(&view.name).copied().unwrap_or(0),
                        outlook: self.drains.outlook(&view.name),
                        at_risk_written: zone.and_then(|z| z.at_risk_written),
                    }
                })
                .collect()
        };
        self.status.write_zones(&writes, now).await;
    }
}
