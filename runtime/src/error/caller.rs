//! [`Error`]: everything that can go wrong for a caller (and for starting a server).

use std::time::Duration;

use crate::codec::CodecError;
use crate::method::MethodId;
use crate::negotiate::NegotiationError;
use crate::transport::frame::FrameError;
use wirecall_wire::ErrorCode;

/// The error type of tower layers: any error, boxed (the same type as `tower::BoxError`).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Everything that can go wrong for a caller (and for starting a server).
///
/// Application errors are not here: a method returning `Result<T, E>` resolves to
/// `Ok(Err(e))` when the handler returned `Err(e)`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Opening the TCP connection (or binding the listener) failed.
    #[error("could not connect to {addr}: {cause}")]
    Connect {
        /// The address as given.
        addr: String,
        /// The OS error (shown in the message, not returned by `source()`).
        cause: std::io::Error,
    },
    /// Binding the server's listener failed.
    #[error("could not bind {addr}: {cause}")]
    Bind {
        /// The address as given.
        addr: String,
        /// The OS error (shown in the message, not returned by `source()`).
        cause: std::io::Error,
    },
    /// The handshake failed: no common codec, a refused token, a busy server, a peer that
    /// speaks TLS to a plain client, another protocol version, or a peer that is not a
    /// wirecall server. The message starts with the cause: "codec negotiation failed: ..."
    /// only for the codec refusals, the refusal itself for a token, a busy server or TLS
    /// ("authentication failed: ...", "the server is busy ...", "the peer speaks TLS: ..."),
    /// and "handshake failed: ..." for the rest.
    #[error("{}", negotiation_message(.0))]
    Negotiation(NegotiationError),
    /// Encoding the arguments or decoding the result failed locally.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// The handler panicked on the server; the server goes on serving other calls.
    #[error("the remote handler of {method} panicked: {message}")]
    HandlerPanicked {
        /// The method called.
        method: MethodId,
        /// The panic message, if it was a string.
        message: String,
    },
    /// The server has no such method: client and server disagree on the service definition.
    #[error("the server has no method {method}; check that client and server use the same service definition")]
    UnknownMethod {
        /// The method id that was not found.
        method: MethodId,
    },
    /// A frame was larger than the maximum frame length of its receiver.
    #[error("frame of {len} bytes exceeds the maximum of {max} bytes; send less per call or raise max_frame_len on both sides")]
    FrameTooLarge {
        /// The frame length.
        len: u64,
        /// The maximum it exceeded.
        max: u32,
    },
    /// The connection closed (or broke) before the call completed. The call may or may not
    /// have run on the server, except when `code` is
    /// [`ShuttingDown`](ErrorCode::ShuttingDown): a server shutting down stops reading,
    /// finishes every call it read, and only then says so and closes, so a call still waiting
    /// then never ran.
    #[error("connection closed: {reason}")]
    ConnectionClosed {
        /// Why, as far as the client knows.
        reason: String,
        /// The code of the connection-level `Error` frame the server sent before closing
        /// (`None`: it closed or broke without one).
        code: Option<ErrorCode>,
    },
    /// The call was not sent: the channel's connection is down and the channel waits before
    /// dialling again (`retry_after` says how long), the connection closed and the channel
    /// does not reconnect, or the channel was closed with `Channel::close`. The server never
    /// saw the call, so it may be sent again, here later or elsewhere now.
    #[error("the call was not sent: {reason}")]
    Unavailable {
        /// Why, as far as the client knows.
        reason: String,
        /// When the channel dials again, if it is waiting to (`None`: it will not, or it
        /// dials on the next call).
        retry_after: Option<Duration>,
    },
    /// No reply arrived before the call's deadline. The server was told to stop the work.
    #[error("no reply within {after:?}")]
    Timeout {
        /// The deadline that passed.
        after: Duration,
    },
    /// The server refused or failed the call for another reason.
    #[error("the server failed the call ({code:?}): {message}")]
    Remote {
        /// The wire error code.
        code: ErrorCode,
        /// The server's message.
        message: String,
    },
    /// The server's authorisation hook refused this call for this caller.
    #[error("permission denied: the server does not allow this caller to call {method}")]
    PermissionDenied {
        /// The method called.
        method: MethodId,
    },
    /// A layer of the channel ([`ChannelBuilder::layer`](crate::ChannelBuilder::layer))
    /// failed the call on this side. `code` classifies it: tower's `Elapsed` (timeout) is
    /// [`DeadlineExceeded`](ErrorCode::DeadlineExceeded), tower's `Overloaded` (load
    /// shedding) is [`Overloaded`](ErrorCode::Overloaded), anything else
    /// [`LayerFailed`](ErrorCode::LayerFailed); `cause` is the layer's own error.
    #[error("a channel layer failed the call ({code:?}): {cause}")]
    Layer {
        /// What kind of failure it is.
        code: ErrorCode,
        /// The layer's error (shown in the message, not returned by `source()`; downcast it
        /// to its type when you need more).
        cause: BoxError,
    },
    /// The TLS handshake failed, or the TLS session broke during the wirecall handshake
    /// (untrusted or expired certificate, missing client certificate, or one side not
    /// using TLS).
    #[error("TLS failed: {0}; check that both sides use TLS and trust each other's certificates")]
    Tls(std::io::Error),
    /// A call through a balanced channel failed on this endpoint and was not (or no longer)
    /// retried elsewhere: it was not idempotent and may have run, or the deadline or the
    /// retry budget ran out. The cause says what happened there.
    #[error("call to endpoint {endpoint} failed: {cause}")]
    Endpoint {
        /// The endpoint's address.
        endpoint: String,
        /// What failed there (shown in the message, not returned by `source()`).
        cause: Box<Error>,
    },
    /// A balanced channel has no endpoint to call: none is registered, or every one is
    /// ejected after failing or already failed this call.
    #[error("no endpoint of service {service} is available: {reason}")]
    NoEndpoints {
        /// The service name.
        service: String,
        /// Why.
        reason: String,
    },
    /// A circuit breaker ([`CircuitBreakerLayer`](crate::layers::CircuitBreakerLayer))
    /// failed the call at once, without sending it: too many recent calls of this method
    /// failed. Nothing reached the server, so the call may be sent elsewhere; a balanced
    /// channel whose endpoint options carry the breaker does so by itself.
    #[error("{}", circuit_open_message(*method, endpoint.as_deref(), *retry_after))]
    CircuitOpen {
        /// The method whose circuit is open.
        method: MethodId,
        /// The endpoint the breaker guards, when it sits on one endpoint's channel (`None`:
        /// a breaker over a whole balanced channel, or over a channel without a TCP peer).
        endpoint: Option<String>,
        /// How long the circuit stays open before trial calls test the method again
        /// (zero: trial calls are testing it now, and this one was not among them).
        retry_after: Duration,
    },
    /// The method's client-side concurrency limit (the `concurrency` of its policy) was
    /// reached: the call was not sent. Nothing reached a server, so calling again once a call
    /// in flight ended, or a fallback, can help.
    #[error("{service}.{method} already has {limit} calls in flight, the limit of its policy; nothing was sent: wait for one to end, or raise its `concurrency`")]
    ConcurrencyLimit {
        /// The service's wire name.
        service: String,
        /// The method's wire name.
        method: String,
        /// The limit reached.
        limit: u32,
    },
    /// The server settled a protocol version without stream calls (version 3 brought them):
    /// the stream was not opened, and nothing was sent.
    #[error("the server speaks protocol version {version}, which has no stream calls, so {method} cannot be opened; upgrade the server to protocol version 3 or later")]
    StreamsUnsupported {
        /// The streaming method.
        method: MethodId,
        /// The connection's protocol version.
        version: u8,
    },
    /// The server's or the channel's configuration is invalid (for example two methods share
    /// an id, or a TLS certificate does not parse).
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// The message of [`Error::CircuitOpen`]: what happened, and when calls go through again.
fn circuit_open_message(method: MethodId, endpoint: Option<&str>, retry_after: Duration) -> String {
    let guarded = match endpoint {
        Some(endpoint) => format!("method {method} on endpoint {endpoint}"),
        None => format!("method {method}"),
    };
    if retry_after.is_zero() {
        format!(
            "the circuit breaker for {guarded} is letting a few trial calls test whether it \
             recovered and refuses the others until they succeed; try again shortly or call \
             another endpoint"
        )
    } else {
        format!(
            "the circuit breaker for {guarded} is open after too many failures; calls fail \
             fast for another {retry_after:?}, then a few trial calls test whether it recovered"
        )
    }
}

