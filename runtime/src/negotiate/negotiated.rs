//! What a handshake settled for a connection, on either side.

use crate::codec::Codec;
use crate::compression::Algorithm;

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
    /// The compression both sides may use on this connection (version 5); `None`: frames
    /// travel uncompressed.
    pub(crate) compression: Option<Algorithm>,
}

impl Negotiated {
    /// The largest frame this side may send: its own limit `own` (which bounds both
    /// directions), lowered to the peer's announced one.
    pub fn send_limit(&self, own: u32) -> u32 {
        self.peer_max_frame_len.map_or(own, |peer| peer.min(own))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_peer_limit(peer_max_frame_len: Option<u32>) -> Negotiated {
        Negotiated {
            codec: Codec::Json,
            version: 2,
            peer_max_frame_len,
            early_calls: false,
            compression: None,
        }
    }

    #[test]
    fn the_send_limit_is_the_lower_of_both_limits() {
        assert_eq!(with_peer_limit(Some(4096)).send_limit(1 << 20), 4096);
        assert_eq!(with_peer_limit(Some(1 << 24)).send_limit(1 << 20), 1 << 20);
    }

    #[test]
    fn a_peer_that_announced_no_limit_gets_our_own() {
        assert_eq!(with_peer_limit(None).send_limit(1 << 20), 1 << 20);
    }
}
