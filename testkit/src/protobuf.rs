//! The fake API server's protobuf: JSON objects encoded as the Kubernetes API server would send them
//! (`k8s\0` + `runtime.Unknown`, watch frames with a length prefix), for the core kinds tidal asks for
//! in protobuf. Only the fields tidal reads are carried over: enough for tidal to see the same cluster
//! through either encoding, which is what the end-to-end suites then check by running on protobuf.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::{core::v1 as api, policy::v1 as api_policy},
    apimachinery::pkg::{
        api::resource::Quantity,
        apis::meta::v1::{LabelSelector, ObjectMeta, Time},
        util::intstr::IntOrString,
    },
};
use k8s_pb::{
    api::{core::v1 as pb, policy::v1 as pb_policy},
    apimachinery::pkg::{
        api::resource as pb_resource, apis::meta::v1 as pb_meta, runtime as pb_runtime,
        util::intstr as pb_intstr,
    },
};
use prost::Message;
use serde_json::Value;

/// A recorded API server response from tests/fixtures/protobuf (see the README there).
pub fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/protobuf")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The plurals served in protobuf (custom resources never are).
pub const KINDS: [&str; 4] = ["pods", "nodes", "namespaces", "poddisruptionbudgets"];

fn time(t: Option<Time>) -> Option<pb_meta::Time> {
    t.map(|t| pb_meta::Time {
        seconds: Some(t.0.as_second()),
        nanos: Some(t.0.subsec_nanosecond()),
    })
}

fn quantities(map: Option<BTreeMap<String, Quantity>>) -> BTreeMap<String, pb_resource::Quantity> {
    map.unwrap_or_default()
        .into_iter()
        .map(|(k, q)| (k, pb_resource::Quantity { string: Some(q.0) }))
        .collect()
}

fn meta(m: ObjectMeta) -> Option<pb_meta::ObjectMeta> {
    Some(pb_meta::ObjectMeta {
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resource_version: m.resource_version,
        generation: m.generation,
        creation_timestamp: time(m.creation_timestamp),
        deletion_timestamp: time(m.deletion_timestamp),
        labels: m.labels.unwrap_or_default(),
        annotations: m.annotations.unwrap_or_default(),
        owner_references: m
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .map(|o| pb_meta::OwnerReference {
                api_version: Some(o.api_version),
                kind: Some(o.kind),
                name: Some(o.name),
                uid: Some(o.uid),
                controller: o.controller,
                block_owner_deletion: o.block_owner_deletion,
            })
            .collect(),
        ..Default::default()
    })
}

fn selector(s: Option<LabelSelector>) -> Option<pb_meta::LabelSelector> {
    let s = s?;
    Some(pb_meta::LabelSelector {
        match_labels: s.match_labels.unwrap_or_default(),
        match_expressions: s
            .match_expressions
            .unwrap_or_default()
            .into_iter()
            .map(|e| pb_meta::LabelSelectorRequirement {
                key: Some(e.key),
                operator: Some(e.operator),
                values: e.values.unwrap_or_default(),
            })
            .collect(),
    })
}

fn term(t: api::NodeSelectorTerm) -> pb::NodeSelectorTerm {
    let requirements = |list: Option<Vec<api::NodeSelectorRequirement>>| {
        list.unwrap_or_default()
            .into_iter()
            .map(|r| pb::NodeSelectorRequirement {
                key: Some(r.key),
                operator: Some(r.operator),
                values: r.values.unwrap_or_default(),
            })
            .collect()
    };
    pb::NodeSelectorTerm {
        match_expressions: requirements(t.match_expressions),
        match_fields: requirements(t.match_fields),
    }
}

fn pod_term(t: api::PodAffinityTerm) -> pb::PodAffinityTerm {
    pb::PodAffinityTerm {
        label_selector: selector(t.label_selector),
        namespace_selector: selector(t.namespace_selector),
        namespaces: t.namespaces.unwrap_or_default(),
        topology_key: Some(t.topology_key),
        match_label_keys: t.match_label_keys.unwrap_or_default(),
        mismatch_label_keys: t.mismatch_label_keys.unwrap_or_default(),
    }
}

