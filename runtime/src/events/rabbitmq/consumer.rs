//! One consumer of a subscription: its own channel with `basic_qos(prefetch)` and confirms,
//! handlers run concurrently up to the prefetch, and each delivery is acknowledged only once
//! it is settled: handled, or republished (confirmed) to a retry queue or the dead letters.
//! When the connection or the channel goes, the consumer opens a new one and resubscribes.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use lapin::message::Delivery;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicNackOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions,
};
use lapin::types::{FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Confirmation, Consumer};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::connection::Live;
use super::{headers, topology};
use crate::events::config::SubscriptionConfig;
use crate::events::consume::{self, Verdict};
use crate::events::contract::EventHandler;
use crate::events::handled_once::HandledOnceGate;

/// The longest wait between attempts to resubscribe on a connection that is up.
const RESUBSCRIBE_MAX_DELAY: Duration = Duration::from_secs(5);

/// How long one attempt to resubscribe (a channel, the topology, qos, consume) may take before
/// it counts as failed: a broker that accepted the connection and then stopped answering must
/// not hold the consumer forever.
const RESUBSCRIBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a consumer consumes, and how.
pub(crate) struct ConsumerSpec {
    pub(crate) subscription: String,
    pub(crate) handler: Arc<dyn EventHandler>,
    pub(crate) config: SubscriptionConfig,
    /// The handled-once window's gate, kept across resubscriptions: a delivery whose
    /// acknowledgement went with the old channel comes back on the new one.
    pub(crate) window: Option<HandledOnceGate>,
}

/// A channel consuming the subscription's queue.
pub(crate) struct Session {
    channel: Channel,
    deliveries: Consumer,
    /// The connection it runs on ([`Live::generation`]).
    generation: u64,
}

