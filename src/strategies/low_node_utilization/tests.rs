use crate::testkit::*;

const BUDGET: &str = "defaults: {jobBudget: {maxUnavailable: 100}}\n";

fn spec(extra: &str) -> String {
    format!(
        "mode: Evict\nstrategies:\n  lowNodeUtilization:\n    thresholds: {{cpu: 20, memory: 20}}\n    targetThresholds: {{cpu: 50, memory: 50}}\n{extra}{BUDGET}"
    )
}

/// n1 is at 90% CPU (9 × 1 core of 10), n2 and n3 idle.
fn busy() -> Cluster {
    let mut cluster = Cluster::new().standard_nodes(&["n1", "n2", "n3"]);
    for i in 0..9 {
        cluster = cluster.pod(pod(&format!("a/p{i}"), "n1").requests("1", "1Gi"));
    }
    cluster
}

#[test]
fn a_node_with_missing_or_absurd_capacity_is_left_alone() {
    // Each of these nodes "holds" more than it has: no allocatable at all, cpu "0", cpu "1m".
    // Read at their word they are far above target; their capacity is what is wrong.
    let mut cluster = Cluster::new().standard_nodes(&["n2", "n3"]);
    let broken = [
        node("none")
            .allocatable("1", "1Gi", 110)
            .resource("cpu", "0"),
        node("zero").allocatable("0", "0", 0),
        node("milli").allocatable("1m", "100Gi", 110),
    ];
    for (i, n) in broken.into_iter().enumerate() {
        let name = ["none", "zero", "milli"][i];
        cluster = cluster.node(n);
        for j in 0..3 {
            cluster = cluster.pod(pod(&format!("a/{name}-{j}"), name).requests("1", "1Gi"));
        }
    }
    let out = cluster.plan(&spec(""));
    assert!(out.evicted().is_empty(), "{:?}", out.evicted());
    // A GPU threshold: GPU pods on a node whose GPU allocatable is gone are not victims either.
    let mut gpu = Cluster::new()
        .standard_nodes(&["n2", "n3"])
        .node(node("g").allocatable("10", "100Gi", 110));
    for j in 0..4 {
        gpu = gpu.pod(
            pod(&format!("a/g-{j}"), "g")
                .requests("100m", "1Gi")
                .request("nvidia.com/gpu", "1"),
        );
    }
    let out = gpu.plan(
        "mode: Evict\nstrategies:\n  lowNodeUtilization:\n    thresholds: {nvidia.com/gpu: 20}\n    targetThresholds: {nvidia.com/gpu: 50}\ndefaults: {jobBudget: {maxUnavailable: 100%}}\n",
    );
    assert!(out.evicted().is_empty(), "{:?}", out.evicted());
}

/// What the strategy says it saw: the classification and, when nothing moves, why.
fn saw(cluster: &mut Cluster, spec: &str) -> String {
    let snapshot = cluster.snapshot();
    let policy = policy_yaml(spec);
    let cycle = crate::planner::plan_all(&snapshot, &[&policy], now());
    let summary = &cycle.summaries["test"];
    summary
        .iter()
        .flat_map(|(_, tally)| tally.saw.clone())
        .collect::<Vec<_>>()
        .join("; ")
}

#[test]
fn says_why_nothing_moves_when_no_destination_admits_the_pods() {
    // A cluster whose idle nodes all carry not-ready:NoSchedule (the Ready
    // condition still true), so the busy node's pods fit nowhere.
    let taint = |name: &str| {
        node(name).allocatable("10", "100Gi", 110).taint(
            "node.kubernetes.io/not-ready",
            "",
            "NoSchedule",
        )
    };
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("10", "100Gi", 110))
        .node(taint("n2"))
        .node(taint("n3"));
    for i in 0..9 {
        cluster = cluster.pod(pod(&format!("a/p{i}"), "n1").requests("1", "1Gi"));
    }
    let out = cluster.plan(&spec(""));
    assert!(out.evicted().is_empty() && out.skipped().is_empty());
    let saw = saw(&mut cluster, &spec(""));
    assert!(
        saw.starts_with("3 node(s): 2 underutilized (at or below cpu 20%, memory 20%), 1 overutilized (above cpu 50%, memory 50%), 0 in between"),
        "{saw}"
    );
    assert!(
        saw.contains("no destination admits these pods: all 2 underutilized node(s) carry node.kubernetes.io/not-ready:NoSchedule, which the pod does not tolerate"),
        "{saw}"
    );
    // Targets at 90%: nothing is over, and it says so.
    let high = "mode: Evict\nstrategies:\n  lowNodeUtilization:\n    thresholds: {cpu: 20, memory: 20}\n    targetThresholds: {cpu: 90, memory: 90}\n";
    let saw = self::saw(&mut busy(), high);
    assert!(
        saw.contains("no node is overutilized: nothing to move"),
        "{saw}"
    );
}

