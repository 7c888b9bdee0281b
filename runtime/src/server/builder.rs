//! [`Server::builder`] and the [`ServerBuilder`]: the services, limits and options of a
//! server, and the `bind*` methods that start it.

use std::net::SocketAddr;
#[cfg(unix)]
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, ToSocketAddrs};

use super::config::ServerConfig;
use super::identity::{Authorize, CallTarget, PeerIdentity};
use super::listener::{listen, Listener};
use super::request::{Reply, Request};
use super::running::RunningServer;
use crate::auth::Token;
use crate::codec::Codec;
use crate::discovery::record::Registration;
use crate::discovery::registry::Registry;
use crate::error::{BoxError, Error};
use crate::layers::next::{Layers, Next};
use crate::negotiate::{Preference, MIN_PROTOCOL_VERSION, PROTOCOL_VERSION};
use crate::service::Service;
#[cfg(feature = "tls")]
use crate::tls::ServerTlsConfig;
// The defaults the option docs link.
#[cfg(doc)]
use super::config::{
    DEFAULT_AUTH_FAILURE_WINDOW, DEFAULT_AUTH_MAX_FAILURES, DEFAULT_DRAIN_DELAY,
    DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_KEEPALIVE_WHILE_SERVING,
    DEFAULT_LISTEN_BACKLOG, DEFAULT_MAX_CONNECTIONS_CEILING, DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION, DEFAULT_MAX_STREAMS_PER_CONNECTION, DEFAULT_PING_TIMEOUT,
    DEFAULT_RESERVED_DESCRIPTORS, DEFAULT_SHUTDOWN_GRACE_PERIOD, DEFAULT_WRITE_TIMEOUT,
};

/// Entry point: `Server::builder()`.
#[derive(Debug)]
pub struct Server;

impl Server {
    /// A builder with default limits and every compiled-in codec.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
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
    pub(super) services: Vec<Arc<dyn Service>>,
    /// `reflection(false)`; reflection is on by default.
    pub(super) no_reflection: bool,
    pub(super) config: ServerConfig,
    pub(super) token: Option<TokenSource>,
    pub(super) authorize: Option<Authorize>,
    pub(super) layers: Layers<Request, Reply>,
    #[cfg(feature = "tls")]
    pub(super) tls: Option<ServerTlsConfig>,
    pub(super) registrations: Vec<(Registry, Registration)>,
}

/// Where the server's token comes from.
#[derive(Debug)]
pub(super) enum TokenSource {
    Fixed(Token),
    Generated,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.services.iter().map(|s| s.descriptor().name).collect();
        let mut debug = f.debug_struct("ServerBuilder");
        debug
            .field("services", &names)
            .field("reflection", &!self.no_reflection)
            .field("config", &self.config)
            .field("token", &self.token)
            .field("authorize", &self.authorize.is_some())
            .field("layers", &self.layers);
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

    /// Whether to serve the built-in reflection service, `wirecall.Reflection` (default:
    /// on). It lists the served services and describes their methods and types, which is
    /// what the `wirecall` command-line tool and the HTTP gateway call; it is a service like
    /// any other, so the token, TLS and the [`authorize`](Self::authorize) hook apply to it
    /// (its calls name the service `wirecall.Reflection`). Turn it off to reveal nothing
    /// about the services to clients that can connect.
    pub fn reflection(mut self, on: bool) -> Self {
        self.no_reflection = !on;
        self
    }

    /// Whether to answer standard gRPC on the server's port too (default: on, with the
    /// `grpc` feature). A connection that opens with HTTP/2's preface is served as gRPC: each
    /// service that speaks Protobuf is `{package}.{Service}` (see
    /// [`grpc_package`](Self::grpc_package)), its methods and messages those of
    /// `wirecall proto`'s export, with server reflection (`grpc.reflection.v1` and
    /// `v1alpha`) and the health check (`grpc.health.v1`). Calls go through the same
    /// layers, limits, token check and metrics as wirecall calls; the book's "Calling from
    /// outside Rust" chapter has the details. Over TLS, a caller that asks for `h2` by ALPN
    /// is a gRPC one; on a Unix socket every connection is a wirecall one.
    #[cfg(feature = "grpc")]
    pub fn grpc(mut self, on: bool) -> Self {
        self.config.grpc = on;
        self
    }

