//! `bench` of a unary (or one-way) method: each call's latency, from sending the arguments to
//! the reply (to the frame being queued, for a one-way method).

use std::sync::Arc;
use std::time::Instant;

use crate::call::PreparedCall;
use crate::error::CliError;
use crate::output::out;

use super::report;
use super::workers::{self, Load};

/// Runs the calls and prints throughput and latency percentiles.
pub async fn bench(prepared: Arc<PreparedCall>, load: Load) -> Result<(), CliError> {
    let call = {
        let prepared = Arc::clone(&prepared);
        move || {
            let prepared = Arc::clone(&prepared);
            async move {
                let sent = Instant::now();
                prepared.send().await.map(|_| sent.elapsed())
            }
        }
    };
    let mut run = workers::run(load, call).await?;

    out!(
        "{}: {} calls, {} in flight, 1 connection, json codec{}",
        prepared.target,
        load.calls,
        load.concurrency,
        if prepared.method.oneway {
            " (one-way: latency is the time to queue)"
        } else {
            ""
        }
    )?;
    report::total(run.elapsed)?;
    report::line(
        "throughput",
        &report::rate(run.samples.len() as u64, run.elapsed, "calls"),
    )?;
    report::percentiles("latency", &mut run.samples)?;
    out!("  ok {}  errors {}", run.samples.len(), run.errors.len())?;
    run.outcome()
}
