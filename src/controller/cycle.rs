//! One cycle of the leader: snapshot the cache, bring the drains up to date, plan the due policies,
//! queue the evictions (earliest close first) and send the dry runs. The cycle returns once its
//! evictions are queued: the control loop acts on the next zone change while they go out. Each
//! outcome is applied as it comes (the cache, the zone's round, the pod's Event, the eviction counter);
//! once all of a cycle's evictions have one, its policies' status, warnings and counts are written.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::future::BoxFuture;
use jiff::{SignedDuration, Timestamp};
use tokio::{task::JoinSet, time::Instant};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::{
    cycle_result::{CycleResult, PolicyResult, WarningLine, WarningLog, pod_event},
    cycle_timer::{PolicyClock, Trigger, ZoneClock, zone_clock},
    drains::Drains,
    finish::Finisher,
    unanswered::{Pending, Settled, Unanswered},
    verification::{LastVerified, order_for_verification, sends},
};
use crate::{
    api::PolicyMode,
    cluster::{ObjectKey, PodInfo, PolicyInfo, Retired, SharedCache, Snapshot},
    controller::evictor::{
        EvictionQueue, EvictionRequest, Evictor, Guard, Halt, Outcome, Outcomes, Submission,
    },
    controller::metrics::{EvictionKey, Metrics, PolicyStrategy},
    controller::status::{self, StatusWriter},
    drain::{self, Urgency},
    framework::{Candidate, PlanContext},
    planner::{self, CyclePlan, Plan, SkipRows},
    runtime::leader::LeaderHandle,
};

/// Skipped candidates a cycle keeps in detail per policy; the rest are counted only. Status, events
/// and metrics need the counts; nothing in a live cycle reads ten thousand rows.
const SKIP_ROWS: SkipRows = SkipRows::AtMost(1_000);
/// How soon a zone's round that the API server cut short (throttled, or away) is taken up again: the
/// server's own answer, rather than `evictPeriod`, which paces the rounds it took.
const ROUND_RETRY: SignedDuration = SignedDuration::from_secs(5);

/// Knobs of a cycle.
#[derive(Clone, Debug)]
pub struct CycleSettings {
    /// Evictions of strategies other than TDM still unsent by then are abandoned (their plans go
    /// stale); TDM's stay queued while their zone evicts.
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
    /// Brought up to date at the start of each cycle and each drain refresh. Once read, its nodes and
    /// jobs are lent to the cache (`ClusterCache::lend_snapshot`): only its policies and zones are
    /// read in between.
    pub snapshot: Snapshot,
    /// Sends the dry runs that verify DryRun plans.
    pub evictor: Evictor,
    /// Every real eviction, earliest close first.
    pub queue: EvictionQueue,
    pub guard: Arc<ActGuard>,
    pub status: Arc<StatusWriter>,
    pub metrics: Arc<Metrics>,
    pub settings: CycleSettings,
    /// The plan's warnings as last logged.
    pub(crate) warned: WarningLog,
    pub last_verified: Arc<Mutex<LastVerified>>,
    pub drains: Drains,
    /// The eviction notices written that the cache may not show yet.
    pub(crate) notifier: super::notices::Notifier,
    /// Cycles whose evictions are still going out, each finishing with its write-back.
    pub finishing: JoinSet<()>,
    /// Evictions that got no answer, waiting for the watch to show whether they went.
    pub(crate) unanswered: Arc<Unanswered>,
}

