use std::collections::{BTreeMap, HashSet};

use serde_json::json;

use super::*;
use crate::api::labels;
use crate::{
    cluster::{ObjectKey, PolicyInfo},
    planner::plan_all,
    testkit::{
        Cluster, NOW, closed_zone, key_of, node, open_zone, pod, podgroup, policy, ts,
        with_context, zone,
    },
};

fn propose_with(
    world: &mut Cluster,
    policy: &PolicyInfo,
    planned: &HashSet<ObjectKey>,
) -> Vec<Candidate> {
    let snapshot = world.snapshot();
    let args = policy.spec.strategies.tdm.clone().unwrap_or_default();
    with_context(&snapshot, policy, NOW, planned, |ctx| {
        Tdm::new(args).propose(ctx)
    })
}

fn propose(world: &mut Cluster) -> Vec<Candidate> {
    propose_with(world, &policy(json!({})), &HashSet::new())
}

fn names(candidates: &[Candidate]) -> Vec<String> {
    candidates.iter().map(key_of).collect()
}

fn reason_of<'c>(candidates: &'c [Candidate], pod: &str) -> &'c str {
    candidates
        .iter()
        .find(|c| key_of(c) == pod)
        .map(|c| c.reason.as_str())
        .unwrap_or_else(|| panic!("{pod} not proposed: {:?}", names(candidates)))
}

#[test]
fn victims_job_by_job_lowest_priority_then_least_work_lost_then_name() {
    let mut world = Cluster::revocable();
    world.cache.apply_node(node("rev-2").zone("z").build());
    let member = |job: &str, name: &str, node: &str, priority: i32, started: &str| {
        pod(&format!("ns/{name}"), node)
            .owned_by("ReplicaSet", job)
            .preemptable()
            .priority(priority)
            .created(started)
    };
    let mut world = world.pods([
        // Job "b" sorts after job "a" whatever its pods look like.
        member("b", "b-first", "rev-1", 0, "2026-11-22T03:59:00Z"),
        member("a", "a-old-high", "rev-1", 10, "2026-11-22T01:00:00Z"),
        member("a", "a-young-high", "rev-2", 10, "2026-11-22T03:00:00Z"),
        member("a", "a-tie-y", "rev-1", 10, "2026-11-22T02:00:00Z"),
        member("a", "a-tie-x", "rev-2", 10, "2026-11-22T02:00:00Z"),
        member("a", "a-low", "rev-2", -5, "2026-11-22T00:00:00Z"),
        // Started first, but saved its work ten minutes ago: the least to lose.
        member("a", "a-saved", "rev-1", 10, "2026-11-21T00:00:00Z")
            .annotation("tidal.dev/checkpointed-at", "2026-11-22T03:50:00Z"),
    ]);
    assert_eq!(
        names(&propose(&mut world)),
        [
            "ns/a-low",
            "ns/a-saved",
            "ns/a-young-high",
            "ns/a-tie-x",
            "ns/a-tie-y",
            "ns/a-old-high",
            "ns/b-first",
        ]
    );
}

#[test]
fn without_a_scheduling_time_the_creation_time_orders() {
    let unscheduled_condition = json!({"status": {"conditions": []}});
    let mut world = Cluster::revocable().pods([
        pod("ns/created-early", "rev-1")
            .owned_by("ReplicaSet", "j")
            .preemptable()
            .patch(unscheduled_condition.clone())
            .created("2026-11-21T00:00:00Z"),
        pod("ns/created-late", "rev-1")
            .owned_by("ReplicaSet", "j")
            .preemptable()
            .patch(unscheduled_condition)
            .created("2026-11-22T00:00:00Z"),
    ]);
    assert_eq!(
        names(&propose(&mut world)),
        ["ns/created-late", "ns/created-early"]
    );
}

