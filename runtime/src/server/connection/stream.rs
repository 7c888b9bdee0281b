//! A server stream's life on its connection: the task that takes the handler's items as the
//! client's credit allows, frames and sends them, and ends the stream with exactly one `End`
//! or `Error` frame (wire chapter, "Streams").
//!
//! The task is registered in the connection's in-flight table like a running call, so a
//! `Cancel` (the client dropped its stream) or the connection's end aborts it, and the
//! producer is dropped at once, without having to send first. The call's deadline bounds
//! the whole stream.

use std::future::{poll_fn, Future};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures::future::{AbortHandle, Abortable, Aborted};
use tokio::time::Instant;
use tracing::Instrument;

use super::gauge::InFlightGauge;
use super::in_flight::{CallSlot, InFlight};
use super::reply::{panic_message, HandlerOutcome};
use crate::codec::Codec;
use crate::error::{CallError, ErrorCode};
use crate::method::MethodId;
use crate::server::metrics::{Outcome, RouteMetrics};
use crate::server::request::{Reply, ReplyBody};
use crate::stream::batch::ItemBatch;
use crate::stream::credit::SendCredit;
use crate::stream::outgoing::OutgoingItems;
use crate::stream::upload::UploadQueue;
use crate::transport::frame::{Frame, FrameKind};
use crate::transport::writer::{Delivery, FrameSink};

/// What a stream's task needs from its connection.
pub(super) struct OpenedStream {
    pub(super) request_id: u64,
    pub(super) method: MethodId,
    /// The connection's codec, which the items are encoded in.
    pub(super) codec: Codec,
    pub(super) received: Instant,
    pub(super) deadline: Option<Instant>,
    pub(super) deadline_ms: u32,
    /// The largest frame the client accepts.
    pub(super) send_limit: u32,
    pub(super) sink: FrameSink,
    pub(super) calls: Arc<InFlight>,
    pub(super) slot: CallSlot,
    pub(super) route_metrics: Arc<RouteMetrics>,
    pub(super) in_flight: ::metrics::Gauge,
    pub(super) sent_bytes: ::metrics::Counter,
    /// Items sent on streams, server-wide.
    pub(super) items: ::metrics::Counter,
    /// Streams open, server-wide: this one counts until its task ends.
    pub(super) open: ::metrics::Gauge,
    pub(super) span: Option<tracing::Span>,
    /// The items the client uploads, for a method that takes them.
    pub(super) upload: Option<Arc<UploadQueue>>,
}

/// How a stream ended, for its last frame and its metrics.
enum Ended {
    /// The producer ran out (or sent its application error): `End`.
    Complete,
    /// An `Error` frame with this code and message.
    Failed(ErrorCode, String),
    /// The connection's writer is gone: nothing more can be sent.
    PeerGone,
}

/// Starts the task of the stream call `work` (the server pipeline's future for an `Open`).
pub(super) fn spawn_stream<W>(work: W, opened: OpenedStream)
where
    W: Future<Output = HandlerOutcome> + Send + 'static,
{
    let credit = Arc::new(SendCredit::default());
    let (abort, registration) = AbortHandle::new_pair();
    opened.calls.insert_stream(
        opened.request_id,
        abort,
        Arc::clone(&credit),
        opened.upload.clone(),
    );
    let span = opened.span.clone().filter(|span| !span.is_disabled());
    let task = async move {
        let _gauge = InFlightGauge(opened.in_flight.clone());
        let _open = InFlightGauge(opened.open.clone());
        let run = Abortable::new(produce(work, &credit, &opened), registration);
        let ended = match opened.deadline {
            Some(at) => tokio::time::timeout_at(at, run).await.ok(),
            None => Some(run.await),
        };
        opened.calls.remove(opened.request_id);
        let ended = match ended {
            None => Ended::Failed(
                ErrorCode::DeadlineExceeded,
                format!(
                    "the stream did not end within its deadline of {} ms",
                    opened.deadline_ms
                ),
            ),
            // Cancelled by the client, the connection is gone, or stopped at the end of a
            // shutdown's grace period: nothing to send. In the last case the connection then
            // closes without its goodbye, so the client reads the stream as cut off (it may have
            // run), as it reads a unary call stopped the same way.
            Some(Err(Aborted)) => {
                record(&opened, Outcome::Cancelled);
                return;
            }
            // An upload item that did not decode ended the handler's input: the call failed.
            Some(Ok(Ended::Complete)) => match opened.upload.as_ref().and_then(|u| u.failure()) {
                Some(failure) => Ended::Failed(ErrorCode::BadRequest, failure),
                None => Ended::Complete,
            },
            Some(Ok(ended)) => ended,
        };
        let last = match &ended {
            Ended::Complete => Frame::control(FrameKind::End, opened.request_id).to_bytes(),
            Ended::Failed(code, message) => {
                Frame::error(opened.request_id, opened.method, *code, message).to_bytes()
            }
            Ended::PeerGone => {
                record(&opened, Outcome::Cancelled);
                return;
            }
        };
        record(
            &opened,
            match &ended {
                Ended::Failed(code, _) => Outcome::Failed(*code),
                _ => Outcome::Ok,
            },
        );
        opened.sent_bytes.increment(last.len() as u64);
        // Sent before the slot is given back, so that a closing connection (which waits for
        // every slot) still writes it.
        let _ = opened.sink.send(last, Delivery::Now).await;
        drop(opened.slot);
    };
    match span {
        Some(span) => tokio::spawn(task.instrument(span)),
        None => tokio::spawn(task),
    };
}

