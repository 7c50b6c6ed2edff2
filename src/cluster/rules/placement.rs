//! tidal's placement rules for revocable nodes (one labelled `volcano.sh/revocable-zone`), as pure
//! functions of plain data, shared by admission (`webhook`) and planning (every strategy's and gate's
//! choice of destination), so that the controller never plans a move to a node where the webhook
//! would refuse the pod's replacement:
//!
//! 1. a non-preemptable pod never runs on a revocable node;
//! 2. a preemptable pod runs on a revocable node only while that node's zone is open (not closed,
//!    not draining), and only in the zone it opted into with `volcano.sh/revocable-zone`, if any.
//!
//! DaemonSet and static pods belong to their node and are exempt.
//!
//! A preemptable pod that says how long it runs is also kept off a zone that closes before it could
//! finish there ([`closes_first`]); admission applies it, the planner does not yet.

use std::{fmt, hash::BuildHasher, time::Duration};

use jiff::{SignedDuration, Timestamp};

use crate::{
    api::GoDuration,
    cluster::{
        EndCause, InvalidValue, NodeInfo, PodGroupInfo, PodInfo, Setting, ZoneInfo, finishes_before,
    },
};

/// Whether a pod may be preempted, from the pod's own label/annotation, else its PodGroup's.
///
/// No policy is consulted, so an unset value means "not preemptable": the webhook has no policy at
/// hand, and a replacement pod is judged by the webhook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Preemptable {
    Yes,
    No,
    /// The value does not parse: nobody can tell, and the rules never guess in the pod's favour.
    Unreadable(InvalidValue),
}

pub(crate) fn preemptable(pod: &PodInfo, group: Option<&PodGroupInfo>) -> Preemptable {
    let setting = pod
        .preemptable
        .clone()
        .or_else(|| group.map_or(Setting::Unset, |g| g.preemptable.clone()));
    match setting {
        Setting::Valid(true) => Preemptable::Yes,
        Setting::Valid(false) | Setting::Unset => Preemptable::No,
        Setting::Invalid(invalid) => Preemptable::Unreadable(*invalid),
    }
}

/// Exempt from the rules: DaemonSet and static (mirror) pods belong to their node. Applying the rules
/// to them would keep node agents (CNI, log shippers) off revocable nodes, and TDM never evicts them.
pub(crate) fn is_exempt(pod: &PodInfo) -> bool {
    pod.is_node_bound()
}

/// Why rules 1 and 2 keep a pod off a revocable node, before the zone's windows are looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    NotPreemptable,
    Unreadable(InvalidValue),
    /// The pod opted into another zone (the annotation's value).
    OtherZone(String),
}

/// The rules that depend on the pod and the node only. `Ok(None)`: the node is not revocable (or the
/// pod is exempt), it may run there. `Ok(Some(zone))`: it may run there while `zone` is open and not
/// draining (a zone tidal does not know, it does not manage).
pub(crate) fn revocable_rule<'n>(
    pod: &PodInfo,
    preemptable: &Preemptable,
    node: &'n NodeInfo,
) -> Result<Option<&'n str>, Refused> {
    let Some(zone) = node.revocable_zone.as_deref() else {
        return Ok(None);
    };
    if is_exempt(pod) {
        return Ok(None);
    }
    match preemptable {
        Preemptable::Yes => {}
        Preemptable::No => return Err(Refused::NotPreemptable),
        Preemptable::Unreadable(invalid) => return Err(Refused::Unreadable(invalid.clone())),
    }
    if let Some(opted) = pod.zone_opt_in.as_deref()
        && opted != "*"
        && opted != zone
    {
        return Err(Refused::OtherZone(opted.to_owned()));
    }
    Ok(Some(zone))
}

