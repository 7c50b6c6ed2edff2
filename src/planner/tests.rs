//! Planner tests, and the builders the strategy and gate tests share. Every object is written as the JSON
//! the API server would send and converted by the same code the cache uses (`PodInfo::from_pod`, ...), so
//! fields added to the slim types later do not break these tests.

use std::collections::{BTreeMap, HashSet};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Value, json};

use super::{Plan, plan_all, plan_policy};
use crate::framework::{Candidate, PlanContext, ZoneView, zone_views};
use crate::{
    api::{DeschedulingPolicy, PodGroup, RevocableZone},
    cluster::{
        ClusterCache, NodeInfo, ObjectKey, PodGroupInfo, PodInfo, PolicyInfo, Snapshot, ZoneInfo,
    },
};

/// The planning instant of these tests. Zone `z` ([`closed_zone`]) is closed then.
pub(crate) const NOW: &str = "2026-11-22T04:00:00Z";
/// When pods are scheduled unless they say otherwise: an hour before [`NOW`].
pub(crate) const SCHEDULED: &str = "2026-11-22T03:00:00Z";

pub(crate) fn ts(text: &str) -> Timestamp {
    text.parse().expect("test timestamp")
}

/// Merges `patch` into `base`: objects key by key, anything else replaced.
pub(crate) fn merge(base: &mut Value, patch: Value) {
    match (base, patch) {
        (Value::Object(base), Value::Object(patch)) => {
            for (key, value) in patch {
                merge(base.entry(key).or_insert(Value::Null), value);
            }
        }
        (base, patch) => *base = patch,
    }
}

/// A running pod on `node`, scheduled at [`SCHEDULED`], with `patch` merged into its JSON.
pub(crate) fn pod(namespace: &str, name: &str, node: &str, patch: Value) -> PodInfo {
    let mut json = json!({
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": format!("uid-{namespace}-{name}"),
            "creationTimestamp": "2026-11-22T02:59:59Z",
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "main", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": SCHEDULED}],
        },
    });
    merge(&mut json, patch);
    let pod: Pod = serde_json::from_value(json).expect("test pod JSON");
    PodInfo::from_pod(&pod).expect("test pod has a name")
}

/// Patch: annotations.
pub(crate) fn annotations(pairs: &[(&str, &str)]) -> Value {
    json!({"metadata": {"annotations": string_map(pairs)}})
}

/// Patch: labels.
pub(crate) fn labels(pairs: &[(&str, &str)]) -> Value {
    json!({"metadata": {"labels": string_map(pairs)}})
}

fn string_map(pairs: &[(&str, &str)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect(),
    )
}

/// Patch: a controller owner.
pub(crate) fn owned_by(kind: &str, name: &str) -> Value {
    json!({"metadata": {"ownerReferences": [{
        "apiVersion": "apps/v1", "kind": kind, "name": name, "uid": format!("uid-{name}"), "controller": true,
    }]}})
}

/// Patch: scheduled at `at` (the `PodScheduled` condition).
pub(crate) fn scheduled_at(at: &str) -> Value {
    json!({"status": {"conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": at}]}})
}

/// Patch: `volcano.sh/preemptable: "true"` as an annotation.
pub(crate) fn preemptable() -> Value {
    annotations(&[("volcano.sh/preemptable", "true")])
}

/// Several patches as one.
pub(crate) fn all(patches: impl IntoIterator<Item = Value>) -> Value {
    let mut out = json!({});
    for patch in patches {
        merge(&mut out, patch);
    }
    out
}

pub(crate) fn node(name: &str, zone: Option<&str>) -> NodeInfo {
    let mut labels = json!({"kubernetes.io/hostname": name});
    if let Some(zone) = zone {
        labels["volcano.sh/revocable-zone"] = json!(zone);
    }
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }))
    .expect("test node JSON");
    NodeInfo::from_node(&node).expect("test node has a name")
}

/// A zone from its spec (and optional status), as JSON.
pub(crate) fn zone(name: &str, spec: Value, status: Option<Value>) -> ZoneInfo {
    let mut json = json!({
        "apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone",
        "metadata": {"name": name}, "spec": spec,
    });
    if let Some(status) = status {
        json["status"] = status;
    }
    let zone: RevocableZone = serde_json::from_value(json).expect("test zone JSON");
    ZoneInfo::from_zone(&zone).expect("test zone has a name")
}

