//! [`PolicyError`]: a run-time policy (a file, `WIRECALL_POLICY`, a target given in code) that
//! cannot be read.

use std::path::PathBuf;

/// Why run-time policies could not be read. Each message says where and what to write.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// An entry of a policy text is malformed.
    #[error("{source_name}, line {line}: {message}")]
    Syntax {
        /// Where the text came from: a file's path, or `WIRECALL_POLICY`.
        source_name: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong, and what to write instead.
        message: String,
    },
    /// A target is not `Service.method` or `Service.*`.
    #[error("`{target}` is not a policy target; write `Service.method` or `Service.*`")]
    Target {
        /// The target given.
        target: String,
    },
    /// A policy file could not be read.
    #[error("could not read the policy file {path}: {cause}; check WIRECALL_POLICY_FILE")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        cause: std::io::Error,
    },
}
