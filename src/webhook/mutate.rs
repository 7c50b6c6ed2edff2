//! The mutation a pod gets at CREATE, as a JSON patch: a required node-affinity term keeping a
//! non-preemptable pod off revocable nodes (rule 1), or a preferred term drawing a preemptable pod to
//! them (rule 3); a preemptable pod opted into one zone is also required to stay off the other zones,
//! which the binding check would deny, and one that says how long it runs is required to stay off
//! the zones that close before it could finish there (rule 4). The user's own terms are kept:
//! required terms are ORed by Kubernetes, so our requirement is ANDed into each of them rather than
//! added as a term of its own.
//!
//! The patch is written operation by operation, never computed as the difference of two documents:
//! an array diff turns a rewritten list into one `replace` per value, hundreds of times the size of
//! what changed. Each operation adds what tidal adds at the deepest place that already exists, so the
//! patch stays within a small multiple of tidal's own terms, and it is refused past
//! [`MAX_PATCH_BYTES`] before it is ever held whole.

use std::io::{self, Write};

use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    PreferredSchedulingTerm,
};
use serde::{Serialize, Serializer, ser::SerializeMap};

use super::placement::{ClosesFirst, Preemptable, is_exempt};
use crate::{
    api::labels,
    cluster::{InvalidValue, PodInfo},
};

/// Weight of the preferred term toward revocable nodes: the maximum, as Volcano's TDM gives
/// preemptable pods its top node score there.
pub(crate) const PREFERRED_WEIGHT: i32 = 100;

/// Required node-affinity terms above which a pod is not patched (the API server sets no limit).
pub(crate) const MAX_PATCHED_TERMS: usize = 100;

/// The largest patch tidal sends, in bytes of JSON (the response carries it in base64, a third more).
/// Rule 1 adds one short operation per required term (at most 100 terms: about 20 KiB); only a pod
/// opted into one zone gets a copy of its own terms, so this bounds that copy: a pod whose terms are
/// over 30 KiB of JSON is far beyond any real scheduling constraint.
pub(crate) const MAX_PATCH_BYTES: usize = 64 * 1024;

/// What a pod CREATE gets: a patch (empty when nothing changes), warnings for the client, and a
/// refusal when the pod asks for a rule tidal cannot write into it.
#[derive(Debug, Default)]
pub(crate) struct Mutation {
    /// The JSON patch (RFC 6902), serialized as it goes into the response; empty for no change.
    pub patch: Vec<u8>,
    pub warnings: Vec<String>,
    /// Why the pod is denied (then `patch` is empty).
    pub refusal: Option<String>,
}

