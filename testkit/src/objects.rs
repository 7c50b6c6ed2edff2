//! Kubernetes objects as the API server sends them (JSON): one builder vocabulary for every test of
//! tidal. `tidal-testkit` compiles this file for the end-to-end tests, which hand the objects to the
//! fake API server or write them into cluster dumps; tidal's unit kit (`src/testkit.rs`) compiles the
//! same file and reads the objects through the real ingest (`.build()`). It uses nothing of tidal, so
//! that both crates can compile it.
//!
//! One builder per kind, with the defaults most tests want and a method per variation; `patch` merges
//! raw JSON for the rare field no method sets. A builder derefs to its JSON and converts into it.
//!
//! Times count from the kit's clock, `super::now()`: the wall clock in `tidal-testkit` (the processes
//! under test read it), a fixed instant in the unit kit. Unless told otherwise, a pod is running, owned
//! by ReplicaSet `rs-<name>` (a job of one, yet not a bare pod, which the default protections keep),
//! and created and scheduled a day before the kit's clock (outside any cooldown).

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

/// `at` as the API server writes times: RFC 3339 in UTC, to the second.
fn rfc3339(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A day before the kit's clock: when pods are created and scheduled unless they say otherwise.
fn a_day_ago() -> String {
    rfc3339(super::now() - SignedDuration::from_hours(24))
}

/// `namespace/name`, or `name` alone in namespace `default`.
fn split_key(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("default", key))
}

fn set_map_entry(object: &mut Value, map: &str, key: &str, value: &str) {
    let meta = &mut object["metadata"];
    if !meta.get(map).is_some_and(Value::is_object) {
        meta[map] = json!({});
    }
    meta[map][key] = json!(value);
}

/// What every builder has: labels, annotations, raw patches, and its JSON.
macro_rules! builder {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name(Value);

        impl $name {
            pub fn label(mut self, key: &str, value: &str) -> Self {
                set_map_entry(&mut self.0, "labels", key, value);
                self
            }

            pub fn annotation(mut self, key: &str, value: &str) -> Self {
                set_map_entry(&mut self.0, "annotations", key, value);
                self
            }

            /// Merges raw JSON into the object, for what no other method says (e.g. a value that
            /// does not parse).
            pub fn patch(mut self, patch: Value) -> Self {
                merge(&mut self.0, patch);
                self
            }

            pub fn into_value(self) -> Value {
                self.0
            }
        }

        impl From<$name> for Value {
            fn from(builder: $name) -> Value {
                builder.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = Value;

            fn deref(&self) -> &Value {
                &self.0
            }
        }

        impl std::ops::DerefMut for $name {
            fn deref_mut(&mut self) -> &mut Value {
                &mut self.0
            }
        }
    };
}

builder!(
    /// A Pod: see [`pod`].
    PodBuilder
);
builder!(
    /// A Node: see [`node`].
    NodeBuilder
);
builder!(
    /// A RevocableZone: see [`zone`].
    ZoneBuilder
);
builder!(
    /// A Volcano PodGroup: see [`podgroup`].
    PodGroupBuilder
);
builder!(
    /// A DeschedulingPolicy: see [`policy`].
    PolicyBuilder
);
builder!(
    /// A PodDisruptionBudget: see [`pdb`].
    PdbBuilder
);

/// A running pod `namespace/name` (`name` alone: in `default`) on `node`, with one container
/// requesting 100m CPU and 64Mi memory, owned, created, scheduled and started as the module says. An empty
/// `node` makes it pending: unscheduled, with no conditions.
pub fn pod(key: &str, node: &str) -> PodBuilder {
    let (namespace, name) = split_key(key);
    let created = a_day_ago();
    let mut value = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": format!("uid-{namespace}-{name}"),
            "creationTimestamp": created,
            "labels": {},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("rs-{name}"),
                "uid": format!("rs-uid-{name}"), "controller": true
            }]
        },
        "spec": {
            "containers": [{
                "name": "main",
                "image": "example.com/app:1",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}
            }]
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": created},
                {"type": "Ready", "status": "True", "lastTransitionTime": created}
            ]
        }
    });
    if node.is_empty() {
        value["status"]["phase"] = json!("Pending");
        value["status"]["conditions"] = json!([]);
    } else {
        value["spec"]["nodeName"] = json!(node);
        value["status"]["startTime"] = json!(created);
    }
    PodBuilder(value)
}

