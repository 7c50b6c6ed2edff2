use crate::testkit::*;
use serde_json::json;

fn spread(max_skew: i32, when: &str) -> serde_json::Value {
    json!([{"maxSkew": max_skew, "topologyKey": "zone", "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "web"}}}])
}

fn web(name: &str, node: &str, when: &str) -> PodBuilder {
    pod(name, node)
        .requests("100m", "128Mi")
        .owned_by("ReplicaSet", "web")
        .label("app", "web")
        .spec("topologySpreadConstraints", spread(1, when))
}

fn zones() -> Cluster {
    Cluster::new()
        .node(node("a1").allocatable("4", "8Gi", 110).label("zone", "a"))
        .node(node("b1").allocatable("4", "8Gi", 110).label("zone", "b"))
        .node(node("c1").allocatable("4", "8Gi", 110).label("zone", "c"))
        .node(node("x1").allocatable("4", "8Gi", 110))
}

const BUDGET: &str = "defaults: {jobBudget: {maxUnavailable: 10}}\n";

#[test]
fn evicts_the_fewest_pods_to_restore_max_skew() {
    let mut cluster = zones()
        .pod(web("a/w1", "a1", "DoNotSchedule").priority(10))
        .pod(web("a/w2", "a1", "DoNotSchedule"))
        .pod(web("a/w3", "a1", "DoNotSchedule").priority(5))
        .pod(web("a/w4", "a1", "DoNotSchedule"))
        .pod(web("a/w5", "b1", "DoNotSchedule"))
        // Matches the selector and counts, but does not declare the constraint: never evicted.
        .pod(
            pod("a/plain", "a1")
                .requests("100m", "128Mi")
                .label("app", "web"),
        )
        // Nodes without the topology key are no domain.
        .pod(web("a/w6", "x1", "DoNotSchedule"));
    // a=5, b=1, c=0 → move 2 from a to c (a=3,b=1,c=2)... then a-b=2 → one more (a=2,b=2,c=2).
    let out = cluster.plan(&format!(
        "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {{}}\n{BUDGET}"
    ));
    // Lowest priority first: unset (w2, w4), then 5 (w3).
    assert_eq!(out.evicted(), ["a/w2", "a/w4", "a/w3"]);
    assert!(
        out.reason("a/w2")
            .contains("domain a has 5 matching pods, domain c has 0")
    );
}

#[test]
fn soft_constraints_only_on_request() {
    let mut cluster = zones()
        .pod(web("a/w1", "a1", "ScheduleAnyway"))
        .pod(web("a/w2", "a1", "ScheduleAnyway"))
        .pod(web("a/w3", "a1", "ScheduleAnyway"));
    let hard = "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {}\n";
    assert!(
        cluster
            .plan(&format!("{hard}{BUDGET}"))
            .evicted()
            .is_empty()
    );
    let both = "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {constraints: [DoNotSchedule, ScheduleAnyway]}\n";
    assert_eq!(cluster.plan(&format!("{both}{BUDGET}")).evicted().len(), 2);
}

#[test]
fn node_fit_and_gates_limit_the_moves() {
    // The other zones have no room: nothing can move, nothing is evicted.
    let mut cluster = Cluster::new()
        .node(node("a1").allocatable("4", "8Gi", 110).label("zone", "a"))
        .node(node("b1").allocatable("50m", "8Gi", 110).label("zone", "b"))
        .pod(web("a/w1", "a1", "DoNotSchedule"))
        .pod(web("a/w2", "a1", "DoNotSchedule"))
        .pod(web("a/w3", "a1", "DoNotSchedule"));
    let spec = "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {}\n";
    assert!(
        cluster
            .plan(&format!("{spec}{BUDGET}"))
            .evicted()
            .is_empty()
    );
    let lax = "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {topologyBalanceNodeFit: false}\n";
    assert_eq!(cluster.plan(&format!("{lax}{BUDGET}")).evicted(), ["a/w1"]);
    // A limit stops the balancing: the refused pod is reported, the others are tried in turn.
    let mut cluster = zones()
        .pod(web("a/w1", "a1", "DoNotSchedule"))
        .pod(web("a/w2", "a1", "DoNotSchedule"))
        .pod(web("a/w3", "a1", "DoNotSchedule"));
    let out = cluster.plan(&format!("{spec}{BUDGET}limits: {{total: 1}}\n"));
    assert_eq!(out.evicted(), ["a/w1"]);
    assert_eq!(out.skipped(), ["a/w2 limit", "a/w3 limit"]);
}

#[test]
fn balance_fit_keeps_a_pod_that_required_anti_affinity_keeps_out_of_the_smaller_domain() {
    // Three web pods in zone a, none in b; b's only node runs db-1, which the web pods repel by
    // hostname. The descheduler's balance fit (NodeFit, topologyBalanceNodeFit defaulting to
    // true) finds no node for them: nothing is evicted.
    let repels_db = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"
    }]}});
    let cluster = |db: bool| {
        let mut cluster = Cluster::new()
            .node(
                node("a1")
                    .allocatable("4", "8Gi", 110)
                    .label("zone", "a")
                    .label("kubernetes.io/hostname", "a1"),
            )
            .node(
                node("b1")
                    .allocatable("4", "8Gi", 110)
                    .label("zone", "b")
                    .label("kubernetes.io/hostname", "b1"),
            );
        for name in ["a/w1", "a/w2", "a/w3"] {
            cluster =
                cluster.pod(web(name, "a1", "DoNotSchedule").spec("affinity", repels_db.clone()));
        }
        if db {
            cluster = cluster.pod(pod("a/db-1", "b1").label("app", "db"));
        }
        cluster
    };
    let spec = format!(
        "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {{}}\n{BUDGET}"
    );
    assert!(cluster(true).plan(&spec).evicted().is_empty());
    assert_eq!(cluster(false).plan(&spec).evicted(), ["a/w1"]);
}