/// Zone `name` open 08:00-20:00 UTC: closed at [`NOW`].
pub(crate) fn closed_zone(name: &str) -> ZoneInfo {
    zone(name, json!({"windows": [{"time": "08:00-20:00"}]}), None)
}

/// Zone `name` open all day.
pub(crate) fn open_zone(name: &str) -> ZoneInfo {
    zone(name, json!({"windows": [{"time": "00:00-00:00"}]}), None)
}

/// A DryRun policy running TDM with default arguments, with `patch` merged into its spec.
pub(crate) fn policy(patch: Value) -> PolicyInfo {
    let mut json = json!({
        "apiVersion": "tidal.dev/v1alpha1", "kind": "DeschedulingPolicy",
        "metadata": {"name": "p"},
        "spec": {"mode": "DryRun", "strategies": {"tdm": {}}},
    });
    merge(&mut json, json!({"spec": patch}));
    let policy: DeschedulingPolicy = serde_json::from_value(json).expect("test policy JSON");
    PolicyInfo::from_policy(&policy).expect("test policy has a name")
}

pub(crate) fn podgroup(namespace: &str, name: &str, patch: Value) -> PodGroupInfo {
    let mut json = json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace}, "spec": {"minMember": 1},
    });
    merge(&mut json, patch);
    let group: PodGroup = serde_json::from_value(json).expect("test PodGroup JSON");
    PodGroupInfo::from_podgroup(&group).expect("test PodGroup has a name")
}

/// A cluster under construction: one revocable node `rev-1` in the closed zone `z` and a normal node
/// `normal-1`, unless the test adds more.
pub(crate) struct World {
    pub cache: ClusterCache,
}

impl World {
    pub(crate) fn new() -> World {
        let mut cache = ClusterCache::new();
        cache.apply_node(node("rev-1", Some("z")));
        cache.apply_node(node("normal-1", None));
        cache.apply_zone(closed_zone("z"));
        World { cache }
    }

    pub(crate) fn with(mut self, pods: impl IntoIterator<Item = PodInfo>) -> World {
        for pod in pods {
            self.cache.apply_pod(pod, jiff::Timestamp::UNIX_EPOCH);
        }
        self
    }

    pub(crate) fn snapshot(&mut self) -> Snapshot {
        self.cache.snapshot()
    }
}

/// Runs `f` with the context a policy's planning would see at `now`.
pub(crate) fn with_context<R>(
    snapshot: &Snapshot,
    policy: &PolicyInfo,
    now: &str,
    planned_elsewhere: &HashSet<ObjectKey>,
    f: impl FnOnce(&PlanContext<'_>) -> R,
) -> R {
    let (zones, _) = zone_views(snapshot, ts(now));
    let ctx = PlanContext {
        snapshot,
        policy,
        now: ts(now),
        zones: &zones,
        planned_elsewhere,
    };
    f(&ctx)
}

/// `ns/name` of a candidate, an eviction or a skip.
pub(crate) fn key_of(candidate: &Candidate) -> String {
    candidate.pod.key.to_string()
}

fn plan(world: &mut World, policy: &PolicyInfo) -> Plan {
    let snapshot = world.snapshot();
    plan_with(&snapshot, policy, &HashSet::new())
}

fn plan_with(snapshot: &Snapshot, policy: &PolicyInfo, planned: &HashSet<ObjectKey>) -> Plan {
    let (zones, _) = zone_views(snapshot, ts(NOW));
    plan_policy(snapshot, policy, ts(NOW), &zones, planned)
}

fn evicted(plan: &Plan) -> Vec<String> {
    plan.evictions
        .iter()
        .map(|e| key_of(&e.candidate))
        .collect()
}

fn skipped(plan: &Plan) -> BTreeMap<String, &'static str> {
    plan.skipped
        .iter()
        .map(|s| (key_of(&s.candidate), s.reason.name()))
        .collect()
}