impl PodBuilder {
    /// The CPU and memory requests of the (first) container.
    pub fn requests(self, cpu: &str, memory: &str) -> Self {
        self.request("cpu", cpu).request("memory", memory)
    }

    /// The request of one resource of the (first) container.
    pub fn request(mut self, resource: &str, amount: &str) -> Self {
        self.0["spec"]["containers"][0]["resources"]["requests"][resource] = json!(amount);
        self
    }

    /// `volcano.sh/preemptable: "true"` as an annotation.
    pub fn preemptable(self) -> Self {
        self.annotation("volcano.sh/preemptable", "true")
    }

    /// Replaces the controller owner (the pod's job for budgets, unless it is in a PodGroup).
    pub fn owned_by(mut self, kind: &str, name: &str) -> Self {
        self.0["metadata"]["ownerReferences"] = json!([{
            "apiVersion": "apps/v1", "kind": kind, "name": name,
            "uid": format!("uid-{kind}-{name}"), "controller": true
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

    /// A member of Volcano PodGroup `group` in its namespace (its job for budgets).
    pub fn in_group(self, group: &str) -> Self {
        self.annotation("scheduling.k8s.io/group-name", group)
    }

    pub fn priority(mut self, priority: i32) -> Self {
        self.0["spec"]["priority"] = json!(priority);
        self
    }

    pub fn qos(mut self, qos: &str) -> Self {
        self.0["status"]["qosClass"] = json!(qos);
        self
    }

    pub fn phase(mut self, phase: &str) -> Self {
        self.0["status"]["phase"] = json!(phase);
        self
    }

    /// The creation time (RFC 3339), and the start time of a pod bound to a node; when it was
    /// scheduled stays as it was.
    pub fn created(mut self, at: &str) -> Self {
        self.0["metadata"]["creationTimestamp"] = json!(at);
        if self.0["status"].get("startTime").is_some() {
            self.0["status"]["startTime"] = json!(at);
        }
        self
    }

    /// Scheduled at `at` (RFC 3339): the time of the `PodScheduled` condition, which a pod without one
    /// gets.
    pub fn scheduled_at(mut self, at: &str) -> Self {
        let scheduled = json!({"type": "PodScheduled", "status": "True", "lastTransitionTime": at});
        let status = &mut self.0["status"];
        if !status.get("conditions").is_some_and(Value::is_array) {
            status["conditions"] = json!([]);
        }
        if let Some(conditions) = status["conditions"].as_array_mut() {
            match conditions.iter_mut().find(|c| c["type"] == "PodScheduled") {
                Some(condition) => *condition = scheduled,
                None => conditions.push(scheduled),
            }
        }
        self
    }

    /// Told at `at` (RFC 3339) that a drain evicts it: tidal's `tidal.dev/EvictionNotice` condition.
    pub fn noticed_at(mut self, at: &str) -> Self {
        let notice =
            json!({"type": "tidal.dev/EvictionNotice", "status": "True", "lastTransitionTime": at});
        let status = &mut self.0["status"];
        if !status.get("conditions").is_some_and(Value::is_array) {
            status["conditions"] = json!([]);
        }
        if let Some(conditions) = status["conditions"].as_array_mut() {
            conditions.retain(|c| c["type"] != "tidal.dev/EvictionNotice");
            conditions.push(notice);
        }
        self
    }

    /// Scheduled at the kit's clock: inside any cooldown.
    pub fn just_scheduled(self) -> Self {
        self.scheduled_at(&rfc3339(super::now()))
    }

    pub fn image(mut self, image: &str) -> Self {
        self.0["spec"]["containers"][0]["image"] = json!(image);
        self
    }

    /// Sets a field of the spec (`nodeSelector`, `affinity`, `tolerations`, ...) to a JSON value.
    pub fn spec(mut self, field: &str, value: Value) -> Self {
        self.0["spec"][field] = value;
        self
    }

    /// Sets a field of the status (`containerStatuses`, `reason`, `conditions`, ...) to a JSON value.
    pub fn status(mut self, field: &str, value: Value) -> Self {
        self.0["status"][field] = value;
        self
    }

    /// Being deleted since the kit's clock (`deletionTimestamp`).
    pub fn terminating(mut self) -> Self {
        self.0["metadata"]["deletionTimestamp"] = json!(rfc3339(super::now()));
        self
    }
}

/// A ready, schedulable node of 8 cores, 32Gi and 110 pod slots.
pub fn node(name: &str) -> NodeBuilder {
    NodeBuilder(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}]
        }
    }))
}

