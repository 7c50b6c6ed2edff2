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

use std::{collections::HashMap, hash::BuildHasher, sync::Arc};

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
    /// What each base shape's nodes at the head of the order refused it for.
    heads: HashMap<u64, Head>,
    /// The nodes by name, for positions in that order (the plan's snapshot, read on first use).
    order: Option<Vec<(Name, Arc<NodeState>)>>,
    anti_affinity: AntiAffinityFit,
}

/// Nodes (by position in name order) before `from` are known not to take the shape — except `hole`,
/// which was the searching pod's own node and so was never tried.
#[derive(Clone, Debug, Default)]
struct Progress {
    from: Option<usize>,
    exhausted: bool,
    hole: Option<Name>,
    /// Rejections of the nodes known not to take the shape, by reason.
    rejected: [usize; 7],
}

/// The nodes at the head of the name order that a base shape (a shape but for its anti-affinity)
/// was found not to take, with why; like a shape's progress, it only grows within a plan. A shape
/// with one required anti-affinity term passes them in one step, counting the reasons its own walk
/// would have counted: walking them node by node cost shapes × nodes once every workload of a
/// namespace repelling its own replicas was a shape.
struct Head {
    reasons: Vec<Reject>,
    /// `counts[i]`: the reasons of the first `i` head nodes, by reason.
    counts: Vec<[usize; 7]>,
    /// The head nodes refused for their load, by topology key.
    loaded: HashMap<String, Loaded>,
}

/// The positions of the head nodes refused for their load ([`LOAD`]), by topology value, and how
/// many head nodes the lists cover.
#[derive(Default)]
struct Loaded {
    covered: usize,
    by_value: HashMap<String, [Vec<usize>; 2]>,
}

/// The reasons checked after anti-affinity: a node a term refuses is refused for that instead.
const LOAD: [Reject; 2] = [Reject::UnknownLoad, Reject::Resources];

impl Head {
    fn new() -> Self {
        Head {
            reasons: Vec::new(),
            counts: vec![[0; 7]],
            loaded: HashMap::new(),
        }
    }

    fn len(&self) -> usize {
        self.reasons.len()
    }

    fn push(&mut self, reason: Reject) {
        let mut counts = self.counts.last().copied().unwrap_or_default();
        counts[reason as usize] += 1;
        self.counts.push(counts);
        self.reasons.push(reason);
    }

    /// The reasons a shape of this base has for refusing the head nodes at `from..to`, its one
    /// anti-affinity term refusing the nodes whose `key` has one of `values`.
    fn passed(
        &mut self,
        from: usize,
        to: usize,
        (key, values): (&str, &[String]),
        order: &[(Name, Arc<NodeState>)],
    ) -> [usize; 7] {
        let mut reasons = [0; 7];
        if from >= to {
            return reasons;
        }
        for (reason, count) in reasons.iter_mut().enumerate() {
            *count = self.counts[to][reason] - self.counts[from][reason];
        }
        if values.is_empty() {
            return reasons;
        }
        let Loaded { covered, by_value } = self.loaded.entry(key.to_owned()).or_default();
        for (position, reason) in self.reasons.iter().enumerate().skip(*covered) {
            let Some(slot) = LOAD.iter().position(|r| r == reason) else {
                continue;
            };
            let value = order
                .get(position)
                .and_then(|(_, state)| state.node.as_deref())
                .and_then(|node| node.labels.get(key));
            if let Some(value) = value {
                by_value.entry(value.clone()).or_default()[slot].push(position);
            }
        }
        *covered = self.reasons.len();
        for lists in values.iter().filter_map(|value| by_value.get(value)) {
            for (slot, list) in lists.iter().enumerate() {
                let within =
                    list.partition_point(|&p| p < to) - list.partition_point(|&p| p < from);
                reasons[LOAD[slot] as usize] -= within;
                reasons[Reject::AntiAffinity as usize] += within;
            }
        }
        reasons
    }
}

impl NodeFit {
    /// The pod's shape, and its base shape: the same but for its anti-affinity.
    fn shape(&mut self, pod: &PodInfo, ctx: &PlanContext<'_>) -> (u64, u64) {
        // A fixed-seed fast hash: shapes are only compared within this plan.
        let hasher = foldhash::quality::FixedState::default();
        let base = hasher.hash_one((
            pod.constraints.signature,
            ctx.placement_key(pod),
            &pod.requests,
        ));
        // Only the pod's own terms are read here (below): a pod without any shares its shape with
        // its likes, which keeps the search per shape, not per pod (checking the other pods' terms
        // too made every pod a shape of its own once any pod repelled another: 40 times slower).
        if pod.constraints.anti_affinity.is_empty() {
            return (base, base);
        }
        // Anti-affinity reads the pod's terms, namespace and labels: pods differing in them are
        // different shapes. (The replicas of a workload still share one: the cache interns their
        // constraints and labels.)
        let shape = hasher.hash_one((
            base,
            Arc::as_ptr(&pod.constraints),
            &pod.key.namespace,
            &pod.labels,
        ));
        (shape, base)
    }

