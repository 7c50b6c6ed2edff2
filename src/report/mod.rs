//! The report: what a cycle would evict and why, for people (table, markdown) and machines (JSON).
//!
//! The JSON form is a stable interface: fields are only ever added. Documented in README.md.

pub mod drain;
pub(crate) mod markdown;
pub(crate) mod table;

use std::{
    collections::{BTreeMap, HashSet},
    sync::Arc,
};

use jiff::{Timestamp, tz::TimeZone};
use serde::Serialize;

use crate::{
    cluster::{ObjectKey, PolicyInfo, Snapshot},
    drain::ZoneOutlook,
    framework::Candidate,
    planner::{self, CyclePlan, Verification},
    text::{clock, columns},
    time_windows::ZoneState,
};

use drain::DrainLine;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns; on a terminal, as wide as the terminal (sentences wrap between words; names
    /// are never cut).
    Table,
    /// The table with more columns (policy, zone, what a skipped pod was proposed for), never wrapped.
    Wide,
    Json,
    /// The JSON document as YAML.
    Yaml,
    Markdown,
    /// `tidal timeline` only: one self-contained page, the span drawn as a picture above the tables.
    Html,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub now: String,
    pub policies: Vec<PolicyLine>,
    pub zones: Vec<ZoneLine>,
    pub evictions: Vec<EvictionLine>,
    pub skipped: Vec<SkippedLine>,
    /// Pods TDM would evict now but for `evictPeriod`: they go in the zone's next round.
    pub waiting: Vec<WaitingLine>,
    /// Per policy and strategy: what it offered, what became of it, and what it saw.
    pub strategies: Vec<StrategyLine>,
    pub warnings: Vec<String>,
    /// For people: the one time zone the table and Markdown show instants in.
    #[serde(skip)]
    pub clock: clock::Clock,
}

/// One strategy of one policy: its share of the plan and, in its own words, what it saw.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategyLine {
    pub policy: String,
    pub strategy: String,
    /// Candidates put to the gates.
    pub offered: u32,
    pub evicted: u32,
    /// Candidates the gates (or the strategy's own arguments) held back, by gate.
    pub skipped: BTreeMap<String, u32>,
    /// What the strategy reported seeing (node classification, why nothing moved), when it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saw: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyLine {
    pub name: String,
    pub mode: String,
    pub evictions: usize,
    /// Candidates the gates held back this round, listed or not.
    pub skipped: usize,
    /// Of the listed `skipped`, those a later round takes (gate `budget`, `waiting` on their row).
    pub waiting: usize,
    /// With `--verify`: planned evictions a server-side dry run accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<usize>,
    /// With `--verify`: planned evictions not checked in time (still planned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unverified: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ZoneLine {
    pub name: String,
    /// `null` when the zone's windows could not be read.
    pub open: Option<bool>,
    pub draining: bool,
    pub next_change: Option<String>,
    pub windows: String,
    pub time_zone: String,
    pub nodes: usize,
    /// When the zone's next eviction round may start, if `evictPeriod` has not passed yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_round: Option<String>,
    /// When an open zone starts (or started) draining before its next close: its fixed
    /// `drainBefore`, or when the drain estimate starts an `auto` drain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain_start: Option<String>,
    /// The drain ahead of the next close (or of a close that passed, while pods remain), as the drain
    /// estimate sees it now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain: Option<DrainLine>,
    /// The notice the zone's pods get before their eviction (`evictionNotice`), when it asks for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<NoticeLine>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For people: the next change and round in the zone's time zone, relative to now.
    #[serde(skip)]
    pub shown: Option<ZoneShown>,
}

/// What a zone that gives notice has told its pods, at the report's instant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NoticeLine {
    /// `evictionNotice`, as the zone writes it.
    pub notice: String,
    /// Preemptable pods its drain evicts that have been told for this close.
    pub told: u32,
    /// Those not told yet.
    pub untold: u32,
    /// When they are told: now, or the notice before the drain starts; `null` while no drain is
    /// planned.
    pub tells_from: Option<Timestamp>,
}

