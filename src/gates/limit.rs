//! Gate `limit`: caps on evictions per cycle — per node, per namespace, per job, per zone, per topology
//! zone and in total — shared by all strategies of a policy, and `limits.shared`, counted across the
//! policies that name it. The detail names the limit that was hit.

use super::SharedCounts;
use crate::{
    api::policy::EvictionLimits,
    cluster::PodInfo,
    framework::{Candidate, Gate, GateId, PlanContext},
};

/// The well-known node label of the failure-domain zone.
pub(crate) const TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";

pub(crate) struct Limit {
    limits: EvictionLimits,
    /// What every policy of the cycle admitted under the shared limits' names.
    shared: SharedCounts,
    total: u32,
    per_node: foldhash::HashMap<String, u32>,
    per_namespace: foldhash::HashMap<String, u32>,
    per_job: foldhash::HashMap<String, u32>,
    per_zone: foldhash::HashMap<String, u32>,
    per_topology_zone: foldhash::HashMap<String, u32>,
}

/// The keys a candidate counts under, one per kind of limit (`None` where it does not count).
/// A candidate's place for each limit that is set (`None` where the limit is not set or the candidate
/// has no such place).
struct Keys {
    node: Option<String>,
    namespace: Option<String>,
    job: Option<String>,
    zone: Option<String>,
    topology_zone: Option<String>,
}

impl Keys {
    const NONE: Keys = Keys {
        node: None,
        namespace: None,
        job: None,
        zone: None,
        topology_zone: None,
    };
}

/// Only the keys of the limits that are set: a limit that is not set is never counted, and building
/// every key (names copied, the job key formatted) for each candidate of a large plan cost more than
/// the rest of the gate.
fn keys(limits: &EvictionLimits, candidate: &Candidate, ctx: &PlanContext<'_>) -> Keys {
    let pod: &PodInfo = &candidate.pod;
    let node = || {
        pod.node_name
            .as_deref()
            .and_then(|n| ctx.snapshot.node(n))
            .and_then(|state| state.node.as_deref())
    };
    Keys {
        // `and_then`, not `and`: the name is copied only when the limit is set.
        node: limits
            .per_node
            .and_then(|_| pod.node_name.as_deref().map(String::from)),
        namespace: limits.per_namespace.map(|_| pod.key.namespace.to_string()),
        job: limits.per_job.map(|_| pod.job.to_string()),
        zone: limits.per_zone.and_then(|_| {
            candidate
                .zone
                .clone()
                .or_else(|| node().and_then(|n| n.revocable_zone.clone()))
        }),
        topology_zone: limits
            .per_topology_zone
            .and_then(|_| node().and_then(|n| n.labels.get(TOPOLOGY_ZONE).cloned())),
    }
}

fn count(map: &foldhash::HashMap<String, u32>, key: Option<&String>) -> u32 {
    key.and_then(|k| map.get(k)).copied().unwrap_or(0)
}

fn bump(map: &mut foldhash::HashMap<String, u32>, key: Option<String>, up: bool) {
    if let Some(key) = key {
        let entry = map.entry(key).or_default();
        *entry = if up {
            entry.saturating_add(1)
        } else {
            entry.saturating_sub(1)
        };
    }
}

impl Limit {
    pub(crate) fn new(limits: &EvictionLimits, shared: SharedCounts) -> Self {
        Limit {
            limits: limits.clone(),
            shared,
            total: 0,
            per_node: foldhash::HashMap::default(),
            per_namespace: foldhash::HashMap::default(),
            per_job: foldhash::HashMap::default(),
            per_zone: foldhash::HashMap::default(),
            per_topology_zone: foldhash::HashMap::default(),
        }
    }

    /// Some limit counts per place (node, namespace, job, zone): only then are a candidate's keys built.
    fn per_place(&self) -> bool {
        let limits = &self.limits;
        limits.per_node.is_some()
            || limits.per_namespace.is_some()
            || limits.per_job.is_some()
            || limits.per_zone.is_some()
            || limits.per_topology_zone.is_some()
    }

