//! [`FrameError`]: what can go wrong reading or writing frames.

use crate::wire::HEADER_LEN;

/// Errors of the frame layer. Each one ends the connection: after it the byte stream can no
/// longer be trusted to be aligned on frame boundaries.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The length prefix is larger than the configured maximum.
    #[error("frame of {len} bytes exceeds the maximum of {max} bytes")]
    TooLarge {
        /// The announced length.
        len: u64,
        /// The configured maximum.
        max: u32,
    },
    /// The length prefix is too small to hold a header.
    #[error("frame length {len} is shorter than the {HEADER_LEN}-byte header")]
    TooShort {
        /// The announced length.
        len: u32,
    },
    /// The kind byte is not one of [`FrameKind`](crate::wire::FrameKind).
    #[error("unknown frame kind {0}")]
    UnknownKind(u8),
    /// The flags byte has a bit this connection does not allow (version 1 allows none,
    /// version 2 only [`FLAG_METADATA`](crate::wire::FLAG_METADATA)).
    #[error("frame flags {0:#04x} have a bit this connection does not allow")]
    ReservedFlags(u8),
    /// A frame set the compressed flag and was not acceptable (book: "Compression").
    #[error("bad compressed frame: {0}")]
    Decompress(#[from] crate::compression::DecompressError),
    /// Reading or writing the underlying stream failed.
    #[error("transport i/o failed: {0}")]
    Io(std::io::Error),
}

// The message shows the i/o error, so it is not also a `source()` (see `error.rs`).
impl From<std::io::Error> for FrameError {
    fn from(error: std::io::Error) -> Self {
        Self::Io(error)
    }
}
