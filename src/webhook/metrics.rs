//! The webhook's Prometheus metrics (served on `--metrics-bind-address` at `/metrics`).

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

use super::review::Endpoint;
use crate::{cluster::ObjectKind, runtime::watch::WatchObserver};

/// How a request was answered.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Outcome {
    /// Allowed without change.
    Allowed,
    /// Allowed with a patch.
    Patched,
    Denied,
    /// Allowed unchecked because the cache was still syncing.
    NotReady,
    /// The body was not an AdmissionReview (HTTP 400).
    Malformed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Allowed => "allowed",
            Outcome::Patched => "patched",
            Outcome::Denied => "denied",
            Outcome::NotReady => "not_ready",
            Outcome::Malformed => "malformed",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    endpoint: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabels {
    endpoint: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    duration: Family<EndpointLabels, Histogram>,
    /// Requests that waited for an object to reach the cache, and those that gave up waiting.
    waits: Family<EndpointLabels, Counter>,
    cert_reloads: Counter,
    /// Large bodies cut off for arriving too slowly while another body needed their memory.
    bodies_cut_off: Counter,
    cache_synced: Gauge,
    watch_errors: Family<KindLabels, Counter>,
    unreadable_objects: Family<KindLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("tidal_webhook");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "Admission requests by endpoint and outcome",
            requests.clone(),
        );
        let duration = Family::<EndpointLabels, Histogram>::new_with_constructor(|| {
            // 50µs to ~3s: decisions take microseconds, a wait for a lagging cache up to a second.
            Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
                0.000_05, 3.0, 11,
            ))
        });
        registry.register(
            "request_duration_seconds",
            "Time to answer an admission request, from body received to answer built",
            duration.clone(),
        );
        let waits = Family::<EndpointLabels, Counter>::default();
        registry.register(
            "cache_waits",
            "Requests that waited for a pod, node or PodGroup to reach the cache",
            waits.clone(),
        );
        let cert_reloads = Counter::default();
        registry.register(
            "certificate_reloads",
            "Times the serving certificate was reloaded from its files",
            cert_reloads.clone(),
        );
        let bodies_cut_off = Counter::default();
        registry.register(
            "bodies_cut_off",
            "Large request bodies answered 408 because they arrived too slowly while another body needed their memory",
            bodies_cut_off.clone(),
        );
        let cache_synced = Gauge::default();
        registry.register(
            "cache_synced",
            "1 when every watched kind has completed its list",
            cache_synced.clone(),
        );
        let watch_errors = Family::<KindLabels, Counter>::default();
        registry.register(
            "watch_errors",
            "Watch errors by kind (the watcher retries with backoff)",
            watch_errors.clone(),
        );
        let unreadable_objects = Family::<KindLabels, Counter>::default();
        registry.register(
            "watch_unreadable_objects",
            "Objects left out because they cannot be read (the rest of their kind is)",
            unreadable_objects.clone(),
        );
        Metrics {
            registry,
            requests,
            duration,
            waits,
            cert_reloads,
            bodies_cut_off,
            cache_synced,
            watch_errors,
            unreadable_objects,
        }
    }

    pub fn observe(&self, endpoint: Endpoint, outcome: Outcome, seconds: f64) {
        let endpoint = endpoint.as_str();
        self.requests
            .get_or_create(&RequestLabels {
                endpoint,
                outcome: outcome.as_str(),
            })
            .inc();
        self.duration
            .get_or_create(&EndpointLabels { endpoint })
            .observe(seconds);
    }

    pub fn waited(&self, endpoint: Endpoint) {
        self.waits
            .get_or_create(&EndpointLabels {
                endpoint: endpoint.as_str(),
            })
            .inc();
    }

    pub fn cert_reloaded(&self) {
        self.cert_reloads.inc();
    }

    pub fn body_cut_off(&self) {
        self.bodies_cut_off.inc();
    }

    pub fn set_synced(&self, synced: bool) {
        self.cache_synced.set(i64::from(synced));
    }

    /// Requests answered so far with `outcome` on `endpoint`.
    pub fn count(&self, endpoint: Endpoint, outcome: Outcome) -> u64 {
        self.requests
            .get_or_create(&RequestLabels {
                endpoint: endpoint.as_str(),
                outcome: outcome.as_str(),
            })
            .get()
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

impl WatchObserver for Metrics {
    fn watch_error(&self, kind: ObjectKind) {
        self.watch_errors
            .get_or_create(&KindLabels {
                kind: kind.as_str(),
            })
            .inc();
    }

    fn unreadable(&self, kind: ObjectKind) {
        self.unreadable_objects
            .get_or_create(&KindLabels {
                kind: kind.as_str(),
            })
            .inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_names_endpoints_and_outcomes() {
        let metrics = Metrics::new();
        metrics.observe(Endpoint::ValidateBindings, Outcome::Denied, 0.0002);
        metrics.observe(Endpoint::MutatePods, Outcome::NotReady, 0.0001);
        metrics.watch_error(ObjectKind::Pod);
        metrics.unreadable(ObjectKind::RevocableZone);
        metrics.body_cut_off();
        assert_eq!(
            metrics.count(Endpoint::ValidateBindings, Outcome::Denied),
            1
        );
        let text = metrics.encode();
        for line in [
            r#"tidal_webhook_requests_total{endpoint="validate-bindings",outcome="denied"} 1"#,
            r#"tidal_webhook_requests_total{endpoint="mutate-pods",outcome="not_ready"} 1"#,
            r#"tidal_webhook_request_duration_seconds_count{endpoint="validate-bindings"} 1"#,
            r#"tidal_webhook_watch_errors_total{kind="Pod"} 1"#,
            r#"tidal_webhook_watch_unreadable_objects_total{kind="RevocableZone"} 1"#,
            "tidal_webhook_bodies_cut_off_total 1",
        ] {
            assert!(text.contains(line), "{line} missing from\n{text}");
        }
    }
}
