//! A stream's items on their way out of the server: the handler runs, then its items are taken
//! as the client's credit allows, framed (several to a batch when the producer has them ready)
//! and queued, until the producer runs out or fails. How the stream then ends, and the task it
//! runs in, are the connection's (`connection/stream_task.rs`).

use std::future::{poll_fn, Future};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;

use super::batch::ItemBatch;
use crate::codec::encoding::Encoding;
use crate::compression::FrameCompressor;
use crate::context::CallContext;
use crate::error::{CallError, ErrorCode};
use crate::metadata::Metadata;
use crate::method::MethodId;
use crate::server::connection::reply::{panic_message, HandlerOutcome};
use crate::server::request::{Reply, ReplyBody};
use crate::stream::credit::SendCredit;
use crate::stream::outgoing::OutgoingItems;
use crate::transport::frame::{Frame, FrameKind};
use crate::transport::writer::FrameSink;

/// What a stream's producer needs from its connection.
pub(crate) struct StreamOut {
    pub(crate) request_id: u64,
    pub(crate) method: MethodId,
    /// The connection's codec and version, which the items are encoded in.
    pub(crate) encoding: Encoding,
    /// The largest frame the client accepts.
    pub(crate) send_limit: u32,
    /// Compresses the items when the connection negotiated compression.
    pub(crate) compressor: Option<Arc<FrameCompressor>>,
    pub(crate) sink: FrameSink,
    pub(crate) sent_bytes: ::metrics::Counter,
    /// Items sent on streams, server-wide.
    pub(crate) items: ::metrics::Counter,
}

/// How a stream's producer ended, for its last frame and its metrics.
pub(crate) enum Ended {
    /// The producer ran out (or sent its application error): `End`.
    Complete,
    /// An `Error` frame with this code and message.
    Failed(ErrorCode, String),
    /// The connection's writer is gone: nothing more can be sent.
    PeerGone,
}

/// Runs the handler, then sends its reply metadata (if it set any) and its items, one per
/// unit of credit, until it runs out. Returns how it ended, with the trailers to send.
pub(crate) async fn produce<W>(
    work: W,
    credit: &SendCredit,
    opened: &StreamOut,
) -> (Ended, Option<Metadata>)
where
    W: Future<Output = HandlerOutcome>,
{
    // The reply holds the stream's place under `max_in_flight` until the stream ends.
    let (mut items, _admission) = match work.await {
        Err(panic) => return (panicked(opened, panic.as_ref()), None),
        Ok(Err(call_error)) => return (failed(call_error), None),
        Ok(Ok(Reply {
            body: ReplyBody::Stream(items),
            admission,
        })) => (items, admission),
        Ok(Ok(Reply {
            body: ReplyBody::Message(_),
            ..
        })) => {
            let message = "a server layer answered a stream call with a unary reply".to_owned();
            return (Ended::Failed(ErrorCode::LayerFailed, message), None);
        }
    };
    // Reply metadata set by the handler goes out at once, before any item is ready.
    let mut head_due = true;
    if send_head(head_of(&items), opened).await.is_err() {
        return (Ended::PeerGone, None);
    }
    let ended = send_items_of(&mut items, credit, opened, &mut head_due).await;
    // A stream that ended before its first item: metadata set meanwhile still goes first.
    if head_due
        && !matches!(ended, Ended::PeerGone)
        && send_head(head_of(&items), opened).await.is_err()
    {
        return (Ended::PeerGone, None);
    }
    let trailers = items.call().and_then(CallContext::take_trailers);
    (ended, trailers)
}

/// Sends the stream's reply metadata in a Head frame, if there is any to send (protocol
/// version 4; see `CallContext::take_stream_head`).
async fn send_head(head: Option<Metadata>, opened: &StreamOut) -> Result<(), ()> {
    let Some(head) = head else {
        return Ok(());
    };
    let frame = Frame::control(FrameKind::Head, opened.request_id).with_metadata(&head);
    let frame = frame.to_bytes();
    opened.sent_bytes.increment(frame.len() as u64);
    opened.sink.send_stream_items(frame).await.map_err(|_| ())
}

/// The stream's reply metadata, taken, if there is any to send.
fn head_of(items: &OutgoingItems) -> Option<Metadata> {
    items.call().and_then(CallContext::take_stream_head)
}

/// Sends the items, one per unit of credit, until the producer runs out or fails; reply
/// metadata the producer sets before its first item goes out right before that item.
async fn send_items_of(
    items: &mut OutgoingItems,
    credit: &SendCredit,
    opened: &StreamOut,
    head_due: &mut bool,
) -> Ended {
    let mut batch = ItemBatch::new(
        opened.request_id,
        opened.send_limit,
        opened.compressor.clone(),
    );
    loop {
        // The producer is asked first, then the item waits for credit: so the stream's end
        // (or failure) goes out as soon as it is known, without waiting for credit that only
        // items need. The server holds at most this one item beyond the client's credit.
        // Reply metadata the producer set before it waits goes out then, not with a late
        // first item.
        let first = poll_fn(|cx| match produce_into(items, &mut batch, opened, cx) {
            Poll::Pending if *head_due => match head_of(items) {
                Some(head) => Poll::Ready(Err(head)),
                None => Poll::Pending,
            },
            produced => produced.map(Ok),
        })
        .await;
        let first = match first {
            Ok(produced) => produced,
            Err(head) => {
                *head_due = false;
                if send_head(Some(head), opened).await.is_err() {
                    return Ended::PeerGone;
                }
                continue;
            }
        };
        let mut ended = match first {
            Produced::Item { last } => last.then_some(Ended::Complete),
            Produced::Exhausted => return Ended::Complete,
            Produced::Ended(ended) => return ended,
        };
        credit.spend().await;
        // The items the producer has ready now, while credit lasts, go out in the same
        // write; the first that is not ready sends the batch rather than waiting.
        if ended.is_none() {
            ended = produce_ready(items, &mut batch, credit, opened);
        }
        if std::mem::take(head_due) && send_head(head_of(items), opened).await.is_err() {
            return Ended::PeerGone;
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
    opened: &StreamOut,
) -> Option<Ended> {
    // Polled with a waker that does nothing: an item that is not ready ends the batch, and
    // the next wait for an item polls with the task's own waker again.
    let mut ready_now = Context::from_waker(Waker::noop());
    items.in_call(|items| {
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
    })
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
    opened: &StreamOut,
    cx: &mut Context<'_>,
) -> Poll<Produced> {
    let start = batch.begin();
    let polled = std::panic::catch_unwind(AssertUnwindSafe(|| {
        items.poll_encode(cx, opened.encoding, batch.payload())
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

/// Queues a batch of `count` items: the connection's writer coalesces a busy stream's batches into
/// few writes.
async fn send_items(opened: &StreamOut, frames: Bytes, count: u64) -> Result<(), ()> {
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

fn panicked(opened: &StreamOut, panic: &(dyn std::any::Any + Send)) -> Ended {
    let message = panic_message(panic);
    tracing::error!(method = %opened.method, %message, "stream handler panicked");
    Ended::Failed(ErrorCode::HandlerPanicked, message)
}
