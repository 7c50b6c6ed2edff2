//! The state of every revocable zone at the planning instant: open or closed, draining, whether its
//! eviction round is due. Computed once per cycle and shared by strategies, the report and zone status.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;

use super::{Warning, WarningKey};
use crate::{api::BudgetsAfterClose, cluster::Snapshot, time_windows::ZoneState};

#[derive(Clone, Debug, PartialEq)]
pub struct ZoneView {
    pub name: String,
    pub time_zone: String,
    /// The windows as one line, e.g. `22:00-06:00 Mon,Tue; 12:00-13:00`.
    pub schedule: String,
    /// The zone's state, or why its windows could not be read (such a zone evicts nothing).
    pub state: Result<ZoneState, String>,
    /// This zone's own `evictPeriod` has passed since its last eviction round (or it never had one).
    pub round_due: bool,
    /// When the next round may start, if it is not due yet.
    pub next_round: Option<Timestamp>,
    pub nodes: usize,
    pub budgets_after_close: BudgetsAfterClose,
}

impl ZoneView {
    /// Closed (or draining before a close) and due for a round: TDM evicts its preemptable pods now.
    pub fn evicting_now(&self) -> bool {
        self.round_due && self.state.as_ref().is_ok_and(ZoneState::evicting)
    }

    /// Closed, and its preemptable pods no longer held by job budgets (`budgetsAfterClose: Ignore`).
    pub fn lifts_budgets(&self) -> bool {
        self.budgets_after_close == BudgetsAfterClose::Ignore
            && self.state.as_ref().is_ok_and(|state| !state.open)
    }
}

/// Views of all zones, plus warnings about nodes labelled with a zone that has no `RevocableZone`.
pub fn zone_views(
    snapshot: &Snapshot,
    now: Timestamp,
) -> (BTreeMap<String, ZoneView>, Vec<Warning>) {
    let mut node_counts: BTreeMap<&str, usize> = BTreeMap::new();
    for state in snapshot.nodes.values() {
        if let Some(zone) = state
            .node
            .as_ref()
            .and_then(|n| n.revocable_zone.as_deref())
        {
            *node_counts.entry(zone).or_default() += 1;
        }
    }
    let mut views = BTreeMap::new();
    let mut warnings = Vec::new();
    for zone in snapshot.zones.values() {
        // A round "in the future" (clock skew between replicas, a hand edit) would suspend the zone's
        // evictions until then, silently. It counts as now: one evictPeriod of pause at most.
        let last_round = zone.last_eviction_round.map(|last| {
            if last > now {
                warnings.push(Warning::new(
                    WarningKey::RoundInFuture {
                        zone: zone.name.clone(),
                    },
                    format!(
                        "RevocableZone {}: status.lastEvictionRound {last} is in the future; counted as now",
                        zone.name
                    ),
                ));
            }
            last.min(now)
        });
        let next_round = zone.next_round(last_round, now);
        let state = zone.state_at(now);
        let schedule = zone.spec.windows_line();
        views.insert(
            zone.name.clone(),
            ZoneView {
                name: zone.name.clone(),
                // The tz database's own spelling (`europe/berlin` is read as `Europe/Berlin`), so that
                // the report shows the zone that is actually used.
                time_zone: zone.schedule.as_ref().map_or_else(
                    |_| zone.spec.time_zone.clone(),
                    |s| s.time_zone_name().to_owned(),
                ),
                schedule,
                state,
                round_due: next_round.is_none(),
                next_round,
                nodes: node_counts.get(zone.name.as_str()).copied().unwrap_or(0),
                budgets_after_close: zone.spec.budgets_after_close,
            },
        );
    }
    let unknown: BTreeSet<&str> = node_counts
        .keys()
        .copied()
        .filter(|zone| !snapshot.zones.contains_key(*zone))
        .collect();
    warnings.extend(unknown.into_iter().map(|zone| {
        Warning::new(
            WarningKey::UnknownZone {
                zone: zone.to_owned(),
            },
            format!(
                "{} node(s) are labelled volcano.sh/revocable-zone={zone} but there is no RevocableZone {zone}: \
                 tidal does not manage them",
                node_counts[zone]
            ),
        )
    }));
    (views, warnings)
}
