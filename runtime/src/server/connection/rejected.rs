//! Why a call was not started: the answer of both the admission of a call and the queueing
//! of its reply, which the read loop turns into how the connection ends.

/// Why a call was not started.
pub(super) enum CallRejected {
    /// The peer broke the protocol (a request id already in flight).
    Violation(String),
    /// The connection can no longer be written to.
    SinkClosed,
}
