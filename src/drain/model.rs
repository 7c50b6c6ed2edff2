//! How long a drain takes: the rounds a closing zone's jobs need within their budgets and
//! `evictPeriod`, every eviction sent through one shared rate limit (earliest close first), and each
//! evicted pod gone once it has terminated. Pure: plain data in, an estimate out, no clock.
//!
//! The model follows the controller. A round starts every `evictPeriod` while pods remain; in it each
//! job loses what its budget allows given the pods of the job still leaving (queued, sent and not yet
//! terminated); a job without a budget loses one pod at a time, and a gang taken whole all its pods
//! left, in a round whose budget allows one and whose room holds them. Evictions queue for the
//! sender, which takes the earliest close first and sends at most `qps` a second (after a burst),
//! `concurrency` at a time, each taking `request`. A sent pod is gone `terminates_in` later. What then takes its place
//! decides its job's budget: a replacement running elsewhere gives the budget back, a pod nothing
//! recreates leaves the job smaller, and a replacement with no node to run on (every ready node is in
//! a closed or draining zone) stays Pending and holds the budget for the rest of the drain.

use std::collections::{BTreeMap, BTreeSet};

use jiff::{SignedDuration, Timestamp};

use super::{
    pacing::{Pacing, Sender, TokenBucket},
    queue::{EvictionQueue, JobPace, Replacement, Urgency, once_gone, rounds_for},
};
use crate::{
    cluster::{JobBudget, JobStats, model::job_budget::allowed_evictions},
    framework::Gang,
};

/// One zone's drain, as it stands.
#[derive(Clone, Debug)]
pub struct ZoneDrain {
    pub zone: String,
    /// The first round may start here: the drain's start, or when `evictPeriod` allows the next round.
    pub first_round: Timestamp,
    pub evict_period: SignedDuration,
    /// The close the drain is for; `None` when the zone is closed (or no close is ahead).
    pub close: Option<Timestamp>,
    /// Budgets no longer hold in rounds from the close on (`budgetsAfterClose: Ignore`).
    pub ignore_budgets_after_close: bool,
    /// The most a round evicts in this zone (the policy's limits), if capped.
    pub round_cap: Option<u32>,
    /// The zone's `evictionNotice`: what holds pods whose `from` is late, when it asks for one.
    pub notice: Option<SignedDuration>,
    pub jobs: Vec<JobDrain>,
    /// Preemptable pods no round will take (protected, unreadable settings, ...), by why.
    pub stays: BTreeMap<String, u32>,
}

/// A job with pods to leave the zone.
#[derive(Clone, Debug)]
pub struct JobDrain {
    pub job: String,
    /// `None`: one pod at a time.
    pub budget: Option<JobBudget>,
    /// The job's pods, wherever they run, as the budget counts them now.
    pub stats: JobStats,
    /// What takes an evicted pod's place.
    pub replacement: Replacement,
    /// When each of the job's pods already on its way out (sent, or terminating) is expected gone.
    pub leaving_until: Vec<Timestamp>,
    /// The job's pods whose evictions wait in the queue now, not sent yet.
    pub queued: Vec<QueuedPod>,
    /// The pods to evict from the zone, in the order rounds take them.
    pub pods: Vec<PodDrain>,
    /// The job's pods left to finish: each ends by itself at its instant, before the close, and no
    /// round takes it.
    pub ends: Vec<Timestamp>,
    /// A gang the drain takes below its `minMember`: a round takes all its pods left, or none.
    pub gang: Option<Gang>,
}

impl JobDrain {
    /// The job as a round that takes `taken` of [`Self::pods`] leaves it.
    pub fn at_round(&self, taken: u32) -> JobAtRound {
        let mut stats = self.stats;
        stats.running = stats.running.saturating_sub(taken);
        stats.leaving = stats.leaving.saturating_add(taken);
        JobAtRound {
            budget: self.budget,
            replacement: self.replacement,
            stats,
            left: u32::try_from(self.pods.len())
                .unwrap_or(u32::MAX)
                .saturating_sub(taken),
            whole: self.gang.is_some(),
        }
    }

    /// From when a round can take the job's pods from `next` on: a gang's round waits for the last
    /// cooldown of its pods left, any other job's for its next pod's.
    fn ready_from(&self, next: usize) -> Option<Timestamp> {
        let left = self.pods.get(next..)?;
        match self.gang {
            Some(_) => left.iter().map(|pod| pod.from).max(),
            None => left.first().map(|pod| pod.from),
        }
    }
}

/// A job as a round leaves it, its evictions just queued: what says how soon they must go.
#[derive(Clone, Copy, Debug)]
pub struct JobAtRound {
    pub budget: Option<JobBudget>,
    pub replacement: Replacement,
    /// The round's pods counted as leaving.
    pub stats: JobStats,
    /// Pods still to evict from the zone after this round.
    pub left: u32,
    /// A gang taken whole: its next round takes all it has left.
    pub whole: bool,
}

impl JobAtRound {
    /// How soon the round's evictions must go for the close (`None`: the zone is closed): the rounds
    /// the job's other pods still need come after them.
    pub fn urgency(
        &self,
        close: Option<Timestamp>,
        evict_period: SignedDuration,
        gone_after: SignedDuration,
    ) -> Urgency {
        let Some(close) = close else {
            return Urgency::OVERDUE;
        };
        let idle = once_gone(self.stats, self.replacement);
        let rounds_after =
            rounds_for(self.left, self.budget, idle, self.replacement, self.whole).unwrap_or(0);
        Urgency::before_close(close, &JobPace::new(rounds_after, evict_period, gone_after))
    }
}

/// A pod whose eviction waits in the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuedPod {
    pub urgency: Urgency,
    /// Its place among every eviction queued, across zones.
    pub position: usize,
    pub terminates_in: SignedDuration,
}

/// One pod to evict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodDrain {
    /// Not before this instant (its cooldown).
    pub from: Timestamp,
    /// How long it takes to terminate once evicted.
    pub terminates_in: SignedDuration,
}

/// One round of the estimate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoundEstimate {
    pub at: Timestamp,
    pub pods: u32,
    pub jobs: u32,
    /// When the last of its evictions is sent.
    pub sent_by: Timestamp,
}

/// What bounds a drain's length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Nothing to evict.
    Nothing,
    /// The eviction rate: the queue of requests is what takes the time.
    Rate,
    /// One job's budget: `rounds` rounds of `evictPeriod`, or of its pods' termination.
    Budget { job: String, pods: u32, rounds: u32 },
    /// Cooldowns that end late.
    Cooldown,
    /// The zone's `evictionNotice`: pods told late go late.
    Notice { notice: SignedDuration },
    /// Pods left to finish, the last of which ends at this instant (before the close).
    PodEnds { last: Timestamp },
}

/// A zone's drain as the model sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct DrainEstimate {
    pub zone: String,
    /// The instant the estimate was made.
    pub as_of: Timestamp,
    pub first_round: Timestamp,
    pub close: Option<Timestamp>,
    /// Pods to evict (queued ones included) and their jobs.
    pub pods: u32,
    pub jobs: u32,
    /// Pods left to finish: they end by themselves before the close.
    pub ending: u32,
    pub rounds: Vec<RoundEstimate>,
    /// When the last eviction is sent.
    pub sent_by: Option<Timestamp>,
    /// When the last evicted pod is gone (also the pods already leaving); `None` with nothing to do.
    pub done_at: Option<Timestamp>,
    /// When the last pod left to finish ends by itself. Not part of the drain's own length: the pods
    /// end at their instants whenever the drain starts.
    pub ends_by: Option<Timestamp>,
    /// Pods that never leave by themselves, by why.
    pub stays: BTreeMap<String, u32>,
    /// Pods expected still on the zone at its close: evictable ones not gone by then, and those that
    /// stay.
    pub at_close: u32,
    pub bound: Bound,
    /// The model stopped before the end (a drain of more rounds than it follows).
    pub cut_short: bool,
}

