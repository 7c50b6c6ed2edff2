//! Objects decoded one by one, so that one the API server serves but tidal cannot read never fails
//! its kind's list or watch (which would otherwise fail again on every retry, and leave the
//! controller and the webhook never ready). Times beyond tidal's range are read as its latest
//! instant (`cluster::decode`); anything else that fails leaves the object out, with its metadata
//! kept so that the watch can still name it, count it, and apply its deletion.

use std::{borrow::Cow, fmt};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::{Deserialize, Deserializer, de::DeserializeOwned};
use serde_json::Value;

use crate::cluster::ingest::decode;

/// One object of kind `K` as the API server sent it.
#[derive(Clone, Debug)]
pub enum Lenient<K> {
    /// Read; `clamped` lists the fields read as tidal's latest instant.
    Read { object: K, clamped: Vec<String> },
    /// Not readable: why, and whatever of its metadata could be read.
    Unreadable {
        meta: Box<ObjectMeta>,
        error: String,
    },
}

impl<K> Lenient<K> {
    /// Decodes `value` as `K`, or says why not.
    pub fn from_value(value: Value) -> Self
    where
        K: DeserializeOwned,
    {
        let meta = value
            .get("metadata")
            .and_then(|m| ObjectMeta::deserialize(m).ok())
            .unwrap_or_default();
        match decode::typed_lenient::<K>(value) {
            Ok((object, clamped)) => Lenient::Read { object, clamped },
            Err(error) => Lenient::Unreadable {
                meta: Box::new(meta),
                error,
            },
        }
    }

    /// An object whose bytes could not be decoded at all (protobuf).
    pub fn undecodable(error: impl fmt::Display) -> Self {
        Lenient::Unreadable {
            meta: Box::default(),
            error: error.to_string(),
        }
    }
}

impl<'de, K: DeserializeOwned> Deserialize<'de> for Lenient<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Lenient::from_value)
    }
}

impl<K: Resource<DynamicType = ()>> Resource for Lenient<K> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }
    fn api_version(dt: &()) -> Cow<'_, str> {
        K::api_version(dt)
    }
    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn meta(&self) -> &ObjectMeta {
        match self {
            Lenient::Read { object, .. } => object.meta(),
            Lenient::Unreadable { meta, .. } => meta,
        }
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Lenient::Read { object, .. } => object.meta_mut(),
            Lenient::Unreadable { meta, .. } => meta,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::RevocableZone;
    use serde_json::json;

    fn zone(status: Value) -> Value {
        json!({"apiVersion": "tidal.dev/v1alpha1", "kind": "RevocableZone",
               "metadata": {"name": "z", "resourceVersion": "7"},
               "spec": {"windows": [{"time": "08:00-20:00"}]}, "status": status})
    }

    #[test]
    fn a_time_past_9999_is_read_and_anything_else_keeps_the_name() {
        let read: Lenient<RevocableZone> =
            serde_json::from_value(zone(json!({"nextChange": "9999-12-31T23:59:59Z"}))).unwrap();
        assert!(
            matches!(&read, Lenient::Read { clamped, .. } if clamped == &["status.nextChange 9999-12-31T23:59:59Z"]),
            "{read:?}"
        );
        let bad: Lenient<RevocableZone> =
            serde_json::from_value(zone(json!({"nodes": "many"}))).unwrap();
        assert!(
            matches!(&bad, Lenient::Unreadable { error, .. } if error.starts_with("status.nodes")),
            "{bad:?}"
        );
        assert_eq!(bad.meta().name.as_deref(), Some("z"));
        // A list page with one unreadable object still yields the others.
        let page: kube::core::ObjectList<Lenient<RevocableZone>> = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "9"},
            "items": [zone(json!({"nodes": "many"})), zone(json!({}))]}))
        .unwrap();
        assert_eq!(page.items.len(), 2);
        assert!(matches!(page.items[1], Lenient::Read { .. }));
    }
}
