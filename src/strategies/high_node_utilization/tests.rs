use crate::testkit::*;

const SPEC: &str = "mode: Evict\nstrategies:\n  highNodeUtilization:\n    thresholds: {cpu: 20, memory: 20}\ndefaults: {jobBudget: {maxUnavailable: 100}}\n";

#[test]
fn empties_the_least_used_nodes_onto_the_fuller_ones() {
    let mut cluster = Cluster::new()
        .standard_nodes(&["n1", "n2", "n3"])
        .pod(pod("a/big", "n1").requests("5", "50Gi"))
        .pod(pod("a/small", "n2").requests("1", "1Gi"))
        .pod(pod("a/smaller", "n3").requests("500m", "1Gi"))
        .pod(
            pod("a/ds", "n3")
                .requests("100m", "1Gi")
                .owned_by("DaemonSet", "agent"),
        );
    let out = cluster.plan(SPEC);
    // n3 (least used) first, then n2; the DaemonSet pod is left silently.
    assert_eq!(out.evicted(), ["a/smaller", "a/small"]);
    assert!(out.skipped().is_empty());
}

/// The descheduler's `evictionModes: [OnlyThresholdingResources]`: a pod that requests none of
/// the listed resources stays.
#[test]
fn only_thresholding_resources_leaves_pods_that_request_none_of_them() {
    let mut cluster = Cluster::new()
        .standard_nodes(&["n1", "n2"])
        .pod(pod("a/big", "n1").requests("5", "50Gi"))
        .pod(pod("a/mem", "n2").requests("0", "1Gi"))
        .pod(pod("a/cpu", "n2").requests("1", "0"));
    let spec = |modes: &str| {
        format!(
            "mode: Evict\nstrategies:\n  highNodeUtilization:\n    thresholds: {{cpu: 20}}\n{modes}defaults: {{jobBudget: {{maxUnavailable: 100}}}}\n"
        )
    };
    assert_eq!(cluster.plan(&spec("")).evicted(), ["a/cpu", "a/mem"]);
    assert_eq!(
        cluster
            .plan(&spec("    evictionModes: [OnlyThresholdingResources]\n"))
            .evicted(),
        ["a/cpu"]
    );
}

#[test]
fn needs_a_fuller_node_with_room() {
    let mut cluster = Cluster::new()
        .standard_nodes(&["n1", "n2"])
        .pod(pod("a/small", "n2").requests("1", "1Gi"));
    assert!(
        cluster.plan(SPEC).evicted().is_empty(),
        "every node is underutilized"
    );
    let mut cluster = Cluster::new()
        .standard_nodes(&["n1", "n2"])
        .pod(pod("a/full", "n1").requests("9500m", "1Gi"))
        .pod(pod("a/small", "n2").requests("1", "1Gi"));
    assert!(
        cluster.plan(SPEC).evicted().is_empty(),
        "n1 has only 500m left"
    );
}

#[test]
fn a_pod_with_unreadable_requests_hides_its_node_s_load() {
    // n2 runs a pod whose request tidal cannot read: it may be full, so it is not emptied, and
    // nothing is packed onto it.
    let mut cluster = Cluster::new()
        .standard_nodes(&["n1", "n2"])
        .pod(pod("a/big", "n1").requests("6", "1Gi"))
        .pod(pod("a/bad", "n2").requests("9 cores", "1Gi"))
        .pod(pod("a/small", "n2").requests("500m", "1Gi"));
    assert!(cluster.plan(SPEC).evicted().is_empty());
    let mut cluster = Cluster::new()
        .standard_nodes(&["n1", "n2", "n3"])
        .pod(pod("a/bad", "n1").requests("9 cores", "1Gi"))
        .pod(pod("a/small", "n2").requests("500m", "1Gi"))
        .pod(pod("a/big", "n3").requests("6", "50Gi"));
    assert_eq!(cluster.plan(SPEC).evicted(), ["a/small"], "onto n3 only");
}

#[test]
fn extended_resources_must_fit_a_fuller_node() {
    // The underutilized node's GPU pods can only pack onto a node with GPUs free.
    let mut cluster = Cluster::new()
        .node(
            node("n1")
                .allocatable("10", "100Gi", 110)
                .resource("nvidia.com/gpu", "2"),
        )
        .node(
            node("n2")
                .allocatable("10", "100Gi", 110)
                .resource("nvidia.com/gpu", "2"),
        )
        .node(node("n3").allocatable("10", "100Gi", 110))
        .pod(
            pod("a/gpu-full", "n2")
                .requests("6", "50Gi")
                .request("nvidia.com/gpu", "2"),
        )
        .pod(pod("a/cpu-full", "n3").requests("6", "50Gi"))
        .pod(
            pod("a/train", "n1")
                .requests("1", "1Gi")
                .request("nvidia.com/gpu", "1"),
        )
        .pod(pod("a/web", "n1").requests("500m", "1Gi"));
    // n2 has no GPU left and n3 none at all: only the web pod moves, and n1 is not emptied.
    assert_eq!(cluster.plan(SPEC).evicted(), ["a/web"]);
    let mut cluster = cluster.pod(
        pod("a/gpu-full", "n2")
            .requests("6", "50Gi")
            .request("nvidia.com/gpu", "1"),
    );
    assert_eq!(cluster.plan(SPEC).evicted(), ["a/train", "a/web"]);
}

#[test]
fn cordoned_nodes_are_neither_emptied_nor_filled_and_number_of_nodes_gates() {
    let mut cluster = Cluster::new()
        .node(node("n1").allocatable("10", "100Gi", 110))
        .node(node("n2").allocatable("10", "100Gi", 110).unschedulable())
        .node(node("n3").allocatable("10", "100Gi", 110))
        .node(node("n4").allocatable("10", "100Gi", 110).unschedulable())
        .pod(pod("a/big", "n1").requests("5", "50Gi"))
        .pod(pod("a/cordoned-small", "n2").requests("500m", "1Gi"))
        .pod(pod("a/small", "n3").requests("1", "1Gi"))
        .pod(pod("a/cordoned-big", "n4").requests("5", "50Gi"));
    // n2 is underutilized but cordoned: left to whoever cordoned it. n4 is full enough to take
    // pods, but cordoned: the only destination is n1.
    let out = cluster.plan(SPEC);
    assert_eq!(out.evicted(), ["a/small"]);
    assert!(out.reason("a/small").contains("it fits node n1"));
    // One underutilized node is not more than numberOfNodes 1.
    let gated = SPEC.replace(
        "thresholds: {cpu: 20, memory: 20}",
        "thresholds: {cpu: 20, memory: 20}\n    numberOfNodes: 1",
    );
    assert!(cluster.plan(&gated).evicted().is_empty());
}

#[test]
fn each_move_must_fit_one_destination() {
    // Two fuller nodes with 1.5 cores free each: 3 cores in all, but a 2-core pod fits neither.
    let mut cluster = Cluster::new()
        .standard_nodes(&["n1", "n2", "n3"])
        .pod(pod("a/full1", "n1").requests("8500m", "50Gi"))
        .pod(pod("a/full2", "n2").requests("8500m", "50Gi"))
        .pod(pod("a/two", "n3").requests("1900m", "1Gi"));
    assert!(cluster.plan(SPEC).evicted().is_empty());
}
