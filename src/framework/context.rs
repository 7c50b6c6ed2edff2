//! Everything a strategy or gate may read during one policy's planning, and the rules that combine a
//! pod's own settings with its PodGroup's and the policy's defaults.

use std::collections::{BTreeMap, HashSet};

use jiff::Timestamp;

use super::{gatekeeper::Gatekeeper, zones::ZoneView};
use crate::{
    api::{GoDuration, labels},
    cluster::{
        InvalidValue, JobBudget, JobKey, JobKind, JobState, NodeInfo, NodeState, ObjectKey,
        PodGroupInfo, PodInfo, PolicyInfo, Setting, Snapshot, rules::placement,
        store::snapshot::PodBudgets,
    },
};

/// Whether a pod may run on a node of a given revocable zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZonePlacement {
    /// Preemptable and not opted into a different zone.
    Allowed,
    Violation(Violation),
    /// Its preemptable setting is unreadable; gate `invalid` refuses it with the details.
    Unknown,
}

/// Why a pod may not run on a revocable zone's nodes. Written out only when a person will read it:
/// a closed zone can hold tens of thousands of pods that are not preemptable, counted every cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Violation {
    NotPreemptable,
    /// Preemptable, but opted into another zone (`pod.zone_opt_in`).
    OptedElsewhere,
}

impl Violation {
    pub fn describe(self, pod: &PodInfo, zone: &str) -> String {
        match self {
            Violation::NotPreemptable => {
                format!("not preemptable, on a node of revocable zone {zone}")
            }
            Violation::OptedElsewhere => format!(
                "{}={} but runs in revocable zone {zone}",
                labels::REVOCABLE_ZONE,
                pod.zone_opt_in.as_deref().unwrap_or_default()
            ),
        }
    }
}

pub struct PlanContext<'a> {
    pub snapshot: &'a Snapshot,
    pub policy: &'a PolicyInfo,
    pub now: Timestamp,
    pub zones: &'a BTreeMap<String, ZoneView>,
    /// Pods that earlier policies of this cycle will evict (those in mode `Evict`): they count as leaving.
    pub planned_elsewhere: &'a HashSet<ObjectKey>,
}

impl<'a> PlanContext<'a> {
    /// The pod's own value (label, then annotation), else its PodGroup's, else the policy default.
    pub fn preemptable(&self, pod: &PodInfo) -> Setting<bool> {
        self.declared_preemptable(pod)
            .or_else(|| Setting::Valid(self.policy.spec.defaults.preemptable))
    }

    /// Whether `pod` may run on a node of revocable zone `zone`: preemptable pods may (unless they opted
    /// into another zone); any other pod there is a placement violation.
    pub fn zone_placement(&self, pod: &PodInfo, zone: &str) -> ZonePlacement {
        match self.preemptable(pod) {
            Setting::Invalid(_) => ZonePlacement::Unknown,
            Setting::Valid(false) | Setting::Unset => {
                ZonePlacement::Violation(Violation::NotPreemptable)
            }
            // An empty annotation is read as no opt-in when the pod is parsed (cluster/pod.rs).
            Setting::Valid(true) => match pod.zone_opt_in.as_deref() {
                Some(opted) if opted != "*" && opted != zone => {
                    ZonePlacement::Violation(Violation::OptedElsewhere)
                }
                _ => ZonePlacement::Allowed,
            },
        }
    }

    /// What the pod or its PodGroup says, without the policy default: whether the owner opted in.
    pub fn declared_preemptable(&self, pod: &PodInfo) -> Setting<bool> {
        pod.preemptable.clone().or_else(|| {
            self.snapshot
                .podgroup_of(pod)
                .map_or(Setting::Unset, |g| g.preemptable.clone())
        })
    }

    /// Whether tidal's own placement rules (those the webhook applies, [`placement`]) let `pod`, or
    /// its replacement, run on `node` now: a non-preemptable pod on no revocable node, a preemptable
    /// one on no node of a closed or draining zone (nor of a zone whose windows cannot be read).
    /// Every destination a strategy or gate counts on must pass this, or tidal would plan a move the
    /// webhook then refuses.
    pub fn may_run_on(&self, pod: &PodInfo, node: &NodeInfo) -> bool {
        if !self.processes(node) {
            return false;
        }
        if node.revocable_zone.is_none() {
            return true;
        }
        let preemptable = placement::preemptable(pod, self.placement_group(pod));
        match placement::revocable_rule(pod, &preemptable, node) {
            Err(_) => false,
            Ok(None) => true,
            // A zone without a RevocableZone is not tidal's to manage (the webhook lets pods in).
            Ok(Some(zone)) => {
                self.zones
                    .get(zone)
                    .is_none_or(|view| view.state.as_ref().is_ok_and(|state| !state.evicting()))
                    && self.finishes_on(pod, zone)
            }
        }
    }

