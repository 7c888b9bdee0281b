//! One gRPC connection: HTTP/2 (the h2 crate) over an accepted stream, each request served
//! by its own task, closed gracefully at shutdown or after the idle timeout, and dropped when
//! the caller stops answering pings while calls run.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::call;
use super::door::GrpcDoor;
use super::shared::GrpcConnection;
use crate::server::identity::PeerIdentity;
use crate::server::shared::{DoorIo, SecondDoor, Shared};

/// The largest header block a caller may send (metadata included): gRPC's usual 16 KiB.
const GRPC_MAX_HEADER_LIST_SIZE: u32 = 16 * 1024;

/// Each call's HTTP/2 receive window, and the connection's: what a caller may send ahead of
/// the handler. An upload is read as the handler takes its items, so this is what one
/// upload can make the server buffer.
const STREAM_WINDOW: u32 = 1024 * 1024;
const CONNECTION_WINDOW: u32 = 4 * 1024 * 1024;

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
    // Two timers, each armed once and moved, not made anew for every call.
    // Idle: a connection with no call for `idle_timeout` is closed gracefully.
    let idle = tokio::time::sleep(idle_timeout);
    tokio::pin!(idle);
    let mut called_since_idle_check = false;
    let mut closing = false;
    // While calls run, a ping every `keepalive_while_serving`: a caller that vanished
    // without a word (a host gone, a partition) leaves its calls waiting on a window that
    // never opens; no pong within `ping_timeout` drops the connection and them.
    let mut ping_pong = connection.ping_pong();
    let keepalive = config.keepalive_while_serving;
    let ping = tokio::time::sleep(keepalive);
    tokio::pin!(ping);
    let mut awaiting_pong = false;
    loop {
        let watching = ping_pong.is_some() && (awaiting_pong || connection.has_streams());
        tokio::select! {
            accepted = connection.accept() => match accepted {
                Some(Ok((request, respond))) => {
                    called_since_idle_check = true;
                    shared.tracker.spawn(call::serve(Arc::clone(&calls), request, respond));
                }
                Some(Err(err)) => {
                    tracing::debug!(%err, "gRPC connection failed");
                    break;
                }
                None => break,
            },
            () = &mut ping, if watching => {
                if awaiting_pong {
                    tracing::debug!("gRPC caller did not answer a ping; closing");
                    break;
                }
                if let Some(ping_pong) = &mut ping_pong {
                    if ping_pong.send_ping(h2::Ping::opaque()).is_err() {
                        break;
                    }
                }
                awaiting_pong = true;
                ping.as_mut().reset(Instant::now() + config.ping_timeout);
            }
            pong = pong(&mut ping_pong), if awaiting_pong => {
                if pong.is_err() {
                    break;
                }
                awaiting_pong = false;
                ping.as_mut().reset(Instant::now() + keepalive);
            }
            () = shared.shutdown.cancelled(), if !closing => {
                closing = true;
                connection.graceful_shutdown();
            }
            () = &mut idle, if !closing => {
                if called_since_idle_check || connection.has_streams() {
                    called_since_idle_check = false;
                    idle.as_mut().reset(Instant::now() + idle_timeout.max(Duration::from_secs(1)));
                } else {
                    tracing::debug!("gRPC connection idle; closing");
                    closing = true;
                    connection.graceful_shutdown();
                }
            }
            () = shared.force.cancelled() => break,
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

/// How the server's accept path reaches [`serve_connection`].
impl SecondDoor for GrpcDoor {
    fn serve(
        self: Arc<Self>,
        io: Box<dyn DoorIo>,
        identity: PeerIdentity,
        deadline: Instant,
        shared: Arc<Shared>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(serve_connection(io, identity, deadline, shared, self))
    }
}
