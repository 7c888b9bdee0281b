//! The wirecall wire vocabulary: every number the protocol puts on the wire, and the method-id
//! hash, with no I/O and no dependencies; and the text form of policy durations, which the
//! macros and the runtime must read alike for the same reason.
//!
//! The runtime frames, negotiates and reports errors with these definitions and the
//! procedural macros compute method ids with [`method_hash`], so both sides of the crate
//! boundary share one copy. The normative description is the wire-protocol chapter of the
//! book; each item here names the section it implements.

#![no_std]

mod codec_id;
mod compression;
mod duration;
mod error_code;
mod frame;
mod hello;
mod method_id;

pub use codec_id::{CODEC_JSON, CODEC_MSGPACK, CODEC_PROTOBUF};
pub use compression::{COMPRESSION_ZSTD, MAX_COMPRESSION_ALGORITHMS, UNCOMPRESSED_LEN};
pub use duration::{parse_duration, DurationError};
pub use error_code::ErrorCode;
pub use frame::{
    FrameKind, CREDIT_LEN, DEFAULT_MAX_FRAME_LEN, FLAG_COMPRESSED, FLAG_METADATA, FRAME_OVERHEAD,
    HEADER_LEN, LENGTH_PREFIX_LEN, MAX_STREAM_CREDIT,
};
pub use hello::{
    HelloStatus, COMPRESSION_SINCE_VERSION, EXTENSION_COMPRESSION, EXTENSION_EARLY_CALLS,
    EXTENSION_MAX_FRAME_LEN, JSON_BASE64_SINCE_VERSION, MAGIC, MAX_CODECS, MAX_EXTENSIONS_LEN,
    MAX_TOKEN_LEN, MIN_PROTOCOL_VERSION, PROTOCOL_VERSION, STREAMS_SINCE_VERSION,
    STREAM_METADATA_SINCE_VERSION,
};
pub use method_id::{fnv1a, method_hash};
