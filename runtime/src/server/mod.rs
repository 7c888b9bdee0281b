//! The server side: a [`ServerBuilder`] collects services and limits, [`ServerBuilder::bind`]
//! starts accepting, and the [`RunningServer`] handle reports the address and shuts down.

mod connection;
mod identity;
mod listener;
mod router;

use std::net::{IpAddr, SocketAddr};
#[cfg(unix)]
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket, ToSocketAddrs};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::{FailureLimiter, Token, TokenCheck};
use crate::codec::Codec;
use crate::error::Error;
use crate::frame::DEFAULT_MAX_FRAME_LEN;
use crate::negotiate::Preference;
use crate::service::Service;
#[cfg(feature = "tls")]
use crate::tls::ServerTlsConfig;
use identity::Authorize;
pub use identity::{CallTarget, PeerIdentity};
use listener::Listener;
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
    token: Option<TokenSource>,
    authorize: Option<Authorize>,
    #[cfg(feature = "tls")]
    tls: Option<ServerTlsConfig>,
}

/// Where the server's token comes from.
#[derive(Debug)]
enum TokenSource {
    Fixed(Token),
    Generated,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.services.iter().map(|s| s.descriptor().name).collect();
        let mut debug = f.debug_struct("ServerBuilder");
        debug
            .field("services", &names)
            .field("config", &self.config)
            .field("token", &self.token)
            .field("authorize", &self.authorize.is_some());
        #[cfg(feature = "tls")]
        debug.field("tls", &self.tls);
        debug.finish()
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

    /// Requires every client to present this token in its hello
    /// ([`ChannelBuilder::token`](crate::ChannelBuilder::token)); at most 255 bytes. A wrong or
    /// missing token is refused before any call can be made, and an address that fails 5
    /// times within 10 s is refused for the rest of those 10 s.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(TokenSource::Fixed(Token::new(token)));
        self
    }

    /// Like [`token`](Self::token), with a fresh random token (32 bytes from the OS,
    /// hex-encoded) generated when the server starts; read it from [`RunningServer::token`].
    pub fn generated_token(mut self) -> Self {
        self.token = Some(TokenSource::Generated);
        self
    }

    /// Decides per call whether this caller may call this method. Calls the hook refuses get a
    /// [`PermissionDenied`](crate::ErrorCode::PermissionDenied) error (one-way calls are
    /// dropped); the handler never runs. The hook runs on the connection's read loop for every
    /// call, so it should be quick.
    ///
    /// ```no_run
    /// # fn f(builder: wirecall_runtime::ServerBuilder) -> wirecall_runtime::ServerBuilder {
    /// builder.authorize(|peer, target| target.method != "delete" || peer.token_authenticated)
    /// # }
    /// ```
    pub fn authorize<F>(mut self, hook: F) -> Self
    where
        F: Fn(&PeerIdentity, &CallTarget<'_>) -> bool + Send + Sync + 'static,
    {
        self.authorize = Some(Arc::new(hook));
        self
    }

    /// Serves TLS only: every connection starts with a TLS handshake (ALPN `wirecall`,
    /// bounded by the handshake timeout) before the wirecall hello.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, tls: ServerTlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Binds `addr` and starts serving.
    pub async fn bind<A: ToSocketAddrs>(self, addr: A) -> Result<RunningServer, Error> {
        let listener = listen(addr, self.config.listen_backlog).await?;
        self.serve_listener(listener)
    }

    /// Binds a Unix domain socket at `path` and starts serving. The path must not exist yet;
    /// the socket file is removed when the server stops. Token rate limiting does not apply:
    /// Unix peers have no address.
    #[cfg(unix)]
    pub async fn bind_unix(self, path: impl AsRef<Path>) -> Result<RunningServer, Error> {
        let path = path.as_ref().to_path_buf();
        let listener = tokio::net::UnixListener::bind(&path).map_err(|cause| Error::Bind {
            addr: path.display().to_string(),
            cause,
        })?;
        let local_addr = SocketAddr::from(([0, 0, 0, 0], 0));
        self.start(Listener::Unix(listener), local_addr, Some(path))
    }

    /// Starts serving on an already bound listener.
    pub fn serve_listener(self, listener: TcpListener) -> Result<RunningServer, Error> {
        let local_addr = listener.local_addr().map_err(|cause| Error::Bind {
            addr: "the listener".to_owned(),
            cause,
        })?;
        #[cfg(unix)]
        return self.start(Listener::Tcp(listener), local_addr, None);
        #[cfg(not(unix))]
        return self.start(Listener::Tcp(listener), local_addr);
    }

    fn start(
        mut self,
        listener: Listener,
        local_addr: SocketAddr,
        #[cfg(unix)] unix_path: Option<PathBuf>,
    ) -> Result<RunningServer, Error> {
        let router = Router::build(&self.services)?;
        if self.config.codecs.is_empty() {
            return Err(Error::Config(
                "no codec is enabled; list at least one compiled-in codec".to_owned(),
            ));
        }
        // The codec is negotiated per connection, before any call names a service, so a
        // connection may only use a codec that every service supports.
        let services = &self.services;
        self.config.codecs.retain(|codec| {
            services
                .iter()
                .all(|service| service.descriptor().codecs.contains(codec))
        });
        if self.config.codecs.is_empty() {
            return Err(Error::Config(
                "no codec is supported by every service (see their #[service(codecs(...))]); \
                 serve them from separate servers"
                    .to_owned(),
            ));
        }
        let token = match self.token {
            None => None,
            Some(TokenSource::Fixed(token)) => Some(token),
            Some(TokenSource::Generated) => Some(Token::generate()?),
        };
        if let Some(token) = &token {
            token.validate()?;
        }
        #[cfg(feature = "tls")]
        let tls = self
            .tls
            .as_ref()
            .map(ServerTlsConfig::acceptor)
            .transpose()?;
        let shared = Arc::new(Shared {
            router,
            calls: Arc::new(Semaphore::new(self.config.max_in_flight)),
            config: self.config,
            connections: AtomicUsize::new(0),
            shutdown: CancellationToken::new(),
            force: CancellationToken::new(),
            tracker: TaskTracker::new(),
            token_check: token.as_ref().map(TokenCheck::new),
            token,
            failures: FailureLimiter::default(),
            authorize: self.authorize,
            #[cfg(feature = "tls")]
            tls,
        });
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        #[cfg(unix)]
        match &unix_path {
            Some(path) => tracing::info!(path = %path.display(), "wirecall server listening"),
            None => tracing::info!(%local_addr, "wirecall server listening"),
        }
        #[cfg(not(unix))]
        tracing::info!(%local_addr, "wirecall server listening");
        Ok(RunningServer {
            local_addr,
            #[cfg(unix)]
            unix_path,
            shared,
            accept: Some(accept),
        })
    }
}

