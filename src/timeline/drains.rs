//! Each zone's drain as the simulation lives it, close by close: the preemptable pods on the zone when
//! the drain starts, each crossed off when it is gone, so that the zone's empty instant and what is
//! left at the close are read off the simulation itself; with the drain outlook made at the start,
//! for its assumptions and its fix.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use jiff::{Timestamp, tz::TimeZone};

use super::Waiting;
use crate::{
    api::{BudgetsAfterClose, DrainBefore},
    cluster::{ObjectKey, ZoneInfo},
    drain::{DrainSettings, ZoneOutlook, advice::human, inputs::must_leave},
    framework::{GateId, PlanContext},
    report::drain::{DrainEstimateLine, DrainLine, after_close},
};

/// One drain: a zone emptied for one close.
struct DrainRecord {
    zone: String,
    /// `None`: the zone was closed when the simulation started.
    close: Option<Timestamp>,
    drain_before: DrainBefore,
    budgets_after_close: BudgetsAfterClose,
    /// `None`: draining or closed before the simulation started.
    start: Option<Timestamp>,
    /// Preemptable pods on the zone when the drain started, and how many are still there.
    pods: u32,
    left: u32,
    empty_at: Option<Timestamp>,
    at_close: Option<u32>,
    outlook: Option<ZoneOutlook>,
    /// What the zone's last cycle held back, by gate.
    held: BTreeMap<String, u32>,
    /// Pod-seconds of work its evictions threw away.
    work_lost: f64,
}

/// The drains of the simulation, and which one each zone is in.
#[derive(Default)]
pub(super) struct Drains {
    records: Vec<DrainRecord>,
    /// The drain each zone is in, until it opens.
    active: BTreeMap<String, usize>,
    /// The drain each pod still on a draining zone counts in.
    pods: HashMap<ObjectKey, usize>,
}

/// Where a zone stands at a cycle, as far as its drain goes.
pub(super) struct ZoneAt<'a> {
    pub zone: &'a ZoneInfo,
    pub open: bool,
    pub evicting: bool,
    /// The close ahead while open.
    pub close: Option<Timestamp>,
}

impl Drains {
    /// The close the zone's current drain is for, as the eviction queue orders it: a zone closed
    /// before the simulation started comes first. `None` when the zone is not draining.
    pub(super) fn priority(&self, zone: &str) -> Option<Timestamp> {
        let record = &self.records[*self.active.get(zone)?];
        Some(record.close.unwrap_or(Timestamp::MIN))
    }

    /// Brings the zone's drain up to `at`: one starts when the zone starts evicting for a close, the
    /// count at the close is taken at the cycle of the close, and the drain ends when the zone opens.
    /// `first` is the simulation's first cycle: a zone closed then closed before it.
    /// `outlooks` are the zone's drain outlook of this cycle, if one was made, and the last one made
    /// while the zone was open: a drain takes the one about its close.
    pub(super) fn observe(
        &mut self,
        at: ZoneAt<'_>,
        now: Timestamp,
        ctx: &PlanContext<'_>,
        outlooks: [Option<&ZoneOutlook>; 2],
    ) {
        let name = &at.zone.name;
        let current = self.active.get(name).copied();
        if !at.evicting {
            if at.open && current.is_some() {
                self.end(name);
            }
            return;
        }
        let close = if at.open {
            at.close
        } else {
            match current {
                Some(index) => self.records[index].close,
                None if ctx.now == now => None,
                None => Some(ctx.now),
            }
        };
        let same = current.is_some_and(|index| self.records[index].close == close);
        if !same {
            self.end(name);
            let [current, before] = outlooks;
            let about = |o: &&ZoneOutlook| o.close == close;
            let outlook = current.filter(about).or(before.filter(about)).or(current);
            self.start(at.zone, close, ctx, outlook);
        }
        if let Some(index) = self.active.get(name).copied() {
            let record = &mut self.records[index];
            if record.at_close.is_none() && record.close.is_some_and(|c| c <= ctx.now) {
                record.at_close = Some(record.left);
            }
        }
    }

    fn start(
        &mut self,
        zone: &ZoneInfo,
        close: Option<Timestamp>,
        ctx: &PlanContext<'_>,
        outlook: Option<&ZoneOutlook>,
    ) {
        let index = self.records.len();
        let mut pods = 0;
        for node in ctx.snapshot.zone_nodes(&zone.name) {
            for pod in node.pods.values() {
                if must_leave(ctx, pod, &zone.name) {
                    pods += 1;
                    self.pods.insert(pod.key.clone(), index);
                }
            }
        }
        self.records.push(DrainRecord {
            zone: zone.name.clone(),
            close,
            drain_before: zone.spec.drain_before,
            budgets_after_close: zone.spec.budgets_after_close,
            start: close.map(|close| drain_start(zone, close, ctx.now)),
            pods,
            left: pods,
            empty_at: (pods == 0).then_some(ctx.now),
            at_close: None,
            outlook: outlook.cloned(),
            held: BTreeMap::new(),
            work_lost: 0.0,
        });
        self.active.insert(zone.name.clone(), index);
    }

    fn end(&mut self, zone: &str) {
        if let Some(index) = self.active.remove(zone) {
            self.pods.retain(|_, record| *record != index);
        }
    }

    /// What a cycle held back in each draining zone (`held`, by zone), by gate.
    pub(super) fn note_held(&mut self, held: &BTreeMap<String, Vec<Arc<Waiting>>>) {
        for (zone, index) in &self.active {
            let mut gates = BTreeMap::new();
            for pod in held.get(zone).into_iter().flatten() {
                *gates.entry(pod.gate.clone()).or_default() += 1;
            }
            self.records[*index].held = gates;
        }
    }