/// `usage.source: Prometheus`, as the descheduler reads it: one number per node, one pod per
/// overutilized node per cycle (or `evictionLimits.node`).
#[test]
fn prometheus_moves_one_pod_per_overutilized_node() {
    let q = "instance:node_cpu:ratio";
    let spec = |limits: &str| {
        format!(
            "mode: Evict\nstrategies:\n  lowNodeUtilization:\n    thresholds: {{MetricResource: 20}}\n    targetThresholds: {{MetricResource: 50}}\n    usage: {{source: Prometheus, query: \"{q}\"}}\n{limits}{BUDGET}"
        )
    };
    let mut cluster = busy()
        .node(node("n4").allocatable("10", "100Gi", 110))
        .node_metric(q, &[("n1", 0.9), ("n2", 0.1), ("n3", 0.3)]);
    let out = cluster.plan(&spec(""));
    assert_eq!(out.evicted(), ["a/p0"]);
    assert!(
        out.reason("a/p0")
            .contains("MetricResource 90% by Prometheus")
            && out.reason("a/p0").contains("it fits node n2"),
        "{}",
        out.reason("a/p0")
    );
    let out = cluster.plan(&spec("    evictionLimits: {node: 2}\n"));
    assert_eq!(out.evicted(), ["a/p0", "a/p1"]);
    let saw = saw(&mut cluster, &spec(""));
    assert!(
        saw.starts_with("4 node(s): 1 underutilized (at or below MetricResource 20%), 1 overutilized (above MetricResource 50%), 1 in between, 1 not classified"),
        "{saw}"
    );
    // No answer from Prometheus: nothing is classified, nothing moves.
    let out = busy().plan(&spec(""));
    assert!(out.evicted().is_empty());
    // Thresholds must be the query's number alone.
    let out = busy().plan(
        "mode: Evict\nstrategies:\n  lowNodeUtilization:\n    thresholds: {cpu: 20}\n    targetThresholds: {cpu: 50}\n    usage: {source: Prometheus, query: q}\n",
    );
    assert!(
        out.error()
            .is_some_and(|e| e.contains("MetricResource alone"))
    );
}

#[test]
fn drains_the_overutilized_node_down_to_its_target() {
    let out = busy().plan(&spec(""));
    // 9 cores on a 10-core node; target 50% means at most 5: 4 go.
    assert_eq!(out.evicted(), ["a/p0", "a/p1", "a/p2", "a/p3"]);
    assert!(
        out.reason("a/p0")
            .contains("node n1 is overutilized (cpu 90%, memory 9%; target cpu 50%, memory 50%)")
    );
}

#[test]
fn stops_when_the_underutilized_nodes_are_full_never_going_negative() {
    // One underutilized node with room for 1.5 cores up to its 50% target: only one 1-core pod
    // moves; the second would overfill it.
    let mut cluster = Cluster::new()
        .standard_nodes(&["n1", "n2"])
        .pod(pod("a/big", "n2").requests("3500m", "1Gi"));
    // n2 is at 35% cpu: not underutilized (20%). Add a third, small node.
    cluster = cluster.node(node("n3").allocatable("3", "100Gi", 110));
    for i in 0..9 {
        cluster = cluster.pod(pod(&format!("a/p{i}"), "n1").requests("1", "1Gi"));
    }
    let out = cluster.plan(&spec(""));
    assert_eq!(
        out.evicted(),
        ["a/p0"],
        "n3 takes 1.5 cores up to 50%: one pod"
    );
}

