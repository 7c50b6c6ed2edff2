//! The one eviction queue: every eviction waits here until the sender takes it, least slack first.
//!
//! An eviction's [`Urgency`] is the latest instant it may be sent for its zone to be empty by the
//! close: its pod must still terminate, and its job must still go through the rounds it needs after
//! this one, each waiting for the previous round's pods to be gone. Serving the earliest of those
//! instants first (earliest deadline first) keeps every close that can be kept: a job that needs many
//! rounds goes ahead of thousands of one-pod jobs closing at the same instant, whose evictions can
//! wait for it, and a closed zone's pods go before all. Evictions that drain no zone come after every
//! zone's. Ties go first come, first served.
//!
//! The controller's dispatcher, the drain model and the timeline's simulated queue are this queue:
//! what is sent when can only differ by what the cluster does that they did not know.

use std::{cmp::Reverse, collections::BinaryHeap};

use jiff::{SignedDuration, Timestamp};

use crate::cluster::{JobBudget, JobStats, model::job_budget::allowed_evictions};

/// The latest instant an eviction may be sent for its zone's close to be kept; the queue serves the
/// earliest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Urgency(Timestamp);

impl Urgency {
    /// A closed zone's pods: their close has passed, each one is late.
    pub const OVERDUE: Urgency = Urgency(Timestamp::MIN);
    /// Evictions that drain no zone (other strategies'): after every zone's.
    pub const NO_CLOSE: Urgency = Urgency(Timestamp::MAX);

    /// An eviction that must be sent by `send_by`.
    pub fn at(send_by: Timestamp) -> Urgency {
        Urgency(send_by)
    }

    /// An eviction of a job of a zone that closes at `close`.
    pub fn before_close(close: Timestamp, job: &JobPace) -> Urgency {
        let after = job
            .round_every
            .checked_mul(i32::try_from(job.rounds_after).unwrap_or(i32::MAX))
            .unwrap_or(SignedDuration::MAX)
            .saturating_add(job.gone_after);
        Urgency(close.checked_sub(after).unwrap_or(Timestamp::MIN))
    }

    /// The instant, when there is one to keep.
    pub fn send_by(self) -> Option<Timestamp> {
        (self != Urgency::OVERDUE && self != Urgency::NO_CLOSE).then_some(self.0)
    }
}

/// What an eviction's job still needs once it is sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobPace {
    /// Rounds after this one, to evict the job's pods left on the zone.
    pub rounds_after: u32,
    /// Time between two of the job's rounds: each waits for the last one's pods to be gone.
    pub round_every: SignedDuration,
    /// From the send to the pod gone: the request, then its termination.
    pub gone_after: SignedDuration,
}

impl JobPace {
    /// A job of a zone whose rounds come every `evict_period`: the next round that finds the pods
    /// sent now gone (`gone_after` later) is the job's next.
    pub fn new(
        rounds_after: u32,
        evict_period: SignedDuration,
        gone_after: SignedDuration,
    ) -> Self {
        let period = evict_period.max(SignedDuration::from_secs(1));
        let periods = (gone_after.as_secs_f64() / period.as_secs_f64())
            .ceil()
            .max(1.0);
        JobPace {
            rounds_after,
            round_every: SignedDuration::try_from_secs_f64(periods * period.as_secs_f64())
                .unwrap_or(SignedDuration::MAX),
            gone_after,
        }
    }
}

/// What takes an evicted pod's place in its job, once the pod is gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replacement {
    /// Nothing: the job is one pod smaller (a bare pod, or one owned by its PodGroup alone).
    None,
    /// Its controller recreates it and it runs elsewhere: the job's budget is free again.
    Runs,
    /// Its controller recreates it, but no node outside closed and draining zones can take it: it
    /// stays Pending and counts as unavailable.
    Pending,
}

/// A job's counts once its pods on their way out are gone, as its next round sees them: their
/// replacements run, stay Pending (unavailable), or the job is smaller.
pub fn once_gone(stats: JobStats, replacement: Replacement) -> JobStats {
    let gone = stats.leaving;
    let mut idle = stats;
    idle.leaving = 0;
    match replacement {
        Replacement::Runs => idle.running = idle.running.saturating_add(gone),
        Replacement::None => idle.total = idle.total.saturating_sub(gone),
        Replacement::Pending => {}
    }
    idle
}

