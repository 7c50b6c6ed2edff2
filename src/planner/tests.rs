//! Planner tests, on the crate's test kit (`crate::testkit`).

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1::Node;
use serde_json::json;

use super::{Plan, plan_all, plan_policy};
use crate::{
    cluster::{NodeInfo, ObjectKey, PolicyInfo, Snapshot},
    framework::{ZoneView, zone_views},
    testkit::{
        Cluster, NOW, PodBuilder, closed_zone, key_of, node, pod, podgroup, policy, ts, zone,
    },
};

fn plan(world: &mut Cluster, policy: &PolicyInfo) -> Plan {
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

/// `count` preemptable replicas `namespace/owner-i` of ReplicaSet `owner` on rev-1, each passed through
/// `extra`.
fn replicas(
    namespace: &str,
    owner: &str,
    count: usize,
    extra: impl Fn(PodBuilder) -> PodBuilder,
) -> Vec<PodBuilder> {
    (0..count)
        .map(|i| {
            extra(
                pod(&format!("{namespace}/{owner}-{i}"), "rev-1")
                    .owned_by("ReplicaSet", owner)
                    .preemptable(),
            )
        })
        .collect()
}

#[test]
fn each_strategy_that_ran_has_its_duration_in_the_order_it_ran() {
    let mut world = Cluster::revocable().pods(replicas("a", "big", 3, |pod| pod));
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
    let mut world = Cluster::revocable().pods(
        replicas("a", "big", 5, |pod| pod).into_iter().chain([
            // Owned: a bare violation would be stopped by the protections before the limit.
            pod("a/violation", "rev-1").owned_by("ReplicaSet", "v"),
            // Scheduled an hour before NOW: still in its 2h cooldown.
            pod("b/cool", "rev-1")
                .bare()
                .preemptable()
                .annotation("volcano.sh/cooldown-time", "2h")
                .scheduled_at("2026-11-22T03:00:00Z"),
            pod("b/bad", "rev-1")
                .bare()
                .annotation("volcano.sh/preemptable", "maybe"),
            pod("c/elsewhere", "normal-1").bare().preemptable(),
        ]),
    );
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
    let mut world = Cluster::revocable().pods(
        replicas("a", "big", 6, PodBuilder::preemptable)
            .into_iter()
            .chain([pod("b/bad", "rev-1")
                .bare()
                .annotation("volcano.sh/preemptable", "maybe")]),
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
    let mut world = Cluster::revocable().pods([
        pod("ns/bad", "normal-1").bare().patch(json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "abc"}}}]}})),
        pod("ns/fine", "normal-1").bare(),
    ]);
    let snapshot = world.snapshot();
    let warning = super::unreadable_pods(&snapshot).expect("a warning").text;
    assert!(warning.starts_with("1 pod(s)"), "{warning}");
    assert!(
        warning.contains("ns/bad") && warning.contains("abc"),
        "{warning}"
    );
    let mut clean = Cluster::revocable().pods([pod("ns/fine", "normal-1").bare()]);
    assert_eq!(super::unreadable_pods(&clean.snapshot()), None);
}

