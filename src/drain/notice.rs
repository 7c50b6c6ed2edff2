//! Notice before eviction: a zone with `evictionNotice` tells each preemptable pod, that long before
//! it may go, that a drain will evict it, so that the workload can save its work. The pod is told
//! when its zone's drain is due to start within the notice (at once, for a drain under way): a
//! `tidal.dev/EvictionNotice` condition, whose `lastTransitionTime` is the notice, and two annotations
//! for the workload (the instant before which it stays, the close before which it goes). No drain
//! evicts it sooner than the notice after that instant (gate `notice`), and the plan places its
//! eviction no earlier.
//!
//! A notice counts for the close it was given for: one given before the window being closed opened
//! was for an earlier close. Pure; the controller sends what [`due`] says, and the timeline applies
//! it to its simulated pods.

use std::collections::HashSet;

use jiff::{SignedDuration, Timestamp};

use super::{ZoneOutlook, inputs::must_leave};
use crate::{
    api::labels,
    cluster::{ObjectKey, PolicyInfo, Snapshot, ZoneInfo, noticed_at},
    framework::PlanContext,
};

/// A notice to give now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub pod: ObjectKey,
    /// The pod's uid, when known: the notice is for this pod, not a namesake created since.
    pub uid: Option<String>,
    pub zone: String,
    /// The notice's instant, to the second: the condition's `lastTransitionTime`.
    pub at: Timestamp,
    /// The pod is not evicted before this instant: the notice's instant plus the zone's notice.
    pub evict_after: Timestamp,
    /// The close before which it is evicted; `None` when the zone is closed already.
    pub evict_by: Option<Timestamp>,
}

impl Notice {
    /// What the condition says, in a line.
    pub fn message(&self) -> String {
        match self.evict_by {
            Some(close) => format!(
                "zone {} closes at {close}: this pod may be evicted from {} on, and is before the \
                 close if it still runs then",
                self.zone, self.evict_after
            ),
            None => format!(
                "zone {} is closed: this pod may be evicted from {} on",
                self.zone, self.evict_after
            ),
        }
    }
}

/// How much earlier than its notice before the drain a zone's pods are told: the controller looks
/// every few seconds, and a pod told a little early is still evictable when the drain starts.
pub const EARLY: SignedDuration = SignedDuration::from_secs(10);

/// A zone whose pods are told from an instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Noticing {
    pub zone: String,
    /// From when its pods are told: its notice (and [`EARLY`]) before its drain starts; the distant
    /// past for a drain under way.
    pub from: Timestamp,
    /// The close its drain is for; `None` when the zone is closed.
    pub close: Option<Timestamp>,
}

impl Noticing {
    /// Who the drain plan says is told, from its outlook of a zone: `None` when the zone asks no
    /// notice or no drain is ahead.
    pub fn of(outlook: &ZoneOutlook) -> Option<Noticing> {
        Some(Noticing {
            zone: outlook.zone.clone(),
            from: outlook.notices_from?,
            close: outlook.close,
        })
    }
}

/// When `zone`'s pods are told for its next drain, as of `now`: at once while it evicts, else its
/// notice before its drain's `start` (the plan's, for an `auto` zone; a fixed lead's otherwise).
/// `None` when the zone asks no notice, its windows cannot be read, or no drain is ahead.
pub fn noticing(zone: &ZoneInfo, now: Timestamp, start: Option<Timestamp>) -> Option<Noticing> {
    let notice = zone.eviction_notice()?;
    let state = zone.state_at(now).ok()?;
    let close = state.next_change.filter(|_| state.open);
    let from = if state.evicting() {
        Timestamp::MIN
    } else {
        let start = zone.fixed_drain_start(close?).or(start)?;
        start
            .checked_sub(notice.saturating_add(EARLY))
            .unwrap_or(Timestamp::MIN)
    };
    Some(Noticing {
        zone: zone.name.clone(),
        from,
        close,
    })
}

