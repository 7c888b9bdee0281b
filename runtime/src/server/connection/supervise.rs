//! What every call that runs as a task of its own goes through, whatever its shape (a unary
//! call still running after its first poll, any stream): registered in the connection's table
//! so that a `Cancel` or the connection's end stops it, bounded by its deadline, counted in
//! the in-flight gauge, taken off the table when it ends; and how every call's end is
//! recorded, on its span and in its method's metrics.

use std::future::Future;
use std::sync::Arc;

use futures::future::{AbortRegistration, Abortable, Aborted};
use tokio::time::Instant;

use super::calls::Calls;
use crate::server::metrics::{Outcome, RouteMetrics};

/// How a supervised call's work ended.
pub(super) enum Supervised<T> {
    /// It finished, with this output.
    Finished(T),
    /// Its deadline passed first: the work was dropped.
    Late,
    /// It was stopped: the caller cancelled it, the connection ended, or a shutdown's grace
    /// period did.
    Aborted,
}

/// A call's place in the records: its span, its method's metrics, and when it was read.
pub(super) struct CallRecord {
    pub(super) span: Option<tracing::Span>,
    pub(super) metrics: Arc<RouteMetrics>,
    pub(super) received: Instant,
}

impl CallRecord {
    /// Records how the call ended, `now`: on its span, if it has one, and in its method's
    /// metrics (with its duration since it was read).
    pub(super) fn ended(&self, outcome: Outcome, now: Instant) {
        if let Some(span) = &self.span {
            span.record("outcome", outcome.label());
        }
        self.metrics.record(outcome, now - self.received);
    }
}

/// Runs `work` until it finishes, its `deadline` passes, or it is stopped through
/// `registration`; then takes call `request_id` off `calls`.
pub(super) async fn supervise<W: Future>(
    work: W,
    registration: AbortRegistration,
    deadline: Option<Instant>,
    calls: &Calls,
    request_id: u64,
) -> Supervised<W::Output> {
    let work = Abortable::new(work, registration);
    let outcome = match deadline {
        Some(at) => tokio::time::timeout_at(at, work).await.ok(),
        None => Some(work.await),
    };
    calls.remove(request_id);
    match outcome {
        None => Supervised::Late,
        Some(Err(Aborted)) => Supervised::Aborted,
        Some(Ok(output)) => Supervised::Finished(output),
    }
}
