//! What the authorisation hook sees: who is calling, and what they call.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::method::MethodId;

/// The caller of a connection, as far as the server could establish it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PeerIdentity {
    /// The peer's address (`None` on a Unix socket).
    pub peer_addr: Option<SocketAddr>,
    /// Whether the peer presented the server's token (false when the server requires none).
    pub token_authenticated: bool,
    /// The DER encoding of the peer's verified TLS client certificate (the leaf), when the
    /// server requires client certificates.
    pub tls_client_certificate: Option<Vec<u8>>,
}

/// The call being authorised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallTarget<'a> {
    /// The service's wire name.
    pub service: &'a str,
    /// The method's name.
    pub method: &'a str,
    /// The method's wire id.
    pub method_id: MethodId,
}

/// The hook set with [`ServerBuilder::authorize`](super::ServerBuilder::authorize).
pub(crate) type Authorize = Arc<dyn Fn(&PeerIdentity, &CallTarget<'_>) -> bool + Send + Sync>;