impl DrainEstimate {
    /// From the first round to the last evicted pod gone: what a drain's start must allow for.
    pub fn duration(&self) -> SignedDuration {
        self.done_at
            .map_or(SignedDuration::ZERO, |done| {
                done.duration_since(self.first_round)
            })
            .max(SignedDuration::ZERO)
    }

    /// When the zone holds no preemptable pod any more: `None` while some would stay.
    pub fn empty_at(&self) -> Option<Timestamp> {
        if self.stays.values().sum::<u32>() > 0 || self.cut_short {
            None
        } else {
            // Nothing to evict, nothing leaving and nothing to finish: empty already, whenever its
            // next round is.
            Some(self.done_at.max(self.ends_by).unwrap_or(self.as_of))
        }
    }

    /// Time between the expected empty zone and the close; negative when the close is missed.
    pub fn margin(&self) -> Option<SignedDuration> {
        Some(self.close?.duration_since(self.empty_at()?))
    }

    pub fn stays_total(&self) -> u32 {
        self.stays.values().sum()
    }
}

/// Why pods of a drain that can go no further stay: the policy's limits allow no eviction.
pub const STAYS_LIMIT: &str = "limit";
/// ... their job's budget allows none, whatever leaves.
pub const STAYS_BUDGET: &str = "budget";
/// ... their job's budget is held by replacements that no node outside the closing zone can take.
pub const STAYS_NO_ROOM: &str = "budget held by Pending replacements";

/// Rounds followed per zone at most: beyond this the drain is reported as cut short.
const MAX_ROUNDS: usize = 100_000;

/// One request waiting to be sent.
#[derive(Clone, Copy, Debug)]
struct Request {
    zone: usize,
    job: usize,
    terminates_in: SignedDuration,
    /// The round that queued it; `None` for a request queued before the estimate.
    round: Option<usize>,
}

/// Per job, what the simulation tracks.
struct JobSim {
    running: u32,
    total: u32,
    finished: u32,
    /// Release times of pods on their way out; `None` while still queued.
    leaving: Vec<Option<Timestamp>>,
    next: usize,
}

impl JobSim {
    fn stats(&self) -> JobStats {
        JobStats {
            total: self.total,
            running: self.running,
            finished: self.finished,
            leaving: u32::try_from(self.leaving.len()).unwrap_or(u32::MAX),
        }
    }
}

struct ZoneSim<'a> {
    input: &'a ZoneDrain,
    next_round: Timestamp,
    /// From when a round is due: `evictPeriod` after the last round that took pods. A zone whose
    /// round found nothing to take is tried again at its `next_round`, or at any cycle before that
    /// which another zone's round brings, as the controller plans every due zone in each cycle.
    due_from: Timestamp,
    jobs: Vec<JobSim>,
    rounds: Vec<RoundEstimate>,
    sent_by: Option<Timestamp>,
    done_at: Option<Timestamp>,
    gone: Vec<Timestamp>,
    cut_short: bool,
    /// A round took nothing and no later one can: the pods left stay.
    stuck: bool,
    /// Pods no round has taken yet: asked at every step of the estimate, so kept, not counted.
    to_take: usize,
    /// Its evictions waiting in the queue, not sent yet.
    in_queue: usize,
}

impl<'a> ZoneSim<'a> {
    /// The zone as its drain stands before the estimate.
    fn new(input: &'a ZoneDrain) -> Self {
        ZoneSim {
            input,
            next_round: input.first_round,
            due_from: input.first_round,
            jobs: input
                .jobs
                .iter()
                .map(|job| JobSim {
                    running: job.stats.running,
                    total: job.stats.total,
                    finished: job.stats.finished,
                    leaving: job
                        .leaving_until
                        .iter()
                        .copied()
                        .map(Some)
                        .chain(job.queued.iter().map(|_| None))
                        .collect(),
                    next: 0,
                })
                .collect(),
            rounds: Vec::new(),
            sent_by: None,
            done_at: input
                .jobs
                .iter()
                .flat_map(|j| j.leaving_until.iter().copied())
                .max(),
            gone: Vec::new(),
            cut_short: false,
            stuck: false,
            to_take: input.jobs.iter().map(|job| job.pods.len()).sum(),
            in_queue: input.jobs.iter().map(|job| job.queued.len()).sum(),
        }
    }
}

impl ZoneSim<'_> {
    fn remaining(&self) -> bool {
        self.to_take > 0
    }

    /// Whether a round may still take pods of the zone.
    fn rounds_ahead(&self) -> bool {
        !self.cut_short && !self.stuck && self.remaining()
    }

    /// Whether a later round can change the zone's estimate: once none can and none of its
    /// evictions waits in the queue, the zone's figures are final.
    fn settled(&self) -> bool {
        !self.rounds_ahead() && self.in_queue == 0
    }
}

/// Where the zones' next rounds stand: kept up to date round by round, so that a step of the
/// estimate (one send, of tens of thousands) finds the next round without visiting every zone.
#[derive(Default)]
struct RoundIndex {
    /// The zones under way that have rounds ahead, by their next round, then in their order.
    next: BTreeSet<(Timestamp, usize)>,
    /// Those whose last round is followed by a wait (`due_from` before `next_round`): the only
    /// ones another zone's cycle may find due and waiting.
    waiting: BTreeSet<usize>,
}

impl RoundIndex {
    fn add(&mut self, zone: usize, sim: &ZoneSim<'_>) {
        if sim.rounds_ahead() {
            self.next.insert((sim.next_round, zone));
            if sim.due_from < sim.next_round {
                self.waiting.insert(zone);
            }
        }
    }

    fn remove(&mut self, zone: usize, sim: &ZoneSim<'_>) {
        self.next.remove(&(sim.next_round, zone));
        self.waiting.remove(&zone);
    }

    /// The earliest next round, the first zone's among equals.
    fn first(&self) -> Option<(Timestamp, usize)> {
        self.next.first().copied()
    }
}

/// Where the sender stands when the estimate starts.
#[derive(Clone, Debug)]
pub struct Sending {
    pub pacing: Pacing,
    /// The instant of the estimate: queued evictions may go from here.
    pub now: Timestamp,
    /// The live evictor's bucket as it stands; `None`: full at `now`.
    pub bucket: Option<TokenBucket>,
}

impl Sending {
    pub fn fresh(pacing: Pacing, now: Timestamp) -> Sending {
        Sending {
            pacing,
            now,
            bucket: None,
        }
    }
}

/// When a zone's drain first takes part in the estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    /// From the start: evictions of it already wait in the queue.
    Start,
    /// At its first round.
    At(Timestamp),
    /// Never: nothing to evict, nothing queued.
    Never,
}

impl Entry {
    fn of(zone: &ZoneDrain) -> Entry {
        if zone.jobs.iter().any(|job| !job.queued.is_empty()) {
            Entry::Start
        } else if zone.jobs.iter().any(|job| !job.pods.is_empty()) {
            Entry::At(zone.first_round)
        } else {
            Entry::Never
        }
    }
}

/// Where the queue rested while drains were estimated together: nothing queued, and every drain
/// begun done with the queue. What follows a rest depends only on the sender and on the drains still
/// to begin, so that one drain estimated again from another first round, the others as they were,
/// is followed from the last rest before it begins in either, not from the start.
#[derive(Debug)]
pub struct Rests {
    /// Each zone's entry, as estimated.
    entries: Vec<Entry>,
    /// The zones that begin at their first round, by it, then in their order.
    order: Vec<(Timestamp, usize)>,
    /// Every close ahead, in order: each is a cycle of the controller.
    closes: Vec<Timestamp>,
    /// The rests, in time order: one for each place in `order` at which the queue rested.
    gaps: Vec<Gap>,
}

/// A stretch without an event, other than closes that find no zone waiting, in which the queue rests.
#[derive(Debug)]
struct Gap {
    /// The last event before it: the estimate's clock through it.
    from: Timestamp,
    /// The first zone of `order` still to begin.
    next: usize,
    /// The sender through it.
    sender: Sender,
}