fn weighted(list: Option<Vec<api::WeightedPodAffinityTerm>>) -> Vec<pb::WeightedPodAffinityTerm> {
    list.unwrap_or_default()
        .into_iter()
        .map(|w| pb::WeightedPodAffinityTerm {
            weight: Some(w.weight),
            pod_affinity_term: Some(pod_term(w.pod_affinity_term)),
        })
        .collect()
}

fn affinity(a: api::Affinity) -> pb::Affinity {
    pb::Affinity {
        node_affinity: a.node_affinity.map(|n| pb::NodeAffinity {
            required_during_scheduling_ignored_during_execution: n
                .required_during_scheduling_ignored_during_execution
                .map(|s| pb::NodeSelector {
                    node_selector_terms: s.node_selector_terms.into_iter().map(term).collect(),
                }),
            preferred_during_scheduling_ignored_during_execution: n
                .preferred_during_scheduling_ignored_during_execution
                .unwrap_or_default()
                .into_iter()
                .map(|p| pb::PreferredSchedulingTerm {
                    weight: Some(p.weight),
                    preference: Some(term(p.preference)),
                })
                .collect(),
        }),
        pod_affinity: a.pod_affinity.map(|p| pb::PodAffinity {
            required_during_scheduling_ignored_during_execution: p
                .required_during_scheduling_ignored_during_execution
                .unwrap_or_default()
                .into_iter()
                .map(pod_term)
                .collect(),
            preferred_during_scheduling_ignored_during_execution: weighted(
                p.preferred_during_scheduling_ignored_during_execution,
            ),
        }),
        pod_anti_affinity: a.pod_anti_affinity.map(|p| pb::PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: p
                .required_during_scheduling_ignored_during_execution
                .unwrap_or_default()
                .into_iter()
                .map(pod_term)
                .collect(),
            preferred_during_scheduling_ignored_during_execution: weighted(
                p.preferred_during_scheduling_ignored_during_execution,
            ),
        }),
    }
}

fn resources(r: Option<api::ResourceRequirements>) -> Option<pb::ResourceRequirements> {
    r.map(|r| pb::ResourceRequirements {
        requests: quantities(r.requests),
        limits: quantities(r.limits),
        ..Default::default()
    })
}

fn container(c: api::Container) -> pb::Container {
    pb::Container {
        name: Some(c.name),
        image: c.image,
        resources: resources(c.resources),
        restart_policy: c.restart_policy,
        ..Default::default()
    }
}

fn volume(v: api::Volume) -> pb::Volume {
    pb::Volume {
        name: Some(v.name),
        volume_source: Some(pb::VolumeSource {
            empty_dir: v.empty_dir.map(|_| Default::default()),
            host_path: v.host_path.map(|h| pb::HostPathVolumeSource {
                path: Some(h.path),
                r#type: h.type_,
            }),
            persistent_volume_claim: v.persistent_volume_claim.map(|p| {
                pb::PersistentVolumeClaimVolumeSource {
                    claim_name: Some(p.claim_name),
                    read_only: p.read_only,
                }
            }),
            ephemeral: v.ephemeral.map(|_| Default::default()),
            ..Default::default()
        }),
    }
}

fn state(s: Option<api::ContainerState>) -> Option<pb::ContainerState> {
    s.map(|s| pb::ContainerState {
        waiting: s.waiting.map(|w| pb::ContainerStateWaiting {
            reason: w.reason,
            message: w.message,
        }),
        running: s.running.map(|r| pb::ContainerStateRunning {
            started_at: time(r.started_at),
        }),
        terminated: s.terminated.map(|t| pb::ContainerStateTerminated {
            exit_code: Some(t.exit_code),
            signal: t.signal,
            reason: t.reason,
            message: t.message,
            started_at: time(t.started_at),
            finished_at: time(t.finished_at),
            container_id: t.container_id,
        }),
    })
}

fn statuses(list: Option<Vec<api::ContainerStatus>>) -> Vec<pb::ContainerStatus> {
    list.unwrap_or_default()
        .into_iter()
        .map(|c| pb::ContainerStatus {
            name: Some(c.name),
            state: state(c.state),
            last_state: state(c.last_state),
            ready: Some(c.ready),
            restart_count: Some(c.restart_count),
            image: Some(c.image),
            image_id: Some(c.image_id),
            started: c.started,
            ..Default::default()
        })
        .collect()
}

