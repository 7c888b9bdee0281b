//! [`EventBus`]: the handle publishers and subscribers share, over one back-end (in-process,
//! or RabbitMQ with the `rabbitmq` feature).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::BytesMut;

use super::config::{valid_subscription_name, SubscriptionConfig};
use super::contract::{ContractDescriptor, EventHandler};
use super::dead_letter::DeadLetter;
use super::envelope::{content_type, Envelope, EventId};
use super::error::{PublishError, SubscribeError};
use super::in_process::InProcess;
use super::subscription::Subscription;
use crate::codec::{Codec, WireMessage};
use crate::context::CallContext;
use crate::message::{ArgValues, ArgsMessage, MethodMessages};
use crate::metadata::Metadata;
use crate::trace::TraceContext;

/// A connection to an event bus; cheap to clone (clones share it).
///
/// ```
/// use wirecall_runtime::events::EventBus;
///
/// // The default back-end needs no broker.
/// let bus = EventBus::in_process();
/// assert!(bus.is_connected());
/// ```
#[derive(Clone)]
pub struct EventBus {
    backend: Backend,
}

#[derive(Clone)]
enum Backend {
    InProcess(Arc<InProcess>),
    #[cfg(feature = "rabbitmq")]
    RabbitMq(Arc<super::rabbitmq::RabbitMq>),
}

impl std::fmt::Debug for EventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let backend = match &self.backend {
            Backend::InProcess(_) => "in-process",
            #[cfg(feature = "rabbitmq")]
            Backend::RabbitMq(_) => "rabbitmq",
        };
        f.debug_struct("EventBus")
            .field("backend", &backend)
            .finish_non_exhaustive()
    }
}

impl EventBus {
    /// A bus that lives in this process: no broker, nothing survives a restart.
    pub fn in_process() -> Self {
        Self {
            backend: Backend::InProcess(Arc::new(InProcess::default())),
        }
    }

    /// Connects to RabbitMQ at `url` (`amqp://user:password@host:port/vhost`) with the
    /// default [`RabbitMqConfig`](crate::events::RabbitMqConfig).
    #[cfg(feature = "rabbitmq")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rabbitmq")))]
    pub async fn rabbitmq(url: &str) -> Result<Self, super::error::ConnectError> {
        Self::connect_rabbitmq(super::rabbitmq::RabbitMqConfig::new(url)).await
    }

    /// Connects to RabbitMQ with `config`; fails if the broker does not answer now (later
    /// losses are recovered in the background).
    #[cfg(feature = "rabbitmq")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rabbitmq")))]
    pub async fn connect_rabbitmq(
        config: super::rabbitmq::RabbitMqConfig,
    ) -> Result<Self, super::error::ConnectError> {
        let backend = super::rabbitmq::RabbitMq::connect(config).await?;
        Ok(Self {
            backend: Backend::RabbitMq(backend),
        })
    }

    /// Whether the bus can publish right now (always for the in-process back-end; for
    /// RabbitMQ, whether a connection is up).
    pub fn is_connected(&self) -> bool {
        match &self.backend {
            Backend::InProcess(_) => true,
            #[cfg(feature = "rabbitmq")]
            Backend::RabbitMq(backend) => backend.is_connected(),
        }
    }

    /// Publishes an already encoded event, as-is. Generated publishers call this after
    /// encoding; bridges that forward events from elsewhere can call it directly. Resolves
    /// once the back-end holds the event (for RabbitMQ: the broker confirmed it; a try whose
    /// outcome is unknown is repeated with this envelope, see
    /// `RabbitMqConfig::publish_retry_within`). Publishing one envelope again keeps its id,
    /// which a subscription's handled-once window recognises.
    pub async fn publish_envelope(&self, envelope: Envelope) -> Result<(), PublishError> {
        match &self.backend {
            Backend::InProcess(backend) => backend.publish(envelope).await,
            #[cfg(feature = "rabbitmq")]
            Backend::RabbitMq(backend) => backend.publish(envelope).await,
        }
    }

    /// Starts consuming `subscription` with `handler` (a generated `{Trait}Subscriber`), with
    /// the default [`SubscriptionConfig`]. Every subscription receives every event of the
    /// contract; consumers subscribed under one name share its events.
    pub async fn subscribe<H: EventHandler>(
        &self,
        subscription: &str,
        handler: H,
    ) -> Result<Subscription, SubscribeError> {
        self.subscribe_with(subscription, handler, SubscriptionConfig::default())
            .await
    }

    /// [`subscribe`](Self::subscribe) with explicit settings.
    pub async fn subscribe_with<H: EventHandler>(
        &self,
        subscription: &str,
        handler: H,
        config: SubscriptionConfig,
    ) -> Result<Subscription, SubscribeError> {
        check_name(subscription)?;
        let handler: Arc<dyn EventHandler> = Arc::new(handler);
        match &self.backend {
            Backend::InProcess(backend) => Ok(backend.subscribe(subscription, handler, config)),
            #[cfg(feature = "rabbitmq")]
            Backend::RabbitMq(backend) => backend.subscribe(subscription, handler, config).await,
        }
    }