impl Rests {
    /// The last rest before the `up_to`-th zone of `order` began, and before `before`.
    fn last(&self, up_to: usize, before: Timestamp) -> Option<&Gap> {
        let by_order = self.gaps.partition_point(|gap| gap.next <= up_to);
        let by_time = self.gaps.partition_point(|gap| gap.from < before);
        self.gaps[..by_order.min(by_time)].last()
    }

    /// The rest just before the `next`-th zone of `order` began, if the queue rested then with the
    /// sender as fresh at `at`: its burst back and no request on the wire.
    fn fresh_before(&self, next: usize, at: Timestamp) -> bool {
        let index = self.gaps.partition_point(|gap| gap.next < next);
        self.gaps
            .get(index)
            .is_some_and(|gap| gap.next == next && gap.from <= at && gap.sender.at_rest(at))
    }
}

/// Estimates the drains of `zones` together: they share the sender and its queue, least slack first.
pub fn estimate(zones: &[ZoneDrain], sending: &Sending) -> Vec<DrainEstimate> {
    estimate_with_rests(zones, sending).0
}

/// [`estimate`], and where the queue rested meanwhile: what [`estimate_moved`] goes on from.
pub fn estimate_with_rests(zones: &[ZoneDrain], sending: &Sending) -> (Vec<DrainEstimate>, Rests) {
    let entries: Vec<Entry> = zones.iter().map(Entry::of).collect();
    let mut order: Vec<(Timestamp, usize)> = entries
        .iter()
        .enumerate()
        .filter_map(|(zone, entry)| match entry {
            Entry::At(at) => Some((*at, zone)),
            _ => None,
        })
        .collect();
    order.sort_unstable();
    // A zone's close is a cycle of the controller too (it acts on the zone's new phase): due zones
    // waiting for a round are tried then.
    let mut closes: Vec<Timestamp> = zones
        .iter()
        .filter_map(|z| z.close)
        .filter(|close| *close > sending.now)
        .collect();
    closes.sort_unstable();
    closes.dedup();
    let mut gaps: Vec<Gap> = Vec::new();
    let estimates = {
        let mut run = Run::start(
            zones,
            sending,
            &entries,
            Joining::new(&order, 0, None),
            &closes,
        );
        loop {
            let next = run.joining.next;
            // A close that finds no zone waiting changes nothing: the rest goes on.
            if run.at_rest() && gaps.last().is_none_or(|gap| gap.next != next) {
                gaps.push(Gap {
                    from: run.clock,
                    next,
                    sender: run.sender.clone(),
                });
            }
            if !run.step() {
                break;
            }
        }
        zones
            .iter()
            .zip(run.sims)
            .map(|(input, sim)| finish(sim.unwrap_or_else(|| ZoneSim::new(input)), sending.now))
            .collect()
    };
    let rests = Rests {
        entries,
        order,
        closes,
        gaps,
    };
    (estimates, rests)
}

/// The estimate of `zones[zone]` among them, as [`estimate`] makes it, given the `rests` of the
/// estimate of the same drains with that zone's first round elsewhere. Until the zone begins there
/// or here the two are alike, so this one is taken up from the last rest before then. Once the zone
/// has begun and settled there, a rest before it begins here, at which the other rested too, both
/// with the sender as fresh, is followed by the same as there until it begins here: this one skips
/// to the last rest before then. The drains are followed only until the zone's figures are final,
/// since what comes after cannot change them.
pub fn estimate_moved(
    zones: &[ZoneDrain],
    sending: &Sending,
    rests: &Rests,
    zone: usize,
) -> Option<DrainEstimate> {
    let input = zones.get(zone)?;
    let to = match Entry::of(input) {
        Entry::Never => return Some(finish(ZoneSim::new(input), sending.now)),
        Entry::At(to) => Some(to),
        Entry::Start => None,
    };
    // Its place in the order the drains began in the estimate of all.
    let place = match rests.entries.get(zone) {
        Some(Entry::At(was)) => rests.order.binary_search(&(*was, zone)).ok(),
        _ => None,
    };
    let moved = to.map(|to| (to, zone));
    let resume = |gap: &Gap| {
        let closes = &rests.closes[rests.closes.partition_point(|close| *close < gap.from)..];
        Run::resume(
            zones,
            sending,
            gap,
            Joining::new(&rests.order, gap.next, moved),
            closes,
        )
    };
    let first = match (place, to) {
        (Some(place), Some(to)) => rests.last(place, to),
        _ => None,
    };
    let mut run = match first {
        Some(gap) => resume(gap),
        None => Run::start(
            zones,
            sending,
            &rests.entries,
            Joining::new(&rests.order, 0, moved),
            &rests.closes,
        ),
    };
    loop {
        if run.sims[zone].as_ref().is_some_and(ZoneSim::settled) {
            break;
        }
        if let (Some(place), Some(to)) = (place, to)
            && run.sims[zone].is_none()
            && let Some(gap) = alike_until(&run, rests, place, to)
        {
            run = resume(gap);
            continue;
        }
        if !run.step() {
            break;
        }
    }
    let sim = run.sims[zone].take().unwrap_or_else(|| ZoneSim::new(input));
    Some(finish(sim, sending.now))
}

/// Where a run whose moved zone has not begun yet (at `to`; at `place` in the order of the
/// estimate of all) goes on as the estimate of all went on: the run rests before a zone that began
/// after the moved one's old place, and the estimate of all rested before that zone too, both with
/// the sender as fresh, so that what follows is alike until the moved zone begins. The last rest
/// before it then, if later than now.
fn alike_until<'r>(
    run: &Run<'_>,
    rests: &'r Rests,
    place: usize,
    to: Timestamp,
) -> Option<&'r Gap> {
    let next = run.joining.next_listed().filter(|next| *next > place)?;
    let at = rests.order[next].0;
    let alike =
        run.at_rest() && run.clock <= at && run.sender.at_rest(at) && rests.fresh_before(next, at);
    alike
        .then(|| rests.last(usize::MAX, to))?
        .filter(|gap| gap.next > next)
}

/// The drains still to begin at their first round, in order.
struct Joining<'r> {
    order: &'r [(Timestamp, usize)],
    /// The first of `order` still to begin.
    next: usize,
    /// A zone that begins elsewhere than `order` has it: where, until it has begun.
    moved: Option<(Timestamp, usize)>,
    /// The zone whose place in `order` is passed over.
    skip: Option<usize>,
}

impl<'r> Joining<'r> {
    fn new(
        order: &'r [(Timestamp, usize)],
        next: usize,
        moved: Option<(Timestamp, usize)>,
    ) -> Self {
        let mut joining = Joining {
            order,
            next,
            moved,
            skip: moved.map(|(_, zone)| zone),
        };
        joining.pass_over();
        joining
    }

    fn pass_over(&mut self) {
        while self
            .order
            .get(self.next)
            .is_some_and(|(_, zone)| Some(*zone) == self.skip)
        {
            self.next += 1;
        }
    }

    /// The next to begin, the first zone's among equals.
    fn peek(&self) -> Option<(Timestamp, usize)> {
        match (self.order.get(self.next).copied(), self.moved) {
            (Some(listed), Some(moved)) => Some(listed.min(moved)),
            (listed, moved) => listed.or(moved),
        }
    }

    /// The place in `order` of the next to begin, unless the moved zone begins first.
    fn next_listed(&self) -> Option<usize> {
        let listed = self.order.get(self.next)?;
        self.moved
            .is_none_or(|moved| *listed < moved)
            .then_some(self.next)
    }

    fn pop(&mut self) {
        if self.moved.is_some() && self.peek() == self.moved {
            self.moved = None;
        } else {
            self.next += 1;
            self.pass_over();
        }
    }
}

/// The drains followed together through the sender and its queue.
struct Run<'a> {
    /// The zones that have begun, by their place in the estimate.
    sims: Vec<Option<ZoneSim<'a>>>,
    /// Zones begun that a later event can still change.
    active: usize,
    zones: &'a [ZoneDrain],
    joining: Joining<'a>,
    closes: &'a [Timestamp],
    sender: Sender,
    queue: EvictionQueue<Request>,
    /// Every request queued so far was queued by now: the instant of the last event.
    clock: Timestamp,
    rounds: RoundIndex,
    gone_after: SignedDuration,
}

