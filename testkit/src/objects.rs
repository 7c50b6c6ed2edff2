//! Kubernetes objects as the API server sends them (JSON), for the end-to-end tests: what they hand
//! to the fake API server or write into a cluster dump. One vocabulary: a builder per object, with
//! the defaults most tests want and a method per variation, `patch` for the rare raw field.
//!
//! Pods are running, owned by a ReplicaSet of their own name (a job of one, yet not a bare pod, which
//! the default protections keep) and scheduled a day before the wall-clock time (outside any
//! cooldown), unless told otherwise.

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

/// Merges `patch` into `base`: objects key by key, anything else replaced.
pub fn merge(base: &mut Value, patch: Value) {
    match (base, patch) {
        (Value::Object(base), Value::Object(patch)) => {
            for (key, value) in patch {
                merge(base.entry(key).or_insert(Value::Null), value);
            }
        }
        (base, patch) => *base = patch,
    }
}

fn rfc3339(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// An object under construction; indexes and converts like the JSON it is.
#[derive(Clone, Debug, PartialEq)]
pub struct Object(Value);

impl Object {
    /// Merges raw JSON into the object.
    pub fn patch(mut self, patch: Value) -> Self {
        merge(&mut self.0, patch);
        self
    }

    pub fn annotated(mut self, key: &str, value: &str) -> Self {
        self.0["metadata"]["annotations"][key] = json!(value);
        self
    }

    pub fn labelled(mut self, key: &str, value: &str) -> Self {
        self.0["metadata"]["labels"][key] = json!(value);
        self
    }

    /// `volcano.sh/preemptable: "true"`, as an annotation.
    pub fn preemptable(self) -> Self {
        self.annotated("volcano.sh/preemptable", "true")
    }

    /// Owned by ReplicaSet `replica_set` (the pod's job for budgets).
    pub fn owned_by(mut self, replica_set: &str) -> Self {
        self.0["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": replica_set,
            "uid": format!("rs-{replica_set}"), "controller": true
        }]);
        self
    }

    /// No owner at all: a bare pod.
    pub fn bare(mut self) -> Self {
        if let Some(metadata) = self.0["metadata"].as_object_mut() {
            metadata.remove("ownerReferences");
        }
        self
    }

    /// A member of Volcano PodGroup `group` (its job for budgets).
    pub fn in_group(self, group: &str) -> Self {
        self.annotated("scheduling.k8s.io/group-name", group)
    }

    /// Scheduled (the `PodScheduled` condition) at `at`, RFC 3339.
    pub fn scheduled_at(mut self, at: &str) -> Self {
        self.0["status"]["conditions"][0]["lastTransitionTime"] = json!(at);
        self
    }

    /// Scheduled just now: inside any cooldown.
    pub fn just_scheduled(self) -> Self {
        self.scheduled_at(&rfc3339(Timestamp::now()))
    }

    pub fn into_value(self) -> Value {
        self.0
    }
}

impl From<Object> for Value {
    fn from(object: Object) -> Value {
        object.0
    }
}

impl std::ops::Deref for Object {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0
    }
}

impl std::ops::DerefMut for Object {
    fn deref_mut(&mut self) -> &mut Value {
        &mut self.0
    }
}

/// A running pod on `node`: see the module's defaults.
pub fn pod(namespace: &str, name: &str, node: &str) -> Object {
    let scheduled = rfc3339(Timestamp::now() - SignedDuration::from_hours(24));
    Object(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{namespace}-{name}"),
            "labels": {}, "annotations": {},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name,
                "uid": format!("rs-of-pod-{name}"), "controller": true}]},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "busybox",
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
        "status": {"phase": "Running", "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled},
            {"type": "Ready", "status": "True", "lastTransitionTime": scheduled}
        ]},
    }))
}

/// A ready node of 8 cores, 32Gi and 110 pod slots, in revocable zone `zone` if given.
pub fn node(name: &str, zone: Option<&str>) -> Object {
    let mut labels = json!({"kubernetes.io/hostname": name});
    if let Some(zone) = zone {
        labels["volcano.sh/revocable-zone"] = json!(zone);
    }
    Object(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }))
}

/// A RevocableZone (UTC) open in `window` (`"HH:MM-HH:MM"`).
pub fn zone(name: &str, window: &str, evict_period: &str) -> Object {
    Object(json!({
        "apiVersion": "tidal.dev/v1alpha1",
        "kind": "RevocableZone",
        "metadata": {"name": name},
        "spec": {"windows": [{"time": window}], "timeZone": "UTC", "evictPeriod": evict_period},
    }))
}

/// A DeschedulingPolicy running TDM with default arguments.
pub fn policy(name: &str, mode: &str, interval: &str) -> Object {
    Object(json!({
        "apiVersion": "tidal.dev/v1alpha1",
        "kind": "DeschedulingPolicy",
        "metadata": {"name": name},
        "spec": {"interval": interval, "mode": mode, "strategies": {"tdm": {}}},
    }))
}

/// A Volcano PodGroup; its budget and preemptable settings are annotations.
pub fn podgroup(namespace: &str, name: &str) -> Object {
    Object(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "annotations": {}},
        "spec": {"minMember": 1},
    }))
}

/// A PodDisruptionBudget of `min_available` over the pods labelled `app=<app>`.
pub fn pdb(namespace: &str, name: &str, app: &str, min_available: i64) -> Object {
    Object(json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variations_land_where_the_api_server_puts_them() {
        let p = pod("ns", "p", "n1")
            .preemptable()
            .owned_by("job")
            .labelled("app", "web")
            .scheduled_at("2026-11-22T03:00:00Z")
            .patch(json!({"spec": {"priority": 5}}));
        assert_eq!(
            p["metadata"]["annotations"]["volcano.sh/preemptable"],
            "true"
        );
        assert_eq!(p["metadata"]["ownerReferences"][0]["name"], "job");
        assert_eq!(p["metadata"]["labels"]["app"], "web");
        assert_eq!(
            p["status"]["conditions"][0]["lastTransitionTime"],
            "2026-11-22T03:00:00Z"
        );
        assert_eq!(p["spec"]["priority"], 5);
        assert_eq!(p["spec"]["containers"][0]["name"], "main");
    }
}
