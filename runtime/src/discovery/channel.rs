//! [`BalancedChannel`]: one multiplexed [`Channel`] per live endpoint of a service, a
//! [`Balance`] policy over them, passive health checks and failover.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tower::retry::budget::{Budget, TpsBudget};

use super::balance::{key_hash, subset, Balance, Candidate, Ring};
use super::registry::{EndpointSet, Endpoints, Registry};
use crate::caller::Caller;
use crate::client::{Channel, ChannelBuilder};
use crate::client::{EncodeArgs, RawArgs};
use crate::codec::{Codec, WireMessage};
use crate::error::{Error, ErrorCode};
use crate::health::{HealthClient, ServingStatus};
use crate::metadata::{Metadata, MetadataError};
use crate::method::MethodId;

/// The first wait before an ejected endpoint is probed; it doubles per failed probe.
pub const DEFAULT_PROBE_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between two probes of an ejected endpoint.
pub const DEFAULT_MAX_PROBE_BACKOFF: Duration = Duration::from_secs(5);
/// Retries allowed on top of the calls themselves, as a fraction of recent calls.
pub const DEFAULT_RETRY_RATIO: f32 = 0.2;
/// Retries per second always allowed, however few calls were made.
pub const DEFAULT_MIN_RETRIES_PER_SECOND: u32 = 10;

/// A channel over every live endpoint of one service.
///
/// Cheap to clone; clones share the connections. It holds one multiplexed [`Channel`] per
/// endpoint (opened on the first call it gets, or at once with
/// [`BalancedChannelBuilder::eager`]) and follows the registry: endpoints that register are
/// added, endpoints that deregister or whose lease expires are removed (their calls in flight
/// finish). When the registry cannot be reached, the last known endpoints stay.
///
/// **Passive health.** An endpoint whose connection fails is ejected at once: it gets no
/// calls until a probe, repeated with a doubling backoff (100 ms to 5 s), connects again and
/// the endpoint's health service (if it serves one) reports the service `Serving`.
///
/// **Active health** ([`BalancedChannelBuilder::health_check`], off by default): every
/// interval, each endpoint in rotation is asked for the service's status, and one that is
/// `Draining` or `NotServing`, or does not answer, is ejected and probed like a failed one,
/// unless every endpoint in rotation fails the check at once: then all stay.
///
/// **Failover.** A call is sent to another endpoint when the server certainly did not run it
/// (the connection could not be made, or the server refused it while shutting down or
/// overloaded). A call whose connection failed after it was sent may have run: it is sent
/// again only for methods marked `#[idempotent]`; otherwise it fails with
/// [`Error::Endpoint`], which names the endpoint. Every retry stays within the call's
/// deadline (the time already spent counts) and within a retry budget: at most 20% of recent
/// calls plus 10 per second, so a failing fleet never sees a retry storm.
#[derive(Clone)]
pub struct BalancedChannel {
    inner: Arc<Inner>,
    timeout: Option<Duration>,
    hash_key: Option<u64>,
    /// Added to every call through this handle (`None`: nothing beyond the options').
    metadata: Option<Arc<Metadata>>,
}

struct Inner {
    service: String,
    balance: Balance,
    options: ChannelBuilder,
    eager: bool,
    /// Connect to at most this many endpoints, chosen with `subset_seed`.
    subset: Option<usize>,
    subset_seed: u64,
    probe_backoff: Duration,
    max_probe_backoff: Duration,
    /// How often endpoints in rotation are asked for their health (`None`: never).
    health_interval: Option<Duration>,
    /// Whether an empty set from the registry replaces a non-empty one.
    accept_empty_set: bool,
    /// Set while an empty set from the registry is being ignored (so it is logged once).
    ignoring_empty_set: AtomicBool,
    state: RwLock<Arc<State>>,
    counter: AtomicUsize,
    budget: TpsBudget,
    /// Follows the registry (and checks health); aborted when the last clone goes.
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for task in self
            .tasks
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            task.abort();
        }
    }
}

#[derive(Default)]
struct State {
    slots: Vec<Arc<Slot>>,
    ring: Ring,
}

/// One endpoint and its connection.
struct Slot {
    address: String,
    weight: AtomicU32,
    in_flight: AtomicUsize,
    ejected: AtomicBool,
    ready: RwLock<Option<Channel>>,
    /// One dial at a time.
    dial: tokio::sync::Mutex<()>,
    calls: AtomicU64,
    failures: AtomicU64,
}