impl<'a> Run<'a> {
    /// The drains from the estimate's start: the live queue and bucket as they stand.
    fn start(
        zones: &'a [ZoneDrain],
        sending: &Sending,
        entries: &[Entry],
        joining: Joining<'a>,
        closes: &'a [Timestamp],
    ) -> Self {
        let start = zones
            .iter()
            .map(|z| z.first_round)
            .min()
            .unwrap_or(sending.now)
            .min(sending.now);
        let sender = match &sending.bucket {
            Some(bucket) => Sender::resume(sending.pacing, bucket.clone(), start),
            None => Sender::new(sending.pacing, start),
        };
        let mut run = Run {
            sims: zones.iter().map(|_| None).collect(),
            active: 0,
            zones,
            joining,
            closes,
            sender,
            queue: EvictionQueue::new(),
            clock: sending.now,
            rounds: RoundIndex::default(),
            gone_after: sending.pacing.request,
        };
        // What the live queue holds goes first, in its order.
        let mut queued: Vec<(usize, Urgency, Request)> = Vec::new();
        for (zone, input) in zones.iter().enumerate() {
            if entries[zone] != Entry::Start {
                continue;
            }
            run.begin(zone);
            for (job, drain) in input.jobs.iter().enumerate() {
                for pod in &drain.queued {
                    queued.push((
                        pod.position,
                        pod.urgency,
                        Request {
                            zone,
                            job,
                            terminates_in: pod.terminates_in,
                            round: None,
                        },
                    ));
                }
            }
        }
        queued.sort_by_key(|(position, ..)| *position);
        for (_, urgency, request) in queued {
            run.queue.push(urgency, request);
        }
        run
    }

    /// The drains from a rest: the drains begun before it are done with the queue, so only those
    /// still to begin are followed.
    fn resume(
        zones: &'a [ZoneDrain],
        sending: &Sending,
        gap: &Gap,
        joining: Joining<'a>,
        closes: &'a [Timestamp],
    ) -> Self {
        Run {
            sims: zones.iter().map(|_| None).collect(),
            active: 0,
            zones,
            joining,
            closes,
            sender: gap.sender.clone(),
            queue: EvictionQueue::new(),
            clock: gap.from,
            rounds: RoundIndex::default(),
            gone_after: sending.pacing.request,
        }
    }

    /// Nothing queued, and every zone begun done with the queue.
    fn at_rest(&self) -> bool {
        self.queue.is_empty() && self.active == 0
    }

    fn begin(&mut self, zone: usize) {
        let sim = ZoneSim::new(&self.zones[zone]);
        if !sim.settled() {
            self.active += 1;
        }
        self.rounds.add(zone, &sim);
        self.sims[zone] = Some(sim);
    }

    /// Takes the next event: a send, a round or a close. `false` once none is left.
    fn step(&mut self) -> bool {
        let joins = self.joining.peek();
        let round = match (self.rounds.first(), joins) {
            (Some(under_way), Some(join)) => Some(under_way.min(join)),
            (under_way, join) => under_way.or(join),
        };
        // A close before the next round is a cycle, while any zone has pods left to take.
        let cycle = match (round, self.closes.first().copied()) {
            (Some((at, _)), Some(close)) if close < at => Some((close, None)),
            (round, _) => round.map(|(at, zone)| (at, Some(zone))),
        };
        let send = (!self.queue.is_empty()).then(|| self.sender.next_send(self.clock));
        // Sends that can go before the next round go first: the round then sees them on the wire.
        match (send, cycle) {
            (Some(at), Some((round_at, _))) if at <= round_at => self.send_one(at),
            (Some(at), None) => self.send_one(at),
            (_, Some((round_at, zone))) => {
                self.clock = self.clock.max(round_at);
                if zone.is_none() {
                    self.closes = &self.closes[1..];
                }
                // A round changes its own zone alone: which others wait is known before it.
                let waiting: Vec<usize> = self.rounds.waiting.iter().copied().collect();
                if let Some(zone) = zone {
                    if joins == round {
                        self.joining.pop();
                        self.begin(zone);
                    }
                    self.round_of(zone, round_at);
                }
                // The same cycle tries every other zone whose round is due but found nothing last.
                for other in waiting {
                    let Some(sim) = &self.sims[other] else {
                        continue;
                    };
                    let due = Some(other) != zone
                        && sim.due_from <= round_at
                        && sim.next_round > round_at
                        && sim.rounds_ahead();
                    if due {
                        self.round_of(other, round_at);
                    }
                }
            }
            (None, None) => return false,
        }
        true
    }

    fn round_of(&mut self, zone: usize, at: Timestamp) {
        let Some(sim) = self.sims[zone].as_mut() else {
            return;
        };
        let settled = sim.settled();
        self.rounds.remove(zone, sim);
        plan_round(sim, zone, at, &mut self.queue, self.gone_after);
        self.rounds.add(zone, sim);
        if !settled && sim.settled() {
            self.active -= 1;
        }
    }

    fn send_one(&mut self, at: Timestamp) {
        self.clock = at;
        let Some((_, request)) = self.queue.pop() else {
            return;
        };
        let answered = self.sender.send(at);
        let gone = answered
            .checked_add(request.terminates_in)
            .unwrap_or(Timestamp::MAX);
        let Some(zone) = self.sims[request.zone].as_mut() else {
            return;
        };
        let settled = zone.settled();
        zone.in_queue = zone.in_queue.saturating_sub(1);
        if let Some(slot) = zone.jobs[request.job]
            .leaving
            .iter_mut()
            .find(|slot| slot.is_none())
        {
            *slot = Some(gone);
        }
        zone.sent_by = Some(zone.sent_by.map_or(answered, |t| t.max(answered)));
        zone.done_at = Some(zone.done_at.map_or(gone, |t| t.max(gone)));
        zone.gone.push(gone);
        if let Some(round) = request.round.and_then(|round| zone.rounds.get_mut(round)) {
            round.sent_by = round.sent_by.max(answered);
        }
        if !settled && zone.settled() {
            self.active -= 1;
        }
    }
}

