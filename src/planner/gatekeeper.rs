//! The planner's side of the handle strategies offer candidates through: the policy's namespace filter,
//! then every gate in order, with the tallies of the gates kept consistent across all-or-none offers.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    hash::{BuildHasherDefault, Hasher},
    sync::Arc,
};

use super::SkipRows;
use crate::{
    cluster::PodInfo,
    framework::{
        Candidate, Gate, GateId, Gatekeeper, PlanContext, PlannedEviction, Refusal, SkipReason,
        Skipped, Strategy, StrategyId,
    },
};

/// The real thing: the policy's namespace filter, then every gate in order.
pub struct PlanGatekeeper<'c, 'a> {
    ctx: &'c PlanContext<'a>,
    gates: Vec<Box<dyn Gate>>,
    /// Which of `gates` answer [`Gatekeeper::protected`], found once: strategies probe every pod they weigh.
    protecting: Vec<usize>,
    /// The pods offered so far and whether they will be evicted, by the address of their snapshot
    /// entry (see [`AddressHasher`]): a key would be hashed from its strings, one more cache miss per
    /// pod offered, and again each time the table grows.
    decided: HashMap<usize, Outcome, BuildHasherDefault<AddressHasher>>,
    pub evictions: Vec<PlannedEviction>,
    pub skipped: Vec<Skipped>,
    pub skip_counts: BTreeMap<SkipReason, u32>,
    rows: SkipRows,
    /// The strategy whose candidates are being offered.
    proposer: Option<StrategyId>,
    /// What became of each strategy's candidates, and what it said it saw.
    pub tallies: BTreeMap<StrategyId, StrategyTally>,
}

/// One strategy's share of a plan: what it offered, what became of it, and what it saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StrategyTally {
    /// Candidates put to the gates (or held back by the strategy's own arguments).
    pub offered: u32,
    pub evicted: u32,
    pub skipped: BTreeMap<SkipReason, u32>,
    /// Candidates dropped before the gates: out of the policy's namespaces or nodes, already leaving,
    /// or decided earlier in this plan.
    pub dropped: u32,
    /// The strategy's own words ([`Gatekeeper::observe`]).
    pub saw: Vec<String>,
}

/// What became of a pod offered in this plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Admitted,
    Skipped,
}

/// Why a candidate is not even put to the gates.
enum Precheck {
    Go,
    /// Out of scope or already gone: dropped without a report line.
    Drop,
    /// Held back by the strategy's own arguments.
    Held(String),
}

impl<'c, 'a> PlanGatekeeper<'c, 'a> {
    pub fn new(ctx: &'c PlanContext<'a>, gates: Vec<Box<dyn Gate>>, rows: SkipRows) -> Self {
        let protecting = (0..gates.len())
            .filter(|&i| gates[i].id() == GateId::Protected)
            .collect();
        PlanGatekeeper {
            ctx,
            gates,
            protecting,
            decided: HashMap::default(),
            evictions: Vec::new(),
            skipped: Vec::new(),
            skip_counts: BTreeMap::new(),
            rows,
            proposer: None,
            tallies: BTreeMap::new(),
        }
    }

    fn tally(&mut self, strategy: StrategyId) -> &mut StrategyTally {
        self.tallies.entry(strategy).or_default()
    }

    /// Lets the strategy offer its candidates.
    pub fn admit_from(&mut self, strategy: &Strategy) {
        self.proposer = Some(strategy.id());
        self.tally(strategy.id());
        let ctx = self.ctx;
        strategy.offer_candidates(ctx, self);
        self.proposer = None;
    }

    /// Out of the policy's scope, already leaving, or decided earlier in this plan.
    fn out_of_play(&self, pod: &PodInfo) -> bool {
        !self.ctx.policy.spec.namespaces.admits(&pod.key.namespace)
            || !self.ctx.processes_pod(pod)
            || self.ctx.is_leaving(pod)
            || self.decided.contains_key(&address(pod))
    }

    fn precheck(&self, candidate: &Candidate) -> Precheck {
        if self.out_of_play(&candidate.pod) {
            return Precheck::Drop;
        }
        match &candidate.held {
            Some(why) => Precheck::Held(why.clone()),
            None => Precheck::Go,
        }
    }

    fn run_gates(&mut self, candidate: &Candidate) -> Result<(), Refusal> {
        let ctx = self.ctx;
        self.gates.iter_mut().try_for_each(|gate| {
            gate.check(candidate, ctx)
                .map_err(|detail| Refusal::new(gate.id(), detail))
        })
    }

    fn admit(&mut self, candidate: &Candidate) {
        for gate in &mut self.gates {
            gate.admit(candidate, self.ctx);
        }
    }

    fn retract(&mut self, candidate: &Candidate) {
        for gate in &mut self.gates {
            gate.retract(candidate, self.ctx);
        }
    }

    /// Whether some round could take all of `group` at once, as far as every gate can tell.
    fn fits_together(&self, group: &[Candidate]) -> bool {
        self.gates
            .iter()
            .all(|gate| gate.fits_together(group, self.ctx))
    }

