//! The state every connection task of one server shares: the settings, the call pipeline,
//! the connection count, the shutdown signals and the token check.

use std::net::IpAddr;
#[cfg(unix)]
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::config::ServerConfig;
use super::layer::{CallBudget, Pipeline};
use super::metrics;
use super::registration;
use super::router::Router;
use crate::auth::{FailureLimiter, Token, TokenCheck};
use crate::codec::Codec;
use crate::discovery::registered::Registered;

/// State every connection task of one server shares.
pub(crate) struct Shared {
    pub(crate) router: Arc<Router>,
    /// What every call goes through (see [`Pipeline`]), called by reference.
    pub(crate) pipeline: Pipeline,
    pub(crate) metrics: metrics::ServerMetrics,
    pub(crate) config: ServerConfig,
    pub(crate) connections: AtomicUsize,
    /// The connection limit in force (configured, or derived from the descriptor limit).
    pub(crate) max_connections: usize,
    /// The calls running on the server, against `max_in_flight`.
    pub(crate) calls: Arc<CallBudget>,
    /// Stop accepting and stop reading new calls.
    pub(crate) shutdown: CancellationToken,
    /// The grace period is over: abort whatever still runs.
    pub(crate) force: CancellationToken,
    pub(crate) tracker: TaskTracker,
    /// The token clients must present, if any (only for
    /// [`RunningServer::token`](crate::RunningServer::token)).
    pub(crate) token: Option<Token>,
    pub(crate) token_check: Option<TokenCheck>,
    /// Authentication failures per peer IP.
    pub(crate) failures: FailureLimiter,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<tokio_rustls::TlsAcceptor>,
    /// The gRPC door, when the server answers gRPC on its port.
    #[cfg(feature = "grpc")]
    pub(crate) grpc: Option<Arc<dyn SecondDoor>>,
    /// The registrations kept alive in the background; withdrawn first on shutdown.
    pub(super) registered: Mutex<Vec<Registered>>,
    /// A shutdown has begun (or the server was stopped at once).
    pub(super) stopping: AtomicBool,
    /// Cancelled when a graceful shutdown begins, before deregistration.
    pub(super) draining: CancellationToken,
    /// The server has stopped: every connection is closed.
    pub(super) stopped: CancellationToken,
    #[cfg(unix)]
    pub(super) unix_path: Option<PathBuf>,
}

/// Another protocol the server answers on its port (the gRPC door): what the accept path
/// hands such a connection to. A trait, so that this state does not depend on the door's
/// code, which depends on it.
#[cfg(feature = "grpc")]
pub(crate) trait SecondDoor: Send + Sync {
    /// Serves a connection that opened with the door's protocol until it ends; `deadline`
    /// bounds the protocol's own handshake.
    fn serve(
        self: Arc<Self>,
        io: Box<dyn DoorIo>,
        identity: super::identity::PeerIdentity,
        deadline: tokio::time::Instant,
        shared: Arc<Shared>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;
}

/// The byte stream of a connection served by a [`SecondDoor`] (TCP, or TLS over it).
#[cfg(feature = "grpc")]
pub(crate) trait DoorIo:
    tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin
{
}

#[cfg(feature = "grpc")]
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> DoorIo for T {}

impl Shared {
    /// Whether connections are secured with TLS.
    #[cfg(feature = "grpc")]
    pub(crate) fn has_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// Graceful shutdown, run once however many callers ask: stop accepting and reading new
    /// calls, let the calls in flight finish within `grace`, abort the rest, close everything.
    /// A later caller waits for the first one's shutdown to end.
    pub(super) async fn shut_down(&self, grace: Duration) {
        if self.stopping.swap(true, Ordering::AcqRel) {
            self.stopped.cancelled().await;
            return;
        }
        self.draining.cancel();
        registration::withdraw(self.take_registrations(), self.config.drain_delay).await;
        self.shutdown.cancel();
        self.tracker.close();
        if tokio::time::timeout(grace, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(?grace, "grace period over; aborting remaining calls");
            self.force.cancel();
            self.tracker.wait().await;
        }
        self.remove_socket_file();
        tracing::info!("wirecall server stopped");
        self.stopped.cancel();
    }

    pub(super) fn take_registrations(&self) -> Vec<Registered> {
        std::mem::take(&mut *self.registered.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub(super) fn remove_socket_file(&self) {
        #[cfg(unix)]
        if let Some(path) = &self.unix_path {
            let _ = std::fs::remove_file(path);
        }
    }

    /// The codecs a refusal sent before authentication may list: none when the server
    /// requires a token, so that an unauthenticated peer learns nothing about it.
    pub(crate) fn codecs_before_auth(&self) -> &[Codec] {
        if self.token_check.is_some() {
            &[]
        } else {
            &self.config.codecs
        }
    }

    /// Checks a hello's token (empty: none sent). An address over its failure budget is
    /// refused without looking at the token; a wrong token counts against its address.
    pub(crate) fn authenticate(&self, ip: Option<IpAddr>, token: &[u8]) -> bool {
        let Some(check) = &self.token_check else {
            return true;
        };
        if ip.is_some_and(|ip| self.failures.is_blocked(ip)) {
            tracing::debug!(?ip, "too many authentication failures; refusing");
            return false;
        }
        if check.matches(token) {
            return true;
        }
        if let Some(ip) = ip {
            self.failures.record_failure(ip);
        }
        false
    }
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("config", &self.config)
            .field("connections", &self.connections)
            .finish_non_exhaustive()
    }
}

/// Counts a connection for as long as its task lives.
pub(crate) struct ConnectionSlot(pub(super) Arc<Shared>);

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::AcqRel);
    }
}