fn plan_round(
    zone: &mut ZoneSim<'_>,
    zone_index: usize,
    at: Timestamp,
    queue: &mut EvictionQueue<Request>,
    request: SignedDuration,
) {
    let input = zone.input;
    let budgets_hold = !(input.ignore_budgets_after_close && input.close.is_some_and(|c| at >= c));
    let mut cap = input.round_cap.unwrap_or(u32::MAX);
    let mut round = RoundEstimate {
        at,
        pods: 0,
        jobs: 0,
        sent_by: at,
    };
    let round_index = zone.rounds.len();
    for (index, (sim, job)) in zone.jobs.iter_mut().zip(&input.jobs).enumerate() {
        if cap == 0 {
            break;
        }
        // Pods gone by now have left: their replacements run, stay Pending (the job keeps its size
        // and they count as unavailable), or the job is smaller.
        let before = sim.leaving.len();
        sim.leaving.retain(|until| until.is_none_or(|t| t > at));
        let released = u32::try_from(before - sim.leaving.len()).unwrap_or(u32::MAX);
        match job.replacement {
            Replacement::Runs => sim.running += released,
            Replacement::Pending => {}
            Replacement::None => sim.total = sim.total.saturating_sub(released),
        }
        let mut allowed = if budgets_hold {
            allowed_evictions(job.budget, sim.stats())
        } else {
            u32::MAX
        };
        if job.gang.is_some() {
            allowed = gang_allows(job, sim.next, allowed, cap, input.round_cap, at);
        }
        let first = sim.next;
        while allowed > 0 && cap > 0 && sim.next < job.pods.len() {
            if job.pods[sim.next].from > at {
                break;
            }
            sim.next += 1;
            allowed -= 1;
            cap -= 1;
        }
        let took = sim.next - first;
        if took == 0 {
            continue;
        }
        zone.to_take -= took;
        let taken = u32::try_from(took).unwrap_or(u32::MAX);
        sim.running = sim.running.saturating_sub(taken);
        sim.leaving.extend(std::iter::repeat_n(None, took));
        // The job as the controller sees it once this round is queued.
        let at_round = JobAtRound {
            budget: job.budget,
            replacement: job.replacement,
            stats: sim.stats(),
            left: u32::try_from(job.pods.len() - sim.next).unwrap_or(u32::MAX),
            whole: job.gang.is_some(),
        };
        for pod in &job.pods[first..sim.next] {
            let urgency = at_round.urgency(
                input.close,
                input.evict_period,
                request.saturating_add(pod.terminates_in),
            );
            queue.push(
                urgency,
                Request {
                    zone: zone_index,
                    job: index,
                    terminates_in: pod.terminates_in,
                    round: Some(round_index),
                },
            );
        }
        zone.in_queue += took;
        round.pods += taken;
        round.jobs += 1;
    }
    // Nothing went, and nothing can change before the next round: no pod of the zone's jobs is on
    // its way out (whose going would free its budget), no cooldown is pending and no close lifts the
    // budgets ahead. A budget that allows no eviction (minAvailable as large as the job) or a round
    // cap of 0 holds the pods left for good.
    let lifted_later = input.ignore_budgets_after_close && input.close.is_some_and(|c| c > at);
    zone.stuck = round.pods == 0
        && !lifted_later
        && zone
            .jobs
            .iter()
            .zip(&input.jobs)
            .filter(|(sim, job)| sim.next < job.pods.len())
            .all(|(sim, job)| {
                sim.leaving.is_empty() && job.ready_from(sim.next).is_none_or(|from| from <= at)
            });
    if round.pods > 0 {
        zone.rounds.push(round);
        zone.due_from = at
            .checked_add(input.evict_period.max(SignedDuration::from_secs(1)))
            .unwrap_or(Timestamp::MAX);
    }
    if zone.rounds.len() >= MAX_ROUNDS {
        zone.cut_short = true;
    }
    // The controller tries again one `evictPeriod` later whether or not this round evicted, and no
    // sooner than a cooldown that ends later lets the next pod go.
    let period = input.evict_period.max(SignedDuration::from_secs(1));
    let mut next = at.checked_add(period).unwrap_or(Timestamp::MAX);
    let waiting_only_for_cooldowns = zone
        .jobs
        .iter()
        .zip(&input.jobs)
        .filter(|(sim, job)| sim.next < job.pods.len())
        .all(|(sim, job)| job.ready_from(sim.next).is_some_and(|from| from > next));
    if waiting_only_for_cooldowns
        && let Some(earliest) = zone
            .jobs
            .iter()
            .zip(&input.jobs)
            .filter_map(|(sim, job)| job.ready_from(sim.next))
            .min()
    {
        // Rounds fall on the `evictPeriod` grid from the first one.
        let behind = earliest.duration_since(at).as_secs_f64();
        let periods = (behind / period.as_secs_f64()).ceil().max(1.0);
        next = at
            .checked_add(SignedDuration::from_secs_f64(
                periods * period.as_secs_f64(),
            ))
            .unwrap_or(Timestamp::MAX);
    }
    if next == Timestamp::MAX {
        zone.cut_short = true;
    }
    zone.next_round = next;
}

/// What a gang's round may take of its pods left from `next`: all of them once every one is out of
/// its cooldown and its budget allows a first eviction (`allowed`), else none; and all of them only
/// within the round's room left (`cap`), unless more than any round takes (`round_cap`), when they go
/// as the room allows.
fn gang_allows(
    job: &JobDrain,
    next: usize,
    allowed: u32,
    cap: u32,
    round_cap: Option<u32>,
    at: Timestamp,
) -> u32 {
    let left = u32::try_from(job.pods.len().saturating_sub(next)).unwrap_or(u32::MAX);
    let ready = job.ready_from(next).is_some_and(|from| from <= at);
    let fits = left <= cap || round_cap.is_some_and(|most| left > most);
    if allowed == 0 || !ready || !fits {
        0
    } else {
        left
    }
}

fn finish(zone: ZoneSim<'_>, as_of: Timestamp) -> DrainEstimate {
    let input = zone.input;
    let pods: u32 = input
        .jobs
        .iter()
        .map(|j| u32::try_from(j.pods.len() + j.queued.len()).unwrap_or(u32::MAX))
        .sum();
    let not_sent = input
        .jobs
        .iter()
        .zip(&zone.jobs)
        .map(|(job, sim)| job.pods.len() - sim.next.min(job.pods.len()))
        .sum::<usize>();
    // Pods a stuck drain never takes stay, as those no round proposes do.
    let mut stays_by_reason = input.stays.clone();
    let held_for_good = if zone.stuck { not_sent } else { 0 };
    if held_for_good > 0 {
        for (job, sim) in input.jobs.iter().zip(&zone.jobs) {
            let held = job.pods.len() - sim.next.min(job.pods.len());
            if held == 0 {
                continue;
            }
            let why = if input.round_cap == Some(0) {
                STAYS_LIMIT
            } else if job.replacement == Replacement::Pending
                && sim.total > sim.running + sim.finished
            {
                STAYS_NO_ROOM
            } else {
                STAYS_BUDGET
            };
            *stays_by_reason.entry(why.to_owned()).or_default() +=
                u32::try_from(held).unwrap_or(u32::MAX);
        }
    }
    let stays: u32 = stays_by_reason.values().sum();
    let not_sent = not_sent - held_for_good;
    let at_close = input.close.map_or(0, |close| {
        let late = zone.gone.iter().filter(|gone| **gone > close).count()
            + input
                .jobs
                .iter()
                .flat_map(|j| j.leaving_until.iter().chain(&j.ends))
                .filter(|gone| **gone > close)
                .count()
            + not_sent;
        u32::try_from(late)
            .unwrap_or(u32::MAX)
            .saturating_add(stays)
    });
    let bound = bound_of(input, &zone);
    DrainEstimate {
        zone: input.zone.clone(),
        as_of,
        first_round: input.first_round,
        close: input.close,
        pods,
        jobs: u32::try_from(
            input
                .jobs
                .iter()
                .filter(|j| !j.pods.is_empty() || !j.queued.is_empty())
                .count(),
        )
        .unwrap_or(u32::MAX),
        ending: u32::try_from(input.jobs.iter().map(|j| j.ends.len()).sum::<usize>())
            .unwrap_or(u32::MAX),
        rounds: zone.rounds,
        sent_by: zone.sent_by,
        done_at: zone.done_at,
        ends_by: input.jobs.iter().flat_map(|j| &j.ends).max().copied(),
        stays: stays_by_reason,
        at_close,
        bound,
        cut_short: zone.cut_short || not_sent > 0,
    }
}

/// What made the drain as long as it is: pods left to finish, when the last of them ends after the
/// last evicted pod is gone; the queue, when sending took most of it; otherwise the job whose pods
/// went last, when its budget made it wait for rounds; otherwise cooldowns, or notices where the zone
/// gives them.
fn bound_of(input: &ZoneDrain, zone: &ZoneSim<'_>) -> Bound {
    let last_end = input.jobs.iter().flat_map(|j| &j.ends).max().copied();
    if let Some(last) = last_end
        && zone.done_at.is_none_or(|done| last > done)
    {
        return Bound::PodEnds { last };
    }
    let (Some(sent_by), Some(done_at)) = (zone.sent_by, zone.done_at) else {
        return Bound::Nothing;
    };
    let total = done_at.duration_since(input.first_round).as_secs_f64();
    let sending = sent_by.duration_since(input.first_round).as_secs_f64();
    let rounds = zone.rounds.len();
    let last_round_start = zone
        .rounds
        .last()
        .map_or(input.first_round, |r| r.at)
        .duration_since(input.first_round)
        .as_secs_f64();
    // A drain whose first round waited for the notices of pods told late is bounded by them.
    if let Some(notice) = input.notice
        && zone
            .rounds
            .first()
            .is_some_and(|r| r.at > input.first_round)
        && input
            .jobs
            .iter()
            .flat_map(|j| &j.pods)
            .any(|p| p.from > input.first_round)
    {
        return Bound::Notice { notice };
    }
    // The queue bounds the drain when the last round went out early and sending went on long after.
    if rounds <= 1 || sending - last_round_start > 0.5 * total {
        return Bound::Rate;
    }
    let cooled_late = input
        .jobs
        .iter()
        .flat_map(|j| &j.pods)
        .any(|p| p.from > input.first_round);
    let slowest = input
        .jobs
        .iter()
        .filter(|j| !j.pods.is_empty())
        .max_by_key(|j| {
            let per_round = match j.gang {
                Some(_) => j.pods.len() as u32,
                None => allowed_evictions(j.budget, j.stats),
            };
            (j.pods.len() as u32).div_ceil(per_round.max(1))
        });
    match slowest {
        Some(job) if !cooled_late || job.budget.is_some() || job.pods.len() > 1 => Bound::Budget {
            job: job.job.clone(),
            pods: u32::try_from(job.pods.len()).unwrap_or(u32::MAX),
            rounds: u32::try_from(rounds).unwrap_or(u32::MAX),
        },
        _ => match input.notice {
            Some(notice) => Bound::Notice { notice },
            None => Bound::Cooldown,
        },
    }
}

