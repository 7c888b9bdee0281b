//! [`Channel`], the handle on a connection that generated clients call through: calls,
//! one-way calls, metadata, close, and reconnecting when the connection broke.

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::args::{CallArgs, EncodeArgs, RawArgs};
use super::connection::Connection;
use super::dial::Redial;
use super::item_stream::ItemStream;
use super::outgoing::Outgoing;
use super::pending;
use super::request::{Reply, Request};
use super::settings::FIRST_BACKOFF;
use super::stream_opener::{typed_stream, ErasedStream, OpenParts, StreamOpener};
use crate::codec::{Codec, WireMessage};
use crate::error::Error;
use crate::layers::circuit_breaker::circuits::Circuits;
use crate::layers::next::Next;
use crate::metadata::{Metadata, MetadataError};
use crate::method::MethodId;
use crate::policy::call::{self as policy_call, Retries};
use crate::policy::declared::DeclaredPolicy;
use crate::policy::table::PolicyTable;
use crate::stream::ItemMessage;
use futures::Stream;

/// A handle on a connection to a wirecall server, shared by every clone.
///
/// Cheap to clone (an `Arc`); clones share the connection and may be used from many tasks at
/// once. The connection closes when the last clone is dropped. Create one with
/// [`Channel::connect`] or [`Channel::builder`], then wrap it in any generated client with
/// `{Trait}Client::new(channel.clone())`: several services can share one connection.
///
/// When the connection breaks, every call in flight on it fails at once with
/// [`Error::ConnectionClosed`] (such a call may or may not have run on the server). A channel
/// made by [`ChannelBuilder::connect`](crate::ChannelBuilder::connect) then reconnects on the next call, waiting between
/// failed attempts with a doubling backoff capped by
/// [`ChannelBuilder::max_reconnect_backoff`](crate::ChannelBuilder::max_reconnect_backoff); calls made while it waits fail fast.
///
/// To a TCP server that said last time that it understands early calls,
/// [`ChannelBuilder::connect`](crate::ChannelBuilder::connect) returns without waiting for the server's hello, and the first
/// calls travel right behind the client's (see [`ChannelBuilder::early_calls`](crate::ChannelBuilder::early_calls)): a refusal
/// of that hello then fails those calls, with the error `connect` would have returned.
#[derive(Clone)]
pub struct Channel {
    pub(super) shared: Arc<ChannelShared>,
    pub(super) timeout: Option<Duration>,
    /// Sent with every call through this handle (`None`: nothing).
    pub(super) metadata: Option<Arc<Metadata>>,
    /// The layers added with [`ChannelBuilder::layer`](crate::ChannelBuilder::layer) around the connection (`None`: none,
    /// and calls go straight to the connection).
    pub(super) layers: Option<Next<Request, Reply>>,
}

pub(super) struct ChannelShared {
    pub(super) current: Mutex<Arc<Connection>>,
    /// Start a trace for calls made outside one (see [`ChannelBuilder::trace`](crate::ChannelBuilder::trace)).
    pub(super) trace: bool,
    /// Set by [`Channel::close`]: no new call, no reconnect.
    pub(super) closed_by_owner: AtomicBool,
    /// How to dial again; `None` for channels over a stream the caller supplied. Kept with
    /// `reconnect(false)` too: a refusal of early calls is answered by dialling once more
    /// without them.
    pub(super) redial: Option<Redial>,
    /// The resolved policy of each method called through this channel (at the level of the
    /// call: deadline, concurrency, retries).
    pub(super) policies: PolicyTable,
    /// The circuits of the breakers that methods' policies turn on, for this endpoint: every
    /// attempt sent through this channel, a balanced channel's included, is admitted here.
    pub(super) circuits: Arc<Circuits>,
}

/// How long [`Channel::close`] waits for the server to close its side before it drops the
/// connection.
const CLOSE_LIMIT: Duration = Duration::from_secs(5);

