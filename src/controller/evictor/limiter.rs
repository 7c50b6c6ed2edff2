//! A token bucket for eviction requests (`--eviction-qps`, `--eviction-burst`). Reservation style, like
//! Go's `rate.Limiter`: each caller takes a token now and is told how long to wait before using it, so
//! concurrent evictions queue fairly without a background task. Pure: the caller supplies the clock.

use std::time::Duration;

use tokio::time::Instant;

#[derive(Clone, Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    /// May go negative: reservations made ahead of the refill.
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket. A non-positive or non-finite `qps` means no limit.
    pub fn new(qps: f64, burst: u32, now: Instant) -> Self {
        let burst = f64::from(burst.max(1));
        TokenBucket {
            qps,
            burst,
            tokens: burst,
            last: now,
        }
    }

    fn unlimited(&self) -> bool {
        !(self.qps.is_finite() && self.qps > 0.0)
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
    }

    /// How long a token taken now would have to wait.
    fn wait(&self, tokens: f64) -> Duration {
        if tokens >= 0.0 {
            Duration::ZERO
        } else {
            // A tiny qps makes this wait astronomically long; it saturates rather than panics.
            Duration::try_from_secs_f64(-tokens / self.qps).unwrap_or(Duration::MAX)
        }
    }

    /// Takes one token; returns how long the caller must wait before acting on it.
    pub fn reserve(&mut self, now: Instant) -> Duration {
        if self.unlimited() {
            return Duration::ZERO;
        }
        self.refill(now);
        self.tokens -= 1.0;
        self.wait(self.tokens)
    }

    /// Takes one token only if it can be used before `deadline`; `None` takes nothing. A request that
    /// could not be sent in time must not keep a token, or the next cycle starts in debt for it.
    pub fn reserve_before(&mut self, now: Instant, deadline: Instant) -> Option<Duration> {
        if self.unlimited() {
            return Some(Duration::ZERO);
        }
        self.refill(now);
        let wait = self.wait(self.tokens - 1.0);
        let usable = now.checked_add(wait).is_some_and(|start| start < deadline);
        if usable {
            self.tokens -= 1.0;
        }
        usable.then_some(wait)
    }

    /// Gives back a token that was reserved and then not used (the request was never sent).
    pub fn cancel(&mut self, now: Instant) {
        if self.unlimited() {
            return;
        }
        self.refill(now);
        self.tokens = (self.tokens + 1.0).min(self.burst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_passes_then_qps_paces() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(2.0, 3, start);
        for _ in 0..3 {
            assert_eq!(bucket.reserve(start), Duration::ZERO);
        }
        assert_eq!(bucket.reserve(start), Duration::from_millis(500));
        assert_eq!(bucket.reserve(start), Duration::from_millis(1000));
    }

    #[test]
    fn refills_with_time_up_to_burst() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(10.0, 2, start);
        bucket.reserve(start);
        bucket.reserve(start);
        assert_eq!(bucket.reserve(start), Duration::from_millis(100));
        // One second later the bucket is full again (2), not 10.
        let later = start + Duration::from_secs(1);
        assert_eq!(bucket.reserve(later), Duration::ZERO);
        assert_eq!(bucket.reserve(later), Duration::ZERO);
        assert!(bucket.reserve(later) > Duration::ZERO);
    }

    #[test]
    fn a_vanishing_qps_waits_forever_without_panicking() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(1e-300, 1, start);
        assert_eq!(bucket.reserve(start), Duration::ZERO);
        assert_eq!(bucket.reserve(start), Duration::MAX);
    }

    #[test]
    fn a_cycle_that_abandons_most_of_its_plan_leaves_the_next_one_free_to_send() {
        // 5 QPS, a 2-minute cycle, 4,225 planned: only what fits the deadline takes a token.
        let start = Instant::now();
        let deadline = start + Duration::from_secs(120);
        let mut bucket = TokenBucket::new(5.0, 10, start);
        let sent = (0..4_225)
            .filter(|_| bucket.reserve_before(start, deadline).is_some())
            .count();
        assert!((600..=610).contains(&sent), "{sent}");
        // The next cycle, 15 s after the last of those was sent, sends at once.
        let next = deadline + Duration::from_secs(15);
        assert_eq!(
            bucket.reserve_before(next, next + Duration::from_secs(120)),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn a_cancelled_reservation_gives_its_token_back() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(1.0, 1, start);
        assert_eq!(bucket.reserve(start), Duration::ZERO);
        assert_eq!(bucket.reserve(start), Duration::from_secs(1));
        bucket.cancel(start);
        assert_eq!(bucket.reserve(start), Duration::from_secs(1));
        bucket.cancel(start);
        bucket.cancel(start);
        // Never more than the burst.
        assert_eq!(bucket.reserve(start), Duration::ZERO);
        assert_eq!(bucket.reserve(start), Duration::from_secs(1));
    }

    #[test]
    fn zero_qps_is_unlimited() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(0.0, 1, start);
        for _ in 0..100 {
            assert_eq!(bucket.reserve(start), Duration::ZERO);
        }
    }

    #[test]
    fn clock_going_backwards_does_not_mint_tokens() {
        let start = Instant::now() + Duration::from_secs(5);
        let mut bucket = TokenBucket::new(1.0, 1, start);
        assert_eq!(bucket.reserve(start), Duration::ZERO);
        let earlier = start - Duration::from_secs(3);
        assert_eq!(bucket.reserve(earlier), Duration::from_secs(1));
    }
}