/// Rounds followed at most when a job's budget changes with its size; beyond, the rate of the last
/// one is assumed.
const ROUNDS_FOLLOWED: u32 = 1_000;

/// The rounds a job needs to evict `left` more pods, each round taking what its budget allows once
/// the previous round's pods are gone (`stats` as they stand then); a gang taken `whole` goes in one
/// round, the first its budget lets one pod go in. `None` when the budget never lets them all go.
pub fn rounds_for(
    left: u32,
    budget: Option<JobBudget>,
    mut stats: JobStats,
    replacement: Replacement,
    whole: bool,
) -> Option<u32> {
    stats.leaving = 0;
    if whole && left > 0 {
        return (allowed_evictions(budget, stats) > 0).then_some(1);
    }
    let mut left = left;
    let mut rounds = 0u32;
    while left > 0 {
        let allowed = allowed_evictions(budget, stats).min(left);
        if allowed == 0 {
            return None;
        }
        if replacement == Replacement::Runs || rounds == ROUNDS_FOLLOWED {
            // The job keeps its size and its budget: every round takes as much.
            return Some(rounds.saturating_add(left.div_ceil(allowed)));
        }
        left -= allowed;
        rounds += 1;
        stats.running = stats.running.saturating_sub(allowed);
        if replacement == Replacement::None {
            stats.total = stats.total.saturating_sub(allowed);
        }
    }
    Some(rounds)
}

/// Evictions waiting to be sent, the least slack first, then in the order they came.
#[derive(Clone, Debug)]
pub struct EvictionQueue<T> {
    heap: BinaryHeap<Reverse<Entry<T>>>,
    seq: u64,
}

#[derive(Clone, Debug)]
struct Entry<T> {
    urgency: Urgency,
    seq: u64,
    item: T,
}

impl<T> Entry<T> {
    fn key(&self) -> (Urgency, u64) {
        (self.urgency, self.seq)
    }
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl<T> Default for EvictionQueue<T> {
    fn default() -> Self {
        EvictionQueue {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }
}

impl<T> EvictionQueue<T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, urgency: Urgency, item: T) {
        self.heap.push(Reverse(Entry {
            urgency,
            seq: self.seq,
            item,
        }));
        self.seq += 1;
    }

    /// The next eviction to send.
    pub fn pop(&mut self) -> Option<(Urgency, T)> {
        self.heap
            .pop()
            .map(|Reverse(entry)| (entry.urgency, entry.item))
    }