impl Candidate for Arc<Slot> {
    fn weight(&self) -> u32 {
        self.weight.load(Ordering::Relaxed)
    }

    fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }
}

/// A snapshot of one endpoint of a [`BalancedChannel`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EndpointStats {
    /// The endpoint's address.
    pub address: String,
    /// Its weight.
    pub weight: u32,
    /// Calls waiting for a reply from it now.
    pub in_flight: usize,
    /// Calls it answered (with a reply or an application error) since it joined.
    pub calls: u64,
    /// Calls that failed on it (connection or server failures).
    pub failures: u64,
    /// Whether it is ejected (its connection failed; a probe will re-add it).
    pub ejected: bool,
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
    /// Options for a balanced channel.
    pub fn builder() -> BalancedChannelBuilder {
        BalancedChannelBuilder::default()
    }

    /// The service this channel calls.
    pub fn service(&self) -> &str {
        &self.inner.service
    }

    /// The endpoints it knows now, with their counters.
    pub fn endpoints(&self) -> Vec<EndpointStats> {
        self.inner
            .state()
            .slots
            .iter()
            .map(|slot| EndpointStats {
                address: slot.address.clone(),
                weight: slot.weight.load(Ordering::Relaxed),
                in_flight: slot.in_flight.load(Ordering::Relaxed),
                calls: slot.calls.load(Ordering::Relaxed),
                failures: slot.failures.load(Ordering::Relaxed),
                ejected: slot.ejected.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// A handle on the same endpoints whose calls use `timeout` as their deadline (retries
    /// included).
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        Self {
            timeout: Some(timeout),
            ..self.clone()
        }
    }

    /// A handle whose calls carry `key` for [`Balance::ConsistentHash`]: calls with the same
    /// key go to the same endpoint while the endpoint set is stable.
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

    /// Calls `method` on one endpoint, failing over as the type's docs say;
    /// `idempotent` allows replaying a call that may have run.
    pub async fn call<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        args: A,
        idempotent: bool,
    ) -> Result<R, Error> {
        let payload = Typed {
            args,
            reply: PhantomData::<fn() -> R>,
        };
        self.route(method, payload, idempotent).await
    }

    /// Calls `method` with arguments already encoded in `codec` and returns the reply payload
    /// undecoded, like [`Channel::call_raw`], on one endpoint with the same failover. Every
    /// endpoint connection must have negotiated `codec`: build the channel with that codec
    /// alone (`ChannelBuilder::codec`); a connection in another codec fails the call with
    /// [`Error::Config`] before anything is sent.
    pub async fn call_raw(
        &self,
        method: MethodId,
        codec: Codec,
        args: Bytes,
        idempotent: bool,
    ) -> Result<Bytes, Error> {
        let payload = Raw {
            codec,
            args: RawArgs(args),
        };
        self.route(method, payload, idempotent).await
    }

    /// The failover loop of every call: pick an endpoint, send, and on a failure that allows
    /// it, send again elsewhere within the deadline and the retry budget.
    async fn route<P: Payload>(
        &self,
        method: MethodId,
        payload: P,
        idempotent: bool,
    ) -> Result<P::Reply, Error> {
        let deadline = self.timeout.map(|t| Instant::now() + t);
        self.inner.budget.deposit();
        let mut tried: Vec<Arc<Slot>> = Vec::new();
        let mut last: Option<Error> = None;
        loop {
            let Some(slot) = self.inner.pick(self.hash_key, &tried) else {
                return Err(last.unwrap_or_else(|| self.inner.no_endpoints()));
            };
            let remaining = match deadline {
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(last.unwrap_or(Error::Timeout {
                            after: self.timeout.unwrap_or_default(),
                        }));
                    }
                    Some(left)
                }
                None => None,
            };
            let in_flight = InFlight::start(&slot);
            let result = match self.endpoint_channel(&slot).await {
                Ok(channel) => match channel.ready_connection().await {
                    Ok(connection) => {
                        // A payload in the wrong codec is this side's configuration error, not
                        // the endpoint's failure: no failover, nothing counted against it.
                        payload.check(&channel)?;
                        let exchange =
                            channel.call_encoded_on(&connection, method, payload.args(), remaining);
                        match exchange.await {
                            Ok(reply) => P::reply(connection.codec(), reply),
                            Err(err) => Err(err),
                        }
                    }
                    Err(err) => Err(err),
                },
                Err(err) => Err(err),
            };
            drop(in_flight);
            let err = match result {
                Ok(reply) => {
                    slot.calls.fetch_add(1, Ordering::Relaxed);
                    return Ok(reply);
                }
                Err(err) => err,
            };
            let failure = Failure::of(&err);
            if failure == Failure::Answered {
                // The server answered (an error of the call itself): nothing to fail over.
                slot.calls.fetch_add(1, Ordering::Relaxed);
                return Err(err);
            }
            slot.failures.fetch_add(1, Ordering::Relaxed);
            if failure.connection_broke() {
                self.inner.eject(&slot, &err);
            }
            let may_retry = match failure {
                Failure::NotRun { .. } => true,
                Failure::MaybeRun => idempotent,
                Failure::Answered | Failure::Final => false,
            };
            let err = Error::Endpoint {
                endpoint: slot.address.clone(),
                cause: Box::new(err),
            };
            if !may_retry || !self.inner.budget.withdraw() {
                return Err(err);
            }
            tracing::debug!(%err, service = %self.inner.service, "retrying on another endpoint");
            tried.push(slot);
            last = Some(err);
        }
    }

    /// Sends a one-way call to one endpoint (sent elsewhere only if it could not be sent).
    pub async fn notify<A: WireMessage>(&self, method: MethodId, args: A) -> Result<(), Error> {
        let (slot, channel) = self.notify_channel().await?;
        channel
            .notify(method, args)
            .await
            .map_err(|err| Error::Endpoint {
                endpoint: slot.address.clone(),
                cause: Box::new(err),
            })
    }

    /// [`notify`](Self::notify) with arguments already encoded in `codec` (see
    /// [`call_raw`](Self::call_raw)).
    pub async fn notify_raw(
        &self,
        method: MethodId,
        codec: Codec,
        args: Bytes,
    ) -> Result<(), Error> {
        let (slot, channel) = self.notify_channel().await?;
        check_codec(&channel, codec)?;
        channel
            .notify_raw(method, args)
            .await
            .map_err(|err| Error::Endpoint {
                endpoint: slot.address.clone(),
                cause: Box::new(err),
            })
    }

    /// The endpoint a one-way call goes to, with this handle's deadline and metadata: the
    /// first one picked that can be connected to.
    async fn notify_channel(&self) -> Result<(Arc<Slot>, Channel), Error> {
        let mut tried: Vec<Arc<Slot>> = Vec::new();
        loop {
            let Some(slot) = self.inner.pick(self.hash_key, &tried) else {
                return Err(self.inner.no_endpoints());
            };
            match self.endpoint_channel(&slot).await {
                Ok(channel) => {
                    let channel = match self.timeout {
                        Some(timeout) => channel.with_timeout(timeout),
                        None => channel.without_timeout(),
                    };
                    return Ok((slot, channel));
                }
                Err(err) => {
                    self.inner.eject(&slot, &err);
                    tried.push(slot);
                }
            }
        }
    }

    /// The endpoint's channel, carrying this handle's metadata.
    async fn endpoint_channel(&self, slot: &Arc<Slot>) -> Result<Channel, Error> {
        let channel = self.inner.channel(slot).await?;
        match &self.metadata {
            None => Ok(channel),
            Some(metadata) => Ok(channel.with_metadata_from(metadata)?),
        }
    }
}

