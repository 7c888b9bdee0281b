//! The server side: a [`ServerBuilder`] collects services and limits, [`ServerBuilder::bind`]
//! starts accepting, and the [`RunningServer`] handle reports the address and shuts down.

mod connection;
mod router;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket, ToSocketAddrs};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::codec::Codec;
use crate::error::Error;
use crate::frame::DEFAULT_MAX_FRAME_LEN;
use crate::negotiate::{refuse, HelloStatus, Preference};
use crate::service::Service;
use crate::transport::configure_tcp;
use router::Router;

/// Entry point: `Server::builder()`.
#[derive(Debug)]
pub struct Server;

impl Server {
    /// A builder with default limits and every compiled-in codec.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }
}

/// Limits and options shared by every connection of a server.
#[derive(Clone, Debug)]
pub(crate) struct ServerConfig {
    pub(crate) codecs: Vec<Codec>,
    pub(crate) preference: Preference,
    pub(crate) max_frame_len: u32,
    pub(crate) handshake_timeout: Duration,
    pub(crate) grace_period: Duration,
    pub(crate) max_connections: usize,
    pub(crate) max_in_flight_per_connection: usize,
    pub(crate) max_in_flight: usize,
    pub(crate) idle_timeout: Duration,
    pub(crate) ping_timeout: Duration,
    pub(crate) write_timeout: Duration,
    pub(crate) listen_backlog: u32,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            codecs: Codec::available(),
            preference: Preference::Client,
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            handshake_timeout: Duration::from_secs(10),
            grace_period: Duration::from_secs(30),
            max_connections: 100_000,
            max_in_flight_per_connection: 1024,
            max_in_flight: 65_536,
            idle_timeout: Duration::from_secs(90),
            ping_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(30),
            listen_backlog: 1024,
        }
    }
}

/// Configures and starts a server.
///
/// ```no_run
/// # async fn run(service: impl wirecall_runtime::Service) -> Result<(), wirecall_runtime::Error> {
/// use std::time::Duration;
/// use wirecall_runtime::{Codec, Server};
///
/// let server = Server::builder()
///     .serve(service)
///     .codecs([Codec::Protobuf, Codec::MessagePack])
///     .shutdown_grace_period(Duration::from_secs(5))
///     .bind("127.0.0.1:7000")
///     .await?;
/// println!("listening on {}", server.local_addr());
/// server.shutdown().await;
/// # Ok(())
/// # }
/// ```
#[derive(Default)]
pub struct ServerBuilder {
    services: Vec<Arc<dyn Service>>,
    config: ServerConfig,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.services.iter().map(|s| s.descriptor().name).collect();
        f.debug_struct("ServerBuilder")
            .field("services", &names)
            .field("config", &self.config)
            .finish()
    }
}

impl ServerBuilder {
    /// Adds a service (a generated `{Trait}Server`). A server can serve any number of
    /// services; their method ids must not collide, which [`bind`](Self::bind) checks.
    pub fn serve<S: Service>(mut self, service: S) -> Self {
        self.services.push(Arc::new(service));
        self
    }

    /// The codecs clients may pick, in the server's preference order (default: every
    /// compiled-in codec). Codecs not compiled in are ignored.
    pub fn codecs(mut self, codecs: impl IntoIterator<Item = Codec>) -> Self {
        self.config.codecs = codecs.into_iter().filter(|c| c.is_available()).collect();
        self
    }

    /// When several codecs are common, pick by the server's order instead of the client's
    /// (default: the client's order wins).
    pub fn prefer_server_codec_order(mut self, server_order: bool) -> Self {
        self.config.preference = if server_order {
            Preference::Server
        } else {
            Preference::Client
        };
        self
    }

    /// The largest frame accepted or sent (default 16 MiB). A peer announcing a larger one
    /// gets an error frame and the connection is closed.
    pub fn max_frame_len(mut self, max: u32) -> Self {
        self.config.max_frame_len = max;
        self
    }

    /// How long a new connection may take to send its hello (default 10 s).
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.config.handshake_timeout = timeout;
        self
    }

    /// How long [`RunningServer::shutdown`] waits for in-flight calls (default 30 s).
    pub fn shutdown_grace_period(mut self, grace: Duration) -> Self {
        self.config.grace_period = grace;
        self
    }

    /// Connections held at once (default 100,000); more are refused with a `Busy` hello.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.config.max_connections = max;
        self
    }

    /// Calls running at once on one connection (default 1,024). At the limit the server stops
    /// reading that connection until a call finishes: backpressure, not an unbounded queue.
    pub fn max_in_flight_per_connection(mut self, max: usize) -> Self {
        self.config.max_in_flight_per_connection = max.max(1);
        self
    }

    /// Calls running at once on the whole server (default 65,536). A call beyond it is
    /// answered at once with an [`Overloaded`](crate::ErrorCode::Overloaded) error.
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.config.max_in_flight = max.max(1);
        self
    }

    /// How long a connection may stay silent before the server pings it (default 90 s, the
    /// idle period of the socket servers wirecall replaces).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.config.idle_timeout = timeout;
        self
    }

    /// How long a pinged connection has to send any frame before it is closed with an
    /// [`IdleTimeout`](crate::ErrorCode::IdleTimeout) error frame (default 10 s).
    pub fn ping_timeout(mut self, timeout: Duration) -> Self {
        self.config.ping_timeout = timeout;
        self
    }

    /// How long writing to a peer may stall (the peer does not read) before the connection is
    /// closed (default 30 s).
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.config.write_timeout = timeout;
        self
    }

    /// The listen backlog: connections the OS queues before `accept` (default 1,024).
    pub fn listen_backlog(mut self, backlog: u32) -> Self {
        self.config.listen_backlog = backlog;
        self
    }

    /// Binds `addr` and starts serving.
    pub async fn bind<A: ToSocketAddrs>(self, addr: A) -> Result<RunningServer, Error> {
        let listener = listen(addr, self.config.listen_backlog).await?;
        self.serve_listener(listener)
    }

    /// Starts serving on an already bound listener.
    pub fn serve_listener(self, listener: TcpListener) -> Result<RunningServer, Error> {
        let router = Router::build(&self.services)?;
        if self.config.codecs.is_empty() {
            return Err(Error::Config(
                "no codec is enabled; list at least one compiled-in codec".to_owned(),
            ));
        }
        let local_addr = listener.local_addr().map_err(|source| Error::Bind {
            addr: "the listener".to_owned(),
            source,
        })?;
        let shared = Arc::new(Shared {
            router,
            calls: Arc::new(Semaphore::new(self.config.max_in_flight)),
            config: self.config,
            connections: AtomicUsize::new(0),
            shutdown: CancellationToken::new(),
            force: CancellationToken::new(),
            tracker: TaskTracker::new(),
        });
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        tracing::info!(%local_addr, "wirecall server listening");
        Ok(RunningServer {
            local_addr,
            shared,
            accept: Some(accept),
        })
    }
}

