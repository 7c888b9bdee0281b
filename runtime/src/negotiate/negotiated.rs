//! What a handshake settled for a connection, on either side.

use crate::codec::Codec;

/// What a handshake settled for a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// The connection's codec.
    pub codec: Codec,
    /// The connection's protocol version: the lower of the two sides' versions.
    pub version: u8,
    /// The largest frame the peer accepts, as its hello announced (version 2); `None` when it
    /// announced none.
    pub peer_max_frame_len: Option<u32>,
    /// The peer's hello carried the early-calls extension: on the client, the server
    /// understands early calls; on the server, early frames follow the client's hello.
    pub early_calls: bool,
}

impl Negotiated {
    /// The largest frame this side may send: its own limit `own` (which bounds both
    /// directions), lowered to the peer's announced one.
    pub fn send_limit(&self, own: u32) -> u32 {
        self.peer_max_frame_len.map_or(own, |peer| peer.min(own))
    }
}
