//! The accept loop's back-off: how long to pause after `accept` fails, and when to say so in
//! the log. Pure (the caller passes the time), so that the growth and the cap are tested
//! without a clock or a failing socket.

use std::time::{Duration, Instant};

/// The first pause after a failed `accept`; it doubles per failure up to [`ACCEPT_PAUSE_MAX`].
const ACCEPT_PAUSE_MIN: Duration = Duration::from_millis(5);
/// The longest pause between two `accept` attempts while they fail.
const ACCEPT_PAUSE_MAX: Duration = Duration::from_millis(500);
/// At most one log line per this interval while `accept` keeps failing.
const ACCEPT_LOG_EVERY: Duration = Duration::from_secs(10);

/// The accept loop's failure streak: how long to pause before the next `accept`, and when to
/// log (the first failure of a streak, then at most once per [`ACCEPT_LOG_EVERY`]).
#[derive(Debug, Default)]
pub(super) struct AcceptBackoff {
    streak: u32,
    since_log: u32,
    last_log: Option<Instant>,
}

/// What to do after one failed `accept`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Pause {
    /// How long to wait before the next `accept`.
    pub(super) wait: Duration,
    /// Log now, counting this many failures since the last log line; `None`: stay quiet.
    pub(super) log_failures: Option<u32>,
}

impl AcceptBackoff {
    /// Records a failure at `now`; says how long to pause and whether to log.
    pub(super) fn failed(&mut self, now: Instant) -> Pause {
        self.streak = self.streak.saturating_add(1);
        self.since_log = self.since_log.saturating_add(1);
        let log_failures = if self
            .last_log
            .is_none_or(|last| now.duration_since(last) >= ACCEPT_LOG_EVERY)
        {
            self.last_log = Some(now);
            Some(std::mem::take(&mut self.since_log))
        } else {
            None
        };
        // Capped before multiplying: 5 ms * 2^16 is already far above the maximum, and a
        // longer streak must not overflow.
        let doublings = self.streak.saturating_sub(1).min(16);
        let wait = (ACCEPT_PAUSE_MIN * 2u32.pow(doublings)).min(ACCEPT_PAUSE_MAX);
        Pause { wait, log_failures }
    }

    /// An `accept` succeeded: the streak is over. Returns its length when there was one, for
    /// the log line saying that `accept` works again.
    pub(super) fn recovered(&mut self) -> Option<u32> {
        let streak = self.streak;
        *self = Self::default();
        (streak > 0).then_some(streak)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waits(backoff: &mut AcceptBackoff, failures: usize, now: Instant) -> Vec<u128> {
        (0..failures)
            .map(|_| backoff.failed(now).wait.as_millis())
            .collect()
    }

    #[test]
    fn the_pause_doubles_from_the_minimum_and_stops_at_the_maximum() {
        let mut backoff = AcceptBackoff::default();
        assert_eq!(
            waits(&mut backoff, 10, Instant::now()),
            [5, 10, 20, 40, 80, 160, 320, 500, 500, 500]
        );
    }

    #[test]
    fn a_streak_of_any_length_pauses_at_most_the_maximum() {
        let mut backoff = AcceptBackoff {
            streak: u32::MAX - 1,
            ..AcceptBackoff::default()
        };
        let now = Instant::now();
        assert_eq!(backoff.failed(now).wait, ACCEPT_PAUSE_MAX);
        assert_eq!(backoff.failed(now).wait, ACCEPT_PAUSE_MAX);
    }

    #[test]
    fn the_first_failure_logs_and_the_next_log_waits_for_the_interval() {
        let mut backoff = AcceptBackoff::default();
        let start = Instant::now();
        assert_eq!(backoff.failed(start).log_failures, Some(1));
        assert_eq!(backoff.failed(start).log_failures, None);
        let almost = start + ACCEPT_LOG_EVERY - Duration::from_millis(1);
        assert_eq!(backoff.failed(almost).log_failures, None);
        // The line counts every failure since the previous one, including this one.
        let later = start + ACCEPT_LOG_EVERY;
        assert_eq!(backoff.failed(later).log_failures, Some(3));
        assert_eq!(backoff.failed(later).log_failures, None);
    }

    #[test]
    fn a_successful_accept_ends_the_streak_and_the_next_failure_starts_over() {
        let mut backoff = AcceptBackoff::default();
        let now = Instant::now();
        waits(&mut backoff, 4, now);
        assert_eq!(backoff.recovered(), Some(4));
        let pause = backoff.failed(now);
        assert_eq!(pause.wait, ACCEPT_PAUSE_MIN);
        assert_eq!(pause.log_failures, Some(1), "a new streak logs at once");
    }

    #[test]
    fn a_success_without_failures_is_not_a_recovery() {
        assert_eq!(AcceptBackoff::default().recovered(), None);
    }
}