fn skip_detail<'p>(plan: &'p Plan, pod: &str) -> &'p str {
    plan.skipped
        .iter()
        .find(|s| key_of(&s.candidate) == pod)
        .map(|s| s.detail.as_str())
        .unwrap_or_else(|| panic!("{pod} not skipped: {plan:#?}"))
}

fn replicas(namespace: &str, owner: &str, count: usize, patch: &Value) -> Vec<PodInfo> {
    (0..count)
        .map(|i| {
            pod(
                namespace,
                &format!("{owner}-{i}"),
                "rev-1",
                all([owned_by("ReplicaSet", owner), preemptable(), patch.clone()]),
            )
        })
        .collect()
}

#[test]
fn each_strategy_that_ran_has_its_duration_in_the_order_it_ran() {
    let mut world = World::new().with(replicas("a", "big", 3, &json!({})));
    let policy = policy(json!({"strategies": {"tdm": {}, "removeFailedPods": {}}}));
    let plan = plan(&mut world, &policy);
    let ran: Vec<String> = plan
        .strategy_durations
        .iter()
        .map(|(id, _)| id.to_string())
        .collect();
    assert_eq!(ran, ["tdm", "removeFailedPods"]);
}

#[test]
fn every_pod_is_decided_once() {
    let mut world = World::new().with(replicas("a", "big", 5, &json!({})).into_iter().chain([
        // Owned: a bare violation would be stopped by the protections before the limit.
        pod("a", "violation", "rev-1", owned_by("ReplicaSet", "v")),
        pod(
            "b",
            "cool",
            "rev-1",
            all([
                preemptable(),
                annotations(&[("volcano.sh/cooldown-time", "2h")]),
            ]),
        ),
        pod(
            "b",
            "bad",
            "rev-1",
            annotations(&[("volcano.sh/preemptable", "maybe")]),
        ),
        pod("c", "elsewhere", "normal-1", preemptable()),
    ]));
    let plan = plan(&mut world, &policy(json!({"limits": {"total": 1}})));
    let mut seen: Vec<String> = evicted(&plan);
    seen.extend(skipped(&plan).into_keys());
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "a pod decided twice: {seen:?}");
    // Everything on the revocable node is decided; the pod on the normal node is not TDM's business.
    assert_eq!(seen.len(), 8, "{seen:?}");
    assert!(!seen.contains(&"c/elsewhere".to_owned()));
    assert_eq!(evicted(&plan), ["a/big-0"]);
    assert_eq!(
        plan.skipped_by_reason(),
        BTreeMap::from([("budget", 4), ("cooldown", 1), ("invalid", 1), ("limit", 1)]),
        "{plan:#?}"
    );
}

#[test]
fn a_capped_plan_lists_the_first_skips_counts_them_all_and_always_lists_invalid_ones() {
    let mut world =
        World::new().with(
            replicas("a", "big", 6, &preemptable())
                .into_iter()
                .chain([pod(
                    "b",
                    "bad",
                    "rev-1",
                    annotations(&[("volcano.sh/preemptable", "maybe")]),
                )]),
        );
    let snapshot = world.snapshot();
    let policy = policy(json!({"limits": {"total": 0}}));
    let (zones, _) = zone_views(&snapshot, ts(NOW));
    let full = plan_policy(&snapshot, &policy, ts(NOW), &zones, &HashSet::new());
    let capped = super::plan_policy_with(
        &snapshot,
        &policy,
        ts(NOW),
        &zones,
        &HashSet::new(),
        super::SkipRows::AtMost(2),
    );
    assert_eq!(full.skipped.len(), 7, "{full:#?}");
    assert_eq!(capped.skipped_by_reason(), full.skipped_by_reason());
    assert_eq!(capped.skipped_by_reason().values().sum::<u32>(), 7);
    let listed: Vec<&str> = capped.skipped.iter().map(|s| s.reason.name()).collect();
    assert_eq!(
        listed.len(),
        3,
        "two rows, and the invalid pod's: {listed:?}"
    );
    assert!(listed.contains(&"invalid"));
    assert_eq!(capped.skipped_unlisted(), 4);
    assert_eq!(full.skipped_unlisted(), 0);
}

