//! [`CircuitBreakerConfig`]: when a circuit opens, how long it stays open, how it closes
//! again, and the checks that turn a bad setting into an error instead of a panic.

use std::time::Duration;

use crate::error::Error;

/// How far back the failure rate looks: the last 10 s of calls (Hystrix's and surging's
/// default), long enough to see a trend, short enough to forget an old incident.
pub const DEFAULT_ROLLING_WINDOW: Duration = Duration::from_secs(10);

/// The rolling window is counted in 10 buckets (of 1 s with the default window): the window
/// slides by one bucket at a time, and each method costs 10 small counters.
pub const DEFAULT_WINDOW_BUCKETS: u32 = 10;

/// No circuit opens before 20 calls of the method are in the window, so that 2 failures out
/// of 3 calls at a quiet moment do not take a method out.
pub const DEFAULT_MINIMUM_CALLS: u32 = 20;

/// The circuit opens when at least 50 % of the calls in the window failed.
pub const DEFAULT_ERROR_THRESHOLD_PERCENT: u8 = 50;

/// An open circuit fails calls at once for 5 s before trial calls test the method again.
///
/// surging's `CircuitBreakerSleepWindowInMilliseconds` is 60 s; we follow Hystrix's 5 s
/// instead. The usual cause of a burst of failures is an endpoint restarting or briefly
/// overloaded, and a minute out of rotation is long for that. A short open window costs
/// little: only [`DEFAULT_TRIAL_CALLS`] calls test the method, and one failed trial opens
/// the circuit for another open window.
pub const DEFAULT_OPEN_WINDOW: Duration = Duration::from_secs(5);

/// A half-open circuit lets 3 trial calls through; all 3 must succeed for it to close. One
/// is a coin toss on a flaky endpoint; a few are cheap and more convincing.
pub const DEFAULT_TRIAL_CALLS: u32 = 3;

/// Buckets shorter than this would make the window's arithmetic meaningless (a rolling
/// window counted in nanoseconds).
const MIN_BUCKET: Duration = Duration::from_millis(1);

/// When a [`CircuitBreakerLayer`](super::CircuitBreakerLayer) opens the circuit of a method,
/// and how it closes it again. Every setting has a default (the `DEFAULT_*` constants of this
/// module); [`CircuitBreakerLayer::new`](super::CircuitBreakerLayer::new) checks them.
///
/// | setting | default | meaning |
/// |---|---|---|
/// | [`rolling_window`](Self::rolling_window) | [`DEFAULT_ROLLING_WINDOW`] in [`DEFAULT_WINDOW_BUCKETS`] buckets | how far back the failure rate looks |
/// | [`minimum_calls`](Self::minimum_calls) | [`DEFAULT_MINIMUM_CALLS`] | calls in the window before the circuit may open |
/// | [`error_threshold_percent`](Self::error_threshold_percent) | [`DEFAULT_ERROR_THRESHOLD_PERCENT`] | the failure rate, in percent, at which it opens |
/// | [`open_window`](Self::open_window) | [`DEFAULT_OPEN_WINDOW`] | how long calls fail fast before trial calls |
/// | [`trial_calls`](Self::trial_calls) | [`DEFAULT_TRIAL_CALLS`] | trial calls let through when half-open; all must succeed to close |
///
/// ```
/// use std::time::Duration;
/// use wirecall_runtime::layers::{CircuitBreakerConfig, CircuitBreakerLayer};
///
/// let config = CircuitBreakerConfig::default()
///     .minimum_calls(10)
///     .open_window(Duration::from_secs(2));
/// let breaker = CircuitBreakerLayer::new(config)?;
/// # let _ = breaker;
/// # Ok::<(), wirecall_runtime::layers::CircuitBreakerConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CircuitBreakerConfig {
    pub(super) rolling_window: Duration,
    pub(super) window_buckets: u32,
    pub(super) minimum_calls: u32,
    pub(super) error_threshold_percent: u8,
    pub(super) open_window: Duration,
    pub(super) trial_calls: u32,
}

