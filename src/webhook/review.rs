//! AdmissionReviews in and out: parsing that never panics, and the decision for each endpoint taken
//! from tidal's cache (never from the API server: a binding carries neither pod nor node labels, and
//! the webhook must answer within the API server's timeout).

use base64::Engine;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Binding, Pod};
use kube::core::{GroupVersionKind, GroupVersionResource, Status, admission::Operation};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{
    mutate::{Mutation, mutate},
    placement::{
        Preemptable, Verdict, check_binding, is_exempt, needs_podgroup,
        needs_podgroup_run_time_only, preemptable, zones_closing_first,
    },
};
use crate::cluster::{ClusterCache, ObjectKey, PodGroupInfo, PodInfo, run_time};

/// The webhook's endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    /// `POST /mutate-pods`: pod CREATE.
    MutatePods,
    /// `POST /validate-pods`: pod CREATE with `spec.nodeName` set.
    ValidatePods,
    /// `POST /validate-bindings`: `pods/binding` (or legacy `bindings`) CREATE.
    ValidateBindings,
}

impl Endpoint {
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::MutatePods => "/mutate-pods",
            Endpoint::ValidatePods => "/validate-pods",
            Endpoint::ValidateBindings => "/validate-bindings",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::MutatePods => "mutate-pods",
            Endpoint::ValidatePods => "validate-pods",
            Endpoint::ValidateBindings => "validate-bindings",
        }
    }
}

/// A request body that is not an AdmissionReview with a request. Answered with HTTP 400 and this text.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReviewError {
    #[error("the body is not an admission.k8s.io AdmissionReview: {0}")]
    Malformed(String),
    #[error("the AdmissionReview has no request")]
    NoRequest,
}

/// An AdmissionReview as the API server sends it (`admission.k8s.io/v1`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AdmissionReview {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    request: Option<Request>,
}

/// What tidal reads of an AdmissionReview's request. The object is kept as its JSON text until the
/// endpoint reads it as the type it expects: read into a generic JSON tree first, a pod of 1.24 MB
/// (100 affinity terms of 1,800 values) took 13.8 MB at the peak of parsing and kept 7.3 MB while the
/// typed pod was read from the tree.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    /// Echoed in the response, which the API server matches by it.
    pub uid: String,
    /// The object's kind (`Pod`, `Binding`).
    pub kind: GroupVersionKind,
    /// The resource the request is for (`pods`, `bindings`).
    pub resource: GroupVersionResource,
    /// `binding` for `pods/binding`.
    #[serde(default)]
    pub sub_resource: Option<String>,
    /// The object's name (empty for a pod created with `generateName`).
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    pub operation: Operation,
    /// The object being created, as the API server sent it.
    #[serde(default)]
    pub object: Option<Box<RawValue>>,
}

/// Parses an AdmissionReview, naming the field that does not fit when it fails.
pub fn parse_review(body: &[u8]) -> Result<Request, ReviewError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ReviewError::Malformed(
            "the request body is empty".to_owned(),
        ));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let review: AdmissionReview =
        serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
            let path = e.path().to_string();
            if path == "." || path == "?" {
                ReviewError::Malformed(e.into_inner().to_string())
            } else {
                ReviewError::Malformed(format!("at {path}: {}", e.into_inner()))
            }
        })?;
    // Only what the API server sends: another apiVersion or kind is not a request this webhook
    // understands, and echoing it back with a decision would pretend otherwise.
    if review.api_version != "admission.k8s.io/v1" || review.kind != "AdmissionReview" {
        return Err(ReviewError::Malformed(format!(
            "expected apiVersion admission.k8s.io/v1 and kind AdmissionReview, got {:?} {:?}",
            review.api_version, review.kind
        )));
    }
    review.request.ok_or(ReviewError::NoRequest)
}

/// The answer to one request: a verdict, and for mutations the patch.
#[derive(Debug)]
pub struct Answer {
    pub verdict: Verdict,
    /// A JSON patch (RFC 6902), serialized; `None` or empty for no change.
    pub patch: Option<Vec<u8>>,
}

impl Answer {
    fn verdict(verdict: Verdict) -> Answer {
        Answer {
            verdict,
            patch: None,
        }
    }
}

/// One attempt at an answer. An object the decision needs may not have reached the cache yet (the
/// scheduler can bind a pod before tidal's watch delivers it): the caller retries a little later, and
/// on its last attempt the decision falls back to a safe answer instead.
#[derive(Debug)]
pub enum Attempt {
    Done(Answer),
    /// Waiting for this object to reach the cache.
    Retry(String),
}

/// Decides `request` on `endpoint` from `cache` at `now`. `last_try` turns a missing object into a
/// final answer (admitted, with a warning) rather than a retry.
pub fn decide(
    endpoint: Endpoint,
    request: &Request,
    cache: &ClusterCache,
    now: Timestamp,
    last_try: bool,
) -> Attempt {
    decide_in(endpoint, request, cache, now, last_try, true)
}

