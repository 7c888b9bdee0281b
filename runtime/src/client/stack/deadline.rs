//! [`Deadline`]: when a call gives up. The one deadline of the client: set once, where the call
//! enters the stack (the shorter of the handle's timeout and the method's policy), and read by
//! everything after it: each attempt of the retry loop sends what is left of it to the server,
//! and the connection's reader ends the call when it passes (for a stream, the whole stream).

use std::time::Duration;

use tokio::time::Instant;

use crate::error::Error;

/// A call's deadline: the instant it passes, and the timeout it came from (what
/// [`Error::Timeout`] reports), in nanoseconds: every call carries one, and 24 bytes instead
/// of 32 keep a call small enough to be moved without a `memcpy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Deadline {
    at: Instant,
    after_nanos: u64,
}

impl Deadline {
    /// The deadline `after` from now.
    #[inline]
    pub(crate) fn after(after: Duration) -> Self {
        Self {
            at: Instant::now() + after,
            // 584 years: a timeout that long never passes, so the clamp changes nothing.
            after_nanos: u64::try_from(after.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// The deadline of a call with `timeout` (`None`: no deadline).
    #[inline]
    pub(crate) fn starting(timeout: Option<Duration>) -> Option<Self> {
        timeout.map(Self::after)
    }

    /// The instant it passes.
    pub(crate) fn at(self) -> Instant {
        self.at
    }

    /// The timeout it was set with.
    pub(crate) fn timeout(self) -> Duration {
        Duration::from_nanos(self.after_nanos)
    }

    /// What is left of it now, or the call's [`Error::Timeout`] once it has passed.
    pub(crate) fn remaining(self) -> Result<Duration, Error> {
        match self.at.checked_duration_since(Instant::now()) {
            Some(left) if !left.is_zero() => Ok(left),
            _ => Err(self.expired()),
        }
    }

    /// The error of a call whose deadline passed.
    pub(crate) fn expired(self) -> Error {
        Error::Timeout {
            after: self.timeout(),
        }
    }
}

/// The shorter of two optional timeouts (`None`: no deadline).
pub(crate) fn shorter(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// The wire deadline: milliseconds, at least 1 so that a tiny timeout is not read as "none".
pub(crate) fn deadline_ms(timeout: Option<Duration>) -> u32 {
    timeout.map_or(0, |t| t.as_millis().clamp(1, u128::from(u32::MAX)) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn what_is_left_shrinks_and_a_passed_deadline_is_the_calls_timeout() {
        let deadline = Deadline::after(Duration::from_millis(100));
        tokio::time::advance(Duration::from_millis(40)).await;
        assert_eq!(deadline.remaining().unwrap(), Duration::from_millis(60));
        tokio::time::advance(Duration::from_millis(60)).await;
        let err = deadline.remaining().unwrap_err();
        assert!(
            matches!(err, Error::Timeout { after } if after == Duration::from_millis(100)),
            "{err}"
        );
    }

    #[test]
    fn the_shorter_timeout_wins_and_none_means_none_set() {
        let (short, long) = (Duration::from_secs(1), Duration::from_secs(2));
        assert_eq!(shorter(Some(short), Some(long)), Some(short));
        assert_eq!(shorter(None, Some(long)), Some(long));
        assert_eq!(shorter(None, None), None);
        assert_eq!(deadline_ms(Some(Duration::from_micros(10))), 1);
        assert_eq!(deadline_ms(None), 0);
    }
}
