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
            Self::Call(_) => 4,
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

impl From<Error> for CliError {
    fn from(error: Error) -> Self {
        Self::Call(error)
    }
}
