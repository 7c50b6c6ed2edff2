//! The mutation a pod gets at CREATE, as a JSON patch: a required node-affinity term keeping a
//! non-preemptable pod off revocable nodes (rule 1), or a preferred term drawing a preemptable pod to
//! them (rule 3); a preemptable pod opted into one zone is also required to stay off the other zones,
//! which the binding check would deny. The user's own terms are kept: required terms are ORed by
//! Kubernetes, so our requirement is ANDed into each of them rather than added as a term of its own.

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PreferredSchedulingTerm,
};
use serde_json::{Value, json};

use super::placement::{Preemptable, is_exempt};
use crate::{api::labels, cluster::PodInfo};

/// Weight of the preferred term toward revocable nodes: the maximum, as Volcano's TDM gives
/// preemptable pods its top node score there.
pub(crate) const PREFERRED_WEIGHT: i32 = 100;

/// What a pod CREATE gets: a patch (empty when nothing changes) and warnings for the client.
#[derive(Debug, Default)]
pub(crate) struct Mutation {
    pub patch: json_patch::Patch,
    pub warnings: Vec<String>,
}

impl Mutation {
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.patch.0.is_empty()
    }
}

/// The requirement of rule 1: no revocable-zone label.
pub(crate) fn off_revocable_nodes() -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: labels::REVOCABLE_ZONE.to_owned(),
        operator: "DoesNotExist".to_owned(),
        values: None,
    }
}

/// The one zone a pod opted into; `None` for any zone (`*`) or no opt-in.
fn named_zone(zone_opt_in: Option<&str>) -> Option<&str> {
    zone_opt_in.filter(|zone| *zone != "*")
}

fn in_zone(zone: &str) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: labels::REVOCABLE_ZONE.to_owned(),
        operator: "In".to_owned(),
        values: Some(vec![zone.to_owned()]),
    }
}

/// The preference of rule 3: any revocable node, or the nodes of the one zone the pod opted into.
pub(crate) fn toward_revocable_nodes(zone_opt_in: Option<&str>) -> NodeSelectorRequirement {
    match named_zone(zone_opt_in) {
        Some(zone) => in_zone(zone),
        None => NodeSelectorRequirement {
            key: labels::REVOCABLE_ZONE.to_owned(),
            operator: "Exists".to_owned(),
            values: None,
        },
    }
}

/// Required node-affinity terms above which a pod is not patched (the API server sets no limit).
pub(crate) const MAX_PATCHED_TERMS: usize = 100;

/// Computes the patch for `pod` (the object being created), whose tidal settings are read into `info`
/// and whose preemptability (pod, else PodGroup) is `preemptable`.
pub(crate) fn mutate(pod: &Pod, info: &PodInfo, preemptable: &Preemptable) -> Mutation {
    let Some(spec) = &pod.spec else {
        return Mutation::default();
    };
    // Node agents belong to their node; a pod with spec.nodeName skips the scheduler, so affinity
    // would only make the kubelet reject it: the validating webhook judges those instead.
    if is_exempt(info) || spec.node_name.as_deref().is_some_and(|n| !n.is_empty()) {
        return Mutation::default();
    }
    // The patch grows with the pod's own required terms (each gets tidal's requirement, a zone opt-in
    // doubles them): a pod with thousands of terms would get a patch many times its own size, and a
    // few such requests at once could exhaust the webhook's memory. Such a pod is admitted unchanged;
    // the binding check still keeps it off nodes it may not use.
    let terms = required_terms(pod).len();
    if terms > MAX_PATCHED_TERMS {
        return Mutation {
            patch: json_patch::Patch(Vec::new()),
            warnings: vec![format!(
                "tidal: pod {} has {terms} required node-affinity terms (more than {MAX_PATCHED_TERMS}); \
                 admitted without tidal's placement rules, and it may not be bound to revocable nodes \
                 it is not allowed on",
                info.key
            )],
        };
    }
    let original = spec.affinity.clone();
    let mut affinity = original.clone().unwrap_or_default();
    let mut warnings = Vec::new();
    match preemptable {
        Preemptable::Unreadable(invalid) => {
            warnings.push(format!(
                "tidal: {invalid}; pod admitted unchanged, and it may not be bound to revocable nodes until \
                 the value is fixed"
            ));
            return Mutation {
                patch: json_patch::Patch(Vec::new()),
                warnings,
            };
        }
        Preemptable::No => {
            if asks_for_revocable_nodes(pod) {
                warnings.push(format!(
                    "tidal: pod {} asks for revocable nodes but is not preemptable ({}: \"true\" is missing); \
                     tidal keeps it off them, so it may never be scheduled",
                    info.key,
                    labels::PREEMPTABLE
                ));
            } else if let Some(zone) = &info.zone_opt_in {
                warnings.push(format!(
                    "tidal: pod {} is annotated {}={zone} but is not preemptable, so it is kept off revocable nodes",
                    info.key,
                    labels::REVOCABLE_ZONE
                ));
            }
            require_one_of(&mut affinity, &[off_revocable_nodes()]);
        }
        Preemptable::Yes => {
            // A preference alone would let the scheduler fall back to another zone's nodes, where
            // every binding is denied: the pod would retry there forever.
            if let Some(zone) = named_zone(info.zone_opt_in.as_deref()) {
                require_one_of(&mut affinity, &[off_revocable_nodes(), in_zone(zone)]);
            }
            prefer(
                &mut affinity,
                toward_revocable_nodes(info.zone_opt_in.as_deref()),
            );
        }
    }
    Mutation {
        patch: affinity_patch(original.as_ref(), &affinity),
        warnings,
    }
}

