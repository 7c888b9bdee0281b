//! [`MethodPolicy`]: what a policy says about one method (its deadline, retries, hedging,
//! concurrency limit and circuit breaker), each setting optional, so that one policy can be laid over
//! another: the trait's defaults under the method's attribute, both under run-time overrides.

use std::time::Duration;

use super::hedge::{Hedge, HedgeConfig};
use crate::layers::circuit_breaker::config::CircuitBreakerConfig;

/// The fault-tolerance settings of one method, as `#[wirecall(timeout = "300ms", retries = 2,
/// concurrency = 50, breaker)]` declares them, or as a run-time override
/// ([`Policies`](super::Policies)) sets them. Every setting is optional: an unset one is taken
/// from the policy underneath (see the book's Resilience chapter for the order).
///
/// | setting | effect |
/// |---|---|
/// | [`timeout`](Self::timeout) | the call's deadline, unless the caller's is shorter; it travels to the server |
/// | [`retries`](Self::retries) | how many more times a failed call of an `#[idempotent]` method is sent (ignored for other methods) |
/// | [`hedge`](Self::hedge) | whether a slow unary call of an `#[idempotent]` method on a balanced channel is also sent to other endpoints, after how long, and to how many ([`Hedge`]; ignored for other methods) |
/// | [`concurrency`](Self::concurrency) | calls of the method in flight at once through one client handle, open streams included; one more fails at once with [`Error::ConcurrencyLimit`](crate::Error::ConcurrencyLimit) |
/// | [`breaker`](Self::breaker) | a circuit breaker per method (per endpoint and method on a balanced channel) |
///
/// ```
/// use std::time::Duration;
/// use wirecall_runtime::policy::{HedgeConfig, MethodPolicy};
///
/// const GET_USER: MethodPolicy = MethodPolicy::new()
///     .with_timeout(Duration::from_millis(300))
///     .with_retries(2)
///     .with_concurrency(50)
///     .with_default_breaker();
/// assert_eq!(GET_USER.to_string(), "timeout=300ms retries=2 concurrency=50 breaker=on");
///
/// const FIND: MethodPolicy = MethodPolicy::new()
///     .with_hedge(HedgeConfig::new().after(Duration::from_millis(20)).max_attempts(3));
/// assert_eq!(FIND.to_string(), "hedge=on hedge.delay=20ms hedge.max=3");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodPolicy {
    timeout: Option<Duration>,
    retries: Option<u32>,
    hedge: Option<Hedge>,
    concurrency: Option<u32>,
    breaker: Option<Breaker>,
}

/// Whether a method's calls go through a circuit breaker, and with which settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Breaker {
    /// No breaker (`breaker = false`: turns off one the trait's defaults turned on).
    Off,
    /// A breaker with these settings.
    On(CircuitBreakerConfig),
}

impl MethodPolicy {
    /// A policy that sets nothing.
    pub const fn new() -> Self {
        Self {
            timeout: None,
            retries: None,
            hedge: None,
            concurrency: None,
            breaker: None,
        }
    }

    /// Sets the deadline of each call (retries included).
    pub const fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets how many more times a failed call may be sent (for `#[idempotent]` methods).
    pub const fn with_retries(mut self, retries: u32) -> Self {
        self.retries = Some(retries);
        self
    }

    /// Hedges the method's calls with `config` (for `#[idempotent]` methods on a balanced
    /// channel).
    pub const fn with_hedge(mut self, config: HedgeConfig) -> Self {
        self.hedge = Some(Hedge::On(config));
        self
    }

    /// Never hedges the method's calls, whatever the channel's hedging.
    pub const fn without_hedge(mut self) -> Self {
        self.hedge = Some(Hedge::Off);
        self
    }

    /// Sets the most calls of the method in flight at once.
    pub const fn with_concurrency(mut self, limit: u32) -> Self {
        self.concurrency = Some(limit);
        self
    }

    /// Turns on a circuit breaker with `config`.
    pub const fn with_breaker(mut self, config: CircuitBreakerConfig) -> Self {
        self.breaker = Some(Breaker::On(config));
        self
    }

    /// Turns on a circuit breaker with the default settings
    /// ([`CircuitBreakerConfig::new`]).
    pub const fn with_default_breaker(self) -> Self {
        self.with_breaker(CircuitBreakerConfig::new())
    }

    /// Turns the circuit breaker off.
    pub const fn without_breaker(mut self) -> Self {
        self.breaker = Some(Breaker::Off);
        self
    }

    /// The deadline it sets, if any.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The retries it sets, if any.
    pub fn retries(&self) -> Option<u32> {
        self.retries
    }

    /// The hedging it sets, if any.
    pub fn hedge(&self) -> Option<&Hedge> {
        self.hedge.as_ref()
    }

    /// The concurrency limit it sets, if any.
    pub fn concurrency(&self) -> Option<u32> {
        self.concurrency
    }

    /// The breaker setting, if any.
    pub fn breaker(&self) -> Option<&Breaker> {
        self.breaker.as_ref()
    }

    /// The breaker's settings, when it sets one that is on.
    pub fn breaker_config(&self) -> Option<&CircuitBreakerConfig> {
        match &self.breaker {
            Some(Breaker::On(config)) => Some(config),
            _ => None,
        }
    }

    /// Whether it sets nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::new()
    }

    /// This policy laid over `under`: each setting this one leaves unset comes from `under`.
    pub fn over(&self, under: &MethodPolicy) -> MethodPolicy {
        MethodPolicy {
            timeout: self.timeout.or(under.timeout),
            retries: self.retries.or(under.retries),
            hedge: self.hedge.clone().or_else(|| under.hedge.clone()),
            concurrency: self.concurrency.or(under.concurrency),
            breaker: self.breaker.clone().or_else(|| under.breaker.clone()),
        }
    }

    /// Drops what only an `#[idempotent]` method may have: retries and hedging.
    pub(crate) fn clear_resends(&mut self) {
        self.retries = None;
        self.hedge = None;
    }
}