/// Drains built from plain data, for the tests of the model and of the plan that weighs them.
#[cfg(test)]
pub(super) mod fixtures {
    use super::*;
    use crate::testkit::at;

    pub(crate) fn secs(seconds: i64) -> SignedDuration {
        SignedDuration::from_secs(seconds)
    }

    pub(crate) fn pacing(qps: f64, burst: u32, concurrency: u32) -> Pacing {
        Pacing {
            qps,
            burst,
            concurrency,
            request: SignedDuration::from_millis(50),
        }
    }

    /// A job of `n` running pods, all on the zone, each gone `grace` seconds after its eviction.
    pub(crate) fn job(name: &str, n: u32, budget: Option<JobBudget>, grace: i64) -> JobDrain {
        JobDrain {
            job: name.to_owned(),
            budget,
            stats: JobStats {
                total: n,
                running: n,
                finished: 0,
                leaving: 0,
            },
            replacement: Replacement::Runs,
            leaving_until: Vec::new(),
            queued: Vec::new(),
            ends: Vec::new(),
            gang: None,
            pods: (0..n)
                .map(|_| PodDrain {
                    from: at(0),
                    terminates_in: secs(grace),
                })
                .collect(),
        }
    }

    /// `n` one-pod jobs named after `prefix`, each pod gone `grace` seconds after its eviction.
    pub(crate) fn one_pod_jobs(prefix: &str, n: u32, grace: i64) -> Vec<JobDrain> {
        (0..n)
            .map(|i| job(&format!("{prefix}{i}"), 1, None, grace))
            .collect()
    }