/// Requires one of `alternatives` on top of each required term: a term that carries none of them is
/// replaced by one copy per alternative, each with that alternative ANDed in (Kubernetes ORs terms, so
/// this is `term AND (a OR b)`); a pod without required terms gets one term per alternative. Empty
/// terms match no node and stay empty, since adding to them would make them match. A term already
/// carrying an alternative is left alone, which keeps the mutation idempotent.
fn require_one_of(affinity: &mut Affinity, alternatives: &[NodeSelectorRequirement]) {
    let node = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    let selector = node
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(NodeSelector::default);
    let own = std::mem::take(&mut selector.node_selector_terms);
    let has_own = !own.is_empty();
    let terms = if has_own {
        own
    } else {
        vec![NodeSelectorTerm::default()]
    };
    for term in terms {
        let expressions = term.match_expressions.as_deref().unwrap_or_default();
        let empty = expressions.is_empty() && term.match_fields.as_ref().is_none_or(Vec::is_empty);
        let has_one = expressions.iter().any(|e| alternatives.contains(e));
        if (empty && has_own) || has_one {
            selector.node_selector_terms.push(term);
            continue;
        }
        for alternative in alternatives {
            let mut narrowed = term.clone();
            narrowed
                .match_expressions
                .get_or_insert_with(Vec::new)
                .push(alternative.clone());
            selector.node_selector_terms.push(narrowed);
        }
    }
}

/// Adds a preferred term with `requirement`, unless the pod already has that very term.
fn prefer(affinity: &mut Affinity, requirement: NodeSelectorRequirement) {
    let node = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    let preferred = node
        .preferred_during_scheduling_ignored_during_execution
        .get_or_insert_with(Vec::new);
    let term = PreferredSchedulingTerm {
        weight: PREFERRED_WEIGHT,
        preference: NodeSelectorTerm {
            match_expressions: Some(vec![requirement]),
            match_fields: None,
        },
    };
    if !preferred.iter().any(|p| p.preference == term.preference) {
        preferred.push(term);
    }
}

/// A pod that selects revocable nodes on purpose (nodeSelector, or a required term naming the label
/// with `In`/`Exists` in every term).
fn asks_for_revocable_nodes(pod: &Pod) -> bool {
    let Some(spec) = &pod.spec else {
        return false;
    };
    if spec
        .node_selector
        .as_ref()
        .is_some_and(|s| s.contains_key(labels::REVOCABLE_ZONE))
    {
        return true;
    }
    let terms = required_terms(pod);
    !terms.is_empty()
        && terms.iter().all(|term| {
            term.match_expressions.iter().flatten().any(|e| {
                e.key == labels::REVOCABLE_ZONE && (e.operator == "In" || e.operator == "Exists")
            })
        })
}

