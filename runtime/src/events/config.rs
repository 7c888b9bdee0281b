//! How a subscription consumes: prefetch (how many events one consumer holds at once) and
//! the retry policy.

use super::redelivery::RetryPolicy;

/// Events one consumer holds unacknowledged at once (RabbitMQ `basic_qos` prefetch; the batch
/// size of the in-process back-end), and so how many of its handlers run concurrently.
pub const DEFAULT_PREFETCH: u16 = 32;

/// The settings of one consumer of a subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubscriptionConfig {
    /// See [`DEFAULT_PREFETCH`]; at least 1.
    pub prefetch: u16,
    /// When failed events are tried again.
    pub retry: RetryPolicy,
}

impl Default for SubscriptionConfig {
    fn default() -> Self {
        Self {
            prefetch: DEFAULT_PREFETCH,
            retry: RetryPolicy::default(),
        }
    }
}

impl SubscriptionConfig {
    /// Sets [`prefetch`](Self::prefetch).
    #[must_use]
    pub fn prefetch(mut self, prefetch: u16) -> Self {
        self.prefetch = prefetch.max(1);
        self
    }

    /// Sets the [`retry`](Self::retry) policy.
    #[must_use]
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
}

/// Whether `name` can name a subscription: it becomes part of queue names, which the
/// management tools show, so keep it readable.
pub(crate) fn valid_subscription_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}
