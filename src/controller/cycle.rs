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
use tracing::{debug, info, warn};

use super::{
    cycle_result::{
        CycleResult, PolicyResult, Tallies, evicted, fresh_warnings, invalid_pods, tallies,
        zone_gauges,
    },
    cycle_timer::{PolicyClock, Trigger, ZoneClock, zone_clock},
    verification::{LastVerified, order_for_verification, record_verified, sends},
};
use crate::{
    api::PolicyMode,
    cluster::{ObjectKey, ObjectKind, PolicyInfo, Retired, SharedCache, Snapshot},
    controller::evictor::{EvictionRequest, Evictor, Guard, Halt, Outcome},
    controller::metrics::{Metrics, PolicyStrategy, TriggerLabel},
    controller::status::{self, PolicyCounts, StatusWriter},
    framework::PlannedEviction,
    planner::{self, Plan, SkipRows},
    runtime::leader::LeaderHandle,
};

/// Skipped candidates a cycle keeps in detail per policy; the rest are counted only. Status, events
/// and metrics need the counts; nothing in a live cycle reads ten thousand rows.
const SKIP_ROWS: SkipRows = SkipRows::AtMost(1_000);

/// Knobs of a cycle.
#[derive(Clone, Debug)]
pub struct CycleSettings {
    /// Evictions (with retries) still unsent by then are abandoned.
    pub timeout: Duration,
    /// An in-flight mark whose pod never went away is dropped after this long.
    pub in_flight_ttl: Duration,
    /// Policy intervals are never shorter than this.
    pub min_interval: Duration,
    /// Server-side dry runs a cycle sends to verify the plans of DryRun policies (all of them
    /// together, the longest unchecked first); the rest of those plans is reported as planned but
    /// unverified.
    pub dry_run_verify_per_cycle: usize,
}

/// At the default 5 requests per second this takes about 10 s, well inside a cycle.
pub(crate) const DEFAULT_DRY_RUN_VERIFY_PER_CYCLE: usize = 50;

impl Default for CycleSettings {
    fn default() -> Self {
        CycleSettings {
            timeout: Duration::from_secs(120),
            in_flight_ttl: Duration::from_secs(600),
            min_interval: Duration::from_secs(1),
            dry_run_verify_per_cycle: DEFAULT_DRY_RUN_VERIFY_PER_CYCLE,
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
    fn may_act(&self, _dry_run: bool) -> Result<(), Halt> {
        if self.shutdown.is_cancelled() {
            Err(Halt::ShuttingDown)
        } else if !self.leader.is_leader() {
            Err(Halt::NotLeader)
        } else {
            Ok(())
        }
    }

    fn lapsed(&self) -> BoxFuture<'_, Halt> {
        let mut leader = self.leader.clone();
        Box::pin(async move {
            tokio::select! {
                () = leader.lost() => Halt::LeadershipLapsed,
                () = self.abandon.cancelled() => Halt::ShutdownGraceOver,
            }
        })
    }
}

/// Everything cycles share across runs.
pub struct CycleRunner {
    pub client: kube::Client,
    pub shared: SharedCache,
    /// Brought up to date at the start of each cycle. Once the plan is made, its nodes and jobs are
    /// lent to the cache until the next cycle (`ClusterCache::lend_snapshot`): only its policies and
    /// zones can be read between cycles.
    pub snapshot: Snapshot,
    pub evictor: Evictor,
    pub guard: ActGuard,
    pub status: StatusWriter,
    pub metrics: Arc<Metrics>,
    pub settings: CycleSettings,
    /// The plan's warnings as last logged.
    pub warned: BTreeSet<String>,
    pub last_verified: LastVerified,
}

impl CycleRunner {
    /// Policies and zones as the cycle timer sees them at `now`.
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
            .map(|zone| zone_clock(zone, zone.last_eviction_round, now))
            .collect();
        (policies, zones)
    }

