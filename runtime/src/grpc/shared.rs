//! What every call of one gRPC connection shares: the server's state, the door, and who is
//! calling.

use std::sync::Arc;

use super::door::GrpcDoor;
use crate::server::identity::PeerIdentity;
use crate::server::shared::Shared;

/// What every call of one gRPC connection shares.
pub(crate) struct GrpcConnection {
    pub(crate) shared: Arc<Shared>,
    pub(crate) door: Arc<GrpcDoor>,
    /// The peer, as calls without a token see it.
    pub(crate) identity: Arc<PeerIdentity>,
    /// The peer, as calls that presented the server's token see it.
    pub(crate) authenticated: Arc<PeerIdentity>,
}
