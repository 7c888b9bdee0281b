//! [`BalancedChannel`], the handle: what generated clients call through when they call a
//! service by name. Every call, raw call and one-way call becomes one [`Request`] and goes
//! down one stack: the channel's own layers, then balancing and failover, then the layers of
//! the endpoint channel each attempt goes out on.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::pool::{EndpointStats, Inner};
use crate::caller::Caller;
use crate::client::{CallArgs, EncodeArgs, ItemStream, Outgoing, RawArgs, Reply, Request};
use crate::codec::{Codec, WireMessage};
use crate::discovery::balance::key_hash;
use crate::error::Error;
use crate::layers::next::Next;
use crate::metadata::{Metadata, MetadataError};
use crate::method::MethodId;
use crate::policy::call::{self as policy_call, Retries};
use crate::policy::declared::DeclaredPolicy;
use crate::stream::ItemMessage;

/// A channel over every live endpoint of one service.
///
/// Cheap to clone; clones share the connections. It holds one multiplexed
/// [`Channel`](crate::Channel) per endpoint (opened on the first call it gets, or at once with
/// [`BalancedChannelBuilder::eager`](super::BalancedChannelBuilder::eager)) and follows the
/// registry: endpoints that register are added, endpoints that deregister or whose lease
/// expires are removed (their calls in flight finish). When the registry cannot be reached,
/// the last known endpoints stay.
///
/// **One call path.** Calls, raw calls and one-way calls all go through the same stack:
/// first the layers added with
/// [`BalancedChannelBuilder::layer`](super::BalancedChannelBuilder::layer), once per call
/// (a retry or a failover does not run them again; one instance serves the whole channel),
/// then balancing and failover, then the layers of the endpoint channels' options
/// ([`BalancedChannelBuilder::channel`](super::BalancedChannelBuilder::channel) with
/// [`ChannelBuilder::layer`](crate::ChannelBuilder::layer)), once per attempt, with an
/// instance per endpoint connection.
///
/// **Passive health.** An endpoint whose connection fails is ejected at once: it gets no
/// calls until a probe, repeated with a doubling backoff (100 ms to 5 s), connects again and
/// the endpoint's health service (if it serves one) reports the service `Serving`.
///
/// **Active health**
/// ([`BalancedChannelBuilder::health_check`](super::BalancedChannelBuilder::health_check), off
/// by default): every interval, each endpoint in rotation is asked for the service's status,
/// and one that is `Draining` or `NotServing`, or does not answer, is ejected and probed like
/// a failed one, unless every endpoint in rotation fails the check at once: then all stay.
///
/// **Failover.** A call is sent to another endpoint when the server certainly did not run it
/// (the connection could not be made, the server refused it while shutting down or
/// overloaded, or an endpoint's own layer shed it as overloaded). A call whose connection
/// failed after it was sent may have run: it is sent again only for methods marked
/// `#[idempotent]`; otherwise it fails with [`Error::Endpoint`], which names the endpoint.
/// Every retry stays within the call's deadline (the time already spent counts) and within a
/// retry budget: at most 20% of recent calls plus 10 per second, so a failing fleet never
/// sees a retry storm.
#[derive(Clone)]
pub struct BalancedChannel {
    pub(super) inner: Arc<Inner>,
    /// The channel's own layers around balancing (`None`: calls go straight to it).
    pub(super) layers: Option<Next<Request, Reply>>,
    pub(super) timeout: Option<Duration>,
    pub(super) hash_key: Option<u64>,
    /// Every call through this handle carries it: the endpoint options' metadata and the
    /// handle's own additions (`None`: nothing).
    pub(super) metadata: Option<Arc<Metadata>>,
    /// Start a trace for calls made outside one (the endpoint options' `trace`).
    pub(super) trace: bool,
}

