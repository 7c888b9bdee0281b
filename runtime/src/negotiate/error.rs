//! What can go wrong in a handshake, on either side.

use super::codec_list::CodecList;
use crate::wire::MAX_CODECS;

/// Errors of the handshake.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NegotiationError {
    /// No codec is both offered by the client and allowed by the server.
    #[error("no common codec: the client offered {offered}, the server supports {supported}")]
    NoCommonCodec {
        /// The client's list, in its preference order.
        offered: CodecList,
        /// The server's list, in its preference order.
        supported: CodecList,
    },
    /// The two sides speak different protocol versions.
    #[error("protocol version mismatch: the client speaks {client}, the server {server}")]
    UnsupportedVersion {
        /// The client's version.
        client: u8,
        /// The server's version.
        server: u8,
    },
    /// The peer's first bytes are not `WCAL`: it is not a wirecall peer.
    #[error("the peer is not a wirecall endpoint (first bytes {0:02x?}, expected \"WCAL\")")]
    BadMagic([u8; 4]),
    /// The hello lists no codec, or more than [`MAX_CODECS`].
    #[error("the hello lists {0} codecs; 1 to {MAX_CODECS} are allowed")]
    BadCodecCount(u8),
    /// The hello lists a codec id twice.
    #[error("the hello lists codec id {0} twice")]
    DuplicateCodec(u8),
    /// The hello's extension block (protocol version 2) is malformed.
    #[error("the hello's extensions are malformed: {0}")]
    BadExtensions(String),
    /// The server named a codec the client did not offer, or an unknown status.
    #[error("the server's hello is invalid: {0}")]
    BadServerHello(String),
    /// The server said the client hello was malformed.
    #[error("the server rejected the hello as malformed")]
    RejectedAsMalformed,
    /// The server is at its connection limit or shutting down.
    #[error("the server is busy (connection limit reached or shutting down); retry later")]
    Busy,
    /// The client sent early calls in its first codec, which the server does not allow; the
    /// early calls were not run. A channel dials again without early calls and sends them
    /// again, so this surfaces only where that cannot happen.
    #[error("early calls refused: the server does not allow {codec}, the codec they were sent in; it supports {supported}")]
    EarlyCallsRefused {
        /// The codec the early calls were encoded in (the first one offered).
        codec: CodecList,
        /// The server's list, in its preference order.
        supported: CodecList,
    },
    /// The server requires a token and refused the one sent (wrong, missing, or too many
    /// failures from this address recently). The message never contains the token.
    #[error("authentication failed: the server refused the token (wrong or missing token, or too many failed attempts from this address)")]
    AuthenticationFailed,
    /// The peer answered with a TLS record: it expects TLS and this side spoke plain TCP.
    #[error("the peer speaks TLS: configure TLS on this side too (first bytes {0:02x?})")]
    PeerSpeaksTls([u8; 4]),
    /// The client was configured to offer no codec at all.
    #[error("no codec to offer: enable at least one codec feature and list at least one codec")]
    NothingToOffer,
    /// The handshake did not complete in time.
    #[error("the handshake did not complete within the timeout")]
    TimedOut,
    /// The connection failed during the handshake.
    #[error("i/o during the handshake: {0}")]
    Io(std::io::Error),
}

// The message shows the i/o error, so it is not also a `source()` (see `error.rs`).
impl From<std::io::Error> for NegotiationError {
    fn from(error: std::io::Error) -> Self {
        Self::Io(error)
    }
}

impl NegotiationError {
    /// An equal error, for each of the calls that a failed early hello fails (an i/o error
    /// keeps its kind and message).
    pub(crate) fn duplicate(&self) -> Self {
        match self {
            Self::NoCommonCodec { offered, supported } => Self::NoCommonCodec {
                offered: offered.clone(),
                supported: supported.clone(),
            },
            Self::UnsupportedVersion { client, server } => Self::UnsupportedVersion {
                client: *client,
                server: *server,
            },
            Self::BadMagic(magic) => Self::BadMagic(*magic),
            Self::BadCodecCount(count) => Self::BadCodecCount(*count),
            Self::DuplicateCodec(id) => Self::DuplicateCodec(*id),
            Self::BadExtensions(why) => Self::BadExtensions(why.clone()),
            Self::BadServerHello(why) => Self::BadServerHello(why.clone()),
            Self::RejectedAsMalformed => Self::RejectedAsMalformed,
            Self::Busy => Self::Busy,
            Self::EarlyCallsRefused { codec, supported } => Self::EarlyCallsRefused {
                codec: codec.clone(),
                supported: supported.clone(),
            },
            Self::AuthenticationFailed => Self::AuthenticationFailed,
            Self::PeerSpeaksTls(magic) => Self::PeerSpeaksTls(*magic),
            Self::NothingToOffer => Self::NothingToOffer,
            Self::TimedOut => Self::TimedOut,
            Self::Io(error) => Self::Io(std::io::Error::new(error.kind(), error.to_string())),
        }
    }
}
