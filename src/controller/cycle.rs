//! One cycle of the leader: snapshot the cache, plan the due policies, send evictions (or dry runs),
//! then record rounds, write status and events, count metrics.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::{StreamExt, future::BoxFuture};
use jiff::Timestamp;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::schedule::{PolicyClock, Trigger, ZoneClock, zone_clock};
use crate::{
    api::PolicyMode,
    cluster::{ObjectKey, ObjectKind, PolicyInfo, Retired, SharedCache, Snapshot},
    controller::evictor::{EvictionRequest, Evictor, Guard, Halt, Outcome},
    controller::metrics::{
        EvictionLabels, Metrics, PolicyStrategy, SkipLabels, TriggerLabel, ZoneGauges,
    },
    controller::status::{self, PolicyCounts, StatusWriter},
    framework::{Candidate, GateId, PlannedEviction, SkipReason, ZoneView},
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

/// How many of each plan's evictions the cycle sends: all of an Evict policy's, and of DryRun
/// policies' only as many dry runs as the cycle's verification budget has left, the longest unchecked first (see
/// [`order_for_verification`]).
pub(crate) fn sends(plans: &[Plan], verify_budget: usize) -> Vec<usize> {
    let mut left = verify_budget;
    plans
        .iter()
        .map(|plan| match plan.mode {
            PolicyMode::Evict => plan.evictions.len(),
            PolicyMode::DryRun => {
                let n = plan.evictions.len().min(left);
                left -= n;
                n
            }
        })
        .collect()
}

/// When each pod's planned eviction was last checked by a dry run (accepted or refused by the API
/// server). A stable DryRun plan larger than the cycle's verification budget would otherwise have
/// the same first evictions checked every cycle and the rest never.
pub(crate) type LastVerified = HashMap<ObjectKey, Timestamp>;

/// Puts each DryRun plan's evictions in the order they are to be verified: never checked first,
/// then the longest unchecked, plan order among equals. Evict plans keep plan order: that is the
/// order the gates admitted them in. The planned set is unchanged, only the order is.
pub(crate) fn order_for_verification(plans: &mut [Plan], last_verified: &LastVerified) {
    for plan in plans.iter_mut().filter(|p| p.mode == PolicyMode::DryRun) {
        // `None` sorts before any instant: never checked comes first. The sort is stable.
        plan.evictions
            .sort_by_key(|e| last_verified.get(&e.candidate.pod.key).copied());
    }
}

/// Records the dry runs the API server answered, and forgets pods no DryRun plan holds any more
/// (so the record stays as large as the plans, not as large as every pod ever planned).
pub(crate) fn record_verified(
    last_verified: &mut LastVerified,
    policies: &[PolicyResult],
    now: Timestamp,
) {
    let planned: HashSet<&ObjectKey> = policies
        .iter()
        .filter(|p| p.plan.mode == PolicyMode::DryRun)
        .flat_map(|p| p.plan.evictions.iter().map(|e| &e.candidate.pod.key))
        .collect();
    last_verified.retain(|key, _| planned.contains(key));
    for policy in policies
        .iter()
        .filter(|p| p.plan.mode == PolicyMode::DryRun)
    {
        for (eviction, outcome) in policy.results() {
            if matches!(outcome, Outcome::WouldEvict | Outcome::Refused { .. }) {
                last_verified.insert(eviction.candidate.pod.key.clone(), now);
            }
        }
    }
}

/// Why a DryRun policy's planned eviction was not checked this cycle.
const OVER_VERIFY_BUDGET: &str =
    "not verified this cycle: the cycle's dry-run budget (--dry-run-verify-per-cycle) was used up";

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

/// One policy's plan, and what became of each of its planned evictions.
pub struct PolicyResult {
    pub plan: Plan,
    /// One per `plan.evictions`, in order (see [`PolicyResult::new`]).
    outcomes: Vec<Outcome>,
}

impl PolicyResult {
    /// Pairs the plan with the evictor's outcomes, which cover the first evictions of the plan (all
    /// of them unless [`sends`] held some back). Evictions without an outcome count as never sent
    /// (Evict) or unverified (DryRun), rather than shifting the others. In a DryRun policy a dry
    /// run not sent in time is unverified too: the plan stands, only its check is missing.
    pub fn new(plan: Plan, mut outcomes: Vec<Outcome>) -> Self {
        outcomes.truncate(plan.evictions.len());
        let dry_run = plan.mode == PolicyMode::DryRun;
        if dry_run {
            for outcome in &mut outcomes {
                if let Outcome::Abandoned(why) = outcome {
                    *outcome = Outcome::Unverified(std::mem::take(why));
                }
            }
        }
        while outcomes.len() < plan.evictions.len() {
            outcomes.push(if dry_run {
                Outcome::Unverified(OVER_VERIFY_BUDGET.to_owned())
            } else {
                Outcome::Abandoned("never sent".to_owned())
            });
        }
        PolicyResult { plan, outcomes }
    }

    pub fn outcomes(&self) -> &[Outcome] {
        &self.outcomes
    }

    /// Each planned eviction with its outcome.
    pub fn results(&self) -> impl Iterator<Item = (&PlannedEviction, &Outcome)> {
        self.plan.evictions.iter().zip(&self.outcomes)
    }
}

/// What a finished cycle did.
pub struct CycleResult {
    pub now: Timestamp,
    pub zones: BTreeMap<String, ZoneView>,
    /// Running preemptable pods per zone, as the plan saw them.
    pub preemptable: BTreeMap<String, u32>,
    pub policies: Vec<PolicyResult>,
}

/// The per-zone gauges of a cycle; zones whose windows cannot be read have none (their error is in
/// status and events).
pub(crate) fn zone_gauges(
    zones: &BTreeMap<String, ZoneView>,
    preemptable: impl Fn(&str) -> u32,
) -> Vec<ZoneGauges> {
    zones
        .values()
        .filter_map(|view| {
            let state = view.state.as_ref().ok()?;
            Some(ZoneGauges {
                zone: view.name.clone(),
                open: state.open,
                draining: state.draining,
                next_change: state
                    .next_change
                    .map(|t| t.as_millisecond() as f64 / 1000.0),
                preemptable_pods: preemptable(&view.name),
            })
        })
        .collect()
}

/// Warnings not logged by the cycle before.
pub(crate) fn fresh_warnings<'w>(logged: &BTreeSet<String>, current: &'w [String]) -> Vec<&'w str> {
    current
        .iter()
        .filter(|w| !logged.contains(*w))
        .map(String::as_str)
        .collect()
}

