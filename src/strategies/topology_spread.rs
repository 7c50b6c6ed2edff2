//! removePodsViolatingTopologySpreadConstraint: where the pods a spread constraint selects are spread
//! over its topology domains more unevenly than `maxSkew` allows, evict the fewest pods that bring the
//! domains back within it — one at a time from the fullest domain towards the emptiest.
//!
//! Domains are the values of the constraint's `topologyKey` on the nodes eligible for it
//! (`nodeAffinityPolicy: Honor`, the default, keeps only nodes the pod's node selector and required
//! affinity allow; `nodeTaintsPolicy: Honor` also drops nodes with untolerated taints), and that
//! tidal's own placement rules let the pods run on (a non-preemptable pod's domains never include
//! revocable nodes): a domain the pods may not enter is no imbalance to correct. Only pods that
//! declare the same constraint are evicted; the strategy's `labelSelector` only limits which of them.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    sync::Arc,
};

use k8s_openapi::{
    api::core::v1::TopologySpreadConstraint,
    apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement},
};

use super::shared::{Selection, fits_on_after, victim_order};
use crate::api::args::{TopologySpreadArgs, Unsatisfiable};
use crate::{
    cluster::{
        NodeInfo, NodeState, PodInfo, Resources,
        rules::{anti_affinity::AntiAffinityFit, matching},
    },
    framework::{Balancing, Candidate, Gatekeeper, PlanContext, Plugin, StrategyId},
};

const ID: StrategyId = StrategyId::TopologySpread;

pub(crate) struct TopologySpread {
    args: TopologySpreadArgs,
}

/// One distinct constraint of a namespace, the pods that declare it and one of them to read its node
/// eligibility from.
struct Group<'s> {
    constraint: TopologySpreadConstraint,
    /// The label selector with `matchLabelKeys` folded in.
    selector: LabelSelector,
    sample: &'s Arc<PodInfo>,
    declaring: HashSet<&'s crate::cluster::ObjectKey>,
}

/// The constraint's selector, narrowed by `matchLabelKeys` to the declaring pod's values.
fn effective_selector(
    constraint: &TopologySpreadConstraint,
    pod: &PodInfo,
) -> Option<LabelSelector> {
    let mut selector = constraint.label_selector.clone()?;
    for key in constraint.match_label_keys.iter().flatten() {
        if let Some(value) = pod.labels.get(key) {
            selector
                .match_expressions
                .get_or_insert_with(Vec::new)
                .push(LabelSelectorRequirement {
                    key: key.clone(),
                    operator: "In".to_owned(),
                    values: Some(vec![value.to_owned()]),
                });
        }
    }
    Some(selector)
}

impl TopologySpread {
    pub(crate) fn new(args: TopologySpreadArgs) -> Self {
        TopologySpread { args }
    }

