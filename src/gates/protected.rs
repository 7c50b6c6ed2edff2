//! Gate `protected`: the evictor's protections, the rules operators know from the Kubernetes
//! descheduler's default evictor. Some pods are never evicted (static and terminating pods); others are
//! protected by default (system-critical, DaemonSet, local storage, bare pods) or on request (PVCs of
//! all or some StorageClasses, resource claims, no PDB, label selectors, few replicas, young pods,
//! `prefer-no-eviction` under `noEvictionPolicy: Mandatory`). `descheduler.alpha.kubernetes.io/evict:
//! "true"` lifts the protections the descheduler's evictor filter applies, as it does there; the
//! namespace label selector (its pre-eviction filter) and node fit (gate `nodefit`) still hold.

use std::{collections::HashMap, sync::Arc};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::{
    api::protections::{NoEvictionPolicy, Protections},
    cluster::{
        JobKey, PdbInfo, PodInfo,
        model::pod_labels::{PerLabelSet, PodLabels},
        rules::{label_index::SelectorIndex, matching},
    },
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
        ("nodeFitNodeSelector", &spec.node_fit_node_selector),
    ] {
        if let Some(selector) = selector {
            matching::selector_is_valid(selector)
                .map_err(|e| format!("protections.{field}: {e}"))?;
        }
    }
    if !spec.protected_storage_classes.is_empty() && !spec.pvc_pods {
        // Read alone it would protect nothing, the opposite of what its author meant.
        return Err(
            "protections.protectedStorageClasses takes effect only with pvcPods: true; set both"
                .to_owned(),
        );
    }
    Ok(())
}

pub(crate) struct Protected {
    spec: Protections,
    /// PodDisruptionBudgets by namespace, built on first use.
    pdbs: Option<HashMap<String, NamespaceBudgets>>,
    /// Unfinished pods per job, for `minReplicas`.
    replicas: HashMap<JobKey, u32>,
}

/// The PodDisruptionBudgets of one namespace with a selector (policy/v1: a missing selector selects no
/// pod), filed by a label each selector requires, and what they were found to cover. Matching each pod
/// weighed against every budget of its namespace cost pods × workloads in a namespace of workloads
/// with a budget each.
struct NamespaceBudgets {
    pdbs: Vec<Arc<PdbInfo>>,
    index: SelectorIndex,
    covered: PerLabelSet<bool>,
}

impl NamespaceBudgets {
    fn new(pdbs: Vec<Arc<PdbInfo>>) -> Self {
        let selectors: Vec<Option<&LabelSelector>> =
            pdbs.iter().map(|pdb| pdb.selector.as_ref()).collect();
        let index = SelectorIndex::new(&selectors);
        NamespaceBudgets {
            pdbs,
            index,
            covered: PerLabelSet::default(),
        }
    }

    fn cover(&mut self, labels: &PodLabels) -> bool {
        let (pdbs, index) = (&self.pdbs, &self.index);
        self.covered
            .get_or(labels, || covered_by_any(pdbs, index, labels))
    }
}

/// Whether a budget of `pdbs` (indexed by `index`) selects a pod with `labels`. An empty selector
/// selects every pod of the namespace.
fn covered_by_any(pdbs: &[Arc<PdbInfo>], index: &SelectorIndex, labels: &PodLabels) -> bool {
    index.candidates(labels.iter()).into_iter().any(|at| {
        pdbs.get(at as usize)
            .is_some_and(|pdb| matching::optional_selector_matches(pdb.selector.as_ref(), labels))
    })
}

/// The budgets of each namespace that has one with a selector.
fn budgets_by_namespace<'p>(
    pdbs: impl Iterator<Item = &'p Arc<PdbInfo>>,
) -> HashMap<String, NamespaceBudgets> {
    let mut found: HashMap<String, Vec<Arc<PdbInfo>>> = HashMap::new();
    for pdb in pdbs.filter(|pdb| pdb.selector.is_some()) {
        found
            .entry(pdb.key.namespace.to_string())
            .or_default()
            .push(Arc::clone(pdb));
    }
    found
        .into_iter()
        .map(|(namespace, pdbs)| (namespace, NamespaceBudgets::new(pdbs)))
        .collect()
}