/// An allocatable of `NaN`, `1e400`, `-100` or `12abc` is unreadable, not zero: the node is named in
/// a warning with the value, not reported as holding more than an allocatable of 0, and a node that
/// is far above target when its allocatable is read is never drained when it cannot be.
#[test]
fn nodes_with_unreadable_allocatable_are_named_and_left_alone() {
    // Nine 1-core pods on a 10-core node "busy" (90%) whose cpu is `cpu`, next to two idle nodes.
    let world = |cpu: &str| {
        let mut world = Cluster::new()
            .node(node("n2").allocatable("10", "100Gi", 110))
            .node(node("n3").allocatable("10", "100Gi", 110))
            .node(node("busy").allocatable(cpu, "100Gi", 110));
        for j in 0..9 {
            world = world.pod(pod(&format!("a/p{j}"), "busy").requests("1", "1Gi"));
        }
        world
    };
    let policy = crate::testkit::policy_yaml(
        "mode: Evict\nstrategies:\n  lowNodeUtilization:\n    thresholds: {cpu: 20, memory: 20}\n    \
         targetThresholds: {cpu: 50, memory: 50}\ndefaults: {jobBudget: {maxUnavailable: 100}}\n",
    );
    // Readable, it is drained: the assertions below can fail.
    assert!(!plan(&mut world("10"), &policy).evictions.is_empty());
    for bad in ["NaN", "1e400", "-100", "12abc"] {
        let snapshot = world(bad).snapshot();
        let plans = plan_all(&snapshot, &[&policy], ts(NOW));
        let texts = warning_texts(&plans);
        assert_eq!(texts.len(), 1, "{bad}: {texts:?}");
        assert!(
            texts[0].starts_with("1 node(s)")
                && texts[0].contains("lowNodeUtilization leaves them alone")
                && texts[0].contains(&format!("Node busy: status.allocatable.cpu={bad:?}")),
            "{texts:?}"
        );
        assert!(
            plans.plans[0].evictions.is_empty(),
            "{bad}: {:?}",
            evicted(&plans.plans[0])
        );
    }
}

