//! The controller's side of draining in time: every few seconds while a drain is near or under way
//! (every minute otherwise), the drain outlook is brought up to date from the cache. An `auto` drain
//! that is due starts at once (noted in the cache, so that the next plan, the taint keeper and the
//! zone's status all see it); the zones' drain status, the `DrainOnTrack` condition, the drain gauges
//! and, once per close, a Warning Event when a close will be missed follow the outlook.

use std::collections::{BTreeMap, HashMap};

use jiff::{SignedDuration, Timestamp};
use tracing::info;

use super::{
    cycle::CycleRunner,
    metrics::DrainGauges,
    status::{self, ZoneWrite},
};
use crate::{
    api::DrainBefore,
    cluster::{DrainStart, ObjectKind, PolicyInfo},
    drain::{self, DrainSettings, Pacing, ZoneOutlook},
    framework::{ZoneView, zone_views},
    planner::Plan,
};

/// How often the outlook is refreshed while a drain is under way or about to start...
const ACTIVE_REFRESH: SignedDuration = SignedDuration::from_secs(5);
/// ...and otherwise: often enough to see a close at risk long before it.
const IDLE_REFRESH: SignedDuration = SignedDuration::from_secs(60);

/// What the controller keeps of the drains between cycles.
#[derive(Debug, Default)]
pub struct Drains {
    /// `--drain-margin`.
    pub margin: f64,
    outlook: BTreeMap<String, ZoneOutlook>,
    refreshed: Option<Timestamp>,
    /// Zones whose due round found pods but evicted none (budgets held them all), and when.
    attempts: HashMap<String, Timestamp>,
}

impl Drains {
    pub fn new(margin: f64) -> Self {
        Drains {
            margin,
            ..Drains::default()
        }
    }

    /// Forgets everything: a new leadership term starts from the cluster as it is.
    pub fn reset(&mut self) {
        *self = Drains::new(self.margin);
    }

    /// When the zone's last round was tried and budgets let nothing go.
    pub fn attempt(&self, zone: &str) -> Option<Timestamp> {
        self.attempts.get(zone).copied()
    }

    /// When an `auto` drain not yet started is planned to start.
    pub fn planned_start(&self, zone: &str) -> Option<Timestamp> {
        let outlook = self.outlook.get(zone)?;
        (outlook.drain_before == DrainBefore::Auto && !outlook.evicting)
            .then_some(outlook.drain_start)
            .flatten()
    }

    /// Where a zone's evictions queue: by its close, the earliest first; a closed zone's overdue
    /// pods before every close still ahead.
    pub fn priority(&self, zone: &str, view: Option<&ZoneView>) -> Timestamp {
        let close = view
            .and_then(|v| v.state.as_ref().ok())
            .map(|state| if state.open { state.next_change } else { None });
        match close {
            Some(Some(close)) => close,
            Some(None) => Timestamp::MIN,
            None => self
                .outlook
                .get(zone)
                .and_then(|o| o.close)
                .unwrap_or(Timestamp::MIN),
        }
    }

    /// After a plan: zones whose round was due, with preemptable pods left, that the plan evicted
    /// nothing from are tried again `evictPeriod` later; a zone that evicted forgets its attempt.
    pub fn note_attempts(
        &mut self,
        zones: &BTreeMap<String, ZoneView>,
        plans: &[Plan],
        preemptable: &BTreeMap<String, u32>,
        now: Timestamp,
    ) {
        for (name, view) in zones {
            let evicted = plans
                .iter()
                .any(|plan| plan.zones_with_evictions().contains(name.as_str()));
            let pods_left = preemptable.get(name).copied().unwrap_or(0) > 0;
            if view.evicting_now() && !evicted && pods_left {
                self.attempts.insert(name.clone(), now);
            } else if evicted || !pods_left {
                self.attempts.remove(name);
            }
        }
        self.attempts.retain(|zone, _| zones.contains_key(zone));
    }

    fn active(&self, now: Timestamp) -> bool {
        self.outlook.values().any(|o| {
            (o.evicting && o.remaining > 0)
                || o.drain_start
                    .is_some_and(|start| start.duration_since(now) < IDLE_REFRESH.saturating_mul(2))
        })
    }

    /// When the outlook is next due for a refresh.
    pub fn next_refresh(&self, now: Timestamp) -> Timestamp {
        let every = if self.active(now) {
            ACTIVE_REFRESH
        } else {
            IDLE_REFRESH
        };
        self.refreshed
            .and_then(|at| at.checked_add(every).ok())
            .unwrap_or(now)
    }
}

impl CycleRunner {
    /// Brings the drain outlook up to `now` when it is due (or `force`d, at a cycle's start): starts
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
        let outlook = drain::outlook(&self.snapshot, &policies, now, &settings, &|zone| {
            observed.get(zone).copied()
        });
        let mut started = Vec::new();
        for zone in outlook.iter().filter(|o| o.start_now) {
            let Some(close) = zone.close else {
                continue;
            };
            info!(
                zone = %zone.zone,
                close = %close,
                "drain starts: {}",
                zone.summary
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
        let (views, _) = zone_views(&self.snapshot, now);
        let preemptable: BTreeMap<String, u32> = views
            .keys()
            .map(|zone| (zone.clone(), status::preemptable_pods(&self.snapshot, zone)))
            .collect();
        self.shared.write().lend_snapshot(&mut self.snapshot);
        drop(retired);
        self.metrics.set_drains(&drain_gauges(&outlook));
        self.drains.outlook = outlook.into_iter().map(|o| (o.zone.clone(), o)).collect();
        self.drains.refreshed = Some(now);
        for zone in &started {
            let uid = self.uid_of(ObjectKind::RevocableZone, &zone.zone);
            self.status
                .drain_started(&zone.zone, uid.as_deref(), zone)
                .await;
        }
        if !force {
            self.write_zones(&views, &preemptable, now).await;
        }
    }

    /// What the outlook assumes of the evictor: its settings, and how long its requests took so far.
    fn drain_settings(&self) -> DrainSettings {
        let config = self.evictor.config();
        DrainSettings {
            margin: self.drains.margin,
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
                        outlook: self.drains.outlook.get(&view.name),
                    }
                })
                .collect()
        };
        self.status.write_zones(&writes, now).await;
    }
}

fn seconds(at: Timestamp) -> f64 {
    at.as_millisecond() as f64 / 1000.0
}

fn drain_gauges(outlook: &[ZoneOutlook]) -> Vec<DrainGauges> {
    outlook
        .iter()
        .map(|o| DrainGauges {
            zone: o.zone.clone(),
            remaining_pods: o.remaining,
            expected_empty: o.estimate.empty_at().map(seconds),
            margin: o.margin().map(|m| m.as_secs_f64()),
            at_risk: o.at_risk,
            start: o.drain_start.map(seconds),
        })
        .collect()
}
