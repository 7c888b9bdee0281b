//! The CLI's errors and the exit code of each.

use wirecall::policy::PolicyError;
use wirecall::Error;

/// Why a command failed; [`exit_code`](CliError::exit_code) is documented in `--help`.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Input the user gave is unusable.
    #[error("{0}")]
    Input(String),
    /// A run-time policy (the file named by `WIRECALL_POLICY_FILE`, or `WIRECALL_POLICY`)
    /// cannot be read; worded as a Rust client's `connect` words it.
    #[error("invalid configuration: {0}")]
    Policy(#[from] PolicyError),
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
    /// A line of an upload is not one JSON value. The call is cancelled rather than ended
    /// there, so that the server does not answer for the lines before it as if they were
    /// the whole upload.
    #[error(
        "line {line} of {origin} is not JSON ({}); the upload of {target} takes one JSON \
         value per line, each a {item_type}",
        describe_json_error(.source)
    )]
    UploadNotJson {
        /// Where the upload was read from: `standard input`, or the file's path.
        origin: String,
        /// The line's number, from 1, blank lines included.
        line: u64,
        /// `Service.method`.
        target: String,
        /// The type of one uploaded item, as `describe` shows it.
        item_type: String,
        /// What the JSON parser said.
        source: serde_json::Error,
    },
    /// A line of an upload could not be read (bytes that are not UTF-8, a failing device);
    /// the call is cancelled, as for [`UploadNotJson`](Self::UploadNotJson).
    #[error("cannot read line {line} of {origin}, the upload of {target}: {source}")]
    UploadUnreadable {
        /// Where the upload was read from.
        origin: String,
        /// The line's number, from 1.
        line: u64,
        /// `Service.method`.
        target: String,
        /// Why.
        source: std::io::Error,
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
            Self::Input(_)
            | Self::Policy(_)
            | Self::UploadNotJson { .. }
            | Self::UploadUnreadable { .. } => 1,
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

/// `expected value at column 1`: serde_json's message without its `line 1`, which counts
/// the lines of the one line it was given and would contradict the upload's line number.
fn describe_json_error(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    match text.strip_suffix(&position) {
        Some(message) => format!("{message} at column {}", error.column()),
        None => text,
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
