//! `bench` of a server-streaming method: each call opens the stream and reads it to its end.
//!
//! An item's latency is its gap: the time since the stream's previous item, or since the
//! stream was opened for its first. Unlike the time from the open to each item, which grows
//! with the item's place in the stream, the gap measures how fast items arrive whatever the
//! stream's length; the time from the open to the end is reported per stream beside it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;

use crate::call::PreparedCall;
use crate::error::CliError;
use crate::output::out;

use super::report;
use super::workers::{self, Load};

/// What one stream measured.
struct StreamSample {
    /// The gap before each item, in order.
    item_gaps: Vec<Duration>,
    /// From the open to the stream's end.
    whole: Duration,
}

/// Opens the streams, reads each to its end, and prints items/s and the percentiles of the
/// items' gaps and of the streams' durations.
pub async fn bench(prepared: Arc<PreparedCall>, load: Load) -> Result<(), CliError> {
    let call = {
        let prepared = Arc::clone(&prepared);
        move || {
            let prepared = Arc::clone(&prepared);
            async move { read_to_end(&prepared).await }
        }
    };
    let run = workers::run(load, call).await?;

    let streams = run.samples.len();
    let mut whole: Vec<Duration> = run.samples.iter().map(|sample| sample.whole).collect();
    let mut item_gaps: Vec<Duration> = run
        .samples
        .iter()
        .flat_map(|sample| sample.item_gaps.iter().copied())
        .collect();
    let items = item_gaps.len();

    out!(
        "{}: {} streams, {} open at once, 1 connection, json codec",
        prepared.target,
        load.calls,
        load.concurrency
    )?;
    report::total(run.elapsed)?;
    report::line(
        "throughput",
        &format!(
            "{}, {}",
            report::rate(streams as u64, run.elapsed, "streams"),
            report::rate(items as u64, run.elapsed, "items")
        ),
    )?;
    report::percentiles("item gap", &mut item_gaps)?;
    report::percentiles("stream", &mut whole)?;
    out!("  ok {streams}  errors {}  items {items}", run.errors.len())?;
    run.outcome()
}

/// Opens the stream and times its items until it ends. A stream that fails counts as a
/// failed call, its items before the failure left out.
async fn read_to_end(prepared: &PreparedCall) -> Result<StreamSample, wirecall::Error> {
    let opened = Instant::now();
    let mut items = prepared.open_stream().await?;
    let mut item_gaps = Vec::new();
    let mut previous = opened;
    while let Some(item) = items.next().await {
        item?;
        let now = Instant::now();
        item_gaps.push(now - previous);
        previous = now;
    }
    Ok(StreamSample {
        item_gaps,
        whole: opened.elapsed(),
    })
}
