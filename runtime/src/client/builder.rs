//! [`ChannelBuilder`]: the options of a channel, and `connect*`, which opens its first
//! connection and builds the [`Channel`] around it.

use std::net::SocketAddr;
#[cfg(unix)]
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::ToSocketAddrs;

use crate::auth::Token;
use crate::codec::Codec;
use crate::error::{BoxError, Error};
use crate::layers::next::{Layers, Next};
use crate::metadata::{Metadata, MetadataError};
use crate::negotiate::{MIN_PROTOCOL_VERSION, PROTOCOL_VERSION};
use crate::policy::overrides::Policies;
use crate::policy::table::PolicyTable;
#[cfg(feature = "tls")]
use crate::tls::ClientTlsConfig;
use crate::transport::Transport;

use super::channel::Channel;
use super::endpoint::connection::Connection;
use super::endpoint::dial::{Redial, Target};
use super::endpoint::options::EndpointOptions;
use super::endpoint::Endpoint;
use super::request::{Reply, Request};
use super::settings::{
    ConnectionSettings, DEFAULT_KEEPALIVE, DEFAULT_MAX_RECONNECT_BACKOFF, DEFAULT_TIMEOUT,
};
use super::stack::{Core, Route};
use crate::transport::liveness::Periods;

// The handle's constructors live with the options they start from.
impl Channel {
    /// Connects to `addr` offering every compiled-in codec, with default options.
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> Result<Self, Error> {
        Self::builder().connect(addr).await
    }

    /// Options for a new connection.
    pub fn builder() -> ChannelBuilder {
        ChannelBuilder::default()
    }
}

/// Options for a [`Channel`].
///
/// ```no_run
/// # async fn run() -> Result<(), wirecall_runtime::Error> {
/// use std::time::Duration;
/// use wirecall_runtime::{Channel, Codec};
///
/// let channel = Channel::builder()
///     .codecs([Codec::Protobuf, Codec::MessagePack])
///     .timeout(Duration::from_secs(2))
///     .connect("127.0.0.1:7000")
///     .await?;
/// println!("talking {}", channel.codec());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ChannelBuilder {
    /// How each connection is opened: the part a channel keeps for reconnecting.
    settings: ConnectionSettings,
    timeout: Option<Duration>,
    reconnect: bool,
    max_reconnect_backoff: Duration,
    metadata: Metadata,
    /// The first invalid `metadata(..)` entry, reported by `connect`.
    metadata_error: Option<MetadataError>,
    trace: bool,
    layers: Layers<Request, Reply>,
    /// Overrides of the methods' declared policies given in code; the environment's go over
    /// them when the channel is built.
    policies: Policies,
}

impl Default for ChannelBuilder {
    fn default() -> Self {
        Self {
            settings: ConnectionSettings::default(),
            timeout: Some(DEFAULT_TIMEOUT),
            reconnect: true,
            max_reconnect_backoff: DEFAULT_MAX_RECONNECT_BACKOFF,
            metadata: Metadata::new(),
            metadata_error: None,
            trace: false,
            layers: Layers::default(),
            policies: Policies::new(),
        }
    }
}

impl ChannelBuilder {
    /// The codecs to offer, most preferred first (default: every compiled-in codec,
    /// MessagePack, Protobuf, JSON). Codecs not compiled in are dropped from the offer; a
    /// codec listed twice makes `connect` fail with [`Error::Config`].
    pub fn codecs(mut self, codecs: impl IntoIterator<Item = Codec>) -> Self {
        self.settings.codecs = codecs.into_iter().filter(|c| c.is_available()).collect();
        self
    }

    /// The default call deadline these options give a channel.
    pub(crate) fn default_timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The metadata every call of a channel with these options carries (`None`: none).
    pub(crate) fn default_metadata(&self) -> Option<Arc<Metadata>> {
        (!self.metadata.is_empty()).then(|| Arc::new(self.metadata.clone()))
    }

    /// Whether calls made outside a trace start one.
    pub(crate) fn trace_value(&self) -> bool {
        self.trace
    }

    /// The limit for connecting plus the handshake.
    pub(crate) fn connect_timeout_value(&self) -> Duration {
        self.settings.connect_timeout
    }

    /// Offers exactly one codec.
    pub fn codec(self, codec: Codec) -> Self {
        self.codecs([codec])
    }