impl Mutation {
    fn unchanged(warning: String) -> Mutation {
        Mutation {
            warnings: vec![warning],
            ..Mutation::default()
        }
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.patch.is_empty() && self.refusal.is_none()
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

/// The requirement of rule 4: none of the zones that close before the pod could finish there. A node
/// without the label matches `NotIn`, so ordinary nodes stay open to the pod.
fn outside_zones(zones: &[ClosesFirst]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: labels::REVOCABLE_ZONE.to_owned(),
        operator: "NotIn".to_owned(),
        values: Some(zones.iter().map(|closing| closing.zone.clone()).collect()),
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

/// What tidal adds to a pod's node affinity.
struct Wanted {
    /// Each required term must carry one of these (empty: no requirement).
    alternatives: Vec<NodeSelectorRequirement>,
    /// A preferred term with this requirement.
    preference: Option<NodeSelectorRequirement>,
}

/// Computes the patch for `pod` (the object being created), whose tidal settings are read into `info`
/// and whose preemptability (pod, else PodGroup) is `preemptable`. `closing` are the zones that close
/// before a preemptable pod could finish there (rule 4, by name), or the declaration of its run time
/// that cannot be read.
///
/// When the patch cannot be written (too many terms, or larger than [`MAX_PATCH_BYTES`]), what
/// happens depends on what the pod loses. A pod opted into one zone loses the requirement to stay
/// off the other zones, which its own annotation asked for: it is denied, saying why, so that its
/// author finds out at once. Any other pod is admitted unpatched with a warning: that is every
/// ordinary workload of the cluster, which tidal must never block, and it loses only steering: the
/// binding check still refuses a node it may not use, and the sweep evicts what slips through.
pub(crate) fn mutate(
    pod: &Pod,
    info: &PodInfo,
    preemptable: &Preemptable,
    closing: &Result<Vec<ClosesFirst>, InvalidValue>,
) -> Mutation {
    let Some(spec) = &pod.spec else {
        return Mutation::default();
    };
    // Node agents belong to their node; a pod with spec.nodeName skips the scheduler, so affinity
    // would only make the kubelet reject it: the validating webhook judges those instead.
    if is_exempt(info) || spec.node_name.as_deref().is_some_and(|n| !n.is_empty()) {
        return Mutation::default();
    }
    let mut warnings = Vec::new();
    let wanted = match preemptable {
        Preemptable::Unreadable(invalid) => {
            return Mutation::unchanged(format!(
                "tidal: {invalid}; pod admitted unchanged, and it may not be bound to revocable nodes until \
                 the value is fixed"
            ));
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
            Wanted {
                alternatives: vec![off_revocable_nodes()],
                preference: None,
            }
        }
        Preemptable::Yes => {
            let closing = match closing {
                Ok(closing) => closing,
                // The pod's drain could not evict it (gate `invalid`), so the binding check keeps it
                // off revocable nodes; it is admitted unchanged, as for an unreadable
                // `volcano.sh/preemptable`, so that fixing the value is all it takes.
                Err(invalid) => {
                    return Mutation::unchanged(format!(
                        "tidal: {invalid}; tidal cannot tell when pod {} ends, so it is admitted unchanged \
                         and may not be bound to revocable nodes until the value is fixed",
                        info.key
                    ));
                }
            };
            for closes in closing {
                warnings.push(format!(
                    "tidal: pod {} {closes}; kept off its nodes",
                    info.key
                ));
            }
            let opted = named_zone(info.zone_opt_in.as_deref());
            match opted {
                // Its one zone closes too soon: ordinary nodes are all it has left.
                Some(zone) if closing.iter().any(|closes| closes.zone == zone) => Wanted {
                    alternatives: vec![off_revocable_nodes()],
                    preference: None,
                },
                // A preference alone would let the scheduler fall back to another zone's nodes,
                // where every binding is denied: the pod would retry there forever.
                Some(zone) => Wanted {
                    alternatives: vec![off_revocable_nodes(), in_zone(zone)],
                    preference: Some(toward_revocable_nodes(opted)),
                },
                // The same for the zones that close too soon, which its binding check refuses.
                None => Wanted {
                    alternatives: if closing.is_empty() {
                        Vec::new()
                    } else {
                        vec![outside_zones(closing)]
                    },
                    preference: Some(toward_revocable_nodes(None)),
                },
            }
        }
    };
    let zone_requirement = wanted.alternatives.len() > 1;
    let terms = required_terms(pod).len();
    let written = if terms > MAX_PATCHED_TERMS {
        Err(format!(
            "{terms} required node-affinity terms (more than {MAX_PATCHED_TERMS})"
        ))
    } else {
        write_patch(spec.affinity.as_ref(), &wanted).map_err(|TooLarge| {
            format!(
                "required node affinity too large for tidal's patch (over {} KiB)",
                MAX_PATCH_BYTES / 1024
            )
        })
    };
    match written {
        Ok(patch) => Mutation {
            patch,
            warnings,
            refusal: None,
        },
        Err(why) if zone_requirement => Mutation {
            patch: Vec::new(),
            warnings,
            refusal: Some(format!(
                "tidal: pod {} opts into revocable zone {} ({}), but it has {why}, so tidal cannot \
                 require it to stay off the other zones; use fewer or shorter required terms, or opt \
                 into any zone with \"*\"",
                info.key,
                info.zone_opt_in.as_deref().unwrap_or_default(),
                labels::REVOCABLE_ZONE
            )),
        },
        Err(why) => {
            warnings.push(format!(
                "tidal: pod {} has {why}; admitted without tidal's placement rules, and it may not be \
                 bound to revocable nodes it is not allowed on",
                info.key
            ));
            Mutation {
                patch: Vec::new(),
                warnings,
                refusal: None,
            }
        }
    }
}

/// The patch would be larger than [`MAX_PATCH_BYTES`].
#[derive(Debug)]
struct TooLarge;

/// Collects the serialized patch, failing as soon as it would pass [`MAX_PATCH_BYTES`]: an oversized
/// patch is never held whole.
struct Capped(Vec<u8>);

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.0.len() + buf.len() > MAX_PATCH_BYTES {
            return Err(io::Error::other("patch too large"));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A JSON patch being written: `[`, operations separated by commas, `]`.
struct PatchWriter {
    out: Capped,
}

impl PatchWriter {
    fn new() -> PatchWriter {
        PatchWriter {
            out: Capped(Vec::new()),
        }
    }

    /// Appends `{"op":"add","path":path,"value":value}`. `add` sets an object member whether or not it
    /// exists, and appends to an array at `/-`.
    fn add(&mut self, path: &str, value: &impl Serialize) -> Result<(), TooLarge> {
        #[derive(Serialize)]
        struct Add<'a, V> {
            op: &'static str,
            path: &'a str,
            value: &'a V,
        }
        let separator: &[u8] = if self.out.0.is_empty() { b"[" } else { b"," };
        self.out.write_all(separator).map_err(|_| TooLarge)?;
        serde_json::to_writer(
            &mut self.out,
            &Add {
                op: "add",
                path,
                value,
            },
        )
        .map_err(|_| TooLarge)
    }

    /// The patch; empty when there is no operation.
    fn finish(mut self) -> Result<Vec<u8>, TooLarge> {
        if !self.out.0.is_empty() {
            self.out.write_all(b"]").map_err(|_| TooLarge)?;
        }
        Ok(self.out.0)
    }
}

const AFFINITY: &str = "/spec/affinity";
const NODE_AFFINITY: &str = "/spec/affinity/nodeAffinity";
const REQUIRED: &str = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution";
const TERMS: &str =
    "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms";
const PREFERRED: &str =
    "/spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution";

/// The operations that give the pod whose affinity is `original` what tidal wants: each adds tidal's
/// part at the deepest place the pod already has, and never repeats the user's part except where a
/// term must be split in two (a zone opt-in).
fn write_patch(original: Option<&Affinity>, wanted: &Wanted) -> Result<Vec<u8>, TooLarge> {
    let mut patch = PatchWriter::new();
    let Some(affinity) = original else {
        // Nothing of the user's to keep: the whole affinity is tidal's.
        if let Some(node) = fresh_node_affinity(wanted) {
            let affinity = Affinity {
                node_affinity: Some(node),
                ..Affinity::default()
            };
            patch.add(AFFINITY, &affinity)?;
        }
        return patch.finish();
    };
    let Some(node) = &affinity.node_affinity else {
        if let Some(node) = fresh_node_affinity(wanted) {
            patch.add(NODE_AFFINITY, &node)?;
        }
        return patch.finish();
    };
    match &node.required_during_scheduling_ignored_during_execution {
        _ if wanted.alternatives.is_empty() => {}
        None => {
            let selector = NodeSelector {
                node_selector_terms: only_alternatives(&wanted.alternatives),
            };
            patch.add(REQUIRED, &selector)?;
        }
        Some(selector) if selector.node_selector_terms.is_empty() => {
            patch.add(TERMS, &only_alternatives(&wanted.alternatives))?;
        }
        Some(selector) => {
            let terms = &selector.node_selector_terms;
            if let [alternative] = wanted.alternatives.as_slice() {
                // One requirement ANDed into each term that lacks it: one short operation per term.
                for (at, term) in terms.iter().enumerate() {
                    if keeps(term, &wanted.alternatives) {
                        continue;
                    }
                    match &term.match_expressions {
                        Some(_) => {
                            patch.add(&format!("{TERMS}/{at}/matchExpressions/-"), alternative)?
                        }
                        None => {
                            patch.add(&format!("{TERMS}/{at}/matchExpressions"), &[alternative])?
                        }
                    }
                }
            } else if terms.iter().any(|t| !keeps(t, &wanted.alternatives)) {
                // Several alternatives: a term becomes one copy per alternative, so the list is
                // rewritten as a whole, in one operation.
                let split = SplitTerms {
                    terms,
                    alternatives: &wanted.alternatives,
                };
                patch.add(TERMS, &split)?;
            }
        }
    }
    if let Some(requirement) = &wanted.preference {
        let term = preferred_term(requirement.clone());
        match &node.preferred_during_scheduling_ignored_during_execution {
            Some(preferred) if preferred.iter().any(|p| p.preference == term.preference) => {}
            Some(_) => patch.add(&format!("{PREFERRED}/-"), &term)?,
            None => patch.add(PREFERRED, &[term])?,
        }
    }
    patch.finish()
}

/// The node affinity of a pod that has none: one required term per alternative and the preference.
fn fresh_node_affinity(wanted: &Wanted) -> Option<NodeAffinity> {
    if wanted.alternatives.is_empty() && wanted.preference.is_none() {
        return None;
    }
    Some(NodeAffinity {
        required_during_scheduling_ignored_during_execution: (!wanted.alternatives.is_empty())
            .then(|| NodeSelector {
                node_selector_terms: only_alternatives(&wanted.alternatives),
            }),
        preferred_during_scheduling_ignored_during_execution: wanted
            .preference
            .clone()
            .map(|requirement| vec![preferred_term(requirement)]),
    })
}

/// One term per alternative, for a pod without required terms of its own.
fn only_alternatives(alternatives: &[NodeSelectorRequirement]) -> Vec<NodeSelectorTerm> {
    alternatives
        .iter()
        .map(|alternative| NodeSelectorTerm {
            match_expressions: Some(vec![alternative.clone()]),
            match_fields: None,
        })
        .collect()
}

fn preferred_term(requirement: NodeSelectorRequirement) -> PreferredSchedulingTerm {
    PreferredSchedulingTerm {
        weight: PREFERRED_WEIGHT,
        preference: NodeSelectorTerm {
            match_expressions: Some(vec![requirement]),
            match_fields: None,
        },
    }
}

/// A user's term that stays as it is: it already carries one of the alternatives (which keeps the
/// mutation idempotent), or it is empty, which matches no node and would match some once narrowed.
fn keeps(term: &NodeSelectorTerm, alternatives: &[NodeSelectorRequirement]) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let empty = expressions.is_empty() && term.match_fields.as_ref().is_none_or(Vec::is_empty);
    empty || expressions.iter().any(|e| alternatives.contains(e))
}

/// The user's terms with each one that [`keeps`] nothing replaced by one copy per alternative, that
/// alternative ANDed in (Kubernetes ORs terms, so this is `term AND (a OR b)`). Serialized straight
/// from the pod's terms: the copies are never built.
struct SplitTerms<'a> {
    terms: &'a [NodeSelectorTerm],
    alternatives: &'a [NodeSelectorRequirement],
}

impl Serialize for SplitTerms<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(None)?;
        for term in self.terms {
            if keeps(term, self.alternatives) {
                seq.serialize_element(term)?;
                continue;
            }
            for extra in self.alternatives {
                seq.serialize_element(&Narrowed { term, extra })?;
            }
        }
        seq.end()
    }
}