/// Pods the API server evicted, with their policy and whether the eviction was confirmed (an
/// unanswered attempt that a retry found done is not).
pub(crate) fn evicted(policies: &[PolicyResult]) -> Vec<(&str, &Candidate, bool)> {
    policies
        .iter()
        .flat_map(|result| {
            result
                .results()
                .filter(|(_, outcome)| outcome.evicted())
                .map(|(e, outcome)| {
                    let confirmed = *outcome == Outcome::Evicted;
                    (result.plan.policy.as_str(), &e.candidate, confirmed)
                })
        })
        .collect()
}

/// Pods refused for unreadable settings, with the detail: each gets a Warning Event.
pub(crate) fn invalid_pods(policies: &[PolicyResult]) -> Vec<(&Candidate, &str)> {
    policies
        .iter()
        .flat_map(|result| &result.plan.skipped)
        .filter(|skip| skip.reason == SkipReason::Gate(GateId::Invalid))
        .map(|skip| (&skip.candidate, skip.detail.as_str()))
        .collect()
}

/// What the cycle adds to the per-policy counters.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Tallies {
    pub planned: BTreeMap<PolicyStrategy, u64>,
    pub evictions: BTreeMap<EvictionLabels, u64>,
    /// Refused by a gate of the plan, or by the API server at eviction time.
    pub skips: BTreeMap<SkipLabels, u64>,
}