    /// The protobuf package the services are named in over gRPC (default:
    /// [`DEFAULT_GRPC_PACKAGE`](crate::server::DEFAULT_GRPC_PACKAGE), `wirecall.services`).
    /// Reflection and the health check use it; calls are routed by service and method name
    /// whatever package their path names, so stubs from any export work.
    #[cfg(feature = "grpc")]
    pub fn grpc_package(mut self, package: impl Into<String>) -> Self {
        self.config.grpc_package = package.into();
        self
    }

    /// The codecs clients may pick, in the server's preference order (default: every
    /// compiled-in codec). Codecs not compiled in are ignored; a codec listed twice makes
    /// `bind` fail with [`Error::Config`].
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

    /// The largest frame accepted or sent (default
    /// [`DEFAULT_MAX_FRAME_LEN`](crate::transport::frame::DEFAULT_MAX_FRAME_LEN)). A peer announcing a
    /// larger one gets an error frame and the connection is closed.
    pub fn max_frame_len(mut self, max: u32) -> Self {
        self.config.max_frame_len = max;
        self
    }

    /// How this server's connections compress (default [`Compression::default`]: zstd for
    /// payloads of 1 KiB and more with the `zstd` feature, none without). A client that
    /// offers the algorithm gets it; [`Compression::none`] chooses nothing, so neither side
    /// compresses. See the book's "Compression".
    ///
    /// [`Compression::default`]: crate::Compression::default
    /// [`Compression::none`]: crate::Compression::none
    pub fn compression(mut self, compression: crate::Compression) -> Self {
        self.config.compression = compression;
        self
    }

