//! Gate `nodefit` (`protections.nodeFit`): only evict a pod that some other ready, schedulable node could
//! take — its node selector and required affinity allow the node, it tolerates the node's NoSchedule and
//! NoExecute taints, its own required inter-pod anti-affinity terms select no pod in the node's
//! topology domains (`cluster::rules::anti_affinity`; the descheduler reads only the pod's own terms,
//! and reading the other pods' too made every pod a shape of its own), and its requests fit
//! what the node has left. These are the descheduler's NodeFit checks (pkg/descheduler/node/node.go).
//!
//! What a node has left comes from the snapshot's per-node aggregate (`NodeState::requested`), never from
//! re-adding the node's pods, and each admitted eviction reserves its requests on the node it was found
//! to fit, so that two evicted pods are not both counted on the same free room.
//!
//! Free room only shrinks within a plan, so a node that could not take a shape of pod (placement
//! signature and requests) never can later in the plan: each shape's search resumes where the previous
//! one stopped, and a plan costs about one pass over the nodes per shape, not one per candidate. Pods
//! already placed are never added within a plan, so anti-affinity refusals hold for the whole plan too.

use std::{collections::HashMap, hash::BuildHasher, ops::Bound, sync::Arc};

use crate::{
    cluster::{
        NodeState, ObjectKey, PodInfo, Resources, model::keys::Name, model::resources,
        rules::anti_affinity::AntiAffinityFit,
    },
    framework::{Candidate, Gate, GateId, PlanContext},
};

#[derive(Default)]
pub(crate) struct NodeFit {
    /// Requests of pods admitted this plan, by the node they were found to fit.
    reserved: HashMap<Name, Resources>,
    /// The node found for each pod by its last successful check.
    chosen: HashMap<ObjectKey, Name>,
    /// How far each shape's search got.
    progress: HashMap<u64, Progress>,
    anti_affinity: AntiAffinityFit,
}

/// Nodes (by name) before `from` are known not to take the shape — except `hole`, which was the
/// searching pod's own node and so was never tried.
#[derive(Clone, Debug, Default)]
struct Progress {
    from: Option<Name>,
    exhausted: bool,
    hole: Option<Name>,
    /// Rejections of the nodes known not to take the shape, by reason.
    rejected: [usize; 7],
}

impl NodeFit {
    fn shape(&mut self, pod: &PodInfo, ctx: &PlanContext<'_>) -> u64 {
        // A fixed-seed fast hash: shapes are only compared within this plan.
        let hasher = foldhash::quality::FixedState::default();
        let shape = hasher.hash_one((
            pod.constraints.signature,
            ctx.placement_key(pod),
            &pod.requests,
        ));
        // Only the pod's own terms are read here (below): a pod without any shares its shape with
        // its likes, which keeps the search per shape, not per pod (checking the other pods' terms
        // too made every pod a shape of its own once any pod repelled another: 40 times slower).
        if pod.constraints.anti_affinity.is_empty() {
            return shape;
        }
        // Anti-affinity reads the pod's terms, namespace and labels: pods differing in them are
        // different shapes. (The replicas of a workload still share one: the cache interns their
        // constraints and labels.)
        hasher.hash_one((
            shape,
            Arc::as_ptr(&pod.constraints),
            &pod.key.namespace,
            &pod.labels,
        ))
    }

    /// Whether `state` could take `pod`, given what this plan reserved there.
    fn takes(
        reserved: &HashMap<Name, Resources>,
        anti_affinity: &mut AntiAffinityFit,
        pod: &PodInfo,
        state: &NodeState,
        ctx: &PlanContext<'_>,
    ) -> Result<(), Reject> {
        let Some(node) = state.node.as_deref() else {
            return Err(Reject::Unusable);
        };
        if !node.ready || node.unschedulable || !node.problems.is_empty() {
            return Err(Reject::Unusable);
        }
        if !pod.constraints.matches_node(node) {
            return Err(Reject::Affinity);
        }
        if let Some(selector) = &ctx.policy.spec.protections.node_fit_node_selector
            && !crate::cluster::rules::matching::selector_matches(selector, &node.labels)
        {
            return Err(Reject::Affinity);
        }
        if !pod
            .constraints
            .tolerates_node(node, crate::cluster::rules::matching::HARD_EFFECTS)
        {
            return Err(Reject::Taints);
        }
        if !ctx.may_run_on(pod, node) {
            return Err(Reject::Placement);
        }
        if anti_affinity
            .own_terms_refuse_pod(pod, node, ctx.snapshot)
            .is_some()
        {
            return Err(Reject::AntiAffinity);
        }
        if !state.load_known() {
            return Err(Reject::UnknownLoad);
        }
        let fits = match reserved.get(node.name.as_str()) {
            Some(reserved) => {
                let mut requested = state.requested.clone();
                requested.add(reserved);
                resources::fits(&pod.requests, &node.allocatable, &requested)
            }
            None => resources::fits(&pod.requests, &node.allocatable, &state.requested),
        };
        if fits { Ok(()) } else { Err(Reject::Resources) }
    }