    /// Metadata every call of the channel carries (each handle can add more with
    /// [`Channel::with_metadata`]). An invalid key, or more than the limits allow, makes
    /// `connect` fail with [`Error::Config`].
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let Err(err) = self.metadata.insert(key, value) {
            self.metadata_error.get_or_insert(err);
        }
        self
    }

    /// Start a W3C trace (a `traceparent` in the metadata, ids on the `wirecall.call` spans)
    /// for every call made outside a traced call (default false). Calls made inside a server
    /// handler whose caller sent a trace always join that trace.
    pub fn trace(mut self, trace: bool) -> Self {
        self.trace = trace;
        self
    }

    /// The newest protocol version to offer (default: this build's). A server that speaks only
    /// an older version is reached anyway: the client dials again with the server's version.
    pub fn max_protocol_version(mut self, version: u8) -> Self {
        self.settings.max_protocol_version = version.clamp(MIN_PROTOCOL_VERSION, PROTOCOL_VERSION);
        self
    }

    /// Wraps every call of the channel (of every handle and generated client on it) in a
    /// tower layer: a timeout, a concurrency or rate limit, load shedding, retries, a layer
    /// of your own that adds metadata, or a whole `tower::ServiceBuilder` stack.
    ///
    /// A layer sees a [`Request`] (method, deadline, metadata, arguments not yet encoded) and
    /// passes on a [`Reply`] (the encoded reply, decoded after the layers). The first layer
    /// added is the outermost. One layered service serves the whole channel: readiness is
    /// awaited for each call in turn, so layers that are not `Clone`, such as tower's
    /// `RateLimit`, work unchanged. A layer's error becomes [`Error::Layer`] (see
    /// [`Error::from_layer`]); wirecall's own errors pass through unchanged. Without layers
    /// calls go straight to the connection, as before.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), wirecall_runtime::Error> {
    /// let channel = wirecall_runtime::Channel::builder()
    ///     .layer(tower::limit::ConcurrencyLimitLayer::new(64))
    ///     .connect("127.0.0.1:7000")
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

    /// The default deadline of each call (default 30 s). It travels to the server, which
    /// stops the handler when it passes.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Calls wait for their reply however long it takes.
    pub fn without_timeout(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// Limit for the TCP connect plus the handshake (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.settings.connect_timeout = timeout;
        self
    }

    /// Limit for the handshake alone, TLS and the hello, once TCP is connected (default 2 s):
    /// a server process that hangs still has its kernel accept connections, and without this
    /// limit a dial to it would wait out the whole connect timeout. The handshake is one or
    /// two round trips, so 2 s leaves room for a 200 ms link ten times over.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.settings.handshake_timeout = timeout;
        self
    }

    /// The largest frame this side sends or accepts (default 16 MiB).
    pub fn max_frame_len(mut self, max: u32) -> Self {
        self.settings.max_frame_len = max;
        self
    }

    /// How this channel's connections compress (default [`Compression::default`]: zstd for
    /// payloads of 1 KiB and more with the `zstd` feature, none without). The hello offers
    /// the algorithm and the server decides; [`Compression::none`] offers nothing, so neither
    /// side compresses. See the book's "Compression".
    ///
    /// [`Compression::default`]: crate::Compression::default
    /// [`Compression::none`]: crate::Compression::none
    pub fn compression(mut self, compression: crate::Compression) -> Self {
        self.settings.compression = compression;
        self
    }

    /// How many items of a server stream the server may send ahead of the consumer at first
    /// (default 32, at most 65,536): the stream's credit window, granted when the client
    /// opens the stream and half of it again each time its consumer has taken half, so that a
    /// consumer that stops reading pauses the producer. The window then sizes itself from the
    /// items that come (see [`stream_window_bytes`](Self::stream_window_bytes)), never below
    /// this.
    pub fn stream_window(mut self, items: u32) -> Self {
        self.settings.stream_window.items = items.clamp(1, crate::wire::MAX_STREAM_CREDIT);
        self
    }

    /// The bytes of items a server stream's window grows towards (default 1 MiB; 0 keeps the
    /// window at [`stream_window`](Self::stream_window) items). Credit counts items, so once
    /// items have come the client sizes the window to this many bytes divided by the largest
    /// item seen on the stream (plus 64 bytes an item for its frame header and queue place):
    /// 1 KiB items get about 960 items in flight, a round trip per half MiB rather than per
    /// 16 KiB; 64 KiB items keep the 32 of `stream_window`. A stream
    /// buffers about this much once its items are known, and at most the window's items of
    /// the largest item size (an item larger than any before it can overshoot the budget,
    /// never the credit). On a long link, where the round trip rather than the consumer or
    /// the producer sets a stream's pace, the budget doubles, up to
    /// [`connection_window_bytes`](Self::connection_window_bytes): the client times the
    /// round trip with a Ping of its own (the book's streaming chapter, "Over a long link").
    pub fn stream_window_bytes(mut self, bytes: u32) -> Self {
        self.settings.stream_window.bytes = bytes;
        self
    }

    /// The bytes of items all the server streams of one connection share (default 8 MiB):
    /// each stream's window is sized towards the smaller of
    /// [`stream_window_bytes`](Self::stream_window_bytes) and its even share of this, so a
    /// lone stream runs with its full window while a hundred streams of 1 KiB items run with
    /// about 80 items each rather than 960, and a connection's streams buffer about this much
    /// in all. Never below `stream_window` items a stream. It is also as far as a lone
    /// stream's budget grows on a long link: 8 MiB a round trip is 400 MB/s at 20 ms, 80 MB/s
    /// at 100 ms; raise it for a link that carries more.
    pub fn connection_window_bytes(mut self, bytes: u32) -> Self {
        self.settings.stream_window.connection = bytes;
        self
    }

    /// After `interval` without any frame from a server no call waits on, send it a ping
    /// (default 30 s).
    pub fn keepalive(mut self, interval: Duration) -> Self {
        self.keepalive_periods().idle = interval;
        self
    }

    /// After `interval` without any sign of life from a server while calls or streams wait on
    /// it, send it a ping (default 1 s). A server that is alive answers at once, however long
    /// its handlers run; one whose process hangs (its kernel still acknowledging) or that the
    /// network cut off does not, and its connection is declared dead after
    /// [`keepalive_timeout`](Self::keepalive_timeout) more: its calls then fail with
    /// [`Error::ConnectionClosed`] (`MaybeRan`), and an `#[idempotent]` call on a balanced
    /// channel is sent to another endpoint within its deadline.
    pub fn keepalive_while_waiting(mut self, interval: Duration) -> Self {
        self.keepalive_periods().busy = interval;
        self
    }

    /// How long a pinged server has to show any sign of life (a byte of any frame) before the
    /// connection is declared dead and every call on it fails (default 1 s). A dead peer is
    /// then noticed within `keepalive_while_waiting + keepalive_timeout` (2 s) while calls
    /// wait, `keepalive + keepalive_timeout` otherwise. A ping that waits behind this side's
    /// own large frames still going out starts its clock once they stop moving.
    pub fn keepalive_timeout(mut self, timeout: Duration) -> Self {
        self.keepalive_periods().answer = timeout;
        self
    }

    fn keepalive_periods(&mut self) -> &mut Periods {
        self.settings.keepalive.get_or_insert(DEFAULT_KEEPALIVE)
    }

    /// Never ping; a dead peer is then only noticed when the OS reports it.
    pub fn no_keepalive(mut self) -> Self {
        self.settings.keepalive = None;
        self
    }

    /// Whether to send the first calls of a new connection right behind its hello, without
    /// waiting a round trip for the server's answer (default true). Only a TCP server whose
    /// last accepted hello said it understands early calls gets them, in the codec it chose
    /// then. A server that no longer allows that codec refuses them unrun, and the channel
    /// dials again without them and sends them again, transparently; any other refusal (a
    /// wrong token, a busy server) then fails the first calls, with the error
    /// [`connect`](Self::connect) would have returned, rather than `connect` itself.
    pub fn early_calls(mut self, early_calls: bool) -> Self {
        self.settings.early_calls = early_calls;
        self
    }

    /// Whether a channel whose connection broke dials again on the next call (default true).
    pub fn reconnect(mut self, reconnect: bool) -> Self {
        self.reconnect = reconnect;
        self
    }

    /// The longest wait between two failed reconnect attempts (default 5 s); the wait starts
    /// at 50 ms and doubles per failure.
    pub fn max_reconnect_backoff(mut self, max: Duration) -> Self {
        self.max_reconnect_backoff = max;
        self
    }

    /// Presents `token` in the hello, for servers configured with
    /// [`ServerBuilder::token`](crate::ServerBuilder::token) (at most 255 bytes). It travels
    /// in clear text unless the channel also uses TLS.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.settings.token = Some(Token::new(token));
        self
    }

    /// Runs every connection inside TLS (ALPN `wirecall`), verifying the server's certificate
    /// against the configured CA and server name.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls(mut self, tls: ClientTlsConfig) -> Self {
        self.settings.tls = Some(tls);
        self
    }

    /// Overrides of the policies methods declare in their trait (`#[wirecall(timeout = ..,
    /// retries = .., concurrency = .., breaker)]`), for the channel's calls. The policy file
    /// named by `WIRECALL_POLICY_FILE` and the entries of `WIRECALL_POLICY` go over these when
    /// the channel is built (see [`Policies`] for the whole order); an unreadable one makes
    /// `connect` fail with [`Error::Config`].
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use wirecall_runtime::policy::{MethodPolicy, Policies};
    /// use wirecall_runtime::Channel;
    ///
    /// let slow_reports = MethodPolicy::new().with_timeout(Duration::from_secs(30));
    /// let channel = Channel::builder()
    ///     .policies(Policies::new().set("Reports.generate", slow_reports)?)
    ///     .connect("127.0.0.1:7000")
    ///     .await?;
    /// # let _ = channel;
    /// # Ok(())
    /// # }
    /// ```
    pub fn policies(mut self, policies: Policies) -> Self {
        self.policies = policies;
        self
    }

    /// The policies in code with the environment's over them.
    pub(crate) fn resolved_policies(&self) -> Result<Policies, Error> {
        let from_env = Policies::from_env().map_err(|err| Error::Config(err.to_string()))?;
        Ok(self.policies.clone().then(from_env))
    }

    /// Opens a TCP connection to `addr` and negotiates a codec.
    pub async fn connect<A: ToSocketAddrs>(self, addr: A) -> Result<Channel, Error> {
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host(addr)
            .await
            .map_err(|cause| Error::Connect {
                addr: "(address lookup)".to_owned(),
                cause,
            })?
            .collect();
        self.connect_to(Target::Tcp(addrs)).await
    }

    /// Connects to a server bound with
    /// [`ServerBuilder::bind_unix`](crate::ServerBuilder::bind_unix) and negotiates a codec.
    /// Reconnects like a TCP channel.
    #[cfg(unix)]
    pub async fn connect_unix(self, path: impl AsRef<Path>) -> Result<Channel, Error> {
        self.connect_to(Target::Unix(path.as_ref().to_path_buf()))
            .await
    }

    async fn connect_to(self, target: Target) -> Result<Channel, Error> {
        self.validate()?;
        let policies = self.resolved_policies()?;
        let connection = self.settings.dial(&target).await?;
        let redial = Redial::new(
            target,
            self.settings.clone(),
            self.max_reconnect_backoff,
            self.reconnect,
        );
        Ok(self.channel(connection, Some(redial), policies))
    }

    /// Negotiates over an already open stream (a Unix socket, an in-memory duplex, ...).
    /// Such a channel cannot reconnect by itself.
    pub async fn connect_with<T: Transport>(self, stream: T) -> Result<Channel, Error> {
        self.validate()?;
        let policies = self.resolved_policies()?;
        let connection = self.settings.open_stream(stream).await?;
        Ok(self.channel(connection, None, policies))
    }

    fn validate(&self) -> Result<(), Error> {
        if let Some(err) = &self.metadata_error {
            return Err(Error::Config(format!("channel metadata: {err}")));
        }
        self.settings.validate()
    }

    /// The channel over its first connection.
    fn channel(
        self,
        connection: Connection,
        redial: Option<Redial>,
        policies: Policies,
    ) -> Channel {
        let endpoint = Arc::new(Endpoint::new(connection, redial, &self.layers));
        self.channel_over(endpoint, PolicyTable::new(policies))
    }

    /// A channel to one server over `endpoint`, with these options' timeout and metadata.
    fn channel_over(&self, endpoint: Arc<Endpoint>, policies: PolicyTable) -> Channel {
        let core = Core {
            policies,
            trace: self.trace,
            layers: None,
            erases_args: endpoint.has_layers(),
            route: Route::Direct(endpoint),
        };
        Channel {
            core: Arc::new(core),
            timeout: self.timeout,
            metadata: self.default_metadata(),
            hash_key: None,
            uncompressed: false,
        }
    }

    /// What a balanced channel opens each endpoint with: these options, checked.
    pub(crate) fn endpoint_options(&self) -> Result<EndpointOptions, Error> {
        self.validate()?;
        Ok(EndpointOptions {
            settings: self.settings.clone(),
            layers: self.layers.clone(),
            max_reconnect_backoff: self.max_reconnect_backoff,
            timeout: self.timeout,
            metadata: self.default_metadata(),
            trace: self.trace,
        })
    }
}