    /// How long a new connection may take to send its hello, its TLS handshake included
    /// (default [`DEFAULT_HANDSHAKE_TIMEOUT`]).
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.config.handshake_timeout = timeout;
        self
    }

    /// How long [`RunningServer::shutdown`] waits for in-flight calls (default
    /// [`DEFAULT_SHUTDOWN_GRACE_PERIOD`]).
    pub fn shutdown_grace_period(mut self, grace: Duration) -> Self {
        self.config.grace_period = grace;
        self
    }

    /// Publishes the server in `registry` once its listener is bound, and keeps the
    /// registration alive in the background (renewing the lease every third of
    /// [`Registration::ttl`]). Fields left empty are filled in: the address with the bound
    /// address, the services with those this server serves, the codecs with those it allows.
    ///
    /// If the registry cannot be reached, the server serves anyway and registers as soon as
    /// it can (logged); losing the registry later never stops serving. On a graceful
    /// shutdown the server deregisters **first**, waits [`drain_delay`](Self::drain_delay)
    /// so that clients stop sending it calls, and only then stops reading calls and drains
    /// the ones in flight. A server stopped at once (dropped or aborted) does not deregister:
    /// its records expire with its lease (with ZooKeeper, whose lease is the registry's
    /// session, they go as soon as the last handle on that `Registry` in the process is
    /// dropped, which closes the session; a killed process's session expires).
    pub fn register(mut self, registry: Registry, registration: Registration) -> Self {
        self.registrations.push((registry, registration));
        self
    }

    /// How long a graceful shutdown waits between deregistering and draining (default
    /// [`DEFAULT_DRAIN_DELAY`]): enough for clients watching the registry to remove this
    /// server. Only used when the server [`register`](Self::register)s somewhere.
    pub fn drain_delay(mut self, delay: Duration) -> Self {
        self.config.drain_delay = delay;
        self
    }

    /// Connections held at once; more are refused with a `Busy` hello. By default the limit is
    /// derived from the process's soft open-file limit when the server starts (90 % of it,
    /// leaving at least [`DEFAULT_RESERVED_DESCRIPTORS`] for everything else; at most
    /// [`DEFAULT_MAX_CONNECTIONS_CEILING`], which is also the limit where the open-file limit
    /// cannot be read), so that wirecall's clear `Busy` refusal applies before `accept` runs
    /// out of descriptors.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.config.max_connections = Some(max);
        self
    }

    /// Calls running at once on one connection (default
    /// [`DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION`]). At the limit the server stops reading that
    /// connection until a call finishes: backpressure, not an unbounded queue.
    pub fn max_in_flight_per_connection(mut self, max: usize) -> Self {
        self.config.max_in_flight_per_connection = max.max(1);
        self
    }

    /// Streams open at once on one connection (default
    /// [`DEFAULT_MAX_STREAMS_PER_CONNECTION`]), counted apart from calls. An `Open` beyond it
    /// is refused at once with an [`Overloaded`](crate::ErrorCode::Overloaded) error for that
    /// stream: a stream needs the client's frames to go on, so the server keeps reading.
    pub fn max_streams_per_connection(mut self, max: usize) -> Self {
        self.config.max_streams_per_connection = max.max(1);
        self
    }

    /// Calls running at once on the whole server (default [`DEFAULT_MAX_IN_FLIGHT`]). A call
    /// beyond it is answered at once with an [`Overloaded`](crate::ErrorCode::Overloaded)
    /// error. The limit is a built-in layer that runs before the ones added with
    /// [`layer`](Self::layer), so a call waiting in one of them (say, for a rate limit's
    /// budget) counts as in flight.
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.config.max_in_flight = max.max(1);
        self
    }

    /// How long a connection with no call or stream running may stay silent before the
    /// server pings it (default [`DEFAULT_IDLE_TIMEOUT`]).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.config.idle_timeout = timeout;
        self
    }

    /// How long a connection may stay silent while the server runs its calls or streams
    /// before the server pings it (default [`DEFAULT_KEEPALIVE_WHILE_SERVING`]). A client that
    /// vanished does not answer, and after [`ping_timeout`](Self::ping_timeout) more its
    /// connection is closed and its handlers are cancelled.
    pub fn keepalive_while_serving(mut self, interval: Duration) -> Self {
        self.config.keepalive_while_serving = interval;
        self
    }

    /// How long a pinged connection has to send any frame before it is closed with an
    /// [`IdleTimeout`](crate::ErrorCode::IdleTimeout) error frame (default
    /// [`DEFAULT_PING_TIMEOUT`]).
    pub fn ping_timeout(mut self, timeout: Duration) -> Self {
        self.config.ping_timeout = timeout;
        self
    }

    /// How long writing to a peer may stall (the peer does not read) before the connection is
    /// closed (default [`DEFAULT_WRITE_TIMEOUT`]).
    pub fn write_timeout(mut self, timeout: Duration) -> Self {
        self.config.write_timeout = timeout;
        self
    }

    /// The listen backlog: connections the OS queues before `accept` (default
    /// [`DEFAULT_LISTEN_BACKLOG`]).
    pub fn listen_backlog(mut self, backlog: u32) -> Self {
        self.config.listen_backlog = backlog;
        self
    }

    /// Requires every client to present this token in its hello
    /// ([`ChannelBuilder::token`](crate::ChannelBuilder::token)); at most
    /// [`MAX_TOKEN_LEN`](crate::negotiate::MAX_TOKEN_LEN) bytes. A wrong or missing token is
    /// refused before any call can be made, and an address with too many failures within a
    /// sliding window (by default [`DEFAULT_AUTH_MAX_FAILURES`] within
    /// [`DEFAULT_AUTH_FAILURE_WINDOW`]) is refused until the oldest of them has left the
    /// window (see [`auth_failure_limit`](Self::auth_failure_limit)). Before the token is
    /// checked the server reveals nothing: its refusals list no codecs.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(TokenSource::Fixed(Token::new(token)));
        self
    }

    /// The newest protocol version the server speaks (default: this build's,
    /// [`PROTOCOL_VERSION`]). With 1 the server behaves exactly as a version 1 server: it
    /// refuses newer hellos and carries no metadata, which lets a fleet roll back, and tests
    /// check that new clients still reach old servers.
    pub fn max_protocol_version(mut self, version: u8) -> Self {
        self.config.max_protocol_version = version.clamp(MIN_PROTOCOL_VERSION, PROTOCOL_VERSION);
        self
    }

    /// How many failed token checks an IP address may have within a sliding `window` before
    /// its hellos are refused without looking at the token (default
    /// [`DEFAULT_AUTH_MAX_FAILURES`] within [`DEFAULT_AUTH_FAILURE_WINDOW`]; at most 100; 0
    /// turns the limit off). Refused attempts do not count as failures.
    pub fn auth_failure_limit(mut self, max_failures: u32, window: Duration) -> Self {
        self.config.auth_max_failures = max_failures;
        self.config.auth_failure_window = window;
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
    /// call, so it should be quick. It is a shorthand for a built-in layer that runs first,
    /// before the limits and the layers added with [`layer`](Self::layer); a check that needs
    /// the call's metadata, or to wait, is a layer of its own (see the book's interceptor).
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

    /// Wraps every call in a tower layer: a timeout, a rate or concurrency limit, load
    /// shedding, an interceptor of your own, or a whole `tower::ServiceBuilder` stack.
    ///
    /// A layer sees a [`Request`] (the call's [`CallContext`](crate::CallContext) and its
    /// encoded arguments) and passes on a [`Reply`]. The first layer added is the outermost.
    /// The authorisation hook and [`max_in_flight`](Self::max_in_flight) run before every
    /// layer; calls to unknown methods never reach them. One layered service serves the whole
    /// server: readiness (a rate limit's budget, a concurrency limit's permits) is awaited
    /// for each call in turn, so layers that are not `Clone`, such as tower's `RateLimit`,
    /// work unchanged.
    ///
    /// A layer's error fails the call with a wire error code: a
    /// [`CallError`](crate::CallError) keeps its own, tower's `Elapsed` is
    /// `DeadlineExceeded`, tower's `Overloaded` is `Overloaded`, anything else `LayerFailed`
    /// (see [`CallError::from_layer`](crate::CallError::from_layer)).
    ///
    /// ```no_run
    /// # async fn run(service: impl wirecall_runtime::Service) -> Result<(), wirecall_runtime::Error> {
    /// use std::time::Duration;
    ///
    /// let server = wirecall_runtime::Server::builder()
    ///     .serve(service)
    ///     .layer(tower::timeout::TimeoutLayer::new(Duration::from_secs(5)))
    ///     .bind("127.0.0.1:7000")
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: tower::Layer<Next<Request, Reply>> + Send + Sync + 'static,
        L::Service: tower::Service<Request, Response = Reply> + Send + 'static,
        <L::Service as tower::Service<Request>>::Future: Send + 'static,
        <L::Service as tower::Service<Request>>::Error: Into<BoxError>,
    {
        self.layers.push(layer);
        self
    }

    /// Serves TLS only: every connection starts with a TLS handshake (ALPN `wirecall`,
    /// bounded by the handshake timeout) before the wirecall hello.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls(mut self, tls: ServerTlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Binds `addr` and starts serving.
    pub async fn bind<A: ToSocketAddrs>(self, addr: A) -> Result<RunningServer, Error> {
        let listener = listen(addr, self.config.listen_backlog).await?;
        self.serve_listener(listener).await
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
        self.launch(Listener::Unix(listener), local_addr, Some(path))
    }

    /// Starts serving on an already bound listener. Async like [`bind`](Self::bind), so the
    /// two read alike: `builder.serve_listener(listener).await?`.
    pub async fn serve_listener(self, listener: TcpListener) -> Result<RunningServer, Error> {
        let local_addr = listener.local_addr().map_err(|cause| Error::Bind {
            addr: "the listener".to_owned(),
            cause,
        })?;
        #[cfg(unix)]
        return self.launch(Listener::Tcp(listener), local_addr, None);
        #[cfg(not(unix))]
        return self.launch(Listener::Tcp(listener), local_addr);
    }

    /// Starts a server without a listener: it serves only the streams handed to
    /// [`RunningServer::serve_stream`] (connections accepted by your own code, in-memory
    /// streams in tests). It reports `0.0.0.0:0` as its address.
    pub async fn start_without_listener(self) -> Result<RunningServer, Error> {
        let no_addr = SocketAddr::from(([0, 0, 0, 0], 0));
        #[cfg(unix)]
        return self.launch(Listener::Nothing, no_addr, None);
        #[cfg(not(unix))]
        return self.launch(Listener::Nothing, no_addr);
    }
}
