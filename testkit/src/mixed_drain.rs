//! A revocable zone of mixed work about to close, drained from 45 minutes before its close, for
//! measuring what a drain throws away: batch Jobs
//! whose `activeDeadlineSeconds` end them anywhere from now to an hour past the close, long-running
//! services (Deployments with a budget of one), and training jobs that declare their run time
//! (`tidal.dev/expected-run-time`), some of which saved their work lately (`tidal.dev/checkpointed-at`).
//! Deterministic: the same `jobs` and seed give the same cluster.

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use tidal::{
    cluster::{ClusterCache, NodeInfo, PodGroupInfo, PodInfo, PolicyInfo, ZoneInfo},
    timeline,
};

use crate::{
    objects::{node, pod, podgroup, policy, zone},
    rng::SplitMix64,
};

/// The instant the drain is planned from: an hour before the zone closes at 10:00 UTC.
pub const NOW: &str = "2026-11-23T09:00:00Z";
/// The zone's close.
pub const CLOSE: &str = "2026-11-23T10:00:00Z";

fn at(text: &str) -> Timestamp {
    text.parse().expect("a fixed instant")
}

fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The mixed zone with `jobs` jobs of each kind, and the TDM policy (`letPodsFinish` as given).
pub struct MixedZone {
    pub cache: ClusterCache,
    pub policy: PolicyInfo,
}

pub fn mixed_zone(jobs: usize, seed: u64, let_pods_finish: bool) -> MixedZone {
    let mut rng = SplitMix64::new(seed);
    let now = at(NOW);
    let mut cache = ClusterCache::new();
    let window = zone("mixed")
        .window("20:00-10:00")
        .spec(json!({"evictPeriod": "1m", "drainBefore": "45m"}));
    cache.apply_zone(ZoneInfo::from_zone(&from(window.into_value())).expect("named"));
    for n in 0..10 {
        let plain = node(&format!("plain-{n}")).allocatable("64", "256Gi", 500);
        cache.apply_node(NodeInfo::from_node(&from(plain.into_value())).expect("named"));
        let lent = node(&format!("mixed-{n}"))
            .zone("mixed")
            .allocatable("64", "256Gi", 500);
        cache.apply_node(NodeInfo::from_node(&from(lent.into_value())).expect("named"));
    }
    let mut pods: Vec<Value> = Vec::new();
    let mut add = |value: Value| pods.push(value);
    let started = |minutes_ago: u64| rfc3339(now - SignedDuration::from_mins(minutes_ago as i64));
    for j in 0..jobs {
        let on = format!("mixed-{}", j % 10);
        // A batch Job started 1-3 hours ago whose deadline ends it between now and an hour past the
        // close.
        let ran = 60 + rng.below(120);
        let left = 1 + rng.below(120);
        add(pod(&format!("batch/report-{j}"), &on)
            .owned_by("Job", &format!("report-{j}"))
            .preemptable()
            .created(&started(ran))
            .spec("activeDeadlineSeconds", json!((ran + left) * 60))
            .into_value());
        // A service replica, up for two days.
        for r in 0..3 {
            add(pod(&format!("web/api-{j}-{r}"), &on)
                .owned_by("ReplicaSet", &format!("api-{j}"))
                .preemptable()
                .annotation("volcano.sh/jdb-max-unavailable", "1")
                .created(&started(2 * 24 * 60))
                .into_value());
        }
        // A training job of 4 workers that says how long it runs; one in three saved its work lately.
        let group = format!("train-{j}");
        let ran = 30 + rng.below(150);
        let declared = ran + 10 + rng.below(90);
        let mut workers = podgroup(&format!("ml/{group}"))
            .annotation("tidal.dev/expected-run-time", &format!("{declared}m"))
            .annotation("volcano.sh/jdb-max-unavailable", "2");
        workers = workers.annotation("volcano.sh/preemptable", "true");
        cache.apply_podgroup(
            PodGroupInfo::from_podgroup(&from(workers.into_value())).expect("named"),
        );
        for w in 0..4 {
            let mut worker = pod(&format!("ml/{group}-{w}"), &on)
                .owned_by("PodGroup", &group)
                .in_group(&group)
                .created(&started(ran));
            if j % 3 == 0 {
                worker = worker.annotation(
                    "tidal.dev/checkpointed-at",
                    &rfc3339(now - SignedDuration::from_mins(5)),
                );
            }
            add(worker.into_value());
        }
    }
    for value in pods {
        cache.apply_pod(PodInfo::from_pod(&from(value)).expect("named"), now);
    }
    let spec = json!({
        "mode": "Evict",
        "interval": "1m",
        "strategies": {"tdm": {"letPodsFinish": let_pods_finish}},
    });
    let policy = PolicyInfo::from_policy(&from(policy(spec).into_value())).expect("named");
    MixedZone { cache, policy }
}

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("the builders write valid objects")
}

/// What a drain of the mixed zone does, lived by `tidal timeline`'s simulation from [`NOW`].
pub struct DrainOutcome {
    pub work_lost_pod_hours: f64,
    pub evictions: usize,
    pub left_to_finish: usize,
    pub at_close: Option<u32>,
    pub margin_seconds: Option<i64>,
}

pub fn drain(zone: &mut MixedZone, settings: &timeline::Settings) -> DrainOutcome {
    let lived = timeline::simulate(
        &mut zone.cache,
        &[&zone.policy],
        at(NOW),
        SignedDuration::from_hours(2),
        settings,
    );
    let drain = lived
        .drains
        .iter()
        .find(|d| d.close.is_some_and(|close| close >= at(CLOSE)))
        .expect("the drain for the close");
    DrainOutcome {
        work_lost_pod_hours: drain.work_lost_seconds.unwrap_or(0.0) / 3600.0,
        evictions: lived.events.iter().map(|e| e.evictions.len()).sum(),
        left_to_finish: lived
            .events
            .iter()
            .filter(|e| e.event == timeline::EventKind::Finishes)
            .count(),
        at_close: drain.at_close,
        margin_seconds: drain.margin_seconds,
    }
}
