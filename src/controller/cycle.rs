//! One cycle of the leader: snapshot the cache, plan the due policies, send evictions (or dry runs),
//! then record rounds, write status and events, count metrics.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::{StreamExt, future::BoxFuture};
use jiff::Timestamp;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::schedule::{PolicyClock, Trigger, ZoneClock, zone_clock};
use crate::{
    api::PolicyMode,
    cluster::{ObjectKey, ObjectKind, PolicyInfo, SharedCache, Snapshot},
    controller::evictor::{EvictionRequest, Evictor, Guard, Outcome},
    controller::metrics::{EvictionLabels, Metrics, PolicyStrategy, SkipLabels, TriggerLabel},
    controller::status::{self, PolicyCounts, StatusWriter},
    framework::{Candidate, GateId, SkipReason},
    planner::{self, CyclePlan, Plan},
    runtime::leader::LeaderHandle,
};

/// Knobs of a cycle.
#[derive(Clone, Debug)]
pub struct CycleSettings {
    /// Evictions (with retries) still unsent by then are abandoned.
    pub timeout: Duration,
    /// An in-flight mark whose pod never went away is dropped after this long.
    pub in_flight_ttl: Duration,
    /// Policy intervals are never shorter than this.
    pub min_interval: Duration,
}

impl Default for CycleSettings {
    fn default() -> Self {
        CycleSettings {
            timeout: Duration::from_secs(120),
            in_flight_ttl: Duration::from_secs(600),
            min_interval: Duration::from_secs(1),
        }
    }
}

/// Allows a request only while leading and not shutting down; cuts requests on the wire once
/// leadership lapses or the shutdown grace period is over.
pub struct ActGuard {
    pub leader: LeaderHandle,
    pub shutdown: CancellationToken,
    /// Cancelled when the shutdown grace period is over.
    pub abandon: CancellationToken,
}

impl Guard for ActGuard {
    fn may_act(&self, _dry_run: bool) -> Result<(), String> {
        if self.shutdown.is_cancelled() {
            Err("shutting down".to_owned())
        } else if !self.leader.is_leader() {
            Err("no longer the leader".to_owned())
        } else {
            Ok(())
        }
    }

    fn lapsed(&self) -> BoxFuture<'_, String> {
        let mut leader = self.leader.clone();
        Box::pin(async move {
            tokio::select! {
                () = leader.lost() => "leadership lapsed".to_owned(),
                () = self.abandon.cancelled() => "shutdown grace period over".to_owned(),
            }
        })
    }
}

/// What a finished cycle did, per policy (outcomes align with each plan's evictions).
pub struct CycleResult {
    pub plan: CyclePlan,
    pub outcomes: Vec<Vec<Outcome>>,
}

/// Everything cycles share across runs.
pub struct Runtime {
    pub client: kube::Client,
    pub shared: SharedCache,
    pub snapshot: Snapshot,
    pub evictor: Evictor,
    pub guard: ActGuard,
    pub status: StatusWriter,
    pub metrics: Arc<Metrics>,
    /// Eviction rounds this process started, by zone: `evictPeriod` counts from here even before the
    /// status write comes back through the watch.
    pub rounds: BTreeMap<String, Timestamp>,
    pub settings: CycleSettings,
}

impl Runtime {
    /// Policies and zones as the scheduler sees them at `now`.
    pub fn clocks(&self, now: Timestamp) -> (Vec<PolicyClock>, Vec<ZoneClock>) {
        let cache = self.shared.read();
        let snapshot_policies = cache.policies();
        let policies = snapshot_policies
            .values()
            .map(|p| PolicyClock::of(p, self.settings.min_interval))
            .collect();
        let zones = cache
            .zones()
            .values()
            .map(|zone| {
                let local = self.rounds.get(&zone.name).copied();
                let last = zone.last_eviction_round.max(local);
                zone_clock(zone, last, now)
            })
            .collect();
        (policies, zones)
    }

    /// The same, as the last cycle's snapshot saw them (with the rounds it started). The scheduler
    /// records these after a cycle: an edit that reached the cache while the cycle ran was not planned
    /// with, so it must still count as a change afterwards.
    pub fn snapshot_clocks(&self, now: Timestamp) -> (Vec<PolicyClock>, Vec<ZoneClock>) {
        let policies = self
            .snapshot
            .policies
            .values()
            .map(|p| PolicyClock::of(p, self.settings.min_interval))
            .collect();
        let zones = self
            .snapshot
            .zones
            .values()
            .map(|zone| {
                let local = self.rounds.get(&zone.name).copied();
                zone_clock(zone, zone.last_eviction_round.max(local), now)
            })
            .collect();
        (policies, zones)
    }