/// The pod's required node-affinity terms.
fn required_terms(pod: &Pod) -> &[NodeSelectorTerm] {
    pod.spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|s| s.node_selector_terms.as_slice())
        .unwrap_or_default()
}

/// The JSON patch turning the pod's affinity into `updated`, computed by diffing the two documents
/// (rooted at the pod, so the paths are the pod's), which keeps every operation as small as possible.
fn affinity_patch(original: Option<&Affinity>, updated: &Affinity) -> json_patch::Patch {
    let rooted = |affinity: Option<Value>| match affinity {
        Some(value) => json!({"spec": {"affinity": value}}),
        None => json!({"spec": {}}),
    };
    // Serializing k8s-openapi types cannot fail; treat a failure as "no change" rather than panic.
    let before = rooted(original.and_then(|a| serde_json::to_value(a).ok()));
    let Ok(after) = serde_json::to_value(updated) else {
        return json_patch::Patch(Vec::new());
    };
    json_patch::diff(&before, &rooted(Some(after)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit as kit;

    /// A bare, unscheduled pod `ns/p` with `extra_spec` merged into its spec, as the webhook sees it
    /// on CREATE: the API object and what tidal reads of it.
    fn created_pod(extra_spec: Value, annotations: Value) -> (Pod, PodInfo) {
        let pod = kit::pod("ns/p", "")
            .bare()
            .patch(json!({"metadata": {"annotations": annotations}, "spec": extra_spec}))
            .object();
        let info = PodInfo::from_pod(&pod).unwrap();
        (pod, info)
    }

    /// The pod's affinity after applying the mutation's patch to the pod's JSON.
    fn patched_affinity(pod: &Pod, mutation: &Mutation) -> Value {
        let mut doc = serde_json::to_value(pod).unwrap();
        json_patch::patch(&mut doc, &mutation.patch).unwrap();
        doc["spec"]["affinity"].clone()
    }

    const REQUIRED: &str = "requiredDuringSchedulingIgnoredDuringExecution";
    const PREFERRED: &str = "preferredDuringSchedulingIgnoredDuringExecution";

    #[test]
    fn a_pod_with_absurdly_many_terms_is_not_patched_and_is_told_why() {
        let terms = |n: usize| {
            (0..n)
                .map(|i| json!({"matchExpressions": [{"key": "k", "operator": "In", "values": [i.to_string()]}]}))
                .collect::<Vec<_>>()
        };
        let spec = |n: usize| json!({"affinity": {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": terms(n)}}}});
        let (p, info) = created_pod(spec(MAX_PATCHED_TERMS + 1), json!({}));
        let m = mutate(&p, &info, &Preemptable::No);
        assert!(m.patch.0.is_empty());
        assert!(
            m.warnings[0].contains("required node-affinity terms"),
            "{:?}",
            m.warnings
        );
        // At the limit the patch still comes, and stays proportional to the pod: one requirement
        // added per term.
        let (p, info) = created_pod(spec(MAX_PATCHED_TERMS), json!({}));
        let m = mutate(&p, &info, &Preemptable::No);
        let patched = patched_affinity(&p, &m);
        assert_eq!(
            patched["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
                .as_array()
                .unwrap()
                .len(),
            MAX_PATCHED_TERMS
        );
        let patch_bytes = serde_json::to_vec(&m.patch).unwrap().len();
        let pod_bytes = serde_json::to_vec(&p).unwrap().len();
        assert!(patch_bytes < 4 * pod_bytes, "{patch_bytes} vs {pod_bytes}");
    }

    #[test]
    fn non_preemptable_pod_without_affinity_gets_one_required_term() {
        let (p, info) = created_pod(json!({}), json!({}));
        let m = mutate(&p, &info, &Preemptable::No);
        assert_eq!(
            patched_affinity(&p, &m),
            json!({"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "volcano.sh/revocable-zone", "operator": "DoesNotExist"}]}
            ]}}})
        );
        assert!(m.warnings.is_empty());
    }

    #[test]
    fn requirement_is_anded_into_every_user_term_and_nothing_else_changes() {
        let (p, info) = created_pod(
            json!({"affinity": {
                "nodeAffinity": {
                    REQUIRED: {"nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]},
                        {}
                    ]},
                    PREFERRED: [{"weight": 5, "preference": {"matchExpressions": [
                        {"key": "gpu", "operator": "Exists"}]}}]
                },
                "podAntiAffinity": {REQUIRED: [{"topologyKey": "kubernetes.io/hostname",
                    "labelSelector": {"matchLabels": {"app": "x"}}}]}
            }}),
            json!({}),
        );
        let m = mutate(&p, &info, &Preemptable::No);
        let rule = json!({"key": "volcano.sh/revocable-zone", "operator": "DoesNotExist"});
        let affinity = patched_affinity(&p, &m);
        assert_eq!(
            affinity["nodeAffinity"][REQUIRED]["nodeSelectorTerms"],
            json!([
                {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}, rule]},
                {"matchExpressions": [rule],
                 "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]},
                {}
            ])
        );
        // The user's preferred term and pod anti-affinity survive untouched.
        assert_eq!(
            affinity["nodeAffinity"][PREFERRED],
            json!([{"weight": 5, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}}])
        );
        assert_eq!(
            affinity["podAntiAffinity"][REQUIRED][0]["topologyKey"],
            "kubernetes.io/hostname"
        );
        // Small operations, not a replacement of the user's affinity.
        assert!(
            m.patch
                .0
                .iter()
                .all(|op| matches!(op, json_patch::PatchOperation::Add(_)))
        );
    }

    #[test]
    fn mutation_is_idempotent() {
        let (p, info) = created_pod(json!({}), json!({}));
        let first = mutate(&p, &info, &Preemptable::No);
        let mut doc = serde_json::to_value(&p).unwrap();
        json_patch::patch(&mut doc, &first.patch).unwrap();
        let again: Pod = serde_json::from_value(doc).unwrap();
        assert!(mutate(&again, &info, &Preemptable::No).is_empty());

        let (p, info) = created_pod(json!({}), json!({}));
        let first = mutate(&p, &info, &Preemptable::Yes);
        let mut doc = serde_json::to_value(&p).unwrap();
        json_patch::patch(&mut doc, &first.patch).unwrap();
        let again: Pod = serde_json::from_value(doc).unwrap();
        assert!(mutate(&again, &info, &Preemptable::Yes).is_empty());
    }

    #[test]
    fn preemptable_pod_prefers_revocable_nodes_keeping_user_preferences() {
        let (p, info) = created_pod(
            json!({"affinity": {"nodeAffinity": {PREFERRED: [
                {"weight": 10, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}}
            ]}}}),
            json!({"volcano.sh/preemptable": "true"}),
        );
        let m = mutate(&p, &info, &Preemptable::Yes);
        assert_eq!(
            patched_affinity(&p, &m)["nodeAffinity"][PREFERRED],
            json!([
                {"weight": 10, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}},
                {"weight": 100, "preference": {"matchExpressions": [
                    {"key": "volcano.sh/revocable-zone", "operator": "Exists"}]}}
            ])
        );
        assert!(
            patched_affinity(&p, &m)["nodeAffinity"]
                .get(REQUIRED)
                .is_none()
        );
    }

    #[test]
    fn a_pod_opted_into_one_zone_prefers_that_zone() {
        let (p, info) = created_pod(
            json!({}),
            json!({"volcano.sh/preemptable": "true", "volcano.sh/revocable-zone": "z2"}),
        );
        let m = mutate(&p, &info, &Preemptable::Yes);
        assert_eq!(
            patched_affinity(&p, &m)["nodeAffinity"][PREFERRED][0]["preference"],
            json!({"matchExpressions": [{"key": "volcano.sh/revocable-zone", "operator": "In", "values": ["z2"]}]})
        );
    }

    /// The binding check denies a pod opted into z2 on any other zone's node but lets it on ordinary
    /// nodes, so the scheduler is told exactly that: no label, or z2 (two ORed terms).
    #[test]
    fn a_pod_opted_into_one_zone_is_required_to_stay_off_other_zones() {
        let opted = json!({"volcano.sh/preemptable": "true", "volcano.sh/revocable-zone": "z2"});
        let off = json!({"key": "volcano.sh/revocable-zone", "operator": "DoesNotExist"});
        let z2 = json!({"key": "volcano.sh/revocable-zone", "operator": "In", "values": ["z2"]});
        let (p, info) = created_pod(json!({}), opted.clone());
        let m = mutate(&p, &info, &Preemptable::Yes);
        assert_eq!(
            patched_affinity(&p, &m)["nodeAffinity"][REQUIRED]["nodeSelectorTerms"],
            json!([{"matchExpressions": [off]}, {"matchExpressions": [z2]}])
        );

        // Each of the user's terms is kept, once per alternative; empty terms stay empty.
        let disk = json!({"key": "disk", "operator": "In", "values": ["ssd"]});
        let (p, info) = created_pod(
            json!({"affinity": {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [
                {"matchExpressions": [disk]}, {}
            ]}}}}),
            opted,
        );
        let m = mutate(&p, &info, &Preemptable::Yes);
        let affinity = patched_affinity(&p, &m);
        assert_eq!(
            affinity["nodeAffinity"][REQUIRED]["nodeSelectorTerms"],
            json!([
                {"matchExpressions": [disk, off]},
                {"matchExpressions": [disk, z2]},
                {}
            ])
        );
        // Idempotent: the split terms already carry one alternative each.
        let again: Pod = {
            let mut doc = serde_json::to_value(&p).unwrap();
            json_patch::patch(&mut doc, &m.patch).unwrap();
            serde_json::from_value(doc).unwrap()
        };
        assert!(mutate(&again, &info, &Preemptable::Yes).is_empty());

        // Any zone ("*"): a preference only, no requirement.
        let (p, info) = created_pod(
            json!({}),
            json!({"volcano.sh/preemptable": "true", "volcano.sh/revocable-zone": "*"}),
        );
        let m = mutate(&p, &info, &Preemptable::Yes);
        assert!(
            patched_affinity(&p, &m)["nodeAffinity"]
                .get(REQUIRED)
                .is_none()
        );
    }

    #[test]
    fn unreadable_annotation_admits_unchanged_with_a_warning() {
        let (p, info) = created_pod(json!({}), json!({"volcano.sh/preemptable": "yes please"}));
        let preemptable = super::super::placement::preemptable(&info, None);
        let m = mutate(&p, &info, &preemptable);
        assert!(m.is_empty());
        assert_eq!(m.warnings.len(), 1);
        assert!(
            m.warnings[0].contains("volcano.sh/preemptable=\"yes please\""),
            "{:?}",
            m.warnings
        );
    }

    #[test]
    fn pods_with_node_name_and_daemonset_pods_are_left_alone() {
        let (p, info) = created_pod(json!({"nodeName": "n1"}), json!({}));
        assert!(mutate(&p, &info, &Preemptable::No).is_empty());

        let mut ds: Pod = serde_json::from_value(json!({
            "metadata": {"name": "agent-x", "namespace": "ns", "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u", "controller": true}]},
            "spec": {"containers": [{"name": "c"}]}
        }))
        .unwrap();
        let info = PodInfo::from_pod(&ds).unwrap();
        assert!(mutate(&ds, &info, &Preemptable::No).is_empty());
        ds.spec = None;
        assert!(mutate(&ds, &info, &Preemptable::No).is_empty());
    }

    #[test]
    fn non_preemptable_pod_asking_for_revocable_nodes_is_warned() {
        let (p, info) = created_pod(
            json!({"nodeSelector": {"volcano.sh/revocable-zone": "z1"}}),
            json!({}),
        );
        let m = mutate(&p, &info, &Preemptable::No);
        assert!(!m.is_empty());
        assert!(
            m.warnings[0].contains("may never be scheduled"),
            "{:?}",
            m.warnings
        );

        let (p, info) = created_pod(json!({}), json!({"volcano.sh/revocable-zone": "*"}));
        let m = mutate(&p, &info, &Preemptable::No);
        assert!(
            m.warnings[0].contains("is not preemptable"),
            "{:?}",
            m.warnings
        );
    }
}
