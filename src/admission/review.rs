//! AdmissionReviews in and out: parsing that never panics, and the decision for each endpoint taken
//! from tidal's cache (never from the API server: a binding carries neither pod nor node labels, and
//! the webhook must answer within the API server's timeout).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Binding, Pod};
use kube::core::{
    DynamicObject,
    admission::{AdmissionRequest, AdmissionResponse, AdmissionReview, Operation},
};

use super::{
    mutate::{Mutation, mutate},
    placement::{Verdict, check_binding, needs_podgroup, preemptable},
};
use crate::cluster::{ClusterCache, ObjectKey, PodGroupInfo, PodInfo};

/// The webhook's endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    /// `POST /mutate-pods`: pod CREATE.
    MutatePods,
    /// `POST /validate-pods`: pod CREATE with `spec.nodeName` set.
    ValidatePods,
    /// `POST /validate-bindings`: `pods/binding` CREATE.
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

pub type Request = AdmissionRequest<DynamicObject>;

/// Parses an AdmissionReview, naming the field that does not fit when it fails.
pub fn parse_review(body: &[u8]) -> Result<Request, ReviewError> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let review: AdmissionReview<DynamicObject> =
        serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
            let path = e.path().to_string();
            if path == "." {
                ReviewError::Malformed(e.into_inner().to_string())
            } else {
                ReviewError::Malformed(format!("at {path}: {}", e.into_inner()))
            }
        })?;
    review.try_into().map_err(|_| ReviewError::NoRequest)
}

/// The answer to one request: a verdict, and for mutations the patch.
#[derive(Debug)]
pub struct Answer {
    pub verdict: Verdict,
    pub patch: Option<json_patch::Patch>,
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
    if request.operation != Operation::Create {
        return Attempt::Done(Answer::verdict(Verdict::allow()));
    }
    match endpoint {
        Endpoint::MutatePods => mutate_pod(request, cache, last_try),
        Endpoint::ValidatePods => validate_pod(request, cache, now, last_try),
        Endpoint::ValidateBindings => validate_binding(request, cache, now, last_try),
    }
}

/// The answer for a cache that has not completed its initial lists: let everything through, loudly.
/// A webhook that is not ready must not block the cluster; the controller's sweep fixes placements later.
pub fn not_ready_answer(unsynced: &str) -> Answer {
    Answer::verdict(Verdict::allow_with(format!(
        "tidal webhook is starting (waiting for {unsynced}); admitted without placement checks"
    )))
}

/// Builds the response for `request`.
pub fn respond(request: &Request, answer: Answer) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    match answer.verdict {
        Verdict::Deny(message) => {
            let mut response = response.deny(message);
            response.result.code = 403;
            response.result.reason = "Forbidden".to_owned();
            response
        }
        Verdict::Allow { warnings } => {
            let mut response = match answer.patch {
                Some(patch) if !patch.0.is_empty() => match response.clone().with_patch(patch) {
                    Ok(patched) => patched,
                    Err(error) => {
                        let mut unchanged = response;
                        unchanged.warnings = Some(vec![format!(
                            "tidal: could not encode its patch ({error}); pod admitted unchanged"
                        )]);
                        unchanged
                    }
                },
                _ => response,
            };
            if !warnings.is_empty() {
                response.warnings.get_or_insert_with(Vec::new).extend(warnings);
            }
            response
        }
    }
}

/// Serializes the response review. `AdmissionReview` always serializes; the fallback is only there so
/// that nothing on this path can panic.
pub fn response_body(response: AdmissionResponse) -> Vec<u8> {
    serde_json::to_vec(&response.into_review()).unwrap_or_else(|error| {
        format!(r#"{{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{{"uid":"","allowed":true,"warnings":["tidal: {error}"]}}}}"#)
            .into_bytes()
    })
}

/// The request's object as a typed value; `None` (and an allowing answer) if it is not one.
fn object_as<K: serde::de::DeserializeOwned + kube::Resource>(
    request: &Request,
    what: &str,
) -> Result<K, Answer> {
    let Some(object) = request.object.clone() else {
        return Err(Answer::verdict(Verdict::allow_with(format!(
            "tidal: the request carries no {what}; not checked"
        ))));
    };
    object.try_parse::<K>().map_err(|error| {
        Answer::verdict(Verdict::allow_with(format!(
            "tidal: could not read the {what} ({error}); not checked"
        )))
    })
}

fn is_pods(request: &Request, subresource: Option<&str>) -> bool {
    request.resource.group.is_empty()
        && request.resource.resource == "pods"
        && request.sub_resource.as_deref().filter(|s| !s.is_empty()) == subresource
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
    let info = PodInfo::from_pod(&pod).map_err(|error| {
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

fn mutate_pod(request: &Request, cache: &ClusterCache, last_try: bool) -> Attempt {
    if !is_pods(request, None) {
        return Attempt::Done(unexpected(request, Endpoint::MutatePods));
    }
    let (pod, info) = match incoming_pod(request) {
        Ok(pod) => pod,
        Err(answer) => return Attempt::Done(answer),
    };
    let group = match podgroup_of(&info, cache, last_try) {
        Ok(group) => group,
        Err(Err(retry)) => return retry,
        // Affinity cannot be taken back, so a pod whose PodGroup is not known yet is admitted as it
        // is; its binding is still checked once the PodGroup is known.
        Err(Ok(warning)) => {
            return Attempt::Done(Answer::verdict(Verdict::allow_with(format!(
                "{warning}; pod admitted unchanged"
            ))));
        }
    };
    let Mutation { patch, warnings } = mutate(&pod, &info, &preemptable(&info, group));
    Attempt::Done(Answer {
        verdict: Verdict::Allow { warnings },
        patch: Some(patch),
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
    if !is_pods(request, Some("binding")) {
        return Attempt::Done(unexpected(request, Endpoint::ValidateBindings));
    }
    let binding: Binding = match object_as(request, "binding") {
        Ok(binding) => binding,
        Err(answer) => return Attempt::Done(answer),
    };
    if !matches!(binding.target.kind.as_deref(), None | Some("") | Some("Node")) {
        return Attempt::Done(Answer::verdict(Verdict::allow()));
    }
    let Some(node_name) = binding.target.name.as_deref().filter(|n| !n.is_empty()) else {
        return Attempt::Done(Answer::verdict(Verdict::allow()));
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
    let (group, warnings) = match podgroup_of(pod, cache, last_try) {
        Ok(group) => (group, Vec::new()),
        Err(Ok(warning)) => (None, vec![warning]),
        Err(Err(retry)) => return retry,
    };
    let zone = node
        .revocable_zone
        .as_deref()
        .and_then(|name| cache.zone(name));
    let verdict = check_binding(pod, group, node, zone.map(AsRef::as_ref), now);
    Attempt::Done(Answer::verdict(verdict.with_warnings(warnings)))
}