/// Declares the subscription's topology and starts consuming on a new channel.
pub(crate) async fn open_session(live: &Live, spec: &ConsumerSpec) -> lapin::Result<Session> {
    let contract = spec.handler.contract();
    let channel = live.connection.create_channel().await?;
    topology::declare_subscription(&channel, contract, &spec.subscription, &spec.config.retry)
        .await?;
    channel
        .basic_qos(spec.config.prefetch.max(1), BasicQosOptions::default())
        .await?;
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await?;
    let deliveries = channel
        .basic_consume(
            ShortString::from(topology::queue(contract.name, &spec.subscription)),
            ShortString::from(""),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    Ok(Session {
        channel,
        deliveries,
        generation: live.generation,
    })
}

/// Consumes until `stop`, resubscribing whenever the session ends for another reason.
pub(crate) async fn run(
    spec: Arc<ConsumerSpec>,
    mut state: watch::Receiver<Option<Arc<Live>>>,
    first: Session,
    stop: CancellationToken,
) {
    let mut session = Some(first);
    let mut delay = Duration::from_millis(100);
    loop {
        if let Some(Session {
            channel,
            deliveries,
            generation,
        }) = session.take()
        {
            // The session ends when its deliveries do, or as soon as the supervisor reports
            // its connection lost, whether or not the deliveries stream has noticed: a consumer
            // must never wait on a dead channel while its queue fills. Settles still in flight
            // are dropped unacknowledged, so the broker delivers those events again.
            tokio::select! {
                () = consume(&spec, &channel, deliveries, &stop) => {}
                () = connection_replaced(state.clone(), generation) => {}
            }
            if stop.is_cancelled() {
                // Deliveries not yet taken are unacknowledged and go back to the queue.
                let _ = channel.close(200, "subscription closed".into()).await;
                return;
            }
            tracing::warn!(subscription = %spec.subscription, "event consumer stopped; resubscribing");
        }
        let live = state.borrow_and_update().clone();
        match live {
            Some(live) if live.is_up() => {
                match tokio::time::timeout(RESUBSCRIBE_TIMEOUT, open_session(&live, &spec)).await {
                    Ok(Ok(next)) => {
                        session = Some(next);
                        delay = Duration::from_millis(100);
                        continue;
                    }
                    Ok(Err(error)) => {
                        tracing::debug!(%error, subscription = %spec.subscription, "resubscribe failed");
                    }
                    Err(_) => {
                        tracing::debug!(subscription = %spec.subscription, timeout = ?RESUBSCRIBE_TIMEOUT, "resubscribe timed out");
                    }
                }
            }
            _ => {}
        }
        // Wait for a new connection, or retry on this one after a growing delay.
        tokio::select! {
            () = stop.cancelled() => return,
            _ = state.changed() => {}
            () = tokio::time::sleep(delay) => {}
        }
        delay = (delay * 2).min(RESUBSCRIBE_MAX_DELAY);
    }
}

/// Returns once the connection of `generation` is no longer the current one (lost, or
/// replaced by a new one); never, if the supervisor has stopped.
async fn connection_replaced(mut state: watch::Receiver<Option<Arc<Live>>>, generation: u64) {
    let supervisor_gone = state
        .wait_for(|live| {
            live.as_ref()
                .is_none_or(|live| live.generation != generation)
        })
        .await
        .is_err();
    if supervisor_gone {
        std::future::pending::<()>().await;
    }
}

async fn consume(
    spec: &ConsumerSpec,
    channel: &Channel,
    deliveries: Consumer,
    stop: &CancellationToken,
) {
    let prefetch = usize::from(spec.config.prefetch.max(1));
    deliveries
        .take_until(stop.cancelled())
        .for_each_concurrent(prefetch, |delivery| async move {
            match delivery {
                Ok(delivery) => settle(spec, channel, delivery).await,
                Err(error) => {
                    tracing::debug!(%error, subscription = %spec.subscription, "event consumer error");
                }
            }
        })
        .await;
}

async fn settle(spec: &ConsumerSpec, channel: &Channel, delivery: Delivery) {
    let Delivery {
        routing_key,
        properties,
        data,
        acker,
        ..
    } = delivery;
    let contract = spec.handler.contract().name;
    let (mut envelope, malformed) =
        headers::envelope(&properties, routing_key.as_str(), Bytes::from(data));
    let verdict = match malformed {
        Some(error) => Verdict::DeadLetter {
            attempts: envelope.attempts,
            reason: error.reason(),
            error: error.to_string(),
        },
        None => {
            consume::handle(
                &*spec.handler,
                &envelope,
                &spec.config.retry,
                spec.window.as_ref(),
            )
            .await
        }
    };
    let settled = match verdict {
        Verdict::Done => true,
        Verdict::Retry {
            delay, attempts, ..
        } => {
            envelope.attempts = attempts;
            let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
            let queue = topology::retry_queue(contract, &spec.subscription, delay_ms);
            republish(
                channel,
                &queue,
                &envelope.payload,
                headers::properties(&envelope),
            )
            .await
        }
        Verdict::DeadLetter {
            attempts,
            reason,
            error,
        } => {
            envelope.attempts = attempts;
            let queue = topology::dead_letter_queue(contract, &spec.subscription);
            let properties =
                headers::dead_letter_properties(&envelope, reason, &error, &envelope.event);
            republish(channel, &queue, &envelope.payload, properties).await
        }
    };
    let result = if settled {
        acker.ack(BasicAckOptions::default()).await
    } else {
        // Not settled: back to the queue, to be tried again (at least once, never dropped).
        acker
            .nack(BasicNackOptions {
                requeue: true,
                ..BasicNackOptions::default()
            })
            .await
    };
    if let Err(error) = result {
        // The channel is gone; the broker requeues the delivery itself.
        tracing::debug!(%error, "event acknowledgement failed");
    }
}

/// Publishes to one queue through the default exchange and waits for the broker's confirm.
async fn republish(
    channel: &Channel,
    queue: &str,
    payload: &[u8],
    properties: BasicProperties,
) -> bool {
    let confirm = channel
        .basic_publish(
            ShortString::from(""),
            ShortString::from(queue),
            BasicPublishOptions::default(),
            payload,
            properties,
        )
        .await;
    match confirm {
        Ok(confirm) => matches!(confirm.await, Ok(Confirmation::Ack(_))),
        Err(error) => {
            tracing::debug!(%error, queue, "event republish failed");
            false
        }
    }
}
