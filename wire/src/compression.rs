//! Compression (book: "Compression (version 5)"): the algorithm ids a hello's `compression`
//! extension lists, and the layout of a compressed frame's payload.
//!
//! ```text
//! compressed payload:  uncompressed_len:u32 BE  compressed:[u8]  (one zstd frame)
//! ```

/// Algorithm id 1: zstd (RFC 8878). The only algorithm this version defines.
pub const COMPRESSION_ZSTD: u8 = 1;

/// The most algorithm ids a client hello's `compression` extension may list.
pub const MAX_COMPRESSION_ALGORITHMS: usize = 8;

/// Bytes before a compressed payload's compressed data: its uncompressed length, a `u32` BE.
/// The receiver checks it against its frame limit before it allocates anything.
pub const UNCOMPRESSED_LEN: usize = 4;
