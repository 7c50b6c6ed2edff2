//! The slim pod tidal keeps: only what its decisions read, parsed once at ingest.

use std::{collections::BTreeMap, sync::Arc};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;

use crate::api::{GoDuration, labels};
use crate::cluster::Unnamed;
use crate::cluster::{
    model::constraints::Constraints,
    model::job_budget::JobBudget,
    model::keys::{Interner, JobKey, JobKind, Name, ObjectKey, PodUid},
    model::pod_labels::PodLabels,
    model::pod_status::{ConditionState, PodStatusSummary},
    model::resources::{Resources, pod_requests},
    model::setting::{InvalidValue, Setting, Sources, parse_bool},
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum PodPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
}

impl PodPhase {
    fn parse(phase: Option<&str>) -> Self {
        match phase {
            Some("Running") => PodPhase::Running,
            Some("Succeeded") => PodPhase::Succeeded,
            Some("Failed") => PodPhase::Failed,
            Some("Pending") | None => PodPhase::Pending,
            Some(_) => PodPhase::Unknown,
        }
    }

    pub fn is_finished(self) -> bool {
        matches!(self, PodPhase::Succeeded | PodPhase::Failed)
    }
}

/// Quality of service, in the order the descheduler evicts: BestEffort first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum QosClass {
    BestEffort,
    Burstable,
    Guaranteed,
}

/// The controller kinds tidal treats specially, matched once when the pod is read: strategies ask
/// whether a pod is static or a DaemonSet's for every pod they weigh, and comparing the kind's string
/// each time was a tenth of a large plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ControllerKind {
    /// No controller, or one of any other kind.
    #[default]
    Other,
    DaemonSet,
    /// The pod's own Node: a static pod.
    Node,
}

