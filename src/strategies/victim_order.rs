//! The orders strategies pick victims in.

use std::{cmp::Reverse, sync::Arc};

use crate::cluster::{ObjectKey, PodBrief, PodInfo, QosClass};

/// The order the descheduler evicts in: pods without a priority first, then by ascending priority;
/// within a priority BestEffort, Burstable, Guaranteed; within those, pods annotated
/// `descheduler.alpha.kubernetes.io/prefer-no-eviction` last; then by name so that plans are
/// reproducible.
pub(crate) fn victim_order(pod: &PodInfo) -> (Option<i32>, QosClass, bool, &ObjectKey) {
    (pod.priority, pod.qos, pod.prefers_no_eviction, &pod.key)
}

/// [`victim_order`] as one number, for a pod at `position` among pods listed in key order: its priority
/// and QoS class (its brief's victim rank), then that position in place of the key. Keys are distinct,
/// so an unstable sort of them gives victim order, comparing integers rather than tuples (a sort per
/// overutilized node).
pub(crate) fn victim_key(brief: PodBrief, position: usize) -> u128 {
    u128::from(brief.victim_rank()) << 64 | position as u128
}

/// How many places ahead [`weighed_in_order`] asks for pods: enough to keep several misses in
/// flight, few enough that a node left early (back under its target) wastes little.
const PREFETCH_AHEAD: usize = 4;

/// A node's candidates in the order given, each asked for from memory a few places before it is
/// reached ([`PodInfo::prefetch_weighed`]): a balancing strategy weighs tens of thousands of pods per
/// plan, most of them in no cache, with little work on each.
pub(crate) fn weighed_in_order<'p, K>(
    pods: &'p [(K, &'p Arc<PodInfo>)],
) -> impl Iterator<Item = &'p Arc<PodInfo>> {
    for (_, pod) in pods.iter().take(PREFETCH_AHEAD) {
        pod.prefetch_weighed();
    }
    pods.iter().enumerate().map(|(at, (_, pod))| {
        if let Some((_, ahead)) = pods.get(at + PREFETCH_AHEAD) {
            ahead.prefetch_weighed();
        }
        *pod
    })
}

/// Oldest first (by creation), then by name: for age-based strategies.
pub(crate) fn oldest_first(pod: &PodInfo) -> (Option<jiff::Timestamp>, &ObjectKey) {
    (pod.created_at, &pod.key)
}

/// Newest first, then by name: among interchangeable replicas, the one that has done the least work.
pub(crate) fn newest_first(pod: &PodInfo) -> (Reverse<Option<jiff::Timestamp>>, &ObjectKey) {
    (Reverse(pod.created_at), &pod.key)
}

#[cfg(test)]
mod tests {
    use super::{victim_key, victim_order};
    use crate::testkit::pod;

    #[test]
    fn victim_keys_sort_as_victim_order() {
        let mut pods = Vec::new();
        for (i, priority) in [
            None,
            Some(i32::MIN),
            Some(-10),
            Some(0),
            Some(7),
            Some(i32::MAX),
        ]
        .into_iter()
        .enumerate()
        {
            for qos in ["Guaranteed", "BestEffort", "Burstable"] {
                for (wish, prefix) in [(true, "a"), (false, "b")] {
                    // The annotated pod's name sorts first: only the annotation puts it after.
                    let mut builder = pod(&format!("a/{prefix}{i}-{qos}"), "n1").qos(qos);
                    if wish {
                        builder = builder
                            .annotation("descheduler.alpha.kubernetes.io/prefer-no-eviction", "");
                    }
                    if let Some(priority) = priority {
                        builder = builder.priority(priority);
                    }
                    pods.push(builder.build());
                }
            }
        }
        pods.sort_by(|a, b| a.key.cmp(&b.key));
        let mut by_key: Vec<usize> = (0..pods.len()).collect();
        by_key.sort_unstable_by_key(|&at| victim_key(pods[at].brief(), at));
        let mut by_order: Vec<usize> = (0..pods.len()).collect();
        by_order.sort_by(|&a, &b| victim_order(&pods[a]).cmp(&victim_order(&pods[b])));
        assert_eq!(by_key, by_order);
    }
}
