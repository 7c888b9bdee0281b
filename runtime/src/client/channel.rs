//! [`Channel`], the handle generated clients call through, and its one call surface: the same
//! methods, with the same signatures, whether the channel reaches one server or balances a
//! fleet.

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;

use super::args::UploadSlot;
use super::args::{Bare, CallArgs, EncodeArgs, Locked, RawArgs, SharedArgs};
use super::declared::Method;
use super::endpoint::options::EndpointOptions;
use super::endpoint::Endpoint;
use super::stack::call::{Call, Kind};
use super::stack::{Core, Route, Start};
use super::stream::item_stream::ItemStream;
use super::stream::raw::RawStream;
use crate::codec::{Codec, WireMessage};
use crate::discovery::balance::key_hash;
use crate::discovery::balanced::pool::EndpointStats;
use crate::error::{Error, ErrorCode};
use crate::metadata::{Metadata, MetadataError};
use crate::negotiate::PROTOCOL_VERSION;
use crate::policy::table::PolicyTable;
use crate::stream::{ItemMessage, Streaming};

/// A handle on the server (or the servers) a generated client calls, shared by every clone.
///
/// A channel reaches either one server ([`Channel::connect`], [`Channel::builder`]) or every
/// live endpoint of a service in a registry ([`Channel::balanced`]); its calls are the same
/// either way, so switching a client from one server to a fleet changes the line that makes
/// the channel and nothing else. Cheap to clone (an `Arc`); clones share the connections and
/// may be used from many tasks at once. Wrap it in any generated client with
/// `{Trait}Client::new(channel.clone())`: several services can share one channel.
///
/// Every call, whatever its shape, goes down one stack: the method's policy (its concurrency
/// limit and deadline), the balanced channel's own layers, one retry loop (failover on a
/// balanced channel), the method's circuit breaker on the endpoint, the channel options'
/// layers, and the connection. The book's Architecture chapter draws it.
///
/// **One server.** When the connection breaks, every call in flight on it fails at once with
/// [`Error::ConnectionClosed`] (such a call may or may not have run on the server). A channel
/// made by [`ChannelBuilder::connect`](crate::ChannelBuilder::connect) then reconnects on the
/// next call, waiting between failed attempts with a doubling backoff capped by
/// [`ChannelBuilder::max_reconnect_backoff`](crate::ChannelBuilder::max_reconnect_backoff);
/// calls made while it waits fail at once with [`Error::Unavailable`] (not sent). To a TCP
/// server that said last time that it understands early calls,
/// [`ChannelBuilder::connect`](crate::ChannelBuilder::connect) returns without waiting for the
/// server's hello, and the first calls travel right behind the client's (see
/// [`ChannelBuilder::early_calls`](crate::ChannelBuilder::early_calls)).
///
/// **A fleet.** See [`BalancedChannelBuilder`](crate::discovery::BalancedChannelBuilder) for
/// how a balanced channel picks, ejects, probes and fails over.
#[derive(Clone)]
pub struct Channel {
    pub(crate) core: Arc<Core>,
    pub(crate) timeout: Option<Duration>,
    /// Sent with every call through this handle (`None`: nothing).
    pub(crate) metadata: Option<Arc<Metadata>>,
    /// For [`Balance::ConsistentHash`](crate::discovery::Balance::ConsistentHash).
    pub(crate) hash_key: Option<u64>,
    /// The calls of this handle send their frames uncompressed.
    pub(crate) uncompressed: bool,
}

impl fmt::Debug for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Channel");
        match &self.core.route {
            Route::Direct(endpoint) => {
                let connection = endpoint.link.current();
                debug
                    .field("peer", &connection.peer)
                    .field("codec", &connection.codec)
            }
            Route::Balanced(route) => debug
                .field("service", &route.service())
                .field("endpoints", &route.endpoints()),
        };
        debug
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// A call's arguments, where they are (no layer will need them: held in an `H`) or shared
/// (some will).
enum Args<H> {
    Here(H),
    Shared(CallArgs),
}