/// A zone's times as the table shows them: `closes Mon 07:00 CET (in 30m)`.
#[derive(Clone, Debug, Default)]
pub struct ZoneShown {
    pub next_change: Option<String>,
    pub next_round: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitingLine {
    pub namespace: String,
    pub name: String,
    pub node: Option<String>,
    pub zone: String,
    pub policy: String,
    pub job: String,
    pub reason: String,
    /// RFC 3339, UTC: when the zone's next round may start.
    pub next_round: String,
    #[serde(skip)]
    pub next_round_shown: String,
    /// For people: what holds it, `evictPeriod 2m0s`.
    #[serde(skip)]
    pub held_by: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvictionLine {
    pub namespace: String,
    pub name: String,
    pub node: Option<String>,
    pub strategy: String,
    pub reason: String,
    pub policy: String,
    pub job: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// With `--verify`: whether a server-side dry run accepted it (`false`: not checked in time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
    /// A drain's eviction: the pod-seconds of work it throws away (the pod's run since its start or
    /// last checkpoint, for a pod that runs to completion).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_lost_seconds: Option<i64>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedLine {
    pub namespace: String,
    pub name: String,
    pub node: Option<String>,
    pub strategy: String,
    pub gate: String,
    pub detail: String,
    pub policy: String,
    /// What the strategy wanted to evict the pod for.
    pub reason: String,
    /// The revocable zone the decision is about, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// The budget's unit, as in `evictions`.
    pub job: String,
    /// Gate `budget` only: a later round takes the pod (from `nextRound` on): the budget holds it
    /// this round only. `false`: the budget lets none of its job's pods go, even with all of them
    /// running, so no round takes it while the job and its budget stay as they are.
    pub waiting: bool,
    /// Gate `budget` only, when `waiting`: RFC 3339, UTC: the next round the pod may go in, at the
    /// earliest (the zone's next round after `evictPeriod`, else the policy's next cycle), once the
    /// job's budget allows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_round: Option<String>,
    /// For people: what becomes of the pod, as a clause (`waits for a later round: ...`).
    #[serde(skip)]
    pub next_round_shown: Option<String>,
    /// For people: `next_round`, `Mon 09:32 UTC (in 2m)`.
    #[serde(skip)]
    pub next_round_when: Option<String>,
}

impl Report {
    pub fn from_cycle(cycle: &CyclePlan) -> Report {
        let mut report = Report {
            now: cycle.now.to_string(),
            policies: Vec::new(),
            zones: Vec::new(),
            evictions: Vec::new(),
            skipped: Vec::new(),
            waiting: Vec::new(),
            strategies: Vec::new(),
            warnings: cycle.warnings.iter().map(|w| w.text.clone()).collect(),
            clock: clock::Clock::new(TimeZone::UTC, cycle.now),
        };
        for zone in cycle.zones.values() {
            let (open, draining, next_change, error) = match &zone.state {
                Ok(state) => (
                    Some(state.open),
                    state.draining,
                    state.next_change.map(|t| t.to_string()),
                    None,
                ),
                Err(error) => (None, false, None, Some(error.clone())),
            };
            report.zones.push(ZoneLine {
                name: zone.name.clone(),
                open,
                draining,
                next_change,
                windows: zone.schedule.clone(),
                time_zone: zone.time_zone.clone(),
                nodes: zone.nodes,
                next_round: zone.next_round.map(|t| t.to_string()),
                drain_start: None,
                drain: None,
                notice: None,
                error,
                shown: None,
            });
        }
        for plan in &cycle.plans {
            report.policies.push(PolicyLine {
                name: plan.policy.clone(),
                mode: format!("{:?}", plan.mode),
                evictions: plan.evictions.len(),
                // Every skip counted, listed or not (the report lists all; a capped plan says so).
                skipped: plan.skip_counts.values().map(|n| *n as usize).sum(),
                waiting: 0,
                verified: None,
                unverified: None,
                error: plan.error.clone(),
            });
            if let Some(error) = &plan.error {
                report
                    .warnings
                    .push(format!("policy {} did not run: {error}", plan.policy));
            }
            for eviction in &plan.evictions {
                let c = &eviction.candidate;
                report.evictions.push(EvictionLine {
                    namespace: c.pod.key.namespace.to_string(),
                    name: c.pod.key.name.to_string(),
                    node: c.pod.node_name.as_deref().map(String::from),
                    strategy: c.strategy.to_string(),
                    reason: c.reason.clone(),
                    policy: plan.policy.clone(),
                    job: c.pod.job.to_string(),
                    zone: c.zone.clone(),
                    verified: None,
                    work_lost_seconds: c
                        .drained_zone()
                        .map(|_| c.pod.work_since_saved(cycle.now).as_secs())
                        .filter(|seconds| *seconds > 0),
                });
            }
            for (strategy, tally) in cycle.summaries.get(&plan.policy).into_iter().flatten() {
                report.strategies.push(StrategyLine {
                    policy: plan.policy.clone(),
                    strategy: strategy.to_string(),
                    offered: tally.offered,
                    evicted: tally.evicted,
                    skipped: tally
                        .skipped
                        .iter()
                        .map(|(reason, n)| (reason.to_string(), *n))
                        .collect(),
                    saw: (!tally.saw.is_empty()).then(|| tally.saw.join("; ")),
                });
            }
            for skip in &plan.skipped {
                let Candidate {
                    pod,
                    strategy,
                    reason,
                    zone,
                    ..
                } = &skip.candidate;
                report.skipped.push(SkippedLine {
                    namespace: pod.key.namespace.to_string(),
                    name: pod.key.name.to_string(),
                    node: pod.node_name.as_deref().map(String::from),
                    strategy: strategy.to_string(),
                    gate: skip.reason.to_string(),
                    detail: skip.detail.clone(),
                    policy: plan.policy.clone(),
                    reason: reason.clone(),
                    zone: zone.clone(),
                    job: pod.job.to_string(),
                    waiting: false,
                    next_round: None,
                    next_round_shown: None,
                    next_round_when: None,
                });
            }
        }
        report
    }

    /// Adds what the plan alone does not say, from the snapshot it was made on: drain starts and each
    /// zone's drain estimate (from `outlooks`, the drain outlook at the plan's instant), times for
    /// people in one time zone (`time_zone`, else the zones' own when they share one, else UTC), and
    /// the pods held back by `evictPeriod` (planned again with the round due, by the same planner,
    /// to know which).
    pub fn add_schedule(
        &mut self,
        snapshot: &Snapshot,
        policies: &[&PolicyInfo],
        cycle: &CyclePlan,
        outlooks: &[ZoneOutlook],
        time_zone: Option<&TimeZone>,
    ) {
        let now = cycle.now;
        let zone_clocks = snapshot
            .zones
            .values()
            .filter_map(|zone| zone.schedule.as_ref().ok())
            .map(|schedule| schedule.time_zone());
        self.clock = clock::Clock::for_zones(zone_clocks, time_zone, now);
        let shown_at = self.clock.clone();
        // Without a policy running `tdm` nothing drains: no drain start to announce.
        let drains = crate::drain::draining_policy(policies).is_some();
        for line in &mut self.zones {
            let Some(zone) = snapshot.zones.get(&line.name) else {
                continue;
            };
            let (Ok(schedule), Some(view)) = (&zone.schedule, cycle.zones.get(&line.name)) else {
                continue;
            };
            let Ok(state) = &view.state else {
                continue;
            };
            let tz = schedule.time_zone();
            let shown = |at: Timestamp| shown_at.when(at);
            let outlook = outlooks.iter().find(|o| o.zone == line.name);
            line.drain = outlook.map(|o| DrainLine::from_outlook(o, tz.clone()));
            line.notice = notice_line(snapshot, policies, zone, outlook, now);
            let drain = zone
                .spec
                .drain_before
                .fixed()
                .map_or(jiff::SignedDuration::ZERO, |lead| lead.to_signed());
            let fixed_start = state
                .next_change
                .filter(|_| drains && state.open && drain.is_positive())
                .and_then(|close| close.checked_sub(drain).ok());
            let auto_start = outlook
                .filter(|o| state.open && o.close.is_some() && zone.drains_automatically())
                .and_then(|o| o.drain_start);
            let drain_start = fixed_start.or(auto_start);
            line.drain_start = drain_start.map(|t| t.to_string());
            let next_change = state.next_change.map(|change| {
                let boundary = clock::shown_change(schedule, change);
                match (state.open, drain_start) {
                    (false, _) => format!("opens {}", shown(boundary)),
                    (true, Some(start)) if start > now => {
                        // A fixed lead as the operator wrote it; an `auto` start as decided.
                        let start = match fixed_start {
                            Some(_) => clock::close_boundary(tz, change)
                                .checked_sub(drain)
                                .unwrap_or(start),
                            None => start,
                        };
                        format!("drains {}, closes {}", shown(start), shown_at.at(boundary))
                    }
                    (true, _) => format!("closes {}", shown(boundary)),
                }
            });
            line.shown = Some(ZoneShown {
                next_change,
                next_round: view.next_round.map(shown),
            });
        }
        self.waiting = waiting(snapshot, policies, cycle, &self.clock);
        self.budget_rounds(snapshot, policies, cycle);
    }

    /// When each pod held by its job's budget may go: the round after this one. In a revocable zone
    /// that is the zone's next round (`evictPeriod` after the round this cycle starts, or after the
    /// last one while it holds); elsewhere the policy's next cycle. At the earliest: the budget
    /// must allow it then, as the evictions of this round finish. A pod whose budget lets none of
    /// its job go, even with all of them running, waits for no round: it stays.
    fn budget_rounds(&mut self, snapshot: &Snapshot, policies: &[&PolicyInfo], cycle: &CyclePlan) {
        let now = cycle.now;
        let evicting_zones: HashSet<&str> = cycle
            .plans
            .iter()
            .flat_map(|p| p.zones_with_evictions())
            .collect();
        let lets_one_go = budget_lets_one_go(snapshot, policies, cycle);
        for line in &mut self.skipped {
            if line.gate != crate::framework::GateId::Budget.name() {
                continue;
            }
            let key = (
                line.policy.as_str(),
                line.namespace.as_str(),
                line.name.as_str(),
            );
            if lets_one_go.get(&key) == Some(&false) {
                line.next_round_shown = Some(
                    "no round takes it: the budget lets none of the job's pods go, even with all \
                     of them running"
                        .to_owned(),
                );
                continue;
            }
            let (at, said) = match &line.zone {
                Some(zone) => {
                    let Some(info) = snapshot.zones.get(zone) else {
                        continue;
                    };
                    let period = info.spec.evict_period.to_signed();
                    let held = cycle.zones.get(zone).and_then(|v| v.next_round);
                    let at = match held {
                        Some(next) => next,
                        None if evicting_zones.contains(zone.as_str()) => {
                            now.checked_add(period).unwrap_or(now)
                        }
                        None => now,
                    };
                    (
                        at,
                        format!(
                            "zone {zone}'s next round (evictPeriod {})",
                            info.spec.evict_period
                        ),
                    )
                }
                None => {
                    let Some(policy) = policies.iter().find(|p| p.name == line.policy) else {
                        continue;
                    };
                    let interval = policy.spec.interval;
                    let at = now.checked_add(interval.to_signed()).unwrap_or(now);
                    (at, format!("the policy's next cycle (interval {interval})"))
                }
            };
            let when = self.clock.when(at);
            line.waiting = true;
            line.next_round = Some(at.to_string());
            line.next_round_shown = Some(format!(
                "waits for a later round: {said}, {when}, if the budget allows then"
            ));
            line.next_round_when = Some(when);
        }
        for policy in &mut self.policies {
            policy.waiting = self
                .skipped
                .iter()
                .filter(|s| s.waiting && s.policy == policy.name)
                .count();
        }
    }

    /// Marks what `--verify` checked: counts on each policy, `verified` on each eviction.
    pub fn with_verification(mut self, verification: &Verification) -> Report {
        for policy in &mut self.policies {
            let Some(v) = verification.policies.get(&policy.name) else {
                continue;
            };
            policy.verified = Some(v.accepted);
            policy.unverified = Some(v.unverified.len());
        }
        for eviction in &mut self.evictions {
            let Some(v) = verification.policies.get(&eviction.policy) else {
                continue;
            };
            let key = ObjectKey::new(&eviction.namespace, &eviction.name);
            eviction.verified = Some(!v.unverified.contains(&key));
        }
        self
    }

    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Json => {
                let mut json =
                    serde_json::to_string_pretty(self).expect("the report is plain data");
                json.push('\n');
                json
            }
            Format::Yaml => {
                serde_saphyr::to_string(self).expect("the report is plain data as YAML too")
            }
            Format::Table => table::render(self, columns::Layout::for_stdout()),
            Format::Wide => table::render(self, columns::Layout::Wide),
            Format::Markdown => markdown::render(self),
            // Refused before planning (`tidal timeline -o html` draws the picture); the text if asked.
            Format::Html => table::render(self, columns::Layout::Wide),
        }
    }

