//! One gRPC connection: HTTP/2 (the h2 crate) over an accepted stream, each request served
//! by its own task, closed gracefully at shutdown or after the idle timeout, and dropped when
//! the caller stops answering pings while calls run.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::call;
use super::door::GrpcDoor;
use crate::server::identity::PeerIdentity;
use crate::server::shared::Shared;

/// The largest header block a caller may send (metadata included): gRPC's usual 16 KiB.
const GRPC_MAX_HEADER_LIST_SIZE: u32 = 16 * 1024;

/// Each call's HTTP/2 receive window, and the connection's: what a caller may send ahead of
/// the handler. An upload is read as the handler takes its items, so this is what one
/// upload can make the server buffer.
const STREAM_WINDOW: u32 = 1024 * 1024;
const CONNECTION_WINDOW: u32 = 4 * 1024 * 1024;

/// What every call of one gRPC connection shares.
pub(crate) struct GrpcConnection {
    pub(crate) shared: Arc<Shared>,
    pub(crate) door: Arc<GrpcDoor>,
    /// The peer, as calls without a token see it.
    pub(crate) identity: Arc<PeerIdentity>,
    /// The peer, as calls that presented the server's token see it.
    pub(crate) authenticated: Arc<PeerIdentity>,
}

/// Serves a gRPC connection on `io` until the caller leaves, it is idle past the server's
/// idle timeout, or the server shuts down. `deadline` bounds the HTTP/2 handshake.
pub(crate) async fn serve_connection<T>(
    io: T,
    identity: PeerIdentity,
    deadline: Instant,
    shared: Arc<Shared>,
    door: Arc<GrpcDoor>,
) where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let config = &shared.config;
    let mut builder = h2::server::Builder::new();
    builder
        .max_concurrent_streams(
            u32::try_from(config.max_in_flight_per_connection).unwrap_or(u32::MAX),
        )
        .max_header_list_size(GRPC_MAX_HEADER_LIST_SIZE)
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW);
    let mut connection = match tokio::time::timeout_at(deadline, builder.handshake(io)).await {
        Ok(Ok(connection)) => connection,
        Ok(Err(err)) => {
            tracing::debug!(peer = ?identity.peer_addr, %err, "gRPC handshake failed");
            crate::server::metrics::handshake_failed("grpc");
            return;
        }
        Err(_) => {
            crate::server::metrics::handshake_failed("timeout");
            return;
        }
    };
    tracing::debug!(peer = ?identity.peer_addr, "gRPC connection accepted");
    shared.metrics.connections_total.increment(1);
    shared.metrics.connections.increment(1.0);
    let idle_timeout = config.idle_timeout;
    let authenticated = PeerIdentity {
        token_authenticated: true,
        ..identity.clone()
    };
    let calls = Arc::new(GrpcConnection {
        shared: Arc::clone(&shared),
        door,
        identity: Arc::new(identity),
        authenticated: Arc::new(authenticated),
    });
    let mut idle_at = Instant::now() + idle_timeout;
    let mut closing = false;
    // While calls run, a ping every `keepalive_while_serving`: a caller that vanished
    // without a word (a host gone, a partition) leaves its calls waiting on a window that
    // never opens; no pong within `ping_timeout` drops the connection and them.
    let mut ping_pong = connection.ping_pong();
    let keepalive = config.keepalive_while_serving;
    let mut next_ping = Instant::now() + keepalive;
    let mut pong_due: Option<Instant> = None;
    loop {
        let pinging = ping_pong.is_some() && pong_due.is_none() && connection.has_streams();
        tokio::select! {
            accepted = connection.accept() => match accepted {
                Some(Ok((request, respond))) => {
                    idle_at = Instant::now() + idle_timeout;
                    shared.tracker.spawn(call::serve(Arc::clone(&calls), request, respond));
                }
                Some(Err(err)) => {
                    tracing::debug!(%err, "gRPC connection failed");
                    break;
                }
                None => break,
            },
            _ = tokio::time::sleep_until(next_ping), if pinging => {
                if let Some(ping_pong) = &mut ping_pong {
                    if ping_pong.send_ping(h2::Ping::opaque()).is_ok() {
                        pong_due = Some(Instant::now() + config.ping_timeout);
                    }
                }
            }
            pong = pong(&mut ping_pong), if pong_due.is_some() => {
                pong_due = None;
                next_ping = Instant::now() + keepalive;
                if pong.is_err() {
                    break;
                }
            }
            _ = tokio::time::sleep_until(pong_due.unwrap_or(idle_at)), if pong_due.is_some() => {
                tracing::debug!("gRPC caller did not answer a ping; closing");
                break;
            }
            _ = shared.shutdown.cancelled(), if !closing => {
                closing = true;
                connection.graceful_shutdown();
            }
            _ = tokio::time::sleep_until(idle_at), if !closing => {
                if connection.has_streams() {
                    idle_at = Instant::now() + idle_timeout.max(Duration::from_secs(1));
                } else {
                    tracing::debug!("gRPC connection idle; closing");
                    closing = true;
                    connection.graceful_shutdown();
                }
            }
            _ = shared.force.cancelled() => break,
        }
    }
    shared.metrics.connections.decrement(1.0);
}

/// The pong of the ping in flight.
async fn pong(ping_pong: &mut Option<h2::PingPong>) -> Result<(), h2::Error> {
    match ping_pong {
        Some(ping_pong) => std::future::poll_fn(|cx| ping_pong.poll_pong(cx))
            .await
            .map(drop),
        None => std::future::pending().await,
    }
}