#[test]
fn preemptable_from_label_annotation_podgroup_or_policy_default() {
    let mut world = Cluster::revocable();
    world.cache.apply_podgroup(
        podgroup("ns/pg-label")
            .label(labels::PREEMPTABLE, "true")
            .build(),
    );
    world.cache.apply_podgroup(
        podgroup("ns/pg-annotation")
            .annotation(labels::PREEMPTABLE, "true")
            .build(),
    );
    let in_group = |name: &str, group: &str| {
        pod(&format!("ns/{name}"), "rev-1")
            .bare()
            .annotation(labels::GROUP_NAME, group)
    };
    let mut world = world.pods([
        pod("ns/by-label", "rev-1")
            .bare()
            .label(labels::PREEMPTABLE, "true"),
        pod("ns/by-annotation", "rev-1").bare().preemptable(),
        pod("ns/go-style-true", "rev-1")
            .bare()
            .annotation(labels::PREEMPTABLE, "T"),
        in_group("by-group-label", "pg-label"),
        in_group("by-group-annotation", "pg-annotation"),
        // The pod's own word beats its PodGroup's.
        pod("ns/pod-says-no", "rev-1")
            .bare()
            .annotation(labels::GROUP_NAME, "pg-label")
            .annotation(labels::PREEMPTABLE, "false"),
        // A group name whose PodGroup does not exist says nothing.
        in_group("missing-group", "pg-missing"),
        pod("ns/silent", "rev-1").bare(),
    ]);
    let candidates = propose(&mut world);
    for allowed in [
        "ns/by-label",
        "ns/by-annotation",
        "ns/go-style-true",
        "ns/by-group-label",
        "ns/by-group-annotation",
    ] {
        assert!(
            reason_of(&candidates, allowed).starts_with("zone z closed"),
            "{allowed}: {}",
            reason_of(&candidates, allowed)
        );
    }
    for violation in ["ns/pod-says-no", "ns/missing-group", "ns/silent"] {
        assert_eq!(
            reason_of(&candidates, violation),
            "placement violation: not preemptable, on a node of revocable zone z",
            "{violation}"
        );
    }

    // The policy default makes the silent ones preemptable, but not the one that said no.
    let everyone = policy(json!({"defaults": {"preemptable": true}}));
    let candidates = propose_with(&mut world, &everyone, &HashSet::new());
    assert!(reason_of(&candidates, "ns/silent").starts_with("zone z closed"));
    assert!(reason_of(&candidates, "ns/missing-group").starts_with("zone z closed"));
    assert!(reason_of(&candidates, "ns/pod-says-no").starts_with("placement violation"));
}

#[test]
fn zone_opt_in_annotation() {
    let mut world = Cluster::revocable().pods([
        pod("ns/any-zone", "rev-1")
            .bare()
            .preemptable()
            .annotation(labels::REVOCABLE_ZONE, "*"),
        pod("ns/this-zone", "rev-1")
            .bare()
            .preemptable()
            .annotation(labels::REVOCABLE_ZONE, "z"),
        pod("ns/other-zone", "rev-1")
            .bare()
            .preemptable()
            .annotation(labels::REVOCABLE_ZONE, "elsewhere"),
    ]);
    let candidates = propose(&mut world);
    assert!(reason_of(&candidates, "ns/any-zone").starts_with("zone z closed"));
    assert!(reason_of(&candidates, "ns/this-zone").starts_with("zone z closed"));
    assert_eq!(
        reason_of(&candidates, "ns/other-zone"),
        "placement violation: volcano.sh/revocable-zone=elsewhere but runs in revocable zone z"
    );
}

#[test]
fn empty_zone_opt_in_is_no_opt_in() {
    let mut world = Cluster::revocable();
    world.cache.apply_zone(open_zone("z").build());
    let mut world = world.pods([pod("ns/empty-opt-in", "rev-1")
        .bare()
        .preemptable()
        .annotation(labels::REVOCABLE_ZONE, "")]);
    assert_eq!(names(&propose(&mut world)), Vec::<String>::new());
}