    fn record(&mut self, candidate: Candidate) {
        self.tally(candidate.strategy).evicted += 1;
        self.decide(&candidate.pod, Outcome::Admitted);
        self.evictions.push(PlannedEviction { candidate });
    }

    fn decide(&mut self, pod: &PodInfo, outcome: Outcome) {
        let earlier = self.decided.insert(address(pod), outcome);
        debug_assert!(earlier.is_none(), "{} decided twice", pod.key);
    }

    /// Whether a skip for `reason` gets its row.
    fn listed(&self, reason: SkipReason) -> bool {
        match self.rows {
            SkipRows::All => true,
            // Unreadable settings are always listed: each gets its Warning Event.
            SkipRows::AtMost(cap) => {
                self.skipped.len() < cap || reason == SkipReason::Gate(GateId::Invalid)
            }
        }
    }

    fn skip(&mut self, candidate: Candidate, refusal: Refusal) {
        *self
            .tally(candidate.strategy)
            .skipped
            .entry(refusal.reason)
            .or_default() += 1;
        self.decide(&candidate.pod, Outcome::Skipped);
        *self.skip_counts.entry(refusal.reason).or_default() += 1;
        if !self.listed(refusal.reason) {
            return;
        }
        self.skipped.push(Skipped {
            candidate,
            reason: refusal.reason,
            detail: refusal.detail,
        });
    }
}

impl Gatekeeper for PlanGatekeeper<'_, '_> {
    fn offer(&mut self, candidate: Candidate) -> bool {
        match self.precheck(&candidate) {
            Precheck::Drop => {
                self.tally(candidate.strategy).dropped += 1;
                return false;
            }
            Precheck::Held(why) => {
                self.tally(candidate.strategy).offered += 1;
                self.skip(candidate, Refusal::new(SkipReason::HeldByPolicy, why));
                return false;
            }
            Precheck::Go => {}
        }
        self.tally(candidate.strategy).offered += 1;
        match self.run_gates(&candidate) {
            Err(refusal) => {
                self.skip(candidate, refusal);
                false
            }
            Ok(()) => {
                self.admit(&candidate);
                self.record(candidate);
                true
            }
        }
    }

    fn hold(&mut self, pod: &Arc<PodInfo>, candidate: &mut dyn FnMut() -> Candidate) {
        let Some(strategy) = self.proposer else {
            // Only a strategy holds, while it offers; anything else takes the long way.
            self.offer(candidate());
            return;
        };
        if self.out_of_play(pod) {
            self.tally(strategy).dropped += 1;
            return;
        }
        if !self.listed(SkipReason::HeldByPolicy) {
            let tally = self.tally(strategy);
            tally.offered += 1;
            *tally.skipped.entry(SkipReason::HeldByPolicy).or_default() += 1;
            self.decide(pod, Outcome::Skipped);
            *self
                .skip_counts
                .entry(SkipReason::HeldByPolicy)
                .or_default() += 1;
            return;
        }
        self.tally(strategy).offered += 1;
        let candidate = candidate();
        let why = candidate.held.clone().unwrap_or_default();
        self.skip(candidate, Refusal::new(SkipReason::HeldByPolicy, why));
    }

    fn offer_all(&mut self, candidates: Vec<Candidate>) -> bool {
        let mut unique = HashSet::<usize, BuildHasherDefault<AddressHasher>>::default();
        for candidate in &candidates {
            if !matches!(self.precheck(candidate), Precheck::Go)
                || !unique.insert(address(&candidate.pod))
            {
                return false;
            }
        }
        // Admit one by one so that tallies (budgets, limits) see the earlier members; undo on refusal.
        for (index, candidate) in candidates.iter().enumerate() {
            if let Err(Refusal { reason, detail }) = self.run_gates(candidate) {
                for admitted in candidates[..index].iter().rev() {
                    self.retract(admitted);
                }
                let detail = if candidates.len() > 1 {
                    format!(
                        "{detail} (one of {} evictions that only help together; none made)",
                        candidates.len()
                    )
                } else {
                    detail
                };
                let refused = candidates.into_iter().nth(index);
                if let Some(refused) = refused {
                    self.tally(refused.strategy).offered += 1;
                    self.skip(refused, Refusal::new(reason, detail));
                }
                return false;
            }
            self.admit(candidate);
        }
        for candidate in candidates {
            self.tally(candidate.strategy).offered += 1;
            self.record(candidate);
        }
        true
    }

