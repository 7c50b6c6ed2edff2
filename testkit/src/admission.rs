//! AdmissionReview bodies as the API server sends them, and the pods that stress the webhook.

use serde_json::{Value, json};

/// A pod `CREATE` review (`admission.k8s.io/v1`) of `pod` in namespace `team-a`.
pub fn pod_review(pod: Value) -> Vec<u8> {
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    serde_json::to_vec(&json!({
        "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": "e911857d-c318-4a7d-8e34-6e3a37e7b3b5",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
            "requestResource": {"group": "", "version": "v1", "resource": "pods"},
            "name": name, "namespace": "team-a", "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller"},
            "object": pod, "oldObject": null, "dryRun": false,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
        }
    }))
    .expect("a review serializes")
}

/// An ordinary pod `name`, with `annotations` and, if given, `affinity`.
pub fn pod(name: &str, annotations: Value, affinity: Option<Value>) -> Value {
    let mut pod = json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "team-a", "labels": {"app": "web"},
                     "annotations": annotations},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                 "resources": {"requests": {"cpu": "100m"}}}]}
    });
    if let Some(affinity) = affinity {
        pod["spec"]["affinity"] = affinity;
    }
    pod
}

/// A pod of 100 required node-affinity terms of 1,800 short values each (1.24 MB). Opted into zone
/// `z1` (`opted`), it is the pod whose split terms once made a 30.5 MB patch; not preemptable, tidal
/// adds one requirement to each of its terms. Each term's values are shifted by one from the next
/// term's, so that a diff of the split list against the original finds every value changed.
pub fn amplifying_pod(opted: bool) -> Value {
    let terms: Vec<Value> = (0..100)
        .map(|i| {
            let values: Vec<String> = (i..i + 1_800).map(|v| format!("v{v}")).collect();
            json!({"matchExpressions": [{"key": "k", "operator": "In", "values": values}]})
        })
        .collect();
    let annotations = if opted {
        json!({"volcano.sh/preemptable": "true", "volcano.sh/revocable-zone": "z1"})
    } else {
        json!({})
    };
    let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}});
    pod("amp", annotations, Some(affinity))
}