#[test]
fn priority_then_qos_order() {
    let mut cluster = Cluster::new()
        .standard_nodes(&["n1", "n2", "n3", "n4"])
        .pod(pod("a/high", "n1").requests("2", "1Gi").priority(1000))
        .pod(
            pod("a/low-guaranteed", "n1")
                .requests("2", "1Gi")
                .priority(10)
                .qos("Guaranteed"),
        )
        .pod(
            pod("a/low-besteffort", "n1")
                .requests("2", "1Gi")
                .priority(10)
                .qos("BestEffort"),
        )
        .pod(pod("a/unset", "n1").requests("2", "1Gi"))
        .pod(pod("a/zero", "n1").requests("1", "1Gi").priority(0));
    let out = cluster.plan(&format!(
        "mode: Evict\nstrategies:\n  lowNodeUtilization:\n    thresholds: {{cpu: 20}}\n    targetThresholds: {{cpu: 10}}\n    useDeviationThresholds: false\n{BUDGET}"
    ));
    assert!(
        out.error()
            .is_some_and(|e| e.contains("above targetThresholds"))
    );
    let out = cluster.plan(&format!(
        "mode: Evict\nstrategies:\n  lowNodeUtilization:\n    thresholds: {{cpu: 20}}\n    targetThresholds: {{cpu: 30}}\n{BUDGET}"
    ));
    // 9 cores → at most 3: unset (2), zero (1), then the BestEffort 10 (2) brings it to 4, and the
    // Guaranteed 10 to 2 (at most 30%). The underutilized nodes have room for 9 cores up to 30%.
    assert_eq!(
        out.evicted(),
        ["a/unset", "a/zero", "a/low-besteffort", "a/low-guaranteed"]
    );
}

#[test]
fn unschedulable_nodes_are_not_destinations_and_number_of_nodes_gates() {
    let mut cluster = busy().node(node("n2").allocatable("10", "100Gi", 110).unschedulable());
    let out = cluster.plan(&spec(""));
    assert_eq!(out.evicted().len(), 4, "n3 alone still has room");
    let out = cluster.plan(&spec("    numberOfNodes: 1\n"));
    assert!(
        out.evicted().is_empty(),
        "only one underutilized node, not more than 1"
    );
    let mut cluster = busy()
        .node(node("n2").allocatable("10", "100Gi", 110).unschedulable())
        .node(
            node("n3")
                .allocatable("10", "100Gi", 110)
                .taint("dedicated", "x", "NoSchedule"),
        );
    assert!(
        cluster.plan(&spec("")).evicted().is_empty(),
        "no destination tolerated"
    );
}

#[test]
fn per_node_limit_and_policy_limits() {
    let out = busy().plan(&spec("    evictionLimits: {node: 2}\n"));
    assert_eq!(out.evicted(), ["a/p0", "a/p1"]);
    let out = busy().plan(&format!("{}limits: {{perNode: 1}}\n", spec("")));
    assert_eq!(out.evicted(), ["a/p0"]);
    assert!(out.detail("a/p1").contains("perNode limit 1 reached on n1"));
}

#[test]
fn extended_resources() {
    let mut cluster = Cluster::new()
        .node(
            node("g1")
                .allocatable("100", "100Gi", 110)
                .resource("nvidia.com/gpu", "8"),
        )
        .node(
            node("g2")
                .allocatable("100", "100Gi", 110)
                .resource("nvidia.com/gpu", "8"),
        )
        .node(node("c1").allocatable("100", "100Gi", 110));
    for i in 0..6 {
        cluster = cluster.pod(
            pod(&format!("a/train{i}"), "g1")
                .requests("1", "1Gi")
                .request("nvidia.com/gpu", "1"),
        );
    }
    let out = cluster.plan(&format!(
        "mode: Evict\nstrategies:\n  lowNodeUtilization:\n    thresholds: {{nvidia.com/gpu: 20}}\n    targetThresholds: {{nvidia.com/gpu: 50}}\n{BUDGET}"
    ));
    // g1 at 75% GPU; g2 and c1 are underutilized, but only g2 has GPUs: room 4 → 2 moves bring g1
    // to 50%.
    assert_eq!(out.evicted(), ["a/train0", "a/train1"]);
}

#[test]
fn deviation_thresholds() {
    // Usage 90%, 10%, 20%: mean 40%; ±15 → under < 25%, over > 55%.
    let mut cluster = busy()
        .pod(pod("a/n2", "n2").requests("1", "1Gi"))
        .pod(pod("a/n3", "n3").requests("2", "1Gi"));
    let out = cluster.plan(&format!(
        "mode: Evict\nstrategies:\n  lowNodeUtilization:\n    thresholds: {{cpu: 15}}\n    targetThresholds: {{cpu: 15}}\n    useDeviationThresholds: true\n{BUDGET}"
    ));
    assert_eq!(out.evicted(), ["a/p0", "a/p1", "a/p2", "a/p3"]);
}

