//! The in-process back-end: one publisher awaiting each publish, one subscription.

use std::time::Instant;

use wirecall::events::EventBus;

use super::{payload, BenchEventsPublisher, BenchEventsSubscriber, Counter, CountingSubscriber};
use crate::systems::BenchResult;

/// Events/s for `events` events.
pub async fn run(events: u64) -> BenchResult<f64> {
    let bus = EventBus::in_process();
    let counter = Counter::new(events);
    let _subscription = bus
        .subscribe(
            "bench",
            BenchEventsSubscriber::new(CountingSubscriber(counter.clone())),
        )
        .await?;
    let publisher = BenchEventsPublisher::new(&bus);
    let data = payload();
    let started = Instant::now();
    for seq in 0..events {
        publisher.blob(seq, data.clone()).await?;
    }
    counter.wait().await;
    Ok(events as f64 / started.elapsed().as_secs_f64())
}
