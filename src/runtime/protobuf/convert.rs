//! From the protobuf types (k8s-pb) to the parts of the k8s-openapi objects tidal reads, and nothing
//! else: no managedFields, env, probes, images lists, volume details. Ingest then runs the same
//! `PodInfo::from_pod` (and node, namespace, PDB) code for both encodings, so the two paths cannot drift
//! apart in what they mean; the fixture tests check that they agree field by field on real bytes.
//!
//! Kubernetes omits empty lists and maps in JSON; protobuf has no "absent" for them. Empty becomes `None`
//! here, as it would through JSON.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{core::v1 as api, policy::v1 as api_policy},
    apimachinery::pkg::{
        api::resource::Quantity,
        apis::meta::v1::{
            LabelSelector, LabelSelectorRequirement, ObjectMeta, OwnerReference, Time,
        },
    },
};
use k8s_pb::{
    api::{core::v1 as pb, policy::v1 as pb_policy},
    apimachinery::pkg::{api::resource as pb_resource, apis::meta::v1 as pb_meta},
};

/// Go writes its plain (non-pointer) string fields to protobuf even when empty, where JSON omits them.
fn nz(text: Option<String>) -> Option<String> {
    text.filter(|t| !t.is_empty())
}

fn non_empty<T>(list: Vec<T>) -> Option<Vec<T>> {
    (!list.is_empty()).then_some(list)
}

fn non_empty_map<V>(map: BTreeMap<String, V>) -> Option<BTreeMap<String, V>> {
    (!map.is_empty()).then_some(map)
}

fn time(t: Option<pb_meta::Time>) -> Option<Time> {
    let t = t?;
    jiff::Timestamp::new(t.seconds.unwrap_or(0), t.nanos.unwrap_or(0))
        .ok()
        .map(Time)
}

fn quantities(map: BTreeMap<String, pb_resource::Quantity>) -> Option<BTreeMap<String, Quantity>> {
    non_empty_map(
        map.into_iter()
            .map(|(k, q)| (k, Quantity(q.string.unwrap_or_default())))
            .collect(),
    )
}

pub(crate) fn meta(m: Option<pb_meta::ObjectMeta>) -> ObjectMeta {
    let Some(m) = m else {
        return ObjectMeta::default();
    };
    ObjectMeta {
        name: nz(m.name),
        namespace: nz(m.namespace),
        uid: nz(m.uid),
        resource_version: nz(m.resource_version),
        generation: m.generation.filter(|g| *g != 0),
        creation_timestamp: time(m.creation_timestamp),
        deletion_timestamp: time(m.deletion_timestamp),
        labels: non_empty_map(m.labels),
        annotations: non_empty_map(m.annotations),
        owner_references: non_empty(
            m.owner_references
                .into_iter()
                .map(|o| OwnerReference {
                    api_version: o.api_version.unwrap_or_default(),
                    kind: o.kind.unwrap_or_default(),
                    name: o.name.unwrap_or_default(),
                    uid: o.uid.unwrap_or_default(),
                    controller: o.controller,
                    block_owner_deletion: o.block_owner_deletion,
                })
                .collect(),
        ),
        ..ObjectMeta::default()
    }
}

fn label_selector(s: Option<pb_meta::LabelSelector>) -> Option<LabelSelector> {
    let s = s?;
    Some(LabelSelector {
        match_labels: non_empty_map(s.match_labels),
        match_expressions: non_empty(
            s.match_expressions
                .into_iter()
                .map(|e| LabelSelectorRequirement {
                    key: e.key.unwrap_or_default(),
                    operator: e.operator.unwrap_or_default(),
                    values: non_empty(e.values),
                })
                .collect(),
        ),
    })
}

