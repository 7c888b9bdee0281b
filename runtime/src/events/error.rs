//! The errors of the events layer: publishing, subscribing, connecting, and what a handler
//! reports back to the consumer loop.

use crate::codec::CodecError;

/// A publish that did not complete. The event was not confirmed, so the caller must assume
/// it was not delivered; [`outcome`](Self::outcome) says whether it may have been published
/// all the same (publishing it again could then deliver it twice). On RabbitMQ the bus has
/// already sent such an event again with its id, for `RabbitMqConfig::publish_retry_within`,
/// before it returns the error; a new publish through a generated publisher gets a new id.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The payload could not be encoded. Not published.
    #[error("the event could not be encoded: {0}")]
    Encode(#[from] CodecError),
    /// The bus has no connection to its broker right now (it is reconnecting in the
    /// background); publishes fail at once rather than wait, so the caller decides whether to
    /// retry, buffer or give up. Not published.
    #[error("not connected to the event broker (reconnecting); the event was not published")]
    Disconnected,
    /// The broker refused the message (a negative confirm): it did not take responsibility
    /// for it, which does not prove that no queue holds it. Maybe published.
    #[error("the broker refused the event (negative publisher confirm); it may still have reached a queue")]
    Nacked,
    /// The broker failed the publish before the event was sent (declaring the contract's
    /// exchange failed). Not published.
    #[error("the event broker failed before the event was sent: {0}; the event was not published")]
    Broker(String),
    /// The connection failed after the event was handed to it and before the broker
    /// confirmed it (or, in process, the bus closed while the event was being fanned out to
    /// its subscriptions). Maybe published.
    #[error("the event was sent but not confirmed: {0}; it may have been published")]
    Unconfirmed(String),
    /// The bus was shut down before the publish. Not published.
    #[error("the event bus is closed; the event was not published")]
    Closed,
}

/// Whether a failed publish may have reached a subscription anyway: [`PublishError::outcome`].
///
/// | outcome | publishing it again |
/// |---|---|
/// | [`NotPublished`](Self::NotPublished) | cannot deliver it twice |
/// | [`MaybePublished`](Self::MaybePublished) | may deliver it twice: subscribers de-duplicate |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PublishOutcome {
    /// The event reached no queue: it was never sent (not encoded, no connection, the bus
    /// closed, the exchange not declared).
    NotPublished,
    /// The event was sent and not confirmed: it may be in a queue (the connection failed
    /// before the confirm, or the broker answered with a negative confirm).
    MaybePublished,
}

impl PublishError {
    /// Whether the event may have been published despite the error.
    ///
    /// ```
    /// use wirecall_runtime::events::{PublishError, PublishOutcome};
    ///
    /// assert_eq!(PublishError::Disconnected.outcome(), PublishOutcome::NotPublished);
    /// assert_eq!(PublishError::Nacked.outcome(), PublishOutcome::MaybePublished);
    /// ```
    pub fn outcome(&self) -> PublishOutcome {
        match self {
            Self::Encode(_) | Self::Disconnected | Self::Broker(_) | Self::Closed => {
                PublishOutcome::NotPublished
            }
            Self::Nacked | Self::Unconfirmed(_) => PublishOutcome::MaybePublished,
        }
    }
}

/// A subscription (or a declaration, or a dead-letter read) that did not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubscribeError {
    /// The subscription name is empty or has characters a queue name cannot hold.
    #[error("invalid subscription name {0:?}: use letters, digits, `-`, `_` and `.`")]
    InvalidName(String),
    /// The bus has no connection to its broker right now.
    #[error("not connected to the event broker (reconnecting)")]
    Disconnected,
    /// The broker refused a declaration or the consumer (for instance a queue declared
    /// earlier with other arguments).
    #[error("the event broker refused the subscription: {0}")]
    Broker(String),
    /// The bus was shut down.
    #[error("the event bus is closed")]
    Closed,
}

/// Connecting a bus to its broker failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The broker did not answer, or refused the connection or the login.
    #[error("could not connect to the event broker at {url}: {cause}")]
    Unreachable {
        /// The broker address given, without any password.
        url: String,
        /// What the client library reported.
        cause: String,
    },
}

/// Why a handler did not handle an event; the consumer loop turns it into a retry or a dead
/// letter.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandlerError {
    /// The handler returned an error; retried.
    #[error("the handler failed: {0}")]
    Failed(String),
    /// The handler panicked; retried.
    #[error("the handler panicked: {0}")]
    Panicked(String),
    /// The payload did not decode as the event's arguments; dead-lettered at once, since no
    /// retry can fix it.
    #[error("the payload did not decode: {0}")]
    Undecodable(CodecError),
    /// The message's content type names no codec; dead-lettered at once.
    #[error("unknown content type {0:?}; expected application/json, application/msgpack or application/protobuf")]
    UnknownContentType(String),
    /// The contract has no event of that name (a newer producer, or a wrong routing key);
    /// dead-lettered at once.
    #[error("the contract has no event named {0:?}")]
    UnknownEvent(String),
    /// The message lacked what every wirecall event carries (id, event name); dead-lettered
    /// at once.
    #[error("malformed event message: {0}")]
    Malformed(String),
}

impl HandlerError {
    /// Whether trying again may succeed: a failure or a panic may be transient; bad input
    /// stays bad.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Failed(_) | Self::Panicked(_))
    }

    /// The short reason written into a dead letter's headers.
    pub fn reason(&self) -> DeadLetterReason {
        match self {
            Self::Failed(_) | Self::Panicked(_) => DeadLetterReason::HandlerFailed,
            Self::Undecodable(_) => DeadLetterReason::Undecodable,
            Self::UnknownContentType(_) => DeadLetterReason::UnknownContentType,
            Self::UnknownEvent(_) => DeadLetterReason::UnknownEvent,
            Self::Malformed(_) => DeadLetterReason::Malformed,
        }
    }
}

/// Why an event ended in the dead letters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeadLetterReason {
    /// The handler failed (or panicked) on every one of the configured attempts.
    HandlerFailed,
    /// The payload did not decode.
    Undecodable,
    /// The content type names no codec.
    UnknownContentType,
    /// No event of that name in the contract.
    UnknownEvent,
    /// Required properties were missing.
    Malformed,
}

impl DeadLetterReason {
    /// The value of the `x-wirecall-dead-reason` header.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::HandlerFailed => "handler-failed",
            Self::Undecodable => "undecodable",
            Self::UnknownContentType => "unknown-content-type",
            Self::UnknownEvent => "unknown-event",
            Self::Malformed => "malformed",
        }
    }

    /// Parses [`as_str`](Self::as_str).
    pub fn parse(text: &str) -> Option<Self> {
        [
            Self::HandlerFailed,
            Self::Undecodable,
            Self::UnknownContentType,
            Self::UnknownEvent,
            Self::Malformed,
        ]
        .into_iter()
        .find(|reason| reason.as_str() == text)
    }
}

impl std::fmt::Display for DeadLetterReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