fn pod(p: api::Pod) -> pb::Pod {
    pb::Pod {
        metadata: meta(p.metadata),
        spec: p.spec.map(|s| pb::PodSpec {
            containers: s.containers.into_iter().map(container).collect(),
            init_containers: s
                .init_containers
                .unwrap_or_default()
                .into_iter()
                .map(container)
                .collect(),
            node_name: s.node_name,
            node_selector: s.node_selector.unwrap_or_default(),
            affinity: s.affinity.map(affinity),
            tolerations: s
                .tolerations
                .unwrap_or_default()
                .into_iter()
                .map(|t| pb::Toleration {
                    key: t.key,
                    operator: t.operator,
                    value: t.value,
                    effect: t.effect,
                    toleration_seconds: t.toleration_seconds,
                })
                .collect(),
            topology_spread_constraints: s
                .topology_spread_constraints
                .unwrap_or_default()
                .into_iter()
                .map(|t| pb::TopologySpreadConstraint {
                    max_skew: Some(t.max_skew),
                    topology_key: Some(t.topology_key),
                    when_unsatisfiable: Some(t.when_unsatisfiable),
                    label_selector: selector(t.label_selector),
                    min_domains: t.min_domains,
                    node_affinity_policy: t.node_affinity_policy,
                    node_taints_policy: t.node_taints_policy,
                    match_label_keys: t.match_label_keys.unwrap_or_default(),
                })
                .collect(),
            priority: s.priority,
            priority_class_name: s.priority_class_name,
            overhead: quantities(s.overhead),
            resources: resources(s.resources),
            volumes: s
                .volumes
                .unwrap_or_default()
                .into_iter()
                .map(volume)
                .collect(),
            scheduler_name: s.scheduler_name,
            termination_grace_period_seconds: s.termination_grace_period_seconds,
            active_deadline_seconds: s.active_deadline_seconds,
            ..Default::default()
        }),
        status: p.status.map(|s| pb::PodStatus {
            phase: s.phase,
            reason: s.reason,
            qos_class: s.qos_class,
            conditions: s
                .conditions
                .unwrap_or_default()
                .into_iter()
                .map(|c| pb::PodCondition {
                    r#type: Some(c.type_),
                    status: Some(c.status),
                    last_transition_time: time(c.last_transition_time),
                    last_probe_time: time(c.last_probe_time),
                    reason: c.reason,
                    message: c.message,
                    observed_generation: c.observed_generation,
                })
                .collect(),
            container_statuses: statuses(s.container_statuses),
            init_container_statuses: statuses(s.init_container_statuses),
            ephemeral_container_statuses: statuses(s.ephemeral_container_statuses),
            start_time: time(s.start_time),
            ..Default::default()
        }),
    }
}

