//! Writing results to stdout without panicking when the reader goes away.
//!
//! `println!` panics when stdout is a closed pipe, as in `wirecall list ADDR | head -1`
//! or `| grep -q`. A shell tool should stop quietly there instead, so every result line
//! goes through [`out!`], which turns a write error into a [`CliError`].

use std::io;

use crate::error::CliError;

/// `println!` to stdout, returning `Result<(), CliError>` instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        writeln!(::std::io::stdout().lock(), $($arg)*).map_err($crate::output::stdout_error)
    }};
}
pub(crate) use out;

/// A failed write to stdout: a closed pipe ends the command quietly, anything else is
/// reported.
pub fn stdout_error(error: io::Error) -> CliError {
    if error.kind() == io::ErrorKind::BrokenPipe {
        CliError::StdoutClosed
    } else {
        CliError::Output(error)
    }
}