    fn selection(&self) -> Selection<'_> {
        Selection {
            namespaces: &self.args.namespaces,
            label_selector: self.args.label_selector.as_ref(),
        }
    }

    fn enforced(&self, constraint: &TopologySpreadConstraint) -> bool {
        let kind = match constraint.when_unsatisfiable.as_str() {
            "DoNotSchedule" => Unsatisfiable::DoNotSchedule,
            "ScheduleAnyway" => Unsatisfiable::ScheduleAnyway,
            _ => return false,
        };
        constraint.max_skew >= 1 && self.args.constraints.contains(&kind)
    }

    /// The distinct enforced constraints of each namespace, in namespace order.
    fn groups<'s>(&self, ctx: &PlanContext<'s>) -> BTreeMap<&'s str, Vec<Group<'s>>> {
        let mut out: BTreeMap<&str, Vec<Group<'s>>> = BTreeMap::new();
        let mut index: HashMap<(&str, String), usize> = HashMap::new();
        for pod in ctx.snapshot.nodes.values().flat_map(|n| n.pods.values()) {
            if pod.constraints.spread.is_empty() || pod.phase.is_finished() {
                continue;
            }
            for constraint in pod.constraints.spread.iter().filter(|c| self.enforced(c)) {
                let Some(selector) = effective_selector(constraint, pod) else {
                    continue;
                };
                if matching::selector_is_valid(&selector).is_err() {
                    continue;
                }
                // Pods whose placement decides which nodes are eligible (their selector and affinity
                // unless `nodeAffinityPolicy: Ignore`, their tolerations with `nodeTaintsPolicy:
                // Honor`) form groups of their own: a group reads eligibility from one of its pods.
                let honor_affinity = constraint.node_affinity_policy.as_deref() != Some("Ignore");
                let honor_taints = constraint.node_taints_policy.as_deref() == Some("Honor");
                let identity = serde_json::to_string(&(
                    &constraint.topology_key,
                    constraint.max_skew,
                    &constraint.when_unsatisfiable,
                    &selector,
                    &constraint.node_affinity_policy,
                    &constraint.node_taints_policy,
                    (honor_affinity || honor_taints).then_some(pod.constraints.signature),
                    ctx.placement_key(pod),
                ))
                .unwrap_or_default();
                let namespace = pod.key.namespace.as_str();
                let groups = out.entry(namespace).or_default();
                let slot = *index.entry((namespace, identity)).or_insert_with(|| {
                    groups.push(Group {
                        constraint: constraint.clone(),
                        selector,
                        sample: pod,
                        declaring: HashSet::new(),
                    });
                    groups.len() - 1
                });
                if let Some(group) = groups.get_mut(slot) {
                    group.declaring.insert(&pod.key);
                }
            }
        }
        out
    }

    fn eligible(&self, ctx: &PlanContext<'_>, group: &Group<'_>, node: &NodeInfo) -> bool {
        let constraint = &group.constraint;
        ctx.may_run_on(group.sample, node)
            && (constraint.node_affinity_policy.as_deref() == Some("Ignore")
                || group.sample.constraints.matches_node(node))
            && (constraint.node_taints_policy.as_deref() != Some("Honor")
                || group
                    .sample
                    .constraints
                    .tolerates_node(node, matching::HARD_EFFECTS))
    }

    /// The domains of the nodes eligible for `group`, shared by groups with the same eligibility.
    fn domains<'s>(
        &self,
        ctx: &PlanContext<'s>,
        group: &Group<'s>,
        cache: &mut HashMap<String, Arc<DomainMap<'s>>>,
    ) -> Arc<DomainMap<'s>> {
        let constraint = &group.constraint;
        let placement = &group.sample.constraints;
        let honor_affinity = constraint.node_affinity_policy.as_deref() != Some("Ignore");
        let honor_taints = constraint.node_taints_policy.as_deref() == Some("Honor");
        let key = format!(
            "{}|{}|{}|{}",
            constraint.topology_key,
            ctx.placement_key(group.sample),
            if honor_affinity {
                placement.signature
            } else {
                0
            },
            if honor_taints { placement.signature } else { 0 },
        );
        let map = cache.entry(key).or_insert_with(|| {
            let mut map = DomainMap::default();
            let mut index_of: HashMap<&str, usize> = HashMap::new();
            for (name, state) in &ctx.snapshot.nodes {
                let Some(node) = state.node.as_deref() else {
                    continue;
                };
                let Some(value) = node.labels.get(&constraint.topology_key) else {
                    continue;
                };
                if !self.eligible(ctx, group, node) {
                    continue;
                }
                let index = *index_of.entry(value.as_str()).or_insert_with(|| {
                    map.names.push(value.as_str());
                    map.nodes.push(Vec::new());
                    map.names.len() - 1
                });
                map.nodes[index].push(state);
                map.domain_of.insert(name.as_str(), index);
            }
            Arc::new(map)
        });
        Arc::clone(map)
    }

    fn balance<'s>(
        &self,
        ctx: &PlanContext<'s>,
        group: &Group<'s>,
        domains: &DomainMap<'s>,
        pods: &NamespacePods<'s>,
        gatekeeper: &mut dyn Gatekeeper,
        taken: &mut Taken<'s>,
    ) {
        let constraint = &group.constraint;
        let names = &domains.names;
        if names.len() < 2 {
            return;
        }
        let mut counts = vec![0i64; names.len()];
        let mut movable: Vec<Vec<&Arc<PodInfo>>> = vec![Vec::new(); names.len()];
        let selection = self.selection();
        for pod in pods.candidates(&group.selector) {
            let Some(&index) = pod
                .node_name
                .as_deref()
                .and_then(|n| domains.domain_of.get(n))
            else {
                continue;
            };
            if pod.phase.is_finished()
                || ctx.is_gone(pod, gatekeeper)
                || !matching::selector_matches(&group.selector, &pod.labels)
            {
                continue;
            }
            counts[index] += 1;
            if group.declaring.contains(&pod.key) && !pod.is_static() && selection.admits(pod) {
                movable[index].push(pod);
            }
        }
        for pods in &mut movable {
            pods.sort_by(|a, b| victim_order(a).cmp(&victim_order(b)));
        }
        // The descheduler's balance fit (`filterNodesBelowIdealAvg`) only looks at the nodes of
        // domains below the average as it was before any move: a domain at or above it is no
        // destination even once moves have made it one of the smaller ones.
        let total: i64 = counts.iter().sum();
        let below_average: Vec<bool> = counts
            .iter()
            .map(|&count| count * (names.len() as i64) < total)
            .collect();
        let max_skew = i64::from(constraint.max_skew);
        let mut order: BTreeSet<(i64, usize)> = counts.iter().copied().zip(0..).collect();
        let mut stuck: HashSet<usize> = HashSet::new();
        let mut next_victim = vec![0usize; names.len()];
        while let Some(&(min, smallest)) = order.first() {
            let Some(&(max, largest)) = order.iter().rev().find(|(_, d)| !stuck.contains(d)) else {
                break;
            };
            if max - min <= max_skew {
                break;
            }
            let mut moved = false;
            while let Some(pod) = movable[largest].get(next_victim[largest]).copied() {
                next_victim[largest] += 1;
                if gatekeeper.protected(pod) || gatekeeper.decided(pod) {
                    continue;
                }
                // With node fit, the move needs a node with room in a smaller domain that was below
                // the average (the smallest first), net of the moves planned before it, where no
                // required anti-affinity forbids the pod, and is charged to that node.
                let destination = if self.args.topology_balance_node_fit {
                    let found = order
                        .iter()
                        .take_while(|(count, _)| count + 1 < max)
                        .filter(|(_, d)| below_average[*d])
                        .find_map(|(_, d)| {
                            domains.nodes[*d].iter().find_map(|state| {
                                let node = state.node.as_deref()?;
                                let reserved = taken.reserved.get(node.name.as_str());
                                (Some(node.name.as_str()) != pod.node_name.as_deref()
                                    && fits_on_after(pod, state, ctx, reserved)
                                    && taken
                                        .anti_affinity
                                        .refuses(pod, node, ctx.snapshot)
                                        .is_none())
                                .then_some(node.name.as_str())
                            })
                        });
                    match found {
                        Some(node) => Some(node),
                        None => continue,
                    }
                } else {
                    None
                };
                let reason = format!(
                    "topology spread on {} (maxSkew {max_skew}): domain {} has {max} matching pods, \
                     domain {} has {min}",
                    constraint.topology_key, names[largest], names[smallest]
                );
                if gatekeeper.offer(Candidate::new(pod, ID, reason)) {
                    if let Some(node) = destination {
                        taken.reserved.entry(node).or_default().add(&pod.requests);
                    }
                    moved = true;
                    break;
                }
            }
            if !moved {
                stuck.insert(largest);
                continue;
            }
            order.remove(&(max, largest));
            order.insert((max - 1, largest));
            counts[largest] -= 1;
            order.remove(&(min, smallest));
            order.insert((min + 1, smallest));
            counts[smallest] += 1;
        }
    }
}

