//! The baseline: lapin alone, with the settings wirecall uses: a durable direct exchange and
//! queue, persistent messages, publisher confirms with `IN_FLIGHT` publishes at a time, a
//! consumer channel with prefetch `PREFETCH` acknowledging each delivery after counting it.

use std::time::Instant;

use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Confirmation, Connection, ConnectionProperties, ExchangeKind};

use super::{payload, Counter, IN_FLIGHT, PREFETCH};
use crate::systems::BenchResult;

const EXCHANGE: &str = "bench.plain";
const QUEUE: &str = "bench.plain.queue";
const ROUTING_KEY: &str = "blob";

/// Events/s for `events` messages, published and consumed end to end.
pub async fn run(url: &str, events: u64) -> BenchResult<f64> {
    let connection = Connection::connect(url, ConnectionProperties::default()).await?;
    let publisher = connection.create_channel().await?;
    publisher
        .exchange_declare(
            EXCHANGE.into(),
            ExchangeKind::Direct,
            ExchangeDeclareOptions {
                durable: true,
                ..ExchangeDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await?;
    publisher
        .queue_delete(QUEUE.into(), QueueDeleteOptions::default())
        .await?;
    publisher
        .queue_declare(
            QUEUE.into(),
            QueueDeclareOptions {
                durable: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await?;
    publisher
        .queue_bind(
            QUEUE.into(),
            EXCHANGE.into(),
            ROUTING_KEY.into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
    publisher
        .confirm_select(ConfirmSelectOptions::default())
        .await?;

    let consumer_channel = connection.create_channel().await?;
    consumer_channel
        .basic_qos(PREFETCH, BasicQosOptions::default())
        .await?;
    let consumer = consumer_channel
        .basic_consume(
            QUEUE.into(),
            "".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let counter = Counter::new(events);
    let consuming = {
        let counter = counter.clone();
        tokio::spawn(async move {
            consumer
                .for_each_concurrent(usize::from(PREFETCH), |delivery| {
                    let counter = counter.clone();
                    async move {
                        if let Ok(delivery) = delivery {
                            counter.count();
                            let _ = delivery.ack(BasicAckOptions::default()).await;
                        }
                    }
                })
                .await;
        })
    };

    let data = payload();
    let started = Instant::now();
    let mut published = futures::stream::iter(0..events)
        .map(|_| {
            let (publisher, data) = (&publisher, &data);
            async move {
                let confirm = publisher
                    .basic_publish(
                        EXCHANGE.into(),
                        ROUTING_KEY.into(),
                        BasicPublishOptions::default(),
                        data,
                        BasicProperties::default().with_delivery_mode(2),
                    )
                    .await?;
                match confirm.await? {
                    Confirmation::Ack(_) => Ok(()),
                    other => Err(format!("publish not confirmed: {other:?}").into()),
                }
            }
        })
        .buffer_unordered(IN_FLIGHT);
    while let Some(outcome) = published.next().await {
        let outcome: BenchResult<()> = outcome;
        outcome?;
    }
    counter.wait().await;
    let rate = events as f64 / started.elapsed().as_secs_f64();
    consuming.abort();
    publisher
        .queue_delete(QUEUE.into(), QueueDeleteOptions::default())
        .await?;
    connection.close(200, "done".into()).await?;
    Ok(rate)
}