/// What a balanced call sends on the endpoint it picked: typed arguments or a raw payload.
/// Owned by the call (and only borrowed while a frame is encoded), so a call's future is
/// `Send` whenever its arguments are.
trait Payload: Send {
    type Args: EncodeArgs + ?Sized;
    type Reply;

    /// The arguments to encode in the connection's codec.
    fn args(&self) -> &Self::Args;

    /// Refuses a connection whose codec the arguments cannot travel in.
    fn check(&self, channel: &Channel) -> Result<(), Error>;

    /// The reply, from the reply payload in `codec`.
    fn reply(codec: Codec, payload: Bytes) -> Result<Self::Reply, Error>;
}

/// Typed arguments, encoded per attempt in the endpoint connection's codec.
struct Typed<A, R> {
    args: A,
    reply: PhantomData<fn() -> R>,
}

impl<A: WireMessage, R: WireMessage> Payload for Typed<A, R> {
    type Args = A;
    type Reply = R;

    fn args(&self) -> &A {
        &self.args
    }

    fn check(&self, _: &Channel) -> Result<(), Error> {
        Ok(())
    }

    fn reply(codec: Codec, payload: Bytes) -> Result<R, Error> {
        Ok(codec.decode(&payload)?)
    }
}

/// Arguments already encoded in `codec`.
struct Raw {
    codec: Codec,
    args: RawArgs,
}

