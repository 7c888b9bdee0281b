//! The client side: a [`Channel`] is one negotiated connection that any number of generated
//! clients (and tasks) share. Calls are multiplexed by request id and may complete in any
//! order.

mod pending;
mod reader;
pub mod reply_metadata;
mod request;

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
#[cfg(unix)]
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::future::Either;
use tokio::net::{TcpStream, ToSocketAddrs};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::auth::Token;
use crate::codec::{Codec, WireMessage};
use crate::context::CallContext;
use crate::error::BoxError;
use crate::error::{Error, ErrorCode};
use crate::frame::{
    ErrorBody, Frame, FrameBuf, FrameCodec, FrameKind, DEFAULT_MAX_FRAME_LEN, FLAG_METADATA,
};
use crate::layers::{Layers, Next};
use crate::metadata::{Metadata, MetadataError};
use crate::method::MethodId;
use crate::negotiate::{
    check_codec_list, client_handshake, ClientHello, CodecList, Negotiated, NegotiationError,
    MIN_PROTOCOL_VERSION, PROTOCOL_VERSION,
};
#[cfg(feature = "tls")]
use crate::tls::ClientTlsConfig;
use crate::trace::{TraceContext, TRACEPARENT};
use crate::transport::{configure_tcp, Transport};
use crate::writer::{Delivery, FrameSink};
use pending::PendingCalls;
use request::{Connector, EncodeArgs, RawArgs};
pub use request::{Reply, Request};

/// The default per-call deadline.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The default limit for connecting plus the handshake.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default silence after which the client pings the server.
pub const DEFAULT_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(30);
/// The default wait for any frame after a keepalive ping.
pub const DEFAULT_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(10);
/// The default cap of the wait between reconnect attempts.
pub const DEFAULT_MAX_RECONNECT_BACKOFF: Duration = Duration::from_secs(5);

/// A handle on a connection to a wirecall server, shared by every clone.
///
/// Cheap to clone (an `Arc`); clones share the connection and may be used from many tasks at
/// once. The connection closes when the last clone is dropped. Create one with
/// [`Channel::connect`] or [`Channel::builder`], then wrap it in any generated client with
/// `{Trait}Client::new(channel.clone())`: several services can share one connection.
///
/// When the connection breaks, every call in flight on it fails at once with
/// [`Error::ConnectionClosed`] (such a call may or may not have run on the server). A channel
/// made by [`ChannelBuilder::connect`] then reconnects on the next call, waiting between
/// failed attempts with a doubling backoff capped by
/// [`ChannelBuilder::max_reconnect_backoff`]; calls made while it waits fail fast.
#[derive(Clone)]
pub struct Channel {
    shared: Arc<ChannelShared>,
    timeout: Option<Duration>,
    /// Sent with every call through this handle (`None`: nothing).
    metadata: Option<Arc<Metadata>>,
    /// The layers added with [`ChannelBuilder::layer`] around the connection (`None`: none,
    /// and calls go straight to the connection).
    layers: Option<Next<Request, Reply>>,
}

struct ChannelShared {
    current: Mutex<Arc<Connection>>,
    /// Start a trace for calls made outside one (see [`ChannelBuilder::trace`]).
    trace: bool,
    /// Set by [`Channel::close`]: no new call, no reconnect.
    closed_by_owner: AtomicBool,
    /// How to dial again; `None` for channels over a stream the caller supplied.
    redial: Option<Redial>,
}

struct Redial {
    target: Target,
    options: ChannelBuilder,
    /// Also serialises reconnects: one attempt at a time, the others wait for its outcome.
    backoff: tokio::sync::Mutex<Backoff>,
}

struct Backoff {
    not_before: Instant,
    delay: Duration,
}

/// Where a channel dials (again).
enum Target {
    Tcp(Vec<SocketAddr>),
    #[cfg(unix)]
    Unix(PathBuf),
}

/// How long [`Channel::close`] waits for the server to close its side before it drops the
/// connection.
const CLOSE_LIMIT: Duration = Duration::from_secs(5);

/// Why calls on a channel closed with [`Channel::close`] fail.
const CLOSED_BY_OWNER: &str = "the channel was closed with Channel::close";

/// The first wait after a failed reconnect; it doubles per failure up to the configured cap.
const FIRST_BACKOFF: Duration = Duration::from_millis(50);