impl Protected {
    pub(crate) fn new(spec: &Protections) -> Self {
        Protected {
            spec: spec.clone(),
            pdbs: None,
            replicas: HashMap::new(),
        }
    }

    fn covered_by_pdb(&mut self, pod: &PodInfo, ctx: &PlanContext<'_>) -> bool {
        let index = self
            .pdbs
            .get_or_insert_with(|| budgets_by_namespace(ctx.snapshot.pdbs.values()));
        index
            .get_mut(pod.key.namespace.as_str())
            .is_some_and(|budgets| budgets.cover(&pod.labels))
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
        // The descheduler checks the namespace selector in its pre-eviction filter, which its
        // `evict` annotation does not reach.
        if let Some(found) = self.namespace_protection(pod, ctx) {
            return Some(found);
        }
        if pod.evict_annotation {
            return None;
        }
        let spec = &self.spec;
        if spec.no_eviction_policy == NoEvictionPolicy::Mandatory && pod.prefers_no_eviction {
            return Some(Protection::NoEviction);
        }
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
        // Any owner reference of kind DaemonSet, controller or not, as the descheduler counts it.
        if spec.daemon_set_pods
            && (pod.is_daemon_set_pod() || pod.owner_kinds().any(|k| k == "DaemonSet"))
        {
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
        if spec.pvc_pods
            && pod.volumes.pvc
            && let Some(found) = self.claim_protection(pod, ctx)
        {
            return Some(found);
        }
        if spec.resource_claim_pods && pod.volumes.resource_claims {
            return Some(Protection::ResourceClaims);
        }
        if let Some(selector) = &spec.label_selector
            && !matching::selector_matches(selector, &pod.labels)
        {
            return Some(Protection::Labels);
        }
        if let Some(min_age) = spec.min_pod_age {
            // From the start time, as the descheduler counts it: a pod not started yet is young.
            let old_enough = pod.started_at().is_some_and(|started| {
                started
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

impl Protected {
    fn namespace_protection(&self, pod: &PodInfo, ctx: &PlanContext<'_>) -> Option<Protection> {
        let selector = self.spec.namespace_label_selector.as_ref()?;
        match ctx.snapshot.namespaces.get(pod.key.namespace.as_str()) {
            None => Some(Protection::NamespaceUnknown),
            Some(ns) if !matching::selector_matches(selector, &ns.labels) => {
                Some(Protection::NamespaceLabels)
            }
            Some(_) => None,
        }
    }

    /// With `protectedStorageClasses`, the first claim of a listed class, or that tidal cannot tell
    /// the class of (missing claim, no class: the descheduler protects those too); without, any claim.
    fn claim_protection(&self, pod: &PodInfo, ctx: &PlanContext<'_>) -> Option<Protection> {
        let classes = &self.spec.protected_storage_classes;
        if classes.is_empty() {
            return Some(Protection::Pvc);
        }
        for claim in pod.claims() {
            let key = crate::cluster::ObjectKey::new(pod.key.namespace.as_str(), claim.as_str());
            match ctx
                .snapshot
                .claims
                .get(&key)
                .and_then(|c| c.storage_class.as_deref())
            {
                None => return Some(Protection::ClaimUnknown(claim.to_string())),
                Some(class) if classes.iter().any(|c| c == class) => {
                    return Some(Protection::StorageClass(class.to_owned()));
                }
                Some(_) => {}
            }
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
    StorageClass(String),
    ClaimUnknown(String),
    ResourceClaims,
    NoEviction,
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
            Protection::StorageClass(class) => {
                format!("mounts a claim of StorageClass {class} (protectedStorageClasses)")
            }
            Protection::ClaimUnknown(claim) => format!(
                "mounts claim {namespace}/{claim}, whose StorageClass tidal cannot tell \
                 (protectedStorageClasses)"
            ),
            Protection::ResourceClaims => {
                "uses resource claims (spec.resourceClaims; resourceClaimPods)".to_owned()
            }
            Protection::NoEviction => {
                "annotated descheduler.alpha.kubernetes.io/prefer-no-eviction \
                 (noEvictionPolicy: Mandatory)"
                    .to_owned()
            }
            Protection::Labels => "labels do not match protections.labelSelector".to_owned(),
            Protection::NamespaceUnknown => format!(
                "namespace {namespace} unknown: cannot check protections.namespaceLabelSelector"
            ),
            Protection::NamespaceLabels => {
                format!("namespace {namespace} does not match protections.namespaceLabelSelector")
            }
            Protection::Young => match spec.min_pod_age {
                Some(min_age) => {
                    format!("younger than minPodAge {min_age} (counted from its start time)")
                }
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

    /// What a budget covers is found per namespace and label set: the replicas of a workload share
    /// their (interned) set and its answer, while the same set in a namespace without budgets, or
    /// another set beside it, gets its own.
    #[test]
    fn pdb_coverage_is_found_per_namespace_and_label_set() {
        let selecting = |key: &str, selector: serde_json::Value| {
            pdb(key, "unused")
                .patch(json!({"spec": {"selector": null}}))
                .patch(json!({"spec": {"selector": selector}}))
        };
        let member = |key: &str, labels: &[(&str, &str)]| {
            labels
                .iter()
                .fold(pod(key, "n1").requests("100m", "1Gi"), |pod, (k, v)| {
                    pod.label(k, v)
                })
        };
        let mut cluster = tainted()
            .pdb(pdb("a/web", "web"))
            .pdb(selecting(
                "a/stores",
                json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["db", "cache"]}]}),
            ))
            .pdb(selecting("c/everything", json!({})))
            .pdb(selecting("d/nothing", serde_json::Value::Null))
            .pod(member("a/web-1", &[("app", "web")]))
            .pod(member("a/web-2", &[("app", "web")]))
            .pod(member("b/web-1", &[("app", "web")]))
            .pod(member("a/api-1", &[("app", "api")]))
            .pod(member("a/web-canary", &[("app", "web"), ("track", "canary")]))
            .pod(member("a/cache-1", &[("tier", "cache")]))
            .pod(member("c/bare-labels", &[]))
            .pod(member("d/bare-labels", &[]));
        let out = plan(&mut cluster, "{podsWithoutPdb: true}");
        assert_eq!(
            out.evicted(),
            [
                "a/cache-1",
                "a/web-1",
                "a/web-2",
                "a/web-canary",
                "c/bare-labels"
            ]
        );
        for uncovered in ["a/api-1", "b/web-1", "d/bare-labels"] {
            assert_eq!(
                out.detail(uncovered),
                "no PodDisruptionBudget covers it",
                "{uncovered}"
            );
        }
    }

    /// The descheduler's defaultevictor_test.go cases for `prefer-no-eviction` and `evict`.
    #[test]
    fn prefer_no_eviction_is_a_wish_unless_mandatory_and_evict_overrides_it() {
        let annotated = || {
            tainted().pod(
                pod("a/p2", "n1")
                    .requests("100m", "1Gi")
                    .annotation("descheduler.alpha.kubernetes.io/prefer-no-eviction", ""),
            )
        };
        assert_eq!(plan(&mut annotated(), "{}").evicted(), ["a/p2"]);
        assert_eq!(
            plan(&mut annotated(), "{noEvictionPolicy: Preferred}").evicted(),
            ["a/p2"]
        );
        let out = plan(&mut annotated(), "{noEvictionPolicy: Mandatory}");
        assert!(out.evicted().is_empty());
        assert!(
            out.detail("a/p2").contains("prefer-no-eviction"),
            "{}",
            out.detail("a/p2")
        );
        let mut both = tainted().pod(
            pod("a/p2", "n1")
                .requests("100m", "1Gi")
                .annotation("descheduler.alpha.kubernetes.io/prefer-no-eviction", "")
                .annotation("descheduler.alpha.kubernetes.io/evict", "true"),
        );
        assert_eq!(
            plan(&mut both, "{noEvictionPolicy: Mandatory}").evicted(),
            ["a/p2"]
        );
    }

    #[test]
    fn evict_does_not_lift_the_namespace_selector() {
        // The descheduler checks namespaceLabelSelector in its pre-eviction filter, which the
        // annotation does not reach.
        let mut cluster = tainted().namespace("b", &[("tier", "prod")]).pod(
            pod("b/annotated", "n1")
                .requests("100m", "1Gi")
                .owned_by("DaemonSet", "agent")
                .annotation("descheduler.alpha.kubernetes.io/evict", "true"),
        );
        let out = plan(
            &mut cluster,
            "{namespaceLabelSelector: {matchLabels: {tier: batch}}}",
        );
        assert!(out.evicted().is_empty());
        assert!(out.detail("b/annotated").contains("namespaceLabelSelector"));
        assert_eq!(plan(&mut cluster, "{}").evicted(), ["b/annotated"]);
    }

    #[test]
    fn a_daemon_set_owner_protects_whether_or_not_it_is_the_controller() {
        let mut cluster = tainted().pod(
            pod("a/ds", "n1")
                .requests("100m", "1Gi")
                .patch(json!({"metadata": {"ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u"}]}})),
        );
        let out = plan(&mut cluster, "{}");
        assert!(out.evicted().is_empty());
        assert_eq!(out.detail("a/ds"), "DaemonSet pod");
    }

    /// The descheduler's cases for `PodsWithResourceClaims` and `protectedStorageClasses`.
    #[test]
    fn resource_claims_and_storage_classes() {
        let claims = |name: &str, claims: &[&str]| {
            let volumes: Vec<serde_json::Value> = claims
                .iter()
                .map(|c| json!({"name": format!("v-{c}"), "persistentVolumeClaim": {"claimName": c}}))
                .collect();
            pod(name, "n1")
                .requests("100m", "1Gi")
                .spec("volumes", json!(volumes))
        };
        let mut cluster = tainted()
            .claim("a/standard", "standard")
            .claim("a/unprotected", "unprotected")
            .claim("a/classless", "")
            .pod(claims("a/p23", &["standard"]))
            .pod(claims("a/p24", &["unprotected"]))
            .pod(claims("a/p25", &["missing"]))
            .pod(claims("a/p26", &["unprotected", "standard"]))
            .pod(claims("a/p27", &["classless"]))
            .pod(pod("a/dra", "n1").requests("100m", "1Gi").spec(
                "resourceClaims",
                json!([{"name": "gpu", "resourceClaimName": "gpu-0"}]),
            ));
        let out = plan(
            &mut cluster,
            "{pvcPods: true, protectedStorageClasses: [standard], resourceClaimPods: true}",
        );
        assert_eq!(out.evicted(), ["a/p24"]);
        assert!(out.detail("a/p23").contains("StorageClass standard"));
        assert!(
            out.detail("a/p25").contains("cannot tell"),
            "{}",
            out.detail("a/p25")
        );
        assert!(out.detail("a/p26").contains("StorageClass standard"));
        assert!(out.detail("a/p27").contains("cannot tell"));
        assert!(out.detail("a/dra").contains("resource claims"));
        // Without the list every claim protects; without the switch none.
        let out = plan(&mut cluster, "{pvcPods: true}");
        assert_eq!(out.evicted(), ["a/dra"]);
        let out = plan(&mut cluster, "{}");
        assert_eq!(out.evicted().len(), 6);
        let out = plan(&mut cluster, "{protectedStorageClasses: [standard]}");
        assert!(out.error().is_some_and(|e| e.contains("pvcPods")));
    }

    #[test]
    fn min_pod_age_counts_from_the_start_time() {
        let mut cluster = tainted()
            .pod(
                pod("a/started-late", "n1")
                    .requests("100m", "1Gi")
                    .status("startTime", json!("2026-11-22T03:30:00Z")),
            )
            .pod(
                pod("a/not-started", "n1")
                    .requests("100m", "1Gi")
                    .status("startTime", serde_json::Value::Null),
            )
            .pod(pod("a/old", "n1").requests("100m", "1Gi"));
        let out = plan(&mut cluster, "{minPodAge: 1h}");
        assert_eq!(out.evicted(), ["a/old"]);
        assert!(out.detail("a/started-late").contains("minPodAge"));
        assert!(out.detail("a/not-started").contains("minPodAge"));
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

    /// Budget coverage found through the budgets filed by label, and remembered per label set, is
    /// that of trying every budget of the pod's namespace, on random namespaces of budgets and pods
    /// that share label sets.
    mod coverage_against_a_scan {
        use std::collections::HashSet;

        use proptest::prelude::*;
        use serde_json::{Value, json};

        use super::super::Protected;
        use crate::{api::protections::Protections, cluster::rules::matching, testkit::*};

        fn selector(kind: u8, app: u8) -> Value {
            let app = format!("a{app}");
            let expression = |key: &str, operator: &str, values: Option<Vec<String>>| json!({"matchExpressions": [{"key": key, "operator": operator, "values": values}]});
            match kind % 10 {
                0 => json!({"matchLabels": {"app": app}}),
                1 => expression("app", "In", Some(vec![app, "a3".to_owned()])),
                2 => expression("app", "NotIn", Some(vec![app])),
                3 => expression("tier", "Exists", None),
                4 => expression("tier", "DoesNotExist", None),
                5 => json!({}),
                6 => expression("app", "Near", Some(vec![app])),
                7 => Value::Null,
                8 => expression("app", "In", None),
                _ => json!({"matchLabels": {"app": app, "tier": "t"}}),
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(128))]

            #[test]
            fn indexed_coverage_is_a_scans(
                budgets in prop::collection::vec((0u8..3, 0u8..10, 0u8..4), 0..24),
                members in prop::collection::vec((0u8..3, 0u8..5, any::<bool>()), 1..40),
            ) {
                let mut cluster = Cluster::new().node(node("n1"));
                for (i, &(namespace, kind, app)) in budgets.iter().enumerate() {
                    let namespace = ["a", "b", "c"][usize::from(namespace)];
                    let mut budget =
                        pdb(&format!("{namespace}/b{i:02}"), "unused").patch(json!({"spec": {"selector": null}}));
                    let selector = selector(kind, app);
                    if !selector.is_null() {
                        budget = budget.patch(json!({"spec": {"selector": selector}}));
                    }
                    cluster = cluster.pdb(budget);
                }
                for (i, &(namespace, app, tier)) in members.iter().enumerate() {
                    let namespace = ["a", "b", "c"][usize::from(namespace)];
                    let mut member = pod(&format!("{namespace}/p{i:02}"), "n1");
                    if app < 4 {
                        member = member.label("app", &format!("a{app}"));
                    }
                    if tier {
                        member = member.label("tier", "t");
                    }
                    cluster = cluster.pod(member);
                }
                let snapshot = cluster.snapshot();
                let pods: Vec<_> =
                    snapshot.nodes.values().flat_map(|state| state.pods.values()).collect();
                let policy = policy(json!({}));
                with_context(&snapshot, &policy, NOW, &HashSet::new(), |ctx| {
                    let mut protected = Protected::new(&Protections::default());
                    // Twice: the second time from what was remembered.
                    for pod in pods.iter().chain(pods.iter().rev()) {
                        let scanned = snapshot.pdbs.values().any(|pdb| {
                            *pdb.key.namespace == *pod.key.namespace
                                && matching::optional_selector_matches(pdb.selector.as_ref(), &pod.labels)
                        });
                        prop_assert_eq!(protected.covered_by_pdb(pod, ctx), scanned, "{}", pod.key);
                    }
                    Ok(())
                })?;
            }
        }
    }
}