#[test]
fn open_zone_proposes_only_violations() {
    let mut world = Cluster::revocable();
    world.cache.apply_zone(open_zone("z").build());
    let mut world = world.pods([
        pod("ns/preemptable", "rev-1").bare().preemptable(),
        pod("ns/misplaced", "rev-1").bare(),
        pod("ns/other-zone", "rev-1")
            .bare()
            .preemptable()
            .annotation(labels::REVOCABLE_ZONE, "y"),
    ]);
    let candidates = propose(&mut world);
    assert_eq!(names(&candidates), ["ns/misplaced", "ns/other-zone"]);
    assert!(
        candidates
            .iter()
            .all(|c| c.held.is_none() && c.zone.as_deref() == Some("z"))
    );

    // Held instead: never proposed, reported under gate `policy` with why the strategy found them.
    let hold = policy(json!({"strategies": {"tdm": {"evictPlacementViolations": false}}}));
    assert!(propose_with(&mut world, &hold, &HashSet::new()).is_empty());
    let snapshot = world.snapshot();
    let cycle = plan_all(&snapshot, &[&hold], ts(NOW));
    let plan = &cycle.plans[0];
    assert!(plan.evictions.is_empty());
    let rows: Vec<(String, &str, &str, &str)> = plan
        .skipped
        .iter()
        .map(|skip| {
            (
                key_of(&skip.candidate),
                skip.reason.name(),
                skip.detail.as_str(),
                skip.candidate.reason.as_str(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (
                "ns/misplaced".to_owned(),
                "policy",
                "evictPlacementViolations is off",
                "placement violation: not preemptable, on a node of revocable zone z"
            ),
            (
                "ns/other-zone".to_owned(),
                "policy",
                "evictPlacementViolations is off",
                "placement violation: volcano.sh/revocable-zone=y but runs in revocable zone z"
            ),
        ]
    );
}

#[test]
fn held_pods_beyond_the_listed_rows_are_counted_and_kept_from_later_strategies() {
    let mut world = Cluster::revocable();
    world.cache.apply_zone(open_zone("z").build());
    let mut world = world.pods((0..5).map(|i| pod(&format!("ns/misplaced-{i}"), "rev-1").bare()));
    let snapshot = world.snapshot();
    // podLifeTime would evict every one of them; TDM, first, holds them.
    let hold = policy(json!({"strategies": {
        "tdm": {"evictPlacementViolations": false},
        "podLifeTime": {"maxPodLifeTimeSeconds": 1},
    }}));
    let (zones, _) = crate::framework::zone_views(&snapshot, ts(NOW));
    let plan = crate::planner::plan_policy_with(
        &snapshot,
        &hold,
        ts(NOW),
        &zones,
        &HashSet::new(),
        crate::planner::SkipRows::AtMost(2),
    );
    assert!(plan.evictions.is_empty(), "{:?}", plan.evictions);
    assert_eq!(plan.skipped.len(), 2);
    assert_eq!(plan.skipped_by_reason(), BTreeMap::from([("policy", 5)]));
}

#[test]
fn a_closed_zone_that_lifts_budgets_evicts_a_whole_job_in_one_round_and_a_draining_one_does_not() {
    let job = |world: Cluster| {
        world.pods((0..4).map(|i| {
            pod(&format!("ns/big-{i}"), "rev-1")
                .owned_by("ReplicaSet", "big")
                .preemptable()
                .annotation("volcano.sh/jdb-max-unavailable", "1")
        }))
    };
    let evicted = |world: &mut Cluster| {
        let snapshot = world.snapshot();
        let evict = policy(json!({"mode": "Evict"}));
        plan_all(&snapshot, &[&evict], ts(NOW)).plans[0]
            .evictions
            .len()
    };
    let lifted = json!({"budgetsAfterClose": "Ignore"});
    let mut closed = job(Cluster::new()
        .node(node("rev-1").zone("z"))
        .zone(closed_zone("z").spec(lifted.clone())));
    assert_eq!(evicted(&mut closed), 4);
    let mut respected = job(Cluster::revocable());
    assert_eq!(evicted(&mut respected), 1);
    // Open until 05:00 and draining: the close has not come, budgets hold.
    let mut draining = job(Cluster::new().node(node("rev-1").zone("z")).zone(
        zone("z")
            .window("20:00-05:00")
            .spec(json!({"drainBefore": "2h", "budgetsAfterClose": "Ignore"})),
    ));
    assert_eq!(evicted(&mut draining), 1);
}

#[test]
fn invalid_preemptable_is_proposed_for_the_invalid_gate() {
    let mut world = Cluster::revocable().pods([pod("ns/unsure", "rev-1")
        .bare()
        .annotation(labels::PREEMPTABLE, "maybe")]);
    let candidates = propose(&mut world);
    assert_eq!(
        reason_of(&candidates, "ns/unsure"),
        "on revocable zone z, preemptable unknown"
    );
    let snapshot = world.snapshot();
    let policy = policy(json!({}));
    let cycle = plan_all(&snapshot, &[&policy], ts(NOW));
    let plan = &cycle.plans[0];
    assert!(plan.evictions.is_empty());
    let skip = &plan.skipped[0];
    assert_eq!(skip.reason.name(), "invalid");
    assert!(
        skip.detail.contains("volcano.sh/preemptable") && skip.detail.contains("\"maybe\""),
        "{}",
        skip.detail
    );
}

#[test]
fn node_bound_finished_and_pending_pods_are_not_proposed() {
    let mut world = Cluster::revocable().pods([
        pod("ns/daemon", "rev-1")
            .owned_by("DaemonSet", "agent")
            .preemptable(),
        pod("ns/static", "rev-1")
            .owned_by("Node", "rev-1")
            .preemptable(),
        pod("ns/mirror", "rev-1")
            .bare()
            .preemptable()
            .annotation(labels::MIRROR_POD, "abc"),
        pod("ns/done", "rev-1")
            .bare()
            .preemptable()
            .phase("Succeeded"),
        pod("ns/failed-violation", "rev-1").bare().phase("Failed"),
        pod("ns/starting", "rev-1")
            .bare()
            .preemptable()
            .phase("Pending"),
        pod("ns/normal", "normal-1").bare(),
        pod("ns/victim", "rev-1").bare().preemptable(),
    ]);
    assert_eq!(names(&propose(&mut world)), ["ns/victim"]);
}

#[test]
fn leaving_pods_are_not_proposed() {
    let mut world = Cluster::revocable().pods([
        pod("ns/terminating", "rev-1")
            .bare()
            .preemptable()
            .patch(json!({"metadata": {"deletionTimestamp": "2026-11-22T03:59:00Z"}})),
        pod("ns/evicting", "rev-1").bare().preemptable(),
        pod("ns/planned", "rev-1").bare().preemptable(),
        pod("ns/misplaced-planned", "rev-1").bare(),
        pod("ns/victim", "rev-1").bare().preemptable(),
    ]);
    assert!(world.cache.mark_evicting(
        &ObjectKey::new("ns", "evicting"),
        ts("2026-11-22T03:59:00Z")
    ));
    let planned = HashSet::from([
        ObjectKey::new("ns", "planned"),
        ObjectKey::new("ns", "misplaced-planned"),
    ]);
    let candidates = propose_with(&mut world, &policy(json!({})), &planned);
    assert_eq!(names(&candidates), ["ns/victim"]);
}

#[test]
fn draining_zone_proposes_with_a_draining_reason() {
    let mut world = Cluster::revocable();
    // Open until 05:00; at 04:00 within its 90 minutes of drainBefore.
    world.cache.apply_zone(
        zone("z")
            .window("00:00-05:00")
            .spec(json!({"drainBefore": "90m"}))
            .build(),
    );
    let mut world = world.pods([pod("ns/victim", "rev-1").bare().preemptable()]);
    let candidates = propose(&mut world);
    assert_eq!(
        reason_of(&candidates, "ns/victim"),
        "zone z closes at 2026-11-22T05:00:00Z (draining)"
    );

    world.cache.apply_zone(
        zone("z")
            .window("00:00-05:00")
            .spec(json!({"drainBefore": "30m"}))
            .build(),
    );
    assert!(propose(&mut world).is_empty(), "not yet draining at 04:00");
}

#[test]
fn closed_reason_names_the_reopening_not_the_windows() {
    // The windows are on the zone's own line of the report; every pod's row would repeat them.
    let mut world = Cluster::revocable().pods([pod("ns/victim", "rev-1").bare().preemptable()]);
    assert_eq!(
        reason_of(&propose(&mut world), "ns/victim"),
        "zone z closed; opens 2026-11-22T08:00:00Z"
    );
}

#[test]
fn zone_with_invalid_schedule_proposes_nothing() {
    let mut world = Cluster::revocable();
    let broken = zone("z").window("25:00-06:00").build();
    assert!(broken.schedule.is_err());
    world.cache.apply_zone(broken);
    let unknown_tz = zone("y")
        .window("08:00-20:00")
        .spec(json!({"timeZone": "Mars/Olympus_Mons"}))
        .build();
    assert!(unknown_tz.schedule.is_err());
    world.cache.apply_zone(unknown_tz);
    world.cache.apply_node(node("rev-y").zone("y").build());
    let mut world = world.pods([
        pod("ns/preemptable", "rev-1").bare().preemptable(),
        pod("ns/misplaced", "rev-1").bare(),
        pod("ns/in-y", "rev-y").bare().preemptable(),
    ]);
    assert!(propose(&mut world).is_empty());
}

#[test]
fn nodes_of_a_zone_without_revocable_zone_object_are_left_alone() {
    let mut world = Cluster::revocable();
    world.cache.apply_node(node("rev-x").zone("x").build());
    let mut world = world.pods([
        pod("ns/preemptable", "rev-x").bare().preemptable(),
        pod("ns/misplaced", "rev-x").bare(),
    ]);
    assert!(propose(&mut world).is_empty());
}

#[test]
fn round_not_due_proposes_no_preemptable_pods() {
    let mut world = Cluster::revocable();
    world.cache.apply_zone(
        zone("z")
            .window("08:00-20:00")
            .spec(json!({"evictPeriod": "5m"}))
            .status(json!({"lastEvictionRound": "2026-11-22T03:57:00Z"}))
            .build(),
    );
    world.cache.apply_node(node("rev-y").zone("y").build());
    world.cache.apply_zone(closed_zone("y").build());
    let mut world = world.pods([
        pod("ns/waits", "rev-1").bare().preemptable(),
        pod("ns/goes", "rev-y").bare().preemptable(),
    ]);
    assert_eq!(names(&propose(&mut world)), ["ns/goes"]);
}

#[test]
fn a_round_in_the_future_pauses_the_zone_one_evict_period_at_most() {
    // lastEvictionRound a day ahead (clock skew, a hand edit): counted as now, with a warning,
    // so the zone's next round is one evictPeriod away rather than tomorrow.
    let mut world = Cluster::revocable();
    world.cache.apply_zone(
        zone("z")
            .window("08:00-20:00")
            .spec(json!({"evictPeriod": "5m"}))
            .status(json!({"lastEvictionRound": "2026-11-23T04:00:00Z"}))
            .build(),
    );
    let snapshot = world.cache.snapshot();
    let now = crate::testkit::ts("2026-11-22T04:00:00Z");
    let (views, warnings) = crate::framework::zone_views(&snapshot, now);
    let view = &views["z"];
    assert!(!view.round_due);
    assert_eq!(
        view.next_round,
        Some(crate::testkit::ts("2026-11-22T04:05:00Z"))
    );
    assert!(
        warnings.iter().any(|w| w.text.contains("in the future")),
        "{warnings:?}"
    );
}