    /// Lists only the pods of `namespace` (`-n`): the plan itself stays the whole cluster's.
    pub fn keep_namespace(&mut self, namespace: &str) {
        self.evictions.retain(|e| e.namespace == namespace);
        self.skipped.retain(|s| s.namespace == namespace);
        self.waiting.retain(|w| w.namespace == namespace);
    }

    /// More than one policy was planned: a pod may be decided once by each.
    pub fn several_policies(&self) -> bool {
        self.policies.len() > 1
    }

    /// The skipped rows a later round takes, and those it does not (the pods the report lists
    /// under SKIPPED).
    pub fn skipped_for_good(&self) -> impl Iterator<Item = &SkippedLine> {
        self.skipped.iter().filter(|s| !s.waiting)
    }

    /// `3 evictions planned, 2 waiting for a later round (the first Mon 09:32 UTC (in 2m)),
    /// 1 skipped (cooldown 1); 1 of 2 zones closed`, counting pods: a pod planned by two policies
    /// is one eviction, a pod one policy evicts is neither waiting nor skipped, and a pod a later
    /// round takes (its job's budget or `evictPeriod` holds it this round only) is not skipped.
    pub fn summary(&self) -> String {
        type Pod<'a> = (&'a str, &'a str);
        let evicted: std::collections::BTreeSet<Pod<'_>> = self
            .evictions
            .iter()
            .map(|e| (e.namespace.as_str(), e.name.as_str()))
            .collect();
        // Each waiting pod once, with the earliest round that may take it.
        let mut waiting = BTreeMap::<Pod<'_>, Option<Timestamp>>::new();
        let rounds = self
            .waiting
            .iter()
            .map(|w| {
                (
                    (w.namespace.as_str(), w.name.as_str()),
                    Some(w.next_round.as_str()),
                )
            })
            .chain(self.skipped.iter().filter(|s| s.waiting).map(|s| {
                (
                    (s.namespace.as_str(), s.name.as_str()),
                    s.next_round.as_deref(),
                )
            }));
        for (pod, at) in rounds {
            if evicted.contains(&pod) {
                continue;
            }
            let at = at.and_then(|t| t.parse::<Timestamp>().ok());
            let earliest = waiting.entry(pod).or_insert(at);
            *earliest = match (*earliest, at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        // Each skipped pod once, under the first gate that held it back.
        let mut skipped_pods = BTreeMap::<Pod<'_>, &str>::new();
        for skip in self.skipped_for_good() {
            let pod = (skip.namespace.as_str(), skip.name.as_str());
            if !evicted.contains(&pod) && !waiting.contains_key(&pod) {
                skipped_pods.entry(pod).or_insert(skip.gate.as_str());
            }
        }
        let mut by_gate = BTreeMap::<&str, usize>::new();
        for gate in skipped_pods.values() {
            *by_gate.entry(gate).or_default() += 1;
        }
        let gates = if by_gate.is_empty() {
            String::new()
        } else {
            let parts: Vec<String> = by_gate.iter().map(|(g, n)| format!("{g} {n}")).collect();
            format!(" ({})", parts.join(", "))
        };
        let first = waiting.values().flatten().min();
        let waiting = match (waiting.len(), first) {
            (0, _) => String::new(),
            (n, None) => format!(", {n} waiting for a later round"),
            (n, Some(first)) => format!(
                ", {n} waiting for a later round (the first {}, {})",
                clock::relative(self.clock.now(), *first),
                self.clock.at(*first)
            ),
        };
        let closed = self.zones.iter().filter(|z| z.open == Some(false)).count();
        let draining = self.zones.iter().filter(|z| z.draining).count();
        let at_risk = self
            .zones
            .iter()
            .filter(|z| z.drain.as_ref().is_some_and(|d| d.at_risk))
            .count();
        let mut zones = format!("{closed} of {} zones closed", self.zones.len());
        if draining > 0 {
            zones.push_str(&format!(", {draining} draining"));
        }
        if at_risk > 0 {
            zones.push_str(&format!(", {at_risk} at risk"));
        }
        let policies = if self.several_policies() {
            format!(" by {} policies", self.policies.len())
        } else {
            String::new()
        };
        let checked = self.evictions.iter().filter_map(|e| e.verified);
        let (verified, unverified) =
            checked.fold(
                (0, 0),
                |(yes, no), v| {
                    if v { (yes + 1, no) } else { (yes, no + 1) }
                },
            );
        let verification = if verified + unverified > 0 {
            format!(" ({verified} verified by a dry run, {unverified} not checked in time)")
        } else {
            String::new()
        };
        format!(
            "{} eviction{} planned{verification}{waiting}, {} skipped{gates}{policies}; {zones}",
            evicted.len(),
            if evicted.len() == 1 { "" } else { "s" },
            skipped_pods.len(),
        )
    }
}

/// Pods in zones that are evicting but whose round `evictPeriod` holds back: what the same policies
/// would evict now if the round were due, in the zone's next round.
fn waiting(
    snapshot: &Snapshot,
    policies: &[&PolicyInfo],
    cycle: &CyclePlan,
    clock: &clock::Clock,
) -> Vec<WaitingLine> {
    let held: BTreeMap<&str, Timestamp> = cycle
        .zones
        .values()
        .filter(|view| view.state.as_ref().is_ok_and(ZoneState::evicting))
        .filter_map(|view| Some((view.name.as_str(), view.next_round?)))
        .collect();
    if held.is_empty() {
        return Vec::new();
    }
    let mut due = snapshot.clone();
    for name in held.keys() {
        if let Some(zone) = due.zones.get(*name) {
            let mut zone = (**zone).clone();
            zone.last_eviction_round = None;
            due.zones.insert((*name).to_owned(), Arc::new(zone));
        }
    }
    let planned: HashSet<&ObjectKey> = cycle
        .plans
        .iter()
        .flat_map(|plan| &plan.evictions)
        .map(|e| &e.candidate.pod.key)
        .collect();
    let what_if = planner::plan_all(&due, policies, cycle.now);
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for plan in &what_if.plans {
        for eviction in &plan.evictions {
            let c = &eviction.candidate;
            let Some((zone, next_round)) =
                c.zone.as_deref().and_then(|zone| held.get_key_value(zone))
            else {
                continue;
            };
            if planned.contains(&c.pod.key) || !seen.insert(c.pod.key.clone()) {
                continue;
            }
            out.push(WaitingLine {
                namespace: c.pod.key.namespace.to_string(),
                name: c.pod.key.name.to_string(),
                node: c.pod.node_name.as_deref().map(String::from),
                zone: (*zone).to_owned(),
                policy: plan.policy.clone(),
                job: c.pod.job.to_string(),
                reason: c.reason.clone(),
                next_round: next_round.to_string(),
                next_round_shown: clock.when(*next_round),
                held_by: snapshot.zones.get(*zone).map_or_else(
                    || "evictPeriod".to_owned(),
                    |info| format!("evictPeriod {}", info.spec.evict_period),
                ),
            });
        }
    }
    out
}

/// Whether a later round can take each pod gate `budget` held, by `(policy, namespace, name)`.
fn budget_lets_one_go<'a>(
    snapshot: &Snapshot,
    policies: &[&PolicyInfo],
    cycle: &'a CyclePlan,
) -> BTreeMap<(&'a str, &'a str, &'a str), bool> {
    let mut out = BTreeMap::new();
    for plan in &cycle.plans {
        let Some(policy) = policies.iter().find(|p| p.name == plan.policy) else {
            continue;
        };
        let held: Vec<&Arc<crate::cluster::PodInfo>> = plan
            .skipped
            .iter()
            .filter(|s| {
                s.reason == crate::framework::SkipReason::Gate(crate::framework::GateId::Budget)
            })
            .map(|s| &s.candidate.pod)
            .collect();
        let answers = planner::budget_lets_one_go(snapshot, policy, &held);
        for (pod, lets_go) in held.into_iter().zip(answers) {
            let key = (
                plan.policy.as_str(),
                pod.key.namespace.as_str(),
                pod.key.name.as_str(),
            );
            out.insert(key, lets_go);
        }
    }
    out
}

/// `5 offered, 2 planned (held: budget 3). It saw ...`: one strategy's line, for people. "Planned",
/// not "evicted": the report is a plan, and a DryRun policy's plan is never sent.
pub(crate) fn strategy_outcome(line: &StrategyLine) -> String {
    let mut out = if line.offered == 0 {
        "offered nothing".to_owned()
    } else {
        format!("{} offered, {} planned", line.offered, line.evicted)
    };
    if !line.skipped.is_empty() {
        let held: Vec<String> = line
            .skipped
            .iter()
            .map(|(g, n)| format!("{g} {n}"))
            .collect();
        out.push_str(&format!(" (held: {})", held.join(", ")));
    }
    if let Some(saw) = &line.saw {
        out.push_str(&format!(". It saw {saw}"));
    }
    out
}

/// `tidal report at 2026-11-23T09:30:00Z, times in UTC`: the instant planned for, to the second
/// (nanoseconds of when the command happened to start say nothing), in the output's time zone,
/// which it states once.
pub(crate) fn header(report: &Report) -> String {
    let now = report
        .now
        .parse::<Timestamp>()
        .map_or_else(|_| report.now.clone(), |t| report.clock.instant(t));
    format!("tidal report at {now}, {}", report.clock.stated())
}

/// How many distinct pods the rows name.
fn distinct<'a>(pods: impl Iterator<Item = (&'a str, &'a str)>) -> usize {
    pods.collect::<std::collections::BTreeSet<_>>().len()
}