/// [`decide`], told whether `cache` holds the RevocableZones: a cache that has not listed them yet
/// has none, and a mutation that reads the zones' closes must not take that for "no zone closes".
fn decide_in(
    endpoint: Endpoint,
    request: &Request,
    cache: &ClusterCache,
    now: Timestamp,
    last_try: bool,
    zones_known: bool,
) -> Attempt {
    if request.operation != Operation::Create {
        return Attempt::Done(Answer::verdict(Verdict::allow()));
    }
    match endpoint {
        Endpoint::MutatePods => mutate_pod(request, cache, now, last_try, zones_known),
        Endpoint::ValidatePods => validate_pod(request, cache, now, last_try),
        Endpoint::ValidateBindings => validate_binding(request, cache, now, last_try),
    }
}

/// The answer before the cache has completed its initial lists, when `request` needs nothing from it:
/// a pod CREATE whose own label or annotation says whether it is preemptable is mutated as usual.
/// `None` when the decision needs the cache (answer with [`not_ready_answer`] then).
///
/// Decided against an empty cache: every lookup of a missing object asks for a retry, so an answer
/// that comes back at once cannot have depended on the cache.
pub fn decide_without_cache(
    endpoint: Endpoint,
    request: &Request,
    now: Timestamp,
) -> Option<Answer> {
    match decide_in(endpoint, request, &ClusterCache::new(), now, false, false) {
        Attempt::Done(answer) => Some(answer),
        Attempt::Retry(_) => None,
    }
}

/// The answer for a cache that has not completed its initial lists: let everything through, loudly.
/// A webhook that is not ready must not block the cluster; the controller's sweep fixes placements later.
pub fn not_ready_answer(unsynced: &str) -> Answer {
    Answer::verdict(Verdict::allow_with(format!(
        "tidal webhook is starting (waiting for {unsynced}); admitted without placement checks"
    )))
}

/// The `response` of an AdmissionReview, as the API server reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Response {
    /// The request's uid, which the API server matches.
    pub uid: String,
    pub allowed: bool,
    /// For a denial: the message, code 403 and reason `Forbidden`.
    #[serde(rename = "status")]
    pub result: Status,
    /// The JSON patch, sent base64-encoded as the API specifies for a `[]byte` (kube's own
    /// `AdmissionResponse` writes a byte array as a JSON array of numbers, 3.6 times the size).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "base64_bytes"
    )]
    pub patch: Option<Vec<u8>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

fn base64_bytes<S: serde::Serializer>(
    bytes: &Option<Vec<u8>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let bytes = bytes.as_deref().unwrap_or_default();
    serializer.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Builds the response for `request`.
pub fn respond(request: &Request, answer: Answer) -> Response {
    let mut response = Response {
        uid: request.uid.clone(),
        allowed: true,
        result: Status::default(),
        patch: None,
        patch_type: None,
        warnings: Vec::new(),
    };
    match answer.verdict {
        Verdict::Deny(message) => {
            response.allowed = false;
            response.result.message = message;
            response.result.code = 403;
            response.result.reason = "Forbidden".to_owned();
        }
        Verdict::Allow { warnings } => {
            if let Some(patch) = answer.patch.filter(|p| !p.is_empty()) {
                response.patch = Some(patch);
                response.patch_type = Some("JSONPatch");
            }
            response.warnings = warnings;
        }
    }
    response
}

/// Serializes the response review. The review always serializes; the fallback is only there so that
/// nothing on this path can panic.
pub fn response_body(response: &Response) -> Vec<u8> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Review<'a> {
        api_version: &'static str,
        kind: &'static str,
        response: &'a Response,
    }
    let review = Review {
        api_version: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        response,
    };
    serde_json::to_vec(&review).unwrap_or_else(|error| {
        format!(r#"{{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{{"uid":"","allowed":true,"warnings":["tidal: {error}"]}}}}"#)
            .into_bytes()
    })
}

/// The request's object as a typed value; `Err` (an allowing answer with a warning) if it is not one.
fn object_as<K: serde::de::DeserializeOwned>(request: &Request, what: &str) -> Result<K, Answer> {
    let Some(object) = request.object.as_ref() else {
        return Err(Answer::verdict(Verdict::allow_with(format!(
            "tidal: the request carries no {what}; not checked"
        ))));
    };
    serde_json::from_str(object.get()).map_err(|error| {
        Answer::verdict(Verdict::allow_with(format!(
            "tidal: could not read the {what} ({error}); not checked"
        )))
    })
}

fn is_pods(request: &Request, subresource: Option<&str>) -> bool {
    is_core(request, "pods", subresource)
}

fn is_core(request: &Request, resource: &str, subresource: Option<&str>) -> bool {
    request.resource.group.is_empty()
        && request.resource.resource == resource
        && request.sub_resource.as_deref().filter(|s| !s.is_empty()) == subresource
}

/// A Binding: `pods/binding`, or the legacy `POST /api/v1/namespaces/{ns}/bindings` (resource
/// `bindings`), which the API server still serves and a scheduler could use to skip the check.
fn is_binding(request: &Request) -> bool {
    is_pods(request, Some("binding")) || is_core(request, "bindings", None)
}

fn unexpected(request: &Request, endpoint: Endpoint) -> Answer {
    let resource = &request.resource;
    let sub = request
        .sub_resource
        .as_deref()
        .map(|s| format!("/{s}"))
        .unwrap_or_default();
    Answer::verdict(Verdict::allow_with(format!(
        "tidal: {}{sub} ({}) sent to {}; not checked (fix the webhook configuration's rules)",
        resource.resource,
        resource.group,
        endpoint.path()
    )))
}