/// Binds the first address `addr` resolves to that accepts a listener with `backlog`.
async fn listen<A: ToSocketAddrs>(addr: A, backlog: u32) -> Result<TcpListener, Error> {
    let candidates = tokio::net::lookup_host(addr)
        .await
        .map_err(|source| Error::Bind {
            addr: "(address lookup)".to_owned(),
            source,
        })?;
    let mut last_error = None;
    for candidate in candidates {
        let socket = if candidate.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        };
        let listener = socket.and_then(|socket| {
            socket.set_reuseaddr(true)?;
            socket.bind(candidate)?;
            socket.listen(backlog)
        });
        match listener {
            Ok(listener) => return Ok(listener),
            Err(err) => last_error = Some((candidate.to_string(), err)),
        }
    }
    let (addr, source) = last_error.unwrap_or_else(|| {
        let none = std::io::Error::new(std::io::ErrorKind::NotFound, "resolved to nothing");
        ("(address lookup)".to_owned(), none)
    });
    Err(Error::Bind { addr, source })
}

/// State every connection task of one server shares.
pub(crate) struct Shared {
    pub(crate) router: Router,
    pub(crate) config: ServerConfig,
    pub(crate) connections: AtomicUsize,
    /// One permit per call running on the server (`max_in_flight`).
    pub(crate) calls: Arc<Semaphore>,
    /// Stop accepting and stop reading new calls.
    pub(crate) shutdown: CancellationToken,
    /// The grace period is over: abort whatever still runs.
    pub(crate) force: CancellationToken,
    pub(crate) tracker: TaskTracker,
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let accepted = tokio::select! {
            _ = shared.shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (mut stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(err) => {
                // Typically EMFILE: back off instead of spinning.
                tracing::warn!(%err, "accept failed");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        if let Err(err) = configure_tcp(&stream) {
            tracing::debug!(%err, %peer, "could not configure socket");
        }
        let open = shared.connections.fetch_add(1, Ordering::AcqRel);
        let guard = ConnectionSlot(Arc::clone(&shared));
        if open >= shared.config.max_connections {
            tracing::warn!(%peer, open, "connection limit reached; refusing");
            let codecs = shared.config.codecs.clone();
            shared.tracker.spawn(async move {
                let _guard = guard;
                refuse(&mut stream, HelloStatus::Busy, &codecs).await;
            });
            continue;
        }
        let connection_shared = Arc::clone(&shared);
        shared.tracker.spawn(async move {
            let _guard = guard;
            connection::serve_connection(stream, peer, connection_shared).await;
        });
    }
}

/// Counts a connection for as long as its task lives.
struct ConnectionSlot(Arc<Shared>);

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A server that is accepting connections. Dropping it stops the server at once; call
/// [`shutdown`](Self::shutdown) to let in-flight calls finish first.
#[derive(Debug)]
pub struct RunningServer {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("config", &self.config)
            .field("connections", &self.connections)
            .finish_non_exhaustive()
    }
}

impl RunningServer {
    /// The address the server listens on (useful after binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Connections currently open.
    pub fn connection_count(&self) -> usize {
        self.shared.connections.load(Ordering::Acquire)
    }

    /// Calls currently running on the server, over all connections.
    pub fn in_flight(&self) -> usize {
        self.shared.config.max_in_flight - self.shared.calls.available_permits()
    }

    /// Graceful shutdown with the configured grace period: stop accepting, stop reading new
    /// calls, let in-flight calls finish and send their replies, then close every connection.
    /// Calls still running when the grace period ends are aborted.
    pub async fn shutdown(self) {
        let grace = self.shared.config.grace_period;
        self.shutdown_within(grace).await;
    }

    /// Graceful shutdown with an explicit grace period.
    pub async fn shutdown_within(mut self, grace: Duration) {
        self.shared.shutdown.cancel();
        if let Some(accept) = self.accept.take() {
            let _ = accept.await;
        }
        self.shared.tracker.close();
        if tokio::time::timeout(grace, self.shared.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(?grace, "grace period over; aborting remaining calls");
            self.shared.force.cancel();
            self.shared.tracker.wait().await;
        }
        tracing::info!(local_addr = %self.local_addr, "wirecall server stopped");
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
        self.shared.force.cancel();
    }
}
