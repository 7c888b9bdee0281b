//! The events cell: events/s through the event bus, end to end (published, delivered,
//! handled and acknowledged), with a 1 KiB payload.
//!
//! - In-process back-end: one publisher awaiting each publish, one subscription; the time
//!   from the first publish until the handler has seen every event. Against a floor of the
//!   same shape written with tokio alone (a bounded `mpsc` channel and a consumer task), in
//!   the same run, alternating.
//! - With `--broker` (feature `rabbitmq`): the RabbitMQ back-end (publisher confirms,
//!   persistent messages, a durable queue, prefetch, ack after the handler) against a plain
//!   lapin publish/consume loop with the same settings, in the same run, alternating; the
//!   ratio is wirecall / plain lapin. Medians of `repeat` runs.

mod in_process;
#[cfg(feature = "rabbitmq")]
mod plain_lapin;
#[cfg(feature = "rabbitmq")]
mod rabbitmq;
mod tokio_floor;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::Serialize;
use tokio::sync::Notify;

use crate::systems::BenchResult;

/// The payload size of every event.
pub const PAYLOAD_BYTES: usize = 1024;
/// Publishes in flight at once on the broker (each waits for its confirm).
pub const IN_FLIGHT: usize = 256;
/// The consumer's prefetch on the broker.
pub const PREFETCH: u16 = 256;

/// What the cell's events carry.
#[wirecall::events(name = "bench.Events")]
pub trait BenchEvents {
    /// One event: a sequence number and 1 KiB.
    async fn blob(&self, seq: u64, data: bytes::Bytes);
}

/// Counts handled events and wakes the waiter at the target.
pub struct Counter {
    seen: AtomicU64,
    target: u64,
    done: Notify,
}

impl Counter {
    /// A counter that wakes [`wait`](Self::wait) after `target` events.
    pub fn new(target: u64) -> Arc<Self> {
        Arc::new(Self {
            seen: AtomicU64::new(0),
            target,
            done: Notify::new(),
        })
    }

    /// Counts one event.
    pub fn count(&self) {
        if self.seen.fetch_add(1, Ordering::Relaxed) + 1 == self.target {
            self.done.notify_one();
        }
    }

    /// Waits until `target` events were counted.
    pub async fn wait(&self) {
        while self.seen.load(Ordering::Relaxed) < self.target {
            let notified = self.done.notified();
            if self.seen.load(Ordering::Relaxed) >= self.target {
                return;
            }
            notified.await;
        }
    }
}

/// The subscriber of the cell.
pub struct CountingSubscriber(pub Arc<Counter>);

impl BenchEvents for CountingSubscriber {
    async fn blob(&self, _seq: u64, _data: bytes::Bytes) {
        self.0.count();
    }
}

/// The 1 KiB every event carries.
pub fn payload() -> bytes::Bytes {
    bytes::Bytes::from(
        (0..PAYLOAD_BYTES)
            .map(|i| (i % 251) as u8)
            .collect::<Vec<u8>>(),
    )
}

/// What one run measured.
#[derive(Debug, Default, Serialize)]
pub struct EventsResult {
    /// Events per in-process run.
    pub in_process_events: u64,
    /// In-process back-end: events/s, median.
    pub in_process_events_per_s: f64,
    /// The same shape on a tokio `mpsc` channel alone: events/s, median.
    pub tokio_floor_events_per_s: f64,
    /// In-process back-end / tokio floor.
    pub in_process_ratio: f64,
    /// Events per broker run (0 without `--broker`).
    pub broker_events: u64,
    /// wirecall over RabbitMQ: events/s, median.
    pub wirecall_rabbitmq_events_per_s: f64,
    /// Plain lapin, same settings: events/s, median.
    pub plain_lapin_events_per_s: f64,
    /// wirecall / plain lapin.
    pub ratio: f64,
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Rates as a comma-separated list, for the runs' spread.
fn listed(rates: &[f64]) -> String {
    rates
        .iter()
        .map(|rate| format!("{rate:.0}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs the cell and prints one JSON line and a summary.
pub async fn run(
    in_process_events: u64,
    broker_events: u64,
    repeat: u32,
    broker: Option<String>,
) -> BenchResult<()> {
    let mut result = EventsResult {
        in_process_events,
        ..EventsResult::default()
    };
    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    for _ in 0..repeat {
        floor.push(tokio_floor::run(in_process_events).await?);
        ours.push(in_process::run(in_process_events).await?);
    }
    result.in_process_ratio = median(ours.clone()) / median(floor.clone());
    println!(
        "in-process runs, events/s: tokio floor {}; wirecall {}",
        listed(&floor),
        listed(&ours)
    );
    result.tokio_floor_events_per_s = median(floor);
    result.in_process_events_per_s = median(ours);
    if let Some(url) = broker {
        run_broker(&mut result, &url, broker_events, repeat).await?;
    }
    println!("{}", serde_json::to_string(&result)?);
    println!(
        "in-process: wirecall {:.0} events/s, tokio mpsc floor {:.0} events/s, ratio {:.2} \
         ({} events of {PAYLOAD_BYTES} B, medians of {repeat})",
        result.in_process_events_per_s,
        result.tokio_floor_events_per_s,
        result.in_process_ratio,
        result.in_process_events
    );
    if result.broker_events > 0 {
        println!(
            "rabbitmq, confirms end to end, {PAYLOAD_BYTES} B, {IN_FLIGHT} publishes in flight, \
             prefetch {PREFETCH}: wirecall {:.0} events/s, plain lapin {:.0} events/s, ratio {:.2}",
            result.wirecall_rabbitmq_events_per_s, result.plain_lapin_events_per_s, result.ratio
        );
    }
    Ok(())
}

#[cfg(feature = "rabbitmq")]
async fn run_broker(
    result: &mut EventsResult,
    url: &str,
    events: u64,
    repeat: u32,
) -> BenchResult<()> {
    let (mut ours, mut plain) = (Vec::new(), Vec::new());
    for _ in 0..repeat {
        ours.push(rabbitmq::run(url, events).await?);
        plain.push(plain_lapin::run(url, events).await?);
    }
    result.broker_events = events;
    result.wirecall_rabbitmq_events_per_s = median(ours);
    result.plain_lapin_events_per_s = median(plain);
    result.ratio = result.wirecall_rabbitmq_events_per_s / result.plain_lapin_events_per_s;
    Ok(())
}

#[cfg(not(feature = "rabbitmq"))]
async fn run_broker(_: &mut EventsResult, url: &str, _: u64, _: u32) -> BenchResult<()> {
    Err(format!("--broker {url}: build with `--features rabbitmq`").into())
}