    /// Whether a preemptable pod started now on `zone` would finish before the zone closes, when it
    /// says how long it runs: the webhook keeps it off a zone that closes first
    /// ([`placement::closes_first`]), so no plan may count on it going there.
    fn finishes_on(&self, pod: &PodInfo, zone: &str) -> bool {
        // Searches ask this for every pod and destination: most pods say nothing of their run time,
        // and answer without a lookup.
        let may_declare = pod.active_deadline_seconds().is_some()
            || pod.expected_run_time().is_set()
            || pod.group_name.is_some();
        if !may_declare {
            return true;
        }
        let Some(info) = self.snapshot.zones.get(zone) else {
            return true;
        };
        let group = pod
            .group_name
            .as_ref()
            .and_then(|_| self.snapshot.podgroup_of(pod));
        let Some(run_time) = crate::cluster::run_time(pod, group) else {
            return true;
        };
        let grace = jiff::SignedDuration::from_secs(i64::from(pod.termination_grace_seconds()));
        placement::closes_first(info, run_time, grace, self.now).is_none()
    }

    /// Whether the policy's `nodeSelector` lets it act on `node`: evict its pods, count it as a
    /// destination, classify it. Every node when the policy has none.
    pub fn processes(&self, node: &NodeInfo) -> bool {
        self.policy
            .spec
            .node_selector
            .as_ref()
            .is_none_or(|selector| {
                crate::cluster::rules::matching::selector_matches(selector, &node.labels)
            })
    }

    /// Whether the policy may evict `pod` by where it runs ([`Self::processes`] its node). A pod on
    /// no node, or on one tidal does not know, is outside a policy with a `nodeSelector`.
    pub fn processes_pod(&self, pod: &PodInfo) -> bool {
        if self.policy.spec.node_selector.is_none() {
            return true;
        }
        pod.node_name
            .as_deref()
            .and_then(|name| self.snapshot.node(name))
            .and_then(|state| state.node.as_deref())
            .is_some_and(|node| self.processes(node))
    }

    /// Pods with the same constraint signature and placement key may run on the same nodes
    /// ([`Self::may_run_on`] reads nothing else of the pod), so searches can share results by both.
    pub fn placement_key(&self, pod: &PodInfo) -> u64 {
        let group = pod
            .group_name
            .as_ref()
            .and_then(|_| self.snapshot.podgroup_of(pod));
        key_with_group(pod, group)
    }

    /// [`Self::placement_key`], with the PodGroups it reads remembered in `groups`: a search of the
    /// snapshot's PodGroups compares names as strings, and balancing strategies ask for every pod they
    /// weigh, most of them in a few groups.
    pub(crate) fn placement_key_in(&self, pod: &PodInfo, groups: &mut PlacementGroups<'a>) -> u64 {
        let group = match pod.group_name.as_deref() {
            Some(name) => {
                let namespace = pod.key.namespace.as_str();
                // The strings themselves, by address and length: the snapshot holds them for the whole
                // plan, so equal pairs are the same names (and different copies of one name only
                // miss the cache).
                let names = [
                    namespace.as_ptr().addr(),
                    namespace.len(),
                    name.as_ptr().addr(),
                    name.len(),
                ];
                *groups
                    .0
                    .entry(names)
                    .or_insert_with(|| self.snapshot.podgroup_of(pod))
            }
            _ => None,
        };
        key_with_group(pod, group)
    }

