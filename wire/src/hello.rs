//! The handshake's fields (book: "Handshake").
//!
//! ```text
//! client hello:  "WCAL"  version:u8  count:u8 (1..=16)  codec ids:[u8; count]
//!                token_len:u8  token:[u8; token_len]
//!                (version >= 2) extensions_len:u16 BE  extensions:[u8; extensions_len]
//! server hello:  "WCAL"  version:u8  status:u8  codec:u8  count:u8 (0..=16)  codec ids:[u8; count]
//!                (version >= 2) extensions_len:u16 BE  extensions:[u8; extensions_len]
//! extension:     type:u8  len:u8  value:[u8; len]
//! ```

/// First four bytes of both hellos.
pub const MAGIC: [u8; 4] = *b"WCAL";
/// The newest protocol version this build speaks. Version 2 adds call metadata (frame flag
/// [`FLAG_METADATA`](crate::FLAG_METADATA)) and the hellos' extension block; version 3 adds
/// stream calls (frame kinds `Open`, `Item`, `End` and `Credit`); version 4 a stream's reply
/// metadata and trailers (frame kind `Head`, and the metadata flag on the server's `End`);
/// version 5 negotiated compression (hello extension [`EXTENSION_COMPRESSION`], frame flag
/// [`FLAG_COMPRESSED`](crate::FLAG_COMPRESSED)); version 6 writes byte strings in JSON as
/// base64 text instead of arrays of numbers (no new bytes in the framing).
pub const PROTOCOL_VERSION: u8 = 6;

/// The oldest protocol version that carries stream calls.
pub const STREAMS_SINCE_VERSION: u8 = 3;
/// The oldest protocol version that carries a stream's reply metadata and trailers.
pub const STREAM_METADATA_SINCE_VERSION: u8 = 4;
/// The oldest protocol version that negotiates compression.
pub const COMPRESSION_SINCE_VERSION: u8 = 5;
/// The oldest protocol version whose JSON writes byte strings as base64 text; older
/// connections carry them as arrays of numbers.
pub const JSON_BASE64_SINCE_VERSION: u8 = 6;
/// The oldest protocol version this build still speaks.
pub const MIN_PROTOCOL_VERSION: u8 = 1;
/// The most codec ids a hello may list.
pub const MAX_CODECS: usize = 16;
/// The longest token a client hello can carry (its length travels in one byte).
pub const MAX_TOKEN_LEN: usize = 255;
/// The longest extension block a hello may carry; a longer one is malformed.
pub const MAX_EXTENSIONS_LEN: usize = 1024;

/// Extension type 1: the largest frame (its length prefix) the sender of the hello accepts,
/// a `u32` BE. The peer sends no larger frame: a reply that would be larger fails its call
/// with `FrameTooLarge` instead of closing the connection.
pub const EXTENSION_MAX_FRAME_LEN: u8 = 1;

/// Extension type 2: early calls, with an empty value. In a server hello (every `Accepted`
/// hello of version 2 or later from a server that knows it): "I understand early calls". In
/// a client hello: "Request and Notify frames encoded in the first codec of my list follow
/// this hello without waiting for your answer". A server that receives it chooses that codec
/// if it allows it, and otherwise answers [`HelloStatus::EarlyCallsRefused`] and reads no
/// frame.
pub const EXTENSION_EARLY_CALLS: u8 = 2;

/// Extension type 3 (version 5): compression. In a client hello: the algorithm ids it can
/// decompress, most preferred first (1 to
/// [`MAX_COMPRESSION_ALGORITHMS`](crate::MAX_COMPRESSION_ALGORITHMS), all different). In an
/// `Accepted` server hello of version 5 or later: exactly one id, the algorithm both sides
/// may compress frames with on this connection; absent, nothing is compressed.
pub const EXTENSION_COMPRESSION: u8 = 3;

/// The server's verdict in its hello.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum HelloStatus {
    /// A codec was chosen; frames follow.
    Accepted = 0,
    /// None of the offered codecs is allowed by the server.
    NoCommonCodec = 1,
    /// The client speaks another protocol version.
    UnsupportedVersion = 2,
    /// The client hello was malformed (bad magic, a codec count of 0 or over 16, a codec
    /// listed twice, a bad extension block).
    Malformed = 3,
    /// The server is at its connection limit or shutting down.
    Busy = 4,
    /// The server requires a token and the client sent a wrong one, none, or too many wrong
    /// ones recently.
    AuthenticationFailed = 5,
    /// The client hello announced early calls, and the server does not allow the first codec
    /// of its list, the one the early frames are encoded in. The early frames were not run;
    /// the client dials again without early calls.
    EarlyCallsRefused = 6,
}

impl HelloStatus {
    /// Parses a wire value.
    pub const fn from_u8(value: u8) -> Option<Self> {
        Some(match value {
            0 => Self::Accepted,
            1 => Self::NoCommonCodec,
            2 => Self::UnsupportedVersion,
            3 => Self::Malformed,
            4 => Self::Busy,
            5 => Self::AuthenticationFailed,
            6 => Self::EarlyCallsRefused,
            _ => return None,
        })
    }
}
