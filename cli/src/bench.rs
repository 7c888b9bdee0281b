//! `bench`: many calls of one method, `concurrency` at a time on one connection; prints
//! throughput and latency percentiles.

use crate::output::out;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::call::PreparedCall;
use crate::connect::ConnectOptions;
use crate::error::CliError;

pub async fn bench(
    options: &ConnectOptions,
    addr: &str,
    target: &str,
    args: Option<&str>,
    calls: u64,
    concurrency: u64,
) -> Result<(), CliError> {
    if calls == 0 || concurrency == 0 {
        return Err(CliError::Input(
            "--calls and --concurrency must be at least 1".to_owned(),
        ));
    }
    let prepared = Arc::new(PreparedCall::new(options, addr, target, args, None).await?);
    if prepared.method.server_stream {
        return Err(CliError::Input(format!(
            "{target} is a server stream and `bench` measures unary calls; read the stream \
             with `wirecall call`"
        )));
    }
    if prepared.method.upload.is_some() {
        return Err(CliError::Input(format!(
            "{target} takes an upload and `bench` measures unary calls; send the upload with \
             `wirecall call`"
        )));
    }
    // One call first, so a call that cannot succeed fails once, not `calls` times.
    prepared.send().await?;

    let remaining = Arc::new(AtomicU64::new(calls));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency.min(calls) {
        let prepared = Arc::clone(&prepared);
        let remaining = Arc::clone(&remaining);
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut errors = Vec::new();
            while remaining
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                    left.checked_sub(1)
                })
                .is_ok()
            {
                let sent = Instant::now();
                match prepared.send().await {
                    Ok(_) => latencies.push(sent.elapsed()),
                    Err(error) => errors.push(error),
                }
            }
            (latencies, errors)
        }));
    }
    let mut latencies = Vec::with_capacity(calls as usize);
    let mut errors = Vec::new();
    for worker in workers {
        let (worker_latencies, worker_errors) = worker
            .await
            .map_err(|error| CliError::Input(format!("a benchmark task failed: {error}")))?;
        latencies.extend(worker_latencies);
        errors.extend(worker_errors);
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();

    out!(
        "{target}: {calls} calls, {concurrency} in flight, 1 connection, json codec{}",
        if prepared.method.oneway {
            " (one-way: latency is the time to queue)"
        } else {
            ""
        }
    )?;
    out!("  total       {:.3} s", elapsed.as_secs_f64())?;
    out!(
        "  throughput  {:.0} calls/s",
        latencies.len() as f64 / elapsed.as_secs_f64()
    )?;
    if !latencies.is_empty() {
        let at = |q: f64| {
            let index = ((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len());
            millis(latencies[index - 1])
        };
        out!(
            "  latency     min {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
            millis(latencies[0]),
            at(0.50),
            at(0.90),
            at(0.99),
            at(0.999),
            millis(latencies[latencies.len() - 1])
        )?;
    }
    out!("  ok {}  errors {}", latencies.len(), errors.len())?;
    match errors.into_iter().next() {
        Some(first) => Err(CliError::Call(first)),
        None => Ok(()),
    }
}

fn millis(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1000.0)
}