pub(crate) struct Connection {
    codec: Codec,
    /// The negotiated protocol version: metadata travels from version 2 on.
    version: u8,
    sink: FrameSink,
    pending: Arc<PendingCalls>,
    next_request_id: AtomicU64,
    /// The largest frame this connection may send: the channel's `max_frame_len`, lowered to
    /// the server's announced limit (version 2).
    send_limit: u32,
    peer: Option<SocketAddr>,
    reader: JoinHandle<()>,
    /// The reader and writer tasks, so that closing can wait for both to end.
    tasks: TaskTracker,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // The writer sends what is queued, then shuts the stream down.
        self.sink.close();
        self.reader.abort();
    }
}

impl fmt::Debug for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let connection = self.shared.current();
        f.debug_struct("Channel")
            .field("peer", &connection.peer)
            .field("codec", &connection.codec)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Channel {
    /// Connects to `addr` offering every compiled-in codec, with default options.
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> Result<Self, Error> {
        Self::builder().connect(addr).await
    }

    /// Options for a new connection.
    pub fn builder() -> ChannelBuilder {
        ChannelBuilder::default()
    }

    /// The codec negotiated for the current connection.
    pub fn codec(&self) -> Codec {
        self.shared.current().codec
    }

    /// The server's address, for TCP connections.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.shared.current().peer
    }

    /// The deadline of calls made through this handle (`None`: calls wait forever).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// A handle on the same connection whose calls use `timeout` as their deadline.
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        Self {
            timeout: Some(timeout),
            ..self.clone()
        }
    }

    /// A handle on the same connection whose calls have no deadline.
    pub fn without_timeout(&self) -> Self {
        Self {
            timeout: None,
            ..self.clone()
        }
    }

    /// A handle on the same connection whose calls also carry `key: value` in their metadata
    /// (replacing a value this handle already sends for `key`). A server on protocol version 1
    /// receives no metadata.
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
        let mut metadata = self.metadata.as_deref().cloned().unwrap_or_default();
        metadata.insert(key, value)?;
        Ok(Self {
            metadata: Some(Arc::new(metadata)),
            ..self.clone()
        })
    }

    /// The metadata every call through this handle carries.
    pub fn metadata(&self) -> &Metadata {
        static EMPTY: Metadata = Metadata::new();
        self.metadata.as_deref().unwrap_or(&EMPTY)
    }

    /// The protocol version of the current connection (2: metadata travels; 1: an older
    /// server, no metadata).
    pub fn protocol_version(&self) -> u8 {
        self.shared.current().version
    }

    /// Whether the current connection has closed. Calls on a closed channel reconnect (when
    /// the channel can) or fail at once with [`Error::ConnectionClosed`].
    pub fn is_closed(&self) -> bool {
        self.shared.current().pending.is_closed()
    }

    /// Calls currently waiting for a reply on the current connection.
    pub fn in_flight(&self) -> usize {
        self.shared.current().pending.len()
    }

    /// Calls `method` with `args` and waits for its reply, at most for the handle's timeout.
    ///
    /// Dropping the returned future before it completes cancels the call: the server is sent a
    /// `Cancel` frame and stops the handler. Generated clients call this; use it directly only
    /// for hand-written clients.
    pub async fn call<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        args: A,
    ) -> Result<R, Error> {
        if let Some(layers) = &self.layers {
            return Box::pin(self.call_layered(layers, method, args)).await;
        }
        let connection = self.shared.connection().await?;
        let outgoing = Outgoing::new(self.metadata.as_deref(), self.shared.trace);
        connection.call(method, args, self.timeout, outgoing).await
    }

    /// The connection a call would go out on now (dialling again if the channel can and the
    /// last one closed).
    pub(crate) async fn ready_connection(&self) -> Result<Arc<Connection>, Error> {
        self.shared.connection().await
    }

    /// Starts a call on `connection` (from [`ready_connection`](Self::ready_connection)) with
    /// borrowed arguments and an explicit deadline, so that a balanced channel can send the
    /// same arguments to another endpoint. The arguments are encoded before this returns, so
    /// the future holds no borrow of them. (A balanced channel calls its endpoints' connections
    /// directly: layers of the endpoint channels are not on this path.)
    pub(crate) fn call_on<'a, A: WireMessage, R: WireMessage>(
        &'a self,
        connection: &'a Connection,
        method: MethodId,
        args: &A,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<R, Error>> + Send + 'a {
        let outgoing = Outgoing::new(self.metadata.as_deref(), self.shared.trace);
        let trace = outgoing.trace;
        let start = connection.encode_request(method, args, timeout, &outgoing);
        async move {
            let (request_id, frame) = start?;
            let payload = connection
                .exchange(method, request_id, frame, timeout, trace)
                .await?;
            Ok(connection.codec.decode(&payload)?)
        }
    }

    /// Calls `method` with an argument payload already encoded in this channel's codec
    /// ([`codec`](Self::codec)) and returns the reply payload as it arrived, undecoded: an
    /// untyped call, for tools that learn a service at run time (through reflection) rather
    /// than from its Rust trait. Name the method with [`method_id`](crate::method_id)`(service,
    /// method)`.
    ///
    /// With the JSON codec the arguments are an object keyed by argument name and the reply
    /// an object with `value` (or `ok` and `err`); the book's wire chapter has every codec's
    /// form. Deadlines, metadata, layers, cancellation on drop and errors are those of
    /// [`call`](Self::call).
    ///
    /// ```no_run
    /// # async fn run(addr: std::net::SocketAddr) -> Result<(), wirecall_runtime::Error> {
    /// use wirecall_runtime::{method_id, Channel, Codec};
    ///
    /// let channel = Channel::builder().codec(Codec::Json).connect(addr).await?;
    /// let reply = channel
    ///     .call_raw(method_id("UserService", "get_user_id"), r#"{"name":"fanly"}"#.into())
    ///     .await?;
    /// println!("{}", String::from_utf8_lossy(&reply)); // {"value":7}
    /// # Ok(())
    /// # }
    /// ```
    pub async fn call_raw(&self, method: MethodId, args: Bytes) -> Result<Bytes, Error> {
        let args = RawArgs(args);
        if let Some(layers) = &self.layers {
            let request = self.layered_request(method, false, args);
            let reply = Box::pin(layers.call_shared(request))
                .await
                .map_err(Error::from_layer)?;
            return Ok(reply.payload);
        }
        let connection = self.shared.connection().await?;
        let outgoing = Outgoing::new(self.metadata.as_deref(), self.shared.trace);
        connection
            .call_encoded(method, &args, self.timeout, outgoing)
            .await
    }

    /// A call through the channel's layers: its arguments travel type-erased to the innermost
    /// service, which encodes them with the connection's codec; the reply is decoded here.
    async fn call_layered<A: WireMessage, R: WireMessage>(
        &self,
        layers: &Next<Request, Reply>,
        method: MethodId,
        args: A,
    ) -> Result<R, Error> {
        let request = self.layered_request(method, false, args);
        let reply = layers
            .call_shared(request)
            .await
            .map_err(Error::from_layer)?;
        Ok(reply.codec.decode(&reply.payload)?)
    }

    fn layered_request<E: EncodeArgs + 'static>(
        &self,
        method: MethodId,
        one_way: bool,
        args: E,
    ) -> Request {
        Request {
            method,
            one_way,
            timeout: self.timeout,
            metadata: self.metadata.clone(),
            trace: Outgoing::new(self.metadata.as_deref(), self.shared.trace).trace,
            args: Box::new(args),
        }
    }

    /// Sends a one-way call: resolves once the frame is queued on the connection, without
    /// waiting for (or ever receiving) a reply.
    pub async fn notify<A: WireMessage>(&self, method: MethodId, args: A) -> Result<(), Error> {
        if let Some(layers) = &self.layers {
            let request = self.layered_request(method, true, args);
            return layers
                .call_shared(request)
                .await
                .map(drop)
                .map_err(Error::from_layer);
        }
        let connection = self.shared.connection().await?;
        let outgoing = Outgoing::new(self.metadata.as_deref(), self.shared.trace);
        connection
            .notify(method, &args, self.timeout, outgoing)
            .await
    }

    /// Sends a one-way call whose argument payload is already encoded in this channel's
    /// codec: the one-way counterpart of [`call_raw`](Self::call_raw).
    pub async fn notify_raw(&self, method: MethodId, args: Bytes) -> Result<(), Error> {
        let args = RawArgs(args);
        if let Some(layers) = &self.layers {
            let request = self.layered_request(method, true, args);
            return layers
                .call_shared(request)
                .await
                .map(drop)
                .map_err(Error::from_layer);
        }
        let connection = self.shared.connection().await?;
        let outgoing = Outgoing::new(self.metadata.as_deref(), self.shared.trace);
        connection
            .notify(method, &args, self.timeout, outgoing)
            .await
    }

    /// Closes the channel, for every clone, and waits until its connection has closed.
    ///
    /// New calls (on any clone) fail at once with [`Error::ConnectionClosed`] and the channel
    /// never reconnects. Calls already in flight finish first, each within its own timeout.
    /// Then the frames still queued (one-way calls included) are written, the connection is
    /// shut down, and `close` returns once the server has closed its side too (or after 5 s,
    /// when it stops waiting and drops the connection). Calling it again returns at once.
    pub async fn close(&self) {
        if self.shared.closed_by_owner.swap(true, Ordering::AcqRel) {
            return;
        }
        let connection = self.shared.current();
        connection.pending.drained().await;
        connection.pending.close_all(CLOSED_BY_OWNER);
        connection.sink.close();
        connection.tasks.close();
        if tokio::time::timeout(CLOSE_LIMIT, connection.tasks.wait())
            .await
            .is_err()
        {
            tracing::debug!("the server did not close its side in time; dropping the connection");
            connection.reader.abort();
            connection.tasks.wait().await;
        }
    }
}