fn node_selector_term(t: pb::NodeSelectorTerm) -> api::NodeSelectorTerm {
    let requirements = |list: Vec<pb::NodeSelectorRequirement>| {
        non_empty(
            list.into_iter()
                .map(|r| api::NodeSelectorRequirement {
                    key: r.key.unwrap_or_default(),
                    operator: r.operator.unwrap_or_default(),
                    values: non_empty(r.values),
                })
                .collect(),
        )
    };
    api::NodeSelectorTerm {
        match_expressions: requirements(t.match_expressions),
        match_fields: requirements(t.match_fields),
    }
}

fn pod_affinity_term(t: pb::PodAffinityTerm) -> api::PodAffinityTerm {
    api::PodAffinityTerm {
        label_selector: label_selector(t.label_selector),
        namespace_selector: label_selector(t.namespace_selector),
        namespaces: non_empty(t.namespaces),
        topology_key: t.topology_key.unwrap_or_default(),
        match_label_keys: non_empty(t.match_label_keys),
        mismatch_label_keys: non_empty(t.mismatch_label_keys),
    }
}

fn weighted_terms(
    list: Vec<pb::WeightedPodAffinityTerm>,
) -> Option<Vec<api::WeightedPodAffinityTerm>> {
    non_empty(
        list.into_iter()
            .map(|w| api::WeightedPodAffinityTerm {
                weight: w.weight.unwrap_or_default(),
                pod_affinity_term: w
                    .pod_affinity_term
                    .map(pod_affinity_term)
                    .unwrap_or_default(),
            })
            .collect(),
    )
}

fn affinity(a: pb::Affinity) -> api::Affinity {
    api::Affinity {
        node_affinity: a.node_affinity.map(|n| api::NodeAffinity {
            required_during_scheduling_ignored_during_execution: n
                .required_during_scheduling_ignored_during_execution
                .map(|s| api::NodeSelector {
                    node_selector_terms: s
                        .node_selector_terms
                        .into_iter()
                        .map(node_selector_term)
                        .collect(),
                }),
            preferred_during_scheduling_ignored_during_execution: non_empty(
                n.preferred_during_scheduling_ignored_during_execution
                    .into_iter()
                    .map(|p| api::PreferredSchedulingTerm {
                        weight: p.weight.unwrap_or_default(),
                        preference: p.preference.map(node_selector_term).unwrap_or_default(),
                    })
                    .collect(),
            ),
        }),
        pod_affinity: a.pod_affinity.map(|p| api::PodAffinity {
            required_during_scheduling_ignored_during_execution: non_empty(
                p.required_during_scheduling_ignored_during_execution
                    .into_iter()
                    .map(pod_affinity_term)
                    .collect(),
            ),
            preferred_during_scheduling_ignored_during_execution: weighted_terms(
                p.preferred_during_scheduling_ignored_during_execution,
            ),
        }),
        pod_anti_affinity: a.pod_anti_affinity.map(|p| api::PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: non_empty(
                p.required_during_scheduling_ignored_during_execution
                    .into_iter()
                    .map(pod_affinity_term)
                    .collect(),
            ),
            preferred_during_scheduling_ignored_during_execution: weighted_terms(
                p.preferred_during_scheduling_ignored_during_execution,
            ),
        }),
    }
}

fn resources(r: Option<pb::ResourceRequirements>) -> Option<api::ResourceRequirements> {
    let r = r?;
    Some(api::ResourceRequirements {
        requests: quantities(r.requests),
        limits: quantities(r.limits),
        ..api::ResourceRequirements::default()
    })
}

fn container(c: pb::Container) -> api::Container {
    api::Container {
        name: c.name.unwrap_or_default(),
        image: nz(c.image),
        resources: resources(c.resources),
        restart_policy: c.restart_policy,
        ..api::Container::default()
    }
}

fn toleration(t: pb::Toleration) -> api::Toleration {
    api::Toleration {
        key: nz(t.key),
        operator: nz(t.operator),
        value: nz(t.value),
        effect: nz(t.effect),
        toleration_seconds: t.toleration_seconds,
    }
}