    /// The PodGroup [`placement::preemptable`] would read: none when the pod says for itself, since the
    /// group is read only when the pod does not (looking it up builds a key, for every pod weighed).
    fn placement_group(&self, pod: &PodInfo) -> Option<&'a PodGroupInfo> {
        match pod.preemptable {
            Setting::Unset => self.snapshot.podgroup_of(pod),
            Setting::Valid(_) | Setting::Invalid(_) => None,
        }
    }

    /// The pod's `volcano.sh/cooldown-time`, else the policy default; `Unset` means no cooldown.
    pub fn cooldown(&self, pod: &PodInfo) -> Setting<GoDuration> {
        pod.cooldown.clone().or_else(|| {
            self.policy
                .spec
                .defaults
                .cooldown
                .map_or(Setting::Unset, Setting::Valid)
        })
    }

    /// The pod's `tidal.dev/expected-run-time`, else its PodGroup's.
    pub fn expected_run_time(&self, pod: &PodInfo) -> Setting<GoDuration> {
        crate::cluster::declared_run_time(pod, self.snapshot.podgroup_of(pod))
    }

    /// When the pod ends by itself, if it says (its deadline, or the run time it or its PodGroup
    /// declares).
    pub fn pod_end(&self, pod: &PodInfo) -> Option<crate::cluster::PodEnd> {
        if pod.active_deadline_seconds().is_none() && !pod.expected_run_time().is_set() {
            // Most pods say nothing: skip the PodGroup lookup unless the group might.
            pod.group_name.as_ref()?;
        }
        crate::cluster::pod_end(pod, self.snapshot.podgroup_of(pod))
    }

    /// The job's budget: from its PodGroup, else from its pods' annotations (which must agree), else the
    /// policy default. `Unset` means no budget (one eviction per round).
    pub fn job_budget(&self, job: &JobKey) -> Setting<JobBudget> {
        self.job_budget_in(job, self.snapshot.job(job))
    }

    /// [`Self::job_budget`] of a job already looked up (`state` is `snapshot.job(job)`): the gates read
    /// a job's budget and its pod counts from one search of the snapshot's jobs.
    pub fn job_budget_in(&self, job: &JobKey, state: Option<&JobState>) -> Setting<JobBudget> {
        let Some(state) = state else {
            return Setting::Unset;
        };
        let from_group = self
            .job_podgroup(job, state)
            .map_or(Setting::Unset, |g| g.budget.clone());
        from_group
            .or_else(|| agreed_pod_budget(job, state))
            .or_else(|| match &self.policy.default_budget {
                Ok(Some(budget)) => Setting::Valid(*budget),
                Ok(None) => Setting::Unset,
                Err(error) => Setting::Invalid(Box::new(InvalidValue {
                    object: format!("DeschedulingPolicy {}", self.policy.name),
                    key: "spec.defaults.jobBudget".to_owned(),
                    value: String::new(),
                    error: error.clone(),
                })),
            })
    }

    /// The PodGroup the pods of `job` name, if it exists: what [`Snapshot::podgroup_of`] finds for any
    /// of them. Read from the job's key, not from a pod (a descent of the pods' tree and a pointer to
    /// follow, for every job a plan reads): a pod naming a group is the job of that group (`job_of`),
    /// and the pods of any other job name none.
    fn job_podgroup(&self, job: &JobKey, state: &JobState) -> Option<&'a PodGroupInfo> {
        if !matches!(job.kind, JobKind::PodGroup) || state.pods.is_empty() {
            return None;
        }
        self.snapshot.podgroup(&job.namespace, &job.name)
    }

    /// The gang `job` is, when a drain that takes `leaving` of its running pods off a zone takes it
    /// below its PodGroup's `minMember` (more must leave than its running pods above the minimum):
    /// Volcano gives up the gang's work at that eviction, so its pods go together. `None` for a job
    /// that is no gang: no PodGroup, or a `minMember` of 1 (Volcano's default, also of the groups it
    /// makes for plain pods: such a job keeps its work while any pod runs, and loses it only with its
    /// last pod, when there is nothing left to hold back), or one above the job's pods (which the
    /// pods there are cannot mean: read as no gang rather than let it widen a round). `None` too for
    /// a gang the drain keeps at its minimum: pods replaced elsewhere round by round, within a budget
    /// whose round leaves `minMember` running.
    pub fn gang_taken_below_minimum(&self, job: &JobKey, leaving: u32) -> Option<super::Gang> {
        let state = self.snapshot.job(job)?;
        let group = self.job_podgroup(job, state)?;
        let min_member = u32::try_from(group.min_member?).ok().filter(|m| *m > 1)?;
        let stats = if self.planned_elsewhere.is_empty() {
            state.stats_as_is()
        } else {
            state.stats(|pod| self.is_leaving(pod))
        };
        if min_member > stats.total || stats.running.saturating_sub(min_member) >= leaving {
            return None;
        }
        if state.pods.values().any(|pod| pod.recreated_when_evicted()) {
            let budget = match self.job_budget_in(job, Some(state)) {
                Setting::Valid(budget) => Some(budget),
                Setting::Unset | Setting::Invalid(_) => None,
            };
            let per_round = crate::cluster::model::job_budget::allowed_evictions(budget, stats);
            if stats.running.saturating_sub(per_round) >= min_member {
                return None;
            }
        }
        Some(super::Gang {
            pods: stats.total,
            min_member,
        })
    }

    /// Counts as gone already: terminating, evicted earlier, or planned by another policy this cycle.
    pub fn is_leaving(&self, pod: &PodInfo) -> bool {
        // Strategies ask this of every pod they look at: skip hashing the key when nothing is planned.
        pod.is_leaving() || self.planned_elsewhere(pod)
    }

    /// An earlier policy of this cycle plans to evict `pod`.
    pub fn planned_elsewhere(&self, pod: &PodInfo) -> bool {
        !self.planned_elsewhere.is_empty() && self.planned_elsewhere.contains(&pod.key)
    }

    /// What a running strategy must count as gone: leaving, or admitted for eviction earlier in this
    /// plan (by an earlier strategy, or by this one). Strategies that weigh other pods (node usage,
    /// counts per domain, violations between pods) ask this rather than [`Self::is_leaving`], or one
    /// policy's strategies would each act on the same surplus.
    pub fn is_gone(&self, pod: &PodInfo, gatekeeper: &dyn Gatekeeper) -> bool {
        self.is_leaving(pod) || gatekeeper.admitted(pod)
    }

    /// No pod of `state`'s node is gone ([`Self::is_gone`]) among those holding resources, known
    /// without visiting them: nothing is planned elsewhere or admitted yet, and none is leaving.
    pub fn none_gone_on(&self, state: &NodeState, gatekeeper: &dyn Gatekeeper) -> bool {
        state.leaving == 0 && self.planned_elsewhere.is_empty() && !gatekeeper.admitted_any()
    }
}