    pub fn peek(&self) -> Option<(Urgency, &T)> {
        self.heap
            .peek()
            .map(|Reverse(entry)| (entry.urgency, &entry.item))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Takes out every eviction `keep` refuses, in the queue's order.
    pub fn take_out(&mut self, mut keep: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut out = Vec::new();
        let kept: Vec<Reverse<Entry<T>>> = std::mem::take(&mut self.heap)
            .into_sorted_vec()
            .into_iter()
            .rev()
            .filter_map(|Reverse(entry)| {
                if keep(&entry.item) {
                    Some(Reverse(entry))
                } else {
                    out.push(entry.item);
                    None
                }
            })
            .collect();
        self.heap = kept.into();
        out
    }

    /// Every eviction waiting, in the order they will be sent.
    pub fn in_order(&self) -> Vec<(Urgency, &T)> {
        let mut entries: Vec<&Entry<T>> = self.heap.iter().map(|Reverse(e)| e).collect();
        entries.sort_unstable_by_key(|e| e.key());
        entries.into_iter().map(|e| (e.urgency, &e.item)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::IntOrPercent;
    use crate::testkit::at;

    fn secs(seconds: i64) -> SignedDuration {
        SignedDuration::from_secs(seconds)
    }

    fn stats(total: u32) -> JobStats {
        JobStats {
            total,
            running: total,
            finished: 0,
            leaving: 0,
        }
    }

    #[test]
    fn a_job_that_needs_more_rounds_goes_ahead_of_one_pod_jobs_closing_with_it() {
        let close = at(600);
        // 25 pods owned by their PodGroup alone, 20% a round rounded up as the job shrinks: 5, 4, 4,
        // 3, 2, 2, 1, 1, 1, 1, 1 (11 rounds in all).
        let twenty = Some(JobBudget::MaxUnavailable(IntOrPercent::Percent(20)));
        let after_first = rounds_for(20, twenty, stats(20), Replacement::None, false).unwrap();
        assert_eq!(after_first, 10);
        let gang = JobPace::new(after_first, secs(60), secs(20));
        assert_eq!(gang.round_every, secs(60));
        let one_pod = JobPace::new(0, secs(60), secs(30));
        let mut queue = EvictionQueue::new();
        for i in 0..3 {
            queue.push(
                Urgency::before_close(close, &one_pod),
                format!("one-pod-{i}"),
            );
        }
        queue.push(Urgency::before_close(close, &gang), "gang".to_owned());
        queue.push(Urgency::NO_CLOSE, "lnu".to_owned());
        queue.push(Urgency::OVERDUE, "closed".to_owned());
        let order: Vec<String> = std::iter::from_fn(|| queue.pop().map(|(_, item)| item)).collect();
        assert_eq!(
            order,
            [
                "closed",
                "gang",
                "one-pod-0",
                "one-pod-1",
                "one-pod-2",
                "lnu"
            ]
        );
        // The gang's pods must go 10 minutes and 20 s before the close.
        assert_eq!(
            Urgency::before_close(close, &gang).send_by(),
            Some(at(600 - 10 * 60 - 20))
        );
        assert_eq!(Urgency::OVERDUE.send_by(), None);
    }

    #[test]
    fn a_job_whose_pods_take_longer_than_evict_period_waits_whole_periods() {
        let pace = JobPace::new(2, secs(60), secs(90));
        assert_eq!(pace.round_every, secs(120));
        assert_eq!(
            Urgency::before_close(at(1_000), &pace).send_by(),
            Some(at(1_000 - 240 - 90))
        );
    }

    #[test]
    fn rounds_follow_the_budget_as_the_job_changes() {
        let one = Some(JobBudget::MaxUnavailable(IntOrPercent::Int(1)));
        // Replaced elsewhere: one a round.
        assert_eq!(
            rounds_for(100, one, stats(100), Replacement::Runs, false),
            Some(100)
        );
        // No budget: one at a time.
        assert_eq!(
            rounds_for(7, None, stats(7), Replacement::Runs, false),
            Some(7)
        );
        // A replacement with nowhere to run holds the budget: one round, then never.
        assert_eq!(
            rounds_for(3, one, stats(4), Replacement::Pending, false),
            None
        );
        // minAvailable as large as the job: never.
        let all = Some(JobBudget::MinAvailable(IntOrPercent::Int(4)));
        assert_eq!(rounds_for(4, all, stats(4), Replacement::Runs, false), None);
        assert_eq!(
            rounds_for(0, all, stats(4), Replacement::Runs, false),
            Some(0)
        );
    }

    #[test]
    fn a_gang_taken_whole_needs_one_round_once_its_budget_lets_one_pod_go() {
        let one = Some(JobBudget::MaxUnavailable(IntOrPercent::Int(1)));
        assert_eq!(
            rounds_for(8, one, stats(8), Replacement::Runs, false),
            Some(8)
        );
        assert_eq!(
            rounds_for(8, one, stats(8), Replacement::Runs, true),
            Some(1)
        );
        assert_eq!(
            rounds_for(0, one, stats(8), Replacement::Runs, true),
            Some(0)
        );
        let all = Some(JobBudget::MinAvailable(IntOrPercent::Int(8)));
        assert_eq!(rounds_for(8, all, stats(8), Replacement::Runs, true), None);
    }

    #[test]
    fn take_out_keeps_the_order_of_the_rest() {
        let mut queue = EvictionQueue::new();
        for (i, urgency) in [at(5), at(1), at(3), at(1)].into_iter().enumerate() {
            queue.push(Urgency(urgency), i);
        }
        assert_eq!(queue.take_out(|i| *i != 2), [2]);
        let order: Vec<usize> = queue.in_order().into_iter().map(|(_, i)| *i).collect();
        assert_eq!(order, [1, 3, 0]);
        assert_eq!(queue.len(), 3);
    }
}
