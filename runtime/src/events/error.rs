//! The errors of the events layer: publishing, subscribing, connecting, and what a handler
//! reports back to the consumer loop.

use crate::codec::CodecError;

/// A publish that did not complete: the event may or may not have reached the broker, but it
/// was not confirmed, so the caller must assume it was not delivered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The payload could not be encoded.
    #[error("the event could not be encoded: {0}")]
    Encode(#[from] CodecError),
    /// The bus has no connection to its broker right now (it is reconnecting in the
    /// background); publishes fail at once rather than wait, so the caller decides whether to
    /// retry, buffer or give up.
    #[error("not connected to the event broker (reconnecting); the event was not published")]
    Disconnected,
    /// The broker refused the message (a negative confirm).
    #[error("the broker refused the event (negative publisher confirm)")]
    Nacked,
    /// The broker connection failed while the publish was in flight.
    #[error("the event broker connection failed during the publish: {0}")]
    Broker(String),
    /// The bus was shut down.
    #[error("the event bus is closed")]
    Closed,
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