    /// Whether `state` could take `pod`, given what this plan reserved there; without
    /// `anti_affinity`, for its base shape.
    fn takes(
        reserved: &HashMap<Name, Resources>,
        anti_affinity: Option<&mut AntiAffinityFit>,
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
            .is_some_and(|fit| fit.own_terms_refuse_pod(pod, node, ctx.snapshot).is_some())
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
        self.destination_passing_heads(pod, ctx, true)
    }

    /// [`Self::destination`]; without `pass_heads`, walking every node a shape's search reaches.
    fn destination_passing_heads(
        &mut self,
        pod: &PodInfo,
        ctx: &PlanContext<'_>,
        pass_heads: bool,
    ) -> Result<Name, String> {
        let (shape, base) = self.shape(pod, ctx);
        let mut progress = self.progress.remove(&shape).unwrap_or_default();
        let refusing = match pod.constraints.anti_affinity.is_empty() || !pass_heads {
            true => None,
            false => self.anti_affinity.refusing_domains(pod, ctx.snapshot),
        };
        let found = self.search(pod, ctx, &mut progress, base, refusing.as_ref());
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

    /// The next node to take `pod`, from where its shape's search stopped. With `refusing` (the key
    /// and values of the domains its one anti-affinity term refuses), the nodes its base shape is
    /// known not to take are passed in one step.
    fn search(
        &mut self,
        pod: &PodInfo,
        ctx: &PlanContext<'_>,
        progress: &mut Progress,
        base: u64,
        refusing: Option<&(String, Vec<String>)>,
    ) -> Option<Name> {
        let own = pod.node_name.as_deref();
        if let Some(hole) = progress.hole.clone()
            && Some(hole.as_str()) != own
        {
            // The hole lies before `from`: once forgotten it is never tried again, so it is forgotten
            // only when it refuses the shape, not when it takes one pod and may take more.
            if let Some(state) = ctx.snapshot.node(&hole) {
                match Self::takes(
                    &self.reserved,
                    Some(&mut self.anti_affinity),
                    pod,
                    state,
                    ctx,
                ) {
                    Ok(()) => return Some(hole),
                    Err(reject) => progress.rejected[reject as usize] += 1,
                }
            }
            progress.hole = None;
        }
        if progress.exhausted {
            return None;
        }
        let NodeFit {
            reserved,
            heads,
            order,
            anti_affinity,
            ..
        } = self;
        let order: &[(Name, Arc<NodeState>)] = order.get_or_insert_with(|| {
            ctx.snapshot
                .nodes
                .iter()
                .map(|(name, state)| (name.clone(), Arc::clone(state)))
                .collect()
        });
        let mut head = refusing.map(|_| heads.entry(base).or_insert_with(Head::new));
        if let Some(head) = head.as_deref_mut() {
            // Nodes that do not take the base shape now never will in this plan.
            while let Some((_, state)) = order.get(head.len()) {
                match Self::takes(reserved, None, pod, state, ctx) {
                    Ok(()) => break,
                    Err(reject) => head.push(reject),
                }
            }
        }
        let own_at = own.and_then(|own| order.binary_search_by(|(n, _)| n.as_str().cmp(own)).ok());
        let mut at = progress.from.unwrap_or(0);
        // While `advancing`, every node passed is known not to take the shape.
        let mut advancing = true;
        while let Some((name, state)) = order.get(at) {
            if let (Some(head), Some((key, values))) = (head.as_deref_mut(), refusing)
                && at < head.len()
            {
                // As the walk below would, node by node: the pod's own node is no rejection.
                let end = head.len();
                let refusing = (key.as_str(), values.as_slice());
                if advancing {
                    let passed = match own_at.filter(|o| (at..end).contains(o)) {
                        Some(o) if progress.hole.is_none() => {
                            progress.hole = Some(order[o].0.clone());
                            let before = head.passed(at, o, refusing, order);
                            let after = head.passed(o + 1, end, refusing, order);
                            std::array::from_fn(|r| before[r] + after[r])
                        }
                        Some(o) => {
                            advancing = false;
                            progress.from = Some(o);
                            head.passed(at, o, refusing, order)
                        }
                        None => head.passed(at, end, refusing, order),
                    };
                    for (count, more) in progress.rejected.iter_mut().zip(passed) {
                        *count += more;
                    }
                }
                at = end;
                continue;
            }
            if Some(name.as_str()) == own {
                if advancing && progress.hole.is_none() {
                    progress.hole = Some(name.clone());
                } else if advancing {
                    advancing = false;
                    progress.from = Some(at);
                }
                at += 1;
                continue;
            }
            match Self::takes(reserved, Some(&mut *anti_affinity), pod, state, ctx) {
                Ok(()) => {
                    if advancing {
                        progress.from = Some(at);
                    }
                    return Some(name.clone());
                }
                Err(reject) if advancing => progress.rejected[reject as usize] += 1,
                Err(_) => {}
            }
            at += 1;
        }
        if advancing {
            progress.exhausted = true;
        }
        None
    }
}

#[derive(Clone, Copy, PartialEq)]
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
            self.heads.clear();
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

