//! Running a benchmark's calls: `calls` of them, `concurrency` at a time, each a task on the
//! one channel, whatever the call's shape.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::CliError;

/// How many calls a benchmark makes, and how many of them at once.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    /// Calls in total: unary calls, streams opened, or uploads sent.
    pub calls: u64,
    /// Calls in flight at once.
    pub concurrency: u64,
}

/// What the calls of a run measured.
pub struct Run<T> {
    /// One sample per call that succeeded.
    pub samples: Vec<T>,
    /// One error per call that failed.
    pub errors: Vec<wirecall::Error>,
    /// From the first call of the run to the end of the last.
    pub elapsed: Duration,
}

impl<T> Run<T> {
    /// The run's first error as the command's, once its figures are printed.
    pub fn outcome(self) -> Result<(), CliError> {
        match self.errors.into_iter().next() {
            Some(first) => Err(CliError::Call(first)),
            None => Ok(()),
        }
    }
}

/// Makes one call first, so that a call that cannot succeed fails once rather than
/// `load.calls` times (and its figures are not taken); then runs `load.calls` calls of
/// `call`, `load.concurrency` at a time.
pub async fn run<T, C, F>(load: Load, call: C) -> Result<Run<T>, CliError>
where
    C: Fn() -> F + Clone + Send + 'static,
    F: Future<Output = Result<T, wirecall::Error>> + Send,
    T: Send + 'static,
{
    call().await?;

    let remaining = Arc::new(AtomicU64::new(load.calls));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..load.concurrency.min(load.calls) {
        let call = call.clone();
        let remaining = Arc::clone(&remaining);
        workers.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut errors = Vec::new();
            while remaining
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                    left.checked_sub(1)
                })
                .is_ok()
            {
                match call().await {
                    Ok(sample) => samples.push(sample),
                    Err(error) => errors.push(error),
                }
            }
            (samples, errors)
        }));
    }
    let mut samples = Vec::new();
    let mut errors = Vec::new();
    for worker in workers {
        let (worker_samples, worker_errors) = worker
            .await
            .map_err(|error| CliError::Input(format!("a benchmark task failed: {error}")))?;
        samples.extend(worker_samples);
        errors.extend(worker_errors);
    }
    Ok(Run {
        samples,
        errors,
        elapsed: started.elapsed(),
    })
}