    /// The candidate's keys, or none at all when no limit counts per place (most policies): the total
    /// is counted either way.
    fn keys(&self, candidate: &Candidate, ctx: &PlanContext<'_>) -> Keys {
        if self.per_place() {
            keys(&self.limits, candidate, ctx)
        } else {
            Keys::NONE
        }
    }

    fn tally_shared(&self, candidate: &Candidate, up: bool) {
        if let Some(shared) = &self.limits.shared {
            let pod = &candidate.pod;
            self.shared.tally(
                &shared.name,
                pod.node_name.as_deref(),
                &pod.key.namespace,
                up,
            );
        }
    }

    fn tally(&mut self, keys: Keys, up: bool) {
        self.total = if up {
            self.total.saturating_add(1)
        } else {
            self.total.saturating_sub(1)
        };
        bump(&mut self.per_node, keys.node, up);
        bump(&mut self.per_namespace, keys.namespace, up);
        bump(&mut self.per_job, keys.job, up);
        bump(&mut self.per_zone, keys.zone, up);
        bump(&mut self.per_topology_zone, keys.topology_zone, up);
    }
}

impl Gate for Limit {
    fn id(&self) -> GateId {
        GateId::Limit
    }

    fn check(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) -> Result<(), String> {
        let limits = &self.limits;
        if let Some(max) = limits.total
            && self.total >= max
        {
            return Err(format!("total limit {max} per cycle reached"));
        }
        if let Some(shared) = &limits.shared {
            let pod = &candidate.pod;
            self.shared
                .check(shared, pod.node_name.as_deref(), &pod.key.namespace)?;
        }
        if !self.per_place() {
            return Ok(());
        }
        let keys = keys(limits, candidate, ctx);
        let checks = [
            (
                limits.per_node,
                &self.per_node,
                keys.node.as_ref(),
                "perNode",
                "on",
            ),
            (
                limits.per_namespace,
                &self.per_namespace,
                keys.namespace.as_ref(),
                "perNamespace",
                "in",
            ),
            (
                limits.per_job,
                &self.per_job,
                keys.job.as_ref(),
                "perJob",
                "for",
            ),
            (
                limits.per_zone,
                &self.per_zone,
                keys.zone.as_ref(),
                "perZone",
                "in zone",
            ),
            (
                limits.per_topology_zone,
                &self.per_topology_zone,
                keys.topology_zone.as_ref(),
                "perTopologyZone",
                "in topology zone",
            ),
        ];
        for (max, counts, key, field, place) in checks {
            if let (Some(max), Some(key)) = (max, key)
                && count(counts, Some(key)) >= max
            {
                return Err(format!("{field} limit {max} reached {place} {key}"));
            }
        }
        Ok(())
    }

    fn admit(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) {
        self.tally(self.keys(candidate, ctx), true);
        self.tally_shared(candidate, true);
    }

    fn retract(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) {
        self.tally(self.keys(candidate, ctx), false);
        self.tally_shared(candidate, false);
    }