fn record(opened: &OpenedStream, outcome: Outcome) {
    if let Some(span) = &opened.span {
        span.record("outcome", outcome.label());
    }
    opened
        .route_metrics
        .record(outcome, Instant::now() - opened.received);
}

/// Runs the handler, then sends its items, one per unit of credit, until it runs out.
async fn produce<W>(work: W, credit: &SendCredit, opened: &OpenedStream) -> Ended
where
    W: Future<Output = HandlerOutcome>,
{
    let mut items = match work.await {
        Err(panic) => return panicked(opened, panic.as_ref()),
        Ok(Err(call_error)) => return failed(call_error),
        Ok(Ok(Reply(ReplyBody::Stream(items)))) => items,
        Ok(Ok(Reply(ReplyBody::Message(_)))) => {
            return Ended::Failed(
                ErrorCode::LayerFailed,
                "a server layer answered a stream call with a unary reply".to_owned(),
            )
        }
    };
    let mut batch = ItemBatch::new(opened.request_id, opened.send_limit);
    loop {
        // The producer is asked first, then the item waits for credit: so the stream's end
        // (or failure) goes out as soon as it is known, without waiting for credit that only
        // items need. The server holds at most this one item beyond the client's credit.
        let first = poll_fn(|cx| produce_into(&mut items, &mut batch, opened, cx)).await;
        let mut ended = match first {
            Produced::Item { last } => last.then_some(Ended::Complete),
            Produced::Exhausted => return Ended::Complete,
            Produced::Ended(ended) => return ended,
        };
        credit.spend().await;
        // The items the producer has ready now, while credit lasts, go out in the same
        // write; the first that is not ready sends the batch rather than waiting.
        if ended.is_none() {
            ended = produce_ready(&mut items, &mut batch, credit, opened);
        }
        if let Some((frames, count)) = batch.take() {
            if send_items(opened, frames, count).await.is_err() {
                return Ended::PeerGone;
            }
        }
        if let Some(ended) = ended {
            return ended;
        }
    }
}

/// Frames the items the producer has ready now into `batch`, while credit lasts and the batch
/// is not full; how the stream ended, if it did.
fn produce_ready(
    items: &mut OutgoingItems,
    batch: &mut ItemBatch,
    credit: &SendCredit,
    opened: &OpenedStream,
) -> Option<Ended> {
    // Polled with a waker that does nothing: an item that is not ready ends the batch, and
    // the next wait for an item polls with the task's own waker again.
    let mut ready_now = Context::from_waker(Waker::noop());
    while !batch.is_full() && credit.is_available() {
        match produce_into(items, batch, opened, &mut ready_now) {
            Poll::Pending => return None,
            Poll::Ready(Produced::Item { last }) => {
                credit.try_spend();
                if last {
                    return Some(Ended::Complete);
                }
            }
            Poll::Ready(Produced::Exhausted) => return Some(Ended::Complete),
            Poll::Ready(Produced::Ended(failure)) => return Some(failure),
        }
    }
    None
}

/// What asking the producer for an item gave.
enum Produced {
    /// An item, now framed in the batch (`last`: the stream's application error).
    Item { last: bool },
    /// The producer ran out.
    Exhausted,
    /// The stream failed: the producer panicked or failed, or the item could not be sent.
    Ended(Ended),
}

/// Polls the producer for one item and frames it at the end of `batch`. Whatever goes wrong
/// (a panic, a codec error, a frame over the client's limit) leaves the batch's earlier items
/// as they were, to be sent before the stream's error.
fn produce_into(
    items: &mut OutgoingItems,
    batch: &mut ItemBatch,
    opened: &OpenedStream,
    cx: &mut Context<'_>,
) -> Poll<Produced> {
    let start = batch.begin();
    let polled = std::panic::catch_unwind(AssertUnwindSafe(|| {
        items.poll_encode(cx, opened.codec, batch.payload())
    }));
    let produced = match polled {
        Ok(Poll::Ready(Some(Ok(last)))) => {
            return Poll::Ready(match batch.finish(start) {
                Ok(()) => Produced::Item { last },
                Err(err) => Produced::Ended(Ended::Failed(
                    ErrorCode::FrameTooLarge,
                    format!("a stream item {err} that the client accepts (its max_frame_len)"),
                )),
            })
        }
        Ok(Poll::Pending) => Poll::Pending,
        Ok(Poll::Ready(None)) => Poll::Ready(Produced::Exhausted),
        Ok(Poll::Ready(Some(Err(codec_error)))) => {
            Poll::Ready(Produced::Ended(failed(CallError::Encode(codec_error))))
        }
        Err(panic) => Poll::Ready(Produced::Ended(panicked(opened, panic.as_ref()))),
    };
    // No item: whatever the producer began writing is cut off again.
    batch.abandon(start);
    produced
}

/// Queues a batch of `count` items: the writer task coalesces a busy stream's batches into
/// few writes.
async fn send_items(opened: &OpenedStream, frames: Bytes, count: u64) -> Result<(), ()> {
    opened.sent_bytes.increment(frames.len() as u64);
    opened
        .sink
        .send_stream_items(frames)
        .await
        .map_err(|_| ())?;
    opened.items.increment(count);
    Ok(())
}

fn failed(call_error: CallError) -> Ended {
    tracing::debug!(%call_error, "stream failed");
    Ended::Failed(call_error.code(), call_error.to_string())
}

fn panicked(opened: &OpenedStream, panic: &(dyn std::any::Any + Send)) -> Ended {
    let message = panic_message(panic);
    tracing::error!(method = %opened.method, %message, "stream handler panicked");
    Ended::Failed(ErrorCode::HandlerPanicked, message)
}