    /// A pod of a drain was evicted, throwing away `work` pod-seconds.
    pub(super) fn evicted(&mut self, key: &ObjectKey, work: f64) {
        if let Some(index) = self.pods.get(key) {
            self.records[*index].work_lost += work;
        }
    }

    /// A pod left: the drain it counted in is one pod nearer empty.
    pub(super) fn gone(&mut self, key: &ObjectKey, at: Timestamp) {
        let Some(index) = self.pods.remove(key) else {
            return;
        };
        let record = &mut self.records[index];
        record.left = record.left.saturating_sub(1);
        if record.left == 0 {
            record.empty_at = Some(at);
        }
    }

    /// One line per drain, for closes up to `until` (later closes are the drain outlook's estimate:
    /// the simulation does not reach them).
    pub(super) fn lines(
        self,
        until: Timestamp,
        settings: &DrainSettings,
        tz: &BTreeMap<String, TimeZone>,
    ) -> Vec<DrainLine> {
        let mut lines: Vec<DrainLine> = self
            .records
            .into_iter()
            .map(|record| {
                let tz = tz.get(&record.zone).cloned().unwrap_or(TimeZone::UTC);
                record.line(until, settings, tz)
            })
            .collect();
        lines.sort_by(|a, b| {
            (a.close.unwrap_or(Timestamp::MIN), &a.zone)
                .cmp(&(b.close.unwrap_or(Timestamp::MIN), &b.zone))
        });
        lines
    }
}

/// When the drain for `close` started: the fixed lead's start or the `auto` drain's, when that is
/// not later than `at` (the cycle that found the zone draining); else `at`.
fn drain_start(zone: &ZoneInfo, close: Timestamp, at: Timestamp) -> Timestamp {
    zone.fixed_drain_start(close)
        .or_else(|| {
            zone.drain_started
                .filter(|started| started.close == close)
                .map(|started| started.at)
        })
        .filter(|start| *start <= at)
        .unwrap_or(at)
}

impl DrainRecord {
    fn line(self, until: Timestamp, settings: &DrainSettings, tz: TimeZone) -> DrainLine {
        let reached = self.close.is_none_or(|close| close <= until);
        if !reached
            && self.empty_at.is_none()
            && let Some(outlook) = &self.outlook
        {
            // The close is past the span and the drain was still going: the estimate says the rest.
            let mut line = DrainLine::from_outlook(outlook, tz);
            line.drain_start = self.start.or(line.drain_start);
            line.remaining_pods = self.pods;
            line.estimate = Some(DrainEstimateLine::of(outlook));
            line.work_lost_seconds = Some(self.work_lost.round());
            return line;
        }
        let at_close = match (self.close, self.empty_at) {
            (Some(close), Some(empty)) if empty <= close => Some(0),
            (Some(_), _) => self.at_close,
            (None, _) => None,
        };
        let at_risk = match self.close {
            Some(_) => at_close.is_none_or(|n| n > 0),
            None => self.empty_at.is_none(),
        };
        let fix = at_risk.then(|| self.fix(settings));
        DrainLine {
            zone: self.zone.clone(),
            close: self.close,
            drain_before: self.drain_before.to_string(),
            drain_start: self.start,
            remaining_pods: self.pods,
            expected_empty_at: self.empty_at,
            margin_seconds: self
                .close
                .zip(self.empty_at)
                .map(|(close, empty)| close.duration_since(empty).as_secs()),
            at_close,
            at_risk,
            fix,
            summary: self
                .outlook
                .as_ref()
                .map_or_else(String::new, |o| o.summary.clone()),
            budgets_after_close: self.budgets_after_close,
            after_close: after_close(self.budgets_after_close),
            estimate: self.outlook.as_ref().map(DrainEstimateLine::of),
            work_lost_seconds: Some(self.work_lost.round()),
            tz,
        }
    }

    /// The outlook's fix when it saw the miss coming as the simulation lived it; otherwise what the
    /// simulated drain needed, or what held its pods back.
    fn fix(&self, settings: &DrainSettings) -> String {
        let estimated_empty = self.outlook.as_ref().and_then(|o| o.estimate.empty_at());
        let agrees = estimated_empty.is_some() == self.empty_at.is_some();
        if agrees && let Some(fix) = self.outlook.as_ref().and_then(|o| o.fix.clone()) {
            return fix;
        }
        let mut fix = match (self.start, self.empty_at) {
            (Some(start), Some(empty)) => {
                let took = empty.duration_since(start);
                format!(
                    "the drain takes {} from its start: start it at least {} before the close \
                     (drainBefore), raise --eviction-qps, or let jobs lose more pods at once",
                    human(took),
                    human(settings.lead_for(took))
                )
            }
            (None, Some(_)) => "the zone closed before the drain could start".to_owned(),
            (_, None) => {
                let gates: Vec<String> =
                    self.held.iter().map(|(g, n)| format!("{n} {g}")).collect();
                let mut text = format!(
                    "{} of the zone's {} preemptable pods never leave in the simulation",
                    self.left, self.pods
                );
                if !gates.is_empty() {
                    text.push_str(&format!(" (held by {})", gates.join(", ")));
                }
                if self.held.contains_key(GateId::Budget.name()) {
                    text.push_str(
                        ": their jobs' budgets allow no more evictions (a minAvailable as \
                         large as the job); let the jobs lose pods (volcano.sh/jdb-max-unavailable)",
                    );
                }
                text
            }
        };
        if let Some(empty) = estimated_empty.filter(|_| self.empty_at.is_none()) {
            fix.push_str(&format!(
                "; the drain estimate made at the drain's start expected the zone empty by {empty}"
            ));
        }
        fix
    }
}