fn spread(t: pb::TopologySpreadConstraint) -> api::TopologySpreadConstraint {
    api::TopologySpreadConstraint {
        max_skew: t.max_skew.unwrap_or_default(),
        topology_key: t.topology_key.unwrap_or_default(),
        when_unsatisfiable: t.when_unsatisfiable.unwrap_or_default(),
        label_selector: label_selector(t.label_selector),
        min_domains: t.min_domains,
        node_affinity_policy: t.node_affinity_policy,
        node_taints_policy: t.node_taints_policy,
        match_label_keys: non_empty(t.match_label_keys),
    }
}

/// Only which kinds of source a volume has: that is all the protections look at.
fn volume(v: pb::Volume) -> api::Volume {
    let source = v.volume_source.unwrap_or_default();
    api::Volume {
        name: v.name.unwrap_or_default(),
        empty_dir: source.empty_dir.map(|_| Default::default()),
        host_path: source.host_path.map(|h| api::HostPathVolumeSource {
            path: h.path.unwrap_or_default(),
            type_: nz(h.r#type),
        }),
        persistent_volume_claim: source.persistent_volume_claim.map(|p| {
            api::PersistentVolumeClaimVolumeSource {
                claim_name: p.claim_name.unwrap_or_default(),
                read_only: p.read_only,
            }
        }),
        ephemeral: source.ephemeral.map(|_| Default::default()),
        ..api::Volume::default()
    }
}

fn pod_spec(s: pb::PodSpec) -> api::PodSpec {
    api::PodSpec {
        containers: s.containers.into_iter().map(container).collect(),
        init_containers: non_empty(s.init_containers.into_iter().map(container).collect()),
        node_name: nz(s.node_name),
        node_selector: non_empty_map(s.node_selector),
        affinity: s.affinity.map(affinity),
        tolerations: non_empty(s.tolerations.into_iter().map(toleration).collect()),
        topology_spread_constraints: non_empty(
            s.topology_spread_constraints
                .into_iter()
                .map(spread)
                .collect(),
        ),
        priority: s.priority,
        priority_class_name: nz(s.priority_class_name),
        overhead: quantities(s.overhead),
        resources: resources(s.resources),
        volumes: non_empty(s.volumes.into_iter().map(volume).collect()),
        resource_claims: non_empty(
            s.resource_claims
                .into_iter()
                .map(|c| api::PodResourceClaim {
                    name: c.name.unwrap_or_default(),
                    resource_claim_name: nz(c.resource_claim_name),
                    ..api::PodResourceClaim::default()
                })
                .collect(),
        ),
        scheduler_name: nz(s.scheduler_name),
        termination_grace_period_seconds: s.termination_grace_period_seconds,
        active_deadline_seconds: s.active_deadline_seconds,
        ..api::PodSpec::default()
    }
}

fn container_state(s: Option<pb::ContainerState>) -> Option<api::ContainerState> {
    let s = s?;
    Some(api::ContainerState {
        waiting: s.waiting.map(|w| api::ContainerStateWaiting {
            reason: nz(w.reason),
            message: nz(w.message),
        }),
        running: s.running.map(|r| api::ContainerStateRunning {
            started_at: time(r.started_at),
        }),
        terminated: s.terminated.map(|t| api::ContainerStateTerminated {
            exit_code: t.exit_code.unwrap_or_default(),
            signal: t.signal,
            reason: nz(t.reason),
            message: nz(t.message),
            started_at: time(t.started_at),
            finished_at: time(t.finished_at),
            container_id: nz(t.container_id),
        }),
    })
}

fn container_status(c: pb::ContainerStatus) -> api::ContainerStatus {
    api::ContainerStatus {
        name: c.name.unwrap_or_default(),
        state: container_state(c.state),
        last_state: container_state(c.last_state),
        ready: c.ready.unwrap_or_default(),
        restart_count: c.restart_count.unwrap_or_default(),
        image: c.image.unwrap_or_default(),
        image_id: c.image_id.unwrap_or_default(),
        started: c.started,
        ..api::ContainerStatus::default()
    }
}

fn pod_status(s: pb::PodStatus) -> api::PodStatus {
    let statuses = |list: Vec<pb::ContainerStatus>| {
        non_empty(list.into_iter().map(container_status).collect())
    };
    api::PodStatus {
        phase: nz(s.phase),
        reason: nz(s.reason),
        qos_class: nz(s.qos_class),
        conditions: non_empty(
            s.conditions
                .into_iter()
                .map(|c| api::PodCondition {
                    type_: c.r#type.unwrap_or_default(),
                    status: c.status.unwrap_or_default(),
                    last_transition_time: time(c.last_transition_time),
                    last_probe_time: time(c.last_probe_time),
                    reason: nz(c.reason),
                    message: nz(c.message),
                    observed_generation: c.observed_generation.filter(|g| *g != 0),
                })
                .collect(),
        ),
        container_statuses: statuses(s.container_statuses),
        init_container_statuses: statuses(s.init_container_statuses),
        ephemeral_container_statuses: statuses(s.ephemeral_container_statuses),
        start_time: time(s.start_time),
        ..api::PodStatus::default()
    }
}

pub(crate) fn pod(p: pb::Pod) -> api::Pod {
    api::Pod {
        metadata: meta(p.metadata),
        spec: p.spec.map(pod_spec),
        status: p.status.map(pod_status),
    }
}

pub(crate) fn node(n: pb::Node) -> api::Node {
    api::Node {
        metadata: meta(n.metadata),
        spec: n.spec.map(|s| api::NodeSpec {
            unschedulable: s.unschedulable,
            taints: non_empty(
                s.taints
                    .into_iter()
                    .map(|t| api::Taint {
                        key: t.key.unwrap_or_default(),
                        value: nz(t.value),
                        effect: t.effect.unwrap_or_default(),
                        time_added: time(t.time_added),
                    })
                    .collect(),
            ),
            ..api::NodeSpec::default()
        }),
        status: n.status.map(|s| api::NodeStatus {
            allocatable: quantities(s.allocatable),
            capacity: quantities(s.capacity),
            conditions: non_empty(
                s.conditions
                    .into_iter()
                    .map(|c| api::NodeCondition {
                        type_: c.r#type.unwrap_or_default(),
                        status: c.status.unwrap_or_default(),
                        reason: nz(c.reason),
                        message: nz(c.message),
                        ..api::NodeCondition::default()
                    })
                    .collect(),
            ),
            ..api::NodeStatus::default()
        }),
    }
}

pub(crate) fn namespace(n: pb::Namespace) -> api::Namespace {
    api::Namespace {
        metadata: meta(n.metadata),
        ..api::Namespace::default()
    }
}

pub(crate) fn pdb(p: pb_policy::PodDisruptionBudget) -> api_policy::PodDisruptionBudget {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let int_or_string = |v: Option<k8s_pb::apimachinery::pkg::util::intstr::IntOrString>| {
        let v = v?;
        Some(match (v.r#type, v.int_val, v.str_val) {
            (Some(1), _, Some(s)) => IntOrString::String(s),
            (_, int, _) => IntOrString::Int(int.unwrap_or_default()),
        })
    };
    api_policy::PodDisruptionBudget {
        metadata: meta(p.metadata),
        spec: p.spec.map(|s| api_policy::PodDisruptionBudgetSpec {
            min_available: int_or_string(s.min_available),
            max_unavailable: int_or_string(s.max_unavailable),
            selector: label_selector(s.selector),
            unhealthy_pod_eviction_policy: s.unhealthy_pod_eviction_policy,
        }),
        status: p.status.map(|s| api_policy::PodDisruptionBudgetStatus {
            disruptions_allowed: s.disruptions_allowed.unwrap_or_default(),
            current_healthy: s.current_healthy.unwrap_or_default(),
            desired_healthy: s.desired_healthy.unwrap_or_default(),
            expected_pods: s.expected_pods.unwrap_or_default(),
            observed_generation: s.observed_generation,
            ..api_policy::PodDisruptionBudgetStatus::default()
        }),
    }
}