/// What the moves planned so far (all groups) take of their destinations.
#[derive(Default)]
struct Taken<'s> {
    /// Requests, by the node each move was found to fit.
    reserved: HashMap<&'s str, Resources>,
    anti_affinity: AntiAffinityFit,
}

/// Topology domains of eligible nodes: names, nodes per domain, domain per node.
#[derive(Default)]
struct DomainMap<'s> {
    names: Vec<&'s str>,
    nodes: Vec<Vec<&'s Arc<NodeState>>>,
    domain_of: HashMap<&'s str, usize>,
}

/// The bound pods of one namespace, indexed by label so that a selector with `matchLabels` only looks
/// at the pods carrying one of its labels.
struct NamespacePods<'s> {
    all: Vec<&'s Arc<PodInfo>>,
    by_label: HashMap<(&'s str, &'s str), Vec<usize>>,
}

impl<'s> NamespacePods<'s> {
    fn new(all: Vec<&'s Arc<PodInfo>>) -> Self {
        let mut by_label: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
        for (i, pod) in all.iter().enumerate() {
            for (key, value) in &pod.labels {
                by_label.entry((key, value)).or_default().push(i);
            }
        }
        NamespacePods { all, by_label }
    }

    /// A superset of the pods `selector` matches: the pods carrying its rarest `matchLabels` pair, or
    /// every pod if it has none.
    fn candidates<'a>(
        &'a self,
        selector: &'a LabelSelector,
    ) -> Box<dyn Iterator<Item = &'s Arc<PodInfo>> + 'a> {
        let rarest = selector
            .match_labels
            .iter()
            .flatten()
            .map(|(k, v)| {
                self.by_label
                    .get(&(k.as_str(), v.as_str()))
                    .map_or(&[][..], Vec::as_slice)
            })
            .min_by_key(|list| list.len());
        match rarest {
            Some(list) => Box::new(list.iter().filter_map(|&i| self.all.get(i).copied())),
            None => Box::new(self.all.iter().copied()),
        }
    }
}

