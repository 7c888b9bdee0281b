//! A stream call's task on its connection: supervised like every call that runs as a task
//! ([`supervise`]: a `Cancel` or the connection's end drops the producer at once, without
//! having to send first; the call's deadline bounds the whole stream), its items produced by
//! `server/stream/produce.rs`, and its end sent as exactly one `End` or `Error` frame (wire
//! chapter, "Streams").

use std::future::Future;
use std::sync::Arc;

use futures::future::AbortHandle;
use tokio::time::Instant;
use tracing::Instrument;

use super::calls::{CallSlot, Calls};
use super::gauge::InFlightGauge;
use super::reply::HandlerOutcome;
use super::supervise::{supervise, CallRecord, Supervised};
use crate::error::ErrorCode;
use crate::server::metrics::Outcome;
use crate::server::stream::produce::{produce, Ended, StreamOut};
use crate::server::stream::upload_queue::UploadQueue;
use crate::stream::credit::SendCredit;
use crate::transport::frame::{Frame, FrameKind};
use crate::transport::writer::Delivery;

/// What a stream's task needs from its connection.
pub(super) struct OpenedStream {
    pub(super) out: StreamOut,
    pub(super) record: CallRecord,
    pub(super) deadline: Option<Instant>,
    pub(super) deadline_ms: u32,
    pub(super) calls: Arc<Calls>,
    pub(super) slot: CallSlot,
    pub(super) in_flight: ::metrics::Gauge,
    /// Streams open, server-wide: this one counts until its task ends.
    pub(super) open: ::metrics::Gauge,
    /// The items the client uploads, for a method that takes them.
    pub(super) upload: Option<Arc<UploadQueue>>,
}

/// Starts the task of the stream call `work` (the server pipeline's future for an `Open`).
pub(super) fn spawn_stream<W>(work: W, opened: OpenedStream)
where
    W: Future<Output = HandlerOutcome> + Send + 'static,
{
    let credit = Arc::new(SendCredit::default());
    let (abort, registration) = AbortHandle::new_pair();
    let request_id = opened.out.request_id;
    opened.calls.insert_stream(
        request_id,
        abort,
        Arc::clone(&credit),
        opened.upload.clone(),
    );
    let span = opened
        .record
        .span
        .clone()
        .filter(|span| !span.is_disabled());
    let task = async move {
        let _gauge = InFlightGauge(opened.in_flight.clone());
        let _open = InFlightGauge(opened.open.clone());
        let run = produce(work, &credit, &opened.out);
        let ended = match supervise(
            run,
            registration,
            opened.deadline,
            &opened.calls,
            request_id,
        )
        .await
        {
            Supervised::Late => (
                Ended::Failed(
                    ErrorCode::DeadlineExceeded,
                    format!(
                        "the stream did not end within its deadline of {} ms",
                        opened.deadline_ms
                    ),
                ),
                None,
            ),
            // Cancelled by the client, the connection is gone, or stopped at the end of a
            // shutdown's grace period: nothing to send. In the last case the connection then
            // closes without its goodbye, so the client reads the stream as cut off (it may
            // have run), as it reads a unary call stopped the same way.
            Supervised::Aborted => {
                opened.record.ended(Outcome::Cancelled, Instant::now());
                return;
            }
            // An upload item that did not decode ended the handler's input: the call failed.
            Supervised::Finished((Ended::Complete, trailers)) => {
                match opened.upload.as_ref().and_then(|u| u.failure()) {
                    Some(failure) => (Ended::Failed(ErrorCode::BadRequest, failure), trailers),
                    None => (Ended::Complete, trailers),
                }
            }
            Supervised::Finished(ended) => ended,
        };
        let (ended, trailers) = ended;
        let trailers = trailers.unwrap_or_default();
        let (last, outcome) = match &ended {
            Ended::Complete => (
                Frame::control(FrameKind::End, request_id)
                    .with_metadata(&trailers)
                    .to_bytes(),
                Outcome::Ok,
            ),
            Ended::Failed(code, message) => (
                Frame::error(request_id, opened.out.method, *code, message)
                    .with_metadata(&trailers)
                    .to_bytes(),
                Outcome::Failed(*code),
            ),
            Ended::PeerGone => {
                opened.record.ended(Outcome::Cancelled, Instant::now());
                return;
            }
        };
        opened.record.ended(outcome, Instant::now());
        opened.out.sent_bytes.increment(last.len() as u64);
        // Sent before the slot is given back, so that a closing connection (which waits for
        // every slot) still writes it.
        let _ = opened.out.sink.send(last, Delivery::Now).await;
        drop(opened.slot);
    };
    // Instrumented either way (a disabled span costs a branch per poll): one task type, so
    // tokio's task code is compiled once for it.
    tokio::spawn(task.instrument(span.unwrap_or_else(tracing::Span::none)));
}