#[test]
fn measured_usage() {
    // By requests n1 is at 90%; measured it is at 30%, so nothing moves. n4 is busy by measure.
    let mut cluster = busy()
        .node(node("n4").allocatable("10", "100Gi", 110))
        .pod(pod("a/hot", "n4").requests("100m", "1Gi"))
        .pod(pod("a/hot2", "n4").requests("100m", "1Gi"))
        .node_usage("n1", 3000, 10 << 30, 60)
        .node_usage("n2", 100, 1 << 30, 60)
        .node_usage("n3", 100, 1 << 30, 60)
        .node_usage("n4", 8000, 10 << 30, 60)
        .node_usage("n4", 9000, 10 << 30, 600) // outside the 5m window
        .pod_usage("a/hot", 4000, 1 << 30, 60);
    let out = cluster.plan(&spec("    usage: {source: Metrics, window: 5m}\n"));
    // a/hot2 has no measurement: its weight is unknown, it is not moved.
    assert_eq!(out.evicted(), ["a/hot"]);
    assert!(out.reason("a/hot").contains("cpu 80%"));
}

#[test]
fn evictions_admitted_by_an_earlier_strategy_count_as_gone() {
    // removeDuplicates runs first and moves 6 of the 9 replicas off n1, leaving it at 30%: below
    // target, so lowNodeUtilization must not drain it further (counting the replicas as still
    // there would empty n1).
    let mut cluster = Cluster::new().standard_nodes(&["n1", "n2", "n3"]);
    for i in 0..9 {
        cluster = cluster.pod(
            pod(&format!("a/web-{i}"), "n1")
                .requests("1", "1Gi")
                .owned_by("ReplicaSet", "web"),
        );
    }
    let out = cluster.plan(&format!(
        "mode: Evict\nstrategies:\n  removeDuplicates: {{}}\n  lowNodeUtilization:\n    thresholds: {{cpu: 20}}\n    targetThresholds: {{cpu: 50}}\n{BUDGET}"
    ));
    assert_eq!(out.evicted().len(), 6, "{:?}", out.evicted());
    assert!(
        out.plan
            .evictions
            .iter()
            .all(|e| e.candidate.strategy == crate::framework::StrategyId::RemoveDuplicates),
        "{:?}",
        out.evicted()
    );
}

#[test]
fn measured_usage_counts_evictions_admitted_by_an_earlier_strategy() {
    // podLifeTime evicts the old hot pod (6 of n1's 9 measured cores): n1 is then at 30%, below
    // target, and lowNodeUtilization leaves the young one alone.
    let mut cluster = Cluster::new()
        .standard_nodes(&["n1", "n2", "n3"])
        .pod(
            pod("a/old", "n1")
                .requests("1", "1Gi")
                .created("2026-09-22T16:00:00Z"),
        )
        .pod(pod("a/young", "n1").requests("1", "1Gi"))
        .node_usage("n1", 9000, 4 << 30, 60)
        .node_usage("n2", 100, 1 << 30, 60)
        .node_usage("n3", 100, 1 << 30, 60)
        .pod_usage("a/old", 6000, 1 << 30, 60)
        .pod_usage("a/young", 3000, 1 << 30, 60);
    let out = cluster.plan(&format!(
        "mode: Evict\nstrategies:\n  podLifeTime: {{maxPodLifeTimeSeconds: 864000}}\n  lowNodeUtilization:\n    thresholds: {{cpu: 20}}\n    targetThresholds: {{cpu: 50}}\n    usage: {{source: Metrics}}\n{BUDGET}"
    ));
    assert_eq!(out.evicted(), ["a/old"]);
}