impl Payload for Raw {
    type Args = RawArgs;
    type Reply = Bytes;

    fn args(&self) -> &RawArgs {
        &self.args
    }

    fn check(&self, channel: &Channel) -> Result<(), Error> {
        check_codec(channel, self.codec)
    }

    fn reply(_: Codec, payload: Bytes) -> Result<Bytes, Error> {
        Ok(payload)
    }
}

/// A raw payload must be in the codec the endpoint's connection speaks.
fn check_codec(channel: &Channel, codec: Codec) -> Result<(), Error> {
    if channel.codec() == codec {
        return Ok(());
    }
    Err(Error::Config(format!(
        "the arguments are encoded in {codec} but the endpoint's connection uses {}; build \
         the balanced channel with `.codec(Codec::{codec:?})` alone",
        channel.codec()
    )))
}

/// Counts a call in its endpoint's in-flight number for as long as it lives.
struct InFlight<'a>(&'a Slot);

impl<'a> InFlight<'a> {
    fn start(slot: &'a Slot) -> Self {
        slot.in_flight.fetch_add(1, Ordering::Relaxed);
        Self(slot)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a failed attempt says about the call and the endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failure {
    /// The server did not run the call; `broke`: the endpoint's connection is unusable.
    NotRun { broke: bool },
    /// The connection broke after the call was sent: it may have run.
    MaybeRun,
    /// The server answered with an error of the call itself.
    Answered,
    /// Nothing another endpoint could change (the deadline passed, a local encoding error).
    Final,
}

impl Failure {
    fn of(err: &Error) -> Self {
        match err {
            Error::Connect { .. } | Error::Negotiation(_) | Error::Tls(_) => {
                Self::NotRun { broke: true }
            }
            // The server stopped reading before it closed, and finished every call it had
            // read: a call still waiting when it says it is shutting down never ran.
            Error::ConnectionClosed {
                code: Some(ErrorCode::ShuttingDown),
                ..
            } => Self::NotRun { broke: true },
            Error::ConnectionClosed { .. } => Self::MaybeRun,
            Error::Remote {
                code: ErrorCode::ShuttingDown,
                ..
            } => Self::NotRun { broke: true },
            Error::Remote {
                code: ErrorCode::Overloaded,
                ..
            } => Self::NotRun { broke: false },
            Error::Timeout { .. } | Error::Codec(_) | Error::Config(_) => Self::Final,
            _ => Self::Answered,
        }
    }

    fn connection_broke(self) -> bool {
        matches!(self, Self::NotRun { broke: true } | Self::MaybeRun)
    }
}

impl Inner {
    fn state(&self) -> Arc<State> {
        Arc::clone(&self.state.read().unwrap_or_else(|p| p.into_inner()))
    }

    fn no_endpoints(&self) -> Error {
        let state = self.state();
        Error::NoEndpoints {
            service: self.service.clone(),
            reason: if state.slots.is_empty() {
                "none is registered".to_owned()
            } else {
                format!(
                    "all {} are ejected after failing; they are probed with backoff",
                    state.slots.len()
                )
            },
        }
    }

    fn pick(&self, hash_key: Option<u64>, tried: &[Arc<Slot>]) -> Option<Arc<Slot>> {
        let state = self.state();
        let slots = &state.slots;
        let index = self
            .balance
            .pick(slots, &state.ring, &self.counter, hash_key, |i| {
                let slot = &slots[i];
                !slot.ejected.load(Ordering::Relaxed) && !tried.iter().any(|t| Arc::ptr_eq(t, slot))
            })?;
        Some(Arc::clone(&slots[index]))
    }

    /// The endpoint's open channel, dialling it first if it has none.
    async fn channel(&self, slot: &Slot) -> Result<Channel, Error> {
        if let Some(channel) = slot.ready_channel() {
            return Ok(channel);
        }
        let _dialling = slot.dial.lock().await;
        if let Some(channel) = slot.ready_channel() {
            return Ok(channel);
        }
        let channel = self.options.clone().connect(slot.address.as_str()).await?;
        *slot.ready.write().unwrap_or_else(|p| p.into_inner()) = Some(channel.clone());
        Ok(channel)
    }

    /// Takes a failed endpoint out of rotation and probes it with backoff until it connects.
    fn eject(self: &Arc<Self>, slot: &Arc<Slot>, err: &Error) {
        if slot.ejected.swap(true, Ordering::AcqRel) {
            return;
        }
        tracing::warn!(
            service = %self.service,
            endpoint = %slot.address,
            %err,
            "endpoint ejected; probing it with backoff"
        );
        slot.ready.write().unwrap_or_else(|p| p.into_inner()).take();
        tokio::spawn(probe(
            Arc::downgrade(slot),
            self.options.clone(),
            self.probe_backoff,
            self.max_probe_backoff,
            self.service.clone(),
        ));
    }

    /// Asks every endpoint in rotation for its health, and ejects those that are not
    /// serving or do not answer within the interval, unless that would eject every endpoint
    /// in rotation: a fleet that all reports itself unfit (or a check that is wrong
    /// everywhere) keeps its calls rather than failing all of them.
    async fn check_health(self: &Arc<Self>, interval: Duration) {
        let state = self.state();
        let in_rotation = state
            .slots
            .iter()
            .filter(|slot| !slot.ejected.load(Ordering::Relaxed))
            .count();
        let checks = state.slots.iter().filter_map(|slot| {
            if slot.ejected.load(Ordering::Relaxed) {
                return None;
            }
            // Only endpoints with an open connection: an unopened one is checked by its
            // first call (and ejected if that cannot connect).
            let channel = slot.ready_channel()?;
            Some(async move {
                let verdict = tokio::time::timeout(interval, health(&channel, &self.service)).await;
                let err = match verdict {
                    Ok(Ok(Health::Serving)) => return None,
                    Ok(Ok(Health::Not(status))) => Error::Remote {
                        code: ErrorCode::ShuttingDown,
                        message: format!("its health service reports {status:?}"),
                    },
                    Ok(Err(err)) => err,
                    Err(_) => Error::Timeout { after: interval },
                };
                Some((slot, err))
            })
        });
        let unfit: Vec<_> = futures::future::join_all(checks)
            .await
            .into_iter()
            .flatten()
            .collect();
        if !unfit.is_empty() && unfit.len() >= in_rotation {
            tracing::warn!(
                service = %self.service,
                endpoints = in_rotation,
                "every endpoint in rotation fails its health check; keeping them all rather \
                 than calling none"
            );
            return;
        }
        for (slot, err) in unfit {
            self.eject(slot, &err);
        }
    }

    /// Replaces the endpoint set with `set`, keeping the slots (connections, counters) of
    /// endpoints that stay.
    fn update(self: &Arc<Self>, set: &EndpointSet) {
        let old = self.state();
        if set.endpoints.is_empty() && !old.slots.is_empty() && !self.accept_empty_set {
            if !self.ignoring_empty_set.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    service = %self.service,
                    endpoints = old.slots.len(),
                    "the registry lists no endpoint any more; keeping the last known ones \
                     (a failed one is still ejected at its first failed call)"
                );
            }
            return;
        }
        self.ignoring_empty_set.store(false, Ordering::Relaxed);
        let mut slots: Vec<Arc<Slot>> = Vec::new();
        let mut registrations: Vec<&super::Registration> = Vec::new();
        for endpoint in set.endpoints.iter() {
            if !registrations
                .iter()
                .any(|r| r.address == endpoint.registration.address)
            {
                registrations.push(&endpoint.registration);
            }
        }
        if let Some(k) = self.subset {
            let addresses: Vec<&str> = registrations.iter().map(|r| r.address.as_str()).collect();
            let chosen = subset(self.subset_seed, &addresses, k);
            registrations = chosen.into_iter().map(|i| registrations[i]).collect();
        }
        for registration in registrations {
            // A server that registered again (a new lease) while its old record lingers
            // appears twice: one slot per address (the first record's weight).
            let weight = registration.effective_weight();
            let slot = match old.slots.iter().find(|s| s.address == registration.address) {
                Some(slot) => {
                    slot.weight.store(weight, Ordering::Relaxed);
                    Arc::clone(slot)
                }
                None => {
                    let slot = Arc::new(Slot::new(registration.address.clone(), weight));
                    if self.eager {
                        let inner = Arc::downgrade(self);
                        let eager = Arc::clone(&slot);
                        tokio::spawn(async move {
                            if let Some(inner) = inner.upgrade() {
                                if let Err(err) = inner.channel(&eager).await {
                                    inner.eject(&eager, &err);
                                }
                            }
                        });
                    }
                    slot
                }
            };
            slots.push(slot);
        }
        let added: Vec<&str> = slots
            .iter()
            .filter(|s| !old.slots.iter().any(|o| Arc::ptr_eq(o, s)))
            .map(|s| s.address.as_str())
            .collect();
        let removed: Vec<&str> = old
            .slots
            .iter()
            .filter(|o| !slots.iter().any(|s| Arc::ptr_eq(o, s)))
            .map(|s| s.address.as_str())
            .collect();
        if !added.is_empty() || !removed.is_empty() {
            tracing::info!(
                service = %self.service,
                ?added,
                ?removed,
                endpoints = slots.len(),
                "endpoint set changed"
            );
        }
        let weights: Vec<(&str, u32)> = slots
            .iter()
            .map(|s| (s.address.as_str(), s.weight.load(Ordering::Relaxed)))
            .collect();
        let ring = if self.balance == Balance::ConsistentHash {
            Ring::build(&weights)
        } else {
            Ring::default()
        };
        let state = Arc::new(State { slots, ring });
        *self.state.write().unwrap_or_else(|p| p.into_inner()) = state;
    }
}