impl<A: EncodeArgs + 'static> Args<Locked<A>> {
    /// Arguments of any type, behind a lock while here.
    fn new(args: A, share: bool) -> Self {
        if share {
            Self::Shared(CallArgs::new(args))
        } else {
            Self::Here(Locked::new(args))
        }
    }
}

impl<A: EncodeArgs + Sync + 'static> Args<Bare<A>> {
    /// `Sync` arguments, without a lock while here.
    fn bare(args: A, share: bool) -> Self {
        if share {
            Self::Shared(CallArgs::new_sync(args))
        } else {
            Self::Here(Bare::new(args))
        }
    }
}

impl<H: SharedArgs> Args<H> {
    fn parts(&self) -> (&dyn SharedArgs, Option<&CallArgs>) {
        match self {
            Self::Here(args) => (args, None),
            Self::Shared(args) => (args, Some(args)),
        }
    }
}

impl Channel {
    /// Calls `method` with `args` and waits for its reply, at most for the handle's timeout
    /// or the method's policy, whichever is shorter.
    ///
    /// Dropping the returned future before it completes cancels the call: the server is sent
    /// a `Cancel` frame and stops the handler. Generated clients call this; use it directly
    /// only for hand-written clients.
    pub fn call<'a, A: WireMessage, R: WireMessage>(
        &'a self,
        method: &'a Method,
        args: A,
    ) -> impl Future<Output = Result<R, Error>> + Send + 'a {
        self.unary(method, Args::new(args, self.core.erases_args))
    }

    /// [`call`](Self::call) for arguments that are `Sync` (generated ones): no lock.
    pub(crate) fn call_sync<'a, A: WireMessage + Sync, R: WireMessage>(
        &'a self,
        method: &'a Method,
        args: A,
    ) -> impl Future<Output = Result<R, Error>> + Send + 'a {
        self.unary(method, Args::bare(args, self.core.erases_args))
    }

    async fn unary<H: SharedArgs + 'static, R: WireMessage>(
        &self,
        method: &Method,
        args: Args<H>,
    ) -> Result<R, Error> {
        let call = self.start(method, Kind::Unary, &args, None, None);
        let _permit = call.admit()?;
        let reply = self.core.send(&call).await?;
        Ok(reply.codec.decode_shared(reply.payload)?)
    }

    /// Sends a one-way call: resolves once the frame is queued on the connection, without
    /// waiting for (or ever receiving) a reply. (On a connection opened with early calls,
    /// the first ones also wait for the server's hello: see
    /// [`ChannelBuilder::early_calls`](crate::ChannelBuilder::early_calls).)
    pub fn notify<'a, A: WireMessage>(
        &'a self,
        method: &'a Method,
        args: A,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'a {
        self.one_way(method, Args::new(args, self.core.erases_args))
    }

    /// [`notify`](Self::notify) for arguments that are `Sync` (generated ones): no lock.
    pub(crate) fn notify_sync<'a, A: WireMessage + Sync>(
        &'a self,
        method: &'a Method,
        args: A,
    ) -> impl Future<Output = Result<(), Error>> + Send + 'a {
        self.one_way(method, Args::bare(args, self.core.erases_args))
    }

    async fn one_way<H: SharedArgs + 'static>(
        &self,
        method: &Method,
        args: Args<H>,
    ) -> Result<(), Error> {
        let call = self.start(method, Kind::OneWay, &args, None, None);
        let _permit = call.admit()?;
        self.core.send(&call).await.map(drop)
    }

    /// Opens a server stream of `method` with `args` and returns its items, as `M`s, as they
    /// come (protocol version 3; an older server fails it with [`Error::StreamsUnsupported`]
    /// before anything is sent). The call's deadline (the handle's timeout or the method's
    /// policy) bounds the **whole** stream, not its first item: open a stream that should
    /// outlive it through [`without_timeout`](Self::without_timeout) or a longer
    /// [`with_timeout`](Self::with_timeout). Dropping the stream cancels the call.
    ///
    /// The open goes down the stack like any call: the method's concurrency limit (the
    /// stream holds its place while it is open), its circuit breaker (which counts a failed
    /// open and an error that ends the stream), the layers (they see the open as a
    /// [`Request`](crate::client::Request) whose
    /// [`is_stream`](crate::client::Request::is_stream) is true, not the items) and failover.
    /// Generated clients call this for each method that returns `Streaming<T>`.
    pub async fn open_stream<A: WireMessage, M: ItemMessage>(
        &self,
        method: &Method,
        args: A,
    ) -> Result<ItemStream<M::Item>, Error> {
        let args = Args::new(args, self.core.erases_args);
        let call = self.start(method, Kind::Stream, &args, None, None);
        self.open(&call).await.map(ItemStream::new::<M>)
    }

    /// Opens a stream of `method` that takes an upload (client or bidirectional streaming):
    /// `items` are sent to the server, as `U` messages, as its credit allows, then the
    /// upload's end; the returned stream yields the server's items (`M`s: the one reply of a
    /// client-streaming method, or the items of a bidirectional one). The server may answer
    /// before the upload is over: the upload then stops, and the answer is there at once.
    /// Deadlines, cancellation and the stack are those of [`open_stream`](Self::open_stream).
    /// Generated clients call this.
    pub async fn open_upload<A, U, M, S>(
        &self,
        method: &Method,
        args: A,
        items: S,
    ) -> Result<ItemStream<M::Item>, Error>
    where
        A: WireMessage,
        U: ItemMessage,
        M: ItemMessage,
        S: Stream<Item = U::Item> + Send + 'static,
    {
        let args = Args::new(args, self.core.erases_args);
        let upload = UploadSlot::new::<U>(Streaming::new(items));
        let call = self.start(method, Kind::Stream, &args, Some(&upload), None);
        self.open(&call).await.map(ItemStream::new::<M>)
    }

    /// Calls `method` with an argument payload already encoded in `codec`, and returns the
    /// reply payload as it arrived, undecoded: an untyped call, for tools that learn a service
    /// at run time (through reflection) rather than from its Rust trait. A connection that
    /// negotiated another codec fails the call with [`Error::Config`] before anything is sent:
    /// build the channel with that codec alone.
    ///
    /// With the JSON codec the arguments are an object keyed by argument name and the reply
    /// an object with `value` (or `ok` and `err`); the book's wire chapter has every codec's
    /// form. Deadlines, metadata, layers, cancellation on drop and errors are those of
    /// [`call`](Self::call).
    ///
    /// ```no_run
    /// # async fn run(addr: std::net::SocketAddr) -> Result<(), wirecall_runtime::Error> {
    /// use wirecall_runtime::client::Method;
    /// use wirecall_runtime::{Channel, Codec};
    ///
    /// let channel = Channel::builder().codec(Codec::Json).connect(addr).await?;
    /// let method = Method::named("UserService", "get_user_id");
    /// let reply = channel
    ///     .call_raw(&method, Codec::Json, r#"{"name":"fanly"}"#.into())
    ///     .await?;
    /// println!("{}", String::from_utf8_lossy(&reply)); // {"value":7}
    /// # Ok(())
    /// # }
    /// ```
    pub async fn call_raw(
        &self,
        method: &Method,
        codec: Codec,
        args: Bytes,
    ) -> Result<Bytes, Error> {
        let args = Args::new(RawArgs(args), self.core.erases_args);
        let call = self.start(method, Kind::Unary, &args, None, Some(codec));
        let _permit = call.admit()?;
        Ok(self.core.send(&call).await?.payload)
    }

    /// Sends a one-way call whose argument payload is already encoded in `codec`: the one-way
    /// counterpart of [`call_raw`](Self::call_raw).
    pub async fn notify_raw(
        &self,
        method: &Method,
        codec: Codec,
        args: Bytes,
    ) -> Result<(), Error> {
        let args = Args::new(RawArgs(args), self.core.erases_args);
        let call = self.start(method, Kind::OneWay, &args, None, Some(codec));
        let _permit = call.admit()?;
        self.core.send(&call).await.map(drop)
    }

    /// A call of any shape through this handle, with its policy and deadline (the stack's
    /// stages 1 and 3).
    fn start<'a, H: SharedArgs + 'static>(
        &'a self,
        method: &'a Method,
        kind: Kind,
        args: &'a Args<H>,
        upload: Option<&'a UploadSlot>,
        raw_codec: Option<Codec>,
    ) -> Call<'a> {
        let (args, shared_args) = args.parts();
        self.core.call(Start {
            method,
            kind,
            args,
            shared_args,
            upload,
            raw_codec,
            timeout: self.timeout,
            metadata: self.metadata.as_ref(),
            hash_key: self.hash_key,
            uncompressed: self.uncompressed,
        })
    }

    /// Opens stream `call` down the stack; the stream holds the method's concurrency place
    /// for as long as it is open.
    async fn open(&self, call: &Call<'_>) -> Result<RawStream, Error> {
        // (Unboxed here: the caller's stream holds it inline.)
        let permit = call.admit_stream()?;
        let reply = self.core.send(call).await?;
        let Some(mut stream) = reply.stream else {
            return Err(Error::Layer {
                code: ErrorCode::LayerFailed,
                cause: "a layer answered a stream call with a reply that carries no stream".into(),
            });
        };
        if let Some(permit) = permit {
            stream.hold_permit(permit);
        }
        Ok(*stream)
    }

    /// The deadline of calls made through this handle, retries included (`None`: calls wait
    /// forever, unless their method's policy sets a deadline).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// A handle on the same connections whose calls use `timeout` as their deadline.
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        Self {
            timeout: Some(timeout),
            ..self.clone()
        }
    }

    /// A handle on the same connections whose calls have no deadline.
    pub fn without_timeout(&self) -> Self {
        Self {
            timeout: None,
            ..self.clone()
        }
    }

    /// A handle whose calls also carry `key: value` in their metadata (replacing a value this
    /// handle already sends for `key`), on whichever server they go to. A server on protocol
    /// version 1 receives no metadata.
    ///
    /// ```no_run
    /// # async fn f(channel: wirecall_runtime::Channel) -> Result<(), wirecall_runtime::MetadataError> {
    /// let tenant = channel.with_metadata("tenant", "acme")?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_metadata(
        &self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Self, MetadataError> {
        Ok(Self {
            metadata: Some(Metadata::extended(self.metadata.as_deref(), key, value)?),
            ..self.clone()
        })
    }

    /// The metadata every call through this handle carries.
    pub fn metadata(&self) -> &Metadata {
        static EMPTY: Metadata = Metadata::new();
        self.metadata.as_deref().unwrap_or(&EMPTY)
    }

    /// A handle whose calls carry `key` for
    /// [`Balance::ConsistentHash`](crate::discovery::Balance::ConsistentHash): calls with the
    /// same key go to the same endpoint while the endpoint set is stable. (A channel to one
    /// server has one endpoint for every key.)
    pub fn with_hash_key(&self, key: impl AsRef<[u8]>) -> Self {
        Self {
            hash_key: Some(key_hash(key.as_ref())),
            ..self.clone()
        }
    }

    /// A handle on the same connections whose calls send their requests, one-way calls and
    /// uploaded items uncompressed, whatever the connection negotiated: for payloads that
    /// mix a secret with data an attacker chooses (where compressed sizes could leak the
    /// secret, as in CRIME and BREACH), or that are known not to compress. The server still
    /// compresses its replies by its own settings. See the book's "Compression".
    pub fn without_compression(&self) -> Self {
        Self {
            uncompressed: true,
            ..self.clone()
        }
    }

    /// The codec of the connection calls use now: a balanced channel's last opened endpoint
    /// connection, or, before it has one, the codec it offers first.
    pub fn codec(&self) -> Codec {
        match &self.core.route {
            Route::Direct(endpoint) => endpoint.link.current().codec,
            Route::Balanced(route) => route.codec(),
        }
    }

    /// The server's address, for a channel to one server over TCP (`None` for a Unix socket
    /// or a stream the caller supplied, and for a balanced channel: see
    /// [`endpoints`](Self::endpoints)).
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        match &self.core.route {
            Route::Direct(endpoint) => endpoint.link.peer_addr(),
            Route::Balanced(_) => None,
        }
    }

    /// The protocol version of the connection calls use now (3: streams and metadata; 2: an
    /// older server, metadata but no streams; 1: neither); for a balanced channel, that of its
    /// last opened endpoint connection (this build's before it has one).
    pub fn protocol_version(&self) -> u8 {
        match &self.core.route {
            Route::Direct(endpoint) => endpoint.link.current().version,
            Route::Balanced(route) => route.protocol_version().unwrap_or(PROTOCOL_VERSION),
        }
    }

    /// The service a balanced channel calls (`None` for a channel to one server).
    pub fn service(&self) -> Option<&str> {
        match &self.core.route {
            Route::Direct(_) => None,
            Route::Balanced(route) => Some(route.service()),
        }
    }

    /// The endpoints a balanced channel knows now, with their counters (empty for a channel
    /// to one server).
    pub fn endpoints(&self) -> Vec<EndpointStats> {
        match &self.core.route {
            Route::Direct(_) => Vec::new(),
            Route::Balanced(route) => route.endpoints(),
        }
    }

    /// Whether the channel's connection has closed (for a balanced channel: every endpoint
    /// connection, or the channel itself). Calls on a closed channel to one server reconnect
    /// (when the channel can) or fail at once with [`Error::Unavailable`].
    pub fn is_closed(&self) -> bool {
        match &self.core.route {
            Route::Direct(endpoint) => endpoint.link.current().pending.is_closed(),
            Route::Balanced(route) => route.is_closed(),
        }
    }

    /// Calls currently waiting for a reply, over every connection of the channel.
    pub fn in_flight(&self) -> usize {
        match &self.core.route {
            Route::Direct(endpoint) => endpoint.link.current().pending.len(),
            Route::Balanced(route) => route.in_flight(),
        }
    }

    /// Closes the channel, for every clone, and waits until its connections have closed.
    ///
    /// New calls (on any clone) fail at once with [`Error::Unavailable`] and the channel never
    /// reconnects. Calls already in flight finish first, each within its own timeout. Then the
    /// frames still queued (one-way calls included) are written, the connections are shut
    /// down, and `close` returns once the servers have closed their side too (or after 5 s,
    /// when it stops waiting and drops them). Calling it again returns at once.
    pub async fn close(&self) {
        match &self.core.route {
            Route::Direct(endpoint) => endpoint.close().await,
            Route::Balanced(route) => route.close().await,
        }
    }
}

impl Channel {
    /// A channel to one endpoint a balanced channel holds, for its health checks: the
    /// endpoint options' timeout and metadata, no policies (the health service is not the
    /// balanced service).
    pub(crate) fn on_endpoint(endpoint: Arc<Endpoint>, options: &EndpointOptions) -> Self {
        let core = Core {
            policies: PolicyTable::default(),
            trace: options.trace,
            layers: None,
            erases_args: endpoint.has_layers(),
            route: Route::Direct(endpoint),
        };
        Self {
            core: Arc::new(core),
            timeout: options.timeout,
            metadata: options.metadata.clone(),
            hash_key: None,
            uncompressed: false,
        }
    }
}