    /// Brings the long-lived snapshot up to `now`: expired in-flight marks dropped, local rounds applied.
    fn refresh_snapshot(&mut self, now: Timestamp) {
        let mut cache = self.shared.write();
        let expired = cache.expire_evictions(now, self.settings.in_flight_ttl);
        if !expired.is_empty() {
            warn!(
                pods = expired.len(),
                "in-flight evictions expired without the pods going away; they count again"
            );
        }
        for (zone, at) in &self.rounds {
            cache.note_eviction_round(zone, *at);
        }
        cache.update_snapshot(&mut self.snapshot);
    }

    pub async fn run_cycle(
        &mut self,
        policies: &[String],
        now: Timestamp,
        trigger: Trigger,
    ) -> CycleResult {
        let started = Instant::now();
        self.refresh_snapshot(now);
        let selected: Vec<Arc<PolicyInfo>> = policies
            .iter()
            .filter_map(|name| self.snapshot.policies.get(name).cloned())
            .collect();
        let refs: Vec<&PolicyInfo> = selected.iter().map(AsRef::as_ref).collect();
        let cycle = planner::plan_all(&self.snapshot, &refs, now);
        for warning in &cycle.warnings {
            warn!("{warning}");
        }

        let deadline = started + self.settings.timeout;
        let mut outcomes = Vec::with_capacity(cycle.plans.len());
        let rounds_recorded = Mutex::new(BTreeSet::new());
        for plan in &cycle.plans {
            outcomes.push(self.act(plan, now, deadline, &rounds_recorded).await);
        }
        self.note_rounds(&cycle, &outcomes, now);

        // Also when shutting down: what this cycle evicted must be on record (rounds, events) before
        // the lease goes to a standby. Every write checks leadership first.
        self.write_back(&cycle, &outcomes, now).await;
        self.count(&cycle, &outcomes, trigger, now, started);
        CycleResult {
            plan: cycle,
            outcomes,
        }
    }

    /// Sends one plan's evictions. Each answer is applied to the cache as it comes (so nothing later
    /// can count an evicted pod as running), and the first eviction in a zone records the round on
    /// the zone at once (`rounds_recorded` holds the zones done this cycle).
    async fn act(
        &self,
        plan: &Plan,
        now: Timestamp,
        deadline: Instant,
        rounds_recorded: &Mutex<BTreeSet<String>>,
    ) -> Vec<Outcome> {
        let dry_run = plan.mode == PolicyMode::DryRun;
        let requests: Vec<EvictionRequest> = plan
            .evictions
            .iter()
            .map(|e| EvictionRequest {
                pod: e.candidate.pod.key.clone(),
                uid: e.candidate.pod.uid.clone(),
                dry_run,
            })
            .collect();
        let zones: HashMap<ObjectKey, String> = plan
            .evictions
            .iter()
            .filter_map(|e| Some((e.candidate.pod.key.clone(), e.candidate.zone.clone()?)))
            .collect();
        let (new_round, mut rounds) = tokio::sync::mpsc::unbounded_channel::<String>();
        let shared = self.shared.clone();
        let mark = move |request: &EvictionRequest, outcome: &Outcome| {
            let leaving = match outcome {
                Outcome::Evicted | Outcome::EvictedUnconfirmed => true,
                // Not there (any more) on the server: it must not count as running until the watch
                // catches up. A namesake that replaces it is another pod and drops the mark.
                Outcome::Gone | Outcome::Replaced => !request.dry_run,
                _ => false,
            };
            if leaving {
                shared.write().mark_evicted(&request.pod, &request.uid, now);
            }
            if outcome.evicted()
                && let Some(zone) = zones.get(&request.pod)
            {
                shared.write().note_eviction_round(zone, now);
                let first = rounds_recorded
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .insert(zone.clone());
                if first {
                    // The receiver outlives every sender: sending cannot fail.
                    let _ = new_round.send(zone.clone());
                }
            }
        };
        let evictions = async move {
            let mark = mark;
            self.evictor
                .evict_all(&requests, deadline, &self.guard, &mark)
                .await
        };
        let record_rounds = async {
            while let Some(zone) = rounds.recv().await {
                self.status.eviction_round(&zone, now).await;
            }
        };
        let (outcomes, ()) = futures::join!(evictions, record_rounds);
        outcomes
    }

    /// A zone in which a real eviction went through has started a round now.
    fn note_rounds(&mut self, cycle: &CyclePlan, outcomes: &[Vec<Outcome>], now: Timestamp) {
        for (plan, outcomes) in cycle.plans.iter().zip(outcomes) {
            for (eviction, outcome) in plan.evictions.iter().zip(outcomes) {
                if outcome.evicted()
                    && let Some(zone) = &eviction.candidate.zone
                {
                    self.rounds.insert(zone.clone(), now);
                }
            }
        }
        let mut cache = self.shared.write();
        for (zone, at) in &self.rounds {
            cache.note_eviction_round(zone, *at);
        }
    }

    fn uid_of(&self, kind: ObjectKind, name: &str) -> Option<String> {
        self.shared.read().uid_of(kind, name).map(str::to_owned)
    }

