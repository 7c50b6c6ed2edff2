//! Gate `protected`: the evictor's protections, the rules operators know from the Kubernetes
//! descheduler's default evictor. Some pods are never evicted (static and terminating pods); others are
//! protected by default (system-critical, DaemonSet, local storage, bare pods) or on request (PVCs, no
//! PDB, label selectors, few replicas, young pods). `descheduler.alpha.kubernetes.io/evict: "true"`
//! lifts every switchable protection.

use std::collections::HashMap;

use crate::{
    api::protections::Protections,
    cluster::{JobKey, PdbInfo, PodInfo, rules::matching},
    framework::{Candidate, Gate, GateId, PlanContext},
};

/// Pods at or above this priority are system-critical (`system-cluster-critical` and
/// `system-node-critical` are 2000000000 and 2000001000).
pub(crate) const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;
const SYSTEM_CRITICAL_CLASSES: [&str; 2] = ["system-cluster-critical", "system-node-critical"];

/// Selectors are checked here because a malformed one would otherwise match nothing, which for a
/// protection selector means protecting nothing the author meant to allow (or everything).
pub(crate) fn validate(spec: &Protections) -> Result<(), String> {
    for (field, selector) in [
        ("labelSelector", &spec.label_selector),
        ("namespaceLabelSelector", &spec.namespace_label_selector),
    ] {
        if let Some(selector) = selector {
            matching::selector_is_valid(selector)
                .map_err(|e| format!("protections.{field}: {e}"))?;
        }
    }
    Ok(())
}

pub(crate) struct Protected {
    spec: Protections,
    /// PodDisruptionBudgets by namespace, built on first use.
    pdbs: Option<HashMap<String, Vec<PdbInfoRef>>>,
    /// Unfinished pods per job, for `minReplicas`.
    replicas: HashMap<JobKey, u32>,
}

type PdbInfoRef = std::sync::Arc<PdbInfo>;

impl Protected {
    pub(crate) fn new(spec: &Protections) -> Self {
        Protected {
            spec: spec.clone(),
            pdbs: None,
            replicas: HashMap::new(),
        }
    }

    fn covered_by_pdb(&mut self, pod: &PodInfo, ctx: &PlanContext<'_>) -> bool {
        let index = self.pdbs.get_or_insert_with(|| {
            let mut index: HashMap<String, Vec<PdbInfoRef>> = HashMap::new();
            for pdb in ctx.snapshot.pdbs.values() {
                index
                    .entry(pdb.key.namespace.to_string())
                    .or_default()
                    .push(std::sync::Arc::clone(pdb));
            }
            index
        });
        index.get(pod.key.namespace.as_str()).is_some_and(|pdbs| {
            // policy/v1: an empty selector selects every pod of the namespace, a missing one none.
            pdbs.iter()
                .any(|pdb| matching::optional_selector_matches(pdb.selector.as_ref(), &pod.labels))
        })
    }

    fn replicas(&mut self, pod: &PodInfo, ctx: &PlanContext<'_>) -> u32 {
        *self.replicas.entry(pod.job.clone()).or_insert_with(|| {
            ctx.snapshot.job(&pod.job).map_or(0, |job| {
                let unfinished = job.pods.values().filter(|p| !p.phase.is_finished());
                u32::try_from(unfinished.count()).unwrap_or(u32::MAX)
            })
        })
    }

    /// The protection that applies to `pod`, if any. `bare_allowed`: the proposing strategy was told
    /// that this pod may go although nothing would recreate it.
    pub(crate) fn protection(
        &mut self,
        pod: &PodInfo,
        ctx: &PlanContext<'_>,
        bare_allowed: bool,
    ) -> Option<String> {
        self.applies(pod, ctx, bare_allowed)
            .map(|found| found.describe(pod, &self.spec))
    }

