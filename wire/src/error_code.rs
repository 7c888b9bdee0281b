//! Error codes of `Error` frames (book: "Error frames").

/// Why a server could not answer a request, as carried in an `Error` frame. The numeric values
/// are the wire values (see the wire-protocol chapter of the book).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// No service on the server has this method id.
    UnknownMethod,
    /// The request payload did not decode as the method's arguments.
    BadRequest,
    /// The handler panicked.
    HandlerPanicked,
    /// The handler did not finish before the request's deadline.
    DeadlineExceeded,
    /// A frame exceeded the receiver's maximum frame length.
    FrameTooLarge,
    /// The peer broke the protocol (bad frame, unexpected kind, duplicate request id).
    ProtocolViolation,
    /// The server is over one of its limits and refused the work.
    Overloaded,
    /// The server is shutting down and accepts no new calls.
    ShuttingDown,
    /// The server could not encode the handler's result.
    EncodeFailed,
    /// The connection was silent past the idle timeout and did not answer a ping.
    IdleTimeout,
    /// The server's authorisation hook (or another layer) refused this call for this peer.
    PermissionDenied,
    /// A server layer failed the call with an error wirecall does not classify.
    LayerFailed,
    /// A code this version does not know.
    Other(u16),
}

impl ErrorCode {
    /// The wire value.
    pub const fn to_u16(self) -> u16 {
        match self {
            Self::UnknownMethod => 1,
            Self::BadRequest => 2,
            Self::HandlerPanicked => 3,
            Self::DeadlineExceeded => 4,
            Self::FrameTooLarge => 5,
            Self::ProtocolViolation => 6,
            Self::Overloaded => 7,
            Self::ShuttingDown => 8,
            Self::EncodeFailed => 9,
            Self::IdleTimeout => 10,
            Self::PermissionDenied => 11,
            Self::LayerFailed => 12,
            Self::Other(code) => code,
        }
    }

    /// Parses a wire value; unknown values are kept as [`ErrorCode::Other`].
    pub const fn from_u16(code: u16) -> Self {
        match code {
            1 => Self::UnknownMethod,
            2 => Self::BadRequest,
            3 => Self::HandlerPanicked,
            4 => Self::DeadlineExceeded,
            5 => Self::FrameTooLarge,
            6 => Self::ProtocolViolation,
            7 => Self::Overloaded,
            8 => Self::ShuttingDown,
            9 => Self::EncodeFailed,
            10 => Self::IdleTimeout,
            11 => Self::PermissionDenied,
            12 => Self::LayerFailed,
            other => Self::Other(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn every_code_round_trips_and_unknown_codes_are_kept() {
        for code in 0..=u16::MAX {
            assert_eq!(ErrorCode::from_u16(code).to_u16(), code);
        }
        assert_eq!(ErrorCode::from_u16(99), ErrorCode::Other(99));
    }
}