impl NodeBuilder {
    /// Allocatable CPU (cores or millicores), memory and pod slots.
    pub fn allocatable(mut self, cpu: &str, memory: &str, pods: u32) -> Self {
        let allocatable = &mut self.0["status"]["allocatable"];
        allocatable["cpu"] = json!(cpu);
        allocatable["memory"] = json!(memory);
        allocatable["pods"] = json!(pods.to_string());
        self
    }

    /// Allocatable amount of one resource (`cpu`, `nvidia.com/gpu`, ...).
    pub fn resource(mut self, resource: &str, amount: &str) -> Self {
        self.0["status"]["allocatable"][resource] = json!(amount);
        self
    }

    /// Member of RevocableZone `zone` (label `volcano.sh/revocable-zone`).
    pub fn zone(self, zone: &str) -> Self {
        self.label("volcano.sh/revocable-zone", zone)
    }

    /// Adds a taint, after those the node has.
    pub fn taint(mut self, key: &str, value: &str, effect: &str) -> Self {
        let spec = &mut self.0["spec"];
        if !spec.get("taints").is_some_and(Value::is_array) {
            spec["taints"] = json!([]);
        }
        if let Some(taints) = spec["taints"].as_array_mut() {
            taints.push(json!({"key": key, "value": value, "effect": effect}));
        }
        self
    }

    pub fn unschedulable(mut self) -> Self {
        self.0["spec"]["unschedulable"] = json!(true);
        self
    }

    pub fn not_ready(mut self) -> Self {
        self.0["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
        self
    }
}

/// A RevocableZone with no windows yet (UTC unless its spec says otherwise); nodes join it with
/// [`NodeBuilder::zone`].
pub fn zone(name: &str) -> ZoneBuilder {
    ZoneBuilder(json!({
        "apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone",
        "metadata": {"name": name}, "spec": {"windows": []},
    }))
}

impl ZoneBuilder {
    /// Adds a window open `"HH:MM-HH:MM"`, in the zone's time zone.
    pub fn window(mut self, time: &str) -> Self {
        if let Some(windows) = self.0["spec"]["windows"].as_array_mut() {
            windows.push(json!({"time": time}));
        }
        self
    }

    /// The least time between two eviction rounds (`spec.evictPeriod`, a Go duration).
    pub fn evict_period(mut self, period: &str) -> Self {
        self.0["spec"]["evictPeriod"] = json!(period);
        self
    }

    /// Merges `patch` into the spec.
    pub fn spec(mut self, patch: Value) -> Self {
        merge(&mut self.0["spec"], patch);
        self
    }

    pub fn status(mut self, status: Value) -> Self {
        self.0["status"] = status;
        self
    }
}

/// A Volcano PodGroup `namespace/name` (`name` alone: in `default`) with `minMember: 1`; its budget
/// and preemptable settings are annotations.
pub fn podgroup(key: &str) -> PodGroupBuilder {
    let (namespace, name) = split_key(key);
    PodGroupBuilder(json!({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace}, "spec": {"minMember": 1},
    }))
}