/// `term` with `extra` ANDed in, serialized as the `NodeSelectorTerm` it stands for.
struct Narrowed<'a> {
    term: &'a NodeSelectorTerm,
    extra: &'a NodeSelectorRequirement,
}

impl Serialize for Narrowed<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Expressions<'a>(&'a [NodeSelectorRequirement], &'a NodeSelectorRequirement);
        impl Serialize for Expressions<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_seq(self.0.iter().chain(std::iter::once(self.1)))
            }
        }
        let own = self.term.match_expressions.as_deref().unwrap_or_default();
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("matchExpressions", &Expressions(own, self.extra))?;
        if let Some(fields) = &self.term.match_fields {
            map.serialize_entry("matchFields", fields)?;
        }
        map.end()
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

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

    /// The mutation's patch, read back as the API server reads it.
    fn operations(mutation: &Mutation) -> json_patch::Patch {
        if mutation.patch.is_empty() {
            return json_patch::Patch(Vec::new());
        }
        serde_json::from_slice(&mutation.patch).expect("the patch is a JSON patch")
    }

    /// `pod` as JSON with the mutation's patch applied.
    fn patched(pod: &Pod, mutation: &Mutation) -> Value {
        let mut doc = serde_json::to_value(pod).unwrap();
        json_patch::patch(&mut doc, &operations(mutation)).unwrap();
        doc
    }

    /// The pod's affinity after applying the mutation's patch to the pod's JSON.
    fn patched_affinity(pod: &Pod, mutation: &Mutation) -> Value {
        patched(pod, mutation)["spec"]["affinity"].clone()
    }

    /// No zone closes before the pod could finish there.
    const NONE_CLOSING: Result<Vec<ClosesFirst>, InvalidValue> = Ok(Vec::new());

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
        let m = mutate(&p, &info, &Preemptable::No, &NONE_CLOSING);
        assert!(m.patch.is_empty() && m.refusal.is_none());
        assert!(
            m.warnings[0].contains("required node-affinity terms"),
            "{:?}",
            m.warnings
        );
        // At the limit the patch still comes, and stays proportional to the pod: one requirement
        // added per term.
        let (p, info) = created_pod(spec(MAX_PATCHED_TERMS), json!({}));
        let m = mutate(&p, &info, &Preemptable::No, &NONE_CLOSING);
        let patched = patched_affinity(&p, &m);
        assert_eq!(
            patched["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
                .as_array()
                .unwrap()
                .len(),
            MAX_PATCHED_TERMS
        );
        let patch_bytes = m.patch.len();
        let pod_bytes = serde_json::to_vec(&p).unwrap().len();
        assert!(patch_bytes < 4 * pod_bytes, "{patch_bytes} vs {pod_bytes}");
    }

    /// `n` required terms of `values` values each (`v0`, `v1`, ...), as a pod spec.
    fn wide_terms(n: usize, values: usize) -> Value {
        let values: Vec<String> = (0..values).map(|i| format!("v{i}")).collect();
        let terms: Vec<Value> = (0..n)
            .map(|i| json!({"matchExpressions": [{"key": format!("k{i}"), "operator": "In", "values": values}]}))
            .collect();
        json!({"affinity": {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": terms}}}})
    }

    const ZONE_Z2: (&str, &str) = ("volcano.sh/revocable-zone", "z2");

    /// The pod that turned 1.24 MB of affinity into a 30.5 MB patch: opted into one zone, with 100
    /// required terms of 1,800 values. Its terms cannot be split within the patch cap, and the split
    /// is what keeps it off the other zones, so it is refused, with no patch built.
    #[test]
    fn a_zone_opt_in_too_large_to_split_is_refused_not_amplified() {
        let opted = json!({"volcano.sh/preemptable": "true", ZONE_Z2.0: ZONE_Z2.1});
        let (p, info) = created_pod(wide_terms(100, 1_800), opted.clone());
        assert!(serde_json::to_vec(&p).unwrap().len() > 1_000_000);
        let m = mutate(&p, &info, &Preemptable::Yes, &NONE_CLOSING);
        assert!(m.patch.is_empty());
        let refusal = m.refusal.expect("refused");
        assert!(
            refusal.contains("ns/p opts into revocable zone z2") && refusal.contains("\"*\""),
            "{refusal}"
        );
        // The same past the term limit, however small the terms.
        let (p, info) = created_pod(wide_terms(MAX_PATCHED_TERMS + 1, 1), opted);
        let m = mutate(&p, &info, &Preemptable::Yes, &NONE_CLOSING);
        assert!(m.patch.is_empty() && m.refusal.is_some());
    }

    /// Without a zone to require, the same terms cost one short operation each (rule 1), or a single
    /// one (rule 3's preference): never a copy of the user's values.
    #[test]
    fn the_patch_grows_with_what_tidal_adds_not_with_the_pod() {
        let (p, info) = created_pod(wide_terms(100, 1_800), json!({}));
        let m = mutate(&p, &info, &Preemptable::No, &NONE_CLOSING);
        assert_eq!(operations(&m).0.len(), 100);
        assert!(m.patch.len() < 100 * 220, "{} bytes", m.patch.len());
        let terms = &patched_affinity(&p, &m)["nodeAffinity"][REQUIRED]["nodeSelectorTerms"];
        let rule = json!({"key": "volcano.sh/revocable-zone", "operator": "DoesNotExist"});
        assert!(terms.as_array().unwrap().iter().all(|t| {
            t["matchExpressions"].as_array().unwrap().last() == Some(&rule)
                && t["matchExpressions"][0]["values"].as_array().unwrap().len() == 1_800
        }));

        let (p, info) = created_pod(
            wide_terms(100, 1_800),
            json!({"volcano.sh/preemptable": "true"}),
        );
        let m = mutate(&p, &info, &Preemptable::Yes, &NONE_CLOSING);
        assert_eq!(operations(&m).0.len(), 1);
        assert!(m.patch.len() < 300, "{}", String::from_utf8_lossy(&m.patch));
    }

    /// A zone opt-in within the cap: one operation rewrites the list of terms (each split in two),
    /// one adds the preference; the patch is about twice the user's terms, never more.
    #[test]
    fn a_zone_opt_in_is_one_operation_about_twice_the_terms() {
        let spec = wide_terms(3, 200);
        let terms_bytes =
            serde_json::to_vec(&spec["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"])
                .unwrap()
                .len();
        let (p, info) = created_pod(
            spec,
            json!({"volcano.sh/preemptable": "true", ZONE_Z2.0: ZONE_Z2.1}),
        );
        let m = mutate(&p, &info, &Preemptable::Yes, &NONE_CLOSING);
        assert!(m.refusal.is_none());
        assert_eq!(operations(&m).0.len(), 2);
        assert!(
            m.patch.len() < 2 * terms_bytes + 1_000,
            "{} bytes for {terms_bytes} bytes of terms",
            m.patch.len()
        );
        let terms = &patched_affinity(&p, &m)["nodeAffinity"][REQUIRED]["nodeSelectorTerms"];
        assert_eq!(terms.as_array().unwrap().len(), 6);
        assert_eq!(
            terms[1]["matchExpressions"][1],
            json!({"key": "volcano.sh/revocable-zone", "operator": "In", "values": ["z2"]})
        );
        assert_eq!(terms[1]["matchExpressions"][0]["key"], "k0");
        assert_eq!(terms[2]["matchExpressions"][0]["key"], "k1");
    }

    /// The cap is exact: a split just over it is refused, even though each term alone is small.
    #[test]
    fn the_patch_never_passes_its_cap() {
        let opted = json!({"volcano.sh/preemptable": "true", ZONE_Z2.0: ZONE_Z2.1});
        let mut largest = 0;
        for values in [100, 200, 400, 800, 1_600] {
            let (p, info) = created_pod(wide_terms(10, values), opted.clone());
            let m = mutate(&p, &info, &Preemptable::Yes, &NONE_CLOSING);
            match m.refusal {
                None => largest = largest.max(m.patch.len()),
                Some(_) => assert!(m.patch.is_empty()),
            }
        }
        assert!(
            largest > MAX_PATCH_BYTES / 4 && largest <= MAX_PATCH_BYTES,
            "{largest}"
        );
    }

    #[test]
    fn non_preemptable_pod_without_affinity_gets_one_required_term() {
        let (p, info) = created_pod(json!({}), json!({}));
        let m = mutate(&p, &info, &Preemptable::No, &NONE_CLOSING);
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
        let m = mutate(&p, &info, &Preemptable::No, &NONE_CLOSING);
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
            operations(&m)
                .0
                .iter()
                .all(|op| matches!(op, json_patch::PatchOperation::Add(_)))
        );
    }

    #[test]
    fn mutation_is_idempotent() {
        let (p, info) = created_pod(json!({}), json!({}));
        let first = mutate(&p, &info, &Preemptable::No, &NONE_CLOSING);
        let again: Pod = serde_json::from_value(patched(&p, &first)).unwrap();
        assert!(mutate(&again, &info, &Preemptable::No, &NONE_CLOSING).is_empty());

        let (p, info) = created_pod(json!({}), json!({}));
        let first = mutate(&p, &info, &Preemptable::Yes, &NONE_CLOSING);
        let again: Pod = serde_json::from_value(patched(&p, &first)).unwrap();
        assert!(mutate(&again, &info, &Preemptable::Yes, &NONE_CLOSING).is_empty());
    }

    #[test]
    fn preemptable_pod_prefers_revocable_nodes_keeping_user_preferences() {
        let (p, info) = created_pod(
            json!({"affinity": {"nodeAffinity": {PREFERRED: [
                {"weight": 10, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}}
            ]}}}),
            json!({"volcano.sh/preemptable": "true"}),
        );
        let m = mutate(&p, &info, &Preemptable::Yes, &NONE_CLOSING);
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
        let m = mutate(&p, &info, &Preemptable::Yes, &NONE_CLOSING);
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
        let m = mutate(&p, &info, &Preemptable::Yes, &NONE_CLOSING);
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
        let m = mutate(&p, &info, &Preemptable::Yes, &NONE_CLOSING);
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
        let again: Pod = serde_json::from_value(patched(&p, &m)).unwrap();
        assert!(mutate(&again, &info, &Preemptable::Yes, &NONE_CLOSING).is_empty());

        // Any zone ("*"): a preference only, no requirement.
        let (p, info) = created_pod(
            json!({}),
            json!({"volcano.sh/preemptable": "true", "volcano.sh/revocable-zone": "*"}),
        );
        let m = mutate(&p, &info, &Preemptable::Yes, &NONE_CLOSING);
        assert!(
            patched_affinity(&p, &m)["nodeAffinity"]
                .get(REQUIRED)
                .is_none()
        );
    }

    /// The zones a pod of `annotations` is kept off at 19:00 UTC, among `early` (open 08:00-20:00)
    /// and `late` (08:00-23:00), both one round a minute.
    fn closing_at_seven(info: &PodInfo) -> Result<Vec<ClosesFirst>, InvalidValue> {
        let zones = [
            kit::zone("early").window("08:00-20:00").build(),
            kit::zone("late").window("08:00-23:00").build(),
        ];
        super::super::placement::zones_closing_first(
            info,
            None,
            &zones,
            kit::ts("2026-03-04T19:00:00Z"),
        )
    }

    /// Rule 4: a preemptable pod that needs longer than a zone has left is required to stay off it,
    /// ANDed into each of its own terms like rule 1, and still prefers revocable nodes.
    #[test]
    fn a_long_pod_is_required_to_stay_off_the_zones_that_close_first() {
        let long = json!({"volcano.sh/preemptable": "true", "tidal.dev/expected-run-time": "2h"});
        let (p, info) = created_pod(json!({}), long.clone());
        let closing = closing_at_seven(&info);
        let m = mutate(&p, &info, &Preemptable::Yes, &closing);
        let not_early =
            json!({"key": "volcano.sh/revocable-zone", "operator": "NotIn", "values": ["early"]});
        let affinity = patched_affinity(&p, &m);
        assert_eq!(
            affinity["nodeAffinity"][REQUIRED]["nodeSelectorTerms"],
            json!([{"matchExpressions": [not_early]}])
        );
        assert_eq!(
            affinity["nodeAffinity"][PREFERRED][0]["preference"]["matchExpressions"][0]["operator"],
            "Exists"
        );
        assert!(
            m.warnings.len() == 1
                && m.warnings[0].contains("pod ns/p needs 2h0m0s (expected-run-time 2h0m0s)")
                && m.warnings[0].contains(
                    "revocable zone early closes at 2026-03-04T20:00:00Z, 1h0m0s from now"
                ),
            "{:?}",
            m.warnings
        );
        // Idempotent: the term already carries the requirement.
        let again: Pod = serde_json::from_value(patched(&p, &m)).unwrap();
        assert!(mutate(&again, &info, &Preemptable::Yes, &closing).is_empty());

        // Into the user's own terms, and over both zones for a pod that needs longer than either has.
        let disk = json!({"key": "disk", "operator": "In", "values": ["ssd"]});
        let (p, info) = created_pod(
            json!({"affinity": {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [
                {"matchExpressions": [disk]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]}
            ]}}}}),
            json!({"volcano.sh/preemptable": "true", "tidal.dev/expected-run-time": "5h"}),
        );
        let m = mutate(&p, &info, &Preemptable::Yes, &closing_at_seven(&info));
        let not_either = json!({"key": "volcano.sh/revocable-zone", "operator": "NotIn", "values": ["early", "late"]});
        assert_eq!(
            patched_affinity(&p, &m)["nodeAffinity"][REQUIRED]["nodeSelectorTerms"],
            json!([
                {"matchExpressions": [disk, not_either]},
                {"matchExpressions": [not_either],
                 "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]}
            ])
        );

        // A short pod fits in both: a preference only, as before.
        let (p, info) = created_pod(
            json!({}),
            json!({"volcano.sh/preemptable": "true", "tidal.dev/expected-run-time": "30m"}),
        );
        let m = mutate(&p, &info, &Preemptable::Yes, &closing_at_seven(&info));
        assert!(
            patched_affinity(&p, &m)["nodeAffinity"]
                .get(REQUIRED)
                .is_none()
        );
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    }

    /// A pod opted into a zone that closes too soon has only ordinary nodes left: it is required
    /// there, with no preference for its zone; opted into a zone with time enough, it keeps the split.
    #[test]
    fn a_long_pod_opted_into_a_zone_that_closes_first_is_kept_to_ordinary_nodes() {
        let opted = |zone: &str| {
            json!({"volcano.sh/preemptable": "true", "tidal.dev/expected-run-time": "2h",
                   "volcano.sh/revocable-zone": zone})
        };
        let (p, info) = created_pod(json!({}), opted("early"));
        let m = mutate(&p, &info, &Preemptable::Yes, &closing_at_seven(&info));
        assert!(m.refusal.is_none());
        assert_eq!(
            patched_affinity(&p, &m),
            json!({"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "volcano.sh/revocable-zone", "operator": "DoesNotExist"}]}
            ]}}})
        );
        let (p, info) = created_pod(json!({}), opted("late"));
        let m = mutate(&p, &info, &Preemptable::Yes, &closing_at_seven(&info));
        assert_eq!(
            patched_affinity(&p, &m)["nodeAffinity"][REQUIRED]["nodeSelectorTerms"][1],
            json!({"matchExpressions": [{"key": "volcano.sh/revocable-zone", "operator": "In", "values": ["late"]}]})
        );
    }

    #[test]
    fn an_unreadable_run_time_admits_unchanged_with_a_warning() {
        let (p, info) = created_pod(
            json!({}),
            json!({"volcano.sh/preemptable": "true", "tidal.dev/expected-run-time": "forever"}),
        );
        let m = mutate(&p, &info, &Preemptable::Yes, &closing_at_seven(&info));
        assert!(m.is_empty());
        assert!(
            m.warnings[0].contains("tidal.dev/expected-run-time=\"forever\"")
                && m.warnings[0].contains("may not be bound to revocable nodes"),
            "{:?}",
            m.warnings
        );
    }

    #[test]
    fn unreadable_annotation_admits_unchanged_with_a_warning() {
        let (p, info) = created_pod(json!({}), json!({"volcano.sh/preemptable": "yes please"}));
        let preemptable = super::super::placement::preemptable(&info, None);
        let m = mutate(&p, &info, &preemptable, &NONE_CLOSING);
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
        assert!(mutate(&p, &info, &Preemptable::No, &NONE_CLOSING).is_empty());

        let mut ds: Pod = serde_json::from_value(json!({
            "metadata": {"name": "agent-x", "namespace": "ns", "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u", "controller": true}]},
            "spec": {"containers": [{"name": "c"}]}
        }))
        .unwrap();
        let info = PodInfo::from_pod(&ds).unwrap();
        assert!(mutate(&ds, &info, &Preemptable::No, &NONE_CLOSING).is_empty());
        ds.spec = None;
        assert!(mutate(&ds, &info, &Preemptable::No, &NONE_CLOSING).is_empty());
    }

    #[test]
    fn non_preemptable_pod_asking_for_revocable_nodes_is_warned() {
        let (p, info) = created_pod(
            json!({"nodeSelector": {"volcano.sh/revocable-zone": "z1"}}),
            json!({}),
        );
        let m = mutate(&p, &info, &Preemptable::No, &NONE_CLOSING);
        assert!(!m.is_empty());
        assert!(
            m.warnings[0].contains("may never be scheduled"),
            "{:?}",
            m.warnings
        );

        let (p, info) = created_pod(json!({}), json!({"volcano.sh/revocable-zone": "*"}));
        let m = mutate(&p, &info, &Preemptable::No, &NONE_CLOSING);
        assert!(
            m.warnings[0].contains("is not preemptable"),
            "{:?}",
            m.warnings
        );
    }
}
