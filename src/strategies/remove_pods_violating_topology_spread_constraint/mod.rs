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

pub mod args;

use std::{
    borrow::Cow,
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    sync::Arc,
};

use k8s_openapi::{
    api::core::v1::TopologySpreadConstraint,
    apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement},
};

use crate::strategies::node_fit::fits_on_after;
use crate::strategies::selection::Selection;
use crate::strategies::victim_order::victim_order;
use crate::{
    cluster::{
        NodeInfo, NodeState, PodInfo, Resources,
        rules::{anti_affinity::AntiAffinityFit, label_index::LabelIndex, matching},
    },
    framework::{Balancing, Candidate, Gatekeeper, PlanContext, Plugin, StrategyId},
};
use args::{TopologySpreadArgs, Unsatisfiable};

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
        let id = cache.len();
        let map = cache.entry(key).or_insert_with(|| {
            let mut map = DomainMap {
                id,
                ..DomainMap::default()
            };
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
                    let shape = Shape::of(pod, ctx);
                    let found = order
                        .iter()
                        .take_while(|(count, _)| count + 1 < max)
                        .filter(|(_, d)| below_average[*d])
                        .find_map(|(_, d)| {
                            let from = (domains.id, *d, shape.clone());
                            first_fit(pod, &domains.nodes[*d], from, ctx, taken)
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
    /// How many nodes at the head of each domain (of each domain map) are known to have no room for
    /// each shape of pod.
    full: HashMap<(usize, usize, Shape), usize>,
}

/// What decides whether a node has room for a pod, anti-affinity aside: pods of one shape fit the same
/// nodes ([`fits_on_after`] reads the constraints the signature covers, the placement rules and the
/// requests).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Shape {
    signature: u64,
    placement: u64,
    requests: Resources,
}

impl Shape {
    fn of(pod: &PodInfo, ctx: &PlanContext<'_>) -> Self {
        Shape {
            signature: pod.constraints.signature,
            placement: ctx.placement_key(pod),
            requests: pod.requests.clone(),
        }
    }
}

/// The first node of `nodes` other than `pod`'s own with room for it, net of the moves planned so far,
/// where no required anti-affinity forbids it. Moves only take room within a plan, so a node that had
/// none for a shape never will: the search starts past those found so far (`from` names the domain and
/// the shape) and adds those it finds at the head. Starting at the head for each move cost moves × nodes
/// once the first nodes had filled up.
fn first_fit<'s>(
    pod: &PodInfo,
    nodes: &[&'s Arc<NodeState>],
    from: (usize, usize, Shape),
    ctx: &PlanContext<'s>,
    taken: &mut Taken<'s>,
) -> Option<&'s str> {
    let full = taken.full.entry(from).or_default();
    // While `at_head`, every node passed is full for the shape. The pod's own node and anti-affinity
    // refusals (which read the pod itself) end the head.
    let mut at_head = true;
    for state in nodes.iter().skip(*full) {
        let Some(node) = state.node.as_deref() else {
            *full += usize::from(at_head);
            continue;
        };
        if Some(node.name.as_str()) == pod.node_name.as_deref() {
            at_head = false;
            continue;
        }
        if !fits_on_after(pod, state, ctx, taken.reserved.get(node.name.as_str())) {
            *full += usize::from(at_head);
            continue;
        }
        if taken
            .anti_affinity
            .refuses(pod, node, ctx.snapshot)
            .is_none()
        {
            return Some(node.name.as_str());
        }
        at_head = false;
    }
    None
}

/// Topology domains of eligible nodes: names, nodes per domain, domain per node.
#[derive(Default)]
struct DomainMap<'s> {
    /// Tells the maps of one plan apart.
    id: usize,
    names: Vec<&'s str>,
    nodes: Vec<Vec<&'s Arc<NodeState>>>,
    domain_of: HashMap<&'s str, usize>,
}

/// The bound pods of one namespace, indexed by label so that a selector only looks at the pods carrying
/// a label it requires (a `matchLabels` pair, a value an `In` expression lists).
struct NamespacePods<'s> {
    all: Vec<&'s Arc<PodInfo>>,
    index: LabelIndex,
}

impl<'s> NamespacePods<'s> {
    fn new(all: Vec<&'s Arc<PodInfo>>) -> Self {
        let index = LabelIndex::new(all.iter().map(|pod| pod.labels.iter()));
        NamespacePods { all, index }
    }

    /// A superset of the pods `selector` matches, in namespace order: the pods carrying its rarest
    /// requirement, or every pod if it has none.
    fn candidates<'a>(
        &'a self,
        selector: &'a LabelSelector,
    ) -> Box<dyn Iterator<Item = &'s Arc<PodInfo>> + 'a> {
        let at = |position: u32| self.all.get(position as usize).copied();
        match self.index.candidates(selector) {
            None => Box::new(self.all.iter().copied()),
            Some(Cow::Borrowed(positions)) => {
                Box::new(positions.iter().filter_map(move |&p| at(p)))
            }
            Some(Cow::Owned(positions)) => Box::new(positions.into_iter().filter_map(at)),
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
mod tests;
