//! When a failed event is tried again: up to [`RetryPolicy::max_attempts`] handler runs in
//! all, the wait before each retry doubling from [`RetryPolicy::first_delay`] up to
//! [`RetryPolicy::max_delay`].

use std::time::Duration;

/// Handler runs per event before it goes to the dead letters (the first run included).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;
/// The wait before the first retry.
pub const DEFAULT_FIRST_RETRY_DELAY: Duration = Duration::from_secs(1);
/// The longest wait before a retry.
pub const DEFAULT_MAX_RETRY_DELAY: Duration = Duration::from_secs(60);

/// How often and how late a failed event is tried again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Handler runs in all, at least 1: with 1, a failure goes straight to the dead letters.
    pub max_attempts: u32,
    /// The wait before the first retry; each later one doubles it.
    pub first_delay: Duration,
    /// The cap on the doubling.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            first_delay: DEFAULT_FIRST_RETRY_DELAY,
            max_delay: DEFAULT_MAX_RETRY_DELAY,
        }
    }
}

impl RetryPolicy {
    /// What to do after the handler failed its `attempts`-th run (1-based).
    pub fn after_failure(&self, attempts: u32) -> RetryDecision {
        if attempts >= self.max_attempts.max(1) {
            RetryDecision::DeadLetter
        } else {
            RetryDecision::RetryAfter(self.delay_before_retry(attempts))
        }
    }

    /// The wait before retry number `retry` (1-based): `first_delay * 2^(retry - 1)`, capped.
    pub fn delay_before_retry(&self, retry: u32) -> Duration {
        let factor = 1u32
            .checked_shl(retry.saturating_sub(1))
            .unwrap_or(u32::MAX);
        self.first_delay
            .checked_mul(factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }

    /// The number of distinct retry delays (one RabbitMQ retry queue each).
    pub fn retry_levels(&self) -> u32 {
        self.max_attempts.max(1) - 1
    }
}

/// The outcome of [`RetryPolicy::after_failure`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryDecision {
    /// Try again after this long.
    RetryAfter(Duration),
    /// No attempts left: to the dead letters.
    DeadLetter,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap_and_attempts_run_out() {
        let policy = RetryPolicy {
            max_attempts: 4,
            first_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(300),
        };
        assert_eq!(
            policy.after_failure(1),
            RetryDecision::RetryAfter(Duration::from_millis(100))
        );
        assert_eq!(
            policy.after_failure(2),
            RetryDecision::RetryAfter(Duration::from_millis(200))
        );
        assert_eq!(
            policy.after_failure(3),
            RetryDecision::RetryAfter(Duration::from_millis(300))
        );
        assert_eq!(policy.after_failure(4), RetryDecision::DeadLetter);
        assert_eq!(policy.retry_levels(), 3);
        assert_eq!(policy.delay_before_retry(40), Duration::from_millis(300));
    }
}
