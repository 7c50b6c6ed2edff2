//! What the controller keeps of the drains between cycles: the last drain plan, each zone's verdict
//! followed from plan to plan (a close called at risk stays so until the plan expects it kept, so the
//! verdict does not flap near the line), and the rounds budgets held back. Pure: the refresh that
//! feeds it is in `drain_refresh.rs`.

use std::collections::{BTreeMap, HashMap};

use jiff::{SignedDuration, Timestamp};

use super::metrics::DrainGauges;
use crate::{api::DrainBefore, drain::ZoneOutlook, framework::ZoneView, planner::Plan};

/// How often the plan is refreshed while a drain is under way or about to start...
const ACTIVE_REFRESH: SignedDuration = SignedDuration::from_secs(5);
/// ...and otherwise: often enough to see a close at risk long before it.
const IDLE_REFRESH: SignedDuration = SignedDuration::from_secs(60);

#[derive(Debug, Default)]
pub struct Drains {
    /// `--drain-margin`.
    pub margin: f64,
    outlook: BTreeMap<String, ZoneOutlook>,
    refreshed: Option<Timestamp>,
    /// Zones whose due round found pods but evicted none (budgets held them all), and when.
    attempts: HashMap<String, Timestamp>,
    /// Zones called at risk, with the close they were called at risk for (`None`: closed).
    at_risk: BTreeMap<String, Option<Timestamp>>,
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

    /// Takes a new plan made at `now`: each zone's verdict follows the last one's.
    pub fn take(&mut self, plan: Vec<ZoneOutlook>, now: Timestamp) {
        let mut at_risk = BTreeMap::new();
        self.outlook = plan
            .into_iter()
            .map(|mut outlook| {
                let was = self.at_risk.get(&outlook.zone) == Some(&outlook.close);
                outlook.at_risk = outlook.still_at_risk(was);
                if outlook.at_risk {
                    at_risk.insert(outlook.zone.clone(), outlook.close);
                }
                (outlook.zone.clone(), outlook)
            })
            .collect();
        self.at_risk = at_risk;
        self.refreshed = Some(now);
    }

    pub fn outlook(&self, zone: &str) -> Option<&ZoneOutlook> {
        self.outlook.get(zone)
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
            let soon = |at: Timestamp| at.duration_since(now) < IDLE_REFRESH.saturating_mul(2);
            (o.evicting && o.remaining > 0)
                || o.drain_start.is_some_and(soon)
                || (o.remaining > 0 && o.notices_from.is_some_and(soon))
        })
    }

    /// When the plan is next due for a refresh.
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

    /// The drain gauges, as the plan stands.
    pub fn gauges(&self) -> Vec<DrainGauges> {
        self.outlook
            .values()
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
}

fn seconds(at: Timestamp) -> f64 {
    at.as_millisecond() as f64 / 1000.0
}
