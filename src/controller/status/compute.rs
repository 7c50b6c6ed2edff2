//! What tidal writes into `status`, computed from a cycle's plan and eviction outcomes. Pure.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, MicroTime, Time};

use crate::{
    api::{DrainStatus, PolicyMode, policy::DeschedulingPolicyStatus, zone::RevocableZoneStatus},
    cluster::{PodPhase, Setting, Snapshot},
    controller::evictor::Outcome,
    drain::ZoneOutlook,
    framework::ZoneView,
    planner::Plan,
};

pub(crate) const READY: &str = "Ready";
pub(crate) use crate::cluster::DRAIN_ON_TRACK;

/// Counts of one policy's cycle: plan and outcomes together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PolicyCounts {
    pub planned: u32,
    /// Accepted real evictions (Evict mode) or accepted dry runs, i.e. verified (DryRun mode).
    pub accepted: u32,
    /// Planned evictions the API server refused when they were sent (their reasons are in
    /// `skipped`, with the gates' refusals).
    pub refused: u32,
    /// DryRun mode: planned evictions no dry run checked this cycle.
    pub unverified: u32,
    pub skipped: BTreeMap<String, u32>,
}

impl PolicyCounts {
    /// `outcomes` align with `plan.evictions`; missing ones (never sent) count as planned only.
    pub(crate) fn of(plan: &Plan, outcomes: &[Outcome]) -> PolicyCounts {
        let mut skipped: BTreeMap<String, u32> = plan
            .skipped_by_reason()
            .into_iter()
            .map(|(reason, n)| (reason.to_owned(), n))
            .collect();
        let (mut accepted, mut refused, mut unverified) = (0, 0, 0);
        for outcome in outcomes {
            match outcome.refusal() {
                None if matches!(outcome, Outcome::Unverified(_)) => unverified += 1,
                None => accepted += 1,
                Some(refusal) => {
                    refused += 1;
                    *skipped.entry(refusal.reason.to_string()).or_default() += 1;
                }
            }
        }
        PolicyCounts {
            planned: u32::try_from(plan.evictions.len()).unwrap_or(u32::MAX),
            accepted,
            refused,
            unverified,
            skipped,
        }
    }

    pub(crate) fn skipped_total(&self) -> u32 {
        self.skipped.values().sum()
    }

    /// `planned 3, evicted 2, skipped 4 (budget 3, pdb 1)`; in DryRun mode
    /// `dry run: planned 900, verified 48, refused 2, unverified 850, skipped 5 (budget 3, pdb 2)`.
    pub(crate) fn summary(&self, mode: PolicyMode) -> String {
        let mut text = match mode {
            PolicyMode::Evict => format!("planned {}, evicted {}", self.planned, self.accepted),
            PolicyMode::DryRun => format!(
                "dry run: planned {}, verified {}, refused {}, unverified {}",
                self.planned, self.accepted, self.refused, self.unverified
            ),
        };
        text.push_str(&format!(", skipped {}", self.skipped_total()));
        if !self.skipped.is_empty() {
            let parts: Vec<String> = self
                .skipped
                .iter()
                .map(|(gate, n)| format!("{gate} {n}"))
                .collect();
            text.push_str(&format!(" ({})", parts.join(", ")));
        }
        text
    }
}

/// The status of a policy after a cycle. `previous` is the Ready condition written last, whose
/// transition time carries over while its status stays the same.
pub(crate) fn policy_status(
    plan: &Plan,
    counts: &PolicyCounts,
    generation: Option<i64>,
    now: Timestamp,
    previous: Option<&Condition>,
) -> DeschedulingPolicyStatus {
    let (ok, reason, message) = match &plan.error {
        Some(error) => (false, "InvalidPolicy", error.clone()),
        None => (true, "CycleCompleted", counts.summary(plan.mode)),
    };
    let dry_run = plan.mode == PolicyMode::DryRun;
    DeschedulingPolicyStatus {
        last_cycle_time: Some(Time(now)),
        observed_generation: generation,
        planned: Some(counts.planned),
        // In DryRun mode nothing is evicted; what a dry run checked is in verified, refused and
        // unverified.
        evicted: Some(match plan.mode {
            PolicyMode::Evict => counts.accepted,
            PolicyMode::DryRun => 0,
        }),
        verified: dry_run.then_some(counts.accepted),
        refused: dry_run.then_some(counts.refused),
        unverified: dry_run.then_some(counts.unverified),
        skipped: counts.skipped.clone(),
        conditions: vec![condition(ok, reason, message, generation, now, previous)],
    }
}

