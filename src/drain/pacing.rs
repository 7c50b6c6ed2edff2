//! The one rate model of evictions: `--eviction-qps` and `--eviction-burst` as a token bucket, and
//! `--eviction-concurrency` as slots on the wire. The controller's evictor takes its tokens from a
//! [`TokenBucket`] at the wall clock's instants; the drain model and the timeline send through a
//! [`Sender`] (the same bucket, and the slots) at simulated ones. Pure: every instant is given.

use std::{cmp::Reverse, collections::BinaryHeap};

use jiff::{SignedDuration, Timestamp};

/// How the controller sends evictions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pacing {
    /// Requests per second once the burst is spent; not positive or not finite: no limit.
    pub qps: f64,
    pub burst: u32,
    /// Requests on the wire at once.
    pub concurrency: u32,
    /// How long one eviction request takes.
    pub request: SignedDuration,
}

impl Pacing {
    /// What an eviction request is assumed to take where none has been seen answered: a loaded API
    /// server answers in tens of milliseconds.
    pub const ASSUMED_REQUEST: SignedDuration = SignedDuration::from_millis(100);

    /// Evictions per second the sender keeps up at length.
    pub fn rate(&self) -> f64 {
        let by_concurrency = f64::from(self.concurrency.max(1)) / self.request_secs();
        if limited(self.qps) {
            self.qps.min(by_concurrency)
        } else {
            by_concurrency
        }
    }

    fn request_secs(&self) -> f64 {
        self.request.as_secs_f64().max(1e-3)
    }
}

fn limited(qps: f64) -> bool {
    qps.is_finite() && qps > 0.0
}

/// A token bucket for eviction requests. Reservation style, like Go's `rate.Limiter`: a caller takes a
/// token at an instant and is told how long to wait before using it, so concurrent evictions queue
/// fairly without a background task.
#[derive(Clone, Debug, PartialEq)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    /// May go negative: reservations made ahead of the refill.
    tokens: f64,
    last: Timestamp,
}

impl TokenBucket {
    /// A full bucket at `now`. A non-positive or non-finite `qps` means no limit.
    pub fn new(qps: f64, burst: u32, now: Timestamp) -> Self {
        let burst = f64::from(burst.max(1));
        TokenBucket {
            qps,
            burst,
            tokens: burst,
            last: now,
        }
    }

    fn unlimited(&self) -> bool {
        !limited(self.qps)
    }

    /// The tokens there would be at `at`, without taking any. An instant before the last one mints
    /// nothing: a clock that steps back never lends tokens.
    fn tokens_at(&self, at: Timestamp) -> f64 {
        let elapsed = at.duration_since(self.last).as_secs_f64().max(0.0);
        (self.tokens + elapsed * self.qps).min(self.burst)
    }

    fn refill(&mut self, now: Timestamp) {
        self.tokens = self.tokens_at(now);
        self.last = self.last.max(now);
    }

    /// How long a caller holding `tokens` after its take waits: none while they are not negative.
    fn wait(&self, tokens: f64) -> SignedDuration {
        if tokens >= 0.0 {
            SignedDuration::ZERO
        } else {
            // A tiny qps makes this wait astronomically long; it saturates rather than panics.
            SignedDuration::try_from_secs_f64(-tokens / self.qps).unwrap_or(SignedDuration::MAX)
        }
    }

    /// Whether from `at` on the bucket refills as one made new then: its whole burst held, none of
    /// it taken after `at`.
    fn full_at(&self, at: Timestamp) -> bool {
        self.unlimited() || (self.last <= at && self.tokens_at(at) >= self.burst)
    }

    /// How long a token taken at `at` would have to wait; takes nothing.
    pub fn wait_at(&self, at: Timestamp) -> SignedDuration {
        if self.unlimited() {
            return SignedDuration::ZERO;
        }
        self.wait(self.tokens_at(at) - 1.0)
    }

    /// Takes one token at `now`; returns how long the caller must wait before acting on it.
    pub fn reserve(&mut self, now: Timestamp) -> SignedDuration {
        if self.unlimited() {
            return SignedDuration::ZERO;
        }
        self.refill(now);
        self.tokens -= 1.0;
        self.wait(self.tokens)
    }