impl Slot {
    fn new(address: String, weight: u32) -> Self {
        Self {
            address,
            weight: AtomicU32::new(weight),
            in_flight: AtomicUsize::new(0),
            ejected: AtomicBool::new(false),
            ready: RwLock::new(None),
            dial: tokio::sync::Mutex::new(()),
            calls: AtomicU64::new(0),
            failures: AtomicU64::new(0),
        }
    }

    fn ready_channel(&self) -> Option<Channel> {
        self.ready
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|channel| !channel.is_closed())
            .cloned()
    }
}

/// Dials an ejected endpoint with a doubling backoff until it answers (then re-admits it) or
/// leaves the endpoint set.
async fn probe(
    slot: Weak<Slot>,
    options: ChannelBuilder,
    first: Duration,
    max: Duration,
    service: String,
) {
    let mut delay = first;
    loop {
        tokio::time::sleep(delay).await;
        let Some(address) = slot.upgrade().map(|s| s.address.clone()) else {
            return;
        };
        let answered = match options.clone().connect(address.as_str()).await {
            Ok(channel) => match health(&channel, &service).await {
                Ok(Health::Serving) => Ok(channel),
                Ok(Health::Not(status)) => Err(Error::Remote {
                    code: ErrorCode::ShuttingDown,
                    message: format!("its health service reports {status:?}"),
                }),
                Err(err) => Err(err),
            },
            Err(err) => Err(err),
        };
        match answered {
            Ok(channel) => {
                let Some(slot) = slot.upgrade() else { return };
                *slot.ready.write().unwrap_or_else(|p| p.into_inner()) = Some(channel);
                slot.ejected.store(false, Ordering::Release);
                tracing::info!(%service, endpoint = %address, "endpoint answers again; re-added");
                return;
            }
            Err(err) => {
                tracing::debug!(%service, endpoint = %address, %err, ?delay, "probe failed");
                delay = (delay * 2).min(max);
            }
        }
    }
}

