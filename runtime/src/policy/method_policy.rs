//! [`MethodPolicy`]: what a policy says about one method (its deadline, retries, concurrency
//! limit and circuit breaker), each setting optional, so that one policy can be laid over
//! another: the trait's defaults under the method's attribute, both under run-time overrides.

use std::time::Duration;

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
/// | [`concurrency`](Self::concurrency) | calls of the method in flight at once through one client handle, open streams included; one more fails at once with [`Error::ConcurrencyLimit`](crate::Error::ConcurrencyLimit) |
/// | [`breaker`](Self::breaker) | a circuit breaker per method (per endpoint and method on a balanced channel) |
///
/// ```
/// use std::time::Duration;
/// use wirecall_runtime::policy::MethodPolicy;
///
/// const GET_USER: MethodPolicy = MethodPolicy::new()
///     .with_timeout(Duration::from_millis(300))
///     .with_retries(2)
///     .with_concurrency(50)
///     .with_default_breaker();
/// assert_eq!(GET_USER.to_string(), "timeout=300ms retries=2 concurrency=50 breaker=on");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MethodPolicy {
    timeout: Option<Duration>,
    retries: Option<u32>,
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
            concurrency: self.concurrency.or(under.concurrency),
            breaker: self.breaker.clone().or_else(|| under.breaker.clone()),
        }
    }

    pub(crate) fn clear_retries(&mut self) {
        self.retries = None;
    }
}