/// The pod being created, with the namespace and a name filled in: a pod created with
/// `generateName` has no name yet, and clients may leave the namespace to the request.
fn incoming_pod(request: &Request) -> Result<(Pod, PodInfo), Answer> {
    let mut pod: Pod = object_as(request, "pod")?;
    let meta = &mut pod.metadata;
    if meta.namespace.as_deref().is_none_or(str::is_empty) {
        meta.namespace = request.namespace.clone();
    }
    if meta.name.as_deref().is_none_or(str::is_empty) {
        meta.name = Some(if request.name.is_empty() {
            format!("{}<generated>", meta.generate_name.as_deref().unwrap_or(""))
        } else {
            request.name.clone()
        });
    }
    // What tidal keeps of a pod copies its scheduling constraints, which admission never reads (the
    // rules are about preemptability and zones): read without the affinity, which can be most of a
    // pod (a pod of 100 terms of 1,800 values took 12.7 MB to decide with the copy, 5.7 MB without).
    let affinity = pod.spec.as_mut().and_then(|spec| spec.affinity.take());
    let info = PodInfo::from_pod(&pod);
    if let Some(spec) = pod.spec.as_mut() {
        spec.affinity = affinity;
    }
    let info = info.map_err(|error| {
        Answer::verdict(Verdict::allow_with(format!(
            "tidal: could not read the pod ({error}); not checked"
        )))
    })?;
    Ok((pod, info))
}

/// The pod's PodGroup when its preemptability depends on it. `Err` is a retry, or on the last try the
/// warning to attach: the group is named but not (yet) known.
fn podgroup_of<'c>(
    pod: &PodInfo,
    cache: &'c ClusterCache,
    last_try: bool,
) -> Result<Option<&'c PodGroupInfo>, Result<String, Attempt>> {
    if !needs_podgroup(pod) {
        return Ok(None);
    }
    let Some(group) = pod.group_name.as_deref() else {
        return Ok(None);
    };
    let key = ObjectKey::new(pod.key.namespace.clone(), group);
    match cache.podgroup(&key) {
        Some(found) => Ok(Some(found)),
        None if last_try => Err(Ok(format!(
            "tidal: PodGroup {key} named by pod {} is unknown to tidal",
            pod.key
        ))),
        None => Err(Err(Attempt::Retry(format!("PodGroup {key}")))),
    }
}

fn mutate_pod(
    request: &Request,
    cache: &ClusterCache,
    now: Timestamp,
    last_try: bool,
    zones_known: bool,
) -> Attempt {
    if !is_pods(request, None) {
        return Attempt::Done(unexpected(request, Endpoint::MutatePods));
    }
    let (pod, info) = match incoming_pod(request) {
        Ok(pod) => pod,
        Err(answer) => return Attempt::Done(answer),
    };
    let (group, unknown_group) = match podgroup_of(&info, cache, last_try) {
        Ok(group) => (group, None),
        Err(Err(retry)) => return retry,
        // The pod says for itself that it is preemptable: only the group's run time is missing, and
        // the pod's own rules still apply without it (its binding is checked against the group's
        // run time once the group is known).
        Err(Ok(warning)) if needs_podgroup_run_time_only(&info) => (
            None,
            Some(format!(
                "{warning}; its {} is not taken into account",
                crate::api::labels::EXPECTED_RUN_TIME
            )),
        ),
        // Affinity cannot be taken back, so a pod whose PodGroup is not known yet is admitted as it
        // is; its binding is still checked once the PodGroup is known.
        Err(Ok(warning)) => {
            return Attempt::Done(Answer::verdict(Verdict::allow_with(format!(
                "{warning}; pod admitted unchanged"
            ))));
        }
    };
    let preemptable = preemptable(&info, group);
    let closing = if preemptable == Preemptable::Yes && !is_exempt(&info) {
        // Most pods say nothing of their run time: the zones are copied out of the cache only for
        // those that do.
        let zones = match run_time(&info, group) {
            Some(_) if !zones_known => return Attempt::Retry("RevocableZones".to_owned()),
            Some(_) => cache.zones(),
            None => Default::default(),
        };
        zones_closing_first(&info, group, zones.values().map(AsRef::as_ref), now)
    } else {
        Ok(Vec::new())
    };
    let Mutation {
        patch,
        mut warnings,
        refusal,
    } = mutate(&pod, &info, &preemptable, &closing);
    warnings.extend(unknown_group);
    Attempt::Done(match refusal {
        Some(message) => Answer::verdict(Verdict::Deny(message)),
        None => Answer {
            verdict: Verdict::Allow { warnings },
            patch: Some(patch),
        },
    })
}

fn validate_pod(
    request: &Request,
    cache: &ClusterCache,
    now: Timestamp,
    last_try: bool,
) -> Attempt {
    if !is_pods(request, None) {
        return Attempt::Done(unexpected(request, Endpoint::ValidatePods));
    }
    let (pod, info) = match incoming_pod(request) {
        Ok(pod) => pod,
        Err(answer) => return Attempt::Done(answer),
    };
    let Some(node_name) = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
    else {
        return Attempt::Done(Answer::verdict(Verdict::allow()));
    };
    place(&info, node_name, cache, now, last_try)
}