#[test]
fn nodes_holding_more_than_their_allocatable_are_named() {
    let broken: Node = serde_json::from_value(json!({
        "metadata": {"name": "gpu-1"},
        "status": {"allocatable": {"cpu": "0", "memory": "32Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }))
    .unwrap();
    let mut world = Cluster::revocable().pods([
        pod("ns/busy", "gpu-1").bare().patch(json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}})),
        pod("ns/fine", "normal-1").bare(),
    ]);
    world
        .cache
        .apply_node(NodeInfo::from_node(&broken).unwrap());
    let snapshot = world.snapshot();
    let plans = plan_all(&snapshot, &[&balancing()], ts(NOW));
    let texts = warning_texts(&plans);
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(texts[0].starts_with("1 node(s)"), "{texts:?}");
    assert!(
        texts[0].contains("highNodeUtilization leaves them alone")
            && texts[0].contains("gpu-1 (cpu: pods request 500m, allocatable 0"),
        "{texts:?}"
    );
    let mut clean = Cluster::revocable().pods([pod("ns/fine", "normal-1").bare()]);
    assert!(
        plan_all(&clean.snapshot(), &[&balancing()], ts(NOW))
            .warnings
            .is_empty()
    );
}

/// highNodeUtilization, which reads every node's capacity.
fn balancing() -> PolicyInfo {
    crate::testkit::policy_yaml(
        "mode: Evict\nstrategies:\n  highNodeUtilization:\n    thresholds: {cpu: 20}\n",
    )
}

fn warning_texts(plans: &super::CyclePlan) -> Vec<&str> {
    plans.warnings.iter().map(|w| w.text.as_str()).collect()
}

/// Wrong capacity data matters only to what reads it: a plan whose policies run neither utilization
/// strategy (nor node fit, for unreadable nodes) says nothing of it, and a plan that runs one names
/// only what runs.
#[test]
fn capacity_warnings_come_only_from_policies_that_read_capacity() {
    let broken: Node = serde_json::from_value(json!({
        "metadata": {"name": "gpu-1"},
        "status": {"allocatable": {"cpu": "0", "memory": "32Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }))
    .unwrap();
    let unreadable: Node = serde_json::from_value(json!({
        "metadata": {"name": "nan-1"},
        "status": {"allocatable": {"cpu": "NaN", "memory": "32Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }))
    .unwrap();
    let mut world = Cluster::revocable().pods([
        pod("ns/busy", "gpu-1").bare().patch(json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}})),
    ]);
    for node in [&broken, &unreadable] {
        world.cache.apply_node(NodeInfo::from_node(node).unwrap());
    }
    let snapshot = world.snapshot();
    let keys = |policies: &[&PolicyInfo]| -> Vec<super::WarningKey> {
        let plans = plan_all(&snapshot, policies, ts(NOW));
        plans.warnings.iter().map(|w| w.key.clone()).collect()
    };
    let tdm = policy(json!({}));
    assert_eq!(keys(&[&tdm]), [], "TDM alone reads no node's capacity");
    let node_fit = crate::testkit::policy_yaml(
        "mode: Evict\nstrategies:\n  podLifeTime: {maxPodLifeTimeSeconds: 60}\nprotections: {nodeFit: true}\n",
    );
    assert_eq!(keys(&[&node_fit]), [super::WarningKey::UnreadableNodes]);
    assert_eq!(
        keys(&[&tdm, &balancing()]),
        [
            super::WarningKey::UnreadableNodes,
            super::WarningKey::ImplausibleCapacity
        ]
    );
    // A policy that does not run (here: it enables no strategy) reads nothing either.
    let idle =
        crate::testkit::policy_yaml("mode: Evict\nstrategies: {}\nprotections: {nodeFit: true}\n");
    assert_eq!(keys(&[&idle]), []);
    let plans = plan_all(&snapshot, &[&tdm], ts(NOW));
    assert!(!plans.looked_for(&super::WarningKey::ImplausibleCapacity));
    assert!(plans.looked_for(&super::WarningKey::UnreadablePods));
}

#[test]
fn pods_naming_a_podgroup_that_does_not_exist_are_warned_about() {
    let mut world = Cluster::revocable()
        .pods([
            pod("ns/a", "rev-1")
                .bare()
                .preemptable()
                .annotation("scheduling.k8s.io/group-name", "ghost"),
            pod("ns/b", "rev-1")
                .bare()
                .preemptable()
                .annotation("scheduling.k8s.io/group-name", "ghost"),
        ])
        .podgroup(podgroup("ns/real"));
    let snapshot = world.snapshot();
    let warnings = super::missing_podgroups(&snapshot);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0]
            .text
            .starts_with("2 pod(s) name PodGroup ns/ghost"),
        "{warnings:?}"
    );
}

#[test]
fn held_candidates_are_skipped_by_gate_policy_and_use_no_allowance() {
    // The violation sorts first (namespace "a"); held, it must not take the only slot of `total: 1`.
    let mut world = Cluster::revocable().pods([
        pod("a/violation", "rev-1").bare(),
        pod("b/batch", "rev-1").bare().preemptable(),
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
    let mut world = Cluster::revocable();
    world.cache.apply_node(node("rev-2").zone("z").build());
    let mut world = world.pods([
        pod("a/q", "rev-1").bare().preemptable(),
        pod("b/j-0", "rev-1")
            .owned_by("ReplicaSet", "j")
            .preemptable()
            .annotation("volcano.sh/jdb-max-unavailable", "1"),
        pod("b/j-1", "rev-2")
            .owned_by("ReplicaSet", "j")
            .preemptable()
            .annotation("volcano.sh/jdb-max-unavailable", "1"),
    ]);
    let plan = plan(&mut world, &policy(json!({"limits": {"perNode": 1}})));
    assert_eq!(evicted(&plan), ["a/q", "b/j-1"]);
    assert_eq!(skipped(&plan), BTreeMap::from([("b/j-0".into(), "limit")]));
}

#[test]
fn a_cooldown_refusal_leaves_the_budget_to_the_next_victim() {
    // j-young is the first victim (youngest) but in cooldown; the job's single eviction goes to j-old.
    let mut world = Cluster::revocable().pods([
        pod("b/j-young", "rev-1")
            .owned_by("ReplicaSet", "j")
            .preemptable()
            .annotation("volcano.sh/jdb-max-unavailable", "1")
            .scheduled_at("2026-11-22T03:55:00Z"),
        pod("b/j-old", "rev-1")
            .owned_by("ReplicaSet", "j")
            .preemptable()
            .annotation("volcano.sh/jdb-max-unavailable", "1"),
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
    let mut world = Cluster::revocable().pods(replicas("batch", "j", 4, |pod| {
        pod.annotation("volcano.sh/jdb-max-unavailable", "2")
    }));
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
    let mut world = Cluster::revocable().pods(replicas("batch", "j", 4, |pod| {
        pod.annotation("volcano.sh/jdb-max-unavailable", "2")
    }));
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
    let mut world = Cluster::revocable().pods([
        pod("keep/a", "rev-1").bare().preemptable(),
        pod("drop/b", "rev-1").bare().preemptable(),
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
    let mut world = Cluster::revocable().pods([pod("a/x", "rev-1").bare().preemptable()]);
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
    let mut world = Cluster::revocable();
    world.cache.apply_node(node("rev-y").zone("y").build());
    world.cache.apply_zone(closed_zone("y").build());
    world.cache.apply_zone(closed_zone("quiet").build());
    let mut world = world.pods([
        pod("a/in-z", "rev-1").bare().preemptable(),
        pod("a/in-y", "rev-y").bare().preemptable(),
    ]);
    let plan = plan(&mut world, &policy(json!({})));
    assert_eq!(
        plan.zones_with_evictions().into_iter().collect::<Vec<_>>(),
        ["y", "z"]
    );
}

/// Job `batch/j`: three replicas on rev-1 that may lose two.
fn job_of_three_with_budget_two() -> Cluster {
    Cluster::revocable().pods(replicas("batch", "j", 3, |pod| {
        pod.annotation("volcano.sh/jdb-max-unavailable", "2")
    }))
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
    let mut world = Cluster::revocable();
    world
        .cache
        .apply_node(node("orphan-1").zone("nobody").build());
    world.cache.apply_zone(
        zone("recent")
            .window("08:00-20:00")
            .spec(json!({"evictPeriod": "5m"}))
            .status(json!({"lastEvictionRound": "2026-11-22T03:58:00Z"}))
            .build(),
    );
    let snapshot = world.snapshot();
    let (views, warnings): (BTreeMap<String, ZoneView>, Vec<super::Warning>) =
        zone_views(&snapshot, ts(NOW));
    let recent = &views["recent"];
    assert!(!recent.round_due);
    assert_eq!(recent.next_round, Some(ts("2026-11-22T04:03:00Z")));
    assert!(!recent.evicting_now(), "closed but its round is not due");
    assert!(views["z"].evicting_now());
    assert_eq!(views["z"].nodes, 1);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0]
            .text
            .contains("volcano.sh/revocable-zone=nobody")
    );
}

/// The descheduler's global caps, converted into `limits.shared`: one count across the policies.
#[test]
fn a_shared_limit_caps_the_policies_that_name_it_together() {
    let mut cluster = Cluster::new()
        .node(
            node("n1")
                .allocatable("8", "16Gi", 110)
                .taint("maintenance", "yes", "NoSchedule"),
        )
        .node(node("n2").allocatable("8", "16Gi", 110));
    for i in 0..6 {
        cluster = cluster.pod(pod(&format!("a/p{i}"), "n1").requests("100m", "1Gi"));
    }
    let snapshot = cluster.snapshot();
    let policy = |name: &str, limits: &str| {
        let spec: crate::api::DeschedulingPolicySpec = serde_saphyr::from_str(&format!(
            "mode: DryRun\nstrategies:\n  removePodsViolatingNodeTaints: {{}}\ndefaults: {{jobBudget: {{maxUnavailable: 100%}}}}\nlimits: {limits}\n"
        ))
        .unwrap();
        PolicyInfo::new(name.to_owned(), None, spec)
    };
    let shared = "{shared: {name: descheduler, total: 4}}";
    let (first, second) = (policy("first", shared), policy("second", shared));
    let cycle = plan_all(&snapshot, &[&first, &second], ts(NOW));
    let counts: Vec<usize> = cycle.plans.iter().map(|p| p.evictions.len()).collect();
    // DryRun plans do not hold pods back from each other, but they do count against the cap.
    assert_eq!(counts, [4, 0], "one cap of 4 for both, not 4 each");
    let refused = &cycle.plans[1].skipped[0];
    assert!(
        refused
            .detail
            .contains("shared limit descheduler: total 4 per cycle reached"),
        "{}",
        refused.detail
    );
    // Per node, and a policy naming another count is not held by this one.
    let per_node = policy("per-node", "{shared: {name: descheduler, perNode: 1}}");
    let other = policy("other", "{shared: {name: elsewhere, total: 2}}");
    let cycle = plan_all(&snapshot, &[&first, &per_node, &other], ts(NOW));
    let counts: Vec<usize> = cycle.plans.iter().map(|p| p.evictions.len()).collect();
    assert_eq!(counts, [4, 0, 2]);
    // Without sharing, each policy has its own cap of 4.
    let own = |name: &str| policy(name, "{total: 4}");
    let cycle = plan_all(&snapshot, &[&own("x"), &own("y")], ts(NOW));
    let counts: Vec<usize> = cycle.plans.iter().map(|p| p.evictions.len()).collect();
    assert_eq!(counts, [4, 4]);
}

/// The descheduler's top-level `nodeSelector`: only the selected nodes' pods go, and only selected
/// nodes are destinations.
#[test]
fn a_node_selector_keeps_the_policy_to_its_nodes() {
    let tainted = |name: &str, pool: &str| {
        node(name)
            .allocatable("8", "16Gi", 110)
            .label("pool", pool)
            .taint("maintenance", "yes", "NoSchedule")
    };
    let mut cluster = Cluster::new()
        .node(tainted("batch-1", "batch"))
        .node(tainted("web-1", "web"))
        .node(
            node("batch-2")
                .allocatable("8", "16Gi", 110)
                .label("pool", "batch"),
        )
        .node(
            node("web-2")
                .allocatable("1", "16Gi", 110)
                .label("pool", "web"),
        )
        .pod(pod("a/on-batch", "batch-1").requests("100m", "1Gi"))
        .pod(pod("a/on-web", "web-1").requests("100m", "1Gi"))
        .pod(pod("a/unbound", "").requests("100m", "1Gi"));
    let spec = |extra: &str| {
        format!("mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints: {{}}\n{extra}")
    };
    let out = cluster.plan(&spec("nodeSelector: {matchLabels: {pool: batch}}\n"));
    assert_eq!(out.evicted(), ["a/on-batch"]);
    assert!(
        out.skipped().is_empty(),
        "pods outside are not even proposed"
    );
    let out = cluster.plan(&spec(""));
    assert_eq!(out.evicted(), ["a/on-batch", "a/on-web"]);
    // Node fit only counts selected nodes: the web pool's free node is no destination.
    let mut fit = Cluster::new()
        .node(tainted("batch-1", "batch"))
        .node(
            node("web-2")
                .allocatable("8", "16Gi", 110)
                .label("pool", "web"),
        )
        .pod(pod("a/on-batch", "batch-1").requests("100m", "1Gi"));
    let out = fit.plan(&spec(
        "nodeSelector: {matchLabels: {pool: batch}}\nprotections: {nodeFit: true}\n",
    ));
    assert!(out.evicted().is_empty());
    assert!(
        out.detail("a/on-batch")
            .contains("1 outside the policy's nodeSelector"),
        "{}",
        out.detail("a/on-batch")
    );
    let out = fit.plan(&spec(
        "protections: {nodeFit: true, nodeFitNodeSelector: {matchLabels: {pool: batch}}}\n",
    ));
    assert!(
        out.evicted().is_empty(),
        "the evictor's selector narrows node fit alone"
    );
    assert_eq!(
        fit.plan(&spec("protections: {nodeFit: true}\n")).evicted(),
        ["a/on-batch"]
    );
    let out = cluster.plan(&spec(
        "nodeSelector: {matchExpressions: [{key: pool, operator: Sometimes}]}\n",
    ));
    assert!(out.error().is_some_and(|e| e.contains("nodeSelector")));
}

/// Zone `z` closed (node rev-1, with rev-2 beside it); PodGroup `ml/train` of `size` pods on rev-1
/// (each passed through `extra` with its index), owned by their Volcano Job (which recreates them),
/// `minMember` and a budget of one pod at a time; and ReplicaSet `batch/etl` of four pods on rev-2
/// under the same budget.
fn gang(size: usize, min_member: u32, extra: impl Fn(usize, PodBuilder) -> PodBuilder) -> Cluster {
    let mut world = Cluster::revocable().node(node("rev-2").zone("z")).podgroup(
        podgroup("ml/train")
            .patch(json!({"spec": {"minMember": min_member}}))
            .annotation("volcano.sh/jdb-max-unavailable", "1"),
    );
    world = world.pods((0..size).map(|i| {
        extra(
            i,
            pod(&format!("ml/train-{i}"), "rev-1")
                .owned_by("Job", "train")
                .in_group("train")
                .preemptable(),
        )
    }));
    world.pods((0..4).map(|i| {
        pod(&format!("batch/etl-{i}"), "rev-2")
            .owned_by("ReplicaSet", "etl")
            .preemptable()
            .annotation("volcano.sh/jdb-max-unavailable", "1")
    }))
}

fn gang_members(plan: &Plan) -> Vec<String> {
    let mut members: Vec<String> = evicted(plan)
        .into_iter()
        .filter(|pod| pod.starts_with("ml/"))
        .collect();
    members.sort();
    members
}

#[test]
fn a_gang_the_drain_takes_below_min_member_goes_whole_while_other_jobs_keep_their_budget() {
    let mut world = gang(4, 4, |_, pod| pod);
    let plan = plan(&mut world, &policy(json!({"mode": "Evict"})));
    assert_eq!(
        gang_members(&plan),
        ["ml/train-0", "ml/train-1", "ml/train-2", "ml/train-3"],
        "{plan:#?}"
    );
    // The other job loses one, as its budget says; the gang's one eviction of the budget was its
    // first pod's, the rest went with it.
    assert_eq!(evicted(&plan).len(), 5);
    assert_eq!(skipped(&plan).len(), 3);
    assert!(skipped(&plan).values().all(|gate| *gate == "budget"));
    for eviction in plan
        .evictions
        .iter()
        .filter(|e| key_of(&e.candidate).starts_with("ml/"))
    {
        assert!(
            eviction
                .candidate
                .reason
                .ends_with("; gang of 4 (minMember 4), taken whole"),
            "{}",
            eviction.candidate.reason
        );
    }
}

#[test]
fn a_gang_the_drain_keeps_at_min_member_goes_by_its_budget() {
    // Eight pods, minMember 2, replaced elsewhere one at a time: never below its minimum.
    let mut world = gang(8, 2, |_, pod| pod);
    let plan = plan(&mut world, &policy(json!({"mode": "Evict"})));
    assert_eq!(gang_members(&plan).len(), 1, "{plan:#?}");
    assert!(plan.evictions.iter().all(|e| e.candidate.gang.is_none()));
    // minMember 1 is no gang, whatever leaves: the job keeps its work while any pod runs.
    let mut world = gang(4, 1, |_, pod| pod);
    assert_eq!(gang_members(&plan_of(&mut world)).len(), 1);
    // A minMember larger than the job means nothing the pods can meet: no gang, the budget holds.
    let mut world = gang(4, 9, |_, pod| pod);
    assert_eq!(gang_members(&plan_of(&mut world)).len(), 1);
}

fn plan_of(world: &mut Cluster) -> Plan {
    plan(world, &policy(json!({"mode": "Evict"})))
}

#[test]
fn a_gang_whose_budget_allows_none_waits_whole() {
    // One pod of the gang is Pending elsewhere: maxUnavailable 1 is used up, no pod of it goes.
    let mut world = gang(
        4,
        4,
        |i, pod| if i == 3 { pod.phase("Pending") } else { pod },
    );
    let plan = plan_of(&mut world);
    assert!(gang_members(&plan).is_empty(), "{plan:#?}");
    for i in 0..3 {
        assert_eq!(skipped(&plan)[&format!("ml/train-{i}")], "budget");
    }
    let held = plan
        .skipped
        .iter()
        .filter(|s| key_of(&s.candidate).starts_with("ml/"))
        .filter(|s| s.detail.contains("goes whole or not at all"))
        .count();
    assert_eq!(held, 1, "the first one says why the gang waits: {plan:#?}");
}

#[test]
fn a_gang_in_its_cooldown_waits_whole_and_one_refused_for_good_is_left_out() {
    // train-2 was scheduled five minutes ago with a ten-minute cooldown: the gang waits for it.
    let mut world = gang(4, 4, |i, pod| {
        if i == 2 {
            pod.annotation("volcano.sh/cooldown-time", "10m")
                .scheduled_at("2026-11-22T03:55:00Z")
        } else {
            pod
        }
    });
    let plan = plan_of(&mut world);
    assert!(gang_members(&plan).is_empty(), "{plan:#?}");
    assert_eq!(skipped(&plan)["ml/train-2"], "cooldown");
    for i in [0, 1, 3] {
        let pod = format!("ml/train-{i}");
        assert_eq!(skipped(&plan)[&pod], "cooldown", "{pod}");
        let detail = skip_detail(&plan, &pod);
        assert!(
            detail.contains("gang of 4 (minMember 4) goes whole or not at all")
                && detail.contains("ml/train-2 is held"),
            "{detail}"
        );
    }
    // An unreadable cooldown is refused until someone fixes it: waiting would wait for ever, so
    // the other three still go, together.
    let mut world = gang(4, 4, |i, pod| {
        if i == 2 {
            pod.annotation("volcano.sh/cooldown-time", "soon")
        } else {
            pod
        }
    });
    let plan = plan_of(&mut world);
    assert_eq!(
        gang_members(&plan),
        ["ml/train-0", "ml/train-1", "ml/train-3"],
        "{plan:#?}"
    );
    assert_eq!(skipped(&plan)["ml/train-2"], "invalid");
}

#[test]
fn a_gang_waits_for_a_round_with_room_for_all_of_it_unless_no_round_has_any() {
    // Zone y (node rev-y) sorts before z: its three one-pod jobs take three of the five evictions
    // the policy allows; the gang of four does not fit in the two left and waits, whole.
    let mut world = gang(4, 4, |_, pod| pod).node(node("rev-y").zone("y"));
    world.cache.apply_zone(closed_zone("y").build());
    let mut world =
        world.pods((0..3).map(|i| pod(&format!("a/one-{i}"), "rev-y").bare().preemptable()));
    let shared = plan(
        &mut world,
        &policy(json!({"mode": "Evict", "limits": {"total": 5}})),
    );
    assert!(gang_members(&shared).is_empty(), "{shared:#?}");
    for i in 0..4 {
        assert_eq!(skipped(&shared)[&format!("ml/train-{i}")], "limit");
    }
    // The budget and the limit it did not use go to the next job.
    assert_eq!(
        evicted(&shared),
        ["a/one-0", "a/one-1", "a/one-2", "batch/etl-0"]
    );
    // Alone in its zone the gang goes first, ahead of the other job: all of it fits.
    let mut world = gang(4, 4, |_, pod| pod);
    let alone = plan(
        &mut world,
        &policy(json!({"mode": "Evict", "limits": {"perZone": 4}})),
    );
    assert_eq!(gang_members(&alone).len(), 4, "{alone:#?}");
    assert_eq!(skipped(&alone)["batch/etl-0"], "limit");
    // No round takes more than three pods of a node: the gang goes as the limit allows.
    let capped = plan(
        &mut world,
        &policy(json!({"mode": "Evict", "limits": {"perNode": 3}})),
    );
    assert_eq!(gang_members(&capped).len(), 3, "{capped:#?}");
    assert_eq!(skipped(&capped)["ml/train-3"], "limit");
}