impl ChannelShared {
    fn current(&self) -> Arc<Connection> {
        // Only ever held to clone or swap an `Arc`, so a poisoned lock is still consistent.
        Arc::clone(&self.current.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The connection to use for a call: the current one, or a new one if it closed.
    async fn connection(&self) -> Result<Arc<Connection>, Error> {
        if self.closed_by_owner.load(Ordering::Acquire) {
            return Err(Error::closed(CLOSED_BY_OWNER));
        }
        let current = self.current();
        match &self.redial {
            Some(redial) if current.pending.is_closed() => self.reconnect(redial).await,
            _ => Ok(current),
        }
    }

    async fn reconnect(&self, redial: &Redial) -> Result<Arc<Connection>, Error> {
        let mut backoff = redial.backoff.lock().await;
        // Another call may have reconnected while this one waited for the lock.
        let current = self.current();
        if !current.pending.is_closed() {
            return Ok(current);
        }
        let now = Instant::now();
        if now < backoff.not_before {
            return Err(Error::closed(format!(
                "{}; the next reconnect attempt is in {:?}",
                current.closed_reason(),
                backoff.not_before - now
            )));
        }
        match redial.options.dial(&redial.target).await {
            Ok(connection) => {
                let connection = Arc::new(connection);
                *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Arc::clone(&connection);
                backoff.delay = FIRST_BACKOFF;
                tracing::debug!(peer = ?connection.peer, "reconnected");
                Ok(connection)
            }
            Err(err) => {
                backoff.not_before = Instant::now() + backoff.delay;
                backoff.delay = (backoff.delay * 2).min(redial.options.max_reconnect_backoff);
                tracing::debug!(%err, "reconnect failed");
                Err(err)
            }
        }
    }
}

impl Connection {
    async fn call<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        args: A,
        timeout: Option<Duration>,
        outgoing: Outgoing<'_>,
    ) -> Result<R, Error> {
        // Encoded before the first await: the future then holds `args` (`Send`), never a
        // borrow of them (which would need `A: Sync`).
        let (request_id, frame) = self.encode_request(method, &args, timeout, &outgoing)?;
        drop(args);
        let payload = self
            .exchange(method, request_id, frame, timeout, outgoing.trace)
            .await?;
        Ok(self.codec.decode(&payload)?)
    }

    /// A call whose reply payload is returned still encoded.
    async fn call_encoded<E: EncodeArgs + ?Sized>(
        &self,
        method: MethodId,
        args: &E,
        timeout: Option<Duration>,
        outgoing: Outgoing<'_>,
    ) -> Result<Bytes, Error> {
        let (request_id, frame) = self.encode_request(method, args, timeout, &outgoing)?;
        self.exchange(method, request_id, frame, timeout, outgoing.trace)
            .await
    }

    /// A call's frame, ready to send, with the request id it uses.
    fn encode_request<E: EncodeArgs + ?Sized>(
        &self,
        method: MethodId,
        args: &E,
        timeout: Option<Duration>,
        outgoing: &Outgoing<'_>,
    ) -> Result<(u64, Bytes), Error> {
        let request_id = self.next_request_id.fetch_add(1, Ordering::Relaxed);
        let frame = self.encode(
            FrameKind::Request,
            request_id,
            method,
            deadline_ms(timeout),
            args,
            outgoing,
        )?;
        Ok((request_id, frame))
    }

    /// Sends a request frame and waits for its reply, at most `timeout`; the reply's payload
    /// (after its metadata, which goes to [`reply_metadata`]) on success.
    async fn exchange(
        &self,
        method: MethodId,
        request_id: u64,
        frame: Bytes,
        timeout: Option<Duration>,
        trace: Option<TraceContext>,
    ) -> Result<Bytes, Error> {
        let span = tracing::debug_span!(
            "wirecall.call",
            side = "client",
            %method,
            request_id,
            codec = %self.codec,
            trace_id = trace.map(|t| t.trace_id_hex()),
            span_id = trace.map(|t| t.span_id_hex()),
        );
        let reply = self.pending.register(request_id)?;
        let mut cancel = CancelOnDrop {
            connection: self,
            request_id,
            armed: true,
        };
        let exchange = async {
            // A lone call writes its own frame; among many, the writer task batches them.
            let delivery = if self.pending.len() <= 1 {
                Delivery::Now
            } else {
                Delivery::Background
            };
            self.sink
                .send(frame, delivery)
                .await
                .map_err(|_| Error::closed(self.closed_reason()))?;
            reply
                .await
                .map_err(|_| Error::closed(self.closed_reason()))?
        };
        let exchange = if span.is_disabled() {
            Either::Left(exchange)
        } else {
            Either::Right(exchange.instrument(span))
        };
        let deadline = timeout.map(|after| Instant::now() + after);
        let frame = match deadline {
            Some(at) => {
                tokio::time::timeout_at(at, exchange)
                    .await
                    .map_err(|_| Error::Timeout {
                        after: timeout.unwrap_or_default(),
                    })??
            }
            None => exchange.await?,
        };
        cancel.armed = false;
        match self.reply_payload(method, frame) {
            // The server's copy of the deadline can fire a moment before ours: it is the same
            // deadline, so the caller sees the same error either way. Well before ours, it is
            // a time limit of the server's own (a timeout layer), reported as the server's.
            Err(Error::Remote {
                code: ErrorCode::DeadlineExceeded,
                ..
            }) if deadline.is_some_and(|at| Instant::now() + SAME_DEADLINE >= at) => {
                Err(Error::Timeout {
                    after: timeout.unwrap_or_default(),
                })
            }
            other => other,
        }
    }

    /// Sends a one-way call; resolves once it is queued.
    ///
    /// Encoded before this returns: the future holds no borrow of `args`, so it is `Send`
    /// whatever they are.
    fn notify<E: EncodeArgs + ?Sized>(
        &self,
        method: MethodId,
        args: &E,
        timeout: Option<Duration>,
        outgoing: Outgoing<'_>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        let frame = self.encode_notify(method, args, &outgoing);
        async move { self.send_notify(frame?, timeout).await }
    }

    fn encode_notify<E: EncodeArgs + ?Sized>(
        &self,
        method: MethodId,
        args: &E,
        outgoing: &Outgoing<'_>,
    ) -> Result<Bytes, Error> {
        let request_id = self.next_request_id.fetch_add(1, Ordering::Relaxed);
        self.encode(FrameKind::Notify, request_id, method, 0, args, outgoing)
    }

    async fn send_notify(&self, frame: Bytes, timeout: Option<Duration>) -> Result<(), Error> {
        if self.pending.is_closed() {
            return Err(Error::closed(self.closed_reason()));
        }
        let send = self.sink.send(frame, Delivery::Background);
        match timeout {
            Some(after) => tokio::time::timeout(after, send)
                .await
                .map_err(|_| Error::Timeout { after })?,
            None => send.await,
        }
        .map_err(|_| Error::closed(self.closed_reason()))
    }

    fn encode<E: EncodeArgs + ?Sized>(
        &self,
        kind: FrameKind,
        request_id: u64,
        method: MethodId,
        deadline_ms: u32,
        args: &E,
        outgoing: &Outgoing<'_>,
    ) -> Result<Bytes, Error> {
        let mut frame = match (self.version >= 2, outgoing.metadata, outgoing.trace) {
            // Nothing to send, or a version 1 server that cannot receive it.
            (false, ..) | (true, None, None) => FrameBuf::with_capacity(64),
            (true, Some(metadata), None) => FrameBuf::with_metadata(64, metadata),
            (true, metadata, Some(trace)) => {
                let mut metadata = metadata.cloned().unwrap_or_default();
                metadata.insert(TRACEPARENT, trace.to_traceparent())?;
                FrameBuf::with_metadata(64, &metadata)
            }
        };
        args.encode_to(self.codec, frame.payload_writer())?;
        Ok(frame.finish(kind, request_id, method, deadline_ms, self.send_limit)?)
    }

    /// The payload of a Response frame, or the caller's error for an Error frame.
    fn reply_payload(&self, method: MethodId, frame: Frame) -> Result<Bytes, Error> {
        let payload = if frame.flags & FLAG_METADATA != 0 {
            let (metadata, payload) = Metadata::decode(frame.payload)?;
            reply_metadata::deliver(metadata);
            payload
        } else {
            frame.payload
        };
        match frame.kind {
            FrameKind::Response => Ok(payload),
            _ => {
                let body = ErrorBody::decode(&payload);
                Err(Error::from_remote(method, body.code, body.message))
            }
        }
    }

    fn closed_reason(&self) -> String {
        self.pending
            .closed_reason()
            .unwrap_or_else(|| "the connection's tasks ended".to_owned())
    }
}

/// What a call sends besides its arguments.
struct Outgoing<'a> {
    metadata: Option<&'a Metadata>,
    trace: Option<TraceContext>,
}

