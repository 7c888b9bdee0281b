//! [`Closed`]: why a connection's table of waiting calls closed, and the error each call
//! then gets: a call that was sent may have run, one that was not did not.

use crate::error::{Error, ErrorCode};

/// Why the table closed.
pub(crate) enum Closed {
    /// The connection ended: calls fail with [`Error::ConnectionClosed`], this reason and,
    /// when the server said why before closing, the code of its connection-level `Error`
    /// frame.
    Ended {
        reason: String,
        code: Option<ErrorCode>,
    },
    /// The server refused (or garbled) its answer to a hello sent with early calls: calls
    /// fail with the error a connect would have returned.
    Hello(Error),
}

impl Closed {
    /// The connection ended for `reason`, the server having said `code` (if anything).
    pub(crate) fn new(reason: impl Into<String>, code: Option<ErrorCode>) -> Self {
        Self::Ended {
            reason: reason.into(),
            code,
        }
    }

    /// The error of a call that this closing ended.
    pub(super) fn error(&self) -> Error {
        match self {
            Self::Ended { reason, code } => Error::ConnectionClosed {
                reason: reason.clone(),
                code: *code,
            },
            Self::Hello(Error::Negotiation(error)) => Error::Negotiation(error.duplicate()),
            Self::Hello(Error::Tls(error)) => {
                Error::Tls(std::io::Error::new(error.kind(), error.to_string()))
            }
            Self::Hello(other) => Error::closed(other.to_string()),
        }
    }

    /// The error of a call that found the connection closed before it was sent: it never
    /// left this side.
    pub(super) fn unsent_error(&self) -> Error {
        match self {
            Self::Ended { reason, .. } => Error::unsent(format!("the connection closed: {reason}")),
            Self::Hello(_) => self.error(),
        }
    }

    pub(super) fn reason(&self) -> String {
        match self {
            Self::Ended { reason, .. } => reason.clone(),
            Self::Hello(error) => error.to_string(),
        }
    }
}
