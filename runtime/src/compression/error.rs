//! [`DecompressError`]: what a received compressed frame can get wrong.

/// A received frame claimed to be compressed and was not acceptable. Each one is a protocol
/// violation that closes the connection: a peer whose compressor produces such frames cannot
/// be trusted with the rest of the stream.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecompressError {
    /// The frame set the compressed flag on a connection that negotiated no compression.
    #[error("the peer compressed a frame on a connection that negotiated no compression")]
    NotNegotiated,
    /// The frame's kind carries no codec payload and may not be compressed.
    #[error("the peer compressed a frame of kind {0}, which may not be compressed")]
    KindNotCompressible(u8),
    /// The payload is too short to hold the uncompressed length.
    #[error("a compressed payload of {0} bytes is too short to hold its uncompressed length")]
    Truncated(usize),
    /// The announced uncompressed frame is over this side's frame limit (a compression bomb,
    /// or a peer ignoring the announced limit).
    #[error(
        "a compressed frame announces {len} bytes uncompressed, over this side's limit of {max} \
         bytes (max_frame_len)"
    )]
    TooLarge {
        /// The frame's length once decompressed (header included).
        len: u64,
        /// This side's frame limit.
        max: u32,
    },
    /// The data is not one valid frame of the algorithm, or decompresses to more than it
    /// announced.
    #[error("the compressed data is corrupt: {0}")]
    Corrupt(String),
    /// The data decompressed to fewer bytes than announced.
    #[error("the compressed data decompressed to {actual} bytes, not the {announced} announced")]
    SizeMismatch {
        /// The announced uncompressed length.
        announced: usize,
        /// What the data decompressed to.
        actual: usize,
    },
}