/// All that [`revocable_rule`] reads of a pod, hashed: pods with the same constraint signature and
/// the same placement key may run on the same nodes, so searches can share their results.
///
/// Hashed with foldhash's fixed seed, not SipHash: keys are only compared with each other within one
/// process (as map keys and parts of other keys), never stored or sent, and the planner computes one
/// for every pod it weighs.
/// With `group`, the pod's PodGroup: a preemptable pod's run time (its own or its group's) decides
/// which zones close before it could finish there ([`closes_first`]).
pub(crate) fn placement_key(
    pod: &PodInfo,
    preemptable: &Preemptable,
    group: Option<&PodGroupInfo>,
) -> u64 {
    let preemptable = matches!(preemptable, Preemptable::Yes);
    let may_declare = pod.active_deadline_seconds().is_some()
        || pod.expected_run_time().is_set()
        || group.is_some();
    let run = (preemptable && may_declare)
        .then(|| crate::cluster::run_time(pod, group))
        .flatten()
        .map(|cause| (cause.run_time().as_secs(), pod.termination_grace_seconds()));
    foldhash::quality::FixedState::default().hash_one((
        is_exempt(pod),
        preemptable,
        &pod.zone_opt_in,
        run,
    ))
}

/// A zone that closes before a pod that says how long it runs could finish there: started on it at
/// the earliest it can be (now, or when the zone next opens), the pod would not end in time by
/// [`finishes_before`], so the zone's drain would evict it before it is done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ClosesFirst {
    pub zone: String,
    /// How long the pod runs, and what says so.
    pub run_time: EndCause,
    /// When the zone opens, for a zone closed now.
    pub opens: Option<Timestamp>,
    /// The close, as written in the zone's windows (`21:00`, not the first closed second).
    pub close: Timestamp,
    /// How long the pod would have there: from now (or the opening) to the close.
    pub left: SignedDuration,
    /// The pod's `terminationGracePeriodSeconds`.
    pub grace: SignedDuration,
    /// The zone's `evictPeriod`.
    pub evict_period: SignedDuration,
}

impl ClosesFirst {
    /// Everything after the pod's name: what it needs, when the zone closes, what it would have there
    /// and the margin the drain wants.
    pub(crate) fn reason(&self) -> String {
        let when = match self.opens {
            None => format!("closes at {}, {} from now", self.close, go(self.left)),
            Some(opens) => format!(
                "opens at {opens} and closes at {}, {} later",
                self.close,
                go(self.left)
            ),
        };
        let margin = self
            .grace
            .checked_mul(2)
            .and_then(|twice| twice.checked_add(self.evict_period))
            .unwrap_or(SignedDuration::MAX);
        format!(
            "needs {} ({}), but revocable zone {} {when}; the zone takes only pods that end at least \
             {} before its close (twice the pod's termination grace of {} and the zone's evictPeriod {}), \
             which its drain then lets finish",
            go(self.run_time.run_time()),
            self.run_time,
            self.zone,
            go(margin),
            go(self.grace),
            go(self.evict_period),
        )
    }
}

impl fmt::Display for ClosesFirst {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason())
    }
}

/// A duration as Go and the CRDs write it (`1h30m0s`), whole seconds; negative ones as `0s`.
fn go(duration: SignedDuration) -> GoDuration {
    let whole = SignedDuration::from_secs(duration.as_secs());
    GoDuration(Duration::try_from(whole).unwrap_or_default())
}

/// Whether `zone` closes before a pod that runs for `run_time` and takes `grace` to terminate could
/// finish there, were it started at the earliest it can be: now for an open zone, when it opens for a
/// closed one (rule 2 keeps it off until then). `None` when it could, and when nothing can be said: a
/// zone whose windows cannot be read, or with no close ahead (always open), never keeps a pod off.
///
/// Counted from the close, not from the start of the drain before it (`drainBefore`, fixed or
/// `auto`): the drain leaves a pod that [`finishes_before`] the close to finish, so such a pod's
/// eviction never begins, and keeping it off a zone because the drain starts before it ends would
/// refuse pods the drain lets run. Admission and the drain thus read the same rule, with the same
/// close: the zone's first closed second (`ZoneState::next_change`).
pub(crate) fn closes_first(
    zone: &ZoneInfo,
    run_time: EndCause,
    grace: SignedDuration,
    now: Timestamp,
) -> Option<ClosesFirst> {
    let schedule = zone.schedule.as_ref().ok()?;
    let state = zone.state_at(now).ok()?;
    let (start, opens) = if state.open {
        (now, None)
    } else {
        let opens = state.next_change?;
        (opens, Some(opens))
    };
    let close = if state.open {
        state.next_change?
    } else {
        schedule.next_change(start)?
    };
    let end = start
        .checked_add(run_time.run_time())
        .unwrap_or(Timestamp::MAX);
    let evict_period = zone.spec.evict_period.to_signed();
    if finishes_before(end, grace, evict_period, close) {
        return None;
    }
    let shown = schedule.shown_change(close);
    Some(ClosesFirst {
        zone: zone.name.clone(),
        run_time,
        opens,
        close: shown,
        left: shown.duration_since(start),
        grace,
        evict_period,
    })
}