/// What the zone's status says of its drain: the drain itself and the `DrainOnTrack` condition.
pub(crate) struct ZoneDrainStatus<'a> {
    pub outlook: Option<&'a ZoneOutlook>,
    /// When the drain for the upcoming close started, as the cache knows it.
    pub started: Option<(Timestamp, Timestamp)>,
    /// The `DrainOnTrack` condition written last, for its transition time.
    pub previous: Option<&'a Condition>,
}

/// The status of a zone at `now`.
pub(crate) fn zone_status(
    view: &ZoneView,
    preemptable_pods: u32,
    last_round: Option<Timestamp>,
    now: Timestamp,
    previous: Option<&Condition>,
    drain: &ZoneDrainStatus<'_>,
) -> RevocableZoneStatus {
    let (state, ready) = match &view.state {
        Ok(state) => (
            Some(state),
            condition(true, "WindowsValid", String::new(), None, now, previous),
        ),
        Err(error) => (
            None,
            condition(false, "InvalidWindows", error.clone(), None, now, previous),
        ),
    };
    RevocableZoneStatus {
        schedule: Some(view.schedule.clone()),
        open: state.map(|s| s.open),
        // Closed counts too: the zone's pods are being evicted either way.
        draining: state.map(|s| s.evicting()),
        next_change: state.and_then(|s| s.next_change).map(Time),
        last_eviction_round: last_round.map(MicroTime),
        nodes: Some(u32::try_from(view.nodes).unwrap_or(u32::MAX)),
        preemptable_pods: Some(preemptable_pods),
        observed_generation: None,
        drain: drain_status(drain, now),
        conditions: [Some(ready), drain_condition(drain, now)]
            .into_iter()
            .flatten()
            .collect(),
    }
}

fn drain_status(drain: &ZoneDrainStatus<'_>, now: Timestamp) -> Option<DrainStatus> {
    let outlook = drain.outlook?;
    let started = drain
        .started
        .filter(|(close, _)| Some(*close) == outlook.close)
        .map(|(_, at)| at);
    let planned = outlook.drain_start.filter(|_| started.is_none());
    Some(DrainStatus {
        close: outlook.close.map(Time),
        started_at: started.map(Time),
        starts_at: planned.filter(|at| *at > now).map(Time),
        remaining_pods: Some(outlook.remaining),
        // Unset for an empty zone: "now" would rewrite the status at every cycle.
        expected_empty_at: outlook.expected_empty_at().map(Time),
        margin_seconds: outlook
            .margin()
            .filter(|_| !outlook.idle())
            .map(|m| m.as_secs()),
        at_close: outlook.close.map(|_| outlook.estimate.at_close),
        summary: Some(match &outlook.fix {
            Some(fix) => format!("{}. To make the close: {fix}", outlook.summary),
            None => outlook.summary.clone(),
        }),
    })
}

fn drain_condition(drain: &ZoneDrainStatus<'_>, now: Timestamp) -> Option<Condition> {
    let outlook = drain.outlook?;
    let (ok, reason, message) = match (outlook.at_risk, outlook.close) {
        (false, _) => (true, "OnTrack", outlook.summary.clone()),
        (true, Some(_)) => (
            false,
            "CloseWillBeMissed",
            outlook.fix.clone().unwrap_or_default(),
        ),
        (true, None) => (
            false,
            "ClosedWithPods",
            outlook.fix.clone().unwrap_or_default(),
        ),
    };
    let mut condition = condition(ok, reason, message, None, now, drain.previous);
    condition.type_ = DRAIN_ON_TRACK.to_owned();
    Some(condition)
}

/// Running pods on the zone's nodes that say they are preemptable (pod, else its PodGroup). Policy
/// defaults are not counted: they differ between policies, the zone's status is one.
pub(crate) fn preemptable_pods(snapshot: &Snapshot, zone: &str) -> u32 {
    let count = snapshot
        .zone_nodes(zone)
        .flat_map(|node| node.pods.values())
        .filter(|pod| pod.phase == PodPhase::Running && !pod.is_node_bound())
        .filter(|pod| {
            let setting = pod.preemptable.clone().or_else(|| {
                snapshot
                    .podgroup_of(pod)
                    .map_or(Setting::Unset, |g| g.preemptable.clone())
            });
            setting == Setting::Valid(true)
        })
        .count();
    u32::try_from(count).unwrap_or(u32::MAX)
}