    /// Takes one token only if it can be used before `deadline`; `None` takes nothing. A request that
    /// could not be sent in time must not keep a token, or the next cycle starts in debt for it.
    pub fn reserve_before(
        &mut self,
        now: Timestamp,
        deadline: Timestamp,
    ) -> Option<SignedDuration> {
        if self.unlimited() {
            return Some(SignedDuration::ZERO);
        }
        self.refill(now);
        let wait = self.wait(self.tokens - 1.0);
        let usable = now.checked_add(wait).is_ok_and(|start| start < deadline);
        if usable {
            self.tokens -= 1.0;
        }
        usable.then_some(wait)
    }

    /// Gives back a token that was reserved and then not used (the request was never sent).
    pub fn cancel(&mut self, now: Timestamp) {
        if self.unlimited() {
            return;
        }
        self.refill(now);
        self.tokens = (self.tokens + 1.0).min(self.burst);
    }
}

/// The sender of a simulated drain: the controller's token bucket and its `concurrency` slots, each
/// request taking [`Pacing::request`].
#[derive(Clone, Debug)]
pub struct Sender {
    request: SignedDuration,
    bucket: TokenBucket,
    /// The instant of the last send: requests go out in order.
    at: Timestamp,
    /// When each slot is free again.
    slots: BinaryHeap<Reverse<Timestamp>>,
}

impl Sender {
    /// A sender with its burst available from `start`.
    pub fn new(pacing: Pacing, start: Timestamp) -> Sender {
        Sender::resume(
            pacing,
            TokenBucket::new(pacing.qps, pacing.burst, start),
            start,
        )
    }

    /// A sender that goes on from the bucket as it stands (the live evictor's), from `start`.
    pub fn resume(pacing: Pacing, bucket: TokenBucket, start: Timestamp) -> Sender {
        let slots = (0..pacing.concurrency.max(1))
            .map(|_| Reverse(start))
            .collect();
        Sender {
            request: pacing.request,
            bucket,
            at: start,
            slots,
        }
    }

    /// The token bucket as it stands: what a plan made now resumes from.
    pub fn bucket(&self) -> &TokenBucket {
        &self.bucket
    }

    /// The earliest instant a request ready at `ready` can go.
    pub fn next_send(&self, ready: Timestamp) -> Timestamp {
        let slot = self.slots.peek().map_or(ready, |Reverse(t)| *t);
        let at = ready.max(slot).max(self.at);
        at.checked_add(self.bucket.wait_at(at))
            .unwrap_or(Timestamp::MAX)
    }

    /// Whether from `at` on the sender sends as one made new then: its burst back, no request on
    /// the wire after `at`, none sent after it.
    pub fn at_rest(&self, at: Timestamp) -> bool {
        self.at <= at
            && self.slots.iter().all(|Reverse(free)| *free <= at)
            && self.bucket.full_at(at)
    }