impl Default for CircuitBreakerConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl CircuitBreakerConfig {
    /// Every setting at its default; the same as `default()`, usable in a `const` (the
    /// per-method policies that `#[wirecall(breaker(..))]` generates are constants).
    pub const fn new() -> Self {
        Self {
            rolling_window: DEFAULT_ROLLING_WINDOW,
            window_buckets: DEFAULT_WINDOW_BUCKETS,
            minimum_calls: DEFAULT_MINIMUM_CALLS,
            error_threshold_percent: DEFAULT_ERROR_THRESHOLD_PERCENT,
            open_window: DEFAULT_OPEN_WINDOW,
            trial_calls: DEFAULT_TRIAL_CALLS,
        }
    }

    /// The failure rate counts the calls that ended in the last `window`, counted in
    /// `buckets` slices (default: [`DEFAULT_ROLLING_WINDOW`] in [`DEFAULT_WINDOW_BUCKETS`]).
    /// The window slides one bucket at a time: more buckets forget old calls more smoothly.
    pub const fn rolling_window(mut self, window: Duration, buckets: u32) -> Self {
        self.rolling_window = window;
        self.window_buckets = buckets;
        self
    }

    /// The circuit opens only once at least `calls` calls are in the rolling window
    /// (default: [`DEFAULT_MINIMUM_CALLS`]).
    pub const fn minimum_calls(mut self, calls: u32) -> Self {
        self.minimum_calls = calls;
        self
    }

    /// The circuit opens when at least `percent` % of the calls in the window failed, 0 to
    /// 100 (default: [`DEFAULT_ERROR_THRESHOLD_PERCENT`]). 0 opens it on any failure, 100
    /// only when every call failed.
    pub const fn error_threshold_percent(mut self, percent: u8) -> Self {
        self.error_threshold_percent = percent;
        self
    }

    /// How long an open circuit fails calls at once before it lets trial calls through
    /// (default: [`DEFAULT_OPEN_WINDOW`]).
    pub const fn open_window(mut self, window: Duration) -> Self {
        self.open_window = window;
        self
    }

    /// How many trial calls a half-open circuit lets through (default:
    /// [`DEFAULT_TRIAL_CALLS`]): the circuit closes once that many succeeded, and opens again
    /// on the first that fails. Other calls fail fast meanwhile.
    pub const fn trial_calls(mut self, calls: u32) -> Self {
        self.trial_calls = calls;
        self
    }

    /// The rolling window's length.
    pub const fn window(&self) -> Duration {
        self.rolling_window
    }

    /// The rolling window's buckets.
    pub const fn buckets(&self) -> u32 {
        self.window_buckets
    }

    /// The calls in the window before the circuit may open.
    pub fn min_calls(&self) -> u32 {
        self.minimum_calls
    }

    /// The failure rate, in percent, at which the circuit opens.
    pub fn threshold_percent(&self) -> u8 {
        self.error_threshold_percent
    }

    /// How long an open circuit fails calls fast.
    pub fn open_for(&self) -> Duration {
        self.open_window
    }

    /// The trial calls of a half-open circuit.
    pub fn trials(&self) -> u32 {
        self.trial_calls
    }

    /// Checks every setting; [`CircuitBreakerLayer::new`](super::CircuitBreakerLayer::new)
    /// calls it.
    pub fn validate(&self) -> Result<(), CircuitBreakerConfigError> {
        if self.error_threshold_percent > 100 {
            return Err(CircuitBreakerConfigError::ThresholdOutOfRange {
                percent: self.error_threshold_percent,
            });
        }
        if self.rolling_window.is_zero() {
            return Err(CircuitBreakerConfigError::ZeroRollingWindow);
        }
        if self.window_buckets == 0 {
            return Err(CircuitBreakerConfigError::ZeroBuckets);
        }
        if self.bucket_len() < MIN_BUCKET {
            return Err(CircuitBreakerConfigError::BucketTooShort {
                window: self.rolling_window,
                buckets: self.window_buckets,
            });
        }
        if self.minimum_calls == 0 {
            return Err(CircuitBreakerConfigError::ZeroMinimumCalls);
        }
        if self.open_window.is_zero() {
            return Err(CircuitBreakerConfigError::ZeroOpenWindow);
        }
        if self.trial_calls == 0 {
            return Err(CircuitBreakerConfigError::ZeroTrialCalls);
        }
        Ok(())
    }