fn condition(
    ok: bool,
    reason: &str,
    message: String,
    generation: Option<i64>,
    now: Timestamp,
    previous: Option<&Condition>,
) -> Condition {
    let status = if ok { "True" } else { "False" };
    let last_transition_time = previous
        .filter(|p| p.status == status)
        .map_or(Time(now), |p| p.last_transition_time.clone());
    Condition {
        type_: READY.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message,
        observed_generation: generation,
        last_transition_time,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time_windows::ZoneState;

    fn plan(mode: PolicyMode, error: Option<&str>) -> Plan {
        Plan {
            policy: "p".into(),
            mode,
            evictions: Vec::new(),
            skipped: Vec::new(),
            skip_counts: BTreeMap::new(),
            error: error.map(str::to_owned),
            strategy_durations: Vec::new(),
        }
    }

    #[test]
    fn counts_add_eviction_refusals_to_gate_skips() {
        let outcomes = [
            Outcome::Evicted,
            Outcome::Refused {
                reason: crate::framework::SkipReason::Pdb,
                detail: "x".into(),
            },
            Outcome::Gone,
            Outcome::Evicted,
        ];
        let counts = PolicyCounts::of(&plan(PolicyMode::Evict, None), &outcomes);
        assert_eq!(counts.accepted, 2);
        assert_eq!(counts.refused, 2);
        assert_eq!(counts.skipped.get("pdb"), Some(&1));
        assert_eq!(counts.skipped.get("gone"), Some(&1));
        assert_eq!(
            counts.summary(PolicyMode::Evict),
            "planned 0, evicted 2, skipped 2 (gone 1, pdb 1)"
        );
    }

    #[test]
    fn dry_run_status_evicts_nothing_and_says_what_it_would() {
        let counts = PolicyCounts {
            planned: 5,
            accepted: 2,
            refused: 1,
            unverified: 2,
            skipped: BTreeMap::from([("pdb".to_owned(), 1)]),
        };
        let now = Timestamp::UNIX_EPOCH;
        let status = policy_status(&plan(PolicyMode::DryRun, None), &counts, Some(4), now, None);
        assert_eq!(status.planned, Some(5));
        assert_eq!(status.evicted, Some(0));
        assert_eq!(
            (status.verified, status.refused, status.unverified),
            (Some(2), Some(1), Some(2))
        );
        assert_eq!(status.observed_generation, Some(4));
        let ready = &status.conditions[0];
        assert_eq!(ready.status, "True");
        assert_eq!(
            ready.message,
            "dry run: planned 5, verified 2, refused 1, unverified 2, skipped 1 (pdb 1)"
        );
        let evict = policy_status(&plan(PolicyMode::Evict, None), &counts, Some(4), now, None);
        assert_eq!((evict.verified, evict.unverified), (None, None));
    }

    #[test]
    fn transition_time_survives_while_status_is_unchanged() {
        let t0 = Timestamp::UNIX_EPOCH;
        let t1 = t0 + jiff::SignedDuration::from_secs(60);
        let counts = PolicyCounts::default();
        let first = policy_status(&plan(PolicyMode::Evict, None), &counts, None, t0, None);
        let second = policy_status(
            &plan(PolicyMode::Evict, None),
            &counts,
            None,
            t1,
            first.conditions.first(),
        );
        assert_eq!(second.conditions[0].last_transition_time, Time(t0));
        let broken = policy_status(
            &plan(PolicyMode::Evict, Some("bad budget")),
            &counts,
            None,
            t1,
            second.conditions.first(),
        );
        assert_eq!(broken.conditions[0].status, "False");
        assert_eq!(broken.conditions[0].reason, "InvalidPolicy");
        assert_eq!(broken.conditions[0].last_transition_time, Time(t1));
    }

    #[test]
    fn zone_status_reports_state_or_error() {
        let now = Timestamp::UNIX_EPOCH;
        let mut view = ZoneView {
            name: "rz".into(),
            time_zone: "UTC".into(),
            schedule: "08:00-20:00".into(),
            state: Ok(ZoneState {
                open: false,
                draining: false,
                next_change: Some(now),
            }),
            round_due: true,
            next_round: None,
            nodes: 2,
            budgets_after_close: Default::default(),
        };
        let no_drain = ZoneDrainStatus {
            outlook: None,
            started: None,
            previous: None,
        };
        let status = zone_status(&view, 5, Some(now), now, None, &no_drain);
        assert_eq!(status.open, Some(false));
        assert_eq!(status.nodes, Some(2));
        assert_eq!(status.preemptable_pods, Some(5));
        assert_eq!(status.last_eviction_round, Some(MicroTime(now)));
        assert_eq!(status.conditions[0].status, "True");
        view.state = Err("bad window".into());
        let status = zone_status(&view, 0, None, now, None, &no_drain);
        assert_eq!(status.open, None);
        assert_eq!(status.conditions[0].reason, "InvalidWindows");
    }
}