/// Binds the first address `addr` resolves to that accepts a listener with `backlog`.
async fn listen<A: ToSocketAddrs>(addr: A, backlog: u32) -> Result<TcpListener, Error> {
    let candidates = tokio::net::lookup_host(addr)
        .await
        .map_err(|cause| Error::Bind {
            addr: "(address lookup)".to_owned(),
            cause,
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
    let (addr, cause) = last_error.unwrap_or_else(|| {
        let none = std::io::Error::new(std::io::ErrorKind::NotFound, "resolved to nothing");
        ("(address lookup)".to_owned(), none)
    });
    Err(Error::Bind { addr, cause })
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
    /// The token clients must present, if any (only for [`RunningServer::token`]).
    pub(crate) token: Option<Token>,
    pub(crate) token_check: Option<TokenCheck>,
    /// Authentication failures per peer IP.
    pub(crate) failures: FailureLimiter,
    pub(crate) authorize: Option<Authorize>,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<tokio_rustls::TlsAcceptor>,
}

impl Shared {
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

async fn accept_loop(listener: Listener, shared: Arc<Shared>) {
    loop {
        let accepted = tokio::select! {
            _ = shared.shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let accepted = match accepted {
            Ok(accepted) => accepted,
            Err(err) => {
                // Typically EMFILE: back off instead of spinning.
                tracing::warn!(%err, "accept failed");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let open = shared.connections.fetch_add(1, Ordering::AcqRel);
        let guard = ConnectionSlot(Arc::clone(&shared));
        let connection_shared = Arc::clone(&shared);
        if open >= shared.config.max_connections {
            tracing::warn!(open, "connection limit reached; refusing");
            shared.tracker.spawn(async move {
                let _guard = guard;
                accepted.refuse_busy(connection_shared).await;
            });
            continue;
        }
        shared.tracker.spawn(async move {
            let _guard = guard;
            accepted.serve(connection_shared).await;
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
    #[cfg(unix)]
    unix_path: Option<PathBuf>,
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
    /// The address the server listens on (useful after binding port 0). A server bound with
    /// [`ServerBuilder::bind_unix`] has no IP address and reports `0.0.0.0:0`; see
    /// [`unix_path`](Self::unix_path).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The socket path of a server bound with [`ServerBuilder::bind_unix`].
    #[cfg(unix)]
    pub fn unix_path(&self) -> Option<&Path> {
        self.unix_path.as_deref()
    }

    /// The token clients must present, if the server requires one: the fixed token, or the
    /// one generated at start-up by [`ServerBuilder::generated_token`]. Hand it to clients
    /// over a channel you trust; wirecall never logs it.
    pub fn token(&self) -> Option<&str> {
        self.shared.token.as_ref().map(Token::expose)
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
        self.remove_socket_file();
    }

    fn remove_socket_file(&mut self) {
        #[cfg(unix)]
        if let Some(path) = self.unix_path.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
        self.shared.force.cancel();
        self.remove_socket_file();
    }
}