    /// Which protection applies, without its sentence: balancing strategies ask this of every pod they
    /// weigh ([`Gate::protects`]), and the sentence is only read for the few candidates refused.
    fn applies(
        &mut self,
        pod: &PodInfo,
        ctx: &PlanContext<'_>,
        bare_allowed: bool,
    ) -> Option<Protection> {
        if pod.is_static() {
            return Some(Protection::Static);
        }
        if pod.terminating {
            return Some(Protection::Terminating);
        }
        if pod.evict_annotation {
            return None;
        }
        let spec = &self.spec;
        let priority = pod.priority_or_zero();
        if spec.system_critical
            && (priority >= SYSTEM_CRITICAL_PRIORITY
                || pod
                    .priority_class_name
                    .as_deref()
                    .is_some_and(|c| SYSTEM_CRITICAL_CLASSES.contains(&c)))
        {
            return Some(Protection::SystemCritical);
        }
        if let Some(threshold) = spec.priority_threshold
            && priority >= threshold
        {
            return Some(Protection::Priority(threshold));
        }
        if spec.daemon_set_pods && pod.is_daemon_set_pod() {
            return Some(Protection::DaemonSet);
        }
        if spec.local_storage_pods && pod.volumes.local_storage {
            return Some(Protection::LocalStorage);
        }
        // Failed bare pods too, as the descheduler's default: a failed pod's status and logs may be
        // all that is left of it (removeFailedPods.evictFailedBarePods lifts this).
        if spec.bare_pods && !pod.has_owner() && !bare_allowed {
            return Some(Protection::Bare);
        }
        if spec.pvc_pods && pod.volumes.pvc {
            return Some(Protection::Pvc);
        }
        if let Some(selector) = &spec.label_selector
            && !matching::selector_matches(selector, &pod.labels)
        {
            return Some(Protection::Labels);
        }
        if let Some(selector) = &spec.namespace_label_selector {
            match ctx.snapshot.namespaces.get(pod.key.namespace.as_str()) {
                None => return Some(Protection::NamespaceUnknown),
                Some(ns) if !matching::selector_matches(selector, &ns.labels) => {
                    return Some(Protection::NamespaceLabels);
                }
                Some(_) => {}
            }
        }
        if let Some(min_age) = spec.min_pod_age {
            let old_enough = pod.created_at.is_some_and(|created| {
                created
                    .checked_add(min_age.to_signed())
                    .is_ok_and(|until| until <= ctx.now)
            });
            if !old_enough {
                return Some(Protection::Young);
            }
        }
        if let Some(min) = self.spec.min_replicas {
            let replicas = self.replicas(pod, ctx);
            if replicas < min {
                return Some(Protection::FewReplicas(replicas));
            }
        }
        if self.spec.pods_without_pdb && !self.covered_by_pdb(pod, ctx) {
            return Some(Protection::NoPdb);
        }
        None
    }
}

/// A protection that applies, with what its sentence needs that the pod and the spec do not hold.
enum Protection {
    Static,
    Terminating,
    SystemCritical,
    Priority(i32),
    DaemonSet,
    LocalStorage,
    Bare,
    Pvc,
    Labels,
    NamespaceUnknown,
    NamespaceLabels,
    Young,
    FewReplicas(u32),
    NoPdb,
}

impl Protection {
    fn describe(&self, pod: &PodInfo, spec: &Protections) -> String {
        let priority = pod.priority_or_zero();
        let namespace = &pod.key.namespace;
        match self {
            Protection::Static => "static pod: the API server cannot evict it".to_owned(),
            Protection::Terminating => "terminating".to_owned(),
            Protection::SystemCritical => format!("system-critical (priority {priority})"),
            Protection::Priority(threshold) => {
                format!("priority {priority} at or above priorityThreshold {threshold}")
            }
            Protection::DaemonSet => "DaemonSet pod".to_owned(),
            Protection::LocalStorage => "local storage (emptyDir or hostPath volume)".to_owned(),
            Protection::Bare => "bare pod: no owner would recreate it".to_owned(),
            Protection::Pvc => "mounts a PersistentVolumeClaim".to_owned(),
            Protection::Labels => "labels do not match protections.labelSelector".to_owned(),
            Protection::NamespaceUnknown => format!(
                "namespace {namespace} unknown: cannot check protections.namespaceLabelSelector"
            ),
            Protection::NamespaceLabels => {
                format!("namespace {namespace} does not match protections.namespaceLabelSelector")
            }
            Protection::Young => match spec.min_pod_age {
                Some(min_age) => format!("younger than minPodAge {min_age}"),
                None => "younger than minPodAge".to_owned(),
            },
            Protection::FewReplicas(replicas) => format!(
                "{} has {replicas} pod(s), fewer than minReplicas {}",
                pod.job,
                spec.min_replicas.unwrap_or_default()
            ),
            Protection::NoPdb => "no PodDisruptionBudget covers it".to_owned(),
        }
    }
}

impl Gate for Protected {
    fn id(&self) -> GateId {
        GateId::Protected
    }

