//! Negotiated compression (book: "Compression (version 5)").
//!
//! A client lists the algorithms it can decompress in its hello, the server picks one, and
//! from then on each side compresses the payloads of the frames it sends when that pays:
//! large enough ([`Compression::min_size`]) and shrinking by enough. A compressed frame sets
//! [`FLAG_COMPRESSED`](crate::wire::FLAG_COMPRESSED) and carries its uncompressed length
//! first, so the receiver bounds the allocation by its frame limit before it decompresses.
//!
//! Layout: `config.rs` is what a builder configures and how a side offers and chooses;
//! `algorithm.rs` the algorithms this build has; `compressor.rs` compresses a frame in place,
//! backing off on incompressible traffic; `decompress.rs` checks and decompresses a received
//! payload; `zstd_frames.rs` (feature `zstd`) holds the per-thread zstd contexts; `error.rs`
//! what a received compressed frame can get wrong.

mod algorithm;
mod compressor;
mod config;
mod decompress;
mod error;
#[cfg(feature = "zstd")]
mod zstd_frames;

pub(crate) use algorithm::Algorithm;
pub(crate) use compressor::FrameCompressor;
pub use config::Compression;
pub(crate) use decompress::decompress_payload;
pub use error::DecompressError;