    fn fits_together(&self, group: &[Candidate], ctx: &PlanContext<'_>) -> bool {
        let limits = &self.limits;
        let size = u32::try_from(group.len()).unwrap_or(u32::MAX);
        let within = |max: Option<u32>, keys: &mut dyn Iterator<Item = Option<String>>| {
            let Some(max) = max else {
                return true;
            };
            let mut counts: foldhash::HashMap<String, u32> = foldhash::HashMap::default();
            keys.flatten().all(|key| {
                let count = counts.entry(key).or_default();
                *count += 1;
                *count <= max
            })
        };
        if limits.total.is_some_and(|max| size > max) {
            return false;
        }
        if let Some(shared) = &limits.shared {
            let pods = || group.iter().map(|c| &c.pod);
            if shared.total.is_some_and(|max| size > max)
                || !within(
                    shared.per_node,
                    &mut pods().map(|pod| pod.node_name.as_deref().map(String::from)),
                )
                || !within(
                    shared.per_namespace,
                    &mut pods().map(|pod| Some(pod.key.namespace.to_string())),
                )
            {
                return false;
            }
        }
        if !self.per_place() {
            return true;
        }
        let keys: Vec<Keys> = group.iter().map(|c| keys(limits, c, ctx)).collect();
        within(limits.per_node, &mut keys.iter().map(|k| k.node.clone()))
            && within(
                limits.per_namespace,
                &mut keys.iter().map(|k| k.namespace.clone()),
            )
            && within(limits.per_job, &mut keys.iter().map(|k| k.job.clone()))
            && within(limits.per_zone, &mut keys.iter().map(|k| k.zone.clone()))
            && within(
                limits.per_topology_zone,
                &mut keys.iter().map(|k| k.topology_zone.clone()),
            )
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::*;

    /// Six pods that violate a taint, spread over namespaces, jobs, zones and nodes.
    fn cluster() -> Cluster {
        let tainted = |name: &str| {
            node(name)
                .allocatable("8", "16Gi", 110)
                .taint("maintenance", "yes", "NoSchedule")
        };
        Cluster::new()
            .node(tainted("n1").label(super::TOPOLOGY_ZONE, "z1").zone("rz1"))
            .node(tainted("n2").label(super::TOPOLOGY_ZONE, "z1"))
            .node(tainted("n3").label(super::TOPOLOGY_ZONE, "z2"))
            .pod(
                pod("a/web-1", "n1")
                    .requests("100m", "1Gi")
                    .owned_by("ReplicaSet", "web"),
            )
            .pod(
                pod("a/web-2", "n1")
                    .requests("100m", "1Gi")
                    .owned_by("ReplicaSet", "web"),
            )
            .pod(
                pod("a/web-3", "n2")
                    .requests("100m", "1Gi")
                    .owned_by("ReplicaSet", "web"),
            )
            .pod(
                pod("a/api-1", "n2")
                    .requests("100m", "1Gi")
                    .owned_by("ReplicaSet", "api"),
            )
            .pod(
                pod("b/db-1", "n3")
                    .requests("100m", "1Gi")
                    .owned_by("StatefulSet", "db"),
            )
            .pod(
                pod("b/db-2", "n3")
                    .requests("100m", "1Gi")
                    .owned_by("StatefulSet", "db"),
            )
    }

    fn plan(limits: &str) -> Outcome {
        cluster().plan(&format!(
            "mode: Evict\nstrategies:\n  removePodsViolatingNodeTaints: {{}}\ndefaults: {{jobBudget: {{maxUnavailable: 100%}}}}\nlimits: {limits}\n"
        ))
    }

    #[test]
    fn each_limit_names_itself() {
        let out = plan("{}");
        assert_eq!(out.evicted().len(), 6, "no limits");
        let out = plan("{total: 2}");
        assert_eq!(out.evicted(), ["a/web-1", "a/web-2"]);
        assert_eq!(out.detail("a/web-3"), "total limit 2 per cycle reached");
        let out = plan("{perNode: 1}");
        assert_eq!(out.evicted(), ["a/web-1", "a/api-1", "b/db-1"]);
        assert_eq!(out.detail("a/web-2"), "perNode limit 1 reached on n1");
        let out = plan("{perNamespace: 3}");
        assert_eq!(
            out.evicted(),
            ["a/web-1", "a/web-2", "a/api-1", "b/db-1", "b/db-2"]
        );
        assert_eq!(out.detail("a/web-3"), "perNamespace limit 3 reached in a");
        let out = plan("{perJob: 1}");
        assert_eq!(out.evicted(), ["a/web-1", "a/api-1", "b/db-1"]);
        assert_eq!(
            out.detail("a/web-2"),
            "perJob limit 1 reached for ReplicaSet a/web"
        );
        let out = plan("{perZone: 1}");
        assert_eq!(
            out.evicted(),
            ["a/web-1", "a/api-1", "a/web-3", "b/db-1", "b/db-2"]
        );
        assert_eq!(out.detail("a/web-2"), "perZone limit 1 reached in zone rz1");
        let out = plan("{perTopologyZone: 2}");
        assert_eq!(out.evicted(), ["a/web-1", "a/web-2", "b/db-1", "b/db-2"]);
        assert_eq!(
            out.detail("a/web-3"),
            "perTopologyZone limit 2 reached in topology zone z1"
        );
    }
}