#[test]
fn a_node_running_a_pod_with_unreadable_requests_is_neither_source_nor_destination() {
    // n2 and n3 each run a pod whose request tidal cannot read (the first beyond its 2^52 cap,
    // the second malformed): they may be full, so nothing is sent their way.
    let mut cluster = busy()
        .pod(pod("a/huge", "n2").requests("1", "5Pi"))
        .pod(pod("a/bad", "n3").requests("9 cores", "1Gi"));
    assert!(cluster.plan(&spec("")).evicted().is_empty());
    // An overutilized node with such a pod is not drained either: its usage is unknown.
    let mut cluster = busy().pod(pod("a/bad", "n1").requests("9 cores", "1Gi"));
    assert!(cluster.plan(&spec("")).evicted().is_empty());
    // Readable again, the same cluster balances.
    let mut cluster = busy().pod(pod("a/fine", "n3").requests("1", "1Gi"));
    assert_eq!(cluster.plan(&spec("")).evicted().len(), 4);
}

#[test]
fn each_move_must_fit_one_destination_not_the_sum_of_their_room() {
    // Nine GPU-pinned pods on n1; the only node they may run on ("gpu") has 3.1 cores of room up
    // to its 50% target, the cpu-only node 5. Pooled room (8.1 cores) would let 4 go.
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("10", "100Gi", 110))
        .node(
            node("gpu")
                .allocatable("10", "100Gi", 110)
                .label("gpu", "yes"),
        )
        .node(node("cpu").allocatable("10", "100Gi", 110))
        .pod(pod("a/filler", "gpu").requests("1900m", "1Gi"));
    for i in 0..9 {
        cluster = cluster.pod(
            pod(&format!("a/g{i}"), "n1")
                .requests("1", "1Gi")
                .spec("nodeSelector", serde_json::json!({"gpu": "yes"})),
        );
    }
    let out = cluster.plan(&format!(
        "mode: Evict\nstrategies:\n  lowNodeUtilization:\n    thresholds: {{cpu: 20}}\n    targetThresholds: {{cpu: 50}}\n{BUDGET}"
    ));
    assert_eq!(out.evicted(), ["a/g0", "a/g1", "a/g2"]);
    assert!(out.reason("a/g2").contains("it fits node gpu"));
}

#[test]
fn unlisted_extended_resources_must_fit_a_destination() {
    // The GPU node is over on cpu; the underutilized nodes have no GPUs at all.
    let mut cluster = Cluster::new()
        .node(
            node("g1")
                .allocatable("10", "100Gi", 110)
                .resource("nvidia.com/gpu", "8"),
        )
        .standard_nodes(&["c1", "c2"])
        .pod(pod("a/plain", "g1").requests("1", "1Gi"));
    for i in 0..7 {
        cluster = cluster.pod(
            pod(&format!("a/train{i}"), "g1")
                .requests("1", "1Gi")
                .request("nvidia.com/gpu", "1"),
        );
    }
    let out = cluster.plan(&format!(
        "mode: Evict\nstrategies:\n  lowNodeUtilization:\n    thresholds: {{cpu: 20}}\n    targetThresholds: {{cpu: 50}}\n{BUDGET}"
    ));
    // Only the pod without a GPU request can go.
    assert_eq!(out.evicted(), ["a/plain"]);
}

#[test]
fn a_pod_too_big_for_the_room_is_passed_over_for_a_smaller_one() {
    // n3 is the only destination, with 1.5 cores up to its 50% target: the 2-core pod (first by
    // priority) does not fit, the 1-core pod after it does.
    let mut cluster = Cluster::new()
        .standard_nodes(&["n1", "n2"])
        .node(node("n3").allocatable("3", "100Gi", 110))
        .pod(pod("a/n2", "n2").requests("3500m", "1Gi"))
        .pod(pod("a/big", "n1").requests("2", "1Gi").priority(1))
        .pod(pod("a/small", "n1").requests("1", "1Gi").priority(2));
    for i in 0..6 {
        cluster = cluster.pod(
            pod(&format!("a/p{i}"), "n1")
                .requests("1", "1Gi")
                .priority(3),
        );
    }
    let out = cluster.plan(&spec(""));
    assert_eq!(out.evicted(), ["a/small"]);
}

#[test]
fn pods_that_free_nothing_the_node_is_over_on_are_not_moved() {
    // n1 is over on cpu; its BestEffort pods request no cpu, so evicting them (first, by QoS)
    // would not bring it closer to its target and would use up the per-node limit.
    let mut cluster = busy();
    for i in 0..5 {
        cluster = cluster.pod(
            pod(&format!("a/be{i}"), "n1")
                .requests("0", "0")
                .qos("BestEffort"),
        );
    }
    let out = cluster.plan(&spec("    evictionLimits: {node: 2}\n"));
    assert_eq!(out.evicted(), ["a/p0", "a/p1"]);
    let out = cluster.plan(&spec(""));
    assert_eq!(out.evicted(), ["a/p0", "a/p1", "a/p2", "a/p3"]);
}