/// Why calls on a channel closed with [`Channel::close`] fail.
const CLOSED_BY_OWNER: &str = "the channel was closed with Channel::close";

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

    /// The protocol version of the current connection (3: streams and metadata; 2: an older
    /// server, metadata but no streams; 1: neither).
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
        if self.layers.is_some() {
            return Box::pin(self.call_layered(method, args)).await;
        }
        let outgoing = Outgoing::new(self.metadata.as_deref(), self.shared.trace);
        let (payload, codec) = self
            .shared
            .send_call(method, args, self.timeout, outgoing)
            .await?;
        Ok(codec.decode(&payload)?)
    }

    /// Opens a server stream of `method` with `args` and returns its items as they come
    /// (protocol version 3; an older server fails it with [`Error::StreamsUnsupported`]
    /// before anything is sent). The handle's timeout bounds the **whole** stream, not its
    /// first item: open a stream that should outlive it through
    /// [`without_timeout`](Self::without_timeout) or a longer
    /// [`with_timeout`](Self::with_timeout). Dropping the stream cancels the call.
    ///
    /// Generated clients call this for each method that returns `Streaming<T>`, with `M` its
    /// item message. Layers added with [`ChannelBuilder::layer`](crate::ChannelBuilder::layer)
    /// see the open as a [`Request`](crate::client::Request) whose
    /// [`is_stream`](crate::client::Request::is_stream) is true, and its reply once the stream
    /// is open; the items do not pass them.
    pub async fn open_stream<A: WireMessage, M: ItemMessage>(
        &self,
        method: MethodId,
        args: A,
    ) -> Result<ItemStream<M::Item>, Error> {
        self.open_stream_within::<A, M>(method, args, self.timeout)
            .await
    }

    /// Opens a server stream under its method's policy: the deadline of the whole stream is
    /// the shorter of the handle's and the policy's `timeout`. (Retries and fallbacks are
    /// refused on streams at compile time; concurrency limits and breakers do not apply to
    /// them yet.) Generated clients call this.
    pub async fn open_stream_with_policy<A: WireMessage, M: ItemMessage>(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        args: A,
    ) -> Result<ItemStream<M::Item>, Error> {
        let timeout = self.stream_timeout(method, declared, self.timeout);
        self.open_stream_within::<A, M>(method, args, timeout).await
    }

    /// Opens a stream of `method` that takes an upload (client or bidirectional streaming):
    /// `items` are sent to the server, as `U` messages, as its credit allows, then the
    /// upload's end; the returned stream yields the server's items (`M`s: the one reply of a
    /// client-streaming method, or the items of a bidirectional one). The server may answer
    /// before the upload is over: the upload then stops, and the answer is there at once.
    /// Deadlines and cancellation are those of [`open_stream`](Self::open_stream), under the
    /// method's policy deadline. Generated clients call this.
    pub async fn open_upload_with_policy<A, U, M, S>(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        args: A,
        items: S,
    ) -> Result<ItemStream<M::Item>, Error>
    where
        A: WireMessage,
        U: ItemMessage,
        M: ItemMessage,
        S: Stream<Item = U::Item> + Send + 'static,
    {
        let timeout = self.stream_timeout(method, declared, self.timeout);
        self.open_upload_carrying::<A, U, M, S>(
            method,
            args,
            items,
            timeout,
            self.metadata.as_deref(),
        )
        .await
    }

    /// Opens a stream that takes an upload within `timeout` (as a whole), its Open frame
    /// carrying `metadata`.
    pub(crate) async fn open_upload_carrying<A, U, M, S>(
        &self,
        method: MethodId,
        args: A,
        items: S,
        timeout: Option<Duration>,
        metadata: Option<&Metadata>,
    ) -> Result<ItemStream<M::Item>, Error>
    where
        A: WireMessage,
        U: ItemMessage,
        M: ItemMessage,
        S: Stream<Item = U::Item> + Send + 'static,
    {
        if self.layers.is_some() {
            let opener = StreamOpener::new(
                move |connection: Arc<Connection>, parts: OpenParts| async move {
                    let (args, timeout, outgoing) = parts.split();
                    let outgoing = outgoing.borrowed();
                    let stream = connection
                        .open_upload::<U, M, _, S>(method, args, items, timeout, &outgoing)
                        .await?;
                    Ok(Box::new(stream) as ErasedStream)
                },
            );
            return self
                .open_layered(method, args, timeout, metadata, opener)
                .await;
        }
        let outgoing = Outgoing::new(metadata, self.shared.trace);
        let connection = self.shared.connection().await?;
        connection
            .open_upload::<U, M, _, S>(method, args, items, timeout, &outgoing)
            .await
    }

    /// Opens a stream call through the channel's layers: they see its open as a
    /// [`Request`], and the opened stream comes back in the [`Reply`].
    async fn open_layered<A: WireMessage, T: 'static>(
        &self,
        method: MethodId,
        args: A,
        timeout: Option<Duration>,
        metadata: Option<&Metadata>,
        opener: StreamOpener,
    ) -> Result<ItemStream<T>, Error> {
        let request = Request::new(
            method,
            false,
            CallArgs::new(args),
            timeout,
            metadata.map(|metadata| Arc::new(metadata.clone())),
            Outgoing::new(metadata, self.shared.trace).trace,
        )
        .opening(opener);
        let reply = Box::pin(self.send(request)).await?;
        typed_stream(reply.stream)
    }

    /// The deadline of a stream of `method` opened with `timeout`: the shorter of it and the
    /// method's policy's.
    pub(crate) fn stream_timeout(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        timeout: Option<Duration>,
    ) -> Option<Duration> {
        match self.shared.policies.state(method, declared) {
            Some(state) => policy_call::shorter(timeout, state.policy.timeout()),
            None => timeout,
        }
    }

    async fn open_stream_within<A: WireMessage, M: ItemMessage>(
        &self,
        method: MethodId,
        args: A,
        timeout: Option<Duration>,
    ) -> Result<ItemStream<M::Item>, Error> {
        self.open_stream_carrying::<A, M>(method, args, timeout, self.metadata.as_deref())
            .await
    }

    /// Opens a server stream within `timeout` (as a whole), its Open frame carrying
    /// `metadata` (a balanced channel's handle has its own).
    pub(crate) async fn open_stream_carrying<A: WireMessage, M: ItemMessage>(
        &self,
        method: MethodId,
        args: A,
        timeout: Option<Duration>,
        metadata: Option<&Metadata>,
    ) -> Result<ItemStream<M::Item>, Error> {
        if self.layers.is_some() {
            let opener = StreamOpener::new(
                move |connection: Arc<Connection>, parts: OpenParts| async move {
                    let (args, timeout, outgoing) = parts.split();
                    let outgoing = outgoing.borrowed();
                    let stream = connection
                        .open_stream::<M, _>(method, args, timeout, &outgoing)
                        .await?;
                    Ok(Box::new(stream) as ErasedStream)
                },
            );
            return self
                .open_layered(method, args, timeout, metadata, opener)
                .await;
        }
        let outgoing = Outgoing::new(metadata, self.shared.trace);
        let connection = self.shared.connection().await?;
        connection
            .open_stream::<M, _>(method, args, timeout, &outgoing)
            .await
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
        if self.layers.is_some() {
            let request = self.request(method, false, args);
            return Ok(Box::pin(self.send(request)).await?.payload);
        }
        let outgoing = Outgoing::new(self.metadata.as_deref(), self.shared.trace);
        let (payload, _) = self
            .shared
            .send_call(method, args, self.timeout, outgoing)
            .await?;
        Ok(payload)
    }

    /// Calls `method` under its policy: `declared` is what its trait declares, and the
    /// channel's overrides ([`ChannelBuilder::policies`](crate::ChannelBuilder::policies), the
    /// environment) go over it. The deadline is the shorter of the handle's and the policy's;
    /// the concurrency limit, the retries (on this channel, for `#[idempotent]` methods) and
    /// the circuit breaker apply as the book's Resilience chapter says. A method with no
    /// policy at all takes the path of [`call`](Self::call). Generated clients call this.
    pub async fn call_with_policy<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        args: A,
    ) -> Result<R, Error> {
        let Some(state) = self.shared.policies.state(method, declared) else {
            return self.call(method, args).await;
        };
        if self.layers.is_none() && state.policy.retries().unwrap_or(0) == 0 {
            // One attempt and no layers: no `Request` to build, the arguments are encoded
            // where they are, as on the plain path.
            let _permit = state.admit()?;
            let timeout = policy_call::shorter(self.timeout, state.policy.timeout());
            let pending = match &state.breaker {
                Some(config) => Some(self.shared.circuits.admit_borrowed(method, config)?),
                None => None,
            };
            let outgoing = Outgoing::new(self.metadata.as_deref(), self.shared.trace);
            let result = self.shared.send_call(method, args, timeout, outgoing).await;
            if let Some(pending) = pending {
                pending.finish(&result);
            }
            let (payload, codec) = result?;
            return Ok(codec.decode(&payload)?);
        }
        let request = self.request(method, false, args);
        let reply = Box::pin(policy_call::call(
            &state,
            request,
            Retries::Here,
            |attempt| self.send(attempt),
        ))
        .await?;
        Ok(reply.codec.decode(&reply.payload)?)
    }

    /// A call through the channel's layers: its arguments travel type-erased to the innermost
    /// service, which encodes them with the connection's codec; the reply is decoded here.
    async fn call_layered<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        args: A,
    ) -> Result<R, Error> {
        let reply = self.send(self.request(method, false, args)).await?;
        Ok(reply.codec.decode(&reply.payload)?)
    }

    /// A request of this handle: its deadline, its metadata and a trace context.
    fn request<E: EncodeArgs + 'static>(
        &self,
        method: MethodId,
        one_way: bool,
        args: E,
    ) -> Request {
        Request::new(
            method,
            one_way,
            CallArgs::new(args),
            self.timeout,
            self.metadata.clone(),
            Outgoing::new(self.metadata.as_deref(), self.shared.trace).trace,
        )
    }

    /// Sends `request` through the channel's layers, if it has any, and on its connection.
    /// A balanced channel sends each attempt of a call through here, so an endpoint's layers
    /// run once per attempt.
    pub(crate) async fn send(&self, request: Request) -> Result<Reply, Error> {
        let breaker = request
            .policy
            .as_ref()
            .and_then(|state| state.breaker.clone());
        if let Some(config) = breaker {
            let pending = self.shared.circuits.admit(request.method, &config)?;
            let result = self.send_through_layers(request).await;
            pending.finish(&result);
            return result;
        }
        self.send_through_layers(request).await
    }

    async fn send_through_layers(&self, request: Request) -> Result<Reply, Error> {
        match &self.layers {
            Some(layers) => layers
                .call_shared(request)
                .await
                .map_err(|err| self.name_open_circuit_endpoint(Error::from_layer(err))),
            None => Arc::clone(&self.shared).send_request(request).await,
        }
    }

    /// A circuit breaker among the layers cannot know which endpoint it guards; the channel
    /// does, so its error names it.
    fn name_open_circuit_endpoint(&self, error: Error) -> Error {
        match error {
            Error::CircuitOpen {
                method,
                endpoint: None,
                retry_after,
            } => Error::CircuitOpen {
                method,
                endpoint: self.peer_addr().map(|addr| addr.to_string()),
                retry_after,
            },
            other => other,
        }
    }

    /// Sends a one-way call: resolves once the frame is queued on the connection, without
    /// waiting for (or ever receiving) a reply. (On a connection opened with early calls,
    /// the first ones also wait for the server's hello: see [`ChannelBuilder::early_calls`](crate::ChannelBuilder::early_calls).)
    pub async fn notify<A: WireMessage>(&self, method: MethodId, args: A) -> Result<(), Error> {
        if self.layers.is_some() {
            return Box::pin(self.send(self.request(method, true, args)))
                .await
                .map(drop);
        }
        let outgoing = Outgoing::new(self.metadata.as_deref(), self.shared.trace);
        self.shared
            .send_notify(method, args, self.timeout, outgoing)
            .await
    }

    /// Sends a one-way call whose argument payload is already encoded in this channel's
    /// codec: the one-way counterpart of [`call_raw`](Self::call_raw).
    pub async fn notify_raw(&self, method: MethodId, args: Bytes) -> Result<(), Error> {
        let args = RawArgs(args);
        if self.layers.is_some() {
            return Box::pin(self.send(self.request(method, true, args)))
                .await
                .map(drop);
        }
        let outgoing = Outgoing::new(self.metadata.as_deref(), self.shared.trace);
        self.shared
            .send_notify(method, args, self.timeout, outgoing)
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
        connection
            .pending
            .close_all(pending::Closed::new(CLOSED_BY_OWNER, None));
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
    /// The innermost step of every layered call: sends `request` on the current connection
    /// (dialling again when it broke) and waits for the reply payload.
    pub(super) async fn send_request(self: Arc<Self>, request: Request) -> Result<Reply, Error> {
        let Request {
            method,
            one_way,
            timeout,
            metadata,
            trace,
            args,
            opener,
            ..
        } = request;
        if let Some(opener) = opener {
            let connection = self.connection().await?;
            let codec = connection.codec;
            let parts = OpenParts {
                args,
                timeout,
                metadata,
                trace,
            };
            let stream = opener.open(connection, parts).await?;
            return Ok(Reply {
                payload: Bytes::new(),
                codec,
                stream: Some(stream),
            });
        }
        let outgoing = Outgoing {
            metadata: metadata.as_deref(),
            trace,
        };
        if one_way {
            self.send_notify(method, args, timeout, outgoing).await?;
            // No reply to decode: the codec is only what the reply says it is in.
            let codec = self.current().codec;
            return Ok(Reply {
                payload: Bytes::new(),
                codec,
                stream: None,
            });
        }
        let (payload, codec) = self.send_call(method, args, timeout, outgoing).await?;
        Ok(Reply {
            payload,
            codec,
            stream: None,
        })
    }

    pub(super) fn current(&self) -> Arc<Connection> {
        // Only ever held to clone or swap an `Arc`, so a poisoned lock is still consistent.
        Arc::clone(&self.current.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The connection to use for a call: the current one, or a new one if it closed.
    async fn connection(&self) -> Result<Arc<Connection>, Error> {
        if self.closed_by_owner.load(Ordering::Acquire) {
            return Err(Error::unsent(CLOSED_BY_OWNER));
        }
        let current = self.current();
        match &self.redial {
            Some(redial)
                if current.pending.is_closed()
                    && (redial.reconnect || current.refused_early_calls()) =>
            {
                // Boxed: dialling's state is kilobytes, and inline it would be part of every
                // call's future (held per call in flight) for a path taken only on reconnect.
                Box::pin(self.reconnect(redial)).await
            }
            _ => Ok(current),
        }
    }

    /// Sends a call and waits for its reply payload, which is in the returned codec. A call
    /// sent early on a connection whose server then refused early calls never ran: it is
    /// encoded again (the new connection's codec differs) and sent once more on a new
    /// connection, within what is left of its deadline.
    #[allow(
        clippy::manual_async_fn,
        reason = "an `async fn` keeps a second copy of its arguments in its state"
    )]
    pub(super) fn send_call<'a, E: EncodeArgs + 'a>(
        &'a self,
        method: MethodId,
        args: E,
        timeout: Option<Duration>,
        outgoing: Outgoing<'a>,
    ) -> impl Future<Output = Result<(Bytes, Codec), Error>> + Send + 'a {
        // An `async` block rather than an `async fn`: the caller holds this future for every
        // call in flight, and an `async fn` would keep a second copy of its arguments.
        async move {
            let mut left = timeout;
            let mut sent_again = false;
            loop {
                let connection = self.connection().await?;
                // Only a call sent early can be sent again, so only it reads the clock.
                let started = connection.hello.is_some().then(Instant::now);
                let (request_id, frame) =
                    connection.encode_request(method, &args, left, &outgoing)?;
                let result = connection
                    .exchange(method, request_id, frame, left, outgoing.trace)
                    .await;
                match result {
                    Err(_) if !sent_again && connection.refused_early_calls() => {
                        sent_again = true;
                        // (`refused_early_calls` implies the connection was opened early, so
                        // `started` is set.)
                        let spent = started.map_or(Duration::ZERO, |at| at.elapsed());
                        left = match (timeout, left) {
                            (Some(after), Some(left)) => match left.checked_sub(spent) {
                                Some(rest) if !rest.is_zero() => Some(rest),
                                _ => return Err(Error::Timeout { after }),
                            },
                            _ => None,
                        };
                    }
                    result => return result.map(|payload| (payload, connection.codec)),
                }
            }
        }
    }

    /// Sends a one-way call. On a connection opened with early calls it also waits for the
    /// server's hello, so that a call the server refused unrun is sent once more on a new
    /// connection rather than lost.
    pub(super) async fn send_notify<E: EncodeArgs>(
        &self,
        method: MethodId,
        args: E,
        timeout: Option<Duration>,
        outgoing: Outgoing<'_>,
    ) -> Result<(), Error> {
        let mut sent_again = false;
        loop {
            let connection = self.connection().await?;
            let frame = connection.encode_notify(method, &args, &outgoing)?;
            let result = match connection.send_notify(frame, timeout).await {
                Ok(()) => connection.accepted().await,
                Err(err) => Err(err),
            };
            match result {
                Err(_) if !sent_again && connection.refused_early_calls() => sent_again = true,
                result => return result,
            }
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
            let wait = backoff.not_before - now;
            return Err(Error::Unavailable {
                reason: format!(
                    "{}; the next reconnect attempt is in {wait:?}",
                    current.closed_reason()
                ),
                retry_after: Some(wait),
            });
        }
        match redial.settings.dial(&redial.target).await {
            Ok(connection) => {
                let connection = Arc::new(connection);
                *self.current.lock().unwrap_or_else(|p| p.into_inner()) = Arc::clone(&connection);
                backoff.delay = FIRST_BACKOFF;
                tracing::debug!(peer = ?connection.peer, "reconnected");
                Ok(connection)
            }
            Err(err) => {
                backoff.not_before = Instant::now() + backoff.delay;
                backoff.delay = (backoff.delay * 2).min(redial.max_backoff);
                tracing::debug!(%err, "reconnect failed");
                Err(err)
            }
        }
    }
}
