//! The Eviction request itself. Built by hand rather than through `Api::evict`, whose delete options
//! serialization we cannot vouch for in kube 5.0.0: the body below is asserted byte for byte in tests.

use k8s_openapi::{
    api::policy::v1::Eviction,
    apimachinery::pkg::apis::meta::v1::{DeleteOptions, ObjectMeta, Preconditions},
};
use kube::api::PostParams;

use crate::cluster::{ObjectKey, PodInfo};

/// One eviction to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvictionRequest {
    pub pod: ObjectKey,
    /// The uid tidal planned with. Sent as a precondition so that a pod recreated under the same name
    /// (a StatefulSet replica, say) is never evicted for a decision made about its predecessor.
    pub uid: String,
    /// Server-side dry run (`dryRun=All`): admission and PDB checks run, nothing is deleted.
    pub dry_run: bool,
}

impl EvictionRequest {
    /// The eviction of `pod`, with its uid as the API server sent it.
    pub fn of(pod: &PodInfo, dry_run: bool) -> Self {
        EvictionRequest {
            pod: pod.key.clone(),
            uid: pod.uid.to_string(),
            dry_run,
        }
    }
}

/// The `policy/v1` Eviction body for `request`, with the pod's own grace period.
pub fn eviction_body(request: &EvictionRequest) -> Eviction {
    eviction_body_with(request, None)
}

/// The `policy/v1` Eviction body for `request`; `grace_period_seconds` overrides the pod's own
/// (dry runs leave it out: they end nothing).
pub fn eviction_body_with(
    request: &EvictionRequest,
    grace_period_seconds: Option<i64>,
) -> Eviction {
    let grace_period_seconds = grace_period_seconds.filter(|_| !request.dry_run);
    let preconditions = (!request.uid.is_empty()).then(|| Preconditions {
        uid: Some(request.uid.clone()),
        resource_version: None,
    });
    // The API server rejects a body whose dryRun differs from the query's, so both say the same.
    let dry_run = request.dry_run.then(|| vec!["All".to_owned()]);
    let delete_options = (preconditions.is_some()
        || dry_run.is_some()
        || grace_period_seconds.is_some())
    .then(|| DeleteOptions {
        preconditions,
        dry_run,
        grace_period_seconds,
        ..DeleteOptions::default()
    });
    Eviction {
        metadata: ObjectMeta {
            name: Some(request.pod.name.to_string()),
            namespace: Some(request.pod.namespace.to_string()),
            ..ObjectMeta::default()
        },
        delete_options,
    }
}

/// The HTTP request: `POST /api/v1/namespaces/{ns}/pods/{name}/eviction[?dryRun=All]`.
pub(crate) fn http_request(
    request: &EvictionRequest,
    grace_period_seconds: Option<i64>,
) -> Result<http::Request<Vec<u8>>, String> {
    let body = serde_json::to_vec(&eviction_body_with(request, grace_period_seconds))
        .map_err(|e| e.to_string())?;
    let pods =
        kube::core::Request::new(format!("/api/v1/namespaces/{}/pods", request.pod.namespace));
    let params = PostParams {
        dry_run: request.dry_run,
        field_manager: None,
    };
    pods.create_subresource("eviction", &request.pod.name, &params, body)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(dry_run: bool) -> EvictionRequest {
        EvictionRequest {
            pod: ObjectKey::new("batch", "worker-0"),
            uid: "3f2a".to_owned(),
            dry_run,
        }
    }

    #[test]
    fn body_is_a_policy_v1_eviction_with_uid_precondition() {
        let json: serde_json::Value =
            serde_json::from_slice(http_request(&request(false), None).unwrap().body()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": "worker-0", "namespace": "batch"},
                "deleteOptions": {"preconditions": {"uid": "3f2a"}}
            })
        );
    }

    #[test]
    fn dry_run_is_in_query_and_body_alike() {
        let http = http_request(&request(true), None).unwrap();
        assert_eq!(http.method(), http::Method::POST);
        assert_eq!(
            http.uri().to_string(),
            "/api/v1/namespaces/batch/pods/worker-0/eviction?&dryRun=All"
        );
        assert_eq!(
            http.headers()
                .get(http::header::CONTENT_TYPE)
                .map(|v| v.to_str().unwrap()),
            Some("application/json")
        );
        let json: serde_json::Value = serde_json::from_slice(http.body()).unwrap();
        assert_eq!(
            json["deleteOptions"],
            serde_json::json!({"preconditions": {"uid": "3f2a"}, "dryRun": ["All"]})
        );
    }

    #[test]
    fn a_grace_period_goes_in_the_delete_options_of_real_evictions_only() {
        let json: serde_json::Value =
            serde_json::from_slice(http_request(&request(false), Some(60)).unwrap().body())
                .unwrap();
        assert_eq!(
            json["deleteOptions"],
            serde_json::json!({"preconditions": {"uid": "3f2a"}, "gracePeriodSeconds": 60})
        );
        let json: serde_json::Value =
            serde_json::from_slice(http_request(&request(true), Some(60)).unwrap().body()).unwrap();
        assert!(
            json["deleteOptions"].get("gracePeriodSeconds").is_none(),
            "{json}"
        );
        let mut bare = request(false);
        bare.uid.clear();
        let json = serde_json::to_value(eviction_body_with(&bare, Some(0))).unwrap();
        assert_eq!(
            json["deleteOptions"],
            serde_json::json!({"gracePeriodSeconds": 0})
        );
    }

    #[test]
    fn real_eviction_has_no_query() {
        let http = http_request(&request(false), None).unwrap();
        assert_eq!(
            http.uri().to_string(),
            "/api/v1/namespaces/batch/pods/worker-0/eviction?"
        );
    }

    #[test]
    fn the_precondition_is_the_uid_exactly_as_the_api_server_sent_it() {
        for uid in [
            "c1afcd45-e95e-4e96-b074-33b6a01a9d43",
            "C1AFCD45-E95E-4E96-B074-33B6A01A9D43",
            "c1afcd45e95e4e96b07433b6a01a9d43",
            "{c1afcd45-e95e-4e96-b074-33b6a01a9d43}",
            "worker-0-uid",
        ] {
            let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
                "metadata": {"name": "worker-0", "namespace": "batch", "uid": uid},
            }))
            .unwrap();
            let request = EvictionRequest::of(&PodInfo::from_pod(&pod).unwrap(), false);
            let json = serde_json::to_value(eviction_body(&request)).unwrap();
            assert_eq!(json["deleteOptions"]["preconditions"]["uid"], uid);
        }
    }

    #[test]
    fn no_uid_means_no_precondition() {
        let mut req = request(false);
        req.uid.clear();
        let json = serde_json::to_value(eviction_body(&req)).unwrap();
        assert!(json.get("deleteOptions").is_none(), "{json}");
    }
}