/// What an endpoint's health service says of a service.
enum Health {
    /// `Serving`, `Unknown` (the server's reporter was not told about the service, so the
    /// passive checks decide), or no health service at all.
    Serving,
    /// `NotServing` or `Draining`.
    Not(ServingStatus),
}

/// Asks the endpoint behind `channel` for the health of `service`.
async fn health(channel: &Channel, service: &str) -> Result<Health, Error> {
    match HealthClient::new(channel.clone())
        .check(service.to_owned())
        .await
    {
        Ok(ServingStatus::Serving | ServingStatus::Unknown) => Ok(Health::Serving),
        Ok(status) => Ok(Health::Not(status)),
        // A server without the health service is judged by its connection alone.
        Err(Error::UnknownMethod { .. }) => Ok(Health::Serving),
        Err(err) => Err(err),
    }
}

/// Checks the health of the endpoints in rotation every `interval`, for as long as the
/// channel lives.
async fn check_health(inner: Weak<Inner>, interval: Duration) {
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        inner.check_health(interval).await;
    }
}

/// Follows the registry's updates for as long as the channel lives.
async fn follow(inner: Weak<Inner>, mut endpoints: Endpoints) {
    loop {
        let set = endpoints.changed().await;
        let Some(inner) = inner.upgrade() else { return };
        inner.update(&set);
    }
}