#[test]
fn balance_fit_only_looks_at_domains_below_the_average() {
    // a=5, b=3, c=1 (average 3); c's node is full. The descheduler's balance fit looks only at
    // nodes of domains below the average (c): b, at the average, is no destination.
    let mut cluster = Cluster::new()
        .node(node("a1").allocatable("4", "8Gi", 110).label("zone", "a"))
        .node(node("b1").allocatable("4", "8Gi", 110).label("zone", "b"))
        .node(
            node("c1")
                .allocatable("150m", "8Gi", 110)
                .label("zone", "c"),
        );
    for i in 1..=5 {
        cluster = cluster.pod(web(&format!("a/a{i}"), "a1", "DoNotSchedule"));
    }
    for i in 1..=3 {
        cluster = cluster.pod(web(&format!("a/b{i}"), "b1", "DoNotSchedule"));
    }
    cluster = cluster.pod(web("a/c1", "c1", "DoNotSchedule"));
    let spec = format!(
        "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {{}}\n{BUDGET}"
    );
    let out = cluster.plan(&spec);
    assert!(out.evicted().is_empty(), "{:?}", out.evicted());
    let lax = format!(
        "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {{topologyBalanceNodeFit: false}}\n{BUDGET}"
    );
    assert!(!cluster.plan(&lax).evicted().is_empty());
}