#[test]
fn pods_with_unreadable_requests_are_named_not_invisible() {
    let mut world = World::new().with([
        pod(
            "ns",
            "bad",
            "normal-1",
            json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "abc"}}}]}}),
        ),
        pod("ns", "fine", "normal-1", json!({})),
    ]);
    let snapshot = world.snapshot();
    let warning = super::unreadable_pods(&snapshot).expect("a warning");
    assert!(warning.starts_with("1 pod(s)"), "{warning}");
    assert!(
        warning.contains("ns/bad") && warning.contains("abc"),
        "{warning}"
    );
    let mut clean = World::new().with([pod("ns", "fine", "normal-1", json!({}))]);
    assert_eq!(super::unreadable_pods(&clean.snapshot()), None);
}

#[test]
fn nodes_holding_more_than_their_allocatable_are_named() {
    let broken: Node = serde_json::from_value(json!({
        "metadata": {"name": "gpu-1"},
        "status": {"allocatable": {"cpu": "0", "memory": "32Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }))
    .unwrap();
    let mut world = World::new().with([
        pod(
            "ns",
            "busy",
            "gpu-1",
            json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}}),
        ),
        pod("ns", "fine", "normal-1", json!({})),
    ]);
    world
        .cache
        .apply_node(NodeInfo::from_node(&broken).unwrap());
    let warning = super::implausible_capacity(&world.snapshot()).expect("a warning");
    assert!(warning.starts_with("1 node(s)"), "{warning}");
    assert!(
        warning.contains("gpu-1 (cpu: pods request 500m, allocatable 0"),
        "{warning}"
    );
    assert!(
        plan_all(
            &world.snapshot(),
            &[&policy(json!({}))],
            NOW.parse().unwrap()
        )
        .warnings
        .contains(&warning)
    );
    let mut clean = World::new().with([pod("ns", "fine", "normal-1", json!({}))]);
    assert_eq!(super::implausible_capacity(&clean.snapshot()), None);
}

#[test]
fn pods_naming_a_podgroup_that_does_not_exist_are_warned_about() {
    let group = annotations(&[("scheduling.k8s.io/group-name", "ghost")]);
    let mut world = World::new().with([
        pod("ns", "a", "rev-1", all([preemptable(), group.clone()])),
        pod("ns", "b", "rev-1", all([preemptable(), group])),
    ]);
    world
        .cache
        .apply_podgroup(podgroup("ns", "real", json!({})));
    let snapshot = world.snapshot();
    let warnings = super::missing_podgroups(&snapshot);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("2 pod(s) name PodGroup ns/ghost"),
        "{warnings:?}"
    );
}

#[test]
fn held_candidates_are_skipped_by_gate_policy_and_use_no_allowance() {
    // The violation sorts first (namespace "a"); held, it must not take the only slot of `total: 1`.
    let mut world = World::new().with([
        pod("a", "violation", "rev-1", json!({})),
        pod("b", "batch", "rev-1", preemptable()),
    ]);
    let policy = policy(json!({
        "strategies": {"tdm": {"evictPlacementViolations": false}},
        "limits": {"total": 1},
    }));
    let plan = plan(&mut world, &policy);
    assert_eq!(evicted(&plan), ["b/batch"]);
    assert_eq!(
        skipped(&plan),
        BTreeMap::from([("a/violation".into(), "policy")])
    );
    assert_eq!(
        skip_detail(&plan, "a/violation"),
        "evictPlacementViolations is off"
    );
    assert_eq!(plan.skipped_by_reason(), BTreeMap::from([("policy", 1)]));
}

#[test]
fn a_refusal_by_a_later_gate_does_not_use_up_an_earlier_gates_allowance() {
    // Job `j` may lose one pod (maxUnavailable 1). Its first victim j-0 is on rev-1, where `q` already
    // took the perNode slot: the limit refuses j-0 after the budget let it through. j-1 on rev-2 must
    // still get the job's one eviction.
    let mut world = World::new();
    world.cache.apply_node(node("rev-2", Some("z")));
    let budget = annotations(&[("volcano.sh/jdb-max-unavailable", "1")]);
    let mut world = world.with([
        pod("a", "q", "rev-1", preemptable()),
        pod(
            "b",
            "j-0",
            "rev-1",
            all([owned_by("ReplicaSet", "j"), preemptable(), budget.clone()]),
        ),
        pod(
            "b",
            "j-1",
            "rev-2",
            all([owned_by("ReplicaSet", "j"), preemptable(), budget]),
        ),
    ]);
    let plan = plan(&mut world, &policy(json!({"limits": {"perNode": 1}})));
    assert_eq!(evicted(&plan), ["a/q", "b/j-1"]);
    assert_eq!(skipped(&plan), BTreeMap::from([("b/j-0".into(), "limit")]));
}

#[test]
fn a_cooldown_refusal_leaves_the_budget_to_the_next_victim() {
    // j-young is the first victim (youngest) but in cooldown; the job's single eviction goes to j-old.
    let budget = annotations(&[("volcano.sh/jdb-max-unavailable", "1")]);
    let mut world = World::new().with([
        pod(
            "b",
            "j-young",
            "rev-1",
            all([
                owned_by("ReplicaSet", "j"),
                preemptable(),
                budget.clone(),
                scheduled_at("2026-11-22T03:55:00Z"),
            ]),
        ),
        pod(
            "b",
            "j-old",
            "rev-1",
            all([owned_by("ReplicaSet", "j"), preemptable(), budget]),
        ),
    ]);
    let plan = plan(
        &mut world,
        &policy(json!({"defaults": {"cooldown": "10m"}})),
    );
    assert_eq!(evicted(&plan), ["b/j-old"]);
    assert_eq!(
        skipped(&plan),
        BTreeMap::from([("b/j-young".into(), "cooldown")])
    );
}

#[test]
fn pods_planned_elsewhere_count_as_leaving_in_budgets() {
    let mut world = World::new().with(replicas(
        "batch",
        "j",
        4,
        &annotations(&[("volcano.sh/jdb-max-unavailable", "2")]),
    ));
    let snapshot = world.snapshot();
    let planned = HashSet::from([ObjectKey::new("batch", "j-0")]);
    let plan = plan_with(&snapshot, &policy(json!({})), &planned);
    assert_eq!(evicted(&plan), ["batch/j-1"], "{plan:#?}");
    assert_eq!(
        skipped(&plan),
        BTreeMap::from([
            ("batch/j-2".into(), "budget"),
            ("batch/j-3".into(), "budget"),
        ])
    );
    assert!(
        skip_detail(&plan, "batch/j-2").contains("4 pods, 3 running, 1 unavailable"),
        "{}",
        skip_detail(&plan, "batch/j-2")
    );
}

#[test]
fn pods_being_evicted_count_as_unavailable() {
    let mut world = World::new().with(replicas(
        "batch",
        "j",
        4,
        &annotations(&[("volcano.sh/jdb-max-unavailable", "2")]),
    ));
    assert!(
        world
            .cache
            .mark_evicting(&ObjectKey::new("batch", "j-3"), ts("2026-11-22T03:59:00Z"))
    );
    let plan = plan(&mut world, &policy(json!({})));
    assert_eq!(evicted(&plan), ["batch/j-0"]);
    assert!(
        !skipped(&plan).contains_key("batch/j-3"),
        "in flight: not proposed again"
    );
}

#[test]
fn namespaces_filter_drops_pods_silently() {
    let mut world = World::new().with([
        pod("keep", "a", "rev-1", preemptable()),
        pod("drop", "b", "rev-1", preemptable()),
    ]);
    let plan = plan(
        &mut world,
        &policy(json!({"namespaces": {"exclude": ["drop"]}})),
    );
    assert_eq!(evicted(&plan), ["keep/a"]);
    assert!(plan.skipped.is_empty());
}

#[test]
fn an_invalid_default_budget_stops_the_policy() {
    // Passes the CRD's CEL rule (a percentage) but not tidal's parser: the policy must not run at all.
    let policy = policy(json!({"defaults": {"jobBudget": {"maxUnavailable": "150%"}}}));
    let mut world = World::new().with([pod("a", "x", "rev-1", preemptable())]);
    let plan = plan(&mut world, &policy);
    assert!(plan.evictions.is_empty() && plan.skipped.is_empty());
    let error = plan.error.expect("policy error");
    assert!(
        error.contains("DeschedulingPolicy p") && error.contains("jobBudget"),
        "{error}"
    );
}

#[test]
fn zones_with_evictions_and_counts() {
    let mut world = World::new();
    world.cache.apply_node(node("rev-y", Some("y")));
    world.cache.apply_zone(closed_zone("y"));
    world.cache.apply_zone(closed_zone("quiet"));
    let mut world = world.with([
        pod("a", "in-z", "rev-1", preemptable()),
        pod("a", "in-y", "rev-y", preemptable()),
    ]);
    let plan = plan(&mut world, &policy(json!({})));
    assert_eq!(
        plan.zones_with_evictions().into_iter().collect::<Vec<_>>(),
        ["y", "z"]
    );
}

/// Job `batch/j`: three replicas on rev-1 that may lose two.
fn job_of_three_with_budget_two() -> World {
    World::new().with(replicas(
        "batch",
        "j",
        3,
        &annotations(&[("volcano.sh/jdb-max-unavailable", "2")]),
    ))
}

#[test]
fn later_policies_see_earlier_evictions_as_in_flight() {
    let mut world = job_of_three_with_budget_two();
    let snapshot = world.snapshot();
    let first = policy(json!({"mode": "Evict"}));
    let mut second = policy(json!({}));
    second.name = "q".into();
    let cycle = plan_all(&snapshot, &[&first, &second], ts(NOW));
    assert_eq!(evicted(&cycle.plans[0]), ["batch/j-0", "batch/j-1"]);
    assert!(cycle.plans[1].evictions.is_empty(), "{:#?}", cycle.plans[1]);
    assert_eq!(
        skipped(&cycle.plans[1]),
        BTreeMap::from([("batch/j-2".into(), "budget")])
    );
}

#[test]
fn a_dry_run_policy_holds_nothing_back_from_later_policies() {
    // The dry run evicts nothing: the Evict policy after it must get the job's whole budget, and only
    // the Evict policy's own evictions count as in flight for the policy after that.
    let mut world = job_of_three_with_budget_two();
    let snapshot = world.snapshot();
    let dry = policy(json!({}));
    let mut evict = policy(json!({"mode": "Evict"}));
    evict.name = "q".into();
    let mut last = policy(json!({"mode": "Evict"}));
    last.name = "r".into();
    let cycle = plan_all(&snapshot, &[&dry, &evict, &last], ts(NOW));
    assert_eq!(evicted(&cycle.plans[0]), ["batch/j-0", "batch/j-1"]);
    assert_eq!(
        evicted(&cycle.plans[1]),
        ["batch/j-0", "batch/j-1"],
        "{:#?}",
        cycle.plans[1]
    );
    assert_eq!(
        skipped(&cycle.plans[1]),
        BTreeMap::from([("batch/j-2".into(), "budget")])
    );
    assert!(cycle.plans[2].evictions.is_empty(), "{:#?}", cycle.plans[2]);
    assert_eq!(
        skipped(&cycle.plans[2]),
        BTreeMap::from([("batch/j-2".into(), "budget")])
    );
}

#[test]
fn zone_views_report_rounds_and_unknown_zones() {
    let mut world = World::new();
    world.cache.apply_node(node("orphan-1", Some("nobody")));
    world.cache.apply_zone(zone(
        "recent",
        json!({"windows": [{"time": "08:00-20:00"}], "evictPeriod": "5m"}),
        Some(json!({"lastEvictionRound": "2026-11-22T03:58:00Z"})),
    ));
    let snapshot = world.snapshot();
    let (views, warnings): (BTreeMap<String, ZoneView>, Vec<String>) =
        zone_views(&snapshot, ts(NOW));
    let recent = &views["recent"];
    assert!(!recent.round_due);
    assert_eq!(recent.next_round, Some(ts("2026-11-22T04:03:00Z")));
    assert!(!recent.evicting_now(), "closed but its round is not due");
    assert!(views["z"].evicting_now());
    assert_eq!(views["z"].nodes, 1);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("volcano.sh/revocable-zone=nobody"));
}