impl fmt::Debug for BalancedChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BalancedChannel")
            .field("service", &self.inner.service)
            .field("balance", &self.inner.balance)
            .field("endpoints", &self.endpoints())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl BalancedChannel {
    /// The service this channel calls.
    pub fn service(&self) -> &str {
        &self.inner.service
    }

    /// The endpoints it knows now, with their counters.
    pub fn endpoints(&self) -> Vec<EndpointStats> {
        self.inner.endpoints()
    }

    /// The deadline of calls made through this handle, retries included (`None`: calls wait
    /// forever).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// A handle on the same endpoints whose calls use `timeout` as their deadline (retries
    /// included).
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        Self {
            timeout: Some(timeout),
            ..self.clone()
        }
    }

    /// A handle on the same endpoints whose calls have no deadline.
    pub fn without_timeout(&self) -> Self {
        Self {
            timeout: None,
            ..self.clone()
        }
    }

    /// A handle whose calls carry `key` for
    /// [`Balance::ConsistentHash`](crate::discovery::Balance::ConsistentHash): calls with the
    /// same key go to the same endpoint while the endpoint set is stable.
    pub fn with_hash_key(&self, key: impl AsRef<[u8]>) -> Self {
        Self {
            hash_key: Some(key_hash(key.as_ref())),
            ..self.clone()
        }
    }

    /// A handle whose calls also carry the metadata entry `key: value` (replacing an entry
    /// with the same key), on whichever endpoint they go to.
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

    /// Calls `method` on one endpoint, failing over as the type's docs say;
    /// `idempotent` allows replaying a call that may have run.
    pub async fn call<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        args: A,
        idempotent: bool,
    ) -> Result<R, Error> {
        let mut request = self.request(method, false, args);
        request.idempotent = idempotent;
        let reply = self.send(request).await?;
        Ok(reply.codec().decode(reply.payload())?)
    }

    /// Calls `method` under its policy, like [`Channel::call_with_policy`](crate::Channel::call_with_policy):
    /// the deadline, the concurrency limit and the retries hold for the call (retries are
    /// failovers, at most `retries` of them, for `#[idempotent]` methods); the circuit
    /// breaker is per endpoint, and an endpoint whose circuit is open for the method is
    /// skipped. Generated clients call this.
    pub async fn call_with_policy<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        args: A,
    ) -> Result<R, Error> {
        let Some(state) = self.inner.policies.state(method, declared) else {
            return self.call(method, args, declared.is_idempotent()).await;
        };
        let request = self.request(method, false, args);
        let reply = policy_call::call(&state, request, Retries::Failover, |request| {
            self.send(request)
        })
        .await?;
        Ok(reply.codec().decode(reply.payload())?)
    }

    /// Calls `method` with arguments already encoded in `codec` and returns the reply payload
    /// undecoded, like [`Channel::call_raw`](crate::Channel::call_raw), on one endpoint with
    /// the same failover. Every endpoint connection must have negotiated `codec`: build the
    /// channel with that codec alone (`ChannelBuilder::codec`); a connection in another codec
    /// fails the call with [`Error::Config`] before anything is sent.
    pub async fn call_raw(
        &self,
        method: MethodId,
        codec: Codec,
        args: Bytes,
        idempotent: bool,
    ) -> Result<Bytes, Error> {
        let mut request = self.request(method, false, RawArgs(args));
        request.idempotent = idempotent;
        request.raw_codec = Some(codec);
        Ok(self.send(request).await?.payload().clone())
    }

    /// Sends a one-way call to one endpoint (sent elsewhere only if it could not be sent).
    pub async fn notify<A: WireMessage>(&self, method: MethodId, args: A) -> Result<(), Error> {
        self.send(self.request(method, true, args)).await.map(drop)
    }

    /// [`notify`](Self::notify) with arguments already encoded in `codec` (see
    /// [`call_raw`](Self::call_raw)).
    pub async fn notify_raw(
        &self,
        method: MethodId,
        codec: Codec,
        args: Bytes,
    ) -> Result<(), Error> {
        let mut request = self.request(method, true, RawArgs(args));
        request.raw_codec = Some(codec);
        self.send(request).await.map(drop)
    }

    /// A request of this handle: its deadline, hash key, metadata and a trace context.
    fn request<E: EncodeArgs + 'static>(
        &self,
        method: MethodId,
        one_way: bool,
        args: E,
    ) -> Request {
        let trace = Outgoing::new(self.metadata.as_deref(), self.trace).trace;
        let mut request = Request::new(
            method,
            one_way,
            CallArgs::new(args),
            self.timeout,
            self.metadata.clone(),
            trace,
        );
        request.hash_key = self.hash_key;
        request
    }

    /// Sends `request` down the channel's stack: its own layers, then balancing and failover.
    async fn send(&self, request: Request) -> Result<Reply, Error> {
        match &self.layers {
            Some(layers) => layers.call_shared(request).await.map_err(Error::from_layer),
            None => self.inner.route(request).await,
        }
    }
}

impl Caller for BalancedChannel {
    fn call<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        args: A,
    ) -> impl Future<Output = Result<R, Error>> + Send {
        BalancedChannel::call(self, method, args, false)
    }

    fn call_idempotent<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        args: A,
    ) -> impl Future<Output = Result<R, Error>> + Send {
        BalancedChannel::call(self, method, args, true)
    }

    fn call_with_policy<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        args: A,
    ) -> impl Future<Output = Result<R, Error>> + Send {
        BalancedChannel::call_with_policy(self, method, declared, args)
    }

    fn notify<A: WireMessage>(
        &self,
        method: MethodId,
        args: A,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        BalancedChannel::notify(self, method, args)
    }

    fn open_stream<A: WireMessage, M: ItemMessage>(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        args: A,
    ) -> impl Future<Output = Result<ItemStream<M::Item>, Error>> + Send {
        BalancedChannel::open_stream_with_policy::<A, M>(self, method, declared, args)
    }

    fn open_upload<A, U, M, S>(
        &self,
        method: MethodId,
        declared: &'static DeclaredPolicy,
        args: A,
        items: S,
    ) -> impl Future<Output = Result<ItemStream<M::Item>, Error>> + Send
    where
        A: WireMessage,
        U: ItemMessage,
        M: ItemMessage,
        S: futures::Stream<Item = U::Item> + Send + 'static,
    {
        BalancedChannel::open_upload_with_policy::<A, U, M, S>(self, method, declared, args, items)
    }

    fn with_timeout(&self, timeout: Duration) -> Self {
        BalancedChannel::with_timeout(self, timeout)
    }
}