/// A web pod declaring one zone constraint with `extra` merged into it.
fn web_with(name: &str, node: &str, extra: serde_json::Value) -> PodBuilder {
    let mut constraint = json!({"maxSkew": 1, "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}});
    if let (Some(c), Some(e)) = (constraint.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    pod(name, node)
        .requests("100m", "128Mi")
        .owned_by("ReplicaSet", "web")
        .label("app", "web")
        .spec("topologySpreadConstraints", json!([constraint]))
}

/// Zones a, b and c of one node each; c's node is tainted `dedicated=x:NoSchedule`.
fn tainted_zone_c() -> Cluster {
    Cluster::new()
        .node(node("a1").allocatable("4", "8Gi", 110).label("zone", "a"))
        .node(node("b1").allocatable("4", "8Gi", 110).label("zone", "b"))
        .node(
            node("c1")
                .allocatable("4", "8Gi", 110)
                .label("zone", "c")
                .taint("dedicated", "x", "NoSchedule"),
        )
}

const SPREAD: &str =
    "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {}\n";
const SPREAD_NO_FIT: &str = "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {topologyBalanceNodeFit: false}\n";

#[test]
fn pods_evicted_by_an_earlier_strategy_have_left_their_domain() {
    // podLifeTime evicts the two old pods of zone a: a=3, b=1, c=0 is then one move from
    // balanced. Counting them still in zone a would move two more.
    let mut cluster = zones()
        .pod(web("a/w1", "a1", "DoNotSchedule").created("2026-09-22T16:00:00Z"))
        .pod(web("a/w2", "a1", "DoNotSchedule").created("2026-09-23T16:00:00Z"))
        .pod(web("a/w3", "a1", "DoNotSchedule"))
        .pod(web("a/w4", "a1", "DoNotSchedule"))
        .pod(web("a/w5", "a1", "DoNotSchedule"))
        .pod(web("a/w6", "b1", "DoNotSchedule"));
    let out = cluster.plan(&format!(
        "mode: Evict\nstrategies:\n  podLifeTime: {{maxPodLifeTimeSeconds: 864000}}\n  removePodsViolatingTopologySpreadConstraint: {{}}\n{BUDGET}"
    ));
    assert_eq!(out.evicted(), ["a/w1", "a/w2", "a/w3"]);
}

#[test]
fn node_taints_policy_honor_groups_pods_by_their_tolerations() {
    // Zone c's only node is tainted. The pods that tolerate it see three domains (a=3, b=2, c=0:
    // skew 3), the others two (a=3, b=2: balanced). With nodeAffinityPolicy Ignore both kinds used
    // to share one group and read eligibility from whichever pod came first (a/a-plain).
    let honor = json!({"nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor"});
    let tolerates = json!([{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]);
    let mut cluster = tainted_zone_c()
        .pod(web_with("a/a-plain", "a1", honor.clone()))
        .pod(web_with("a/tol-1", "a1", honor.clone()).spec("tolerations", tolerates.clone()))
        .pod(web_with("a/tol-2", "a1", honor.clone()).spec("tolerations", tolerates))
        .pod(web_with("a/b-1", "b1", honor.clone()))
        .pod(web_with("a/b-2", "b1", honor));
    let out = cluster.plan(&format!("{SPREAD}{BUDGET}"));
    assert_eq!(out.evicted(), ["a/tol-1"]);
}

#[test]
fn node_affinity_policy_decides_which_domains_count() {
    // The pods may only run in pool x (zones a and b): a=2, b=1 is balanced there. With
    // nodeAffinityPolicy Ignore, zone c (0 pods) counts too and one pod must go (towards a zone it
    // cannot run in: only without topologyBalanceNodeFit).
    let pinned = |name: &str, node: &str, extra: serde_json::Value| {
        web_with(name, node, extra).spec("nodeSelector", json!({"pool": "x"}))
    };
    let cluster = |extra: serde_json::Value| {
        Cluster::new()
            .node(
                node("a1")
                    .allocatable("4", "8Gi", 110)
                    .label("zone", "a")
                    .label("pool", "x"),
            )
            .node(
                node("b1")
                    .allocatable("4", "8Gi", 110)
                    .label("zone", "b")
                    .label("pool", "x"),
            )
            .node(node("c1").allocatable("4", "8Gi", 110).label("zone", "c"))
            .pod(pinned("a/w1", "a1", extra.clone()))
            .pod(pinned("a/w2", "a1", extra.clone()))
            .pod(pinned("a/w3", "b1", extra))
    };
    let honor = json!({});
    assert!(
        cluster(honor.clone())
            .plan(&format!("{SPREAD_NO_FIT}{BUDGET}"))
            .evicted()
            .is_empty()
    );
    let ignore = json!({"nodeAffinityPolicy": "Ignore"});
    assert!(
        cluster(ignore.clone())
            .plan(&format!("{SPREAD}{BUDGET}"))
            .evicted()
            .is_empty()
    );
    assert_eq!(
        cluster(ignore)
            .plan(&format!("{SPREAD_NO_FIT}{BUDGET}"))
            .evicted(),
        ["a/w1"]
    );
}

#[test]
fn node_taints_policy_ignore_counts_tainted_domains() {
    // Zone c's node is tainted and the pods do not tolerate it: by default (Ignore) zone c counts
    // (a=2, b=1, c=0: one must go, though only without topologyBalanceNodeFit, as it cannot go to
    // c); with Honor it does not, and a=2, b=1 is balanced.
    let cluster = |extra: serde_json::Value| {
        tainted_zone_c()
            .pod(web_with("a/w1", "a1", extra.clone()))
            .pod(web_with("a/w2", "a1", extra.clone()))
            .pod(web_with("a/w3", "b1", extra))
    };
    assert_eq!(
        cluster(json!({}))
            .plan(&format!("{SPREAD_NO_FIT}{BUDGET}"))
            .evicted(),
        ["a/w1"]
    );
    assert!(
        cluster(json!({}))
            .plan(&format!("{SPREAD}{BUDGET}"))
            .evicted()
            .is_empty()
    );
    let honor = json!({"nodeTaintsPolicy": "Honor"});
    assert!(
        cluster(honor)
            .plan(&format!("{SPREAD_NO_FIT}{BUDGET}"))
            .evicted()
            .is_empty()
    );
}

#[test]
fn match_label_keys_spread_each_version_on_its_own() {
    // Together the versions look balanced (a=3, b=2, c=2); per version they are not: v1 is all in
    // zone a (two must go) and v2 misses zone a (one must go).
    let keyed = json!({"matchLabelKeys": ["version"]});
    let version = |name: &str, node: &str, v: &str, extra: serde_json::Value| {
        web_with(name, node, extra).label("version", v)
    };
    let cluster = |extra: serde_json::Value| {
        zones()
            .pod(version("a/v1-1", "a1", "v1", extra.clone()))
            .pod(version("a/v1-2", "a1", "v1", extra.clone()))
            .pod(version("a/v1-3", "a1", "v1", extra.clone()))
            .pod(version("a/v2-1", "b1", "v2", extra.clone()))
            .pod(version("a/v2-2", "b1", "v2", extra.clone()))
            .pod(version("a/v2-3", "c1", "v2", extra.clone()))
            .pod(version("a/v2-4", "c1", "v2", extra))
    };
    assert!(
        cluster(json!({}))
            .plan(&format!("{SPREAD}{BUDGET}"))
            .evicted()
            .is_empty()
    );
    let out = cluster(keyed).plan(&format!("{SPREAD}{BUDGET}"));
    let mut evicted = out.evicted();
    evicted.sort();
    assert_eq!(evicted.len(), 3, "{evicted:?}");
    assert_eq!(evicted.iter().filter(|p| p.starts_with("a/v1-")).count(), 2);
}

#[test]
fn node_fit_charges_each_planned_move_against_its_destination() {
    // 20 pods in zone a; zone b's only node has 3 free pod slots. Balancing wants 10 moves; with
    // topologyBalanceNodeFit only 3 have somewhere to go (checking each move against the node as
    // it stands, without the moves planned before it, would send all 10).
    let mut cluster = Cluster::new()
        .node(node("a1").allocatable("40", "80Gi", 110).label("zone", "a"))
        .node(node("b1").allocatable("40", "80Gi", 3).label("zone", "b"));
    for i in 0..20 {
        cluster = cluster.pod(web(&format!("a/w{i:02}"), "a1", "DoNotSchedule"));
    }
    let budget = "defaults: {jobBudget: {maxUnavailable: 100%}}\n";
    let out = cluster.plan(&format!("{SPREAD}{budget}"));
    assert_eq!(out.evicted().len(), 3, "{:?}", out.evicted());
    assert_eq!(
        cluster
            .plan(&format!("{SPREAD_NO_FIT}{budget}"))
            .evicted()
            .len(),
        10
    );
    // Requests count too: 250m pods toward 1 free core.
    let mut cluster = Cluster::new()
        .node(node("a1").allocatable("40", "80Gi", 110).label("zone", "a"))
        .node(node("b1").allocatable("1", "80Gi", 110).label("zone", "b"));
    for i in 0..20 {
        cluster =
            cluster.pod(web(&format!("a/w{i:02}"), "a1", "DoNotSchedule").request("cpu", "250m"));
    }
    assert_eq!(
        cluster.plan(&format!("{SPREAD}{budget}")).evicted().len(),
        4
    );
}

/// A domain whose only nodes are revocable is no domain for pods tidal's placement rules keep off
/// revocable nodes: nobody can balance into it, so it must not count as empty. For preemptable
/// pods (the zone is open) it is a domain like any other.
#[test]
fn a_domain_the_pods_may_not_enter_does_not_count() {
    let cluster = |preemptable: &str| {
        let web = |name: &str, node: &str| {
            web(name, node, "DoNotSchedule").annotation("volcano.sh/preemptable", preemptable)
        };
        Cluster::new()
            .node(node("a1").allocatable("4", "8Gi", 110).label("zone", "a"))
            .node(node("b1").allocatable("4", "8Gi", 110).label("zone", "b"))
            .node(
                node("c1")
                    .allocatable("4", "8Gi", 110)
                    .label("zone", "c")
                    .zone("rz"),
            )
            .zone(open_zone("rz"))
            .pod(web("a/w1", "a1"))
            .pod(web("a/w2", "a1"))
            .pod(web("a/w3", "b1"))
    };
    let lax = format!(
        "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {{topologyBalanceNodeFit: false}}\n{BUDGET}"
    );
    // a=2, b=1: within maxSkew 1 once c does not count.
    assert_eq!(cluster("false").plan(&lax).evicted(), Vec::<String>::new());
    // a=2, b=1, c=0: one of a's must go.
    assert_eq!(cluster("true").plan(&lax).evicted().len(), 1);
}

/// Balance fit skips the nodes already found without room for a shape of pod, and only those: a
/// node too small for a large pod still takes a small one, and a node one pod's anti-affinity refuses
/// still takes its like that does not repel what runs there.
#[test]
fn balance_fit_skips_only_nodes_without_room_for_the_same_shape() {
    // Zone a holds four web pods, zone b none: two moves. b1 and b2 each have room for one small
    // pod, none for the large one, which is weighed first.
    let zones = || {
        Cluster::new()
            .node(
                node("a1")
                    .allocatable("4", "8Gi", 110)
                    .label("zone", "a")
                    .label("kubernetes.io/hostname", "a1"),
            )
            .node(
                node("b1")
                    .allocatable("150m", "8Gi", 110)
                    .label("zone", "b")
                    .label("kubernetes.io/hostname", "b1"),
            )
            .node(
                node("b2")
                    .allocatable("150m", "8Gi", 110)
                    .label("zone", "b")
                    .label("kubernetes.io/hostname", "b2"),
            )
    };
    let spec = format!("{SPREAD}{BUDGET}");
    let mut cluster = zones()
        .pod(web("a/large", "a1", "DoNotSchedule").requests("500m", "128Mi"))
        .pod(web("a/s1", "a1", "DoNotSchedule").priority(10))
        .pod(web("a/s2", "a1", "DoNotSchedule").priority(10))
        .pod(web("a/s3", "a1", "DoNotSchedule").priority(10));
    assert_eq!(cluster.plan(&spec).evicted(), ["a/s1", "a/s2"]);

    // s1 repels app=db by hostname, and b1 runs a db pod that takes no room: s1 goes to b2, and s2,
    // of the same shape, still finds b1.
    let repels_db = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"
    }]}});
    let mut cluster = zones()
        .pod(pod("a/db", "b1").requests("0", "0").label("app", "db"))
        .pod(
            web("a/s1", "a1", "DoNotSchedule")
                .priority(10)
                .spec("affinity", repels_db),
        )
        .pod(web("a/s2", "a1", "DoNotSchedule").priority(20))
        .pod(web("a/s3", "a1", "DoNotSchedule").priority(30))
        .pod(web("a/s4", "a1", "DoNotSchedule").priority(40));
    assert_eq!(cluster.plan(&spec).evicted(), ["a/s1", "a/s2"]);
}