/// DeschedulingPolicy `p`, in DryRun, running TDM with default arguments, with `spec_patch` merged into
/// its spec (`mode`, `interval`, strategies, ...).
pub fn policy(spec_patch: Value) -> PolicyBuilder {
    let mut value = json!({
        "apiVersion": "tidal.dev/v1alpha1", "kind": "DeschedulingPolicy",
        "metadata": {"name": "p"},
        "spec": {"mode": "DryRun", "strategies": {"tdm": {}}},
    });
    merge(&mut value["spec"], spec_patch);
    PolicyBuilder(value)
}

impl PolicyBuilder {
    pub fn named(mut self, name: &str) -> Self {
        self.0["metadata"]["name"] = json!(name);
        self
    }
}

/// A PodDisruptionBudget `namespace/name` (`name` alone: in `default`) over the pods labelled
/// `app=<app>`, of `minAvailable: 1`.
pub fn pdb(key: &str, app: &str) -> PdbBuilder {
    let (namespace, name) = split_key(key);
    PdbBuilder(json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
    }))
}

impl PdbBuilder {
    /// `minAvailable: count`, in place of any other bound.
    pub fn min_available(self, count: i64) -> Self {
        self.bound("minAvailable", count)
    }

    /// `maxUnavailable: count`, in place of any other bound.
    pub fn max_unavailable(self, count: i64) -> Self {
        self.bound("maxUnavailable", count)
    }

    fn bound(mut self, field: &str, count: i64) -> Self {
        if let Some(spec) = self.0["spec"].as_object_mut() {
            spec.remove("minAvailable");
            spec.remove("maxUnavailable");
            spec.insert(field.to_owned(), json!(count));
        }
        self
    }

    pub fn status(mut self, status: Value) -> Self {
        self.0["status"] = status;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variations_land_where_the_api_server_puts_them() {
        let p = pod("ns/p", "n1")
            .preemptable()
            .owned_by("Job", "job")
            .label("app", "web")
            .scheduled_at("2026-11-22T03:00:00Z")
            .patch(json!({"spec": {"priority": 5}}));
        assert_eq!(
            p["metadata"]["annotations"]["volcano.sh/preemptable"],
            "true"
        );
        assert_eq!(p["metadata"]["ownerReferences"][0]["name"], "job");
        assert_eq!(p["metadata"]["labels"]["app"], "web");
        assert_eq!(p["status"]["conditions"][0]["type"], "PodScheduled");
        assert_eq!(
            p["status"]["conditions"][0]["lastTransitionTime"],
            "2026-11-22T03:00:00Z"
        );
        assert_eq!(p["status"]["conditions"][1]["type"], "Ready", "kept");
        assert_eq!(p["spec"]["priority"], 5);
        assert_eq!(p["spec"]["containers"][0]["name"], "main");
    }

    #[test]
    fn a_pod_is_created_and_scheduled_a_day_before_the_kits_clock() {
        let p = pod("p", "n1");
        assert_eq!(p["metadata"]["namespace"], "default");
        let created = &p["metadata"]["creationTimestamp"];
        assert_eq!(p["status"]["conditions"][0]["lastTransitionTime"], *created);
        let created: Timestamp = created.as_str().unwrap().parse().unwrap();
        let age = super::super::now().duration_since(created);
        assert!(
            age >= SignedDuration::from_hours(24) && age < SignedDuration::from_hours(25),
            "{age:?}"
        );
        let pending = pod("p", "").scheduled_at("2026-11-22T03:00:00Z");
        assert_eq!(pending["status"]["phase"], "Pending");
        assert_eq!(pending["status"]["conditions"][0]["type"], "PodScheduled");
    }

    #[test]
    fn a_pdb_has_one_bound() {
        let budget = pdb("ns/b", "db").max_unavailable(2);
        assert_eq!(budget["spec"]["maxUnavailable"], 2);
        assert!(budget["spec"].get("minAvailable").is_none());
    }
}