/// The message of [`Error::Negotiation`]: the cause first, so that a refused token, a busy
/// server and a TLS mismatch do not read as a codec problem.
fn negotiation_message(error: &NegotiationError) -> String {
    match error {
        NegotiationError::NoCommonCodec { .. }
        | NegotiationError::EarlyCallsRefused { .. }
        | NegotiationError::NothingToOffer => format!("codec negotiation failed: {error}"),
        // These messages already name the refusal and what to do.
        NegotiationError::AuthenticationFailed
        | NegotiationError::Busy
        | NegotiationError::PeerSpeaksTls(_) => error.to_string(),
        NegotiationError::UnsupportedVersion { .. }
        | NegotiationError::BadMagic(_)
        | NegotiationError::BadCodecCount(_)
        | NegotiationError::DuplicateCodec(_)
        | NegotiationError::BadExtensions(_)
        | NegotiationError::BadServerHello(_)
        | NegotiationError::RejectedAsMalformed
        | NegotiationError::TimedOut
        | NegotiationError::Io(_) => format!("handshake failed: {error}"),
    }
}

impl From<NegotiationError> for Error {
    fn from(error: NegotiationError) -> Self {
        Self::Negotiation(error)
    }
}

impl Error {
    pub(crate) fn closed(reason: impl Into<String>) -> Self {
        Self::ConnectionClosed {
            reason: reason.into(),
            code: None,
        }
    }

