//! [`CallError`]: why the server failed a call, which it sends to the caller as a wire
//! [`ErrorCode`].

use super::caller::BoxError;
use crate::codec::CodecError;
use crate::method::MethodId;
use wirecall_wire::ErrorCode;

/// Why a server-side dispatch failed before or after the handler ran. Returned by the future
/// of [`Service::call`](crate::Service::call) and by the server's call pipeline; the server
/// turns it into an `Error` frame with [`code`](Self::code).
///
/// A layer added with [`ServerBuilder::layer`](crate::ServerBuilder::layer) may return it to
/// refuse a call with a chosen code (for example [`PermissionDenied`](Self::PermissionDenied));
/// other errors of layers are mapped by [`from_layer`](Self::from_layer).
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// No method with this id in the service.
    #[error("unknown method {0}")]
    UnknownMethod(MethodId),
    /// The arguments did not decode.
    #[error("arguments did not decode: {0}")]
    BadRequest(CodecError),
    /// The result did not encode.
    #[error("result did not encode: {0}")]
    Encode(CodecError),
    /// The server's runtime stopped while the arguments were being decoded.
    #[error("the server stopped while decoding the arguments")]
    DecodeInterrupted,
    /// The caller may not make this call (the authorisation hook, or an interceptor layer).
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// The server is over a limit and refused the call (`max_in_flight`, or tower's load
    /// shedding).
    #[error("overloaded: {0}")]
    Overloaded(String),
    /// A time limit of a server layer (tower's timeout) passed before the call finished.
    #[error("a server time limit passed before the call finished")]
    TimedOut,
    /// A server layer failed the call with an error of its own (shown in the message).
    #[error("a server layer failed the call: {0}")]
    Layer(BoxError),
    /// The frame does not match the method's shape: an `Open` for a unary method, or a
    /// `Request` for a streaming one. The message names the method's shape.
    #[error("{0}")]
    WrongShape(String),
}

impl CallError {
    /// The code sent to the caller.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::UnknownMethod(_) => ErrorCode::UnknownMethod,
            Self::BadRequest(_) => ErrorCode::BadRequest,
            Self::Encode(_) => ErrorCode::EncodeFailed,
            Self::DecodeInterrupted => ErrorCode::ShuttingDown,
            Self::PermissionDenied(_) => ErrorCode::PermissionDenied,
            Self::Overloaded(_) => ErrorCode::Overloaded,
            Self::TimedOut => ErrorCode::DeadlineExceeded,
            Self::Layer(_) => ErrorCode::LayerFailed,
            Self::WrongShape(_) => ErrorCode::BadRequest,
        }
    }

    /// Classifies the error of a server layer: a `CallError` stays itself, tower's
    /// `Elapsed` (timeout) becomes [`TimedOut`](Self::TimedOut), tower's `Overloaded` (load
    /// shedding) becomes [`Overloaded`](Self::Overloaded), anything else
    /// [`Layer`](Self::Layer).
    pub fn from_layer(error: BoxError) -> Self {
        let error = match error.downcast::<CallError>() {
            Ok(call_error) => return *call_error,
            Err(other) => other,
        };
        if error.is::<tower::timeout::error::Elapsed>() {
            return Self::TimedOut;
        }
        if error.is::<tower::load_shed::error::Overloaded>() {
            return Self::Overloaded("a load-shedding layer refused the call".to_owned());
        }
        Self::Layer(error)
    }
}