/// PodGroups found for [`PlanContext::placement_key_in`], by the address and length of their namespace
/// and name strings. Valid for one plan (one snapshot).
#[derive(Default)]
pub(crate) struct PlacementGroups<'a>(foldhash::HashMap<[usize; 4], Option<&'a PodGroupInfo>>);

/// The budget the pods of a job carry. Pods of one job normally share a template; if they disagree we
/// cannot know which budget the owner meant, so the job is refused rather than given the looser one.
fn agreed_pod_budget(job: &JobKey, state: &JobState) -> Setting<JobBudget> {
    match state.pod_budgets() {
        PodBudgets::None => Setting::Unset,
        PodBudgets::Agreed(budget) => Setting::Valid(budget),
        // The error names the first invalid or differing budget in pod order: only a walk knows it.
        PodBudgets::Mixed => walk_pod_budgets(job, state.pods.values().map(|p| &p.budget)),
    }
}

/// [`agreed_pod_budget`] by visiting the budgets one by one.
fn walk_pod_budgets<'p>(
    job: &JobKey,
    budgets: impl Iterator<Item = &'p Setting<JobBudget>>,
) -> Setting<JobBudget> {
    let mut agreed: Option<JobBudget> = None;
    for budget in budgets {
        match budget {
            Setting::Invalid(_) => return budget.clone(),
            Setting::Unset => {}
            Setting::Valid(b) => match agreed {
                None => agreed = Some(*b),
                Some(a) if a == *b => {}
                Some(a) => {
                    return Setting::Invalid(Box::new(InvalidValue {
                        object: job.to_string(),
                        key: "job budget annotations".to_owned(),
                        value: format!("{a} / {b}"),
                        error: "the job's pods carry different budgets".to_owned(),
                    }));
                }
            },
        }
    }
    agreed.map_or(Setting::Unset, Setting::Valid)
}

/// [`placement::placement_key`] of `pod` in `group`, its PodGroup (if any).
fn key_with_group(pod: &PodInfo, group: Option<&PodGroupInfo>) -> u64 {
    // The group says whether the pod is preemptable only when the pod does not.
    let says_for_itself = !matches!(pod.preemptable, Setting::Unset);
    let preemptable = placement::preemptable(pod, group.filter(|_| !says_for_itself));
    placement::placement_key(pod, &preemptable, group)
}

#[cfg(test)]
mod destination_tests {
    use serde_json::json;

    use crate::testkit::{Cluster, node, pod, podgroup, policy, with_context, zone};

