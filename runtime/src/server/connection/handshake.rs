//! The server side of the hello, bounded by the handshake deadline.

use std::net::SocketAddr;

use tokio::time::Instant;

use crate::negotiate::{server_handshake, Negotiated, NegotiationError, ServerHandshake};
use crate::server::metrics;
use crate::server::shared::Shared;
use crate::transport::BoxedStream;

/// Runs the server side of the hello within the handshake deadline; `None` when the
/// connection is to be dropped.
pub(super) async fn handshake(
    stream: &mut BoxedStream,
    peer: Option<SocketAddr>,
    deadline: Instant,
    shared: &Shared,
) -> Option<Negotiated> {
    let config = &shared.config;
    let ip = peer.map(|addr| addr.ip());
    let authenticate = |token: &[u8]| shared.authenticate(ip, token);
    let reveal_codecs = shared.token_check.is_none();
    let offer = ServerHandshake {
        supported: &config.codecs,
        preference: config.preference,
        max_version: config.max_protocol_version,
        reveal_codecs,
        max_frame_len: config.max_frame_len,
        compression: config.compression,
    };
    let handshake = server_handshake(stream, offer, authenticate);
    tokio::select! {
        outcome = tokio::time::timeout_at(deadline, handshake) => match outcome {
            Ok(Ok(negotiated)) => Some(negotiated),
            Ok(Err(NegotiationError::AuthenticationFailed)) => {
                tracing::warn!(?peer, "authentication failed");
                metrics::handshake_failed("authentication");
                None
            }
            Ok(Err(err)) => {
                tracing::debug!(?peer, %err, "handshake failed");
                metrics::handshake_failed(metrics::handshake_reason(&err));
                None
            }
            Err(_) => {
                tracing::debug!(?peer, "handshake timed out");
                metrics::handshake_failed("timeout");
                None
            }
        },
        _ = shared.shutdown.cancelled() => None,
    }
}