/// The zones of `zones` that [`closes_first`] keeps `pod` off, by name, if it says how long it runs:
/// `Err` when what it declares cannot be read. Only the zone it opted into is looked at when it opted
/// into one (it never goes to the others).
pub(crate) fn zones_closing_first<'z>(
    pod: &PodInfo,
    group: Option<&PodGroupInfo>,
    zones: impl IntoIterator<Item = &'z ZoneInfo>,
    now: Timestamp,
) -> Result<Vec<ClosesFirst>, InvalidValue> {
    if let Setting::Invalid(invalid) = crate::cluster::declared_run_time(pod, group) {
        return Err(*invalid);
    }
    let Some(run_time) = crate::cluster::run_time(pod, group) else {
        return Ok(Vec::new());
    };
    let grace = SignedDuration::from_secs(i64::from(pod.termination_grace_seconds()));
    let opted = pod.zone_opt_in.as_deref().filter(|zone| *zone != "*");
    let mut closing: Vec<ClosesFirst> = zones
        .into_iter()
        .filter(|zone| opted.is_none_or(|opted| zone.name == opted))
        .filter_map(|zone| closes_first(zone, run_time, grace, now))
        .collect();
    closing.sort_by(|a, b| a.zone.cmp(&b.zone));
    Ok(closing)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testkit::{self as kit, ts};

    /// Zone `z1`, open 08:00-21:00 UTC, one round a minute (the default `evictPeriod`).
    fn day_zone() -> ZoneInfo {
        kit::zone("z1").window("08:00-21:00").build()
    }

    fn declares(run_time: &str) -> EndCause {
        EndCause::Declared(run_time.parse().unwrap())
    }

    const GRACE: SignedDuration = SignedDuration::from_secs(30);

    #[test]
    fn an_open_zone_keeps_off_a_pod_that_would_end_after_its_close_less_the_margin() {
        let zone = day_zone();
        let now = ts("2026-03-04T19:30:00Z");
        let closes = closes_first(&zone, declares("3h"), GRACE, now).expect("closes first");
        assert_eq!(closes.zone, "z1");
        assert_eq!(closes.opens, None);
        // The close as written, and the time left to it.
        assert_eq!(closes.close, ts("2026-03-04T21:00:00Z"));
        assert_eq!(closes.left, SignedDuration::from_mins(90));
        let reason = closes.reason();
        assert!(
            reason.contains("needs 3h0m0s (expected-run-time 3h0m0s)")
                && reason.contains("closes at 2026-03-04T21:00:00Z, 1h30m0s from now")
                && reason.contains("at least 2m0s before its close"),
            "{reason}"
        );
        // The window includes the second 21:00:00 and the drain counts to its first closed second,
        // 21:00:01: a pod that ends two minutes (2 × 30s + 1m) before that is left to finish.
        assert_eq!(closes_first(&zone, declares("88m"), GRACE, now), None);
        assert_eq!(closes_first(&zone, declares("88m1s"), GRACE, now), None);
        assert!(closes_first(&zone, declares("88m2s"), GRACE, now).is_some());
        let deadline = closes_first(&zone, EndCause::ActiveDeadline(7200), GRACE, now)
            .expect("a deadline counts too");
        assert!(
            deadline.reason().contains("(activeDeadlineSeconds 7200)"),
            "{}",
            deadline.reason()
        );
    }

    /// The drain lets a pod finish when it ends in time before the close, whenever the drain starts:
    /// admission counts from the close too, not from `drainBefore`.
    #[test]
    fn the_close_counts_not_the_start_of_the_drain() {
        let zone = kit::zone("z1")
            .window("08:00-21:00")
            .spec(json!({"drainBefore": "2h"}))
            .build();
        let now = ts("2026-03-04T18:00:00Z");
        assert_eq!(closes_first(&zone, declares("2h30m"), GRACE, now), None);
        assert!(closes_first(&zone, declares("3h"), GRACE, now).is_some());
        // A longer evictPeriod is a wider margin.
        let slow = kit::zone("z1")
            .window("08:00-21:00")
            .evict_period("45m")
            .build();
        assert!(closes_first(&slow, declares("2h30m"), GRACE, now).is_some());
    }

    #[test]
    fn a_closed_zone_counts_from_its_opening_and_an_always_open_one_never_keeps_a_pod_off() {
        let zone = day_zone();
        let night = ts("2026-03-04T23:00:00Z");
        assert_eq!(closes_first(&zone, declares("12h"), GRACE, night), None);
        let closes = closes_first(&zone, declares("13h"), GRACE, night).expect("window too short");
        assert_eq!(closes.opens, Some(ts("2026-03-05T08:00:00Z")));
        assert_eq!(closes.close, ts("2026-03-05T21:00:00Z"));
        assert_eq!(closes.left, SignedDuration::from_hours(13));
        assert!(
            closes
                .reason()
                .contains("opens at 2026-03-05T08:00:00Z and closes at"),
            "{}",
            closes.reason()
        );

        let always = kit::zone("z1").window("00:00-00:00").build();
        assert_eq!(
            closes_first(&always, declares("10000h"), GRACE, night),
            None
        );
        let mut unreadable = day_zone();
        unreadable.schedule = Err("unknown time zone".to_owned());
        assert_eq!(
            closes_first(&unreadable, declares("3h"), GRACE, night),
            None
        );
    }

    #[test]
    fn zones_closing_first_reads_the_pod_then_its_group_and_its_opt_in() {
        let zones = [
            kit::zone("early").window("08:00-20:00").build(),
            kit::zone("late").window("08:00-23:00").build(),
        ];
        let now = ts("2026-03-04T19:00:00Z");
        let names = |pod: &PodInfo, group: Option<&PodGroupInfo>| {
            zones_closing_first(pod, group, &zones, now)
                .unwrap()
                .into_iter()
                .map(|closes| closes.zone)
                .collect::<Vec<_>>()
        };
        let pod = |annotations: serde_json::Value| {
            kit::pod("ns/p", "")
                .bare()
                .patch(json!({"metadata": {"annotations": annotations}}))
                .build()
        };
        let two_hours = pod(json!({"tidal.dev/expected-run-time": "2h"}));
        assert_eq!(names(&two_hours, None), ["early"]);
        assert_eq!(
            names(&pod(json!({"tidal.dev/expected-run-time": "5h"})), None),
            ["early", "late"]
        );
        // Saying nothing keeps a pod off nothing.
        assert!(names(&pod(json!({})), None).is_empty());
        // The group declares for a pod that does not.
        let group = kit::podgroup("ns/g")
            .annotation("tidal.dev/expected-run-time", "5h")
            .build();
        assert_eq!(names(&pod(json!({})), Some(&group)), ["early", "late"]);
        assert_eq!(names(&two_hours, Some(&group)), ["early"]);
        // Opted into one zone: only that zone is looked at.
        let opted =
            pod(json!({"tidal.dev/expected-run-time": "5h", "volcano.sh/revocable-zone": "late"}));
        assert_eq!(names(&opted, None), ["late"]);
        // An unreadable declaration is reported, not read as silence.
        let unreadable = pod(json!({"tidal.dev/expected-run-time": "a while"}));
        let invalid = zones_closing_first(&unreadable, None, &zones, now).unwrap_err();
        assert!(invalid.to_string().contains("a while"), "{invalid}");
    }
}