impl<'a> Outgoing<'a> {
    /// With the trace context of a new call: a child of the server call it is made from (so
    /// a handler's calls join the trace of the call it serves), of a `traceparent` the caller
    /// set by hand, or, with `start_trace` (tracing on for the channel), a new trace.
    fn new(metadata: Option<&'a Metadata>, start_trace: bool) -> Self {
        let trace = CallContext::with_current(|call| call.trace())
            .flatten()
            .or_else(|| {
                metadata
                    .and_then(|metadata| metadata.get(TRACEPARENT))
                    .and_then(TraceContext::parse)
            })
            .map(|parent| parent.child())
            .or_else(|| start_trace.then(TraceContext::new_root));
        Self { metadata, trace }
    }
}

/// How close to the caller's own deadline a server's `DeadlineExceeded` must come to be the
/// same deadline (the server starts its clock later, and counts whole milliseconds).
const SAME_DEADLINE: Duration = Duration::from_millis(5);

/// The wire deadline: milliseconds, at least 1 so that a tiny timeout is not read as "none".
fn deadline_ms(timeout: Option<Duration>) -> u32 {
    timeout.map_or(0, |t| t.as_millis().clamp(1, u128::from(u32::MAX)) as u32)
}

/// Tells the server to stop a call whose caller gave up (timeout or dropped future).
struct CancelOnDrop<'a> {
    connection: &'a Connection,
    request_id: u64,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed && self.connection.pending.remove(self.request_id) {
            // Best effort: if the queue is full the reply will simply be discarded on arrival.
            let cancel = Frame::control(FrameKind::Cancel, self.request_id).to_bytes();
            self.connection.sink.send_now(cancel);
        }
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
    codecs: Vec<Codec>,
    timeout: Option<Duration>,
    connect_timeout: Duration,
    max_frame_len: u32,
    keepalive: Option<Keepalive>,
    reconnect: bool,
    max_reconnect_backoff: Duration,
    token: Option<Token>,
    metadata: Metadata,
    /// The first invalid `metadata(..)` entry, reported by `connect`.
    metadata_error: Option<MetadataError>,
    trace: bool,
    max_protocol_version: u8,
    layers: Layers<Request, Reply>,
    #[cfg(feature = "tls")]
    tls: Option<ClientTlsConfig>,
}

