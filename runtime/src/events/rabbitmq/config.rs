//! How the RabbitMQ back-end connects and reconnects.

use std::time::Duration;

/// The first wait before reconnecting after the broker connection is lost.
pub const DEFAULT_RECONNECT_MIN_DELAY: Duration = Duration::from_millis(100);
/// The longest wait between reconnection attempts (the wait doubles up to it).
pub const DEFAULT_RECONNECT_MAX_DELAY: Duration = Duration::from_secs(5);
/// How long one connection attempt may take before it counts as failed.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the bus keeps publishing an event again, with its id, after a publish of it
/// ended without a confirm ([`PublishOutcome::MaybePublished`]).
///
/// Thirty seconds ride out a broker restart (6 to 20 s on a small machine) and a few
/// reconnection attempts; a caller whose publish waits that long was going to get an error
/// anyway. Kafka's producer makes the same choice by default (`delivery.timeout.ms`).
///
/// [`PublishOutcome::MaybePublished`]: crate::events::PublishOutcome::MaybePublished
pub const DEFAULT_PUBLISH_RETRY_WITHIN: Duration = Duration::from_secs(30);

/// Where the broker is and how to reconnect to it.
#[derive(Clone)]
pub struct RabbitMqConfig {
    pub(crate) url: String,
    pub(crate) connection_name: String,
    pub(crate) reconnect_min_delay: Duration,
    pub(crate) reconnect_max_delay: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) publish_retry_within: Duration,
}

impl std::fmt::Debug for RabbitMqConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RabbitMqConfig")
            .field("url", &redact(&self.url))
            .field("connection_name", &self.connection_name)
            .field("reconnect_min_delay", &self.reconnect_min_delay)
            .field("reconnect_max_delay", &self.reconnect_max_delay)
            .field("connect_timeout", &self.connect_timeout)
            .field("publish_retry_within", &self.publish_retry_within)
            .finish()
    }
}

impl RabbitMqConfig {
    /// The broker at `url` (`amqp://user:password@host:port/vhost`; `%2f` is the default
    /// vhost `/`), with the default delays.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            connection_name: "wirecall-events".to_owned(),
            reconnect_min_delay: DEFAULT_RECONNECT_MIN_DELAY,
            reconnect_max_delay: DEFAULT_RECONNECT_MAX_DELAY,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            publish_retry_within: DEFAULT_PUBLISH_RETRY_WITHIN,
        }
    }

    /// The connection's name in the management tools.
    #[must_use]
    pub fn connection_name(mut self, name: impl Into<String>) -> Self {
        self.connection_name = name.into();
        self
    }

    /// The reconnection backoff: the first wait, doubling up to `max`.
    #[must_use]
    pub fn reconnect_delays(mut self, min: Duration, max: Duration) -> Self {
        self.reconnect_min_delay = min;
        self.reconnect_max_delay = max.max(min);
        self
    }

    /// See [`DEFAULT_CONNECT_TIMEOUT`].
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a publish whose outcome is unknown (the connection went before the broker's
    /// confirm, or a negative confirm) is retried, with the same event id, before it fails
    /// with an error whose outcome is `MaybePublished`; see
    /// [`DEFAULT_PUBLISH_RETRY_WITHIN`]. `Duration::ZERO` returns that error at once. A
    /// publish that was certainly not sent (`Disconnected` on its first try) still fails at
    /// once.
    ///
    /// The same id is what lets a subscription's handled-once window
    /// ([`SubscriptionConfig::handled_once`](crate::events::SubscriptionConfig::handled_once))
    /// drop the second copy when both reached the queue.
    #[must_use]
    pub fn publish_retry_within(mut self, within: Duration) -> Self {
        self.publish_retry_within = within;
        self
    }
}

/// `url` without its password, for messages and logs.
pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match rest.split_once('@') {
        Some((credentials, host)) => {
            let user = credentials.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            super::redact("amqp://guest:secret@127.0.0.1:5672/%2f"),
            "amqp://guest:***@127.0.0.1:5672/%2f"
        );
        assert_eq!(super::redact("amqp://127.0.0.1"), "amqp://127.0.0.1");
    }
}