/// Options for a [`BalancedChannel`].
///
/// ```no_run
/// # async fn run(registry: wirecall_runtime::discovery::Registry) -> Result<(), wirecall_runtime::Error> {
/// use std::time::Duration;
/// use wirecall_runtime::discovery::{Balance, BalancedChannel};
/// use wirecall_runtime::Channel;
///
/// let users = BalancedChannel::builder()
///     .balance(Balance::RoundRobin)
///     .channel(Channel::builder().timeout(Duration::from_secs(2)))
///     .eager(true)
///     .discover(&registry, "User")
///     .await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct BalancedChannelBuilder {
    balance: Balance,
    options: ChannelBuilder,
    eager: bool,
    subset: Option<usize>,
    subset_seed: Option<u64>,
    probe_backoff: Duration,
    max_probe_backoff: Duration,
    retry_ratio: f32,
    min_retries_per_second: u32,
    health_interval: Option<Duration>,
    accept_empty_set: bool,
}

impl Default for BalancedChannelBuilder {
    fn default() -> Self {
        Self {
            balance: Balance::default(),
            options: ChannelBuilder::default(),
            eager: false,
            subset: None,
            subset_seed: None,
            probe_backoff: DEFAULT_PROBE_BACKOFF,
            max_probe_backoff: DEFAULT_MAX_PROBE_BACKOFF,
            retry_ratio: DEFAULT_RETRY_RATIO,
            min_retries_per_second: DEFAULT_MIN_RETRIES_PER_SECOND,
            health_interval: None,
            accept_empty_set: false,
        }
    }
}

impl BalancedChannelBuilder {
    /// The balancing policy (default [`Balance::PowerOfTwo`]).
    pub fn balance(mut self, balance: Balance) -> Self {
        self.balance = balance;
        self
    }

    /// The options of each endpoint's channel (codecs, deadline, TLS, token, keepalive...).
    /// Endpoint channels never redial by themselves: the balanced channel ejects and probes.
    pub fn channel(mut self, options: ChannelBuilder) -> Self {
        self.options = options;
        self
    }

    /// Connect to each endpoint as soon as it appears (default: on its first call).
    pub fn eager(mut self, eager: bool) -> Self {
        self.eager = eager;
        self
    }

    /// Deterministic subsetting: use at most `k` of the service's endpoints (default: all),
    /// so that M clients and N servers hold M·k connections rather than M·N. Each channel
    /// picks its `k` by rendezvous hashing of a seed with the endpoint addresses: every
    /// endpoint is in about `k/N` of all subsets, and when one leaves, only the channels that
    /// held it take one other endpoint. The seed is random per channel unless
    /// [`subset_seed`](Self::subset_seed) fixes it.
    pub fn subset(mut self, k: usize) -> Self {
        self.subset = Some(k.max(1));
        self
    }

    /// Fixes the subsetting seed (for example a hash of the host name), so that a restarted
    /// client connects to the same subset.
    pub fn subset_seed(mut self, seed: u64) -> Self {
        self.subset_seed = Some(seed);
        self
    }

    /// The first and the longest wait between probes of an ejected endpoint (default 100 ms
    /// and 5 s).
    pub fn probe_backoff(mut self, first: Duration, max: Duration) -> Self {
        self.probe_backoff = first;
        self.max_probe_backoff = max.max(first);
        self
    }