    /// A zone closing `close` seconds after 0, its first round at 0, a round a minute.
    pub(crate) fn zone(name: &str, close: i64, jobs: Vec<JobDrain>) -> ZoneDrain {
        ZoneDrain {
            zone: name.to_owned(),
            first_round: at(0),
            evict_period: secs(60),
            close: Some(at(close)),
            ignore_budgets_after_close: false,
            round_cap: None,
            notice: None,
            jobs,
            stays: BTreeMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{job, pacing, secs, zone};
    use super::*;
    use crate::cluster::IntOrPercent;
    use crate::testkit::at;

    /// The zones' drains from 0 s with a full bucket.
    fn run(zones: &[ZoneDrain], pacing: Pacing) -> Vec<DrainEstimate> {
        estimate(zones, &Sending::fresh(pacing, at(0)))
    }

    #[test]
    fn thousands_of_one_pod_jobs_go_in_one_round_paced_by_the_rate() {
        let jobs = (0..6_304)
            .map(|i| job(&format!("j{i}"), 1, None, 30))
            .collect();
        let estimate = &run(&[zone("rz1", 600, jobs)], pacing(5.0, 10, 4))[0];
        assert_eq!(estimate.rounds.len(), 1);
        assert_eq!(estimate.rounds[0].pods, 6_304);
        assert_eq!(estimate.bound, Bound::Rate);
        // The burst of 10 at once, then 5 a second: 6,294 / 5 = 1,258.8 s.
        let sending = estimate
            .sent_by
            .unwrap()
            .duration_since(at(0))
            .as_secs_f64();
        assert!((1_258.0..1_260.0).contains(&sending), "{sending}");
        // The last pod goes 30 s after its eviction.
        let done = estimate
            .done_at
            .unwrap()
            .duration_since(at(0))
            .as_secs_f64();
        assert!((done - sending - 30.0).abs() < 0.1, "{done}");
        // The close at 10 minutes is missed by far; most pods are still there then.
        assert!(estimate.margin().unwrap().is_negative());
        assert!(estimate.at_close > 3_000, "{}", estimate.at_close);
    }

    #[test]
    fn a_big_job_with_max_unavailable_one_loses_a_pod_every_other_round_when_pods_take_a_minute() {
        let one = Some(JobBudget::MaxUnavailable(IntOrPercent::Int(1)));
        let estimate = &run(
            &[zone("rz1", 600, vec![job("batch/big", 100, one, 60)])],
            pacing(5.0, 10, 4),
        )[0];
        // A pod evicted at a round is still terminating at the next (60 s + the request's 50 ms):
        // the budget lets one go every two rounds.
        assert_eq!(estimate.rounds.len(), 100);
        assert_eq!(estimate.rounds[1].at, at(120));
        let hours = estimate.duration().as_secs_f64() / 3600.0;
        assert!((3.2..3.4).contains(&hours), "{hours}");
        assert!(
            matches!(estimate.bound, Bound::Budget { ref job, pods: 100, .. } if job == "batch/big")
        );
        assert_eq!(estimate.at_close, 95);
    }

    #[test]
    fn the_earliest_close_is_sent_first_when_zones_share_the_rate() {
        let many = |zone_name: &str| -> Vec<JobDrain> {
            (0..600)
                .map(|i| job(&format!("{zone_name}-{i}"), 1, None, 0))
                .collect()
        };
        // rz-late's round comes first, but rz-early closes first: its requests jump the queue.
        let mut late = zone("rz-late", 1_000, many("late"));
        late.first_round = at(0);
        let mut early = zone("rz-early", 400, many("early"));
        early.first_round = at(10);
        let estimates = run(&[late, early], pacing(5.0, 10, 4));
        let (late, early) = (&estimates[0], &estimates[1]);
        // From 10 s on, the early zone's 600 pods take the sender: 120 s, done by about 130 s.
        let early_done = early.done_at.unwrap().duration_since(at(0)).as_secs_f64();
        assert!((128.0..133.0).contains(&early_done), "{early_done}");
        assert!(early.margin().unwrap().is_positive());
        // The late zone waited for it: all 1,200 evictions take about 240 s.
        let late_done = late.done_at.unwrap().duration_since(at(0)).as_secs_f64();
        assert!((236.0..244.0).contains(&late_done), "{late_done}");
    }

    #[test]
    fn cooldowns_delay_the_pods_they_hold_and_rounds_wait_for_them() {
        let mut cooling = job("cooling", 1, None, 0);
        cooling.pods[0].from = at(290);
        let estimate = &run(&[zone("rz1", 600, vec![cooling])], pacing(5.0, 10, 4))[0];
        // Rounds on the minute grid: the first after 290 s is at 300 s.
        assert_eq!(estimate.rounds.len(), 1);
        assert_eq!(estimate.rounds[0].at, at(300));
        assert_eq!(estimate.bound, Bound::Rate);
    }

    #[test]
    fn budgets_after_close_ignore_takes_every_pod_left_at_the_close() {
        let one = Some(JobBudget::MaxUnavailable(IntOrPercent::Int(1)));
        let mut respect = zone("rz1", 120, vec![job("big", 20, one, 0)]);
        respect.evict_period = secs(60);
        let mut ignore = respect.clone();
        ignore.ignore_budgets_after_close = true;
        let respected = &run(&[respect], pacing(0.0, 1, 4))[0];
        let ignored = &run(&[ignore], pacing(0.0, 1, 4))[0];
        assert_eq!(respected.rounds.len(), 20);
        // Rounds at 0 and 60 s take one pod each; the round at the close takes the other 18.
        assert_eq!(
            ignored.rounds.iter().map(|r| r.pods).collect::<Vec<_>>(),
            [1, 1, 18]
        );
    }

    #[test]
    fn pods_that_stay_keep_the_zone_from_ever_being_empty() {
        let mut with_stays = zone("rz1", 600, vec![job("j", 1, None, 0)]);
        with_stays.stays.insert("protected".to_owned(), 2);
        let estimate = &run(&[with_stays], pacing(5.0, 10, 4))[0];
        assert_eq!(estimate.empty_at(), None);
        assert_eq!(estimate.at_close, 2);
        assert_eq!(estimate.margin(), None);
    }

    #[test]
    fn a_budget_that_never_allows_an_eviction_leaves_its_pods_and_the_estimate_ends() {
        // minAvailable as large as the job: no round ever takes a pod, and nothing it waits for can
        // change. The estimate ends with the pods staying, the close missed.
        let all = Some(JobBudget::MinAvailable(IntOrPercent::Int(3)));
        let mut gang = job("gang", 3, all, 30);
        // Another job the rounds do drain.
        let free = job("free", 2, None, 30);
        gang.replacement = Replacement::None;
        let estimate = &run(&[zone("rz1", 600, vec![gang, free])], pacing(5.0, 10, 4))[0];
        assert_eq!(estimate.stays.get("budget"), Some(&3));
        assert_eq!(estimate.empty_at(), None);
        assert_eq!(estimate.at_close, 3);
        assert!(!estimate.cut_short);
        assert_eq!(
            estimate.rounds.iter().map(|r| r.pods).sum::<u32>(),
            2,
            "{:?}",
            estimate.rounds
        );
        // A round cap of 0 holds everything, as a limit.
        let mut capped = zone("rz1", 600, vec![job("j", 2, None, 0)]);
        capped.round_cap = Some(0);
        let held = &run(&[capped], pacing(5.0, 10, 4))[0];
        assert_eq!(held.stays.get("limit"), Some(&2));
    }

    #[test]
    fn replacements_with_no_node_to_run_on_hold_the_budget_for_the_rest_of_the_drain() {
        // maxUnavailable 1 over 4 pods: with room elsewhere, one pod a round until the zone is empty.
        let one = Some(JobBudget::MaxUnavailable(IntOrPercent::Int(1)));
        let runs = &run(
            &[zone("rz1", 600, vec![job("etl", 4, one, 5)])],
            pacing(5.0, 10, 4),
        )[0];
        assert_eq!(runs.rounds.len(), 4);
        assert!(runs.empty_at().is_some());
        // Every node is the zone's: the first replacement stays Pending, and no later round can take
        // a pod. The three left stay, and the estimate says why.
        let mut pending = job("etl", 4, one, 5);
        pending.replacement = Replacement::Pending;
        let held = &run(&[zone("rz1", 600, vec![pending])], pacing(5.0, 10, 4))[0];
        assert_eq!(held.rounds.iter().map(|r| r.pods).collect::<Vec<_>>(), [1]);
        assert_eq!(held.stays.get(STAYS_NO_ROOM), Some(&3), "{:?}", held.stays);
        assert_eq!(held.empty_at(), None);
        assert_eq!(held.at_close, 3);
        // A job whose evicted pods are not recreated gets smaller instead: its budget comes back.
        let mut bare = job("etl", 4, one, 5);
        bare.replacement = Replacement::None;
        let gone = &run(&[zone("rz1", 600, vec![bare])], pacing(5.0, 10, 4))[0];
        assert_eq!(gone.rounds.len(), 4);
        assert!(gone.empty_at().is_some());
    }

    #[test]
    fn a_round_cap_spreads_the_drain_over_rounds() {
        let jobs = (0..25).map(|i| job(&format!("j{i}"), 1, None, 0)).collect();
        let mut capped = zone("rz1", 600, jobs);
        capped.round_cap = Some(10);
        let estimate = &run(&[capped], pacing(0.0, 1, 4))[0];
        assert_eq!(
            estimate.rounds.iter().map(|r| r.pods).collect::<Vec<_>>(),
            [10, 10, 5]
        );
    }

    fn gang_of(name: &str, n: u32, budget: Option<JobBudget>) -> JobDrain {
        JobDrain {
            gang: Some(Gang {
                pods: n,
                min_member: n,
            }),
            ..job(name, n, budget, 5)
        }
    }

    #[test]
    fn a_gang_taken_whole_needs_one_round_where_its_budget_alone_would_take_one_pod_a_round() {
        let one = Some(JobBudget::MaxUnavailable(IntOrPercent::Int(1)));
        let paced = &run(
            &[zone("rz1", 600, vec![job("train", 4, one, 5)])],
            pacing(5.0, 10, 4),
        )[0];
        assert_eq!(paced.rounds.len(), 4);
        let whole = &run(
            &[zone("rz1", 600, vec![gang_of("train", 4, one)])],
            pacing(5.0, 10, 4),
        )[0];
        assert_eq!(whole.rounds.iter().map(|r| r.pods).collect::<Vec<_>>(), [4]);
        assert!(whole.empty_at().unwrap() < paced.empty_at().unwrap());
        // A budget that lets no pod go holds the gang whole, for good.
        let none = Some(JobBudget::MaxUnavailable(IntOrPercent::Int(0)));
        let held = &run(
            &[zone("rz1", 600, vec![gang_of("train", 4, none)])],
            pacing(5.0, 10, 4),
        )[0];
        assert!(held.rounds.is_empty());
        assert_eq!(held.stays.get(STAYS_BUDGET), Some(&4));
    }

    #[test]
    fn a_gang_waits_for_its_last_cooldown_and_for_a_round_with_room_for_it() {
        let one = Some(JobBudget::MaxUnavailable(IntOrPercent::Int(1)));
        let mut cooling = gang_of("train", 4, one);
        cooling.pods[3].from = at(150);
        let estimate = &run(&[zone("rz1", 600, vec![cooling])], pacing(5.0, 10, 4))[0];
        assert_eq!(
            estimate
                .rounds
                .iter()
                .map(|r| (r.at, r.pods))
                .collect::<Vec<_>>(),
            [(at(180), 4)]
        );
        // Three one-pod jobs take three of a round's five: the gang takes the next round whole.
        let mut jobs: Vec<JobDrain> = (0..3)
            .map(|i| job(&format!("one-{i}"), 1, None, 5))
            .collect();
        jobs.push(gang_of("train", 4, one));
        let mut capped = zone("rz1", 600, jobs);
        capped.round_cap = Some(5);
        let estimate = &run(&[capped], pacing(5.0, 10, 4))[0];
        assert_eq!(
            estimate.rounds.iter().map(|r| r.pods).collect::<Vec<_>>(),
            [3, 4]
        );
        // More than any round takes: it goes as the cap allows.
        let mut over = zone("rz1", 600, vec![gang_of("train", 4, one)]);
        over.round_cap = Some(3);
        let estimate = &run(&[over], pacing(5.0, 10, 4))[0];
        assert_eq!(
            estimate.rounds.iter().map(|r| r.pods).collect::<Vec<_>>(),
            [3, 1]
        );
    }

    #[test]
    fn a_zone_whose_round_found_nothing_is_tried_again_at_another_zone_s_round() {
        // Zone a's first round, at 0 s, finds its pod in its cooldown until 30 s; its next is due
        // at 60 s, but zone b's first round at 40 s is a cycle that tries a again, and takes it.
        let mut cooling = job("cooling", 1, None, 0);
        cooling.pods[0].from = at(30);
        let mut b = zone("b", 600, vec![job("other", 1, None, 0)]);
        b.first_round = at(40);
        let estimates = run(&[zone("a", 600, vec![cooling]), b], pacing(5.0, 10, 4));
        assert_eq!(estimates[0].rounds.len(), 1);
        assert_eq!(estimates[0].rounds[0].at, at(40));
        assert_eq!(estimates[1].rounds[0].at, at(40));
    }

    #[test]
    fn a_zone_moved_and_estimated_from_the_rests_is_its_share_of_the_estimate_of_all() {
        // Zones that share the rate, with budgets, cooldowns that make rounds wait, a round cap,
        // queued evictions, an empty zone and first rounds apart: each zone estimated again from
        // another first round, from where the queue rested in the estimate of all as they were,
        // is what the estimate of all with the zone moved says of it.
        let mut held = job(
            "held",
            6,
            Some(JobBudget::MaxUnavailable(IntOrPercent::Int(1))),
            45,
        );
        for (i, pod) in held.pods.iter_mut().enumerate() {
            pod.from = at(100 * i as i64);
        }
        let mut queued = job("queued", 3, None, 30);
        queued.queued = (0..2)
            .map(|position| QueuedPod {
                urgency: Urgency::at(at(300)),
                position,
                terminates_in: secs(30),
            })
            .collect();
        let mut capped = zone(
            "capped",
            1_800,
            (0..40)
                .map(|i| job(&format!("c{i}"), 1, None, 20))
                .collect(),
        );
        capped.round_cap = Some(7);
        capped.first_round = at(90);
        let mut late = zone(
            "late",
            2_400,
            vec![job(
                "big",
                30,
                Some(JobBudget::MaxUnavailable(IntOrPercent::Percent(20))),
                60,
            )],
        );
        late.first_round = at(400);
        let zones = [
            zone(
                "a",
                900,
                (0..200)
                    .map(|i| job(&format!("a{i}"), 1, None, 30))
                    .collect(),
            ),
            zone("held", 1_200, vec![held, queued]),
            capped,
            zone("empty", 600, Vec::new()),
            late,
        ];
        let sending = Sending::fresh(pacing(5.0, 10, 4), at(0));
        let (_, rests) = estimate_with_rests(&zones, &sending);
        for index in 0..zones.len() {
            for shift in [0, -60, 30, 45, 300, 1_500, 3_000] {
                let mut moved = zones.clone();
                moved[index].first_round = (zones[index].first_round + secs(shift)).max(at(0));
                let expected = &estimate(&moved, &sending)[index];
                assert_eq!(
                    estimate_moved(&moved, &sending, &rests, index).as_ref(),
                    Some(expected),
                    "{} moved by {shift} s",
                    expected.zone
                );
            }
        }
        assert!(estimate_moved(&zones, &sending, &rests, zones.len()).is_none());
    }

    mod moved {
        use proptest::prelude::*;

        use super::*;

        /// A drain of one-pod jobs and perhaps a job with a budget whose pods cool down one after
        /// the other, some of whose evictions may be queued already.
        #[derive(Clone, Debug)]
        struct Shape {
            /// Its first round, in seconds.
            first: i64,
            /// `None`: closed.
            close: Option<i64>,
            one_pod_jobs: u32,
            /// The budgeted job's pods, its maxUnavailable, and what takes an evicted pod's place.
            budgeted: (u32, u32, Replacement),
            grace: i64,
            /// Seconds between the ends of the budgeted job's cooldowns.
            cooldown_step: i64,
            queued: usize,
            evict_period: i64,
            round_cap: Option<u32>,
            ignore_budgets_after_close: bool,
        }

        impl Shape {
            fn drain(&self, index: usize) -> ZoneDrain {
                let mut jobs: Vec<JobDrain> = (0..self.one_pod_jobs)
                    .map(|i| job(&format!("z{index}-{i}"), 1, None, self.grace))
                    .collect();
                let (pods, most, replacement) = self.budgeted;
                if pods > 0 {
                    let mut big = job(
                        &format!("z{index}-big"),
                        pods,
                        Some(JobBudget::MaxUnavailable(IntOrPercent::Int(most))),
                        self.grace + 10,
                    );
                    big.replacement = replacement;
                    for (i, pod) in big.pods.iter_mut().enumerate() {
                        pod.from = at(self.first + self.cooldown_step * i as i64);
                    }
                    big.queued = (0..self.queued)
                        .map(|position| QueuedPod {
                            urgency: Urgency::at(at(self.close.unwrap_or(600) - 120)),
                            position: position * 7 + index,
                            terminates_in: secs(self.grace),
                        })
                        .collect();
                    // Its queued pods are its own, on their way out.
                    big.stats.total += u32::try_from(self.queued).unwrap_or(0);
                    jobs.push(big);
                }
                let mut zone = zone(&format!("z{index}"), 0, jobs);
                zone.close = self.close.map(at);
                zone.first_round = at(self.first);
                zone.evict_period = secs(self.evict_period);
                zone.round_cap = self.round_cap;
                zone.ignore_budgets_after_close = self.ignore_budgets_after_close;
                zone
            }
        }

        fn drains() -> impl Strategy<Value = Vec<ZoneDrain>> {
            let replacement = prop_oneof![
                Just(Replacement::Runs),
                Just(Replacement::None),
                Just(Replacement::Pending),
            ];
            let shape = (
                (
                    0i64..3_000,
                    prop_oneof![Just(None), (200i64..5_000).prop_map(Some)],
                    0u32..40,
                    (0u32..8, 1u32..3, replacement),
                    0i64..60,
                ),
                (
                    0i64..90,
                    prop_oneof![4 => Just(0usize), 1 => 1usize..3],
                    prop_oneof![Just(30i64), Just(60)],
                    prop_oneof![3 => Just(None), 1 => (1u32..10).prop_map(Some)],
                    any::<bool>(),
                ),
            )
                .prop_map(
                    |(
                        (first, close, one_pod_jobs, budgeted, grace),
                        (cooldown_step, queued, evict_period, round_cap, ignore),
                    )| Shape {
                        first,
                        close,
                        one_pod_jobs,
                        budgeted,
                        grace,
                        cooldown_step,
                        queued,
                        evict_period,
                        round_cap,
                        ignore_budgets_after_close: ignore,
                    },
                );
            prop::collection::vec(shape, 1..7).prop_map(|shapes| {
                shapes
                    .iter()
                    .enumerate()
                    .map(|(index, shape)| shape.drain(index))
                    .collect()
            })
        }

        fn sending() -> impl Strategy<Value = Sending> {
            (
                prop_oneof![Just(0.0f64), Just(2.0), Just(5.0), Just(20.0)],
                1u32..20,
                1u32..6,
                prop_oneof![Just(50i64), Just(1_000)],
                0u32..12,
            )
                .prop_map(|(qps, burst, concurrency, request, spent)| {
                    let pacing = Pacing {
                        qps,
                        burst,
                        concurrency,
                        request: SignedDuration::from_millis(request),
                    };
                    // The live bucket, `spent` tokens taken just now.
                    let mut bucket = TokenBucket::new(qps, burst, at(0));
                    for _ in 0..spent {
                        bucket.reserve(at(0));
                    }
                    Sending {
                        pacing,
                        now: at(0),
                        bucket: (spent > 0).then_some(bucket),
                    }
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]

            #[test]
            fn a_zone_moved_anywhere_is_estimated_from_the_rests_as_from_the_start(
                zones in drains(),
                sending in sending(),
                pick in any::<prop::sample::Index>(),
                to in 0i64..6_000,
            ) {
                let (_, rests) = estimate_with_rests(&zones, &sending);
                let index = pick.index(zones.len());
                let mut moved = zones.clone();
                moved[index].first_round = at(to);
                let expected = &estimate(&moved, &sending)[index];
                let got = estimate_moved(&moved, &sending, &rests, index);
                prop_assert_eq!(got.as_ref(), Some(expected));
            }
        }
    }

    #[test]
    fn nothing_to_do_is_empty_at_once() {
        let estimate = &run(&[zone("rz1", 600, Vec::new())], pacing(5.0, 10, 4))[0];
        assert_eq!(estimate.empty_at(), Some(at(0)));
        assert_eq!(estimate.bound, Bound::Nothing);
        assert_eq!(estimate.at_close, 0);
    }
}