fn validate_binding(
    request: &Request,
    cache: &ClusterCache,
    now: Timestamp,
    last_try: bool,
) -> Attempt {
    if !is_binding(request) {
        return Attempt::Done(unexpected(request, Endpoint::ValidateBindings));
    }
    let binding: Binding = match object_as(request, "binding") {
        Ok(binding) => binding,
        Err(answer) => return Attempt::Done(answer),
    };
    // The API server validates a Binding before calling admission (target.name is required, and a
    // target kind other than Node is refused), so one without a node never comes from it. Whoever
    // sends one gets the refusal the API server would give, never an unchecked "allowed".
    if let Some(kind) = binding
        .target
        .kind
        .as_deref()
        .filter(|k| !k.is_empty() && *k != "Node")
    {
        return Attempt::Done(Answer::verdict(Verdict::Deny(format!(
            "tidal: a Binding's target must be a Node, not {kind:?}"
        ))));
    }
    let Some(node_name) = binding.target.name.as_deref().filter(|n| !n.is_empty()) else {
        return Attempt::Done(Answer::verdict(Verdict::Deny(
            "tidal: the Binding names no node (target.name is required)".to_owned(),
        )));
    };
    // The binding is named after its pod; the request's name is the pod's as well.
    let pod_name = Some(request.name.as_str())
        .filter(|n| !n.is_empty())
        .or(binding.metadata.name.as_deref())
        .unwrap_or_default();
    let namespace = request
        .namespace
        .as_deref()
        .or(binding.metadata.namespace.as_deref())
        .unwrap_or_default();
    let key = ObjectKey::new(namespace, pod_name);
    // An ordinary node needs no pod at all: answer without waiting for the pod to reach the cache.
    match cache.node(node_name) {
        Some(node) if node.revocable_zone.is_none() => {
            return Attempt::Done(Answer::verdict(Verdict::allow()));
        }
        _ => {}
    }
    match cache.pod(&key) {
        Some(pod) => {
            let pod = pod.clone();
            place(&pod, node_name, cache, now, last_try)
        }
        None if last_try => Attempt::Done(Answer::verdict(Verdict::allow_with(format!(
            "tidal: pod {key} is unknown to tidal; binding to {node_name} not checked"
        )))),
        None => Attempt::Retry(format!("Pod {key}")),
    }
}

