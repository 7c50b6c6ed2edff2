//! How lowNodeUtilization and highNodeUtilization are told to measure a node (`usage`) and what they
//! compare it with (`thresholds`): arguments both strategies take.

// The schema derives (KubeSchema, JsonSchema) copy each type's visibility into items they generate,
// which `unreachable_pub` then reports; these are public CRD types.
#![allow(unreachable_pub)]

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::GoDuration;

/// Percentages per resource name (`cpu`, `memory`, `pods`, or an extended resource).
pub type Thresholds = BTreeMap<String, f64>;

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum UsageSource {
    /// Sum of the requests of the pods on the node (what the scheduler counts).
    #[default]
    Requests,
    /// CPU and memory measured by metrics-server (`metrics.k8s.io` NodeMetrics and PodMetrics),
    /// averaged over `window`; pods and extended resources still from requests.
    Metrics,
    /// One number per node from a Prometheus instant query (`query`), as the descheduler reads it:
    /// samples labelled `instance` with the node name, values in [0, 1]. Thresholds then list the
    /// one resource `MetricResource` (percent of 1). A pod's share is unknown, so each overutilized
    /// node loses one pod per cycle (or `evictionLimits.node`).
    Prometheus,
}

/// The resource thresholds name for a Prometheus query's value.
pub const METRIC_RESOURCE: &str = "MetricResource";

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageArgs {
    /// `Requests` (default): the sum of the pods' requests; `Metrics`: CPU and memory measured by
    /// metrics-server.
    #[serde(default)]
    pub source: UsageSource,
    /// With `Metrics`: average the samples of this long a window before the cycle.
    #[serde(default = "default_window")]
    pub window: GoDuration,
    /// With `Prometheus`: the PromQL instant query (`tidal run --prometheus-url` says where).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
}

impl Default for UsageArgs {
    fn default() -> Self {
        UsageArgs {
            source: UsageSource::Requests,
            window: default_window(),
            query: None,
        }
    }
}

fn default_window() -> GoDuration {
    GoDuration::from_secs(300)
}
