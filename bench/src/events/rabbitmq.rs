//! wirecall's RabbitMQ back-end: `IN_FLIGHT` publishes at a time, each resolving on its
//! confirm; one consumer with prefetch `PREFETCH` acknowledging after the handler.

use std::time::Instant;

use futures::StreamExt;
use wirecall::events::{EventBus, SubscriptionConfig};

use super::{
    payload, BenchEventsPublisher, BenchEventsSubscriber, Counter, CountingSubscriber, IN_FLIGHT,
    PREFETCH,
};
use crate::systems::BenchResult;

/// Events/s for `events` events, published and consumed end to end.
pub async fn run(url: &str, events: u64) -> BenchResult<f64> {
    let bus = EventBus::rabbitmq(url).await?;
    let contract = BenchEventsPublisher::CONTRACT;
    let name = "bench";
    // A clean queue each run.
    bus.delete_subscription(contract, name).await?;
    let counter = Counter::new(events);
    let subscription = bus
        .subscribe_with(
            name,
            BenchEventsSubscriber::new(CountingSubscriber(counter.clone())),
            SubscriptionConfig::default().prefetch(PREFETCH),
        )
        .await?;
    let publisher = BenchEventsPublisher::new(&bus);
    let data = payload();
    let started = Instant::now();
    let mut published = futures::stream::iter(0..events)
        .map(|seq| {
            let (publisher, data) = (publisher.clone(), data.clone());
            async move { publisher.blob(seq, data).await }
        })
        .buffer_unordered(IN_FLIGHT);
    while let Some(outcome) = published.next().await {
        outcome?;
    }
    counter.wait().await;
    let rate = events as f64 / started.elapsed().as_secs_f64();
    subscription.close().await;
    bus.delete_subscription(contract, name).await?;
    bus.close().await;
    Ok(rate)
}