/// Whether `pod` may be placed on the node named `node_name`.
fn place(
    pod: &PodInfo,
    node_name: &str,
    cache: &ClusterCache,
    now: Timestamp,
    last_try: bool,
) -> Attempt {
    let Some(node) = cache.node(node_name) else {
        return if last_try {
            Attempt::Done(Answer::verdict(Verdict::allow_with(format!(
                "tidal: node {node_name} is unknown to tidal; placement of pod {} not checked",
                pod.key
            ))))
        } else {
            Attempt::Retry(format!("Node {node_name}"))
        };
    };
    if node.revocable_zone.is_none() {
        return Attempt::Done(Answer::verdict(Verdict::allow()));
    }
    let (group, unknown_group) = match podgroup_of(pod, cache, last_try) {
        Ok(group) => (group, None),
        // Preemptable by its own word: the pod is checked on what it says itself.
        Err(Ok(warning)) if needs_podgroup_run_time_only(pod) => (
            None,
            Some(format!(
                "{warning}; its {} is not taken into account",
                crate::api::labels::EXPECTED_RUN_TIME
            )),
        ),
        // Without its PodGroup tidal cannot tell whether the pod is preemptable: admitted like a pod
        // or node it has not seen, rather than denied as if the group had said "no".
        Err(Ok(warning)) => {
            return Attempt::Done(Answer::verdict(Verdict::allow_with(format!(
                "{warning}; placement on node {node_name} not checked"
            ))));
        }
        Err(Err(retry)) => return retry,
    };
    let zone = node
        .revocable_zone
        .as_deref()
        .and_then(|name| cache.zone(name));
    let mut verdict = check_binding(pod, group, node, zone.map(AsRef::as_ref), now);
    if let (Verdict::Allow { warnings }, Some(warning)) = (&mut verdict, unknown_group) {
        warnings.push(warning);
    }
    Attempt::Done(Answer::verdict(verdict))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Node;
    use serde_json::{Value, json};

    use super::*;
    use crate::{
        api::{PodGroup, RevocableZone},
        cluster::Ingest,
    };

    fn review(resource: &str, sub: Option<&str>, name: &str, object: Value) -> Vec<u8> {
        let mut request = json!({
            "uid": "7f0c7a52-1d7e-4b3c-9a51-3a0d1c1f0e11",
            "kind": {"group": "", "version": "v1", "kind": if sub.is_some() { "Binding" } else { "Pod" }},
            "resource": {"group": "", "version": "v1", "resource": resource},
            "name": name,
            "namespace": "ns",
            "operation": "CREATE",
            "userInfo": {"username": "system:kube-scheduler"},
            "object": object,
            "dryRun": false
        });
        if let Some(sub) = sub {
            request["subResource"] = json!(sub);
        }
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request
        }))
        .unwrap()
    }

    fn pod_object(name: &str, annotations: Value, spec_extra: Value) -> Value {
        let mut spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
            spec.extend(extra.clone());
        }
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "ns", "annotations": annotations},
               "spec": spec})
    }

    fn binding(pod: &str, node: &str) -> Vec<u8> {
        review(
            "pods",
            Some("binding"),
            pod,
            json!({"apiVersion": "v1", "kind": "Binding",
                   "metadata": {"name": pod, "namespace": "ns"},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": node}}),
        )
    }

    /// Nodes `plain` and `rev` (zone z1, open 08:00-21:00 UTC); more objects as given.
    fn cache(objects: &[Value]) -> ClusterCache {
        let mut cache = ClusterCache::new();
        let nodes: [Node; 2] = [
            serde_json::from_value(json!({"metadata": {"name": "plain"}})).unwrap(),
            serde_json::from_value(json!({"metadata": {"name": "rev",
                "labels": {"volcano.sh/revocable-zone": "z1"}}}))
            .unwrap(),
        ];
        for node in &nodes {
            node.apply_to(&mut cache, jiff::Timestamp::UNIX_EPOCH)
                .unwrap();
        }
        let zone: RevocableZone = serde_json::from_value(json!({
            "apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone",
            "metadata": {"name": "z1"}, "spec": {"windows": [{"time": "08:00-21:00"}]}
        }))
        .unwrap();
        zone.apply_to(&mut cache, jiff::Timestamp::UNIX_EPOCH)
            .unwrap();
        for object in objects {
            match object["kind"].as_str() {
                Some("Pod") => serde_json::from_value::<Pod>(object.clone())
                    .unwrap()
                    .apply_to(&mut cache, jiff::Timestamp::UNIX_EPOCH)
                    .unwrap(),
                Some("PodGroup") => serde_json::from_value::<PodGroup>(object.clone())
                    .unwrap()
                    .apply_to(&mut cache, jiff::Timestamp::UNIX_EPOCH)
                    .unwrap(),
                other => panic!("unexpected kind {other:?}"),
            }
        }
        cache
    }

    const DAY: &str = "2026-03-04T12:00:00Z";
    const NIGHT: &str = "2026-03-04T23:00:00Z";

    fn done(
        endpoint: Endpoint,
        body: &[u8],
        cache: &ClusterCache,
        now: &str,
        last: bool,
    ) -> Answer {
        let request = parse_review(body).unwrap();
        match decide(endpoint, &request, cache, now.parse().unwrap(), last) {
            Attempt::Done(answer) => answer,
            Attempt::Retry(what) => panic!("unexpected retry for {what}"),
        }
    }

    /// Asserts that `body` first waits for `missing` to reach `cache`, then, on the last try, is
    /// admitted with warnings (returned) and the answer's patch.
    fn waits_then_admits(
        endpoint: Endpoint,
        body: &[u8],
        cache: &ClusterCache,
        missing: &str,
    ) -> (Vec<String>, Option<Vec<u8>>) {
        let request = parse_review(body).unwrap();
        match decide(endpoint, &request, cache, DAY.parse().unwrap(), false) {
            Attempt::Retry(what) => assert_eq!(what, missing),
            Attempt::Done(answer) => panic!("expected a wait for {missing}, got {answer:?}"),
        }
        let answer = done(endpoint, body, cache, DAY, true);
        let Verdict::Allow { warnings } = answer.verdict else {
            panic!("expected {missing} to be let through on the last try: {answer:?}")
        };
        (warnings, answer.patch)
    }

    /// The verdict on binding `pod` to `node` at `now`, everything in `cache`.
    fn bind(cache: &ClusterCache, pod: &str, node: &str, now: &str) -> Verdict {
        done(
            Endpoint::ValidateBindings,
            &binding(pod, node),
            cache,
            now,
            false,
        )
        .verdict
    }

    #[test]
    fn malformed_reviews_are_clear_errors() {
        let cases: [(&[u8], &str); 5] = [
            (b"", "body is empty"),
            (b"{not json", "key must be a string"),
            (br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#, "no request"),
            (
                br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":5}}"#,
                "request.uid",
            ),
            (b"[1,2,3]", "AdmissionReview"),
        ];
        for (body, expected) in cases {
            let error = parse_review(body).unwrap_err().to_string();
            assert!(
                error.contains(expected),
                "{error:?} should mention {expected:?}"
            );
        }
    }

    #[test]
    fn a_review_of_another_api_version_or_kind_is_refused() {
        let valid: serde_json::Value = serde_json::from_slice(&review(
            "pods",
            None,
            "p",
            pod_object("p", json!({}), json!({})),
        ))
        .unwrap();
        assert!(parse_review(&serde_json::to_vec(&valid).unwrap()).is_ok());
        for (field, value) in [("apiVersion", "foo/v9"), ("kind", "Pod")] {
            let mut other = valid.clone();
            other[field] = json!(value);
            let error = parse_review(&serde_json::to_vec(&other).unwrap())
                .unwrap_err()
                .to_string();
            assert!(error.contains(value), "{error}");
        }
    }

    #[test]
    fn non_preemptable_pod_create_is_patched() {
        let body = review("pods", None, "p", pod_object("p", json!({}), json!({})));
        let answer = done(Endpoint::MutatePods, &body, &cache(&[]), DAY, false);
        assert_eq!(answer.verdict, Verdict::allow());
        let patch = answer.patch.unwrap();
        let operations: Vec<Value> = serde_json::from_slice(&patch).unwrap();
        assert_eq!(operations.len(), 1);
        let response = respond(
            &parse_review(&body).unwrap(),
            Answer {
                verdict: Verdict::allow(),
                patch: Some(patch.clone()),
            },
        );
        let json: Value = serde_json::from_slice(&response_body(&response)).unwrap();
        assert_eq!(json["kind"], "AdmissionReview");
        assert_eq!(
            json["response"]["uid"],
            "7f0c7a52-1d7e-4b3c-9a51-3a0d1c1f0e11"
        );
        assert_eq!(json["response"]["allowed"], true);
        assert_eq!(json["response"]["patchType"], "JSONPatch");
        // A Go `[]byte`: a base64 string, not an array of numbers.
        let encoded = json["response"]["patch"].as_str().expect("a base64 string");
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        assert_eq!(decoded, patch);
    }

    #[test]
    fn generate_name_pods_without_namespace_are_handled() {
        let object = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "web-"}, "spec": {"containers": [{"name": "c"}]}});
        let body = review("pods", None, "", object);
        let answer = done(Endpoint::MutatePods, &body, &cache(&[]), DAY, false);
        assert!(answer.patch.is_some_and(|p| !p.is_empty()));
    }

    #[test]
    fn podgroup_decides_when_the_pod_says_nothing_and_is_awaited() {
        let object = pod_object("p", json!({"scheduling.k8s.io/group-name": "g"}), json!({}));
        let body = review("pods", None, "p", object);
        // Not in the cache yet: retry, then admit unchanged with a warning on the last try.
        let (warnings, patch) =
            waits_then_admits(Endpoint::MutatePods, &body, &cache(&[]), "PodGroup ns/g");
        assert!(warnings[0].contains("PodGroup ns/g"), "{warnings:?}");
        assert!(patch.is_none());
        // With a preemptable PodGroup, the pod prefers revocable nodes.
        let group = json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ns", "annotations": {"volcano.sh/preemptable": "true"}},
            "spec": {"minMember": 1}});
        let answer = done(Endpoint::MutatePods, &body, &cache(&[group]), DAY, false);
        let patch: Value = serde_json::from_slice(&answer.patch.unwrap()).unwrap();
        assert!(
            patch.to_string().contains("preferredDuringScheduling"),
            "{patch}"
        );
    }

    #[test]
    fn bindings_are_judged_from_the_cached_pod() {
        let plain_pod = pod_object("web", json!({}), json!({}));
        let spot_pod = pod_object("spot", json!({"volcano.sh/preemptable": "true"}), json!({}));
        let c = cache(&[plain_pod, spot_pod]);
        // Ordinary node: fine, even for a pod the cache has never seen.
        assert!(bind(&c, "unknown", "plain", DAY).is_allowed());
        // Rule 1.
        let Verdict::Deny(message) = bind(&c, "web", "rev", DAY) else {
            panic!("non-preemptable pod bound to a revocable node")
        };
        assert!(message.contains("ns/web is not preemptable"), "{message}");
        // Rule 2.
        assert!(bind(&c, "spot", "rev", DAY).is_allowed());
        assert!(!bind(&c, "spot", "rev", NIGHT).is_allowed());
    }

    fn preemptable_running(name: &str, run_time: &str) -> Value {
        pod_object(
            name,
            json!({"volcano.sh/preemptable": "true", "tidal.dev/expected-run-time": run_time}),
            json!({}),
        )
    }

    /// The operations of a mutation's patch, as one JSON text.
    fn patch_text(answer: Answer) -> String {
        String::from_utf8(answer.patch.unwrap_or_default()).unwrap()
    }

    /// Zone z1 closes at 21:00, nine hours after [`DAY`]: a pod that runs ten hours is kept off it
    /// at creation and denied its nodes when bound, one that runs an hour is neither.
    #[test]
    fn a_pod_that_runs_past_the_close_is_kept_off_the_zone_and_denied_its_nodes() {
        let long = preemptable_running("long", "10h");
        let short = preemptable_running("short", "1h");
        let c = cache(&[long.clone(), short.clone()]);
        let mutated = |object: Value| {
            let name = object["metadata"]["name"].as_str().unwrap().to_owned();
            patch_text(done(
                Endpoint::MutatePods,
                &review("pods", None, &name, object),
                &c,
                DAY,
                false,
            ))
        };
        let not_in = r#"{"key":"volcano.sh/revocable-zone","operator":"NotIn","values":["z1"]}"#;
        assert!(mutated(long.clone()).contains(not_in), "{}", mutated(long));
        let short_patch = mutated(short);
        assert!(
            !short_patch.contains("NotIn") && short_patch.contains("preferredDuringScheduling"),
            "{short_patch}"
        );

        let Verdict::Deny(message) = bind(&c, "long", "rev", DAY) else {
            panic!("a binding of the long pod to z1's node must be denied")
        };
        assert!(
            message.contains("pod ns/long needs 10h0m0s (expected-run-time 10h0m0s)")
                && message.contains("z1 closes at 2026-03-04T21:00:00Z, 9h0m0s from now"),
            "{message}"
        );
        assert_eq!(bind(&c, "short", "rev", DAY), Verdict::allow());
        assert_eq!(bind(&c, "long", "plain", DAY), Verdict::allow());

        // Created already bound: the same rule.
        let direct = pod_object(
            "direct",
            json!({"volcano.sh/preemptable": "true"}),
            json!({"nodeName": "rev", "activeDeadlineSeconds": 36000}),
        );
        let Verdict::Deny(message) = done(
            Endpoint::ValidatePods,
            &review("pods", None, "direct", direct),
            &c,
            DAY,
            false,
        )
        .verdict
        else {
            panic!("a pod created on z1's node that runs past the close must be denied")
        };
        assert!(
            message.contains("(activeDeadlineSeconds 36000)"),
            "{message}"
        );
    }

    /// An empty cache has no zones: a pod whose mutation reads the zones' closes is not decided
    /// from it before the zones are listed, while one that says nothing of its run time still is.
    #[test]
    fn before_the_zones_are_listed_a_pod_that_says_how_long_it_runs_is_not_decided() {
        let now = DAY.parse().unwrap();
        let long = parse_review(&review(
            "pods",
            None,
            "long",
            preemptable_running("long", "10h"),
        ))
        .unwrap();
        assert!(decide_without_cache(Endpoint::MutatePods, &long, now).is_none());
        let spot = pod_object("spot", json!({"volcano.sh/preemptable": "true"}), json!({}));
        let spot = parse_review(&review("pods", None, "spot", spot)).unwrap();
        assert!(decide_without_cache(Endpoint::MutatePods, &spot, now).is_some());
    }

    /// A pod preemptable by its own word reads its PodGroup only for the group's run time: a group
    /// that never arrives leaves it its own rules (a preference, no exclusion), with a warning.
    #[test]
    fn a_podgroup_read_only_for_its_run_time_is_awaited_then_done_without() {
        let member = pod_object(
            "m",
            json!({"volcano.sh/preemptable": "true", "scheduling.k8s.io/group-name": "g"}),
            json!({}),
        );
        let body = review("pods", None, "m", member.clone());
        let (warnings, patch) =
            waits_then_admits(Endpoint::MutatePods, &body, &cache(&[]), "PodGroup ns/g");
        assert!(
            warnings.iter().any(
                |w| w.contains("PodGroup ns/g") && w.contains("expected-run-time is not taken")
            ),
            "{warnings:?}"
        );
        let patch = String::from_utf8(patch.unwrap()).unwrap();
        assert!(
            patch.contains("preferredDuringScheduling") && !patch.contains("NotIn"),
            "{patch}"
        );

        let group = json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "ns", "annotations": {"tidal.dev/expected-run-time": "10h"}},
            "spec": {"minMember": 1}});
        let c = cache(&[member, group]);
        assert!(
            patch_text(done(Endpoint::MutatePods, &body, &c, DAY, false)).contains("NotIn"),
            "the group's run time keeps the member off z1"
        );
        assert!(!bind(&c, "m", "rev", DAY).is_allowed());
    }

    #[test]
    fn binding_of_an_unseen_pod_waits_then_passes_with_a_warning() {
        let body = binding("late", "rev");
        let (warnings, _) = waits_then_admits(
            Endpoint::ValidateBindings,
            &body,
            &cache(&[]),
            "Pod ns/late",
        );
        assert!(warnings[0].contains("unknown to tidal"));
    }

    /// The legacy `POST /api/v1/namespaces/{ns}/bindings` reaches admission as resource `bindings`
    /// with no subresource; a scheduler using it must not bypass the checks.
    #[test]
    fn legacy_bindings_resource_is_judged_like_pods_binding() {
        let legacy = review(
            "bindings",
            None,
            "web",
            json!({"apiVersion": "v1", "kind": "Binding",
                   "metadata": {"name": "web", "namespace": "ns"},
                   "target": {"apiVersion": "v1", "kind": "Node", "name": "rev"}}),
        );
        let c = cache(&[pod_object("web", json!({}), json!({}))]);
        let Verdict::Deny(message) =
            done(Endpoint::ValidateBindings, &legacy, &c, DAY, false).verdict
        else {
            panic!("a non-preemptable pod bound through /bindings to a revocable node")
        };
        assert!(message.contains("ns/web is not preemptable"), "{message}");
    }

    /// A Binding without a node to bind to (no `target`, an empty name, or a target that is not a
    /// Node) is refused, as the API server's own validation refuses it.
    #[test]
    fn bindings_without_a_node_target_are_denied() {
        let c = cache(&[pod_object("web", json!({}), json!({}))]);
        let meta = json!({"name": "web", "namespace": "ns"});
        for (object, says) in [
            (
                json!({"apiVersion": "v1", "kind": "Binding", "metadata": meta}),
                "names no node",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Binding", "metadata": meta,
                       "target": {"kind": "Node", "name": ""}}),
                "names no node",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Binding", "metadata": meta,
                       "target": {"kind": "Pod", "name": "rev"}}),
                "not \"Pod\"",
            ),
        ] {
            let body = review("pods", Some("binding"), "web", object.clone());
            let Verdict::Deny(message) =
                done(Endpoint::ValidateBindings, &body, &c, DAY, false).verdict
            else {
                panic!("allowed: {object}")
            };
            assert!(message.contains(says), "{message}");
        }
    }

    /// A pod whose PodGroup never reaches the cache is treated like an unknown pod or node: admitted
    /// with a warning naming the PodGroup (fail-open), not denied as "not preemptable".
    #[test]
    fn binding_of_a_pod_whose_podgroup_is_unseen_passes_with_a_warning() {
        let member = pod_object("m", json!({"scheduling.k8s.io/group-name": "g"}), json!({}));
        let (warnings, _) = waits_then_admits(
            Endpoint::ValidateBindings,
            &binding("m", "rev"),
            &cache(&[member]),
            "PodGroup ns/g",
        );
        assert!(
            warnings.iter().any(|w| w.contains("PodGroup ns/g")),
            "{warnings:?}"
        );
    }

    /// `volcano.sh/revocable-zone: ""` names no zone: mutation and binding check agree that the pod
    /// may use any open zone (as the TDM sweep does).
    #[test]
    fn an_empty_zone_opt_in_is_no_opt_in_for_mutation_and_binding() {
        let annotations =
            json!({"volcano.sh/preemptable": "true", "volcano.sh/revocable-zone": ""});
        let spot = pod_object("spot", annotations, json!({}));
        let c = cache(std::slice::from_ref(&spot));
        let answer = done(
            Endpoint::MutatePods,
            &review("pods", None, "spot", spot),
            &c,
            DAY,
            false,
        );
        let patch: Value = serde_json::from_slice(&answer.patch.unwrap()).unwrap();
        assert!(
            patch.to_string().contains(r#""operator":"Exists""#),
            "{patch}"
        );
        assert!(bind(&c, "spot", "rev", DAY).is_allowed());
    }

    /// A node labelled `volcano.sh/revocable-zone=""` is in no zone, as for the controller (no sweep,
    /// no taint): bindings to it are not checked. The mutation's `DoesNotExist` still keeps
    /// non-preemptable pods off it when a scheduler places them, which is stricter, never looser.
    #[test]
    fn a_node_with_an_empty_zone_label_is_in_no_zone() {
        let mut c = cache(&[pod_object("web", json!({}), json!({}))]);
        let blank: Node = serde_json::from_value(json!({"metadata": {"name": "blank",
            "labels": {"volcano.sh/revocable-zone": ""}}}))
        .unwrap();
        blank.apply_to(&mut c, jiff::Timestamp::UNIX_EPOCH).unwrap();
        assert_eq!(bind(&c, "web", "blank", NIGHT), Verdict::allow());
        let direct = review(
            "pods",
            None,
            "p",
            pod_object("p", json!({}), json!({"nodeName": "blank"})),
        );
        assert_eq!(
            done(Endpoint::ValidatePods, &direct, &c, NIGHT, false).verdict,
            Verdict::allow()
        );
    }

    #[test]
    fn pod_create_with_node_name_is_validated() {
        let direct = |node: &str| {
            review(
                "pods",
                None,
                "p",
                pod_object("p", json!({}), json!({"nodeName": node})),
            )
        };
        let c = cache(&[]);
        assert!(
            done(Endpoint::ValidatePods, &direct("plain"), &c, DAY, false)
                .verdict
                .is_allowed()
        );
        assert!(
            !done(Endpoint::ValidatePods, &direct("rev"), &c, DAY, false)
                .verdict
                .is_allowed()
        );
        // No nodeName: nothing to validate.
        let scheduled = review("pods", None, "p", pod_object("p", json!({}), json!({})));
        assert!(
            done(Endpoint::ValidatePods, &scheduled, &c, DAY, false)
                .verdict
                .is_allowed()
        );
    }

    #[test]
    fn denials_are_403_with_the_message() {
        let body = binding("web", "rev");
        let c = cache(&[pod_object("web", json!({}), json!({}))]);
        let answer = done(Endpoint::ValidateBindings, &body, &c, DAY, false);
        let json: Value = serde_json::from_slice(&response_body(&respond(
            &parse_review(&body).unwrap(),
            answer,
        )))
        .unwrap();
        assert_eq!(json["response"]["allowed"], false);
        assert_eq!(json["response"]["status"]["code"], 403);
        assert!(
            json["response"]["status"]["message"]
                .as_str()
                .unwrap()
                .contains("not preemptable")
        );
    }

    #[test]
    fn unexpected_objects_and_operations_are_let_through() {
        let c = cache(&[]);
        // A pod body that is not a pod.
        let body = review(
            "pods",
            None,
            "p",
            json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p"}, "spec": {"containers": "nope"}}),
        );
        let Verdict::Allow { warnings } = done(Endpoint::MutatePods, &body, &c, DAY, false).verdict
        else {
            panic!()
        };
        assert!(
            warnings[0].contains("could not read the pod"),
            "{warnings:?}"
        );
        // The wrong resource on an endpoint.
        let body = review(
            "services",
            None,
            "s",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}),
        );
        let Verdict::Allow { warnings } = done(Endpoint::MutatePods, &body, &c, DAY, false).verdict
        else {
            panic!()
        };
        assert!(warnings[0].contains("services"), "{warnings:?}");
        // A binding sent to the pod endpoint and vice versa.
        let Verdict::Allow { warnings } = done(
            Endpoint::ValidatePods,
            &binding("web", "rev"),
            &c,
            DAY,
            false,
        )
        .verdict
        else {
            panic!()
        };
        assert!(warnings[0].contains("pods/binding"), "{warnings:?}");
        // UPDATE is not ours to judge.
        let mut review: Value = serde_json::from_slice(&binding("web", "rev")).unwrap();
        review["request"]["operation"] = json!("UPDATE");
        let body = serde_json::to_vec(&review).unwrap();
        assert_eq!(
            done(Endpoint::ValidateBindings, &body, &c, DAY, false).verdict,
            Verdict::allow()
        );
    }
}
