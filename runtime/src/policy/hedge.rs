//! [`Hedge`]: a method's hedging policy, as `#[wirecall(hedge(delay = "20ms", max = 2))]` or
//! `hedge.delay=20ms hedge.max=3` in a policy file sets it. What hedging does is the client
//! stack's (`client/stack/hedge.rs`); this is only what a policy says about it.

use std::time::Duration;

/// Attempts a hedged call may send in all (the first included) unless the policy says how
/// many: one copy after the first, as gRPC's hedging examples and the channel-wide
/// [`Hedging`](crate::discovery::Hedging) do.
pub const DEFAULT_HEDGE_ATTEMPTS: u32 = 2;

/// The most attempts a policy may ask for, the bound gRPC puts on `maxAttempts`: past it,
/// copies of one call add load faster than they cut its latency.
pub const MAX_HEDGE_ATTEMPTS: u32 = 5;

/// Whether a method's calls are hedged, and how: set by the `hedge` policy key. Hedging
/// applies to unary calls of `#[idempotent]` methods on a balanced channel; when the
/// method's policy leaves it unset, the channel's
/// [`hedging`](crate::discovery::BalancedChannelBuilder::hedging) decides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hedge {
    /// Never hedged (`hedge = false`), whatever the channel's setting.
    Off,
    /// Hedged with these settings.
    On(HedgeConfig),
}

/// When a hedged call sends another copy, and how many it may send.
///
/// ```
/// use std::time::Duration;
/// use wirecall_runtime::policy::HedgeConfig;
///
/// let config = HedgeConfig::new().after(Duration::from_millis(20)).max_attempts(3);
/// assert_eq!(config.delay(), Some(Duration::from_millis(20)));
/// assert_eq!(config.attempts(), 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HedgeConfig {
    delay: Option<Duration>,
    attempts: u32,
}

impl HedgeConfig {
    /// The adaptive delay (the method's usual latency plus four times its usual deviation, as
    /// the channel measures it) and [`DEFAULT_HEDGE_ATTEMPTS`].
    pub const fn new() -> Self {
        Self {
            delay: None,
            attempts: DEFAULT_HEDGE_ATTEMPTS,
        }
    }

    /// Sends each further copy after `delay` without an answer, instead of the adaptive delay.
    pub const fn after(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Sends at most `attempts` copies of a call in all, the first included; kept within 1
    /// (no hedge) and [`MAX_HEDGE_ATTEMPTS`].
    pub const fn max_attempts(mut self, attempts: u32) -> Self {
        self.attempts = if attempts == 0 {
            1
        } else if attempts > MAX_HEDGE_ATTEMPTS {
            MAX_HEDGE_ATTEMPTS
        } else {
            attempts
        };
        self
    }

    /// The fixed delay, or `None` for the adaptive one.
    pub fn delay(&self) -> Option<Duration> {
        self.delay
    }

    /// The most copies of a call, the first included.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
}

impl Default for HedgeConfig {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_stay_within_one_and_the_bound() {
        assert_eq!(HedgeConfig::new().attempts(), DEFAULT_HEDGE_ATTEMPTS);
        assert_eq!(HedgeConfig::new().max_attempts(0).attempts(), 1);
        assert_eq!(
            HedgeConfig::new().max_attempts(9).attempts(),
            MAX_HEDGE_ATTEMPTS
        );
        assert_eq!(HedgeConfig::new().delay(), None);
    }
}
