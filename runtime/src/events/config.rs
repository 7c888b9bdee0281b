//! How a subscription consumes: prefetch (how many events one consumer holds at once), the
//! retry policy, and whether it keeps a handled-once window.

use super::handled_once::HandledOnce;
use super::redelivery::RetryPolicy;

/// Events one consumer holds unacknowledged at once (RabbitMQ `basic_qos` prefetch; the batch
/// size of the in-process back-end), and so how many of its handlers run concurrently.
pub const DEFAULT_PREFETCH: u16 = 32;

/// The settings of one consumer of a subscription.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubscriptionConfig {
    /// See [`DEFAULT_PREFETCH`]; at least 1.
    pub prefetch: u16,
    /// When failed events are tried again.
    pub retry: RetryPolicy,
    /// The window of handled event ids that makes a redelivery of a handled event a no-op;
    /// `None` (the default): every delivery runs the handler.
    pub handled_once: Option<HandledOnce>,
}

impl Default for SubscriptionConfig {
    fn default() -> Self {
        Self {
            prefetch: DEFAULT_PREFETCH,
            retry: RetryPolicy::default(),
            handled_once: None,
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

    /// Keeps `window` of the event ids this subscription handled, so that a redelivered
    /// event whose id it holds is acknowledged without running the handler again (counted in
    /// [`DUPLICATES_SKIPPED`](crate::events::metrics::DUPLICATES_SKIPPED)). Off by default.
    /// Delivery stays at least once: an id is recorded only after its handler succeeded, and
    /// a failed run is retried as without the window. See [`HandledOnce`].
    #[must_use]
    pub fn handled_once(mut self, window: HandledOnce) -> Self {
        self.handled_once = Some(window);
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