/// The notices due at `now`: every preemptable pod a drain of `zones` would evict, not told yet for
/// this close, once its zone's pods are told. `sent` are pods told already whose condition the cache
/// does not show yet.
pub fn due(
    snapshot: &Snapshot,
    policy: &PolicyInfo,
    zones: &[Noticing],
    now: Timestamp,
    sent: &HashSet<ObjectKey>,
) -> Vec<Notice> {
    // A condition's time is whole seconds: the notice counts from there.
    let told_at = Timestamp::from_second(now.as_second()).unwrap_or(now);
    let nothing_planned = HashSet::new();
    let no_views = std::collections::BTreeMap::new();
    let ctx = PlanContext {
        snapshot,
        policy,
        now,
        zones: &no_views,
        planned_elsewhere: &nothing_planned,
    };
    let mut notices = Vec::new();
    for noticing in zones.iter().filter(|z| z.from <= now) {
        let Some(zone) = snapshot.zones.get(&noticing.zone) else {
            continue;
        };
        let Some(notice) = zone.eviction_notice() else {
            continue;
        };
        let evict_after = told_at.checked_add(notice).unwrap_or(Timestamp::MAX);
        // The close as the operator wrote it (10:00), not its first closed second.
        let evict_by = noticing.close.map(|close| {
            zone.schedule
                .as_ref()
                .map_or(close, |schedule| schedule.shown_change(close))
        });
        for node in snapshot.zone_nodes(&noticing.zone) {
            for pod in node.pods.values() {
                let told = sent.contains(&pod.key) || noticed_at(pod, zone, now).is_some();
                if told || pod.is_leaving() || !must_leave(&ctx, pod, &noticing.zone) {
                    continue;
                }
                notices.push(Notice {
                    pod: pod.key.clone(),
                    uid: Some(pod.uid.to_string()).filter(|uid| !uid.is_empty()),
                    zone: noticing.zone.clone(),
                    at: told_at,
                    evict_after,
                    evict_by,
                });
            }
        }
    }
    notices
}

/// A notice to take back: the pod's zone has opened since it was given (so it was for an earlier
/// close), and the zone is not telling its pods now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Withdrawal {
    pub pod: ObjectKey,
    pub uid: Option<String>,
    pub zone: String,
    /// When it is taken back, to the second.
    pub at: Timestamp,
}

