//! The RabbitMQ back-end (feature `rabbitmq`), through the lapin crate.
//!
//! `connection.rs` keeps one connection up (reconnecting with backoff), `publish.rs` publishes
//! and retries a publish whose outcome is unknown with the same envelope, `consumer.rs` runs
//! each subscription's consumer and resubscribes after a loss, `topology.rs` names and
//! declares exchanges and queues, `headers.rs` maps an [`Envelope`](crate::events::Envelope)
//! onto AMQP properties.
//!
//! Guarantees: a publish resolves once the broker confirmed it (publisher confirms; messages
//! are persistent, queues durable); a delivery is acknowledged only after its handler
//! succeeded or it was republished, confirmed, to a retry queue or the dead letters; while
//! disconnected, publishes fail at once with
//! [`PublishError::Disconnected`](crate::events::PublishError::Disconnected), and a publish
//! that was sent and not confirmed is sent again with the same id for
//! [`RabbitMqConfig::publish_retry_within`].

mod config;
mod connection;
mod consumer;
mod headers;
mod publish;
pub mod topology;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use lapin::options::{BasicAckOptions, BasicGetOptions, QueueDeleteOptions};
use lapin::types::ShortString;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use config::{
    RabbitMqConfig, DEFAULT_CONNECT_TIMEOUT, DEFAULT_PUBLISH_RETRY_WITHIN,
    DEFAULT_RECONNECT_MAX_DELAY, DEFAULT_RECONNECT_MIN_DELAY,
};

use self::connection::Live;
use self::consumer::ConsumerSpec;
use super::config::SubscriptionConfig;
use super::contract::{ContractDescriptor, EventHandler};
use super::dead_letter::DeadLetter;
use super::error::{ConnectError, DeadLetterReason, SubscribeError};
use super::handled_once::HandledOnceGate;
use super::redelivery::RetryPolicy;
use super::subscription::Subscription;

/// The back-end's shared state.
pub(crate) struct RabbitMq {
    state: watch::Receiver<Option<Arc<Live>>>,
    closing: CancellationToken,
    /// The retry delays each subscription was declared with in this process, so that
    /// `delete` finds its retry queues.
    retry_delays: Mutex<HashMap<String, HashSet<u64>>>,
    /// See [`RabbitMqConfig::publish_retry_within`].
    publish_retry_within: Duration,
    /// The first pause before publishing an event again (the reconnection backoff's first
    /// wait).
    publish_retry_pause: Duration,
}

impl RabbitMq {
    pub(crate) async fn connect(config: RabbitMqConfig) -> Result<Arc<Self>, ConnectError> {
        let live = Arc::new(connection::open(&config, 0).await?);
        let (publish_retry_within, publish_retry_pause) =
            (config.publish_retry_within, config.reconnect_min_delay);
        let (sender, state) = watch::channel(Some(Arc::clone(&live)));
        let closing = CancellationToken::new();
        tokio::spawn(connection::supervise(config, sender, live, closing.clone()));
        Ok(Arc::new(Self {
            state,
            closing,
            retry_delays: Mutex::new(HashMap::new()),
            publish_retry_within,
            publish_retry_pause,
        }))
    }

    fn live(&self) -> Option<Arc<Live>> {
        self.state
            .borrow()
            .as_ref()
            .filter(|live| live.is_up())
            .cloned()
    }

    pub(crate) fn is_connected(&self) -> bool {
        self.live().is_some()
    }

    fn remember_delays(&self, contract: &str, subscription: &str, policy: &RetryPolicy) {
        self.retry_delays
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(topology::queue(contract, subscription))
            .or_default()
            .extend(topology::retry_delays_ms(policy));
    }