/// A pod a later round takes, for the tables: held by `evictPeriod` (the report's `waiting`) or,
/// this round only, by its job's budget (a `skipped` row with `waiting`).
pub(crate) struct WaitingRow<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub node: &'a str,
    pub policy: &'a str,
    pub zone: &'a str,
    pub job: &'a str,
    /// `Mon 09:32 UTC (in 2m)`.
    pub when: &'a str,
    /// `evictPeriod 2m0s`, or `budget: ` and what the budget allows.
    pub held_by: String,
    /// What the strategy wants it out for.
    pub reason: &'a str,
    /// When that round is.
    pub at: Option<Timestamp>,
}

impl WaitingRow<'_> {
    /// The row's cells after the pod: node, zone, job, next round, what holds it.
    pub(crate) fn cells(&self, clock: &clock::Clock) -> [String; 5] {
        [
            self.node.to_owned(),
            self.zone.to_owned(),
            self.job.to_owned(),
            self.when.to_owned(),
            clock.text(&self.held_by),
        ]
    }
}

/// The pods later rounds take, soonest round first, then in the order decided.
pub(crate) fn waiting_rows(report: &Report) -> Vec<WaitingRow<'_>> {
    let held_by_period = report.waiting.iter().map(|w| WaitingRow {
        namespace: &w.namespace,
        name: &w.name,
        node: w.node.as_deref().unwrap_or_default(),
        policy: &w.policy,
        zone: &w.zone,
        job: &w.job,
        when: &w.next_round_shown,
        held_by: w.held_by.clone(),
        reason: &w.reason,
        at: w.next_round.parse().ok(),
    });
    let held_by_budget = report
        .skipped
        .iter()
        .filter(|s| s.waiting)
        .map(|s| WaitingRow {
            namespace: &s.namespace,
            name: &s.name,
            node: s.node.as_deref().unwrap_or_default(),
            policy: &s.policy,
            zone: s.zone.as_deref().unwrap_or("-"),
            job: &s.job,
            when: s.next_round_when.as_deref().unwrap_or_default(),
            // The job has its own column.
            held_by: format!(
                "{}: {}",
                s.gate,
                s.detail
                    .strip_prefix(&format!("{}: ", s.job))
                    .unwrap_or(&s.detail)
            ),
            reason: &s.reason,
            at: s.next_round.as_deref().and_then(|t| t.parse().ok()),
        });
    let mut rows: Vec<WaitingRow<'_>> = held_by_period.chain(held_by_budget).collect();
    rows.sort_by_key(|row| row.at.unwrap_or(Timestamp::MAX));
    rows
}