/// Balance fit passing the nodes known to have no room for a shape finds, move after move, the node
/// that trying every node of the domain finds, whatever the pods request and repel.
mod first_fit_against_a_walk {
    use std::{collections::HashSet, sync::Arc};

    use proptest::prelude::*;
    use serde_json::json;

    use crate::{
        cluster::NodeState,
        framework::PlanContext,
        strategies::{
            node_fit::fits_on_after,
            remove_pods_violating_topology_spread_constraint::{Shape, Taken, first_fit},
        },
        testkit::*,
    };

    const HOST: &str = "kubernetes.io/hostname";

    /// The first node of `nodes` other than the pod's own with room for it where no required
    /// anti-affinity forbids it, every node tried.
    fn walk<'s>(
        pod: &crate::cluster::PodInfo,
        nodes: &[&'s Arc<NodeState>],
        ctx: &PlanContext<'s>,
        taken: &mut Taken<'s>,
    ) -> Option<&'s str> {
        nodes.iter().find_map(|state| {
            let node = state.node.as_deref()?;
            let reserved = taken.reserved.get(node.name.as_str());
            (Some(node.name.as_str()) != pod.node_name.as_deref()
                && fits_on_after(pod, state, ctx, reserved)
                && taken
                    .anti_affinity
                    .refuses(pod, node, ctx.snapshot)
                    .is_none())
            .then_some(node.name.as_str())
        })
    }

    /// Each pod in turn moved to a node of zone `p % 2` (`p` its position), the node found charged.
    fn moves(cluster: &mut Cluster, passing: bool) -> Vec<Option<String>> {
        let snapshot = cluster.snapshot();
        let policy = policy(json!({}));
        with_context(&snapshot, &policy, NOW, &HashSet::new(), |ctx| {
            let zones: Vec<Vec<&Arc<NodeState>>> = ["z0", "z1"]
                .iter()
                .map(|zone| {
                    snapshot
                        .nodes
                        .values()
                        .filter(|s| {
                            s.node.as_deref().and_then(|n| n.labels.get("zone"))
                                == Some(&(*zone).to_owned())
                        })
                        .collect()
                })
                .collect();
            let mut pods: Vec<_> = snapshot
                .nodes
                .values()
                .flat_map(|state| state.pods.values())
                .filter(|p| p.key.name.starts_with('p'))
                .collect();
            pods.sort_by(|a, b| a.key.cmp(&b.key));
            let mut taken = Taken::default();
            pods.iter()
                .enumerate()
                .map(|(p, pod)| {
                    let nodes = &zones[p % 2];
                    let found = if passing {
                        let from = (0, p % 2, Shape::of(pod, ctx));
                        first_fit(pod, nodes, from, ctx, &mut taken)
                    } else {
                        walk(pod, nodes, ctx, &mut taken)
                    }?;
                    taken.reserved.entry(found).or_default().add(&pod.requests);
                    Some(found.to_owned())
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn passing_full_nodes_finds_what_walking_finds(
            free in prop::collection::vec(0u8..3, 2..12),
            pods in prop::collection::vec((0u8..3, any::<bool>(), 0u8..2, 0u8..3), 1..24),
        ) {
            let mut cluster = Cluster::new();
            for (n, cores) in free.iter().enumerate() {
                let name = format!("n{n:02}");
                cluster = cluster
                    .node(
                        node(&name)
                            .allocatable("4", "64Gi", 110)
                            .label("zone", &format!("z{}", n % 2))
                            .label(HOST, &name),
                    )
                    .pod(pod(&format!("x/fill-{name}"), &name).requests(&format!("{}", 4 - cores), "1Gi"));
            }
            for (i, &(app, repels, cores, on)) in pods.iter().enumerate() {
                let on = format!("n{:02}", (i + usize::from(on)) % free.len());
                let mut member = pod(&format!("x/p{i:02}"), &on)
                    .requests(&format!("{}", cores + 1), "1Gi")
                    .label("app", &format!("a{app}"));
                if repels {
                    member = member.spec("affinity", json!({"podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [{
                            "labelSelector": {"matchLabels": {"app": format!("a{app}")}},
                            "topologyKey": HOST}]}}));
                }
                cluster = cluster.pod(member);
            }
            let walked = moves(&mut cluster, false);
            let passed = moves(&mut cluster, true);
            prop_assert_eq!(passed, walked);
        }
    }
}