    pub(crate) async fn subscribe(
        &self,
        subscription: &str,
        handler: Arc<dyn EventHandler>,
        config: SubscriptionConfig,
    ) -> Result<Subscription, SubscribeError> {
        let live = self.live().ok_or(SubscribeError::Disconnected)?;
        let contract = handler.contract();
        self.remember_delays(contract.name, subscription, &config.retry);
        let window = config
            .handled_once
            .as_ref()
            .map(|window| HandledOnceGate::new(window, contract.name, subscription));
        let spec = Arc::new(ConsumerSpec {
            subscription: subscription.to_owned(),
            handler,
            config,
            window,
        });
        let session = consumer::open_session(&live, &spec)
            .await
            .map_err(|error| SubscribeError::Broker(error.to_string()))?;
        let stop = CancellationToken::new();
        let task = tokio::spawn(consumer::run(
            spec,
            self.state.clone(),
            session,
            stop.clone(),
        ));
        Ok(Subscription::new(stop, task))
    }

    async fn channel(&self) -> Result<lapin::Channel, SubscribeError> {
        let live = self.live().ok_or(SubscribeError::Disconnected)?;
        live.connection
            .create_channel()
            .await
            .map_err(|error| SubscribeError::Broker(error.to_string()))
    }

    pub(crate) async fn declare(
        &self,
        contract: &'static ContractDescriptor,
        subscription: &str,
        config: &SubscriptionConfig,
    ) -> Result<(), SubscribeError> {
        let channel = self.channel().await?;
        self.remember_delays(contract.name, subscription, &config.retry);
        let declared =
            topology::declare_subscription(&channel, contract, subscription, &config.retry).await;
        let _ = channel.close(200, "declared".into()).await;
        declared.map_err(|error| SubscribeError::Broker(error.to_string()))
    }

    pub(crate) async fn take_dead_letters(
        &self,
        contract: &'static ContractDescriptor,
        subscription: &str,
        max: usize,
    ) -> Result<Vec<DeadLetter>, SubscribeError> {
        let channel = self.channel().await?;
        let queue = topology::dead_letter_queue(contract.name, subscription);
        let broker = |error: lapin::Error| SubscribeError::Broker(error.to_string());
        let mut taken = Vec::new();
        while taken.len() < max {
            let Some(message) = channel
                .basic_get(
                    ShortString::from(queue.as_str()),
                    BasicGetOptions::default(),
                )
                .await
                .map_err(broker)?
            else {
                break;
            };
            let lapin::message::Delivery {
                routing_key,
                properties,
                data,
                acker,
                ..
            } = message.delivery;
            let (envelope, _) =
                headers::envelope(&properties, routing_key.as_str(), Bytes::from(data));
            let (reason, error) = match headers::dead_letter_reason(&properties) {
                Some(found) => found,
                None => (
                    DeadLetterReason::UnknownEvent,
                    format!(
                        "no subscription binds the event {:?}; it came through the contract's \
                         alternate exchange",
                        envelope.event
                    ),
                ),
            };
            acker
                .ack(BasicAckOptions::default())
                .await
                .map_err(broker)?;
            taken.push(DeadLetter {
                envelope,
                reason,
                error,
            });
        }
        let _ = channel.close(200, "dead letters read".into()).await;
        Ok(taken)
    }

    pub(crate) async fn delete(
        &self,
        contract: &'static ContractDescriptor,
        subscription: &str,
    ) -> Result<(), SubscribeError> {
        let channel = self.channel().await?;
        let main = topology::queue(contract.name, subscription);
        let mut queues = vec![
            main.clone(),
            topology::dead_letter_queue(contract.name, subscription),
        ];
        let mut delays: HashSet<u64> = topology::retry_delays_ms(&RetryPolicy::default())
            .into_iter()
            .collect();
        if let Some(known) = self
            .retry_delays
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&main)
        {
            delays.extend(known);
        }
        queues.extend(
            delays
                .into_iter()
                .map(|ms| topology::retry_queue(contract.name, subscription, ms)),
        );
        for queue in queues {
            channel
                .queue_delete(ShortString::from(queue), QueueDeleteOptions::default())
                .await
                .map_err(|error| SubscribeError::Broker(error.to_string()))?;
        }
        let _ = channel.close(200, "deleted".into()).await;
        Ok(())
    }

    pub(crate) async fn close(&self) {
        self.closing.cancel();
        // Cloned out first: the watch's read guard must not be held across the close.
        let live = self.state.borrow().clone();
        if let Some(live) = live {
            let _ = live.connection.close(200, "event bus closed".into()).await;
        }
    }
}
