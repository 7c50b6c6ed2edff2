//! tidal's placement rules for revocable nodes (one labelled `volcano.sh/revocable-zone`), as pure
//! functions of plain data, shared by admission (`webhook`) and planning (every strategy's and gate's
//! choice of destination), so that the controller never plans a move to a node where the webhook
//! would refuse the pod's replacement:
//!
//! 1. a non-preemptable pod never runs on a revocable node;
//! 2. a preemptable pod runs on a revocable node only while that node's zone is open (not closed,
//!    not draining), and only in the zone it opted into with `volcano.sh/revocable-zone`, if any.
//!
//! DaemonSet and static pods belong to their node and are exempt.

use std::hash::BuildHasher;

use crate::cluster::{InvalidValue, NodeInfo, PodGroupInfo, PodInfo, Setting};

/// Whether a pod may be preempted, from the pod's own label/annotation, else its PodGroup's.
///
/// No policy is consulted, so an unset value means "not preemptable": the webhook has no policy at
/// hand, and a replacement pod is judged by the webhook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Preemptable {
    Yes,
    No,
    /// The value does not parse: nobody can tell, and the rules never guess in the pod's favour.
    Unreadable(InvalidValue),
}

pub(crate) fn preemptable(pod: &PodInfo, group: Option<&PodGroupInfo>) -> Preemptable {
    let setting = pod
        .preemptable
        .clone()
        .or_else(|| group.map_or(Setting::Unset, |g| g.preemptable.clone()));
    match setting {
        Setting::Valid(true) => Preemptable::Yes,
        Setting::Valid(false) | Setting::Unset => Preemptable::No,
        Setting::Invalid(invalid) => Preemptable::Unreadable(*invalid),
    }
}

/// Exempt from the rules: DaemonSet and static (mirror) pods belong to their node. Applying the rules
/// to them would keep node agents (CNI, log shippers) off revocable nodes, and TDM never evicts them.
pub(crate) fn is_exempt(pod: &PodInfo) -> bool {
    pod.is_node_bound()
}

/// Why rules 1 and 2 keep a pod off a revocable node, before the zone's windows are looked at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    NotPreemptable,
    Unreadable(InvalidValue),
    /// The pod opted into another zone (the annotation's value).
    OtherZone(String),
}

/// The rules that depend on the pod and the node only. `Ok(None)`: the node is not revocable (or the
/// pod is exempt), it may run there. `Ok(Some(zone))`: it may run there while `zone` is open and not
/// draining (a zone tidal does not know, it does not manage).
pub(crate) fn revocable_rule<'n>(
    pod: &PodInfo,
    preemptable: &Preemptable,
    node: &'n NodeInfo,
) -> Result<Option<&'n str>, Refused> {
    let Some(zone) = node.revocable_zone.as_deref() else {
        return Ok(None);
    };
    if is_exempt(pod) {
        return Ok(None);
    }
    match preemptable {
        Preemptable::Yes => {}
        Preemptable::No => return Err(Refused::NotPreemptable),
        Preemptable::Unreadable(invalid) => return Err(Refused::Unreadable(invalid.clone())),
    }
    if let Some(opted) = pod.zone_opt_in.as_deref()
        && opted != "*"
        && opted != zone
    {
        return Err(Refused::OtherZone(opted.to_owned()));
    }
    Ok(Some(zone))
}

/// All that [`revocable_rule`] reads of a pod, hashed: pods with the same constraint signature and
/// the same placement key may run on the same nodes, so searches can share their results.
///
/// Hashed with foldhash's fixed seed, not SipHash: keys are only compared with each other within one
/// process (as map keys and parts of other keys), never stored or sent, and the planner computes one
/// for every pod it weighs.
pub(crate) fn placement_key(pod: &PodInfo, preemptable: &Preemptable) -> u64 {
    foldhash::quality::FixedState::default().hash_one((
        is_exempt(pod),
        matches!(preemptable, Preemptable::Yes),
        &pod.zone_opt_in,
    ))
}