impl CycleRunner {
    /// Policies and zones as the cycle timer sees them at `now`.
    pub fn clocks(&self, now: Timestamp) -> (Vec<PolicyClock>, Vec<ZoneClock>) {
        let cache = self.shared.read();
        let policies = cache
            .policies()
            .values()
            .map(|p| PolicyClock::of(p, self.settings.min_interval))
            .collect();
        let zones = cache
            .zones()
            .values()
            .map(|zone| self.zone_clock(zone, zone.last_eviction_round, now))
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
                self.zone_clock(zone, last, now)
            })
            .collect();
        (policies, zones)
    }

    /// A round that budgets held back entirely counts as a round for the timer: the zone is tried
    /// again `evictPeriod` later, not at the policy's interval.
    fn zone_clock(
        &self,
        zone: &crate::cluster::ZoneInfo,
        last_round: Option<Timestamp>,
        now: Timestamp,
    ) -> ZoneClock {
        let last = last_round.max(self.drains.attempt(&zone.name));
        zone_clock(zone, last, now, self.drains.planned_start(&zone.name))
    }

    /// Brings the long-lived snapshot up to `now`: expired in-flight marks dropped. Returns the
    /// versions the update let go of, for the caller to free once the plan is made: outside the
    /// cache's lock, so the watches do not wait, and outside the plan's latency.
    pub(crate) fn refresh_snapshot(&mut self, now: Timestamp) -> Retired {
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

    /// Plans the due policies at `now`, queues their evictions and sends their dry runs; returns once
    /// they are on their way. What they become is written back when the last has an outcome.
    pub async fn run_cycle(&mut self, policies: &[String], now: Timestamp, trigger: Trigger) {
        let started = Instant::now();
        // Drains first: an auto drain due now makes its zone drain in this very plan.
        self.refresh_drains(now, true).await;
        let retired = self.refresh_snapshot(now);
        let selected: Vec<Arc<PolicyInfo>> = policies
            .iter()
            .filter_map(|name| self.snapshot.policies.get(name).cloned())
            .collect();
        let refs: Vec<&PolicyInfo> = selected.iter().map(AsRef::as_ref).collect();
        let in_flight = self.queue.pending();
        let mut cycle =
            planner::plan_all_in_flight(&self.snapshot, &refs, now, SKIP_ROWS, in_flight.clone());
        let urgencies = self.urgencies(&cycle, &in_flight, now);
        self.metrics
            .plan_duration
            .observe(started.elapsed().as_secs_f64());
        drop(retired);
        let preemptable: BTreeMap<String, u32> = cycle
            .zones
            .keys()
            .map(|zone| (zone.clone(), status::preemptable_pods(&self.snapshot, zone)))
            .collect();
        self.drains
            .note_attempts(&cycle.zones, &cycle.plans, &preemptable, now);
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
        // Logged when they appear, not every cycle: the report keeps showing them.
        for line in self
            .warned
            .update(&cycle.warnings, |key| cycle.looked_for(key), now)
        {
            match line {
                WarningLine::Appeared(text) => warn!("{text}"),
                WarningLine::Reminder(text) => warn!("still: {text}"),
                WarningLine::Cleared(key) => info!("no longer warned about: {key}"),
            }
        }
        self.write_zones(&cycle.zones, &preemptable, now).await;

        let deadline = started + self.settings.timeout;
        {
            let last_verified = self
                .last_verified
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            order_for_verification(&mut cycle.plans, &last_verified);
        }
        let sends = sends(&cycle.plans, self.settings.dry_run_verify_per_cycle);
        let mut rounds = BTreeSet::new();
        let mut pending: Vec<BoxFuture<'static, (usize, Vec<Outcome>)>> = Vec::new();
        for (index, plan) in cycle.plans.iter().enumerate() {
            let sent = &plan.evictions[..sends[index]];
            if sent.is_empty() {
                continue;
            }
            match plan.mode {
                PolicyMode::Evict => {
                    let outcomes =
                        self.queue_plan(plan, sent, &urgencies, now, deadline, &mut rounds);
                    pending.push(Box::pin(async move { (index, outcomes.all().await) }));
                }
                PolicyMode::DryRun => {
                    // Dry runs go side by side with the queue, paced by a bucket of their own:
                    // verifying a DryRun plan never holds back a real eviction.
                    let requests: Vec<EvictionRequest> = sent
                        .iter()
                        .map(|e| EvictionRequest::of(&e.candidate.pod, true))
                        .collect();
                    let (evictor, guard) = (self.evictor.clone(), Arc::clone(&self.guard));
                    pending.push(Box::pin(async move {
                        let outcomes = evictor
                            .evict_all(&requests, deadline, guard.as_ref(), &|_, _| {})
                            .await;
                        (index, outcomes)
                    }));
                }
            }
        }
        let finisher = Finisher {
            shared: self.shared.clone(),
            status: Arc::clone(&self.status),
            metrics: Arc::clone(&self.metrics),
            last_verified: Arc::clone(&self.last_verified),
            policies: self.snapshot.policies.clone(),
        };
        let plans = cycle.plans;
        self.finishing.spawn(async move {
            let mut outcomes: BTreeMap<usize, Vec<Outcome>> = futures::future::join_all(pending)
                .await
                .into_iter()
                .collect();
            let policies: Vec<PolicyResult> = plans
                .into_iter()
                .enumerate()
                .map(|(index, plan)| {
                    let outcomes = outcomes.remove(&index).unwrap_or_default();
                    PolicyResult::new(plan, outcomes)
                })
                .collect();
            let result = CycleResult { now, policies };
            finisher.finish(&result, trigger, started).await;
        });
        // Finished cycles leave nothing behind.
        while self.finishing.try_join_next().is_some() {}
    }

    /// How soon each eviction of the cycle's Evict plans must go, by the drain plan's rule: read off
    /// the snapshot before it is lent back, with the evictions queued before this cycle as leaving.
    fn urgencies(
        &self,
        cycle: &CyclePlan,
        in_flight: &HashSet<ObjectKey>,
        now: Timestamp,
    ) -> HashMap<ObjectKey, Urgency> {
        let policies: Vec<&PolicyInfo> =
            self.snapshot.policies.values().map(AsRef::as_ref).collect();
        let Some(policy) = drain::draining_policy(&policies) else {
            return HashMap::new();
        };
        let evictions: Vec<&Candidate> = cycle
            .plans
            .iter()
            .filter(|plan| plan.mode == PolicyMode::Evict)
            .flat_map(|plan| plan.evictions.iter().map(|e| &e.candidate))
            .collect();
        if evictions.is_empty() {
            return HashMap::new();
        }
        let ctx = PlanContext {
            snapshot: &self.snapshot,
            policy,
            now,
            zones: &cycle.zones,
            planned_elsewhere: in_flight,
        };
        let settings = self.drain_settings();
        let observed: HashMap<String, Option<SignedDuration>> = {
            let cache = self.shared.read();
            cycle
                .zones
                .keys()
                .map(|zone| (zone.clone(), cache.observed_termination(zone)))
                .collect()
        };
        let gone_after = |zone: &str, pod: &PodInfo| {
            let observed = observed.get(zone).copied().flatten();
            settings
                .pacing
                .request
                .saturating_add(settings.terminates_in(observed, pod))
        };
        let urgencies = drain::inputs::round_urgencies(&ctx, &evictions, &gone_after);
        evictions
            .iter()
            .map(|c| c.pod.key.clone())
            .zip(urgencies)
            .collect()
    }

    /// Queues one Evict plan's evictions and starts its zones' rounds: noted in the cache at once
    /// (the next plan and the cycle timer see it) and in the zone's status right after, so that
    /// `evictPeriod` holds for any replica that takes over. Each outcome is applied as it comes: the
    /// pod counts as leaving at once, it gets its Event, the eviction is counted.
    fn queue_plan(
        &self,
        plan: &Plan,
        sent: &[crate::framework::PlannedEviction],
        urgencies: &HashMap<ObjectKey, Urgency>,
        now: Timestamp,
        deadline: Instant,
        rounds: &mut BTreeSet<String>,
    ) -> Outcomes {
        for zone in sent.iter().filter_map(|e| e.candidate.zone.as_ref()) {
            if rounds.insert(zone.clone()) {
                self.shared.write().note_eviction_round(zone, now);
                let (status, zone) = (Arc::clone(&self.status), zone.clone());
                tokio::spawn(async move { status.eviction_round(&zone, now).await });
            }
        }
        let submissions: Vec<Submission> = sent
            .iter()
            .map(|eviction| {
                let candidate = &eviction.candidate;
                let zone = candidate.drained_zone();
                Submission {
                    request: EvictionRequest::of(&candidate.pod, false),
                    urgency: urgencies
                        .get(&candidate.pod.key)
                        .copied()
                        .unwrap_or(Urgency::NO_CLOSE),
                    // A zone's evictions stay wanted while it evicts; other plans go stale.
                    deadline: zone.is_none().then_some(deadline),
                    zone: zone.map(str::to_owned),
                }
            })
            .collect();
        let candidates: Vec<crate::framework::Candidate> =
            sent.iter().map(|e| e.candidate.clone()).collect();
        let by_key: std::collections::HashMap<crate::cluster::ObjectKey, usize> = candidates
            .iter()
            .enumerate()
            .map(|(at, c)| (c.pod.key.clone(), at))
            .collect();
        let (shared, status, metrics) = (
            self.shared.clone(),
            Arc::clone(&self.status),
            Arc::clone(&self.metrics),
        );
        let policy = plan.policy.clone();
        let unanswered = Arc::clone(&self.unanswered);
        let on_outcome = move |request: &EvictionRequest, outcome: &Outcome| {
            let Some(candidate) = by_key.get(&request.pod).map(|at| &candidates[*at]) else {
                return;
            };
            // The pod leaves from its answer on, not from its cycle: a drain's evictions go out over
            // minutes, and how long pods take to go is learned from this instant.
            let answered = Timestamp::now();
            if outcome.cuts_round_short()
                && let Some(zone) = candidate.drained_zone()
            {
                shared.write().note_round_cut_short(
                    zone,
                    answered.checked_add(ROUND_RETRY).unwrap_or(answered),
                );
            }
            if let Outcome::Unanswered { ended, .. } = outcome {
                // Counted, and told on the pod, once the watch shows whether it went.
                unanswered.hold(
                    &mut shared.write(),
                    Pending {
                        policy: policy.clone(),
                        candidate: candidate.clone(),
                        uid: request.uid.clone(),
                        ended: *ended,
                    },
                );
                return;
            }
            let leaving = match outcome {
                Outcome::Evicted | Outcome::EvictedUnconfirmed => true,
                // Not there (any more) on the server: it must not count as running until the watch
                // catches up. A namesake that replaces it is another pod and drops the mark.
                Outcome::Gone | Outcome::Replaced => true,
                _ => false,
            };
            if leaving {
                shared
                    .write()
                    .mark_evicted(&request.pod, &request.uid, answered);
            }
            metrics.add_evictions(EvictionKey::of(&policy, candidate, outcome.label()), 1);
            metrics.add_work_lost(candidate, outcome.label(), answered);
            let Some(confirmed) = pod_event(outcome) else {
                return;
            };
            let (status, policy, candidate) =
                (Arc::clone(&status), policy.clone(), candidate.clone());
            tokio::spawn(async move {
                status.pod_evicted(&policy, &candidate, confirmed).await;
            });
        };
        self.queue.submit(submissions, Box::new(on_outcome))
    }

    /// Counts the unanswered evictions the watch has settled by `now`, and tells the pods that went:
    /// each once, as `evicted_unconfirmed` or `failed`.
    pub(crate) fn settle_unanswered(&self, now: Timestamp) {
        if self.unanswered.is_empty() {
            return;
        }
        let settled = self.unanswered.settle(&mut self.shared.write(), now);
        for (pending, settled) in settled {
            let candidate = &pending.candidate;
            let result = match settled {
                Settled::Evicted => Outcome::EvictedUnconfirmed,
                Settled::NotEvicted => Outcome::Failed(String::new()),
            };
            self.metrics.add_evictions(
                EvictionKey::of(&pending.policy, candidate, result.label()),
                1,
            );
            self.metrics
                .add_work_lost(candidate, result.label(), pending.ended);
            if let Some(confirmed) = pod_event(&result) {
                let status = Arc::clone(&self.status);
                tokio::spawn(async move {
                    status
                        .pod_evicted(&pending.policy, &pending.candidate, confirmed)
                        .await;
                });
            }
        }
    }

    /// Waits for the cycles still finishing (their evictions and write-backs), at most `grace`.
    pub async fn finish_all(&mut self, grace: Duration) -> bool {
        let all = async { while self.finishing.join_next().await.is_some() {} };
        tokio::time::timeout(grace, all).await.is_ok()
    }
}
