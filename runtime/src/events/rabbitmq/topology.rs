//! The names and shapes of what the RabbitMQ back-end declares, so that the management tools
//! show a readable picture:
//!
//! | what | name | kind |
//! | --- | --- | --- |
//! | one exchange per contract | `wirecall.{contract}` | direct, durable, alternate exchange `wirecall.{contract}.unrouted` |
//! | its alternate exchange | `wirecall.{contract}.unrouted` | fanout, durable; every dead-letter queue of the contract is bound to it |
//! | one binding per event | routing key `{event}` (the trait method's name) | |
//! | one queue per subscription | `wirecall.{contract}.{subscription}` | durable |
//! | one retry queue per distinct delay | `wirecall.{contract}.{subscription}.retry.{ms}ms` | durable, `x-message-ttl` = the delay, dead-lettering back into the subscription's queue |
//! | one dead-letter queue per subscription | `wirecall.{contract}.{subscription}.dead` | durable |
//!
//! An event whose routing key no subscription binds (an event a newer producer added) goes
//! through the alternate exchange into every subscription's dead letters instead of being
//! dropped; it carries no reason header, and reads back as
//! [`DeadLetterReason::UnknownEvent`](crate::events::DeadLetterReason::UnknownEvent).
//!
//! Retried and dead-lettered events go through the default exchange straight to one queue,
//! so a retry reaches only the subscription that failed it, not every subscription.

use lapin::options::{ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{Channel, ExchangeKind};

use super::super::contract::ContractDescriptor;
use super::super::redelivery::RetryPolicy;

/// The exchange of `contract`.
pub fn exchange(contract: &str) -> String {
    format!("wirecall.{contract}")
}

/// Where `contract`'s exchange sends events no queue is bound for.
pub fn unrouted_exchange(contract: &str) -> String {
    format!("wirecall.{contract}.unrouted")
}

/// The queue of `subscription` on `contract`.
pub fn queue(contract: &str, subscription: &str) -> String {
    format!("wirecall.{contract}.{subscription}")
}

/// The retry queue of `subscription` whose messages wait `delay_ms` before going back.
pub fn retry_queue(contract: &str, subscription: &str, delay_ms: u64) -> String {
    format!("wirecall.{contract}.{subscription}.retry.{delay_ms}ms")
}

/// The dead-letter queue of `subscription`.
pub fn dead_letter_queue(contract: &str, subscription: &str) -> String {
    format!("wirecall.{contract}.{subscription}.dead")
}

/// The distinct retry delays of `policy`, in milliseconds, in retry order.
pub fn retry_delays_ms(policy: &RetryPolicy) -> Vec<u64> {
    let mut delays: Vec<u64> = Vec::new();
    for retry in 1..=policy.retry_levels() {
        let ms = u64::try_from(policy.delay_before_retry(retry).as_millis()).unwrap_or(u64::MAX);
        if !delays.contains(&ms) {
            delays.push(ms);
        }
    }
    delays
}

fn durable() -> QueueDeclareOptions {
    QueueDeclareOptions {
        durable: true,
        ..QueueDeclareOptions::default()
    }
}

fn durable_exchange() -> ExchangeDeclareOptions {
    ExchangeDeclareOptions {
        durable: true,
        ..ExchangeDeclareOptions::default()
    }
}

/// Declares the contract's exchange and its alternate exchange (idempotent).
pub(crate) async fn declare_exchange(channel: &Channel, contract: &str) -> lapin::Result<()> {
    channel
        .exchange_declare(
            ShortString::from(unrouted_exchange(contract)),
            ExchangeKind::Fanout,
            durable_exchange(),
            FieldTable::default(),
        )
        .await?;
    let mut arguments = FieldTable::default();
    arguments.insert(
        "alternate-exchange".into(),
        AMQPValue::LongString(unrouted_exchange(contract).into()),
    );
    channel
        .exchange_declare(
            ShortString::from(exchange(contract)),
            ExchangeKind::Direct,
            durable_exchange(),
            arguments,
        )
        .await
}

/// Declares everything a subscription needs (idempotent): the exchange, the queue with one
/// binding per event, the retry queues of `policy` and the dead-letter queue.
pub(crate) async fn declare_subscription(
    channel: &Channel,
    contract: &ContractDescriptor,
    subscription: &str,
    policy: &RetryPolicy,
) -> lapin::Result<()> {
    declare_exchange(channel, contract.name).await?;
    let main = queue(contract.name, subscription);
    channel
        .queue_declare(
            ShortString::from(main.as_str()),
            durable(),
            FieldTable::default(),
        )
        .await?;
    for event in contract.events {
        channel
            .queue_bind(
                ShortString::from(main.as_str()),
                ShortString::from(exchange(contract.name)),
                ShortString::from(*event),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await?;
    }
    for delay_ms in retry_delays_ms(policy) {
        let mut arguments = FieldTable::default();
        arguments.insert(
            "x-message-ttl".into(),
            AMQPValue::LongLongInt(i64::try_from(delay_ms).unwrap_or(i64::MAX)),
        );
        arguments.insert(
            "x-dead-letter-exchange".into(),
            AMQPValue::LongString("".into()),
        );
        arguments.insert(
            "x-dead-letter-routing-key".into(),
            AMQPValue::LongString(main.as_str().into()),
        );
        channel
            .queue_declare(
                ShortString::from(retry_queue(contract.name, subscription, delay_ms)),
                durable(),
                arguments,
            )
            .await?;
    }
    let dead = dead_letter_queue(contract.name, subscription);
    channel
        .queue_declare(
            ShortString::from(dead.as_str()),
            durable(),
            FieldTable::default(),
        )
        .await?;
    channel
        .queue_bind(
            ShortString::from(dead.as_str()),
            ShortString::from(unrouted_exchange(contract.name)),
            ShortString::from(""),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
    Ok(())
}