    /// The retry budget: retries may add `ratio` of the calls of the last 10 s (default 0.2),
    /// plus `min_per_second` retries per second (default 10).
    pub fn retry_budget(mut self, ratio: f32, min_per_second: u32) -> Self {
        self.retry_ratio = ratio.clamp(0.0, 1000.0);
        self.min_retries_per_second = min_per_second;
        self
    }

    /// Active health checks: every `interval`, ask each endpoint in rotation (with an open
    /// connection) for the service's status through the built-in health service
    /// (`wirecall.Health`), and eject one that reports `Draining` or `NotServing` or does not
    /// answer within `interval`; it is probed and re-added like an endpoint whose connection
    /// failed. Active checks never empty the rotation: when every endpoint in it fails a
    /// check at once, all stay (with a warning), since calling servers that say they are
    /// unfit beats failing every call. `Unknown` and a server without the health service
    /// count as serving. Off by
    /// default: the passive checks eject a failed endpoint at its first failed call, and the
    /// registry removes a draining one; turn this on to stop calling a server that is up but
    /// reports itself not serving.
    pub fn health_check(mut self, interval: Duration) -> Self {
        self.health_interval = Some(interval.max(Duration::from_millis(10)));
        self
    }

    /// Whether an empty endpoint set from the registry replaces the endpoints the channel
    /// has (default `false`). By default a registry that suddenly lists no endpoint at all
    /// (its data lost or restored from an old snapshot, a wrong prefix, every lease expired
    /// during a registry outage) is treated like an unreachable one: the last known endpoints
    /// stay, with a warning, and the next non-empty set replaces them. Endpoints that are
    /// really gone fail their next call, are ejected and probed. Set `true` to follow the
    /// registry to zero, for example when a service is retired and its callers should fail
    /// with [`Error::NoEndpoints`] at once.
    pub fn accept_empty_set(mut self, accept: bool) -> Self {
        self.accept_empty_set = accept;
        self
    }

    /// A channel over the endpoints of `service` in `registry`. Waits until the registry has
    /// answered once (at most the channel options' connect timeout, 10 s by default); the set
    /// may be empty then, and fill later.
    pub async fn discover(
        self,
        registry: &Registry,
        service: &str,
    ) -> Result<BalancedChannel, Error> {
        let mut endpoints = registry.watch(service);
        let wait = self.options.connect_timeout_value();
        let first = tokio::time::timeout(wait, endpoints.ready())
            .await
            .map_err(|_| Error::NoEndpoints {
                service: service.to_owned(),
                reason: format!(
                    "registry {} did not answer within {wait:?}",
                    registry.describe()
                ),
            })?;
        let timeout = self.options.default_timeout();
        let inner = Arc::new(Inner {
            service: service.to_owned(),
            balance: self.balance,
            options: self.options.reconnect(false),
            eager: self.eager,
            subset: self.subset,
            subset_seed: self.subset_seed.unwrap_or_else(|| fastrand::u64(..)),
            probe_backoff: self.probe_backoff,
            max_probe_backoff: self.max_probe_backoff,
            health_interval: self.health_interval,
            accept_empty_set: self.accept_empty_set,
            ignoring_empty_set: AtomicBool::new(false),
            state: RwLock::new(Arc::new(State::default())),
            counter: AtomicUsize::new(0),
            budget: TpsBudget::new(
                Duration::from_secs(10),
                self.min_retries_per_second,
                self.retry_ratio,
            ),
            tasks: Mutex::new(Vec::new()),
        });
        inner.update(&first);
        let mut tasks = vec![tokio::spawn(follow(Arc::downgrade(&inner), endpoints))];
        if let Some(interval) = inner.health_interval {
            tasks.push(tokio::spawn(check_health(Arc::downgrade(&inner), interval)));
        }
        *inner.tasks.lock().unwrap_or_else(|p| p.into_inner()) = tasks;
        Ok(BalancedChannel {
            inner,
            timeout,
            hash_key: None,
            metadata: None,
        })
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

    fn notify<A: WireMessage>(
        &self,
        method: MethodId,
        args: A,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        BalancedChannel::notify(self, method, args)
    }

    fn with_timeout(&self, timeout: Duration) -> Self {
        BalancedChannel::with_timeout(self, timeout)
    }
}
