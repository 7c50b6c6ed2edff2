//! The resource metrics API (`metrics.k8s.io/v1beta1`, served by metrics-server): what tidal reads to
//! measure actual usage. Read only; the types implement `kube::Resource` so that a client can list them.

use std::{borrow::Cow, collections::BTreeMap};

use k8s_openapi::apimachinery::pkg::{
    api::resource::Quantity,
    apis::meta::v1::{ObjectMeta, Time},
};
use serde::{Deserialize, Serialize};

const GROUP: &str = "metrics.k8s.io";
const VERSION: &str = "v1beta1";

/// A node's usage over `window`, ending at `timestamp`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeMetrics {
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub timestamp: Option<Time>,
    /// A Go duration, e.g. `20.043s`.
    pub window: Option<String>,
    #[serde(default)]
    pub usage: BTreeMap<String, Quantity>,
}

/// A pod's usage, per container.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodMetrics {
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub timestamp: Option<Time>,
    pub window: Option<String>,
    #[serde(default)]
    pub containers: Vec<ContainerMetrics>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub(crate) struct ContainerMetrics {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub usage: BTreeMap<String, Quantity>,
}

macro_rules! metrics_resource {
    ($type:ty, $kind:literal, $plural:literal, $scope:ty) => {
        impl kube::Resource for $type {
            type DynamicType = ();
            type Scope = $scope;

            fn kind(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($kind)
            }
            fn group(_: &()) -> Cow<'_, str> {
                Cow::Borrowed(GROUP)
            }
            fn version(_: &()) -> Cow<'_, str> {
                Cow::Borrowed(VERSION)
            }
            fn plural(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($plural)
            }
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

metrics_resource!(
    NodeMetrics,
    "NodeMetrics",
    "nodes",
    k8s_openapi::ClusterResourceScope
);
metrics_resource!(
    PodMetrics,
    "PodMetrics",
    "pods",
    k8s_openapi::NamespaceResourceScope
);