    /// The first other node (by name, resuming where this shape's last search stopped) that could take
    /// `pod`, or a summary of why none can.
    pub(crate) fn destination(
        &mut self,
        pod: &PodInfo,
        ctx: &PlanContext<'_>,
    ) -> Result<Name, String> {
        let shape = self.shape(pod, ctx);
        let mut progress = self.progress.remove(&shape).unwrap_or_default();
        let found = self.search(pod, ctx, &mut progress);
        let result = found.ok_or_else(|| {
            let [
                unusable,
                affinity,
                taints,
                placement,
                unknown,
                resources,
                repelled,
            ] = progress.rejected;
            let unknown = if unknown > 0 {
                format!(", {unknown} running pods whose requests tidal cannot read")
            } else {
                String::new()
            };
            format!(
                "fits no other node: {unusable} not ready or unschedulable, {affinity} excluded by \
                 node selector/affinity (or protections.nodeFitNodeSelector), {taints} with \
                 untolerated taints, {repelled} where its required pod anti-affinity forbids \
                 it, {placement} outside the policy's nodeSelector or in \
                 revocable zones closed to it{unknown}, {resources} without room for {}",
                resources::describe(&pod.requests)
            )
        });
        self.progress.insert(shape, progress);
        result
    }

    fn search(
        &mut self,
        pod: &PodInfo,
        ctx: &PlanContext<'_>,
        progress: &mut Progress,
    ) -> Option<Name> {
        let own = pod.node_name.as_deref();
        if let Some(hole) = progress.hole.clone()
            && Some(hole.as_str()) != own
        {
            // The hole lies before `from`: once forgotten it is never tried again, so it is forgotten
            // only when it refuses the shape, not when it takes one pod and may take more.
            if let Some(state) = ctx.snapshot.node(&hole) {
                match Self::takes(&self.reserved, &mut self.anti_affinity, pod, state, ctx) {
                    Ok(()) => return Some(hole),
                    Err(reject) => progress.rejected[reject as usize] += 1,
                }
            }
            progress.hole = None;
        }
        if progress.exhausted {
            return None;
        }
        let nodes = &ctx.snapshot.nodes;
        let remaining: Box<dyn Iterator<Item = _>> = match progress.from.as_deref() {
            Some(from) => {
                Box::new(nodes.range::<str, _>((Bound::Included(from), Bound::Unbounded)))
            }
            None => Box::new(nodes.iter()),
        };
        // While `advancing`, every node passed is known not to take the shape.
        let mut advancing = true;
        for (name, state) in remaining {
            if Some(name.as_str()) == own {
                if advancing && progress.hole.is_none() {
                    progress.hole = Some(name.clone());
                } else if advancing {
                    advancing = false;
                    progress.from = Some(name.clone());
                }
                continue;
            }
            match Self::takes(&self.reserved, &mut self.anti_affinity, pod, state, ctx) {
                Ok(()) => {
                    if advancing {
                        progress.from = Some(name.clone());
                    }
                    return Some(name.clone());
                }
                Err(reject) if advancing => progress.rejected[reject as usize] += 1,
                Err(_) => {}
            }
        }
        if advancing {
            progress.exhausted = true;
        }
        None
    }
}