impl ControllerKind {
    fn of(owner: Option<&OwnerRef>) -> Self {
        match owner.map(|o| o.kind.as_str()) {
            Some("DaemonSet") => ControllerKind::DaemonSet,
            Some("Node") => ControllerKind::Node,
            _ => ControllerKind::Other,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OwnerRef {
    pub kind: Name,
    pub name: Name,
    pub uid: Name,
}

/// Fields in the order they are laid out (`repr(C)`): what strategies read of every pod they pass over
/// (collecting a node's candidates reads the first 48 bytes), what the protections read of every pod
/// a balancing strategy weighs, what the strategy reads of it next (its requests, and what its
/// placement depends on), then what the gates read of the few weighed pods that are offered to them,
/// then the rest. Left to the compiler, the fields a strategy reads of each pod were spread
/// over the whole struct, five or six cache lines, and at 150,000 pods the plan waited on memory.
#[derive(Clone, Debug, PartialEq)]
#[repr(C)]
pub struct PodInfo {
    pub node_name: Option<Name>,
    /// tidal evicted it at this instant and has not yet seen it go. Set by the cache, never by ingest.
    /// Boxed: few pods are on their way out at any time, and inline every pod would pay 24 bytes.
    pub evicting_since: Option<Box<Timestamp>>,
    pub priority: Option<i32>,
    pub phase: PodPhase,
    pub qos: QosClass,
    /// The API server has set `deletionTimestamp`: the pod is terminating.
    pub terminating: bool,
    /// A kubelet mirror of a static pod: deleting it through the API does nothing.
    pub mirror: bool,
    /// `owner`'s kind, where it matters.
    pub controller_kind: ControllerKind,
    /// The requests could be read. A pod whose requests could not be read still takes its pod slot, and
    /// its node's load counts as unknown (see `NodeState::load_known`).
    pub requests_known: bool,
    /// `descheduler.alpha.kubernetes.io/evict` set to a true value.
    pub evict_annotation: bool,
    /// `descheduler.alpha.kubernetes.io/prefer-no-eviction` present (whatever its value, as the
    /// descheduler reads it).
    pub prefers_no_eviction: bool,
    /// `status.startTime` (when the kubelet took the pod on), as whole seconds after `created_at`,
    /// [`NOT_STARTED`] when there is none (see [`PodInfo::started_at`]): four bytes in what would
    /// otherwise be padding, where a timestamp would add sixteen to every pod.
    start_delay: u32,
    pub volumes: VolumeKinds,
    /// `spec.priorityClassName`, for the system-critical classes when priority admission did not run.
    pub priority_class_name: Option<Name>,
    /// The controller owner (`ownerReferences[].controller == true`). Shared with the other pods
    /// of the same owner (the cache interns it).
    pub owner: Option<Arc<OwnerRef>>,
    /// What few pods have: see [`Rare`]. Boxed so that the others pay one pointer for it.
    rare: Option<Box<Rare>>,
    /// What the pod asks the scheduler for. When `requests_known` is false, only its pod slot.
    pub requests: Resources,
    /// Node selector, affinities, tolerations and spread constraints.
    /// Shared between pods of one shape (the cache interns it): replicas of a workload carry the same
    /// selector, affinity, tolerations and spread constraints.
    pub constraints: Arc<Constraints>,
    /// The pod's own `volcano.sh/preemptable` (label first, then annotation).
    pub preemptable: Setting<bool>,
    /// `scheduling.k8s.io/group-name`: the Volcano PodGroup the pod belongs to.
    pub group_name: Option<Name>,
    /// `volcano.sh/revocable-zone` annotation: the zone (or `*`) the pod opted into. An empty value
    /// names no zone and reads as no annotation, so that admission and the sweep agree on it.
    pub zone_opt_in: Option<Name>,
    pub key: ObjectKey,
    // What only the candidates offered to the gates read, after what every pod weighed reads.
    pub job: JobKey,
    /// Job budget annotations on the pod (read when its PodGroup carries none).
    pub budget: Setting<JobBudget>,
    /// `volcano.sh/cooldown-time` (label first, then annotation).
    pub cooldown: Setting<GoDuration>,
    pub labels: PodLabels,
    pub uid: PodUid,
    pub created_at: Option<Timestamp>,
    /// When `PodScheduled` last became true: cooldown counts from here.
    pub scheduled_at: Option<Timestamp>,
    pub images_hash: u64,
    pub status: PodStatusSummary,
}

/// What a strategy reads of every pod of a node it passes over, packed in one word that the pod maps
/// keep beside each pod ([`crate::cluster::PodMap::briefed`]): whether the pod could be moved at all as it
/// stands, and its rank in the descheduler's victim order. A busy node's pods are read this way without
/// visiting each pod's own memory, and most of them are then never weighed (the node is back under its
/// target first). Fixed for one version of a pod: the cache replaces the whole pod when it changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodBrief(u64);

impl PodBrief {
    const MOVABLE: u64 = 1 << 63;

    fn of(pod: &PodInfo) -> Self {
        // No priority before every priority; flipping the sign bit keeps i32 order among unsigned
        // values. 33 bits, then 2 for the QoS class, then 1 for `prefer-no-eviction`.
        let priority = pod
            .priority
            .map_or(0, |p| 1 + u64::from(p.cast_unsigned() ^ 0x8000_0000));
        let rank = priority << 3 | (pod.qos as u64) << 1 | u64::from(pod.prefers_no_eviction);
        let movable = pod.node_name.is_some()
            && !pod.is_static()
            && !pod.phase.is_finished()
            && !pod.is_leaving();
        PodBrief(rank | if movable { Self::MOVABLE } else { 0 })
    }

    /// Bound, not static, not finished, not on its way out: what strategies may consider moving at
    /// all, before what this cycle plans.
    pub fn movable(self) -> bool {
        self.0 & Self::MOVABLE != 0
    }

    /// Ascending in the descheduler's victim order: no priority first, then by ascending priority,
    /// within a priority BestEffort, Burstable, Guaranteed, within those pods that prefer not to be
    /// evicted last. 36 bits.
    pub fn victim_rank(self) -> u64 {
        self.0 & !Self::MOVABLE
    }
}

/// The one shared copy of each thing pods repeat, which [`PodInfo::intern`] hands out.
#[derive(Debug, Default)]
pub struct PodInterner {
    names: Interner,
    label_sets: Interner<PodLabels>,
    owners: Interner<Arc<OwnerRef>>,
    jobs: Interner<JobKey>,
    conditions: Interner<Arc<ConditionState>>,
}

impl PodInterner {
    /// Shares `name` with the pods that name the same thing (a node a pod is bound to, say).
    pub(crate) fn intern_name(&mut self, name: &mut Name) {
        self.names.intern(name);
    }
}

/// The parts of a pod that almost every pod lacks.
#[derive(Clone, Debug, Default, PartialEq)]
struct Rare {
    /// Fields tidal could not read (e.g. malformed resource quantities); such a pod is never evicted.
    problems: Vec<InvalidValue>,
    /// Kinds of the owner references that are not the controller's (which `owner` holds).
    other_owner_kinds: Vec<Name>,
    /// The PersistentVolumeClaims the pod mounts, by name: its `persistentVolumeClaim` volumes' and
    /// the claims its generic ephemeral volumes get (`<pod>-<volume>`).
    claims: Vec<Name>,
    /// `spec.terminationGracePeriodSeconds` when it is not the API server's default.
    termination_grace: Option<u32>,
    /// `spec.activeDeadlineSeconds`: the kubelet ends the pod this long after its start.
    active_deadline: Option<u32>,
    /// [`labels::EXPECTED_RUN_TIME`] on the pod (label first, then annotation), when set.
    expected_run_time: Setting<GoDuration>,
    /// [`labels::CHECKPOINTED_AT`], when set.
    checkpointed_at: Setting<Timestamp>,
}

/// The grace period the API server gives a pod that does not set one.
pub(crate) const DEFAULT_TERMINATION_GRACE_SECONDS: u32 = 30;

/// The kinds of volume the evictor protections care about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VolumeKinds {
    /// `emptyDir` or `hostPath`: data that dies with the pod or stays on the node.
    pub local_storage: bool,
    /// A `persistentVolumeClaim`, or a generic ephemeral volume (which is backed by one).
    pub pvc: bool,
    /// `spec.resourceClaims`: devices allocated through dynamic resource allocation.
    pub resource_claims: bool,
}

/// How much of a pod, from its start, a balancing strategy and the protections read of each pod
/// weighed: everything laid out before what only the gates read (see the layout test).
const WEIGHED_BYTES: usize = std::mem::offset_of!(PodInfo, job);

impl PodInfo {
    /// Asks the processor to start loading what weighing reads of this pod ([`WEIGHED_BYTES`]), without
    /// waiting for it. At 150,000 pods nearly every pod weighed is a cache miss on each of its lines, and
    /// a strategy does little work per pod: prefetching the pods a few places ahead lets their misses
    /// overlap instead of following one another. A hint only: nothing is read, nothing can fault.
    #[inline]
    pub fn prefetch_weighed(&self) {
        crate::cluster::store::prefetch::bytes(std::ptr::from_ref(self), WEIGHED_BYTES);
    }

    /// Converts an API pod. Fails only if the pod has no name, which the API server never sends.
    pub fn from_pod(pod: &Pod) -> Result<PodInfo, Unnamed> {
        let meta = &pod.metadata;
        let name = meta.name.clone().ok_or(Unnamed::name("pod"))?;
        // Pods are namespaced: one without a namespace would be a job of its own under `/name`, with a
        // budget of its own, so a job could lose more pods than its budget allows. Refused, as a zone
        // without a name is.
        let namespace = meta
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .ok_or(Unnamed {
                kind: "pod",
                field: "namespace",
            })?;
        let key = ObjectKey::new(namespace, name);
        let object = format!("Pod {key}");
        let labels = meta.labels.clone().unwrap_or_default();
        let empty = BTreeMap::new();
        let annotations = meta.annotations.as_ref().unwrap_or(&empty);
        let label_then_annotation = Sources {
            object: &object,
            maps: &[Some(&labels), Some(annotations)],
        };

        let owner = meta
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
            .map(|o| {
                Arc::new(OwnerRef {
                    kind: o.kind.as_str().into(),
                    name: o.name.as_str().into(),
                    uid: o.uid.as_str().into(),
                })
            });
        let other_owner_kinds: Vec<Name> = meta
            .owner_references
            .iter()
            .flatten()
            .filter(|o| o.controller != Some(true))
            .map(|o| o.kind.as_str().into())
            .collect();
        let group_name: Option<Name> = annotations
            .get(labels::GROUP_NAME)
            .filter(|g| !g.is_empty())
            .map(Name::from);
        let job = job_of(&key, group_name.as_ref(), owner.as_deref());

        let spec = pod.spec.as_ref();
        let status = pod.status.as_ref();
        let mut problems = Vec::new();
        let (requests, requests_known) = match spec.map(pod_requests).transpose() {
            Ok(requests) => (requests.unwrap_or_default(), true),
            Err((resource, error)) => {
                problems.push(InvalidValue {
                    object: object.clone(),
                    key: format!("resources.requests.{resource}"),
                    value: error.text.clone(),
                    error: error.reason.to_owned(),
                });
                // Counting the pod as requesting nothing would make its node look emptier than it is.
                // Its slot is certain; the rest is flagged on the node instead.
                let slot = Resources {
                    pods: 1,
                    ..Resources::default()
                };
                (slot, false)
            }
        };
        let scheduled_at = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|conditions| {
                conditions
                    .iter()
                    .find(|c| c.type_ == "PodScheduled" && c.status == "True")
            })
            .and_then(|c| c.last_transition_time.as_ref())
            .map(|t| t.0);

        let pod_volumes = spec.and_then(|s| s.volumes.as_ref()).into_iter().flatten();
        let mut volumes = pod_volumes
            .clone()
            .fold(VolumeKinds::default(), |kinds, v| VolumeKinds {
                local_storage: kinds.local_storage
                    || v.empty_dir.is_some()
                    || v.host_path.is_some(),
                pvc: kinds.pvc || v.persistent_volume_claim.is_some() || v.ephemeral.is_some(),
                resource_claims: false,
            });
        volumes.resource_claims = spec
            .and_then(|s| s.resource_claims.as_ref())
            .is_some_and(|claims| !claims.is_empty());
        let claims: Vec<Name> = pod_volumes
            .filter_map(|v| match (&v.persistent_volume_claim, &v.ephemeral) {
                (Some(claim), _) => Some(Name::from(claim.claim_name.as_str())),
                (None, Some(_)) => Some(Name::from(format!("{}-{}", key.name, v.name).as_str())),
                (None, None) => None,
            })
            .collect();
        let images_hash = {
            let mut images: Vec<&str> = spec
                .into_iter()
                .flat_map(|s| &s.containers)
                .filter_map(|c| c.image.as_deref())
                .collect();
            images.sort_unstable();
            let mut hasher = std::hash::DefaultHasher::new();
            std::hash::Hash::hash(&images, &mut hasher);
            std::hash::Hasher::finish(&hasher)
        };

        // Negative values are refused by the API server; a hand-written dump's is read as none.
        let termination_grace = spec
            .and_then(|s| s.termination_grace_period_seconds)
            .map(|seconds| u32::try_from(seconds.max(0)).unwrap_or(u32::MAX))
            .filter(|seconds| *seconds != DEFAULT_TERMINATION_GRACE_SECONDS);
        // The API server refuses values below 1; a hand-written dump's are read as none.
        let active_deadline = spec
            .and_then(|s| s.active_deadline_seconds)
            .filter(|seconds| *seconds > 0)
            .map(|seconds| u32::try_from(seconds).unwrap_or(u32::MAX));
        let expected_run_time: Setting<GoDuration> =
            label_then_annotation.read_parsed(&[labels::EXPECTED_RUN_TIME]);
        let checkpointed_at: Setting<Timestamp> = Sources {
            object: &object,
            maps: &[Some(annotations)],
        }
        .read_parsed(&[labels::CHECKPOINTED_AT]);
        let rare = (!problems.is_empty()
            || !other_owner_kinds.is_empty()
            || !claims.is_empty()
            || termination_grace.is_some()
            || active_deadline.is_some()
            || expected_run_time.is_set()
            || checkpointed_at.is_set())
        .then(|| {
            Box::new(Rare {
                problems,
                other_owner_kinds,
                claims,
                termination_grace,
                active_deadline,
                expected_run_time,
                checkpointed_at,
            })
        });
        let controller_kind = ControllerKind::of(owner.as_deref());
        Ok(PodInfo {
            priority_class_name: spec
                .and_then(|s| s.priority_class_name.as_deref())
                .filter(|c| !c.is_empty())
                .map(Name::from),
            rare,
            constraints: Arc::new(Constraints::from_spec(spec)),
            volumes,
            images_hash,
            status: PodStatusSummary::from_status(status),
            uid: meta.uid.as_deref().map(PodUid::from).unwrap_or_default(),
            node_name: spec
                .and_then(|s| s.node_name.as_deref())
                .filter(|n| !n.is_empty())
                .map(Name::from),
            phase: PodPhase::parse(status.and_then(|s| s.phase.as_deref())),
            owner,
            job,
            group_name,
            priority: spec.and_then(|s| s.priority),
            qos: qos_class(pod),
            requests,
            requests_known,
            created_at: meta.creation_timestamp.as_ref().map(|t| t.0),
            scheduled_at,
            start_delay: start_delay(
                meta.creation_timestamp.as_ref().map(|t| t.0),
                status.and_then(|s| s.start_time.as_ref()).map(|t| t.0),
            ),
            terminating: meta.deletion_timestamp.is_some(),
            evicting_since: None,
            preemptable: label_then_annotation.read(&[labels::PREEMPTABLE], parse_bool),
            zone_opt_in: annotations
                .get(labels::REVOCABLE_ZONE)
                .filter(|zone| !zone.is_empty())
                .map(Name::from),
            cooldown: label_then_annotation.read_parsed(&[labels::COOLDOWN_TIME]),
            // Labels too, as for PodGroups: a budget set as a label must not be silently ignored.
            budget: JobBudget::read(&label_then_annotation),
            evict_annotation: annotations
                .get(labels::DESCHEDULER_EVICT)
                .is_some_and(|v| parse_bool(v).unwrap_or(false)),
            prefers_no_eviction: annotations.contains_key(labels::PREFER_NO_EVICTION),
            mirror: annotations.contains_key(labels::MIRROR_POD),
            controller_kind,
            key,
            labels: labels.into(),
        })
    }

    /// Fields tidal could not read (e.g. malformed resource quantities); such a pod is never evicted.
    pub fn problems(&self) -> &[InvalidValue] {
        self.rare.as_ref().map_or(&[], |r| &r.problems)
    }

    /// `status.startTime`, to the second: `protections.minPodAge` counts from here, as the
    /// descheduler does. `None` for a pod not started, or without a creation time to count from.
    pub fn started_at(&self) -> Option<Timestamp> {
        if self.start_delay == NOT_STARTED {
            return None;
        }
        let created = self.created_at?;
        created
            .checked_add(jiff::SignedDuration::from_secs(i64::from(self.start_delay)))
            .ok()
    }

    /// The PersistentVolumeClaims the pod mounts (see [`Rare::claims`]).
    pub fn claims(&self) -> &[Name] {
        self.rare.as_ref().map_or(&[], |r| &r.claims)
    }

    /// How long the pod may take to terminate once evicted: its `terminationGracePeriodSeconds`.
    pub fn termination_grace_seconds(&self) -> u32 {
        self.rare
            .as_ref()
            .and_then(|r| r.termination_grace)
            .unwrap_or(DEFAULT_TERMINATION_GRACE_SECONDS)
    }

    /// `spec.activeDeadlineSeconds`, when set.
    pub fn active_deadline_seconds(&self) -> Option<u32> {
        self.rare.as_ref().and_then(|r| r.active_deadline)
    }

    /// The pod's own [`labels::EXPECTED_RUN_TIME`] (its PodGroup's is read by the plan context).
    pub fn expected_run_time(&self) -> Setting<GoDuration> {
        self.rare
            .as_ref()
            .map_or(Setting::Unset, |r| r.expected_run_time.clone())
    }

    /// When the pod says it last saved its work ([`labels::CHECKPOINTED_AT`]).
    pub fn checkpointed_at(&self) -> Setting<Timestamp> {
        self.rare
            .as_ref()
            .map_or(Setting::Unset, |r| r.checkpointed_at.clone())
    }

    /// Whether the pod does work that ends, which an eviction throws away: a Job's, a gang's (a
    /// Volcano job in its PodGroup), a bare pod's, or any pod that says when it ends or when it saved its
    /// work. A replica of a Deployment or StatefulSet serves rather than computes: its replacement
    /// takes over, and its time run is not lost.
    pub fn runs_to_completion(&self) -> bool {
        let serves = self.owner.as_ref().is_some_and(|owner| {
            matches!(
                owner.kind.as_str(),
                "ReplicaSet" | "StatefulSet" | "ReplicationController" | "DaemonSet" | "Node"
            )
        });
        !serves
            || self.group_name.is_some()
            || self.active_deadline_seconds().is_some()
            || self.expected_run_time().is_set()
            || self.checkpointed_at().is_set()
    }

    /// The work an eviction at `now` throws away: [`Self::run_since_saved`] of a pod that runs to
    /// completion ([`Self::runs_to_completion`]), nothing of one that serves.
    pub fn work_since_saved(&self, now: Timestamp) -> jiff::SignedDuration {
        if self.runs_to_completion() {
            self.run_since_saved(now)
        } else {
            jiff::SignedDuration::ZERO
        }
    }

    /// How long the pod has run at `now` since its start, or since its last checkpoint when it says
    /// one. Zero for a pod not started.
    pub fn run_since_saved(&self, now: Timestamp) -> jiff::SignedDuration {
        let Some(started) = self.started_at() else {
            return jiff::SignedDuration::ZERO;
        };
        let saved = match self.checkpointed_at() {
            Setting::Valid(at) => started.max(at),
            Setting::Unset | Setting::Invalid(_) => started,
        };
        now.duration_since(saved).max(jiff::SignedDuration::ZERO)
    }

    /// Kinds of every owner reference, controller or not (`excludeOwnerKinds` looks at all of them).
    pub fn owner_kinds(&self) -> impl Iterator<Item = &str> {
        let others = self.rare.as_ref().map_or(&[][..], |r| &r.other_owner_kinds);
        self.owner
            .as_ref()
            .map(|o| o.kind.as_str())
            .into_iter()
            .chain(others.iter().map(Name::as_str))
    }

    /// Whether the pod has any owner reference, controller or not (a bare pod has none).
    pub fn has_owner(&self) -> bool {
        self.owner_kinds().next().is_some()
    }

    /// Replaces what other pods repeat with the shared copies in `shared`: the strings (namespace,
    /// node, zone, priority class, ...), the label set, the owner, the job key and what conditions
    /// say.
    pub fn intern(&mut self, shared: &mut PodInterner) {
        let names = &mut shared.names;
        self.labels.intern(&mut shared.label_sets, names);
        names.intern(&mut self.key.namespace);
        names.intern_option(&mut self.node_name);
        if let Some(owner) = &mut self.owner {
            shared.owners.intern_new(owner, |fresh| {
                // Only this pod holds an owner seen for the first time, so it can still be changed.
                if let Some(owner) = Arc::get_mut(fresh) {
                    names.intern(&mut owner.kind);
                    names.intern(&mut owner.name);
                    names.intern(&mut owner.uid);
                }
            });
        }
        self.job.intern(&mut shared.jobs, names);
        names.intern_option(&mut self.group_name);
        names.intern_option(&mut self.zone_opt_in);
        names.intern_option(&mut self.priority_class_name);
        if let Some(rare) = &mut self.rare {
            rare.other_owner_kinds
                .iter_mut()
                .for_each(|k| names.intern(k));
        }
        self.status.intern(names, &mut shared.conditions);
    }

    /// Running and not on its way out: what budgets count as available.
    pub fn is_available(&self) -> bool {
        self.phase == PodPhase::Running && !self.is_leaving()
    }

    /// Terminating, or evicted by tidal and not yet seen to terminate.
    pub fn is_leaving(&self) -> bool {
        self.terminating || self.evicting_since.is_some()
    }

    /// Holds node resources: assigned and not finished (the scheduler's accounting).
    pub fn holds_resources(&self) -> bool {
        !self.phase.is_finished()
    }

    /// A static pod (its API object is the kubelet's mirror, or it is owned by its Node): the API server
    /// cannot evict it.
    pub fn is_static(&self) -> bool {
        self.mirror || self.controller_kind == ControllerKind::Node
    }

    /// Owned by a DaemonSet.
    pub fn is_daemon_set_pod(&self) -> bool {
        self.controller_kind == ControllerKind::DaemonSet
    }

    /// What strategies read of every pod they pass over, in one word: see [`PodBrief`].
    pub fn brief(&self) -> PodBrief {
        PodBrief::of(self)
    }

    /// Priority for ordering victims: pods without a priority count as 0, as the scheduler treats them.
    pub fn priority_or_zero(&self) -> i32 {
        self.priority.unwrap_or(0)
    }

    /// Whether something recreates this pod once it is evicted: a controller owner other than a
    /// PodGroup (which only groups pods; its Volcano Job, a ReplicaSet, a StatefulSet... recreate
    /// them). A bare pod, or one owned by its PodGroup alone, is gone for good.
    pub fn recreated_when_evicted(&self) -> bool {
        self.owner
            .as_ref()
            .is_some_and(|owner| owner.kind.as_str() != "PodGroup")
    }

    /// Bound to its node by design (DaemonSet pod or static pod): evicting it cannot move it anywhere.
    pub fn is_node_bound(&self) -> bool {
        self.mirror || self.controller_kind != ControllerKind::Other
    }
}

/// [`PodInfo::start_delay`] of a pod with no start time.
const NOT_STARTED: u32 = u32::MAX;

/// Seconds from creation to start, rounded up so that the pod never reads older than it is (a start
/// before creation, from clock skew, counts as at creation; more than 136 years saturates). No start,
/// or no creation to count from: not started.
fn start_delay(created: Option<Timestamp>, started: Option<Timestamp>) -> u32 {
    let (Some(created), Some(started)) = (created, started) else {
        return NOT_STARTED;
    };
    let delay = started.duration_since(created);
    let seconds = delay.as_secs() + i64::from(delay.subsec_nanos() > 0);
    u32::try_from(seconds.max(0)).unwrap_or(NOT_STARTED - 1)
}

fn job_of(pod: &ObjectKey, group_name: Option<&Name>, owner: Option<&OwnerRef>) -> JobKey {
    let (kind, name) = match (group_name, owner) {
        (Some(group), _) => (JobKind::PodGroup, group.clone()),
        (None, Some(owner)) => (JobKind::Controller(owner.kind.clone()), owner.name.clone()),
        (None, None) => (JobKind::Pod, pod.name.clone()),
    };
    JobKey::new(pod.namespace.clone(), kind, name)
}

/// The API server's `status.qosClass` when present, else the same rule computed from the containers.
fn qos_class(pod: &Pod) -> QosClass {
    match pod.status.as_ref().and_then(|s| s.qos_class.as_deref()) {
        Some("Guaranteed") => return QosClass::Guaranteed,
        Some("Burstable") => return QosClass::Burstable,
        Some("BestEffort") => return QosClass::BestEffort,
        _ => {}
    }
    let Some(spec) = &pod.spec else {
        return QosClass::BestEffort;
    };
    let containers = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten());
    let mut any_set = false;
    let mut guaranteed = true;
    for container in containers {
        let resources = container.resources.as_ref();
        let requests = resources.and_then(|r| r.requests.as_ref());
        let limits = resources.and_then(|r| r.limits.as_ref());
        any_set |= requests.is_some_and(|r| !r.is_empty()) || limits.is_some_and(|l| !l.is_empty());
        for name in ["cpu", "memory"] {
            let limit = limits.and_then(|l| l.get(name));
            let request = requests.and_then(|r| r.get(name)).or(limit);
            if limit.is_none() || request != limit {
                guaranteed = false;
            }
        }
    }
    match (any_set, guaranteed) {
        (false, _) => QosClass::BestEffort,
        (true, true) => QosClass::Guaranteed,
        (true, false) => QosClass::Burstable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A running pod on `n1` with one container and the given `metadata`, nothing else.
    fn pod_with_metadata(metadata: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": metadata,
            "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
            "status": {"phase": "Running"},
        }))
        .unwrap()
    }

    #[test]
    fn a_brief_says_movable_only_of_a_bound_running_pod_that_is_not_static_nor_leaving() {
        use crate::testkit::pod;
        let movable = |builder: crate::testkit::PodBuilder| builder.build().brief().movable();
        assert!(movable(pod("a/plain", "n1")));
        assert!(movable(pod("a/pending", "n1").phase("Pending")));
        assert!(!movable(pod("a/unbound", "")));
        assert!(!movable(pod("a/done", "n1").phase("Succeeded")));
        assert!(!movable(pod("a/failed", "n1").phase("Failed")));
        assert!(!movable(pod("a/leaving", "n1").terminating()));
        assert!(!movable(
            pod("kube-system/etcd", "n1").annotation(labels::MIRROR_POD, "x")
        ));
        assert!(!movable(
            pod("kube-system/static", "n1").owned_by("Node", "n1")
        ));
        let mut evicting = pod("a/evicting", "n1").build();
        evicting.evicting_since = Some(Box::new(Timestamp::UNIX_EPOCH));
        assert!(!evicting.brief().movable());
        // The rank ignores whether the pod is movable.
        assert_eq!(
            pod("a/x", "n1").priority(7).build().brief().victim_rank(),
            pod("a/y", "n1")
                .priority(7)
                .phase("Succeeded")
                .build()
                .brief()
                .victim_rank()
        );
    }

    #[test]
    fn the_grace_period_is_the_pods_own_or_the_api_servers_default() {
        use crate::testkit::pod;
        let with = |seconds: i64| {
            pod("a/x", "n1")
                .spec("terminationGracePeriodSeconds", serde_json::json!(seconds))
                .build()
        };
        assert_eq!(with(60).termination_grace_seconds(), 60);
        assert_eq!(with(0).termination_grace_seconds(), 0);
        assert_eq!(with(-5).termination_grace_seconds(), 0, "never negative");
        assert_eq!(pod("a/y", "n1").build().termination_grace_seconds(), 30);
        assert!(with(30).rare.is_none(), "the default costs nothing");
    }

    #[test]
    fn what_strategies_read_of_every_pod_sits_in_one_cache_line() {
        use std::mem::offset_of;
        // With the 16 bytes of the `Arc`'s counts before them.
        let ends = [
            offset_of!(PodInfo, node_name) + size_of::<Option<Name>>(),
            offset_of!(PodInfo, evicting_since) + size_of::<Option<Box<Timestamp>>>(),
            offset_of!(PodInfo, priority) + size_of::<Option<i32>>(),
            offset_of!(PodInfo, phase) + 1,
            offset_of!(PodInfo, qos) + 1,
            offset_of!(PodInfo, terminating) + 1,
            offset_of!(PodInfo, mirror) + 1,
            offset_of!(PodInfo, controller_kind) + 1,
        ];
        assert!(ends.iter().all(|end| 16 + end <= 64), "{ends:?}");
        // What the protections and a balancing strategy read of every pod it weighs (tens of
        // thousands per plan, most of them never offered) comes before what only the gates read of
        // the candidates offered, so that weighing a pod reads four cache lines, not six.
        let weighed_ends = [
            offset_of!(PodInfo, priority_class_name) + size_of::<Option<Name>>(),
            offset_of!(PodInfo, owner) + size_of::<Option<Arc<OwnerRef>>>(),
            offset_of!(PodInfo, requests) + size_of::<Resources>(),
            offset_of!(PodInfo, constraints) + size_of::<Arc<Constraints>>(),
            offset_of!(PodInfo, preemptable) + size_of::<Setting<bool>>(),
            offset_of!(PodInfo, group_name) + size_of::<Option<Name>>(),
            offset_of!(PodInfo, zone_opt_in) + size_of::<Option<Name>>(),
            offset_of!(PodInfo, key) + size_of::<ObjectKey>(),
        ];
        let offered = [
            offset_of!(PodInfo, job),
            offset_of!(PodInfo, budget),
            offset_of!(PodInfo, cooldown),
            offset_of!(PodInfo, labels),
            offset_of!(PodInfo, uid),
            offset_of!(PodInfo, created_at),
            offset_of!(PodInfo, scheduled_at),
            offset_of!(PodInfo, images_hash),
            offset_of!(PodInfo, status),
        ];
        let weighed_end = weighed_ends.iter().max().copied().unwrap_or_default();
        assert!(16 + weighed_end <= 4 * 64, "{weighed_ends:?}");
        assert!(offered.iter().all(|&at| at >= weighed_end), "{offered:?}");
    }

    #[test]
    fn the_start_time_is_kept_as_seconds_after_creation_never_earlier() {
        let ts = |t: &str| t.parse::<Timestamp>().unwrap();
        let created = ts("2026-11-22T04:00:00Z");
        let at = |delay: u32| {
            let pod = PodInfo {
                created_at: Some(created),
                start_delay: delay,
                ..PodInfo::from_pod(&pod_with_metadata(
                    serde_json::json!({"name": "a", "namespace": "ns"}),
                ))
                .unwrap()
            };
            pod.started_at()
        };
        assert_eq!(
            start_delay(Some(created), Some(ts("2026-11-22T04:00:05Z"))),
            5
        );
        // A fraction of a second later is the next second: the pod reads younger, never older.
        assert_eq!(
            start_delay(Some(created), Some(ts("2026-11-22T04:00:05.2Z"))),
            6
        );
        assert_eq!(
            start_delay(Some(created), Some(ts("2026-11-22T03:59:00Z"))),
            0
        );
        assert_eq!(start_delay(Some(created), None), NOT_STARTED);
        assert_eq!(start_delay(None, Some(created)), NOT_STARTED);
        assert_eq!(at(5), Some(ts("2026-11-22T04:00:05Z")));
        assert_eq!(at(NOT_STARTED), None);
    }

    #[test]
    fn a_budget_set_as_a_pod_label_is_read() {
        let info = PodInfo::from_pod(&pod_with_metadata(serde_json::json!({
            "name": "a-0", "namespace": "ns",
            "labels": {"volcano.sh/jdb-max-unavailable": "1"},
        })))
        .unwrap();
        assert_eq!(
            info.budget,
            Setting::Valid(JobBudget::MaxUnavailable(
                crate::cluster::model::job_budget::IntOrPercent::Int(1)
            ))
        );
    }

    #[test]
    fn owner_kinds_and_problems_read_the_same_when_kept_apart() {
        let owned = PodInfo::from_pod(&pod_with_metadata(serde_json::json!({
            "name": "a-0", "namespace": "ns",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u1"},
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u2",
                 "controller": true},
            ],
        })))
        .unwrap();
        let mut kinds: Vec<&str> = owned.owner_kinds().collect();
        kinds.sort_unstable();
        assert_eq!(kinds, ["ConfigMap", "ReplicaSet"]);
        assert!(owned.has_owner());
        assert!(owned.problems().is_empty());

        // Only a non-controller owner: still owned (`bare_pods` must not treat it as bare).
        let referenced = PodInfo::from_pod(&pod_with_metadata(serde_json::json!({
            "name": "a-1", "namespace": "ns",
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u1"}],
        })))
        .unwrap();
        assert!(referenced.owner.is_none());
        assert_eq!(referenced.owner_kinds().collect::<Vec<_>>(), ["ConfigMap"]);

        let bare = PodInfo::from_pod(&pod_with_metadata(
            serde_json::json!({"name": "b", "namespace": "ns"}),
        ));
        let bare = bare.unwrap();
        assert!(!bare.has_owner());
        assert!(bare.rare.is_none(), "a plain pod pays no rare part");

        let mut malformed: Pod =
            pod_with_metadata(serde_json::json!({"name": "c", "namespace": "ns"}));
        malformed.spec.as_mut().unwrap().containers[0].resources =
            Some(serde_json::from_value(serde_json::json!({"requests": {"cpu": "lots"}})).unwrap());
        let malformed = PodInfo::from_pod(&malformed).unwrap();
        assert_eq!(malformed.problems().len(), 1);
        assert_eq!(malformed.problems()[0].key, "resources.requests.cpu");
    }

    #[test]
    fn interning_shares_what_pods_repeat_and_changes_nothing_they_say() {
        let replica = |name: &str| {
            PodInfo::from_pod(&pod_with_metadata(serde_json::json!({
                "name": name, "namespace": "ns", "labels": {"app": "web"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                     "uid": "u2", "controller": true}],
            })))
            .unwrap()
        };
        let mut shared = PodInterner::default();
        let (mut a, mut b) = (replica("a"), replica("b"));
        let before = b.clone();
        a.intern(&mut shared);
        b.intern(&mut shared);
        assert_eq!(b, before, "interning changes no value");
        assert!(a.key.namespace.ptr_eq(&b.key.namespace));
        assert!(
            a.node_name
                .as_ref()
                .unwrap()
                .ptr_eq(b.node_name.as_ref().unwrap())
        );
        let (oa, ob) = (a.owner.as_ref().unwrap(), b.owner.as_ref().unwrap());
        assert!(Arc::ptr_eq(oa, ob), "one owner for both");
        assert!(oa.name.ptr_eq(&ob.name) && oa.uid.ptr_eq(&ob.uid));
        assert!(
            crate::cluster::model::keys::Shared::same(&a.job, &b.job),
            "one job key for both"
        );
        assert!(a.job.name.ptr_eq(&oa.name) && a.job.namespace.ptr_eq(&a.key.namespace));
        assert!(crate::cluster::model::keys::Shared::same(
            &a.labels, &b.labels
        ));
        assert_eq!(b.job.to_string(), "ReplicaSet ns/rs");
    }

    #[test]
    fn a_pod_without_a_namespace_is_refused() {
        for metadata in [
            serde_json::json!({"name": "a-0"}),
            serde_json::json!({"name": "a-0", "namespace": ""}),
        ] {
            let error = PodInfo::from_pod(&pod_with_metadata(metadata)).unwrap_err();
            assert_eq!(error.to_string(), "pod without metadata.namespace");
        }
        let ok = PodInfo::from_pod(&pod_with_metadata(
            serde_json::json!({"name": "a-0", "namespace": "ns"}),
        ));
        assert_eq!(ok.unwrap().key, ObjectKey::new("ns", "a-0"));
    }
}