    /// A call that was not sent, for `reason`, with no redial planned.
    pub(crate) fn unsent(reason: impl Into<String>) -> Self {
        Self::Unavailable {
            reason: reason.into(),
            retry_after: None,
        }
    }

    /// The wire error code when the server failed the call with an `Error` frame
    /// ([`UnknownMethod`](Self::UnknownMethod), [`HandlerPanicked`](Self::HandlerPanicked),
    /// [`PermissionDenied`](Self::PermissionDenied), [`Remote`](Self::Remote)); `None` for
    /// failures on this side (connection, timeout, codec, configuration).
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Self::UnknownMethod { .. } => Some(ErrorCode::UnknownMethod),
            Self::HandlerPanicked { .. } => Some(ErrorCode::HandlerPanicked),
            Self::PermissionDenied { .. } => Some(ErrorCode::PermissionDenied),
            Self::Remote { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Builds the caller's error from an `Error` frame's body.
    pub(crate) fn from_remote(method: MethodId, code: ErrorCode, message: String) -> Self {
        match code {
            ErrorCode::UnknownMethod => Self::UnknownMethod { method },
            ErrorCode::HandlerPanicked => Self::HandlerPanicked { method, message },
            ErrorCode::PermissionDenied => Self::PermissionDenied { method },
            _ => Self::Remote { code, message },
        }
    }
}

impl Error {
    /// Classifies the error of a channel layer: a wirecall `Error` stays itself; anything else
    /// becomes [`Error::Layer`] with a code (see there).
    pub fn from_layer(error: BoxError) -> Self {
        let error = match error.downcast::<Error>() {
            Ok(error) => return *error,
            Err(other) => other,
        };
        let code = if error.is::<tower::timeout::error::Elapsed>() {
            ErrorCode::DeadlineExceeded
        } else if error.is::<tower::load_shed::error::Overloaded>() {
            ErrorCode::Overloaded
        } else {
            ErrorCode::LayerFailed
        };
        Self::Layer { code, cause: error }
    }
}

impl From<crate::metadata::MetadataError> for Error {
    fn from(err: crate::metadata::MetadataError) -> Self {
        Self::Config(format!("call metadata: {err}"))
    }
}

impl From<FrameError> for Error {
    fn from(err: FrameError) -> Self {
        match err {
            FrameError::TooLarge { len, max } => Self::FrameTooLarge { len, max },
            other => Self::closed(other.to_string()),
        }
    }
}
