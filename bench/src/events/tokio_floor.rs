//! The in-process cell's floor: the same shape written with tokio alone. One bounded `mpsc`
//! channel of the bus's queue capacity, one consumer task counting each event, the publisher
//! awaiting each send; the event is the typed value itself, neither encoded nor wrapped.
//!
//! `mpsc`, not `broadcast`: a broadcast receiver that falls behind loses events
//! (`RecvError::Lagged`), where the bus delivers every event and makes a publish wait for room.

use std::time::Instant;

use tokio::sync::mpsc;
use wirecall::events::IN_PROCESS_QUEUE_CAPACITY;

use super::{payload, Counter};
use crate::systems::BenchResult;

/// Events/s for `events` events.
pub async fn run(events: u64) -> BenchResult<f64> {
    let (sender, mut receiver) = mpsc::channel::<(u64, bytes::Bytes)>(IN_PROCESS_QUEUE_CAPACITY);
    let counter = Counter::new(events);
    let consumer = tokio::spawn({
        let counter = counter.clone();
        async move {
            while let Some((_seq, _data)) = receiver.recv().await {
                counter.count();
            }
        }
    });
    let data = payload();
    let started = Instant::now();
    for seq in 0..events {
        sender
            .send((seq, data.clone()))
            .await
            .map_err(|_| "the floor's consumer ended early")?;
    }
    counter.wait().await;
    let rate = events as f64 / started.elapsed().as_secs_f64();
    drop(sender);
    consumer.await?;
    Ok(rate)
}