    /// The span of one bucket of the rolling window.
    pub(super) fn bucket_len(&self) -> Duration {
        self.rolling_window / self.window_buckets.max(1)
    }
}

/// A [`CircuitBreakerConfig`] setting that cannot work.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CircuitBreakerConfigError {
    /// The error threshold is a percentage.
    #[error("an error threshold of {percent} % is outside 0..=100; give the percentage of failed calls at which the circuit opens")]
    ThresholdOutOfRange {
        /// The threshold given.
        percent: u8,
    },
    /// A rolling window of zero counts no call.
    #[error(
        "the rolling window is zero, so no call would ever count; give it a length such as 10 s"
    )]
    ZeroRollingWindow,
    /// A rolling window needs at least one bucket.
    #[error("the rolling window has zero buckets; give it at least 1 (10 is usual)")]
    ZeroBuckets,
    /// The buckets are shorter than a millisecond.
    #[error("{buckets} buckets in a rolling window of {window:?} are shorter than 1 ms each; use fewer buckets or a longer window")]
    BucketTooShort {
        /// The rolling window given.
        window: Duration,
        /// The number of buckets given.
        buckets: u32,
    },
    /// A minimum of zero calls would open the circuit on the first failure of a quiet method.
    #[error("the minimum number of calls is zero; give at least 1 (use a threshold of 0 % to open on any failure)")]
    ZeroMinimumCalls,
    /// An open window of zero would never fail a call fast.
    #[error("the open window is zero, so an open circuit would never fail a call fast; give it a length such as 5 s")]
    ZeroOpenWindow,
    /// A half-open circuit with no trial call could never close.
    #[error("the number of trial calls is zero, so a half-open circuit could never close; give at least 1")]
    ZeroTrialCalls,
}

/// So that `CircuitBreakerLayer::new(config)?` works in a function returning
/// [`wirecall::Error`](Error).
impl From<CircuitBreakerConfigError> for Error {
    fn from(error: CircuitBreakerConfigError) -> Self {
        Error::Config(format!("circuit breaker: {error}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_and_the_documented_constants() {
        let config = CircuitBreakerConfig::default();
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(config.bucket_len(), Duration::from_secs(1));
        assert_eq!(config.minimum_calls, DEFAULT_MINIMUM_CALLS);
        assert_eq!(config.open_window, DEFAULT_OPEN_WINDOW);
    }

    #[test]
    fn a_threshold_above_one_hundred_percent_is_refused() {
        let config = CircuitBreakerConfig::default().error_threshold_percent(101);
        assert_eq!(
            config.validate(),
            Err(CircuitBreakerConfigError::ThresholdOutOfRange { percent: 101 })
        );
        for percent in [0, 100] {
            let config = CircuitBreakerConfig::default().error_threshold_percent(percent);
            assert_eq!(config.validate(), Ok(()), "{percent} %");
        }
    }

    #[test]
    fn zero_windows_minimums_and_trials_are_refused() {
        let default = CircuitBreakerConfig::default;
        let cases = [
            (
                default().rolling_window(Duration::ZERO, 10),
                CircuitBreakerConfigError::ZeroRollingWindow,
            ),
            (
                default().rolling_window(Duration::from_secs(10), 0),
                CircuitBreakerConfigError::ZeroBuckets,
            ),
            (
                default().rolling_window(Duration::from_millis(5), 10),
                CircuitBreakerConfigError::BucketTooShort {
                    window: Duration::from_millis(5),
                    buckets: 10,
                },
            ),
            (
                default().minimum_calls(0),
                CircuitBreakerConfigError::ZeroMinimumCalls,
            ),
            (
                default().open_window(Duration::ZERO),
                CircuitBreakerConfigError::ZeroOpenWindow,
            ),
            (
                default().trial_calls(0),
                CircuitBreakerConfigError::ZeroTrialCalls,
            ),
        ];
        for (config, expected) in cases {
            assert_eq!(config.validate(), Err(expected.clone()), "{expected}");
        }
    }

    #[test]
    fn a_bad_setting_becomes_a_configuration_error_of_the_caller() {
        let error = Error::from(CircuitBreakerConfigError::ZeroTrialCalls);
        assert!(
            matches!(&error, Error::Config(message) if message.starts_with("circuit breaker: ")),
            "{error}"
        );
    }
}