    /// Passing the nodes a base shape does not take in one step finds what walking them finds: the
    /// same node for each pod, or the same count of nodes by reason, whatever the pods repel.
    mod heads {
        use std::collections::HashSet;

        use proptest::prelude::*;
        use serde_json::json;

        use super::super::NodeFit;
        use crate::{
            cluster::Resources,
            testkit::{Cluster, NOW, node, pod, policy, with_context},
        };

        const HOST: &str = "kubernetes.io/hostname";

        /// Each pod: its app (0..4), what its one term repels (none, its own app or the next one,
        /// by zone or by host, or a malformed selector) and how many cores it requests.
        type Pod = (u8, u8, u8, u8);

        fn affinity(app: u8, repels: u8, by: u8) -> Option<serde_json::Value> {
            let key = if by.is_multiple_of(2) { "zone" } else { HOST };
            let selector = match repels {
                0 => return None,
                1 => json!({"matchLabels": {"app": format!("a{app}")}}),
                2 => json!({"matchExpressions": [{"key": "app", "operator": "In",
                    "values": [format!("a{}", (app + 1) % 4), "none"]}]}),
                _ => {
                    json!({"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]})
                }
            };
            Some(
                json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": selector, "topologyKey": key}]}}),
            )
        }

        fn cluster(free: &[u8], pods: &[Pod]) -> Cluster {
            let mut cluster = Cluster::new();
            for (n, cores) in free.iter().enumerate() {
                let name = format!("n{n:02}");
                cluster = cluster
                    .node(
                        node(&name)
                            .allocatable("4", "64Gi", 110)
                            .label("zone", &format!("z{}", n % 3))
                            .label(HOST, &name),
                    )
                    .pod(
                        pod(&format!("x/fill-{name}"), &name)
                            .requests(&format!("{}", 4 - cores), "1Gi"),
                    );
            }
            for (i, &(app, repels, by, cores)) in pods.iter().enumerate() {
                let on = format!("n{:02}", i % free.len());
                let mut member = pod(&format!("x/p{i:02}"), &on)
                    .requests(&format!("{}", cores % 2 + 1), "1Gi")
                    .label("app", &format!("a{app}"));
                if let Some(affinity) = affinity(app, repels % 4, by) {
                    member = member.spec("affinity", affinity);
                }
                cluster = cluster.pod(member);
            }
            cluster
        }

        /// Each pod's destination in turn, the ones found admitted (their requests reserved).
        fn destinations(cluster: &mut Cluster, pass_heads: bool) -> Vec<Result<String, String>> {
            let snapshot = cluster.snapshot();
            let policy = policy(json!({}));
            with_context(&snapshot, &policy, NOW, &HashSet::new(), |ctx| {
                let mut fit = NodeFit::default();
                let mut pods: Vec<_> = snapshot
                    .nodes
                    .values()
                    .flat_map(|state| state.pods.values())
                    .filter(|p| p.key.name.starts_with('p'))
                    .cloned()
                    .collect();
                pods.sort_by(|a, b| a.key.cmp(&b.key));
                pods.iter()
                    .map(|pod| {
                        let found = fit.destination_passing_heads(pod, ctx, pass_heads)?;
                        fit.reserved
                            .entry(found.clone())
                            .or_insert_with(Resources::default)
                            .add(&pod.requests);
                        Ok(found.to_string())
                    })
                    .collect()
            })
        }

        proptest! {
            #[test]
            fn passing_heads_finds_what_walking_finds(
                free in prop::collection::vec(0u8..3, 2..14),
                pods in prop::collection::vec((0u8..4, 0u8..4, 0u8..2, 0u8..2), 1..24),
            ) {
                let mut cluster = cluster(&free, &pods);
                let walked = destinations(&mut cluster, false);
                let passed = destinations(&mut cluster, true);
                prop_assert_eq!(passed, walked);
            }
        }
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
