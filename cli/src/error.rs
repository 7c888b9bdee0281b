//! The CLI's errors and the exit code of each.

use wirecall::Error;

/// Why a command failed; [`exit_code`](CliError::exit_code) is documented in `--help`.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Input the user gave is unusable.
    #[error("{0}")]
    Input(String),
    /// Connecting (or the handshake) failed.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        /// The address.
        addr: String,
        /// Why.
        source: Error,
    },
    /// A call failed with a wirecall error.
    #[error("{}", describe_call_error(.0))]
    Call(Error),
    /// A server stream failed after it was opened (the server's error, the deadline of the
    /// whole stream, the connection's end).
    #[error("{}", describe_stream_failure(.target, *.items, .source))]
    StreamFailed {
        /// `Service.method`.
        target: String,
        /// How many items were printed before it failed.
        items: u64,
        /// Why.
        source: Error,
    },
    /// The method returned its application error (already printed).
    #[error("{method} returned an error")]
    Application {
        /// `Service.method`.
        method: String,
    },
    /// The reader of stdout went away (`| head`, `| grep -q`): not a failure.
    #[error("stdout was closed")]
    StdoutClosed,
    /// Writing to stdout failed for another reason (a full disk, say).
    #[error("cannot write to stdout: {0}")]
    Output(std::io::Error),
}

impl CliError {
    /// The process exit code.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Input(_) => 1,
            Self::Connect { .. } => 3,
            Self::Call(_) | Self::StreamFailed { .. } => 4,
            Self::Application { .. } => 5,
            Self::StdoutClosed => 0,
            Self::Output(_) => 1,
        }
    }
}

/// `error UnknownMethod (code 1): ...`: the wire code first, for scripts and for the
/// wire protocol chapter's table.
fn describe_call_error(error: &Error) -> String {
    match error.code() {
        Some(code) => format!("error {code:?} (code {}): {error}", code.to_u16()),
        None => format!("call failed: {error}"),
    }
}

/// `UserFeed.list_users failed after 3 items: error DeadlineExceeded (code 4): ...`: how far
/// the stream got, then the error as a call's.
fn describe_stream_failure(target: &str, items: u64, error: &Error) -> String {
    let progress = match items {
        0 => "before its first item".to_owned(),
        1 => "after 1 item".to_owned(),
        n => format!("after {n} items"),
    };
    format!(
        "the stream of {target} failed {progress}: {}",
        describe_call_error(error)
    )
}

impl From<Error> for CliError {
    fn from(error: Error) -> Self {
        Self::Call(error)
    }
}
