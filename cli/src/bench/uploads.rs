//! `bench` of a method that takes an upload (client or bidirectional streaming): the items
//! are read once, as `wirecall call` reads an upload (JSON lines from standard input or
//! `--upload FILE`), and every call uploads all of them and reads the answer to its end.
//! A call's latency runs from the open to the answer's end: the whole upload, the server's
//! work on it, and the reply (or a bidirectional method's items).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use serde_json::Value;

use crate::call::PreparedCall;
use crate::error::CliError;
use crate::output::out;
use crate::upload::{item_message, line_error};
use crate::upload_lines::{json_lines, UploadSource};

use super::report;
use super::workers::{self, Load};

/// What one upload measured.
struct UploadSample {
    /// From the open to the answer's end.
    latency: Duration,
    /// Items the upload sent: all of them, unless the server answered before the end.
    sent: u64,
    /// Items of the answer: one for a client-streaming method.
    received: u64,
}

/// Reads the items, uploads them `load.calls` times and prints items/s and the calls'
/// latency percentiles.
pub async fn bench(
    prepared: Arc<PreparedCall>,
    source: &UploadSource,
    load: Load,
) -> Result<(), CliError> {
    let items: Arc<[Value]> = read_items(&prepared, source).await?.into();
    let call = {
        let prepared = Arc::clone(&prepared);
        let items = Arc::clone(&items);
        move || {
            let prepared = Arc::clone(&prepared);
            let items = Arc::clone(&items);
            async move { upload_once(&prepared, items).await }
        }
    };
    let run = workers::run(load, call).await?;

    let uploads = run.samples.len();
    let sent: u64 = run.samples.iter().map(|sample| sample.sent).sum();
    let received: u64 = run.samples.iter().map(|sample| sample.received).sum();
    let mut latencies: Vec<Duration> = run.samples.iter().map(|sample| sample.latency).collect();

    out!(
        "{}: {} uploads of {} items, {} in flight, 1 connection, json codec",
        prepared.target,
        load.calls,
        items.len(),
        load.concurrency
    )?;
    report::total(run.elapsed)?;
    report::line(
        "throughput",
        &format!(
            "{}, {} sent",
            report::rate(uploads as u64, run.elapsed, "uploads"),
            report::rate(sent, run.elapsed, "items")
        ),
    )?;
    report::percentiles("latency", &mut latencies)?;
    out!(
        "  ok {uploads}  errors {}  items sent {sent}  items received {received}",
        run.errors.len()
    )?;
    run.outcome()
}

/// Every item of the upload, as item messages, before the first call: a line that is not
/// JSON fails the command as it fails `wirecall call`, naming the line.
async fn read_items(
    prepared: &PreparedCall,
    source: &UploadSource,
) -> Result<Vec<Value>, CliError> {
    let mut lines = std::pin::pin!(json_lines(source.open().await?));
    let mut items = Vec::new();
    while let Some(line) = lines.next().await {
        match line {
            Ok(value) => items.push(item_message(value)),
            Err(error) => return Err(line_error(prepared, source, error)),
        }
    }
    Ok(items)
}

/// One call: uploads `items` and reads the answer to its end.
async fn upload_once(
    prepared: &PreparedCall,
    items: Arc<[Value]>,
) -> Result<UploadSample, wirecall::Error> {
    let started = Instant::now();
    // Counted as the runtime takes them, so that an upload the server cut short by answering
    // early counts only what it sent.
    let sent = Arc::new(AtomicU64::new(0));
    let upload = {
        let sent = Arc::clone(&sent);
        futures::stream::iter(0..items.len()).map(move |index| {
            sent.fetch_add(1, Ordering::Relaxed);
            items[index].clone()
        })
    };
    let mut answer = prepared.open_upload(upload).await?;
    let mut received = 0;
    while let Some(item) = answer.next().await {
        item?;
        received += 1;
    }
    Ok(UploadSample {
        latency: started.elapsed(),
        sent: sent.load(Ordering::Relaxed),
        received,
    })
}