fn node(n: api::Node) -> pb::Node {
    pb::Node {
        metadata: meta(n.metadata),
        spec: n.spec.map(|s| pb::NodeSpec {
            unschedulable: s.unschedulable,
            taints: s
                .taints
                .unwrap_or_default()
                .into_iter()
                .map(|t| pb::Taint {
                    key: Some(t.key),
                    value: t.value,
                    effect: Some(t.effect),
                    time_added: time(t.time_added),
                })
                .collect(),
            ..Default::default()
        }),
        status: n.status.map(|s| pb::NodeStatus {
            allocatable: quantities(s.allocatable),
            capacity: quantities(s.capacity),
            conditions: s
                .conditions
                .unwrap_or_default()
                .into_iter()
                .map(|c| pb::NodeCondition {
                    r#type: Some(c.type_),
                    status: Some(c.status),
                    reason: c.reason,
                    message: c.message,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
    }
}

fn int_or_string(v: Option<IntOrString>) -> Option<pb_intstr::IntOrString> {
    v.map(|v| match v {
        IntOrString::Int(i) => pb_intstr::IntOrString {
            r#type: Some(0),
            int_val: Some(i),
            str_val: None,
        },
        IntOrString::String(s) => pb_intstr::IntOrString {
            r#type: Some(1),
            int_val: None,
            str_val: Some(s),
        },
    })
}

fn pdb(p: api_policy::PodDisruptionBudget) -> pb_policy::PodDisruptionBudget {
    pb_policy::PodDisruptionBudget {
        metadata: meta(p.metadata),
        spec: p.spec.map(|s| pb_policy::PodDisruptionBudgetSpec {
            min_available: int_or_string(s.min_available),
            max_unavailable: int_or_string(s.max_unavailable),
            selector: selector(s.selector),
            unhealthy_pod_eviction_policy: s.unhealthy_pod_eviction_policy,
        }),
        status: p.status.map(|s| pb_policy::PodDisruptionBudgetStatus {
            disruptions_allowed: Some(s.disruptions_allowed),
            current_healthy: Some(s.current_healthy),
            desired_healthy: Some(s.desired_healthy),
            expected_pods: Some(s.expected_pods),
            observed_generation: s.observed_generation,
            ..Default::default()
        }),
    }
}

fn typed<T: serde::de::DeserializeOwned>(object: &Value) -> Option<T> {
    serde_json::from_value(object.clone()).ok()
}

/// `k8s\0` + `runtime.Unknown` around a message.
pub fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = pb_runtime::Unknown {
        type_meta: Some(pb_runtime::TypeMeta {
            api_version: Some(api_version.to_owned()),
            kind: Some(kind.to_owned()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.encode_to_vec());
    body
}

/// One object of `plural`, as an enveloped message; `None` for kinds not served in protobuf or JSON
/// that is not such an object.
pub fn object(plural: &str, api_version: &str, kind: &str, object: &Value) -> Option<Vec<u8>> {
    let raw = match plural {
        "pods" => pod(typed(object)?).encode_to_vec(),
        "nodes" => node(typed(object)?).encode_to_vec(),
        "namespaces" => pb::Namespace {
            metadata: meta(typed::<api::Namespace>(object)?.metadata),
            ..Default::default()
        }
        .encode_to_vec(),
        "poddisruptionbudgets" => pdb(typed(object)?).encode_to_vec(),
        _ => return None,
    };
    Some(envelope(api_version, kind, raw))
}

/// A list page of `plural`.
pub fn list(
    plural: &str,
    api_version: &str,
    kind: &str,
    items: &[Value],
    version: &str,
) -> Option<Vec<u8>> {
    let metadata = Some(pb_meta::ListMeta {
        resource_version: Some(version.to_owned()),
        ..Default::default()
    });
    let raw = match plural {
        "pods" => pb::PodList {
            metadata,
            items: items
                .iter()
                .map(|i| typed(i).map(pod))
                .collect::<Option<_>>()?,
        }
        .encode_to_vec(),
        "nodes" => pb::NodeList {
            metadata,
            items: items
                .iter()
                .map(|i| typed(i).map(node))
                .collect::<Option<_>>()?,
        }
        .encode_to_vec(),
        "namespaces" => pb::NamespaceList {
            metadata,
            items: items
                .iter()
                .map(|i| {
                    typed::<api::Namespace>(i).map(|n| pb::Namespace {
                        metadata: meta(n.metadata),
                        ..Default::default()
                    })
                })
                .collect::<Option<_>>()?,
        }
        .encode_to_vec(),
        "poddisruptionbudgets" => pb_policy::PodDisruptionBudgetList {
            metadata,
            items: items
                .iter()
                .map(|i| typed(i).map(pdb))
                .collect::<Option<_>>()?,
        }
        .encode_to_vec(),
        _ => return None,
    };
    Some(envelope(api_version, &format!("{kind}List"), raw))
}

/// A watch frame: length prefix and a `WatchEvent` around an enveloped object.
pub fn frame(event_type: &str, enveloped: Vec<u8>) -> Vec<u8> {
    let event = pb_meta::WatchEvent {
        r#type: Some(event_type.to_owned()),
        object: Some(pb_runtime::RawExtension {
            raw: Some(enveloped),
        }),
    };
    let bytes = event.encode_to_vec();
    let mut out = (bytes.len() as u32).to_be_bytes().to_vec();
    out.extend(bytes);
    out
}

/// A `Status` (an ERROR event's object), enveloped.
pub fn status(code: i32, reason: &str, message: &str) -> Vec<u8> {
    let status = pb_meta::Status {
        status: Some("Failure".to_owned()),
        message: Some(message.to_owned()),
        reason: Some(reason.to_owned()),
        code: Some(code),
        ..Default::default()
    };
    envelope("v1", "Status", status.encode_to_vec())
}