    fn check(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) -> Result<(), String> {
        // The strategy lifts the switchable protections only where the pod's owner agreed to this
        // eviction (tdm: `volcano.sh/preemptable` on a closing zone). A policy-wide default is not the
        // owner's word, so such pods keep every protection: a bare pod or an emptyDir would be lost.
        if candidate.exempt.switchable_protections {
            let pod = &candidate.pod;
            return match (pod.is_static(), pod.terminating) {
                (true, _) => Err("static pod: the API server cannot evict it".to_owned()),
                (_, true) => Err("terminating".to_owned()),
                _ => Ok(()),
            };
        }
        match self.protection(&candidate.pod, ctx, candidate.exempt.bare_pod) {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    fn protects(&mut self, pod: &PodInfo, ctx: &PlanContext<'_>) -> bool {
        self.applies(pod, ctx, false).is_some()
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::*;
    use serde_json::json;

    /// Every pod on the tainted node violates the taint: the protections decide which go.
    fn tainted() -> Cluster {
        Cluster::new()
            .node(node("n1").allocatable("8", "16Gi", 110).taint(
                "maintenance",
                "yes",
                "NoSchedule",
            ))
            .node(node("n2").allocatable("8", "16Gi", 110))
    }

    fn plan(cluster: &mut Cluster, protections: &str) -> Outcome {
        cluster.plan(&format!(
            "mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints: {{}}\nprotections: {protections}\n"
        ))
    }

    #[test]
    fn static_and_terminating_pods_are_never_evicted_even_when_annotated() {
        let mut cluster = tainted()
            .pod(
                pod("kube-system/etcd", "n1")
                    .requests("100m", "1Gi")
                    .owned_by("Node", "n1")
                    .annotation("kubernetes.io/config.mirror", "abc")
                    .annotation("descheduler.alpha.kubernetes.io/evict", "true"),
            )
            .pod(pod("a/leaving", "n1").requests("100m", "1Gi").terminating())
            .pod(pod("a/plain", "n1").requests("100m", "1Gi"));
        let out = plan(&mut cluster, "{}");
        assert_eq!(out.evicted(), ["a/plain"]);
        assert!(
            out.skipped().is_empty(),
            "static pods are not even proposed"
        );
        let mut cluster = tainted().pod(
            pod("a/static", "n1")
                .requests("100m", "1Gi")
                .owned_by("Node", "n1")
                .annotation("descheduler.alpha.kubernetes.io/evict", "true"),
        );
        let out = plan(&mut cluster, "{daemonSetPods: false, barePods: false}");
        assert!(out.evicted().is_empty());
    }

    #[test]
    fn default_protections_and_their_switches() {
        let cluster = || {
            tainted()
                .pod(
                    pod("kube-system/dns", "n1")
                        .requests("100m", "1Gi")
                        .priority(2_000_000_000),
                )
                .pod(
                    pod("kube-system/proxy", "n1")
                        .requests("100m", "1Gi")
                        .spec("priorityClassName", json!("system-node-critical")),
                )
                .pod(
                    pod("a/ds", "n1")
                        .requests("100m", "1Gi")
                        .owned_by("DaemonSet", "agent"),
                )
                .pod(
                    pod("a/scratch", "n1")
                        .requests("100m", "1Gi")
                        .spec("volumes", json!([{"name": "tmp", "emptyDir": {}}])),
                )
                .pod(pod("a/bare", "n1").requests("100m", "1Gi").bare())
                .pod(pod("a/pvc", "n1").requests("100m", "1Gi").spec(
                    "volumes",
                    json!([{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]),
                ))
        };
        let out = plan(&mut cluster(), "{}");
        assert_eq!(out.evicted(), ["a/pvc"]);
        assert_eq!(
            out.detail("kube-system/dns"),
            "system-critical (priority 2000000000)"
        );
        assert_eq!(
            out.detail("kube-system/proxy"),
            "system-critical (priority 0)"
        );
        assert_eq!(out.detail("a/ds"), "DaemonSet pod");
        assert!(out.detail("a/scratch").contains("local storage"));
        assert!(out.detail("a/bare").contains("bare pod"));
        let out = plan(
            &mut cluster(),
            "{systemCritical: false, daemonSetPods: false, localStoragePods: false, barePods: false, pvcPods: true}",
        );
        assert_eq!(
            out.evicted(),
            [
                "a/bare",
                "a/ds",
                "a/scratch",
                "kube-system/dns",
                "kube-system/proxy"
            ]
        );
        assert!(out.detail("a/pvc").contains("PersistentVolumeClaim"));
    }

    #[test]
    fn the_evict_annotation_lifts_switchable_protections() {
        let mut cluster = tainted().pod(
            pod("a/ds", "n1")
                .requests("100m", "1Gi")
                .owned_by("DaemonSet", "agent")
                .priority(2_000_000_001)
                .annotation("descheduler.alpha.kubernetes.io/evict", "true"),
        );
        assert_eq!(plan(&mut cluster, "{}").evicted(), ["a/ds"]);
    }

    #[test]
    fn optional_protections() {
        let mut cluster = tainted()
            .namespace("a", &[("tier", "batch")])
            .namespace("b", &[("tier", "prod")])
            .pdb(
                pdb("a/pdb-covered", "covered")
                    .max_unavailable(1)
                    .status(json!({"disruptionsAllowed": 1, "currentHealthy": 1,
                        "desiredHealthy": 0, "expectedPods": 1})),
            )
            .pod(
                pod("a/covered", "n1")
                    .requests("100m", "1Gi")
                    .label("app", "covered")
                    .priority(10),
            )
            .pod(
                pod("a/uncovered", "n1")
                    .requests("100m", "1Gi")
                    .priority(5000),
            )
            .pod(pod("b/prod", "n1").requests("100m", "1Gi"))
            .pod(pod("c/unknown-ns", "n1").requests("100m", "1Gi"))
            .pod(
                pod("a/young", "n1")
                    .requests("100m", "1Gi")
                    .created("2026-11-22T03:30:00Z")
                    .label("app", "covered"),
            );
        let out = plan(&mut cluster, "{podsWithoutPdb: true}");
        assert_eq!(out.evicted(), ["a/covered", "a/young"]);
        assert_eq!(
            out.detail("a/uncovered"),
            "no PodDisruptionBudget covers it"
        );
        let out = plan(&mut cluster, "{priorityThreshold: 5000}");
        assert!(
            out.detail("a/uncovered")
                .contains("at or above priorityThreshold 5000")
        );
        let out = plan(
            &mut cluster,
            "{labelSelector: {matchLabels: {app: covered}}}",
        );
        assert_eq!(out.evicted(), ["a/covered", "a/young"]);
        let out = plan(
            &mut cluster,
            "{namespaceLabelSelector: {matchLabels: {tier: batch}}}",
        );
        assert_eq!(out.evicted(), ["a/covered", "a/uncovered", "a/young"]);
        assert!(out.detail("c/unknown-ns").contains("unknown"));
        let out = plan(&mut cluster, "{minPodAge: 1h}");
        assert!(out.detail("a/young").contains("younger than minPodAge 1h"));
        let out = plan(
            &mut cluster,
            "{labelSelector: {matchExpressions: [{key: app, operator: Sometimes}]}}",
        );
        assert!(out.error().is_some_and(|e| e.contains("unknown operator")));
    }

    #[test]
    fn min_replicas_counts_the_workload() {
        let mut cluster = tainted()
            .pod(
                pod("a/solo", "n1")
                    .requests("100m", "1Gi")
                    .owned_by("ReplicaSet", "solo"),
            )
            .pod(
                pod("a/pair-1", "n1")
                    .requests("100m", "1Gi")
                    .owned_by("ReplicaSet", "pair"),
            )
            .pod(
                pod("a/pair-2", "n2")
                    .requests("100m", "1Gi")
                    .owned_by("ReplicaSet", "pair"),
            );
        let out = plan(&mut cluster, "{minReplicas: 2}");
        assert_eq!(out.evicted(), ["a/pair-1"]);
        assert!(out.detail("a/solo").contains("fewer than minReplicas 2"));
    }

    #[test]
    fn node_fit() {
        let mut cluster = tainted()
            .node(node("n2").allocatable("700m", "16Gi", 110))
            .node(
                node("n3")
                    .allocatable("8", "16Gi", 110)
                    .label("disk", "ssd")
                    .unschedulable(),
            )
            .pod(pod("a/small", "n1").requests("500m", "1Gi"))
            .pod(pod("a/second", "n1").requests("500m", "1Gi"))
            .pod(pod("a/large", "n1").requests("2", "1Gi"))
            .pod(
                pod("a/ssd", "n1")
                    .requests("100m", "1Gi")
                    .spec("nodeSelector", json!({"disk": "ssd"})),
            );
        let out = plan(&mut cluster, "{nodeFit: true}");
        // n2 has room for one 500m pod: the second must not count on the same room.
        assert_eq!(out.evicted(), ["a/second"]);
        assert_eq!(
            out.skipped(),
            ["a/large nodefit", "a/small nodefit", "a/ssd nodefit"]
        );
        assert!(
            out.detail("a/large")
                .contains("1 without room for cpu 2000m")
        );
        assert!(
            out.detail("a/ssd")
                .contains("excluded by node selector/affinity")
        );
    }
}