    /// A preemptable pod that says it runs three hours may not go to a zone that closes in one: the
    /// webhook would keep it off, so no plan may count on it there; one that runs 30 minutes may. A
    /// run time declared by the PodGroup counts as the pod's own, and the placement keys that
    /// searches share tell them apart.
    #[test]
    fn a_long_pod_may_not_go_to_a_zone_that_closes_before_it_could_finish() {
        let mut world = Cluster::new()
            .node(node("rev-1").zone("z"))
            .node(node("plain-1"))
            .zone(zone("z").window("20:00-05:00"))
            .podgroup(podgroup("batch/train").annotation("tidal.dev/expected-run-time", "3h"))
            .pods([
                pod("batch/long", "plain-1")
                    .preemptable()
                    .annotation("tidal.dev/expected-run-time", "3h"),
                pod("batch/short", "plain-1")
                    .preemptable()
                    .annotation("tidal.dev/expected-run-time", "30m"),
                pod("batch/worker", "plain-1")
                    .preemptable()
                    .in_group("train"),
                pod("batch/silent", "plain-1").preemptable(),
            ]);
        let snapshot = world.snapshot();
        let evict = policy(json!({"mode": "Evict"}));
        let nothing = std::collections::HashSet::new();
        // 04:00: the zone closes at 05:00.
        with_context(&snapshot, &evict, "2026-11-22T04:00:00Z", &nothing, |ctx| {
            let rev = snapshot.node("rev-1").unwrap().node.as_deref().unwrap();
            let pod = |name: &str| {
                snapshot
                    .pods()
                    .find(|p| p.key.name.as_str() == name)
                    .unwrap_or_else(|| panic!("no pod {name}"))
            };
            let goes = |name: &str| ctx.may_run_on(pod(name), rev);
            assert!(!goes("long"));
            assert!(!goes("worker"), "its PodGroup says it runs 3h");
            assert!(goes("short"));
            assert!(goes("silent"));
            assert_ne!(
                ctx.placement_key(pod("long")),
                ctx.placement_key(pod("short"))
            );
        });
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashSet};

    use proptest::prelude::*;
    use serde_json::json;

    use super::{PlanContext, agreed_pod_budget, walk_pod_budgets};
    use crate::{
        api::labels,
        cluster::{
            ClusterCache, JobKey, JobState, ObjectKey, PodInfo, Setting, Snapshot,
            store::snapshot::PodBudgets,
        },
        testkit::*,
    };

    const PHASES: [&str; 5] = ["Pending", "Running", "Succeeded", "Failed", "Unknown"];
    /// No budget, two agreeing-or-not maximums, a minimum, and one that does not parse.
    const BUDGETS: [Option<(&str, &str)>; 5] = [
        None,
        Some(("volcano.sh/jdb-max-unavailable", "1")),
        Some(("volcano.sh/jdb-max-unavailable", "2")),
        Some(("volcano.sh/jdb-min-available", "50%")),
        Some(("volcano.sh/jdb-max-unavailable", "lots")),
    ];
    /// Jobs below this are controllers' (`Job j<n>`); from it on, PodGroups' (`g<n - GROUPS_FROM>`).
    const GROUPS_FROM: u8 = 2;

    #[derive(Clone, Debug)]
    enum Event {
        Apply {
            slot: u8,
            job: u8,
            node: Option<u8>,
            phase: usize,
            terminating: bool,
            budget: usize,
        },
        Delete(u8),
        Evict(u8),
        ApplyGroup {
            group: u8,
            budget: usize,
        },
        DeleteGroup(u8),
        /// Brings the long-lived snapshot up to date and checks it.
        Update,
    }

    fn event() -> impl Strategy<Value = Event> {
        prop_oneof![
            6 => (0u8..10, 0..GROUPS_FROM + 2, prop::option::of(0u8..3), 0..PHASES.len(), any::<bool>(), 0..BUDGETS.len())
                .prop_map(|(slot, job, node, phase, terminating, budget)| Event::Apply {
                    slot, job, node, phase, terminating, budget,
                }),
            2 => (0u8..10).prop_map(Event::Delete),
            1 => (0u8..10).prop_map(Event::Evict),
            1 => (0u8..2, 0..BUDGETS.len()).prop_map(|(group, budget)| Event::ApplyGroup { group, budget }),
            1 => (0u8..2).prop_map(Event::DeleteGroup),
            1 => Just(Event::Update),
        ]
    }

    fn key(slot: u8) -> ObjectKey {
        ObjectKey::new("ns", format!("p{slot}"))
    }