/// `ns/name`, the way kubectl users read pods.
pub(crate) fn pod_ref(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

fn zone_state(zone: &ZoneLine) -> &'static str {
    match (zone.open, zone.draining) {
        (None, _) => "invalid",
        (Some(true), true) => "draining",
        (Some(true), false) => "open",
        (Some(false), _) => "closed",
    }
}

/// What `zone` has told its pods at `now`, when it gives notice: the pods a drain evicts, told for
/// this close or not, and when the untold ones are told.
fn notice_line(
    snapshot: &Snapshot,
    policies: &[&PolicyInfo],
    zone: &crate::cluster::ZoneInfo,
    outlook: Option<&ZoneOutlook>,
    now: Timestamp,
) -> Option<NoticeLine> {
    let notice = zone
        .spec
        .eviction_notice
        .filter(|_| zone.eviction_notice().is_some())?;
    let policy = crate::drain::draining_policy(policies)?;
    let tells_from = outlook.and_then(|o| o.notices_from);
    // Every pod the drain would evict, told or not: as if its pods were told now.
    let all = [crate::drain::notice::Noticing {
        zone: zone.name.clone(),
        from: Timestamp::MIN,
        close: outlook.and_then(|o| o.close),
    }];
    let nobody = std::collections::HashSet::new();
    let untold = crate::drain::notice::due(snapshot, policy, &all, now, &nobody).len();
    let told = snapshot
        .zone_nodes(&zone.name)
        .flat_map(|node| node.pods.values())
        .filter(|pod| crate::cluster::noticed_at(pod, zone, now).is_some() && !pod.is_leaving())
        .count();
    Some(NoticeLine {
        notice: humantime::format_duration(notice.as_std()).to_string(),
        told: u32::try_from(told).unwrap_or(u32::MAX),
        untold: u32::try_from(untold).unwrap_or(u32::MAX),
        tells_from: tells_from.map(|from| from.max(now)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eviction(pod: &str, policy: &str) -> EvictionLine {
        EvictionLine {
            namespace: "ns".into(),
            name: pod.into(),
            node: Some("n1".into()),
            strategy: "tdm".into(),
            reason: "zone z closed".into(),
            policy: policy.into(),
            job: format!("Pod ns/{pod}"),
            zone: Some("z".into()),
            verified: None,
            work_lost_seconds: None,
        }
    }

    fn skip(pod: &str, policy: &str, gate: &str) -> SkippedLine {
        SkippedLine {
            namespace: "ns".into(),
            name: pod.into(),
            node: Some("n1".into()),
            strategy: "tdm".into(),
            gate: gate.into(),
            detail: "why".into(),
            policy: policy.into(),
            reason: "zone z closed".into(),
            zone: Some("z".into()),
            job: format!("Pod ns/{pod}"),
            waiting: false,
            next_round: None,
            next_round_shown: None,
            next_round_when: None,
        }
    }

    fn report(
        policies: &[&str],
        evictions: Vec<EvictionLine>,
        skipped: Vec<SkippedLine>,
    ) -> Report {
        Report {
            now: "2026-11-23T09:30:00Z".into(),
            policies: policies
                .iter()
                .map(|name| PolicyLine {
                    name: (*name).into(),
                    mode: "DryRun".into(),
                    evictions: 0,
                    skipped: 0,
                    waiting: 0,
                    verified: None,
                    unverified: None,
                    error: None,
                })
                .collect(),
            zones: Vec::new(),
            evictions,
            skipped,
            waiting: Vec::new(),
            strategies: Vec::new(),
            warnings: Vec::new(),
            clock: clock::Clock::default(),
        }
    }

    #[test]
    fn with_several_policies_the_summary_counts_pods_and_rows_name_their_policy() {
        // Two dry-run policies decide the same pods: a and b evicted by both, c held by budget in one
        // and by cooldown in the other, d evicted by one and held by the other.
        let report = report(
            &["p", "q"],
            vec![
                eviction("a", "p"),
                eviction("b", "p"),
                eviction("a", "q"),
                eviction("b", "q"),
                eviction("d", "q"),
            ],
            vec![
                skip("c", "p", "budget"),
                skip("d", "p", "budget"),
                skip("c", "q", "cooldown"),
            ],
        );
        assert_eq!(
            report.summary(),
            "3 evictions planned, 1 skipped (budget 1) by 2 policies; 0 of 0 zones closed"
        );
        let table = report.render(Format::Table);
        assert!(table.contains("EVICTIONS (3 pods, 5 rows)"), "{table}");
        assert!(table.contains("SKIPPED (2 pods, 3 rows)"), "{table}");
        let header = table.lines().find(|l| l.starts_with("POD")).unwrap();
        assert!(header.contains("POLICY"), "{table}");
        let row = table.lines().find(|l| l.starts_with("ns/d")).unwrap();
        assert_eq!(
            row.find(" q ").map(|at| at + 1),
            header.find("POLICY"),
            "{table}"
        );
        let markdown = report.render(Format::Markdown);
        assert!(
            markdown.contains("| Pod | Node | Policy | Strategy |"),
            "{markdown}"
        );
    }

    #[test]
    fn pods_a_later_round_takes_are_counted_as_waiting_not_skipped() {
        let waits = |pod: &str, policy: &str, at: &str| SkippedLine {
            waiting: true,
            next_round: Some(at.to_owned()),
            next_round_when: Some(format!("at {at}")),
            ..skip(pod, policy, "budget")
        };
        // b waits in p and is in cooldown in q: p takes it later. d's budget never lets it go.
        let mut report = report(
            &["p", "q"],
            vec![eviction("a", "p")],
            vec![
                waits("b", "p", "2026-11-23T09:35:00Z"),
                skip("b", "q", "cooldown"),
                waits("c", "p", "2026-11-23T09:32:00Z"),
                skip("d", "p", "budget"),
                waits("a", "q", "2026-11-23T09:31:00Z"),
            ],
        );
        report.clock = clock::Clock::new(TimeZone::UTC, "2026-11-23T09:30:00Z".parse().unwrap());
        assert_eq!(
            report.summary(),
            "1 eviction planned, 2 waiting for a later round (the first in 2m, Mon 09:32), \
             1 skipped (budget 1) by 2 policies; 0 of 0 zones closed"
        );
        let table = report.render(Format::Table);
        assert!(
            table.contains("WAITING FOR A LATER ROUND (3 pods, 3 rows)"),
            "{table}"
        );
        assert!(table.contains("SKIPPED (2 pods, 2 rows)"), "{table}");
        let waiting = &table[table.find("WAITING").unwrap()..table.find("SKIPPED").unwrap()];
        let order: Vec<&str> = waiting
            .lines()
            .skip(2)
            .filter_map(|l| l.split(' ').next())
            .collect();
        assert_eq!(
            order,
            ["ns/a", "ns/c", "ns/b", ""],
            "soonest first: {table}"
        );
    }

    #[test]
    fn with_one_policy_the_table_has_no_policy_column_and_counts_rows_once() {
        let report = report(
            &["p"],
            vec![eviction("a", "p"), eviction("b", "p")],
            vec![skip("c", "p", "budget")],
        );
        assert_eq!(
            report.summary(),
            "2 evictions planned, 1 skipped (budget 1); 0 of 0 zones closed"
        );
        let table = report.render(Format::Table);
        assert!(table.contains("EVICTIONS (2)\n"), "{table}");
        assert!(!table.contains("POLICY"), "{table}");
    }

    #[test]
    fn on_a_terminal_the_table_fits_its_width() {
        let mut long = skip("c", "p", "budget");
        long.detail = "ReplicaSet ns/etl: maxUnavailable 40%; 4 pods, 4 running, 0 unavailable, \
                       2 already planned this round, and a few more words to go past the edge"
            .into();
        let mut report = report(&["p"], vec![eviction("a", "p")], vec![long]);
        report.zones.push(ZoneLine {
            name: "yarn-b".into(),
            open: Some(false),
            draining: false,
            next_change: Some("2026-11-23T18:00:00Z".into()),
            windows: "19:00-07:00 Sun,Mon,Tue,Wed,Thu,Fri; 00:00-00:00 Sat,Sun".into(),
            time_zone: "Europe/Berlin".into(),
            nodes: 2,
            next_round: None,
            drain_start: None,
            drain: None,
            notice: None,
            error: None,
            shown: Some(ZoneShown {
                next_change: Some("opens Mon 18:00 (in 8h30m)".into()),
                next_round: None,
            }),
        });
        let fitted = table::render(&report, columns::Layout::Fit(100));
        for line in fitted.lines() {
            assert!(line.chars().count() <= 100, "{} chars: {line}", line.len());
        }
        // Sentences wrap between words; the zone's table too; names and days stay whole.
        assert!(
            fitted.contains("planned this"),
            "wrapped, not cut: {fitted}"
        );
        assert!(fitted.contains("Sun,Mon,Tue,Wed,Thu,Fri;"), "{fitted}");
        let words = |text: &str| {
            text.split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        for word in words(&report.skipped[0].detail) {
            assert!(words(&fitted).contains(&word), "{word} split: {fitted}");
        }
        // Piped: natural widths, one line per row.
        let natural = table::render(&report, columns::Layout::Natural);
        assert!(
            natural.lines().any(|l| l.chars().count() > 100),
            "{natural}"
        );
        assert!(natural.contains("Sat,Sun  Europe/Berlin"), "{natural}");
    }

    #[test]
    fn wide_adds_policy_zone_and_what_a_skipped_pod_was_proposed_for() {
        let report = report(
            &["p"],
            vec![eviction("a", "p")],
            vec![skip("c", "p", "budget")],
        );
        let wide = report.render(Format::Wide);
        let headers: Vec<&str> = wide.lines().filter(|l| l.starts_with("POD")).collect();
        assert!(
            headers[0].contains("POLICY") && headers[0].ends_with("ZONE"),
            "{wide}"
        );
        assert!(headers[1].ends_with("PROPOSED FOR"), "{wide}");
        assert!(!report.render(Format::Table).contains("PROPOSED FOR"));
    }

    #[test]
    fn yaml_is_the_json_document() {
        let report = report(&["p"], vec![eviction("a", "p")], Vec::new());
        let from_yaml: serde_json::Value =
            serde_saphyr::from_str(&report.render(Format::Yaml)).unwrap();
        let from_json: serde_json::Value =
            serde_json::from_str(&report.render(Format::Json)).unwrap();
        assert_eq!(from_yaml, from_json);
    }
}