#[test]
fn measured_usage_needs_request_room_on_the_destination_too() {
    // n1 is hot by measure; n2 and n3 are idle by measure but 95% requested: the scheduler places
    // by requests, so a pod requesting 4 cores has nowhere to go.
    let mut cluster = Cluster::new()
        .standard_nodes(&["n1", "n2", "n3"])
        .pod(pod("a/hot0", "n1").requests("4", "1Gi"))
        .pod(pod("a/hot1", "n1").requests("4", "1Gi"))
        .pod(pod("a/idle2", "n2").requests("9500m", "1Gi"))
        .pod(pod("a/idle3", "n3").requests("9500m", "1Gi"))
        .node_usage("n1", 9000, 2 << 30, 60)
        .node_usage("n2", 100, 1 << 30, 60)
        .node_usage("n3", 100, 1 << 30, 60)
        .pod_usage("a/hot0", 4500, 1 << 30, 60)
        .pod_usage("a/hot1", 4500, 1 << 30, 60);
    let metrics = spec("    usage: {source: Metrics}\n");
    assert!(cluster.plan(&metrics).evicted().is_empty());
    // With request room on n3, one moves.
    let mut cluster = cluster.pod(pod("a/idle3", "n3").requests("1", "1Gi"));
    assert_eq!(cluster.plan(&metrics).evicted(), ["a/hot0"]);
}

#[test]
fn a_zero_deviation_leaves_the_resource_out_of_the_classification() {
    // Memory would make n1 overutilized (90% against a mean of 30%), but its deviation is 0: as
    // in the descheduler, memory is then ignored, and by cpu (no node uses any) nothing is over.
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("10", "10Gi", 110))
        .node(node("n2").allocatable("10", "10Gi", 110))
        .node(node("n3").allocatable("10", "10Gi", 110));
    for i in 0..9 {
        cluster = cluster.pod(pod(&format!("a/m{i}"), "n1").requests("0", "1Gi"));
    }
    let deviation = |memory: u32| {
        format!(
            "mode: Evict\nstrategies:\n  lowNodeUtilization:\n    thresholds: {{cpu: 5, memory: {memory}}}\n    targetThresholds: {{cpu: 5, memory: {memory}}}\n    useDeviationThresholds: true\n{BUDGET}"
        )
    };
    assert!(cluster.plan(&deviation(0)).evicted().is_empty());
    // With a deviation of 5, memory counts: n1 is over (target 35%), n2 and n3 under; six 1Gi
    // moves fit their room up to 35% and bring n1 to 30%.
    assert_eq!(cluster.plan(&deviation(5)).evicted().len(), 6);
}

#[test]
fn a_smaller_pod_after_a_larger_one_still_takes_the_first_destination_with_room() {
    // d1 has 1.5 cores of room up to its 50% target, d2 5. The 2-core pods pass d1 by; the 1-core
    // pod between them must not start its search where they found room.
    let cpu_only = format!(
        "mode: Evict\nstrategies:\n  lowNodeUtilization:\n    thresholds: {{cpu: 20}}\n    targetThresholds: {{cpu: 50}}\n{BUDGET}"
    );
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("10", "100Gi", 110))
        .node(node("d1").allocatable("3", "100Gi", 110))
        .node(node("d2").allocatable("10", "100Gi", 110))
        .pod(pod("a/big1", "n1").requests("2", "1Gi").priority(1))
        .pod(pod("a/small", "n1").requests("1", "1Gi").priority(2))
        .pod(pod("a/big2", "n1").requests("2", "1Gi").priority(3));
    for i in 0..4 {
        cluster = cluster.pod(
            pod(&format!("a/p{i}"), "n1")
                .requests("1", "1Gi")
                .priority(4),
        );
    }
    let out = cluster.plan(&cpu_only);
    assert_eq!(out.evicted(), ["a/big1", "a/small", "a/big2"]);
    assert!(out.reason("a/big1").contains("it fits node d2"));
    assert!(out.reason("a/small").contains("it fits node d1"));
    assert!(out.reason("a/big2").contains("it fits node d2"));
}