    /// Writes what the cycle did: zone status first (its `lastEvictionRound` keeps `evictPeriod`
    /// across leaders), then events on evicted pods, then policy status and events.
    async fn write_back(&mut self, cycle: &CyclePlan, outcomes: &[Vec<Outcome>], now: Timestamp) {
        for view in cycle.zones.values() {
            let last_round = self
                .snapshot
                .zones
                .get(&view.name)
                .and_then(|z| z.last_eviction_round)
                .max(self.rounds.get(&view.name).copied());
            let preemptable = status::preemptable_pods(&self.snapshot, &view.name);
            let previous = self.status.zone_ready(&view.name);
            let written =
                status::zone_status(view, preemptable, last_round, now, previous.as_ref());
            self.status.zone(&view.name, &written).await;
            let error = view.state.as_ref().err().map(String::as_str);
            let uid = self.uid_of(ObjectKind::RevocableZone, &view.name);
            self.status
                .warn_invalid("RevocableZone", &view.name, uid.as_deref(), error)
                .await;
        }

        // Events on evicted pods, a few at a time.
        let evicted: Vec<(&str, &Candidate, bool)> = cycle
            .plans
            .iter()
            .zip(outcomes)
            .flat_map(|(plan, outcomes)| {
                plan.evictions
                    .iter()
                    .zip(outcomes)
                    .filter(|(_, o)| o.evicted())
                    .map(move |(e, o)| (plan.policy.as_str(), &e.candidate, *o == Outcome::Evicted))
            })
            .collect();
        let status = &self.status;
        // Boxed with an explicit lifetime: see `Evictor::evict_all`.
        let events: Vec<BoxFuture<'_, ()>> = evicted
            .into_iter()
            .map(|(policy, candidate, confirmed)| -> BoxFuture<'_, ()> {
                Box::pin(status.pod_evicted(policy, candidate, confirmed))
            })
            .collect();
        futures::stream::iter(events)
            .buffer_unordered(8)
            .collect::<Vec<()>>()
            .await;

        let invalid: Vec<(&Candidate, &str)> = cycle
            .plans
            .iter()
            .flat_map(|plan| &plan.skipped)
            .filter(|skip| skip.reason == SkipReason::Gate(GateId::Invalid))
            .map(|skip| (&skip.candidate, skip.detail.as_str()))
            .collect();
        self.status.warn_invalid_pods(&invalid).await;

        for (plan, outcomes) in cycle.plans.iter().zip(outcomes) {
            let counts = PolicyCounts::of(plan, outcomes);
            let generation = self
                .snapshot
                .policies
                .get(&plan.policy)
                .and_then(|p| p.generation);
            let previous = self.status.policy_ready(&plan.policy);
            let written = status::policy_status(plan, &counts, generation, now, previous.as_ref());
            self.status.policy(&plan.policy, &written).await;
            let uid = self.uid_of(ObjectKind::DeschedulingPolicy, &plan.policy);
            self.status
                .warn_invalid(
                    "DeschedulingPolicy",
                    &plan.policy,
                    uid.as_deref(),
                    plan.error.as_deref(),
                )
                .await;
            if counts.planned > 0 {
                info!(policy = %plan.policy, "{}", counts.summary(plan.mode));
                self.status
                    .policy_cycle(&plan.policy, uid.as_deref(), counts.summary(plan.mode))
                    .await;
            }
        }
    }

    fn count(
        &self,
        cycle: &CyclePlan,
        outcomes: &[Vec<Outcome>],
        trigger: Trigger,
        now: Timestamp,
        started: Instant,
    ) {
        let m = &self.metrics;
        m.cycles
            .get_or_create(&TriggerLabel {
                trigger: trigger.as_str().to_owned(),
            })
            .inc();
        m.cycle_duration.observe(started.elapsed().as_secs_f64());
        m.last_cycle.set(now.as_millisecond() as f64 / 1000.0);
        for (plan, outcomes) in cycle.plans.iter().zip(outcomes) {
            let skip = |reason: SkipReason| SkipLabels {
                policy: plan.policy.clone(),
                gate: reason.to_string(),
            };
            for skipped in &plan.skipped {
                m.inc_skip(skip(skipped.reason));
            }
            for (eviction, outcome) in plan.evictions.iter().zip(outcomes) {
                let c = &eviction.candidate;
                m.inc_planned(PolicyStrategy {
                    policy: plan.policy.clone(),
                    strategy: c.strategy.to_string(),
                });
                m.inc_eviction(EvictionLabels {
                    policy: plan.policy.clone(),
                    strategy: c.strategy.to_string(),
                    result: outcome.label().to_owned(),
                    zone: c.zone.clone().unwrap_or_default(),
                });
                if let Some(refusal) = outcome.refusal() {
                    m.inc_skip(skip(refusal.reason));
                }
            }
        }
        m.retain_policies(self.snapshot.policies.keys());
        let cache = self.shared.read();
        m.set_cache_sizes(
            cache.node_count(),
            cache.pod_count(),
            cache.evicting_count(),
        );
    }
}