impl Plugin for TopologySpread {
    fn id(&self) -> StrategyId {
        ID
    }

    fn validate(&self) -> Result<(), String> {
        self.selection().validate()
    }
}

impl Balancing for TopologySpread {
    fn balance(&self, ctx: &PlanContext<'_>, gatekeeper: &mut dyn Gatekeeper) {
        let groups = self.groups(ctx);
        if groups.is_empty() {
            return;
        }
        let mut by_namespace: HashMap<&str, Vec<&Arc<PodInfo>>> = HashMap::new();
        for pod in ctx.snapshot.nodes.values().flat_map(|n| n.pods.values()) {
            if groups.contains_key(pod.key.namespace.as_str()) {
                by_namespace
                    .entry(pod.key.namespace.as_str())
                    .or_default()
                    .push(pod);
            }
        }
        let mut domain_cache = HashMap::new();
        // Requests of the moves planned so far, by the node each was found to fit (all groups).
        let mut taken = Taken::default();
        for (namespace, groups) in &groups {
            let pods = NamespacePods::new(by_namespace.remove(namespace).unwrap_or_default());
            for group in groups {
                let domains = self.domains(ctx, group, &mut domain_cache);
                self.balance(ctx, group, &domains, &pods, gatekeeper, &mut taken);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::testkit::*;
    use serde_json::json;

    fn spread(max_skew: i32, when: &str) -> serde_json::Value {
        json!([{"maxSkew": max_skew, "topologyKey": "zone", "whenUnsatisfiable": when,
                "labelSelector": {"matchLabels": {"app": "web"}}}])
    }

    fn web(name: &str, node: &str, when: &str) -> PodBuilder {
        pod(name, node)
            .requests("100m", "128Mi")
            .owned_by("ReplicaSet", "web")
            .label("app", "web")
            .spec("topologySpreadConstraints", spread(1, when))
    }

    fn zones() -> Cluster {
        Cluster::new()
            .node(node("a1").allocatable("4", "8Gi", 110).label("zone", "a"))
            .node(node("b1").allocatable("4", "8Gi", 110).label("zone", "b"))
            .node(node("c1").allocatable("4", "8Gi", 110).label("zone", "c"))
            .node(node("x1").allocatable("4", "8Gi", 110))
    }

    const BUDGET: &str = "defaults: {jobBudget: {maxUnavailable: 10}}\n";

    #[test]
    fn evicts_the_fewest_pods_to_restore_max_skew() {
        let mut cluster = zones()
            .pod(web("a/w1", "a1", "DoNotSchedule").priority(10))
            .pod(web("a/w2", "a1", "DoNotSchedule"))
            .pod(web("a/w3", "a1", "DoNotSchedule").priority(5))
            .pod(web("a/w4", "a1", "DoNotSchedule"))
            .pod(web("a/w5", "b1", "DoNotSchedule"))
            // Matches the selector and counts, but does not declare the constraint: never evicted.
            .pod(
                pod("a/plain", "a1")
                    .requests("100m", "128Mi")
                    .label("app", "web"),
            )
            // Nodes without the topology key are no domain.
            .pod(web("a/w6", "x1", "DoNotSchedule"));
        // a=5, b=1, c=0 → move 2 from a to c (a=3,b=1,c=2)... then a-b=2 → one more (a=2,b=2,c=2).
        let out = cluster.plan(&format!(
            "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {{}}\n{BUDGET}"
        ));
        // Lowest priority first: unset (w2, w4), then 5 (w3).
        assert_eq!(out.evicted(), ["a/w2", "a/w4", "a/w3"]);
        assert!(
            out.reason("a/w2")
                .contains("domain a has 5 matching pods, domain c has 0")
        );
    }

    #[test]
    fn soft_constraints_only_on_request() {
        let mut cluster = zones()
            .pod(web("a/w1", "a1", "ScheduleAnyway"))
            .pod(web("a/w2", "a1", "ScheduleAnyway"))
            .pod(web("a/w3", "a1", "ScheduleAnyway"));
        let hard = "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {}\n";
        assert!(
            cluster
                .plan(&format!("{hard}{BUDGET}"))
                .evicted()
                .is_empty()
        );
        let both = "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {constraints: [DoNotSchedule, ScheduleAnyway]}\n";
        assert_eq!(cluster.plan(&format!("{both}{BUDGET}")).evicted().len(), 2);
    }

    #[test]
    fn node_fit_and_gates_limit_the_moves() {
        // The other zones have no room: nothing can move, nothing is evicted.
        let mut cluster = Cluster::new()
            .node(node("a1").allocatable("4", "8Gi", 110).label("zone", "a"))
            .node(node("b1").allocatable("50m", "8Gi", 110).label("zone", "b"))
            .pod(web("a/w1", "a1", "DoNotSchedule"))
            .pod(web("a/w2", "a1", "DoNotSchedule"))
            .pod(web("a/w3", "a1", "DoNotSchedule"));
        let spec = "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {}\n";
        assert!(
            cluster
                .plan(&format!("{spec}{BUDGET}"))
                .evicted()
                .is_empty()
        );
        let lax = "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {topologyBalanceNodeFit: false}\n";
        assert_eq!(cluster.plan(&format!("{lax}{BUDGET}")).evicted(), ["a/w1"]);
        // A limit stops the balancing: the refused pod is reported, the others are tried in turn.
        let mut cluster = zones()
            .pod(web("a/w1", "a1", "DoNotSchedule"))
            .pod(web("a/w2", "a1", "DoNotSchedule"))
            .pod(web("a/w3", "a1", "DoNotSchedule"));
        let out = cluster.plan(&format!("{spec}{BUDGET}limits: {{total: 1}}\n"));
        assert_eq!(out.evicted(), ["a/w1"]);
        assert_eq!(out.skipped(), ["a/w2 limit", "a/w3 limit"]);
    }

    #[test]
    fn balance_fit_keeps_a_pod_that_required_anti_affinity_keeps_out_of_the_smaller_domain() {
        // Three web pods in zone a, none in b; b's only node runs db-1, which the web pods repel by
        // hostname. The descheduler's balance fit (NodeFit, topologyBalanceNodeFit defaulting to
        // true) finds no node for them: nothing is evicted.
        let repels_db = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"
        }]}});
        let cluster = |db: bool| {
            let mut cluster = Cluster::new()
                .node(
                    node("a1")
                        .allocatable("4", "8Gi", 110)
                        .label("zone", "a")
                        .label("kubernetes.io/hostname", "a1"),
                )
                .node(
                    node("b1")
                        .allocatable("4", "8Gi", 110)
                        .label("zone", "b")
                        .label("kubernetes.io/hostname", "b1"),
                );
            for name in ["a/w1", "a/w2", "a/w3"] {
                cluster = cluster
                    .pod(web(name, "a1", "DoNotSchedule").spec("affinity", repels_db.clone()));
            }
            if db {
                cluster = cluster.pod(pod("a/db-1", "b1").label("app", "db"));
            }
            cluster
        };
        let spec = format!(
            "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {{}}\n{BUDGET}"
        );
        assert!(cluster(true).plan(&spec).evicted().is_empty());
        assert_eq!(cluster(false).plan(&spec).evicted(), ["a/w1"]);
    }

    #[test]
    fn balance_fit_only_looks_at_domains_below_the_average() {
        // a=5, b=3, c=1 (average 3); c's node is full. The descheduler's balance fit looks only at
        // nodes of domains below the average (c): b, at the average, is no destination.
        let mut cluster = Cluster::new()
            .node(node("a1").allocatable("4", "8Gi", 110).label("zone", "a"))
            .node(node("b1").allocatable("4", "8Gi", 110).label("zone", "b"))
            .node(
                node("c1")
                    .allocatable("150m", "8Gi", 110)
                    .label("zone", "c"),
            );
        for i in 1..=5 {
            cluster = cluster.pod(web(&format!("a/a{i}"), "a1", "DoNotSchedule"));
        }
        for i in 1..=3 {
            cluster = cluster.pod(web(&format!("a/b{i}"), "b1", "DoNotSchedule"));
        }
        cluster = cluster.pod(web("a/c1", "c1", "DoNotSchedule"));
        let spec = format!(
            "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {{}}\n{BUDGET}"
        );
        let out = cluster.plan(&spec);
        assert!(out.evicted().is_empty(), "{:?}", out.evicted());
        let lax = format!(
            "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {{topologyBalanceNodeFit: false}}\n{BUDGET}"
        );
        assert!(!cluster.plan(&lax).evicted().is_empty());
    }

    /// A web pod declaring one zone constraint with `extra` merged into it.
    fn web_with(name: &str, node: &str, extra: serde_json::Value) -> PodBuilder {
        let mut constraint = json!({"maxSkew": 1, "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}});
        if let (Some(c), Some(e)) = (constraint.as_object_mut(), extra.as_object()) {
            c.extend(e.clone());
        }
        pod(name, node)
            .requests("100m", "128Mi")
            .owned_by("ReplicaSet", "web")
            .label("app", "web")
            .spec("topologySpreadConstraints", json!([constraint]))
    }

    /// Zones a, b and c of one node each; c's node is tainted `dedicated=x:NoSchedule`.
    fn tainted_zone_c() -> Cluster {
        Cluster::new()
            .node(node("a1").allocatable("4", "8Gi", 110).label("zone", "a"))
            .node(node("b1").allocatable("4", "8Gi", 110).label("zone", "b"))
            .node(
                node("c1")
                    .allocatable("4", "8Gi", 110)
                    .label("zone", "c")
                    .taint("dedicated", "x", "NoSchedule"),
            )
    }

    const SPREAD: &str =
        "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {}\n";
    const SPREAD_NO_FIT: &str = "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {topologyBalanceNodeFit: false}\n";

    #[test]
    fn pods_evicted_by_an_earlier_strategy_have_left_their_domain() {
        // podLifeTime evicts the two old pods of zone a: a=3, b=1, c=0 is then one move from
        // balanced. Counting them still in zone a would move two more.
        let mut cluster = zones()
            .pod(web("a/w1", "a1", "DoNotSchedule").created("2026-09-22T16:00:00Z"))
            .pod(web("a/w2", "a1", "DoNotSchedule").created("2026-09-23T16:00:00Z"))
            .pod(web("a/w3", "a1", "DoNotSchedule"))
            .pod(web("a/w4", "a1", "DoNotSchedule"))
            .pod(web("a/w5", "a1", "DoNotSchedule"))
            .pod(web("a/w6", "b1", "DoNotSchedule"));
        let out = cluster.plan(&format!(
            "mode: Evict\nstrategies:\n  podLifeTime: {{maxPodLifeTimeSeconds: 864000}}\n  removePodsViolatingTopologySpreadConstraint: {{}}\n{BUDGET}"
        ));
        assert_eq!(out.evicted(), ["a/w1", "a/w2", "a/w3"]);
    }

    #[test]
    fn node_taints_policy_honor_groups_pods_by_their_tolerations() {
        // Zone c's only node is tainted. The pods that tolerate it see three domains (a=3, b=2, c=0:
        // skew 3), the others two (a=3, b=2: balanced). With nodeAffinityPolicy Ignore both kinds used
        // to share one group and read eligibility from whichever pod came first (a/a-plain).
        let honor = json!({"nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor"});
        let tolerates = json!([{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]);
        let mut cluster = tainted_zone_c()
            .pod(web_with("a/a-plain", "a1", honor.clone()))
            .pod(web_with("a/tol-1", "a1", honor.clone()).spec("tolerations", tolerates.clone()))
            .pod(web_with("a/tol-2", "a1", honor.clone()).spec("tolerations", tolerates))
            .pod(web_with("a/b-1", "b1", honor.clone()))
            .pod(web_with("a/b-2", "b1", honor));
        let out = cluster.plan(&format!("{SPREAD}{BUDGET}"));
        assert_eq!(out.evicted(), ["a/tol-1"]);
    }

    #[test]
    fn node_affinity_policy_decides_which_domains_count() {
        // The pods may only run in pool x (zones a and b): a=2, b=1 is balanced there. With
        // nodeAffinityPolicy Ignore, zone c (0 pods) counts too and one pod must go (towards a zone it
        // cannot run in: only without topologyBalanceNodeFit).
        let pinned = |name: &str, node: &str, extra: serde_json::Value| {
            web_with(name, node, extra).spec("nodeSelector", json!({"pool": "x"}))
        };
        let cluster = |extra: serde_json::Value| {
            Cluster::new()
                .node(
                    node("a1")
                        .allocatable("4", "8Gi", 110)
                        .label("zone", "a")
                        .label("pool", "x"),
                )
                .node(
                    node("b1")
                        .allocatable("4", "8Gi", 110)
                        .label("zone", "b")
                        .label("pool", "x"),
                )
                .node(node("c1").allocatable("4", "8Gi", 110).label("zone", "c"))
                .pod(pinned("a/w1", "a1", extra.clone()))
                .pod(pinned("a/w2", "a1", extra.clone()))
                .pod(pinned("a/w3", "b1", extra))
        };
        let honor = json!({});
        assert!(
            cluster(honor.clone())
                .plan(&format!("{SPREAD_NO_FIT}{BUDGET}"))
                .evicted()
                .is_empty()
        );
        let ignore = json!({"nodeAffinityPolicy": "Ignore"});
        assert!(
            cluster(ignore.clone())
                .plan(&format!("{SPREAD}{BUDGET}"))
                .evicted()
                .is_empty()
        );
        assert_eq!(
            cluster(ignore)
                .plan(&format!("{SPREAD_NO_FIT}{BUDGET}"))
                .evicted(),
            ["a/w1"]
        );
    }

    #[test]
    fn node_taints_policy_ignore_counts_tainted_domains() {
        // Zone c's node is tainted and the pods do not tolerate it: by default (Ignore) zone c counts
        // (a=2, b=1, c=0: one must go, though only without topologyBalanceNodeFit, as it cannot go to
        // c); with Honor it does not, and a=2, b=1 is balanced.
        let cluster = |extra: serde_json::Value| {
            tainted_zone_c()
                .pod(web_with("a/w1", "a1", extra.clone()))
                .pod(web_with("a/w2", "a1", extra.clone()))
                .pod(web_with("a/w3", "b1", extra))
        };
        assert_eq!(
            cluster(json!({}))
                .plan(&format!("{SPREAD_NO_FIT}{BUDGET}"))
                .evicted(),
            ["a/w1"]
        );
        assert!(
            cluster(json!({}))
                .plan(&format!("{SPREAD}{BUDGET}"))
                .evicted()
                .is_empty()
        );
        let honor = json!({"nodeTaintsPolicy": "Honor"});
        assert!(
            cluster(honor)
                .plan(&format!("{SPREAD_NO_FIT}{BUDGET}"))
                .evicted()
                .is_empty()
        );
    }

    #[test]
    fn match_label_keys_spread_each_version_on_its_own() {
        // Together the versions look balanced (a=3, b=2, c=2); per version they are not: v1 is all in
        // zone a (two must go) and v2 misses zone a (one must go).
        let keyed = json!({"matchLabelKeys": ["version"]});
        let version = |name: &str, node: &str, v: &str, extra: serde_json::Value| {
            web_with(name, node, extra).label("version", v)
        };
        let cluster = |extra: serde_json::Value| {
            zones()
                .pod(version("a/v1-1", "a1", "v1", extra.clone()))
                .pod(version("a/v1-2", "a1", "v1", extra.clone()))
                .pod(version("a/v1-3", "a1", "v1", extra.clone()))
                .pod(version("a/v2-1", "b1", "v2", extra.clone()))
                .pod(version("a/v2-2", "b1", "v2", extra.clone()))
                .pod(version("a/v2-3", "c1", "v2", extra.clone()))
                .pod(version("a/v2-4", "c1", "v2", extra))
        };
        assert!(
            cluster(json!({}))
                .plan(&format!("{SPREAD}{BUDGET}"))
                .evicted()
                .is_empty()
        );
        let out = cluster(keyed).plan(&format!("{SPREAD}{BUDGET}"));
        let mut evicted = out.evicted();
        evicted.sort();
        assert_eq!(evicted.len(), 3, "{evicted:?}");
        assert_eq!(evicted.iter().filter(|p| p.starts_with("a/v1-")).count(), 2);
    }

    #[test]
    fn node_fit_charges_each_planned_move_against_its_destination() {
        // 20 pods in zone a; zone b's only node has 3 free pod slots. Balancing wants 10 moves; with
        // topologyBalanceNodeFit only 3 have somewhere to go (checking each move against the node as
        // it stands, without the moves planned before it, would send all 10).
        let mut cluster = Cluster::new()
            .node(node("a1").allocatable("40", "80Gi", 110).label("zone", "a"))
            .node(node("b1").allocatable("40", "80Gi", 3).label("zone", "b"));
        for i in 0..20 {
            cluster = cluster.pod(web(&format!("a/w{i:02}"), "a1", "DoNotSchedule"));
        }
        let budget = "defaults: {jobBudget: {maxUnavailable: 100%}}\n";
        let out = cluster.plan(&format!("{SPREAD}{budget}"));
        assert_eq!(out.evicted().len(), 3, "{:?}", out.evicted());
        assert_eq!(
            cluster
                .plan(&format!("{SPREAD_NO_FIT}{budget}"))
                .evicted()
                .len(),
            10
        );
        // Requests count too: 250m pods toward 1 free core.
        let mut cluster = Cluster::new()
            .node(node("a1").allocatable("40", "80Gi", 110).label("zone", "a"))
            .node(node("b1").allocatable("1", "80Gi", 110).label("zone", "b"));
        for i in 0..20 {
            cluster = cluster
                .pod(web(&format!("a/w{i:02}"), "a1", "DoNotSchedule").request("cpu", "250m"));
        }
        assert_eq!(
            cluster.plan(&format!("{SPREAD}{budget}")).evicted().len(),
            4
        );
    }

    /// A domain whose only nodes are revocable is no domain for pods tidal's placement rules keep off
    /// revocable nodes: nobody can balance into it, so it must not count as empty. For preemptable
    /// pods (the zone is open) it is a domain like any other.
    #[test]
    fn a_domain_the_pods_may_not_enter_does_not_count() {
        let cluster = |preemptable: &str| {
            let web = |name: &str, node: &str| {
                web(name, node, "DoNotSchedule").annotation("volcano.sh/preemptable", preemptable)
            };
            Cluster::new()
                .node(node("a1").allocatable("4", "8Gi", 110).label("zone", "a"))
                .node(node("b1").allocatable("4", "8Gi", 110).label("zone", "b"))
                .node(
                    node("c1")
                        .allocatable("4", "8Gi", 110)
                        .label("zone", "c")
                        .zone("rz"),
                )
                .zone(open_zone("rz"))
                .pod(web("a/w1", "a1"))
                .pod(web("a/w2", "a1"))
                .pod(web("a/w3", "b1"))
        };
        let lax = format!(
            "mode: Evict\nstrategies:\n  removePodsViolatingTopologySpreadConstraint: {{topologyBalanceNodeFit: false}}\n{BUDGET}"
        );
        // a=2, b=1: within maxSkew 1 once c does not count.
        assert_eq!(cluster("false").plan(&lax).evicted(), Vec::<String>::new());
        // a=2, b=1, c=0: one of a's must go.
        assert_eq!(cluster("true").plan(&lax).evicted().len(), 1);
    }
}