    /// The same, as the last cycle's snapshot saw them (with the rounds it started). The cycle timer
    /// records these after a cycle: an edit that reached the cache while the cycle ran was not planned
    /// with, so it must still count as a change afterwards.
    pub fn snapshot_clocks(&self, now: Timestamp) -> (Vec<PolicyClock>, Vec<ZoneClock>) {
        let cache = self.shared.read();
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
                let last = zone.last_eviction_round.max(cache.local_round(&zone.name));
                zone_clock(zone, last, now)
            })
            .collect();
        (policies, zones)
    }

    /// Brings the long-lived snapshot up to `now`: expired in-flight marks dropped. Returns the
    /// versions the update let go of, for the caller to free once the plan is made: outside the
    /// cache's lock, so the watches do not wait, and outside the plan's latency.
    fn refresh_snapshot(&mut self, now: Timestamp) -> Retired {
        let mut cache = self.shared.write();
        let expired = cache.expire_evictions(now, self.settings.in_flight_ttl);
        if !expired.is_empty() {
            warn!(
                pods = expired.len(),
                "in-flight evictions expired without the pods going away; they count again"
            );
        }
        let update = cache.update_snapshot(&mut self.snapshot);
        debug!(
            entries = update.entries_synced,
            full_rebuild = update.full_rebuild,
            retired = update.retired.len(),
            "snapshot updated"
        );
        update.retired
    }

    pub async fn run_cycle(
        &mut self,
        policies: &[String],
        now: Timestamp,
        trigger: Trigger,
    ) -> CycleResult {
        let started = Instant::now();
        let retired = self.refresh_snapshot(now);
        let selected: Vec<Arc<PolicyInfo>> = policies
            .iter()
            .filter_map(|name| self.snapshot.policies.get(name).cloned())
            .collect();
        let refs: Vec<&PolicyInfo> = selected.iter().map(AsRef::as_ref).collect();
        let mut cycle = planner::plan_all_with(&self.snapshot, &refs, now, SKIP_ROWS);
        self.metrics
            .plan_duration
            .observe(started.elapsed().as_secs_f64());
        drop(retired);
        let preemptable = cycle
            .zones
            .keys()
            .map(|zone| (zone.clone(), status::preemptable_pods(&self.snapshot, zone)))
            .collect();
        // Nothing below reads the snapshot's nodes or jobs: while the evictions go out, the watches
        // change the cache's aggregates in place instead of copying what the snapshot shares.
        self.shared.write().lend_snapshot(&mut self.snapshot);
        for plan in &cycle.plans {
            for (strategy, took) in &plan.strategy_durations {
                let labels = PolicyStrategy {
                    policy: plan.policy.clone(),
                    strategy: strategy.to_string(),
                };
                self.metrics
                    .strategy_duration
                    .get_or_create(&labels)
                    .observe(took.as_secs_f64());
            }
        }
        // Logged when they appear, not every cycle: the report and the status keep showing them.
        for warning in fresh_warnings(&self.warned, &cycle.warnings) {
            warn!("{warning}");
        }
        self.warned = cycle.warnings.iter().cloned().collect();

        let deadline = started + self.settings.timeout;
        let rounds_recorded = Mutex::new(BTreeSet::new());
        order_for_verification(&mut cycle.plans, &self.last_verified);
        let sends = sends(&cycle.plans, self.settings.dry_run_verify_per_cycle);
        // Real evictions and dry runs go side by side, each paced by its own bucket: verifying a
        // DryRun plan never holds back an Evict policy's evictions, before or after it.
        let (this, plans, sends, rounds) = (&*self, &cycle.plans, &sends, &rounds_recorded);
        let act_on = |mode: PolicyMode| async move {
            let mut outcomes = Vec::new();
            for (index, plan) in plans.iter().enumerate() {
                if plan.mode == mode {
                    let sent = &plan.evictions[..sends[index]];
                    outcomes.push((index, this.act(plan, sent, now, deadline, rounds).await));
                }
            }
            outcomes
        };
        let (real, dry) = futures::join!(act_on(PolicyMode::Evict), act_on(PolicyMode::DryRun));
        let mut outcomes: BTreeMap<usize, Vec<Outcome>> = real.into_iter().chain(dry).collect();
        let policies: Vec<PolicyResult> = cycle
            .plans
            .into_iter()
            .enumerate()
            .map(|(index, plan)| {
                let outcomes = outcomes.remove(&index).unwrap_or_default();
                PolicyResult::new(plan, outcomes)
            })
            .collect();
        record_verified(&mut self.last_verified, &policies, now);
        let result = CycleResult {
            now,
            zones: cycle.zones,
            preemptable,
            policies,
        };

        // Also when shutting down: what this cycle evicted must be on record (rounds, events) before
        // the lease goes to a standby. Every write checks leadership first.
        self.write_back(&result).await;
        self.count(&result, trigger, started);
        result
    }

    /// Sends `sent`, the first of one plan's evictions. Each answer is applied to the cache as it comes (so nothing later
    /// can count an evicted pod as running), and the first eviction in a zone records the round on
    /// the zone at once (`rounds_recorded` holds the zones done this cycle).
    async fn act(
        &self,
        plan: &Plan,
        sent: &[PlannedEviction],
        now: Timestamp,
        deadline: Instant,
        rounds_recorded: &Mutex<BTreeSet<String>>,
    ) -> Vec<Outcome> {
        let dry_run = plan.mode == PolicyMode::DryRun;
        let requests: Vec<EvictionRequest> = sent
            .iter()
            .map(|e| EvictionRequest::of(&e.candidate.pod, dry_run))
            .collect();
        let zones: HashMap<ObjectKey, String> = sent
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

    fn uid_of(&self, kind: ObjectKind, name: &str) -> Option<String> {
        self.shared.read().uid_of(kind, name).map(str::to_owned)
    }

    /// Writes what the cycle did: zone status first (its `lastEvictionRound` keeps `evictPeriod`
    /// across leaders), then events on evicted pods, then policy status and events.
    async fn write_back(&mut self, cycle: &CycleResult) {
        let now = cycle.now;
        for view in cycle.zones.values() {
            // From the cache, not the cycle's snapshot: it holds the rounds this cycle started.
            let last_round = self
                .shared
                .read()
                .zone(&view.name)
                .and_then(|z| z.last_eviction_round);
            let uid = self.uid_of(ObjectKind::RevocableZone, &view.name);
            self.status
                .identify("RevocableZone", &view.name, uid.as_deref());
            let preemptable = cycle.preemptable.get(&view.name).copied().unwrap_or(0);
            let previous = self.status.zone_ready(&view.name);
            let written =
                status::zone_status(view, preemptable, last_round, now, previous.as_ref());
            self.status.zone(&view.name, &written).await;
            let error = view.state.as_ref().err().map(String::as_str);
            self.status
                .warn_invalid("RevocableZone", &view.name, uid.as_deref(), error)
                .await;
        }

        // Events on evicted pods, a few at a time.
        let status = &self.status;
        // Boxed with an explicit lifetime: see `Evictor::evict_all`.
        let events: Vec<BoxFuture<'_, ()>> = evicted(&cycle.policies)
            .into_iter()
            .map(|(policy, candidate, confirmed)| -> BoxFuture<'_, ()> {
                Box::pin(status.pod_evicted(policy, candidate, confirmed))
            })
            .collect();
        futures::stream::iter(events)
            .buffer_unordered(8)
            .collect::<Vec<()>>()
            .await;

        self.status
            .warn_invalid_pods(&invalid_pods(&cycle.policies))
            .await;
        let unreadable = self.shared.read().unreadable().clone();
        self.status.warn_unreadable(&unreadable).await;

        for result in &cycle.policies {
            let plan = &result.plan;
            let counts = PolicyCounts::of(plan, result.outcomes());
            let generation = self
                .snapshot
                .policies
                .get(&plan.policy)
                .and_then(|p| p.generation);
            let uid = self.uid_of(ObjectKind::DeschedulingPolicy, &plan.policy);
            self.status
                .identify("DeschedulingPolicy", &plan.policy, uid.as_deref());
            let previous = self.status.policy_ready(&plan.policy);
            let written = status::policy_status(plan, &counts, generation, now, previous.as_ref());
            self.status.policy(&plan.policy, &written).await;
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
        let snapshot = &self.snapshot;
        self.status
            .retain("RevocableZone", |name| snapshot.zones.contains_key(name));
        self.status.retain("DeschedulingPolicy", |name| {
            snapshot.policies.contains_key(name)
        });
    }

    fn count(&self, cycle: &CycleResult, trigger: Trigger, started: Instant) {
        let m = &self.metrics;
        m.cycles
            .get_or_create(&TriggerLabel {
                trigger: trigger.as_str().to_owned(),
            })
            .inc();
        m.cycle_duration.observe(started.elapsed().as_secs_f64());
        m.last_cycle.set(cycle.now.as_millisecond() as f64 / 1000.0);
        let Tallies {
            planned,
            evictions,
            skips,
        } = tallies(&cycle.policies);
        for (labels, n) in planned {
            m.add_planned(labels, n);
        }
        for (labels, n) in evictions {
            m.add_evictions(labels, n);
        }
        for (labels, n) in skips {
            m.add_skips(labels, n);
        }
        m.set_zones(&zone_gauges(&cycle.zones, |zone| {
            cycle.preemptable.get(zone).copied().unwrap_or(0)
        }));
        m.retain_policies(self.snapshot.policies.keys());
        let cache = self.shared.read();
        m.set_cache_sizes(
            cache.node_count(),
            cache.pod_count(),
            cache.evicting_count(),
        );
    }
}