/// When to probe a silent connection, and how long to wait for any frame after the probe.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Keepalive {
    pub(crate) interval: Duration,
    pub(crate) timeout: Duration,
}

impl Default for ChannelBuilder {
    fn default() -> Self {
        Self {
            codecs: Codec::available(),
            timeout: Some(DEFAULT_TIMEOUT),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
            keepalive: Some(Keepalive {
                interval: DEFAULT_KEEPALIVE_INTERVAL,
                timeout: DEFAULT_KEEPALIVE_TIMEOUT,
            }),
            reconnect: true,
            max_reconnect_backoff: DEFAULT_MAX_RECONNECT_BACKOFF,
            token: None,
            metadata: Metadata::new(),
            metadata_error: None,
            trace: false,
            max_protocol_version: PROTOCOL_VERSION,
            layers: Layers::default(),
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

impl ChannelBuilder {
    /// The codecs to offer, most preferred first (default: every compiled-in codec,
    /// MessagePack, Protobuf, JSON). Codecs not compiled in are dropped from the offer; a
    /// codec listed twice makes `connect` fail with [`Error::Config`].
    pub fn codecs(mut self, codecs: impl IntoIterator<Item = Codec>) -> Self {
        self.codecs = codecs.into_iter().filter(|c| c.is_available()).collect();
        self
    }

    /// The default call deadline these options give a channel.
    pub(crate) fn default_timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The limit for connecting plus the handshake.
    pub(crate) fn connect_timeout_value(&self) -> Duration {
        self.connect_timeout
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
        self.max_protocol_version = version.clamp(MIN_PROTOCOL_VERSION, PROTOCOL_VERSION);
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
    pub fn no_timeout(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// Limit for the TCP connect plus the handshake (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The largest frame this side sends or accepts (default 16 MiB).
    pub fn max_frame_len(mut self, max: u32) -> Self {
        self.max_frame_len = max;
        self
    }

    /// After `interval` without any frame from the server, send a ping (default 30 s).
    pub fn keepalive(mut self, interval: Duration) -> Self {
        let timeout = self
            .keepalive
            .map_or(DEFAULT_KEEPALIVE_TIMEOUT, |k| k.timeout);
        self.keepalive = Some(Keepalive { interval, timeout });
        self
    }

    /// How long a pinged server has to send any frame before the connection is declared dead
    /// and every call on it fails (default 10 s). So a dead peer is detected within
    /// `keepalive + keepalive_timeout`.
    pub fn keepalive_timeout(mut self, timeout: Duration) -> Self {
        let interval = self
            .keepalive
            .map_or(DEFAULT_KEEPALIVE_INTERVAL, |k| k.interval);
        self.keepalive = Some(Keepalive { interval, timeout });
        self
    }

    /// Never ping; a dead peer is then only noticed when the OS reports it.
    pub fn no_keepalive(mut self) -> Self {
        self.keepalive = None;
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
        self.token = Some(Token::new(token));
        self
    }

    /// Runs every connection inside TLS (ALPN `wirecall`), verifying the server's certificate
    /// against the configured CA and server name.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn tls(mut self, tls: ClientTlsConfig) -> Self {
        self.tls = Some(tls);
        self
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
        let connection = self.dial(&target).await?;
        let timeout = self.timeout;
        let metadata = self.default_metadata();
        let trace = self.trace;
        let layers = self.layers.clone();
        let redial = self.reconnect.then(|| Redial {
            target,
            options: self,
            backoff: tokio::sync::Mutex::new(Backoff {
                not_before: Instant::now(),
                delay: FIRST_BACKOFF,
            }),
        });
        let shared = Arc::new(ChannelShared {
            current: Mutex::new(Arc::new(connection)),
            trace,
            closed_by_owner: AtomicBool::new(false),
            redial,
        });
        Ok(Channel {
            layers: wrap_layers(&layers, &shared),
            shared,
            timeout,
            metadata,
        })
    }

    /// Negotiates over an already open stream (a Unix socket, an in-memory duplex, ...).
    /// Such a channel cannot reconnect by itself.
    pub async fn connect_with<T: Transport>(self, stream: T) -> Result<Channel, Error> {
        self.validate()?;
        let version = self.max_protocol_version;
        let connection =
            tokio::time::timeout(self.connect_timeout, self.secure(stream, None, version))
                .await
                .map_err(|_| Error::Negotiation(NegotiationError::TimedOut))??;
        let shared = Arc::new(ChannelShared {
            current: Mutex::new(Arc::new(connection)),
            trace: self.trace,
            closed_by_owner: AtomicBool::new(false),
            redial: None,
        });
        Ok(Channel {
            layers: wrap_layers(&self.layers, &shared),
            shared,
            timeout: self.timeout,
            metadata: self.default_metadata(),
        })
    }

    fn validate(&self) -> Result<(), Error> {
        if let Some(token) = &self.token {
            token.validate()?;
        }
        if let Some(err) = &self.metadata_error {
            return Err(Error::Config(format!("channel metadata: {err}")));
        }
        check_codec_list(&self.codecs).map_err(Error::Config)
    }

    fn default_metadata(&self) -> Option<Arc<Metadata>> {
        (!self.metadata.is_empty()).then(|| Arc::new(self.metadata.clone()))
    }

    /// Connects (over TCP or a Unix socket) and negotiates, within the connect timeout. A
    /// server that refuses the hello's version because it speaks only an older one is dialled
    /// again with its version.
    async fn dial(&self, target: &Target) -> Result<Connection, Error> {
        match self.dial_version(target, self.max_protocol_version).await {
            Err(Error::Negotiation(NegotiationError::UnsupportedVersion { client, server }))
                if (MIN_PROTOCOL_VERSION..client).contains(&server) =>
            {
                tracing::debug!(
                    server,
                    "the server speaks an older protocol; dialling again"
                );
                self.dial_version(target, server).await
            }
            other => other,
        }
    }

    async fn dial_version(&self, target: &Target, version: u8) -> Result<Connection, Error> {
        tokio::time::timeout(self.connect_timeout, async {
            match target {
                Target::Tcp(addrs) => {
                    let stream = connect_tcp(addrs).await?;
                    let peer = stream.peer_addr().ok();
                    self.secure(stream, peer, version).await
                }
                #[cfg(unix)]
                Target::Unix(path) => {
                    let stream = tokio::net::UnixStream::connect(path)
                        .await
                        .map_err(|cause| Error::Connect {
                            addr: path.display().to_string(),
                            cause,
                        })?;
                    self.secure(stream, None, version).await
                }
            }
        })
        .await
        .map_err(|_| Error::Negotiation(NegotiationError::TimedOut))?
    }

    /// Runs the TLS handshake when the channel uses TLS, then opens the connection.
    async fn secure<T: Transport>(
        &self,
        stream: T,
        peer: Option<SocketAddr>,
        version: u8,
    ) -> Result<Connection, Error> {
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            let stream = tls
                .connector()
                .connect(tls.server_name(), stream)
                .await
                .map_err(Error::Tls)?;
            return self.open(stream, peer, version).await.map_err(tls_failure);
        }
        self.open(stream, peer, version).await
    }

    async fn open<T: Transport>(
        &self,
        mut stream: T,
        peer: Option<SocketAddr>,
        version: u8,
    ) -> Result<Connection, Error> {
        let hello = ClientHello {
            version,
            codecs: CodecList::of(&self.codecs).0,
            token: self
                .token
                .as_ref()
                .map_or(&[][..], Token::as_bytes)
                .to_vec(),
            max_frame_len: Some(self.max_frame_len),
        };
        let negotiated = client_handshake(&mut stream, &hello).await?;
        let Negotiated { codec, version, .. } = negotiated;
        let (read_half, write_half) = stream.split_io();
        let (sink, sink_writer) = FrameSink::new(write_half);
        let tasks = TaskTracker::new();
        tasks.spawn(async move {
            if let Err(err) = sink_writer.run(None).await {
                tracing::debug!(%err, "client writer ended");
            }
        });
        let pending = Arc::new(PendingCalls::default());
        let frames = FramedRead::new(
            read_half,
            FrameCodec::for_version(self.max_frame_len, version),
        );
        let reader = tasks.spawn(reader::run_reader(
            frames,
            Arc::clone(&pending),
            sink.clone(),
            self.keepalive,
        ));
        Ok(Connection {
            codec,
            version,
            sink,
            pending,
            next_request_id: AtomicU64::new(1),
            send_limit: negotiated.send_limit(self.max_frame_len),
            peer,
            reader,
            tasks,
        })
    }
}

/// The channel's layers around its connection, if it has any.
fn wrap_layers(
    layers: &Layers<Request, Reply>,
    shared: &Arc<ChannelShared>,
) -> Option<Next<Request, Reply>> {
    let connector = Connector {
        shared: Arc::clone(shared),
    };
    layers.wrap(connector)
}

/// With TLS 1.3 the server checks a client certificate after the client's side of the TLS
/// handshake is done, so its refusal arrives as a TLS alert while the client reads the
/// server hello: report that as the TLS failure it is.
#[cfg(feature = "tls")]
fn tls_failure(err: Error) -> Error {
    match err {
        Error::Negotiation(NegotiationError::Io(io))
            if io
                .get_ref()
                .is_some_and(|inner| inner.is::<tokio_rustls::rustls::Error>()) =>
        {
            Error::Tls(io)
        }
        other => other,
    }
}

async fn connect_tcp(addrs: &[SocketAddr]) -> Result<TcpStream, Error> {
    let mut last_error = None;
    for candidate in addrs {
        match TcpStream::connect(candidate).await {
            Ok(stream) => {
                configure_tcp(&stream).map_err(|cause| Error::Connect {
                    addr: candidate.to_string(),
                    cause,
                })?;
                return Ok(stream);
            }
            Err(err) => last_error = Some(err),
        }
    }
    Err(Error::Connect {
        addr: addrs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        cause: last_error.unwrap_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the address resolved to nothing",
            )
        }),
    })
}
