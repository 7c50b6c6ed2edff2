//! Prometheus metrics of the controller (prometheus-client, OpenMetrics text on `/metrics`).
//! Each metric's meaning is documented in docs/controller.md; keep the two in step.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
    sync::{Mutex, atomic::AtomicU64},
};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

use axum::{Router, extract::State, http::header, response::IntoResponse, routing::get};

use crate::{
    cluster::{ObjectKind, SharedCache},
    runtime::{leader::LeaderHandle, watch::WatchObserver},
};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ZoneLabel {
    pub zone: String,
}

/// One zone's state, for a Grafana state panel.
#[derive(Clone, Debug, PartialEq)]
pub struct ZoneGauges {
    pub zone: String,
    pub open: bool,
    pub draining: bool,
    /// Unix seconds of the next open/close change, if there is one.
    pub next_change: Option<f64>,
    pub preemptable_pods: u32,
}

/// One zone's drain, for alerts on a close that will be missed.
#[derive(Clone, Debug, PartialEq)]
pub struct DrainGauges {
    pub zone: String,
    pub remaining_pods: u32,
    /// Unix seconds at which the zone is expected empty; `None` when some pods would never leave.
    pub expected_empty: Option<f64>,
    /// Seconds from the expected empty zone to the close; `None` without a close ahead.
    pub margin: Option<f64>,
    pub at_risk: bool,
    /// Unix seconds at which the drain for the close starts (or started).
    pub start: Option<f64>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct BuildLabels {
    pub version: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct PolicyStrategy {
    pub policy: String,
    pub strategy: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct EvictionLabels {
    pub policy: String,
    pub strategy: String,
    /// `evicted`, `evicted_unconfirmed`, `dry_run`, `unverified`, `refused`, `gone`, `replaced`,
    /// `failed`, `abandoned`.
    pub result: String,
    /// The revocable zone the eviction was about, or empty.
    pub zone: String,
}

/// One planned eviction's tally key: its series of `tidal_evictions_total`, and the namespace and node
/// it counts under in the two per-place counters (kept apart, so that their series are namespaces
/// plus nodes, never namespaces times nodes times policies).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EvictionKey {
    pub series: EvictionLabels,
    pub namespace: String,
    /// Empty for a pod on no node.
    pub node: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NamespaceResult {
    pub namespace: String,
    pub result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodeLabel {
    pub node: String,
}

impl EvictionKey {
    /// The key of `candidate`'s eviction under `policy`, with its final `result`.
    pub fn of(policy: &str, candidate: &crate::framework::Candidate, result: &str) -> Self {
        EvictionKey {
            series: EvictionLabels {
                policy: policy.to_owned(),
                strategy: candidate.strategy.to_string(),
                result: result.to_owned(),
                zone: candidate.zone.clone().unwrap_or_default(),
            },
            namespace: candidate.pod.key.namespace.to_string(),
            node: candidate
                .pod
                .node_name
                .as_deref()
                .unwrap_or_default()
                .to_owned(),
        }
    }
}

/// The results that took a pod off its node.
const EVICTED: [&str; 2] = ["evicted", "evicted_unconfirmed"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct SkipLabels {
    pub policy: String,
    pub gate: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ZoneResult {
    pub(crate) zone: String,
    pub(crate) result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabel {
    pub kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    pub result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TriggerLabel {
    /// `interval`, `zone`, `config` or `leader`: what started the cycle.
    pub trigger: String,
}

pub struct Metrics {
    registry: Registry,
    pub cycles: Family<TriggerLabel, Counter>,
    pub cycle_duration: Histogram,
    pub plan_duration: Histogram,
    pub strategy_duration: Family<PolicyStrategy, Histogram, fn() -> Histogram>,
    pub last_cycle: Gauge<f64, AtomicU64>,
    pub planned: Family<PolicyStrategy, Counter>,
    pub evictions: Family<EvictionLabels, Counter>,
    /// Planned evictions by namespace and final result.
    pub evictions_by_namespace: Family<NamespaceResult, Counter>,
    /// Pods evicted, by the node they left: one series per node that lost a pod.
    pub evicted_by_node: Family<NodeLabel, Counter>,
    pub skips: Family<SkipLabels, Counter>,
    pub cache_objects: Family<KindLabel, Gauge>,
    pub watch_errors: Family<KindLabel, Counter>,
    pub unreadable_objects: Family<KindLabel, Counter>,
    pub relists: Family<KindLabel, Counter>,
    pub status_errors: Family<KindLabel, Counter>,
    pub usage_polls: Family<ResultLabel, Counter>,
    pub leader: Gauge,
    pub synced: Gauge,
    zone_open: Family<ZoneLabel, Gauge>,
    zone_draining: Family<ZoneLabel, Gauge>,
    zone_next_change: Family<ZoneLabel, Gauge<f64, AtomicU64>>,
    zone_preemptable: Family<ZoneLabel, Gauge>,
    drain_remaining: Family<ZoneLabel, Gauge>,
    drain_expected_empty: Family<ZoneLabel, Gauge<f64, AtomicU64>>,
    drain_margin: Family<ZoneLabel, Gauge<f64, AtomicU64>>,
    drain_at_risk: Family<ZoneLabel, Gauge>,
    drain_start: Family<ZoneLabel, Gauge<f64, AtomicU64>>,
    /// Work the drains' evictions threw away, in pod-seconds, by zone.
    drain_work_lost: Family<ZoneLabel, Counter<f64, AtomicU64>>,
    notices: Family<ZoneResult, Counter>,
    /// The per-policy series created so far, so that a deleted policy's can be dropped.
    policy_series: Mutex<BTreeMap<String, BTreeSet<PolicySeries>>>,
}

/// A series of one of the per-policy counters.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum PolicySeries {
    Planned(PolicyStrategy),
    Eviction(EvictionLabels),
    Skip(SkipLabels),
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("tidal");
        let cycles = Family::<TriggerLabel, Counter>::default();
        registry.register(
            "cycles",
            "Planning cycles run by the leader, by what started them",
            cycles.clone(),
        );
        let cycle_duration = Histogram::new(exponential_buckets(0.005, 2.0, 14));
        registry.register(
            "cycle_duration_seconds",
            "Duration of a whole cycle: snapshot, planning, evictions, status",
            cycle_duration.clone(),
        );
        // Snapshot and planning only, no I/O: the part tidal controls, readable on a live cluster.
        let plan_duration = Histogram::new(exponential_buckets(0.001, 2.0, 14));
        registry.register(
            "plan_duration_seconds",
            "Duration of a cycle's snapshot update and planning (no API calls)",
            plan_duration.clone(),
        );
        // Which strategy of which policy the planning time goes to.
        let strategy_duration =
            Family::<PolicyStrategy, Histogram, fn() -> Histogram>::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0005, 2.0, 14))
            });
        registry.register(
            "strategy_duration_seconds",
            "Duration of one strategy's proposals and their gates within a policy's plan",
            strategy_duration.clone(),
        );
        let last_cycle = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "last_cycle_timestamp_seconds",
            "Unix time at which the last cycle planned",
            last_cycle.clone(),
        );
        let planned = Family::<PolicyStrategy, Counter>::default();
        registry.register(
            "planned_evictions",
            "Evictions planned (passed every gate), by policy and strategy",
            planned.clone(),
        );
        let evictions = Family::<EvictionLabels, Counter>::default();
        registry.register(
            "evictions",
            "Planned evictions by final result (evicted, evicted_unconfirmed, dry_run: verified by a dry run, unverified: a DryRun policy's eviction not checked this cycle, refused, gone, replaced, failed, or abandoned: an Evict policy's eviction never sent or cut off), policy, strategy and zone",
            evictions.clone(),
        );
        let evictions_by_namespace = Family::<NamespaceResult, Counter>::default();
        registry.register(
            "evictions_by_namespace",
            "Planned evictions by namespace and final result (the results of tidal_evictions_total)",
            evictions_by_namespace.clone(),
        );
        let evicted_by_node = Family::<NodeLabel, Counter>::default();
        registry.register(
            "evicted_by_node",
            "Pods evicted (evicted or evicted_unconfirmed), by the node they left",
            evicted_by_node.clone(),
        );
        let skips = Family::<SkipLabels, Counter>::default();
        registry.register(
            "skips",
            "Candidates not evicted, by the gate that stopped them (including pdb at eviction time)",
            skips.clone(),
        );
        let cache_objects = Family::<KindLabel, Gauge>::default();
        registry.register(
            "cache_objects",
            "Objects in the controller's cache, by kind (in_flight: pods evicted or answered gone, deletion not seen yet)",
            cache_objects.clone(),
        );
        let watch_errors = Family::<KindLabel, Counter>::default();
        registry.register(
            "watch_errors",
            "Watch errors by kind (the watcher relists or retries after each)",
            watch_errors.clone(),
        );
        let unreadable_objects = Family::<KindLabel, Counter>::default();
        registry.register(
            "watch_unreadable_objects",
            "Objects a list or watch delivered that tidal could not read, by kind: each is left out (and logged once), the rest of its kind is read",
            unreadable_objects.clone(),
        );
        let relists = Family::<KindLabel, Counter>::default();
        registry.register(
            "watch_relists",
            "Completed (re)lists by kind",
            relists.clone(),
        );
        let status_errors = Family::<KindLabel, Counter>::default();
        registry.register(
            "status_write_errors",
            "Failed status or event writes, by kind of object",
            status_errors.clone(),
        );
        let usage_polls = Family::<ResultLabel, Counter>::default();
        registry.register(
            "usage_polls",
            "Polls of metrics.k8s.io for measured usage, by result (ok, unavailable, error)",
            usage_polls.clone(),
        );
        // Which build runs where, for dashboards that compare replicas across a rollout.
        let build_info = Family::<BuildLabels, Gauge>::default();
        registry.register(
            "build_info",
            "Always 1; labels name the build",
            build_info.clone(),
        );
        build_info
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION").to_owned(),
            })
            .set(1);
        let zone_open = Family::<ZoneLabel, Gauge>::default();
        registry.register(
            "zone_open",
            "1 while the zone is inside one of its windows",
            zone_open.clone(),
        );
        let zone_draining = Family::<ZoneLabel, Gauge>::default();
        registry.register(
            "zone_draining",
            "1 while the zone evicts its preemptable pods: closed, or draining ahead of its close",
            zone_draining.clone(),
        );
        let zone_next_change = Family::<ZoneLabel, Gauge<f64, AtomicU64>>::default();
        registry.register(
            "zone_next_change_timestamp_seconds",
            "Unix time of the zone's next open/close change (absent if it never changes)",
            zone_next_change.clone(),
        );
        let zone_preemptable = Family::<ZoneLabel, Gauge>::default();
        registry.register(
            "zone_preemptable_pods",
            "Preemptable pods on the zone's nodes",
            zone_preemptable.clone(),
        );
        let drain_work_lost = Family::<ZoneLabel, Counter<f64, AtomicU64>>::default();
        registry.register(
            "drain_work_lost_seconds",
            "Work thrown away by the drains' evictions, in pod-seconds: for each pod evicted from a \
             closing zone, the time it ran since its start or its last checkpoint \
             (tidal.dev/checkpointed-at)",
            drain_work_lost.clone(),
        );
        let notices = Family::<ZoneResult, Counter>::default();
        registry.register(
            "eviction_notices",
            "Eviction notices given to the preemptable pods of zones with evictionNotice, by result \
             (given, failed)",
            notices.clone(),
        );
        let drain_remaining = Family::<ZoneLabel, Gauge>::default();
        registry.register(
            "zone_drain_remaining_pods",
            "Preemptable pods still on the zone while a close is ahead or it is closed, updated while evictions go out",
            drain_remaining.clone(),
        );
        let drain_expected_empty = Family::<ZoneLabel, Gauge<f64, AtomicU64>>::default();
        registry.register(
            "zone_drain_expected_empty_timestamp_seconds",
            "Unix time at which the zone is expected to hold no preemptable pod (absent when some never leave)",
            drain_expected_empty.clone(),
        );
        let drain_margin = Family::<ZoneLabel, Gauge<f64, AtomicU64>>::default();
        registry.register(
            "zone_drain_margin_seconds",
            "Seconds from the expected empty zone to its close; negative when the close will be missed",
            drain_margin.clone(),
        );
        let drain_at_risk = Family::<ZoneLabel, Gauge>::default();
        registry.register(
            "zone_drain_at_risk",
            "1 when the zone is not expected to be empty at its close (or is closed and still holds pods)",
            drain_at_risk.clone(),
        );
        let drain_start = Family::<ZoneLabel, Gauge<f64, AtomicU64>>::default();
        registry.register(
            "zone_drain_start_timestamp_seconds",
            "Unix time at which the drain for the zone's next close starts or started",
            drain_start.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this replica holds the lease (or runs without election)",
            leader.clone(),
        );
        let synced = Gauge::default();
        registry.register(
            "cache_synced",
            "1 when every watched kind has completed its (re)list",
            synced.clone(),
        );
        Metrics {
            registry,
            cycles,
            cycle_duration,
            plan_duration,
            strategy_duration,
            last_cycle,
            planned,
            evictions,
            evictions_by_namespace,
            evicted_by_node,
            skips,
            cache_objects,
            watch_errors,
            unreadable_objects,
            relists,
            status_errors,
            usage_polls,
            leader,
            synced,
            zone_open,
            zone_draining,
            zone_next_change,
            zone_preemptable,
            drain_remaining,
            drain_work_lost,
            notices,
            drain_expected_empty,
            drain_margin,
            drain_at_risk,
            drain_start,
            policy_series: Mutex::default(),
        }
    }

    fn note_series(&self, policy: &str, series: PolicySeries) {
        self.policy_series
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .entry(policy.to_owned())
            .or_default()
            .insert(series);
    }

    pub fn add_planned(&self, labels: PolicyStrategy, n: u64) {
        self.planned.get_or_create(&labels).inc_by(n);
        self.note_series(&labels.policy.clone(), PolicySeries::Planned(labels));
    }

    pub fn add_evictions(&self, key: EvictionKey, n: u64) {
        let EvictionKey {
            series,
            namespace,
            node,
        } = key;
        self.evictions_by_namespace
            .get_or_create(&NamespaceResult {
                namespace,
                result: series.result.clone(),
            })
            .inc_by(n);
        if EVICTED.contains(&series.result.as_str()) && !node.is_empty() {
            self.evicted_by_node
                .get_or_create(&NodeLabel { node })
                .inc_by(n);
        }
        self.evictions.get_or_create(&series).inc_by(n);
        self.note_series(&series.policy.clone(), PolicySeries::Eviction(series));
    }

    /// A drain's eviction went through at `at`: the pod's work since it was last saved is lost. Called
    /// once per eviction, with its final result, as `tidal_evictions_total` counts it.
    pub fn add_work_lost(
        &self,
        candidate: &crate::framework::Candidate,
        result: &str,
        at: jiff::Timestamp,
    ) {
        let Some(zone) = candidate.drained_zone() else {
            return;
        };
        if !EVICTED.contains(&result) {
            return;
        }
        self.drain_work_lost
            .get_or_create(&ZoneLabel {
                zone: zone.to_owned(),
            })
            .inc_by(candidate.pod.work_since_saved(at).as_secs_f64());
    }

    /// An eviction notice was written to a pod of `zone` (`given`), or could not be (`failed`).
    pub fn add_notice(&self, zone: &str, result: &str) {
        self.notices
            .get_or_create(&ZoneResult {
                zone: zone.to_owned(),
                result: result.to_owned(),
            })
            .inc();
    }

    pub fn add_skips(&self, labels: SkipLabels, n: u64) {
        self.skips.get_or_create(&labels).inc_by(n);
        self.note_series(&labels.policy.clone(), PolicySeries::Skip(labels));
    }

    /// Replaces the per-zone gauges: zones that no longer exist (or cannot be read) drop out.
    pub fn set_zones(&self, zones: &[ZoneGauges]) {
        for family in [&self.zone_open, &self.zone_draining, &self.zone_preemptable] {
            family.clear();
        }
        self.zone_next_change.clear();
        for z in zones {
            let label = ZoneLabel {
                zone: z.zone.clone(),
            };
            self.zone_open.get_or_create(&label).set(i64::from(z.open));
            self.zone_draining
                .get_or_create(&label)
                .set(i64::from(z.draining));
            self.zone_preemptable
                .get_or_create(&label)
                .set(i64::from(z.preemptable_pods));
            if let Some(at) = z.next_change {
                self.zone_next_change.get_or_create(&label).set(at);
            }
        }
    }

    /// Replaces the drain series: zones without a drain ahead have none.
    pub fn set_drains(&self, drains: &[DrainGauges]) {
        self.drain_remaining.clear();
        self.drain_at_risk.clear();
        for family in [
            &self.drain_expected_empty,
            &self.drain_margin,
            &self.drain_start,
        ] {
            family.clear();
        }
        for drain in drains {
            let label = ZoneLabel {
                zone: drain.zone.clone(),
            };
            self.drain_remaining
                .get_or_create(&label)
                .set(i64::from(drain.remaining_pods));
            self.drain_at_risk
                .get_or_create(&label)
                .set(i64::from(drain.at_risk));
            for (family, value) in [
                (&self.drain_expected_empty, drain.expected_empty),
                (&self.drain_margin, drain.margin),
                (&self.drain_start, drain.start),
            ] {
                if let Some(value) = value {
                    family.get_or_create(&label).set(value);
                }
            }
        }
    }

    /// Drops the per-policy series of every policy not in `current` (deleted ones): a dashboard
    /// should not show a policy that no longer exists.
    pub fn retain_policies<'a>(&self, current: impl IntoIterator<Item = &'a String>) {
        let current: BTreeSet<&String> = current.into_iter().collect();
        let mut all = self
            .policy_series
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        all.retain(|policy, series| {
            if current.contains(policy) {
                return true;
            }
            for series in series.iter() {
                match series {
                    PolicySeries::Planned(labels) => self.planned.remove(labels),
                    PolicySeries::Eviction(labels) => self.evictions.remove(labels),
                    PolicySeries::Skip(labels) => self.skips.remove(labels),
                };
            }
            false
        });
    }

    pub fn set_cache_sizes(&self, nodes: usize, pods: usize, in_flight: usize) {
        for (kind, n) in [("nodes", nodes), ("pods", pods), ("in_flight", in_flight)] {
            self.cache_objects
                .get_or_create(&KindLabel {
                    kind: kind.to_owned(),
                })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

fn kind(kind: ObjectKind) -> KindLabel {
    KindLabel {
        kind: kind.as_str().to_owned(),
    }
}

impl WatchObserver for Metrics {
    fn watch_error(&self, object: ObjectKind) {
        self.watch_errors.get_or_create(&kind(object)).inc();
    }

    fn unreadable(&self, object: ObjectKind) {
        self.unreadable_objects.get_or_create(&kind(object)).inc();
    }

    fn relisted(&self, object: ObjectKind, _removed: usize) {
        self.relists.get_or_create(&kind(object)).inc();
    }

    fn usage_polled(&self, result: &'static str) {
        self.usage_polls
            .get_or_create(&ResultLabel {
                result: result.to_owned(),
            })
            .inc();
    }
}

/// What `/metrics` reads; gauges that describe the present are refreshed at scrape time.
#[derive(Clone)]
pub(crate) struct MetricsState {
    pub metrics: Arc<Metrics>,
    pub cache: SharedCache,
    pub leader: LeaderHandle,
}

pub(crate) fn router(state: MetricsState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .with_state(state)
}

async fn metrics(State(state): State<MetricsState>) -> impl IntoResponse {
    let m = &state.metrics;
    m.leader.set(i64::from(state.leader.is_leader()));
    m.synced.set(i64::from(state.cache.is_synced()));
    {
        let cache = state.cache.read();
        m.set_cache_sizes(
            cache.node_count(),
            cache.pod_count(),
            cache.evicting_count(),
        );
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        m.encode(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_policy_s_series_are_dropped() {
        let metrics = Metrics::new();
        for policy in ["kept", "deleted"] {
            metrics.add_skips(
                SkipLabels {
                    policy: policy.into(),
                    gate: "budget".into(),
                },
                1,
            );
            metrics.add_planned(
                PolicyStrategy {
                    policy: policy.into(),
                    strategy: "tdm".into(),
                },
                1,
            );
        }
        metrics.retain_policies(&["kept".to_owned()]);
        let text = metrics.encode();
        assert!(text.contains(r#"policy="kept""#), "{text}");
        assert!(!text.contains(r#"policy="deleted""#), "{text}");
    }

    #[test]
    fn evictions_count_by_namespace_and_by_node_apart() {
        let metrics = Metrics::new();
        let key = |namespace: &str, node: &str, result: &str| EvictionKey {
            series: EvictionLabels {
                policy: "p".into(),
                strategy: "tdm".into(),
                result: result.into(),
                zone: String::new(),
            },
            namespace: namespace.into(),
            node: node.into(),
        };
        metrics.add_evictions(key("batch", "n1", "evicted"), 2);
        metrics.add_evictions(key("batch", "n2", "evicted_unconfirmed"), 1);
        metrics.add_evictions(key("web", "n1", "refused"), 1);
        let text = metrics.encode();
        for line in [
            r#"tidal_evictions_by_namespace_total{namespace="batch",result="evicted"} 2"#,
            r#"tidal_evictions_by_namespace_total{namespace="web",result="refused"} 1"#,
            r#"tidal_evicted_by_node_total{node="n1"} 2"#,
            r#"tidal_evicted_by_node_total{node="n2"} 1"#,
            r#"tidal_evictions_total{policy="p",strategy="tdm",result="evicted",zone=""} 2"#,
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
        // A refusal took no pod off its node.
        assert_eq!(
            text.matches("tidal_evicted_by_node_total{").count(),
            2,
            "{text}"
        );
    }

    #[test]
    fn exposition_names_and_labels() {
        let metrics = Metrics::new();
        metrics
            .evictions
            .get_or_create(&EvictionLabels {
                policy: "p".into(),
                strategy: "tdm".into(),
                result: "evicted".into(),
                zone: "rz1".into(),
            })
            .inc();
        metrics.watch_error(ObjectKind::Pod);
        metrics.set_cache_sizes(3, 10, 1);
        let text = metrics.encode();
        assert!(
            text.contains(
                r#"tidal_evictions_total{policy="p",strategy="tdm",result="evicted",zone="rz1"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"tidal_watch_errors_total{kind="Pod"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"tidal_cache_objects{kind="pods"} 10"#),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "tidal_build_info{{version=\"{}\"}} 1",
                env!("CARGO_PKG_VERSION")
            )) && text.contains("# TYPE tidal_cycle_duration_seconds histogram")
                && text.contains("# TYPE tidal_plan_duration_seconds histogram"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
    }
}