#[derive(Clone, Copy)]
enum Reject {
    Unusable = 0,
    Affinity = 1,
    Taints = 2,
    Placement = 3,
    UnknownLoad = 4,
    Resources = 5,
    AntiAffinity = 6,
}

impl Gate for NodeFit {
    fn id(&self) -> GateId {
        GateId::NodeFit
    }

    fn check(&mut self, candidate: &Candidate, ctx: &PlanContext<'_>) -> Result<(), String> {
        if candidate.exempt.node_fit {
            return Ok(());
        }
        let node = self.destination(&candidate.pod, ctx)?;
        self.chosen.insert(candidate.pod.key.clone(), node);
        Ok(())
    }

    fn admit(&mut self, candidate: &Candidate, _ctx: &PlanContext<'_>) {
        if let Some(node) = self.chosen.get(&candidate.pod.key) {
            self.reserved
                .entry(node.clone())
                .or_default()
                .add(&candidate.pod.requests);
        }
    }

    fn retract(&mut self, candidate: &Candidate, _ctx: &PlanContext<'_>) {
        if let Some(node) = self.chosen.get(&candidate.pod.key)
            && let Some(reserved) = self.reserved.get_mut(node)
        {
            reserved.sub(&candidate.pod.requests);
            // Room came back: nodes that could not take a shape before might now.
            self.progress.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::*;

    const PLAN: &str = "mode: Evict\nstrategies:\n  podLifeTime: {maxPodLifeTimeSeconds: 86400}\nprotections: {nodeFit: true}\ndefaults: {jobBudget: {maxUnavailable: 100%}}\n";

    /// An old 1-core pod (to evict) and a fresh filler of `filler` cores on a 4-core node.
    fn node_with(cluster: Cluster, name: &str, old: &str, filler: &str) -> Cluster {
        cluster
            .node(node(name).allocatable("4", "8Gi", 110))
            .pod(
                pod(old, name)
                    .requests("1", "1Gi")
                    .created("2026-09-22T16:00:00Z"),
            )
            .pod(pod(&format!("x/fill-{name}"), name).requests(filler, "1Gi"))
    }

    #[test]
    fn a_node_that_took_one_pod_of_a_shape_is_tried_for_the_next() {
        // Three old 1-core pods of one shape, on a (2 cores free), c and d (full); b has 1 core
        // free. p1 (on a) goes to b; p2 (on c) to a, the node p1's search had to skip; p3 (on d)
        // must find a's second free core: a search that forgot a once it took p2 would not.
        let cluster = node_with(Cluster::new(), "a", "x/p1", "1");
        let cluster = cluster
            .node(node("b").allocatable("4", "8Gi", 110))
            .pod(pod("x/fill-b", "b").requests("3", "1Gi"));
        let cluster = node_with(cluster, "c", "x/p2", "3");
        let mut cluster = node_with(cluster, "d", "x/p3", "3");
        let out = cluster.plan(PLAN);
        assert_eq!(
            out.evicted(),
            ["x/p1", "x/p2", "x/p3"],
            "{:?}",
            out.skipped()
        );
        // Room is still counted once: a fourth pod of the shape has nowhere left to go.
        let mut cluster = cluster.pod(
            pod("x/p4", "d")
                .requests("1", "1Gi")
                .created("2026-09-25T16:00:00Z"),
        );
        let out = cluster.plan(PLAN);
        assert_eq!(out.evicted(), ["x/p1", "x/p2", "x/p3"]);
        assert_eq!(out.skipped(), ["x/p4 nodefit"]);
    }

    #[test]
    fn a_node_running_a_pod_with_unreadable_requests_takes_nothing() {
        // n2 looks empty, but one of its pods requests more than tidal can count: it may be full.
        let mut cluster = Cluster::new()
            .node(node("n1").allocatable("4", "8Gi", 110))
            .node(node("n2").allocatable("4", "8Gi", 110))
            .pod(
                pod("x/old", "n1")
                    .requests("1", "1Gi")
                    .created("2026-09-22T16:00:00Z"),
            )
            .pod(pod("x/huge", "n2").requests("1", "5Pi"));
        let out = cluster.plan(PLAN);
        assert!(out.evicted().is_empty());
        assert!(
            out.detail("x/old")
                .contains("1 running pods whose requests tidal cannot read"),
            "{}",
            out.detail("x/old")
        );
        // A readable neighbour in the same place leaves room.
        let mut cluster = Cluster::new()
            .node(node("n1").allocatable("4", "8Gi", 110))
            .node(node("n2").allocatable("4", "8Gi", 2))
            .pod(
                pod("x/old", "n1")
                    .requests("1", "1Gi")
                    .created("2026-09-22T16:00:00Z"),
            )
            .pod(pod("x/other", "n2").requests("100m", "1Gi"));
        assert_eq!(cluster.plan(PLAN).evicted(), ["x/old"]);
    }

    #[test]
    fn a_node_where_required_anti_affinity_forbids_the_pod_takes_nothing() {
        // x-1 repels app=y by hostname; the only other node runs y-1: the descheduler's NodeFit
        // (podMatchesInterPodAntiAffinity) keeps x-1.
        let repels = |app: &str| {
            serde_json::json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app": app}},
                "topologyKey": "kubernetes.io/hostname"
            }]}})
        };
        let host = |name: &str| {
            node(name)
                .allocatable("4", "8Gi", 110)
                .label("kubernetes.io/hostname", name)
        };
        let old = |name: &str, node: &str| {
            pod(name, node)
                .requests("1", "1Gi")
                .created("2026-09-22T16:00:00Z")
        };
        let mut cluster = Cluster::new()
            .node(host("n1"))
            .node(host("n2"))
            .pod(
                old("x/x-1", "n1")
                    .label("app", "x")
                    .spec("affinity", repels("y")),
            )
            .pod(pod("x/y-1", "n2").requests("1", "1Gi").label("app", "y"));
        let out = cluster.plan(PLAN);
        assert_eq!(out.skipped(), ["x/x-1 nodefit"], "{:?}", out.evicted());
        assert!(
            out.detail("x/x-1")
                .contains("1 where its required pod anti-affinity forbids it"),
            "{}",
            out.detail("x/x-1")
        );
        // The other direction (y-1's anti-affinity repels app=x, x-1 has none) is the scheduler's
        // to keep, not NodeFit's: as the descheduler, the gate lets x-1 go to n2.
        let mut cluster = Cluster::new()
            .node(host("n1"))
            .node(host("n2"))
            .pod(old("x/x-1", "n1").label("app", "x"))
            .pod(
                pod("x/y-1", "n2")
                    .requests("1", "1Gi")
                    .label("app", "y")
                    .spec("affinity", repels("x")),
            );
        assert_eq!(cluster.plan(PLAN).evicted(), ["x/x-1"]);
    }

    #[test]
    fn destinations_follow_tidals_revocable_zone_rules() {
        // The old pods must fit elsewhere; the only other nodes are revocable: one of an open zone,
        // one of a closed zone (NOW is 04:00 UTC), both empty.
        let old = |name: &str| {
            pod(name, "n1")
                .requests("1", "1Gi")
                .created("2026-09-22T16:00:00Z")
        };
        let mut cluster = Cluster::new()
            .zone(zone("open").window("00:00-00:00"))
            .zone(zone("closed").window("08:00-20:00"))
            .node(node("n1").allocatable("4", "8Gi", 110))
            .node(
                node("rev-closed")
                    .allocatable("4", "8Gi", 110)
                    .zone("closed"),
            )
            .node(node("rev-open").allocatable("4", "8Gi", 110).zone("open"))
            // Same shape (constraints, requests) for all three: only the placement rules differ.
            .pod(old("x/a-not-preemptable"))
            .pod(old("x/b-preemptable").annotation("volcano.sh/preemptable", "true"))
            .pod(
                old("x/c-wants-closed")
                    .annotation("volcano.sh/preemptable", "true")
                    .annotation("volcano.sh/revocable-zone", "closed"),
            );
        let out = cluster.plan(PLAN);
        assert_eq!(out.evicted(), ["x/b-preemptable"], "{:?}", out.skipped());
        for refused in ["x/a-not-preemptable", "x/c-wants-closed"] {
            let detail = out.detail(refused);
            assert!(
                detail.contains(
                    "2 outside the policy's nodeSelector or in revocable zones closed to it"
                ),
                "{refused}: {detail}"
            );
        }
    }
}
