//! Label and annotation keys tidal reads. They are Volcano's on purpose, so that workloads labelled for
//! Volcano's TDM, CDP and job-disruption-budget plugins move to tidal unchanged.

/// Node label naming the revocable zone a node belongs to; pod annotation opting a pod into a zone (`*` = any).
pub const REVOCABLE_ZONE: &str = "volcano.sh/revocable-zone";
/// Pod or PodGroup label/annotation marking it as evictable when its zone closes.
pub const PREEMPTABLE: &str = "volcano.sh/preemptable";
/// Pod label or annotation: minimum time after scheduling before any strategy may evict the pod.
pub const COOLDOWN_TIME: &str = "volcano.sh/cooldown-time";
/// Pod or PodGroup label/annotation (tidal's own): how long the pod runs from its start before it ends
/// by itself (a Go duration, `3h`). A drain lets a pod that declares it will end before the close
/// finish, and admission keeps it off zones that close sooner.
pub const EXPECTED_RUN_TIME: &str = "tidal.dev/expected-run-time";
/// Pod annotation (tidal's own): when the pod last saved its work (RFC 3339), written by the workload.
/// A drain's eviction throws away only the work since then, and rounds take such pods first.
pub const CHECKPOINTED_AT: &str = "tidal.dev/checkpointed-at";
/// Pod condition (tidal's own) a drain sets on a preemptable pod of a zone that asks for
/// `evictionNotice`: the pod is evicted no sooner than `evictionNotice` after the condition's
/// `lastTransitionTime`. Status, not an annotation, so that a pod's own template cannot claim notice.
pub const EVICTION_NOTICE: &str = "tidal.dev/EvictionNotice";
/// Pod annotations (tidal's own) written with [`EVICTION_NOTICE`], for the workload to read through the
/// downward API: the instant before which the pod is not evicted, and the close before which it is.
pub const EVICT_AFTER: &str = "tidal.dev/evict-after";
pub const EVICT_BY: &str = "tidal.dev/evict-by";
/// Pod annotation naming its Volcano PodGroup.
pub const GROUP_NAME: &str = "scheduling.k8s.io/group-name";

/// Job disruption budget keys, short spelling first (Volcano's), then the long spelling of the seed design.
pub const MAX_UNAVAILABLE: [&str; 2] = [
    "volcano.sh/jdb-max-unavailable",
    "volcano.sh/job-disruption-budget-max-unavailable",
];
pub const MIN_AVAILABLE: [&str; 2] = [
    "volcano.sh/jdb-min-available",
    "volcano.sh/job-disruption-budget-min-available",
];

/// Pod annotation of the Kubernetes descheduler: `"true"` makes a pod evictable despite default protections.
pub const DESCHEDULER_EVICT: &str = "descheduler.alpha.kubernetes.io/evict";
/// Pod annotation of the Kubernetes descheduler: the pod prefers not to be evicted (whatever its
/// value). `protections.noEvictionPolicy` says whether that is a preference or a rule.
pub const PREFER_NO_EVICTION: &str = "descheduler.alpha.kubernetes.io/prefer-no-eviction";
/// Annotation the kubelet puts on mirror pods of static pods.
pub const MIRROR_POD: &str = "kubernetes.io/config.mirror";
