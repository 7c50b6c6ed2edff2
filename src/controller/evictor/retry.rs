//! Retry timing for transient eviction failures (5xx, timeouts): exponential, capped, and never past
//! the cycle's deadline, so one sick request cannot hold the cycle.

use std::time::Duration;

use tokio::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Delay before the first retry; doubled for each further one.
    pub initial: Duration,
    pub max: Duration,
    /// Attempts in all, the first one included.
    pub max_attempts: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            initial: Duration::from_millis(200),
            max: Duration::from_secs(5),
            max_attempts: 5,
        }
    }
}

impl RetryPolicy {
    /// The delay after failed attempt number `attempt` (1-based).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.initial.saturating_mul(factor).min(self.max)
    }

    /// After attempt `attempt` failed at `now`: how long to wait before the next, or `None` when
    /// attempts are used up or the retry could not even start before `deadline`.
    pub fn next(&self, attempt: u32, now: Instant, deadline: Instant) -> Option<Duration> {
        if attempt >= self.max_attempts {
            return None;
        }
        let delay = self.delay(attempt);
        (now + delay < deadline).then_some(delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            initial: Duration::from_millis(100),
            max: Duration::from_millis(350),
            max_attempts: 4,
        }
    }

    #[test]
    fn delays_double_up_to_the_cap() {
        let p = policy();
        assert_eq!(p.delay(1), Duration::from_millis(100));
        assert_eq!(p.delay(2), Duration::from_millis(200));
        assert_eq!(p.delay(3), Duration::from_millis(350));
        assert_eq!(p.delay(40), Duration::from_millis(350), "no overflow");
    }

    #[test]
    fn stops_at_max_attempts() {
        let p = policy();
        let now = Instant::now();
        let far = now + Duration::from_secs(60);
        assert_eq!(p.next(1, now, far), Some(Duration::from_millis(100)));
        assert_eq!(p.next(3, now, far), Some(Duration::from_millis(350)));
        assert_eq!(p.next(4, now, far), None);
    }

    #[test]
    fn never_retries_past_the_deadline() {
        let p = policy();
        let now = Instant::now();
        assert_eq!(p.next(1, now, now + Duration::from_millis(100)), None);
        assert_eq!(
            p.next(1, now, now + Duration::from_millis(101)),
            Some(Duration::from_millis(100))
        );
        assert_eq!(p.next(2, now, now + Duration::from_millis(150)), None);
    }
}
