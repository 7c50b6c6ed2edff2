//! How strategies hand candidates to the gates and learn the answer. Strategies that evict "until the
//! node is balanced" or "until the pending pod fits" need to know which of their candidates the gates let
//! through, or they would stop early (a refused pod counted as gone) or overshoot.

use std::{collections::HashMap, sync::Arc};

use super::Candidate;
use crate::cluster::{ObjectKey, PodInfo};

pub trait Gatekeeper {
    /// Passes the candidate through the policy's filters and gates. True if it will be evicted; false if
    /// it was refused (and reported) or had already been decided earlier in this plan.
    fn offer(&mut self, candidate: Candidate) -> bool;

    /// All or none: true if every candidate will be evicted. Otherwise none is, the first refused one is
    /// reported as skipped, and the others stay undecided so that a later offer may use them.
    fn offer_all(&mut self, candidates: Vec<Candidate>) -> bool;

    /// The pods of one gang on a draining zone ([`Candidate::gang`]), decided together: all of them
    /// evicted this round, or none, each of them then reported with what holds the gang. Two
    /// exceptions, where waiting would wait for ever: a pod refused for good (unreadable settings,
    /// protections, a cooldown with no scheduling time to end from) is left out and the others still
    /// go whole; and a gang larger than the policy's limits allow in any round goes as they allow.
    /// Returns how many will be evicted.
    fn offer_gang(&mut self, members: Vec<Candidate>) -> usize {
        members
            .into_iter()
            .map(|member| self.offer(member))
            .filter(|admitted| *admitted)
            .count()
    }

    /// A pod the strategy found but its own arguments keep (placement violations with
    /// `evictPlacementViolations: false`): reported as held, never put to the gates, and decided, so
    /// that no later strategy of the plan evicts it. `candidate` is built only if the report lists
    /// the pod: a closed zone can hold tens of thousands of them, counted every cycle.
    fn hold(&mut self, pod: &Arc<PodInfo>, candidate: &mut dyn FnMut() -> Candidate) {
        let _ = pod;
        self.offer(candidate());
    }

    /// What `offer` would answer, without deciding or reporting anything.
    fn would_admit(&mut self, candidate: &Candidate) -> bool;

    /// The evictor protections refuse this pod. Balancing strategies use it to leave such pods out of
    /// their choice silently, as the descheduler's evictor filter does, instead of reporting every
    /// DaemonSet pod of every busy node.
    fn protected(&mut self, pod: &Arc<PodInfo>) -> bool;

    /// The pod was already evicted or refused earlier in this plan. `pod` is the plan snapshot's own
    /// entry for the pod, as for [`Self::admitted`].
    fn decided(&self, pod: &PodInfo) -> bool;

    /// The pod will be evicted: an earlier offer in this plan was admitted. Strategies count such pods
    /// as gone, or a later strategy would act on a node as if the earlier evictions never happened.
    /// `pod` is the plan snapshot's own entry for the pod (strategies never make pods of their own).
    fn admitted(&self, pod: &PodInfo) -> bool;

    /// Some offer in this plan was admitted. While none was, [`Self::admitted`] is false for every
    /// pod, and strategies may skip asking it pod by pod.
    fn admitted_any(&self) -> bool;

    /// What the running strategy saw, for a person asking why it did (or did not) evict: one
    /// sentence, e.g. how it classified the nodes and why no candidate moved.
    fn observe(&mut self, _saw: String) {}
}

/// Accepts everything: what a balancing strategy would do if no gate objected. Used by tests.
#[derive(Default)]
pub struct AcceptAll {
    pub candidates: Vec<Candidate>,
    /// Every pod offered, and whether it was accepted (held candidates are not).
    seen: HashMap<ObjectKey, bool>,
}

impl Gatekeeper for AcceptAll {
    fn offer(&mut self, candidate: Candidate) -> bool {
        if self.seen.contains_key(&candidate.pod.key) {
            return false;
        }
        let accepted = candidate.held.is_none();
        self.seen.insert(candidate.pod.key.clone(), accepted);
        if accepted {
            self.candidates.push(candidate);
        }
        accepted
    }

    fn offer_all(&mut self, candidates: Vec<Candidate>) -> bool {
        if candidates
            .iter()
            .any(|c| self.seen.contains_key(&c.pod.key) || c.held.is_some())
        {
            return false;
        }
        for candidate in candidates {
            self.offer(candidate);
        }
        true
    }

    fn would_admit(&mut self, candidate: &Candidate) -> bool {
        !self.seen.contains_key(&candidate.pod.key) && candidate.held.is_none()
    }

    fn protected(&mut self, _pod: &Arc<PodInfo>) -> bool {
        false
    }

    fn decided(&self, pod: &PodInfo) -> bool {
        self.seen.contains_key(&pod.key)
    }

    fn admitted(&self, pod: &PodInfo) -> bool {
        self.seen.get(&pod.key).copied().unwrap_or(false)
    }

    fn admitted_any(&self) -> bool {
        self.seen.values().any(|accepted| *accepted)
    }
}