    /// Sends one request at `at` (from [`Self::next_send`]); returns when its answer is in.
    pub fn send(&mut self, at: Timestamp) -> Timestamp {
        self.bucket.reserve(at);
        self.at = at;
        let answered = at.checked_add(self.request).unwrap_or(Timestamp::MAX);
        self.slots.pop();
        self.slots.push(Reverse(answered));
        answered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::at;

    fn ms(millis: i64) -> SignedDuration {
        SignedDuration::from_millis(millis)
    }

    #[test]
    fn burst_passes_then_qps_paces() {
        let mut bucket = TokenBucket::new(2.0, 3, at(0));
        for _ in 0..3 {
            assert_eq!(bucket.reserve(at(0)), SignedDuration::ZERO);
        }
        assert_eq!(bucket.reserve(at(0)), ms(500));
        assert_eq!(bucket.reserve(at(0)), ms(1000));
    }

    #[test]
    fn refills_with_time_up_to_burst() {
        let mut bucket = TokenBucket::new(10.0, 2, at(0));
        bucket.reserve(at(0));
        bucket.reserve(at(0));
        assert_eq!(bucket.reserve(at(0)), ms(100));
        // One second later the bucket is full again (2), not 10.
        assert_eq!(bucket.reserve(at(1)), SignedDuration::ZERO);
        assert_eq!(bucket.reserve(at(1)), SignedDuration::ZERO);
        assert!(bucket.reserve(at(1)) > SignedDuration::ZERO);
    }

    #[test]
    fn a_vanishing_qps_waits_forever_without_panicking() {
        let mut bucket = TokenBucket::new(1e-300, 1, at(0));
        assert_eq!(bucket.reserve(at(0)), SignedDuration::ZERO);
        assert_eq!(bucket.reserve(at(0)), SignedDuration::MAX);
    }

    #[test]
    fn a_cycle_that_abandons_most_of_its_plan_leaves_the_next_one_free_to_send() {
        // 5 QPS, a 2-minute cycle, 4,225 planned: only what fits the deadline takes a token.
        let mut bucket = TokenBucket::new(5.0, 10, at(0));
        let sent = (0..4_225)
            .filter(|_| bucket.reserve_before(at(0), at(120)).is_some())
            .count();
        assert!((600..=610).contains(&sent), "{sent}");
        // The next cycle, 15 s after the last of those was sent, sends at once.
        assert_eq!(
            bucket.reserve_before(at(135), at(255)),
            Some(SignedDuration::ZERO)
        );
    }

    #[test]
    fn a_cancelled_reservation_gives_its_token_back() {
        let mut bucket = TokenBucket::new(1.0, 1, at(0));
        assert_eq!(bucket.reserve(at(0)), SignedDuration::ZERO);
        assert_eq!(bucket.reserve(at(0)), SignedDuration::from_secs(1));
        bucket.cancel(at(0));
        assert_eq!(bucket.reserve(at(0)), SignedDuration::from_secs(1));
        bucket.cancel(at(0));
        bucket.cancel(at(0));
        // Never more than the burst.
        assert_eq!(bucket.reserve(at(0)), SignedDuration::ZERO);
        assert_eq!(bucket.reserve(at(0)), SignedDuration::from_secs(1));
    }

    #[test]
    fn zero_qps_is_unlimited() {
        let mut bucket = TokenBucket::new(0.0, 1, at(0));
        for _ in 0..100 {
            assert_eq!(bucket.reserve(at(0)), SignedDuration::ZERO);
        }
    }

    #[test]
    fn clock_going_backwards_does_not_mint_tokens() {
        let mut bucket = TokenBucket::new(1.0, 1, at(5));
        assert_eq!(bucket.reserve(at(5)), SignedDuration::ZERO);
        assert_eq!(bucket.reserve(at(2)), SignedDuration::from_secs(1));
    }

    #[test]
    fn a_sender_rests_once_its_burst_is_back_and_nothing_is_on_the_wire() {
        // Two slots, requests of 3 s: the burst of 2 is back at 1 s, the slots free at 3 s.
        let pacing = Pacing {
            qps: 2.0,
            burst: 2,
            concurrency: 2,
            request: SignedDuration::from_secs(3),
        };
        let mut sender = Sender::new(pacing, at(0));
        assert!(sender.at_rest(at(0)));
        sender.send(at(0));
        sender.send(at(0));
        assert!(!sender.at_rest(at(1)) && !sender.at_rest(at(2)));
        assert!(sender.at_rest(at(3)));
        // Eight slots, a token a second: the wire is free long before the burst of 4 is back.
        let pacing = Pacing {
            qps: 1.0,
            burst: 4,
            concurrency: 8,
            request: ms(50),
        };
        let mut sender = Sender::new(pacing, at(0));
        for _ in 0..4 {
            sender.send(at(0));
        }
        assert!(!sender.at_rest(at(3)));
        assert!(sender.at_rest(at(4)));
        // At rest, it sends as one made new then.
        let mut fresh = Sender::new(pacing, at(4));
        for _ in 0..10 {
            let (rested, new) = (sender.next_send(at(4)), fresh.next_send(at(4)));
            assert_eq!(rested, new);
            sender.send(rested);
            fresh.send(new);
        }
    }

    #[test]
    fn the_sender_is_the_bucket_and_the_slots() {
        // One slot, requests of 2 s: the slot bounds the pace, not the bucket's 10 a second.
        let pacing = Pacing {
            qps: 10.0,
            burst: 5,
            concurrency: 1,
            request: SignedDuration::from_secs(2),
        };
        let mut sender = Sender::new(pacing, at(0));
        let mut sent = Vec::new();
        for _ in 0..3 {
            let send = sender.next_send(at(0));
            sent.push(send);
            sender.send(send);
        }
        assert_eq!(sent, [at(0), at(2), at(4)]);
        assert!((pacing.rate() - 0.5).abs() < 1e-9);
        // A sender resumed from a spent bucket waits for its refill.
        let mut spent = TokenBucket::new(1.0, 2, at(0));
        spent.reserve(at(0));
        spent.reserve(at(0));
        let resumed = Sender::resume(
            Pacing {
                qps: 1.0,
                burst: 2,
                concurrency: 4,
                request: ms(10),
            },
            spent,
            at(0),
        );
        assert_eq!(resumed.next_send(at(0)), at(1));
    }
}