    /// Creates `subscription`'s queue (and, on RabbitMQ, its retry and dead-letter queues)
    /// without consuming, so that events published before its first consumer starts wait for
    /// it. A subscription that has subscribed once already exists.
    pub async fn declare(
        &self,
        contract: &'static ContractDescriptor,
        subscription: &str,
    ) -> Result<(), SubscribeError> {
        self.declare_with(contract, subscription, SubscriptionConfig::default())
            .await
    }

    /// [`declare`](Self::declare) with the settings the subscription will consume with (on
    /// RabbitMQ the retry queues depend on the retry policy).
    pub async fn declare_with(
        &self,
        contract: &'static ContractDescriptor,
        subscription: &str,
        config: SubscriptionConfig,
    ) -> Result<(), SubscribeError> {
        check_name(subscription)?;
        match &self.backend {
            Backend::InProcess(backend) => {
                let _ = config;
                backend.declare(contract, subscription);
                Ok(())
            }
            #[cfg(feature = "rabbitmq")]
            Backend::RabbitMq(backend) => backend.declare(contract, subscription, &config).await,
        }
    }

    /// Takes up to `max` events off `subscription`'s dead letters, oldest first (they are
    /// removed: re-publish them with [`publish_envelope`](Self::publish_envelope) once the
    /// cause is fixed).
    pub async fn take_dead_letters(
        &self,
        contract: &'static ContractDescriptor,
        subscription: &str,
        max: usize,
    ) -> Result<Vec<DeadLetter>, SubscribeError> {
        check_name(subscription)?;
        match &self.backend {
            Backend::InProcess(backend) => {
                Ok(backend.take_dead_letters(contract, subscription, max))
            }
            #[cfg(feature = "rabbitmq")]
            Backend::RabbitMq(backend) => {
                backend.take_dead_letters(contract, subscription, max).await
            }
        }
    }

    /// Deletes `subscription`: its queue with any events still in it, its retry queues and
    /// its dead letters. Running consumers of it stop receiving.
    pub async fn delete_subscription(
        &self,
        contract: &'static ContractDescriptor,
        subscription: &str,
    ) -> Result<(), SubscribeError> {
        check_name(subscription)?;
        match &self.backend {
            Backend::InProcess(backend) => {
                backend.delete(contract, subscription);
                Ok(())
            }
            #[cfg(feature = "rabbitmq")]
            Backend::RabbitMq(backend) => backend.delete(contract, subscription).await,
        }
    }

    /// Closes the bus's broker connection (a no-op in-process). Clones of the bus are closed
    /// too.
    pub async fn close(&self) {
        #[cfg(feature = "rabbitmq")]
        if let Backend::RabbitMq(backend) = &self.backend {
            backend.close().await;
        }
    }
}

fn check_name(subscription: &str) -> Result<(), SubscribeError> {
    if valid_subscription_name(subscription) {
        Ok(())
    } else {
        Err(SubscribeError::InvalidName(subscription.to_owned()))
    }
}

/// Encodes `args` (event `M`'s) with `codec` and publishes them as `event` of `contract`: what a generated
/// `{Trait}Publisher` method does. The trace context is the current call's (a child span), so
/// a publish from inside a handler joins its trace; elsewhere a new trace starts.
#[doc(hidden)]
pub async fn publish<M: MethodMessages<Args: ArgsMessage>>(
    bus: &EventBus,
    contract: &'static ContractDescriptor,
    event: &'static str,
    codec: Codec,
    metadata: &Metadata,
    args: ArgValues<M>,
) -> Result<(), PublishError> {
    let payload = encode(codec, &M::Args::from_values(args))?;
    let trace = CallContext::with_current(|call| call.trace())
        .flatten()
        .or_else(|| super::context::EventContext::current().and_then(|event| event.trace))
        .map_or_else(TraceContext::new_root, |parent| parent.child());
    bus.publish_envelope(Envelope {
        id: EventId::random(),
        timestamp: SystemTime::now(),
        contract: Cow::Borrowed(contract.name),
        event: Cow::Borrowed(event),
        content_type: Cow::Borrowed(content_type(codec)),
        attempts: 0,
        metadata: metadata.clone(),
        trace: Some(trace),
        payload,
    })
    .await
}

/// The size of the per-thread buffer payloads are encoded into.
const ENCODE_CHUNK: usize = 64 * 1024;

thread_local! {
    /// Payloads are cut from one chunk per thread rather than allocated one by one: a
    /// small event then costs no allocation and no reallocation while it grows, and the
    /// chunk is freed once the last event cut from it is dropped.
    static ENCODE_BUFFER: std::cell::RefCell<BytesMut> = std::cell::RefCell::new(BytesMut::new());
}

fn encode<A: WireMessage>(codec: Codec, args: &A) -> Result<bytes::Bytes, PublishError> {
    ENCODE_BUFFER.with(|buffer| {
        let mut buffer = buffer.borrow_mut();
        if buffer.capacity() < ENCODE_CHUNK / 16 {
            *buffer = BytesMut::with_capacity(ENCODE_CHUNK);
        }
        match codec.encode(args, &mut buffer) {
            Ok(()) => Ok(buffer.split().freeze()),
            Err(error) => {
                buffer.clear();
                Err(PublishError::Encode(error))
            }
        }
    })
}