    fn apply(cache: &mut ClusterCache, event: &Event) {
        let at = jiff::Timestamp::UNIX_EPOCH;
        match *event {
            Event::Apply {
                slot,
                job,
                node,
                phase,
                terminating,
                budget,
            } => {
                let node = node.map(|n| format!("n{n}")).unwrap_or_default();
                let mut pod = pod(&format!("ns/p{slot}"), &node)
                    .owned_by("Job", &format!("j{job}"))
                    .phase(PHASES[phase]);
                if job >= GROUPS_FROM {
                    pod = pod.annotation(labels::GROUP_NAME, &format!("g{}", job - GROUPS_FROM));
                }
                if terminating {
                    pod = pod.terminating();
                }
                if let Some((key, value)) = BUDGETS[budget] {
                    pod = pod.annotation(key, value);
                }
                cache.apply_pod(pod.build(), at);
            }
            Event::Delete(slot) => cache.delete_pod(&key(slot), at),
            Event::Evict(slot) => {
                cache.mark_evicting(&key(slot), at);
            }
            Event::ApplyGroup { group, budget } => {
                let mut group = podgroup(&format!("ns/g{group}"));
                if let Some((key, value)) = BUDGETS[budget] {
                    group = group.annotation(key, value);
                }
                cache.apply_podgroup(group.build());
            }
            Event::DeleteGroup(group) => {
                cache.delete_podgroup(&ObjectKey::new("ns", format!("g{group}")));
            }
            Event::Update => {}
        }
    }

    /// What the job keeps counted must be what a walk over its pods finds, and its budget what the
    /// PodGroup of its first pod, then a walk over its pods' budgets, say.
    fn check_job(ctx: &PlanContext<'_>, key: &JobKey, job: &JobState) -> Result<(), TestCaseError> {
        prop_assert_eq!(job.stats_as_is(), job.stats(PodInfo::is_leaving), "{}", key);
        let walked = walk_pod_budgets(key, job.pods.values().map(|p| &p.budget));
        prop_assert_eq!(&agreed_pod_budget(key, job), &walked, "{}", key);
        let expected = match &walked {
            Setting::Unset => PodBudgets::None,
            Setting::Valid(budget) => PodBudgets::Agreed(*budget),
            Setting::Invalid(_) => PodBudgets::Mixed,
        };
        prop_assert_eq!(job.pod_budgets(), expected, "{}", key);

        let group_of = |pod: &PodInfo| ctx.snapshot.podgroup_of(pod).map(|g| g.key.clone());
        let group = job.pods.values().next().and_then(|pod| group_of(pod));
        for pod in job.pods.values() {
            prop_assert_eq!(group_of(pod), group.clone(), "{}: one group for all", key);
        }
        let from_first_pod = group
            .map_or(Setting::Unset, |g| {
                ctx.snapshot.podgroups[&g].budget.clone()
            })
            .or_else(|| walked);
        prop_assert_eq!(ctx.job_budget_in(key, Some(job)), from_first_pod, "{}", key);
        Ok(())
    }

    fn check(snapshot: &Snapshot) -> Result<(), TestCaseError> {
        // No default budget: what a job's budget is comes from its PodGroup and its pods alone.
        let policy = policy(json!({}));
        let ctx = PlanContext {
            snapshot,
            policy: &policy,
            now: now(),
            zones: &BTreeMap::new(),
            planned_elsewhere: &HashSet::new(),
        };
        for (key, job) in &snapshot.jobs {
            check_job(&ctx, key, job)?;
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 200,
            rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
            ..ProptestConfig::default()
        })]

        /// Through the cache and the copy-on-write of its snapshots: a long-lived snapshot brought up
        /// to date at random points, and the snapshots taken along the way, which must keep what they
        /// had however the cache changes afterwards.
        #[test]
        fn job_summaries_equal_a_walk_over_the_job_s_pods(
            events in prop::collection::vec(event(), 1..60)
        ) {
            let mut cache = ClusterCache::new();
            let mut live = Snapshot::default();
            let mut taken = Vec::new();
            for event in &events {
                apply(&mut cache, event);
                if matches!(event, Event::Update) {
                    cache.update_snapshot(&mut live);
                    check(&live)?;
                    taken.push(live.clone());
                }
            }
            cache.update_snapshot(&mut live);
            check(&live)?;
            for snapshot in &taken {
                check(snapshot)?;
            }
        }
    }
}