    fn offer_gang(&mut self, members: Vec<Candidate>) -> usize {
        let mut going = Vec::with_capacity(members.len());
        for member in members {
            match self.precheck(&member) {
                Precheck::Drop => self.tally(member.strategy).dropped += 1,
                Precheck::Held(why) => {
                    self.tally(member.strategy).offered += 1;
                    self.skip(member, Refusal::new(SkipReason::HeldByPolicy, why));
                }
                Precheck::Go => going.push(member),
            }
        }
        // Member by member, each admitted before the next is asked, so that budgets and limits
        // count the ones before it.
        let mut verdicts: Vec<Option<Refusal>> = Vec::with_capacity(going.len());
        let mut held_by = None;
        for (index, member) in going.iter().enumerate() {
            match self.run_gates(member) {
                Ok(()) => {
                    self.admit(member);
                    verdicts.push(None);
                }
                Err(refusal) => {
                    let for_good = refused_for_good(&refusal, member);
                    verdicts.push(Some(refusal));
                    if !for_good {
                        held_by = Some(index);
                        break;
                    }
                }
            }
        }
        let Some(held_by) = held_by else {
            let mut evicted = 0;
            for (member, verdict) in going.into_iter().zip(verdicts) {
                self.tally(member.strategy).offered += 1;
                match verdict {
                    None => {
                        self.record(member);
                        evicted += 1;
                    }
                    Some(refusal) => self.skip(member, refusal),
                }
            }
            return evicted;
        };
        for (member, verdict) in going.iter().zip(&verdicts).rev() {
            if verdict.is_none() {
                self.retract(member);
            }
        }
        let limited = verdicts[held_by]
            .as_ref()
            .is_some_and(|r| r.reason == SkipReason::Gate(GateId::Limit));
        if limited && !self.fits_together(&going) {
            // No round can take the gang at once: it goes as the limits allow, pod by pod.
            return going
                .into_iter()
                .map(|member| self.offer(member))
                .filter(|admitted| *admitted)
                .count();
        }
        let Some(hold) = verdicts[held_by].clone() else {
            return 0;
        };
        let gang = going[held_by]
            .gang
            .map_or_else(|| "gang".to_owned(), |gang| gang.to_string());
        let holder = going[held_by].pod.key.to_string();
        let size = going.len();
        for (index, member) in going.into_iter().enumerate() {
            self.tally(member.strategy).offered += 1;
            // The members never asked are asked now, so that each says what holds it for itself
            // (its own cooldown, its own protection) where something does.
            let own = match verdicts.get(index) {
                Some(verdict) => verdict.clone(),
                None => self.run_gates(&member).err(),
            };
            let refusal = match own {
                Some(refusal) if index == held_by => Refusal::new(
                    refusal.reason,
                    format!(
                        "{} (its {gang} goes whole or not at all: none of its {size} pods this round)",
                        refusal.detail
                    ),
                ),
                Some(refusal) => refusal,
                None => Refusal::new(
                    hold.reason,
                    format!(
                        "its {gang} goes whole or not at all, and {holder} is held: {}",
                        hold.detail
                    ),
                ),
            };
            self.skip(member, refusal);
        }
        0
    }

    fn would_admit(&mut self, candidate: &Candidate) -> bool {
        matches!(self.precheck(candidate), Precheck::Go) && self.run_gates(candidate).is_ok()
    }

    fn protected(&mut self, pod: &Arc<PodInfo>) -> bool {
        // Only strategies ask, and only while they run.
        if self.proposer.is_none() {
            return false;
        }
        let ctx = self.ctx;
        let gates = &mut self.gates;
        self.protecting.iter().any(|&i| gates[i].protects(pod, ctx))
    }

    fn decided(&self, pod: &PodInfo) -> bool {
        self.decided.contains_key(&address(pod))
    }

    fn admitted(&self, pod: &PodInfo) -> bool {
        self.admitted_any() && self.decided.get(&address(pod)) == Some(&Outcome::Admitted)
    }

    fn admitted_any(&self) -> bool {
        // Every admitted pod is recorded as an eviction, and nothing else is.
        !self.evictions.is_empty()
    }

    fn observe(&mut self, saw: String) {
        if let Some(strategy) = self.proposer {
            self.tally(strategy).saw.push(saw);
        }
    }
}

/// A refusal that no later round lifts by itself: a gang waiting for it would wait for ever, so the
/// pod is left out and the rest of its gang goes without it. Unreadable settings and protections stay
/// until someone changes them; a cooldown ends, unless the pod has no scheduling time to count from.
fn refused_for_good(refusal: &Refusal, member: &Candidate) -> bool {
    match refusal.reason {
        SkipReason::Gate(GateId::Invalid | GateId::Protected) => true,
        SkipReason::Gate(GateId::Cooldown) => member.pod.scheduled_at.is_none(),
        _ => false,
    }
}

/// Where the snapshot keeps a pod. Within one plan every pod has exactly one entry (the snapshot does
/// not change while it is planned), so the address identifies the pod as well as its key does.
fn address(pod: &PodInfo) -> usize {
    std::ptr::from_ref(pod).addr()
}

/// Hashes pod addresses for [`PlanGatekeeper::decided`]. Strategies ask about nearly every pod they weigh,
/// hundreds of thousands of times per plan: an address hashes in a multiplication, where a namespace and
/// a name take SipHash over both strings.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.write_usize(usize::from(*byte) ^ (self.0 as usize));
        }
    }

    fn write_usize(&mut self, address: usize) {
        // Fibonacci hashing; the shift brings the well-mixed high bits down, as the table indexes by
        // the low ones and aligned addresses end in zeros.
        let mixed = (address as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = mixed ^ (mixed >> 32);
    }
}