pub(crate) fn tallies(policies: &[PolicyResult]) -> Tallies {
    let mut t = Tallies::default();
    for result in policies {
        let policy = &result.plan.policy;
        let skip = |reason: SkipReason| SkipLabels {
            policy: policy.clone(),
            gate: reason.to_string(),
        };
        // The counts, not the rows: a plan lists only the first skips in detail.
        for (reason, n) in &result.plan.skip_counts {
            *t.skips.entry(skip(*reason)).or_default() += u64::from(*n);
        }
        for (eviction, outcome) in result.results() {
            let c = &eviction.candidate;
            let planned = PolicyStrategy {
                policy: policy.clone(),
                strategy: c.strategy.to_string(),
            };
            *t.planned.entry(planned).or_default() += 1;
            let labels = EvictionLabels {
                policy: policy.clone(),
                strategy: c.strategy.to_string(),
                result: outcome.label().to_owned(),
                zone: c.zone.clone().unwrap_or_default(),
            };
            *t.evictions.entry(labels).or_default() += 1;
            if let Some(refusal) = outcome.refusal() {
                *t.skips.entry(skip(refusal.reason)).or_default() += 1;
            }
        }
    }
    t
}

/// Everything cycles share across runs.
pub struct Runtime {
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
            .map(|zone| zone_clock(zone, zone.last_eviction_round, now))
            .collect();
        (policies, zones)
    }

    /// The same, as the last cycle's snapshot saw them (with the rounds it started). The scheduler
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{
        framework::{Skipped, StrategyId},
        testkit::pod,
    };

    fn candidate(name: &str, zone: Option<&str>) -> Candidate {
        let pod = Arc::new(
            pod(&format!("ns/{name}"), "n1")
                .requests("100m", "64Mi")
                .build(),
        );
        let candidate = Candidate::new(&pod, StrategyId::Tdm, "zone closed");
        match zone {
            Some(zone) => candidate.in_zone(zone),
            None => candidate,
        }
    }

    fn plan(policy: &str, evictions: &[&str], skipped: &[(&str, SkipReason)]) -> Plan {
        Plan {
            policy: policy.to_owned(),
            mode: PolicyMode::Evict,
            evictions: evictions
                .iter()
                .map(|name| PlannedEviction {
                    candidate: candidate(name, Some("rz")),
                })
                .collect(),
            skipped: skipped
                .iter()
                .map(|(name, reason)| Skipped {
                    candidate: candidate(name, Some("rz")),
                    reason: *reason,
                    detail: "why".to_owned(),
                })
                .collect(),
            skip_counts: skipped.iter().fold(BTreeMap::new(), |mut counts, (_, r)| {
                *counts.entry(*r).or_default() += 1;
                counts
            }),
            error: None,
            strategy_durations: Vec::new(),
        }
    }

    fn dry_run(plan: Plan) -> Plan {
        Plan {
            mode: PolicyMode::DryRun,
            ..plan
        }
    }

    #[test]
    fn dry_runs_are_sent_within_the_cycle_budget_and_real_evictions_in_full() {
        let many: Vec<String> = (0..3_000).map(|i| format!("p{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let plans = [
            dry_run(plan("first", &many[..30], &[])),
            plan("evict", &many[..500], &[]),
            dry_run(plan("second", &many, &[])),
            dry_run(plan("third", &many[..5], &[])),
        ];
        assert_eq!(sends(&plans, 50), [30, 500, 20, 0]);
        assert_eq!(sends(&plans, 0), [0, 500, 0, 0]);
        assert_eq!(sends(&plans, 10_000), [30, 500, 3_000, 5]);
    }

    #[test]
    fn a_large_dry_run_plan_is_planned_verified_up_to_the_budget_and_never_abandoned() {
        let many: Vec<String> = (0..4_225).map(|i| format!("p{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let budget = 50;
        let dry = dry_run(plan("dry", &many, &[]));
        let evict = plan("evict", &["e1", "e2"], &[]);
        let sent = sends(&[dry.clone(), evict.clone()], budget);
        // What the evictor answers: 48 accepted, a PDB refusal, one not sent before the deadline.
        let mut answers = vec![Outcome::WouldEvict; sent[0] - 2];
        answers.push(Outcome::Refused {
            reason: SkipReason::Pdb,
            detail: "budget".into(),
        });
        answers.push(Outcome::Abandoned("cycle deadline reached".into()));
        let policies = [
            PolicyResult::new(dry, answers),
            PolicyResult::new(evict, vec![Outcome::Evicted, Outcome::Evicted]),
        ];
        let t = tallies(&policies);
        let labels = |policy: &str, result: &str| EvictionLabels {
            policy: policy.into(),
            strategy: "tdm".into(),
            result: result.into(),
            zone: "rz".into(),
        };
        let planned = PolicyStrategy {
            policy: "dry".into(),
            strategy: "tdm".into(),
        };
        assert_eq!(t.planned[&planned], 4_225);
        assert_eq!(
            t.evictions,
            BTreeMap::from([
                (labels("dry", "dry_run"), 48),
                (labels("dry", "refused"), 1),
                (labels("dry", "unverified"), 4_225 - 49),
                (labels("evict", "evicted"), 2),
            ])
        );
        let pdb = SkipLabels {
            policy: "dry".into(),
            gate: "pdb".into(),
        };
        assert_eq!(t.skips, BTreeMap::from([(pdb, 1)]));

        let counts = PolicyCounts::of(&policies[0].plan, policies[0].outcomes());
        assert_eq!(
            (
                counts.planned,
                counts.accepted,
                counts.refused,
                counts.unverified
            ),
            (4_225, 48, 1, 4_176)
        );
        assert!(!counts.skipped.contains_key("abandoned"), "{counts:?}");
        // An Evict policy's unsent evictions are still abandoned: they were meant to happen.
        let short = PolicyResult::new(plan("evict", &["a", "b"], &[]), vec![Outcome::Evicted]);
        assert!(matches!(short.outcomes()[1], Outcome::Abandoned(_)));
    }

    fn names<'a>(list: impl IntoIterator<Item = &'a Candidate>) -> Vec<String> {
        list.into_iter().map(|c| c.pod.key.to_string()).collect()
    }

    #[test]
    fn zone_gauges_follow_the_zone_views_and_leave_out_unreadable_zones() {
        let snapshot = {
            let mut cache = crate::cluster::ClusterCache::new();
            cache.apply_zone(crate::testkit::closed_zone("closed").build());
            cache.apply_zone(crate::testkit::open_zone("open").build());
            cache.apply_zone(crate::testkit::zone("broken").window("25:00-26:00").build());
            cache.snapshot()
        };
        let now = crate::testkit::ts(crate::testkit::NOW);
        let (views, _) = crate::framework::zone_views(&snapshot, now);
        let gauges = zone_gauges(&views, |zone| if zone == "closed" { 3 } else { 0 });
        let by_zone: BTreeMap<&str, &ZoneGauges> =
            gauges.iter().map(|g| (g.zone.as_str(), g)).collect();
        assert_eq!(by_zone.len(), 2, "{gauges:?}");
        assert!(!by_zone["closed"].open && by_zone["closed"].preemptable_pods == 3);
        assert!(by_zone["open"].open);
        assert!(
            by_zone["closed"]
                .next_change
                .is_some_and(|t| t > now.as_second() as f64)
        );
    }

    #[test]
    fn a_warning_is_logged_when_it_appears_not_every_cycle() {
        let first = vec!["zone x unknown".to_owned()];
        assert_eq!(fresh_warnings(&BTreeSet::new(), &first), ["zone x unknown"]);
        let logged: BTreeSet<String> = first.iter().cloned().collect();
        assert!(fresh_warnings(&logged, &first).is_empty());
        let changed = vec!["zone x unknown".to_owned(), "zone y unknown".to_owned()];
        assert_eq!(fresh_warnings(&logged, &changed), ["zone y unknown"]);
    }

    #[test]
    fn outcomes_stay_paired_with_their_evictions_even_if_one_is_missing() {
        let result = PolicyResult::new(plan("p", &["a", "b"], &[]), vec![Outcome::Evicted]);
        let pairs: Vec<(String, &Outcome)> = result
            .results()
            .map(|(e, o)| (e.candidate.pod.key.to_string(), o))
            .collect();
        assert_eq!(pairs[0], ("ns/a".to_owned(), &Outcome::Evicted));
        assert_eq!(pairs[1].0, "ns/b");
        assert!(matches!(pairs[1].1, Outcome::Abandoned(_)));
        let extra = PolicyResult::new(
            plan("p", &["a"], &[]),
            vec![Outcome::Evicted, Outcome::Gone],
        );
        assert_eq!(extra.outcomes().len(), 1);
    }

    #[test]
    fn only_real_evictions_get_pod_events_and_unconfirmed_ones_say_so() {
        let policies = [
            PolicyResult::new(
                plan("p", &["a", "b", "c", "d"], &[]),
                vec![
                    Outcome::Evicted,
                    Outcome::EvictedUnconfirmed,
                    Outcome::WouldEvict,
                    Outcome::Refused {
                        reason: SkipReason::Pdb,
                        detail: "budget".to_owned(),
                    },
                ],
            ),
            PolicyResult::new(plan("q", &["e"], &[]), vec![Outcome::Gone]),
        ];
        let evicted: Vec<(&str, String, bool)> = evicted(&policies)
            .into_iter()
            .map(|(policy, c, confirmed)| (policy, c.pod.key.to_string(), confirmed))
            .collect();
        assert_eq!(
            evicted,
            [
                ("p", "ns/a".to_owned(), true),
                ("p", "ns/b".to_owned(), false)
            ]
        );
    }

    #[test]
    fn invalid_pods_are_those_the_invalid_gate_refused() {
        let policies = [PolicyResult::new(
            plan(
                "p",
                &[],
                &[
                    ("bad", SkipReason::Gate(GateId::Invalid)),
                    ("held", SkipReason::HeldByPolicy),
                    ("young", SkipReason::Gate(GateId::Cooldown)),
                ],
            ),
            vec![],
        )];
        let invalid = invalid_pods(&policies);
        assert_eq!(names(invalid.iter().map(|(c, _)| *c)), ["ns/bad"]);
        assert_eq!(invalid[0].1, "why");
    }

    #[test]
    fn tallies_count_plan_skips_and_eviction_refusals_under_one_label_set() {
        let policies = [PolicyResult::new(
            plan(
                "p",
                &["a", "b", "c"],
                &[("d", SkipReason::Gate(GateId::Budget))],
            ),
            vec![
                Outcome::Evicted,
                Outcome::Refused {
                    reason: SkipReason::Pdb,
                    detail: String::new(),
                },
                Outcome::Evicted,
            ],
        )];
        let t = tallies(&policies);
        let planned = PolicyStrategy {
            policy: "p".into(),
            strategy: "tdm".into(),
        };
        assert_eq!(t.planned, BTreeMap::from([(planned, 3)]));
        let result = |result: &str| EvictionLabels {
            policy: "p".into(),
            strategy: "tdm".into(),
            result: result.into(),
            zone: "rz".into(),
        };
        assert_eq!(
            t.evictions,
            BTreeMap::from([(result("evicted"), 2), (result("refused"), 1)])
        );
        let skip = |gate: &str| SkipLabels {
            policy: "p".into(),
            gate: gate.into(),
        };
        assert_eq!(
            t.skips,
            BTreeMap::from([(skip("budget"), 1), (skip("pdb"), 1)])
        );
    }

    fn keys(plan: &Plan) -> Vec<String> {
        plan.evictions
            .iter()
            .map(|e| e.candidate.pod.key.to_string())
            .collect()
    }

    /// One cycle of a stable plan: order, send within the budget, every dry run sent is answered.
    fn verify_once(
        plans: &[Plan],
        budget: usize,
        last: &mut LastVerified,
        at: &str,
    ) -> Vec<String> {
        let mut plans = plans.to_vec();
        order_for_verification(&mut plans, last);
        let sent = sends(&plans, budget);
        let results: Vec<PolicyResult> = plans
            .into_iter()
            .zip(sent)
            .map(|(plan, n)| PolicyResult::new(plan, vec![Outcome::WouldEvict; n]))
            .collect();
        let verified = results
            .iter()
            .flat_map(|r| r.results())
            .filter(|(_, outcome)| **outcome == Outcome::WouldEvict)
            .map(|(e, _)| e.candidate.pod.key.to_string())
            .collect();
        record_verified(last, &results, at.parse().unwrap());
        verified
    }

    #[test]
    fn a_stable_dry_run_plan_larger_than_the_budget_is_verified_in_turn() {
        let names: Vec<String> = (0..10).map(|i| format!("p{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let plans = [dry_run(plan("dry", &names, &[]))];
        let mut last = LastVerified::new();
        let cycles: Vec<Vec<String>> = [
            "2026-11-22T04:00:00Z",
            "2026-11-22T04:01:00Z",
            "2026-11-22T04:02:00Z",
            "2026-11-22T04:03:00Z",
        ]
        .iter()
        .map(|at| verify_once(&plans, 4, &mut last, at))
        .collect();
        let ns = |names: &[&str]| names.iter().map(|n| format!("ns/{n}")).collect::<Vec<_>>();
        assert_eq!(cycles[0], ns(&["p0", "p1", "p2", "p3"]));
        assert_eq!(cycles[1], ns(&["p4", "p5", "p6", "p7"]));
        // The two never checked, then the two checked longest ago, in plan order.
        assert_eq!(cycles[2], ns(&["p8", "p9", "p0", "p1"]));
        assert_eq!(cycles[3], ns(&["p2", "p3", "p4", "p5"]));
    }

    #[test]
    fn verification_order_leaves_evict_plans_and_the_planned_set_alone() {
        let mut plans = vec![
            plan("evict", &["e1", "e2", "e3"], &[]),
            dry_run(plan("dry", &["d1", "d2", "d3"], &[])),
        ];
        let at: Timestamp = "2026-11-22T04:00:00Z".parse().unwrap();
        let last: LastVerified = [
            (ObjectKey::new("ns", "e1"), at),
            (ObjectKey::new("ns", "d1"), at),
        ]
        .into();
        order_for_verification(&mut plans, &last);
        assert_eq!(keys(&plans[0]), ["ns/e1", "ns/e2", "ns/e3"]);
        assert_eq!(keys(&plans[1]), ["ns/d2", "ns/d3", "ns/d1"]);
    }

    #[test]
    fn only_answered_dry_runs_count_as_verified_and_pods_that_left_the_plan_are_forgotten() {
        let at: Timestamp = "2026-11-22T04:00:00Z".parse().unwrap();
        let mut last: LastVerified = [(ObjectKey::new("ns", "gone-from-plan"), at)].into();
        let results = vec![PolicyResult::new(
            dry_run(plan("dry", &["ok", "pdb", "late", "failed"], &[])),
            vec![
                Outcome::WouldEvict,
                Outcome::Refused {
                    reason: SkipReason::Pdb,
                    detail: "budget".into(),
                },
                Outcome::Abandoned("out of time".into()),
                Outcome::Failed("403".into()),
            ],
        )];
        record_verified(&mut last, &results, at);
        let mut verified: Vec<String> = last.keys().map(ToString::to_string).collect();
        verified.sort();
        assert_eq!(verified, ["ns/ok", "ns/pdb"]);
    }
}
