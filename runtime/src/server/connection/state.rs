//! What every call task of one connection shares: the connection's codec, version and send
//! limit, its writer, its running calls and its caller.

use std::sync::Arc;

use super::calls::Calls;
use crate::codec::Codec;
use crate::compression::FrameCompressor;
use crate::server::identity::PeerIdentity;
use crate::transport::writer::FrameSink;

/// What every call task of one connection needs.
pub(super) struct ConnectionState {
    pub(super) codec: Codec,
    /// The negotiated protocol version (2: metadata may travel).
    pub(super) version: u8,
    pub(super) sink: FrameSink,
    pub(super) calls: Arc<Calls>,
    /// The largest frame this connection may send: the server's `max_frame_len`, lowered to
    /// the client's announced limit (version 2).
    pub(super) send_limit: u32,
    /// Compresses replies and stream items, when the connection negotiated compression.
    pub(super) compressor: Option<Arc<FrameCompressor>>,
    /// Who is calling, for the authorisation hook and the handlers' call context.
    pub(super) identity: Arc<PeerIdentity>,
}