/// The notices to take back at `now`: those on the pods of zones that have opened since they were
/// given, where the zone is not telling its pods again now (`zones`, as for [`due`]). A workload
/// reading its notice then sees that its eviction is off. `sent` are the pods written to already.
pub fn withdrawals(
    snapshot: &Snapshot,
    zones: &[Noticing],
    now: Timestamp,
    sent: &HashSet<ObjectKey>,
) -> Vec<Withdrawal> {
    let at = Timestamp::from_second(now.as_second()).unwrap_or(now);
    let mut withdrawals = Vec::new();
    for zone in snapshot.zones.values() {
        let telling = zones
            .iter()
            .any(|noticing| noticing.zone == zone.name && noticing.from <= now);
        let Ok(state) = zone.state_at(now) else {
            continue;
        };
        // A closed or draining zone's stale notices are given again by `due`, not taken back.
        if telling || state.evicting() {
            continue;
        }
        for node in snapshot.zone_nodes(&zone.name) {
            for pod in node.pods.values() {
                let told = pod
                    .status
                    .condition(labels::EVICTION_NOTICE)
                    .is_some_and(|condition| condition.status == "True");
                if !told || sent.contains(&pod.key) || noticed_at(pod, zone, now).is_some() {
                    continue;
                }
                withdrawals.push(Withdrawal {
                    pod: pod.key.clone(),
                    uid: Some(pod.uid.to_string()).filter(|uid| !uid.is_empty()),
                    zone: zone.name.clone(),
                    at,
                });
            }
        }
    }
    withdrawals
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testkit::{Cluster, closed_zone, node, pod, policy, ts, zone};

    /// Zone `z` open 20:00-05:00 UTC with 10 minutes of notice and a fixed 30-minute lead: at 04:00
    /// it has been open since 20:00 and drains from 04:30 for its close at 05:00.
    fn cluster(pods: Vec<crate::testkit::PodBuilder>) -> Cluster {
        Cluster::new()
            .node(node("rev-1").zone("z"))
            .node(node("plain-1"))
            .zone(zone("z").window("20:00-05:00").spec(json!({
                "evictionNotice": "10m",
                "drainBefore": "30m",
            })))
            .pods(pods)
    }

    fn preemptable(name: &str) -> crate::testkit::PodBuilder {
        pod(&format!("batch/{name}"), "rev-1")
            .owned_by("ReplicaSet", name)
            .preemptable()
    }

    #[test]
    fn a_notice_counts_for_the_close_it_was_given_for() {
        let mut world = cluster(vec![
            preemptable("tonight").noticed_at("2026-11-22T03:50:00Z"),
            preemptable("last-night").noticed_at("2026-11-21T04:50:00Z"),
            preemptable("withdrawn").noticed_at("2026-11-22T03:50:00Z"),
        ]);
        let snapshot = world.snapshot();
        let zone = &snapshot.zones["z"];
        let told = |name: &str, now: &str| {
            let pod = snapshot
                .zone_nodes("z")
                .flat_map(|n| n.pods.values())
                .find(|p| p.key.name.as_str() == name)
                .unwrap();
            noticed_at(pod, zone, ts(now))
        };
        assert_eq!(
            told("tonight", "2026-11-22T04:00:00Z"),
            Some(ts("2026-11-22T03:50:00Z"))
        );
        // Given before the window being closed opened (20:00): for yesterday's close.
        assert_eq!(told("last-night", "2026-11-22T04:00:00Z"), None);
        // Closed since 05:00: notices given while the window was open still count...
        assert_eq!(
            told("tonight", "2026-11-22T06:00:00Z"),
            Some(ts("2026-11-22T03:50:00Z"))
        );
        // ... and once the zone has opened again they no longer do.
        assert_eq!(told("tonight", "2026-11-22T21:00:00Z"), None);
    }

    #[test]
    fn pods_are_told_their_notice_before_the_drain_starts_and_once() {
        let mut world = cluster(vec![
            preemptable("a"),
            preemptable("b").noticed_at("2026-11-22T04:20:00Z"),
            preemptable("sent"),
            pod("batch/web", "rev-1").owned_by("ReplicaSet", "web"),
        ]);
        let snapshot = world.snapshot();
        let zone = &snapshot.zones["z"];
        let evict = policy(json!({"mode": "Evict"}));
        // The drain starts at 04:30:01 (the close is 05:00:01, the first closed second).
        let noticing = noticing(zone, ts("2026-11-22T04:00:00Z"), None).unwrap();
        assert_eq!(noticing.from, ts("2026-11-22T04:19:51Z"));
        let sent: HashSet<ObjectKey> = [ObjectKey::new("batch", "sent")].into();
        let due_at = |now: &str| {
            due(
                &snapshot,
                &evict,
                std::slice::from_ref(&noticing),
                ts(now),
                &sent,
            )
        };
        assert_eq!(due_at("2026-11-22T04:19:50Z"), []);
        let notices = due_at("2026-11-22T04:19:51.700Z");
        let told: Vec<&str> = notices.iter().map(|n| n.pod.name.as_str()).collect();
        // Not `b` (told already), `sent` (written, not seen yet), nor `web` (not preemptable).
        assert_eq!(told, ["a"]);
        let notice = &notices[0];
        assert_eq!(notice.at, ts("2026-11-22T04:19:51Z"), "whole seconds");
        assert_eq!(notice.evict_after, ts("2026-11-22T04:29:51Z"));
        assert_eq!(notice.evict_by, Some(ts("2026-11-22T05:00:00Z")));
        assert!(
            notice.message().contains("from 2026-11-22T04:29:51Z on"),
            "{}",
            notice.message()
        );
    }

    #[test]
    fn an_auto_zone_is_told_before_its_planned_start_and_a_closed_one_at_once() {
        let mut world = Cluster::new()
            .node(node("rev-1").zone("z"))
            .zone(
                zone("z")
                    .window("20:00-05:00")
                    .spec(json!({"evictionNotice": "5m"})),
            )
            .node(node("rev-2").zone("shut"))
            .zone(closed_zone("shut").spec(json!({"evictionNotice": "5m"})))
            .node(node("rev-3").zone("silent"))
            .zone(closed_zone("silent"));
        let snapshot = world.snapshot();
        let now = ts("2026-11-22T04:00:00Z");
        let planned = ts("2026-11-22T04:40:00Z");
        assert_eq!(
            noticing(&snapshot.zones["z"], now, Some(planned)).map(|n| n.from),
            Some(ts("2026-11-22T04:34:50Z"))
        );
        // No start planned yet: nobody is told.
        assert_eq!(noticing(&snapshot.zones["z"], now, None), None);
        let shut = noticing(&snapshot.zones["shut"], now, None).unwrap();
        assert_eq!((shut.from, shut.close), (Timestamp::MIN, None));
        assert_eq!(noticing(&snapshot.zones["silent"], now, None), None);
    }

    #[test]
    fn a_notice_for_an_earlier_close_is_taken_back_while_the_zone_is_open_and_not_telling() {
        let mut world = cluster(vec![
            preemptable("stale").noticed_at("2026-11-21T04:50:00Z"),
            preemptable("current").noticed_at("2026-11-22T03:50:00Z"),
            preemptable("untold"),
        ]);
        let snapshot = world.snapshot();
        let zone = &snapshot.zones["z"];
        let nobody = HashSet::new();
        let taken_back = |now: &str| -> Vec<String> {
            let noticing: Vec<Noticing> = noticing(zone, ts(now), None).into_iter().collect();
            withdrawals(&snapshot, &noticing, ts(now), &nobody)
                .into_iter()
                .map(|w| w.pod.name.to_string())
                .collect()
        };
        // Open, its pods told from 04:19:51: the stale notice is taken back until then...
        assert_eq!(taken_back("2026-11-22T04:00:00Z"), ["stale"]);
        // ... and then given again instead.
        assert_eq!(taken_back("2026-11-22T04:20:00Z"), Vec::<String>::new());
        let told = noticing(zone, ts("2026-11-22T04:20:00Z"), None).unwrap();
        let evict = policy(json!({"mode": "Evict"}));
        let given: Vec<String> = due(
            &snapshot,
            &evict,
            &[told],
            ts("2026-11-22T04:20:00Z"),
            &nobody,
        )
        .into_iter()
        .map(|n| n.pod.name.to_string())
        .collect();
        assert_eq!(given, ["stale", "untold"]);
    }

    #[test]
    fn the_gate_lets_a_pod_go_once_its_notice_has_run() {
        let mut world = Cluster::revocable()
            .zone(closed_zone("z").spec(json!({"evictionNotice": "10m"})))
            .pods([
                preemptable("untold"),
                preemptable("told-late").noticed_at("2026-11-22T03:55:00Z"),
                preemptable("told-early").noticed_at("2026-11-22T03:50:00Z"),
            ]);
        let outcome = world.plan_policy(&policy(json!({"mode": "Evict"})));
        assert_eq!(outcome.evicted(), ["batch/told-early"]);
        assert!(
            outcome.detail("batch/untold").contains("not been told yet"),
            "{}",
            outcome.detail("batch/untold")
        );
        assert!(
            outcome
                .detail("batch/told-late")
                .contains("evicted from 2026-11-22T04:05:00Z on"),
            "{}",
            outcome.detail("batch/told-late")
        );
    }
}
