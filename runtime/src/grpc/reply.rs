//! What goes back to a gRPC caller: the response headers (with the reply's metadata), its
//! messages as HTTP/2 flow control lets them go, and the status in the trailers; or, for a
//! call that fails before any message, a trailers-only response.

use std::future::poll_fn;
use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use h2::server::SendResponse;
use h2::SendStream;
use http::{HeaderMap, HeaderValue, Response};

use super::headers::write_metadata;
use super::messages::{set_prefix, PREFIX_LEN};
use super::status::{Code, Status};
use crate::codec::Codec;
use crate::error::ErrorCode;
use crate::metadata::Metadata;
use crate::server::connection::reply::panic_message;
use crate::stream::outgoing::OutgoingItems;

const CONTENT_TYPE: HeaderValue = HeaderValue::from_static("application/grpc");

/// A `200` response head with gRPC's content type and `metadata` as headers.
fn head(metadata: Option<&Metadata>) -> Response<()> {
    let mut response = Response::new(());
    response
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, CONTENT_TYPE);
    if let Some(metadata) = metadata {
        write_metadata(metadata, response.headers_mut());
    }
    response
}

/// Ends a call that sends no message: its status in the response headers.
pub(crate) fn trailers_only(respond: &mut SendResponse<Bytes>, status: &Status) {
    let mut response = head(None);
    status.write(response.headers_mut());
    if let Err(err) = respond.send_response(response, true) {
        tracing::debug!(%err, "the gRPC caller is gone");
    }
}

/// Opens the response: its head, with the reply's metadata. `None` when the caller is gone.
pub(crate) fn open(
    respond: &mut SendResponse<Bytes>,
    metadata: Option<&Metadata>,
) -> Option<SendStream<Bytes>> {
    respond
        .send_response(head(metadata), false)
        .inspect_err(|err| tracing::debug!(%err, "the gRPC caller is gone"))
        .ok()
}

/// Ends an open response with `status` in its trailers.
pub(crate) fn close(stream: &mut SendStream<Bytes>, status: &Status) {
    close_with(stream, status, None);
}

/// Ends an open response with `status` and a stream's `metadata` in its trailers.
pub(crate) fn close_with(
    stream: &mut SendStream<Bytes>,
    status: &Status,
    metadata: Option<&Metadata>,
) {
    let mut trailers = HeaderMap::new();
    if let Some(metadata) = metadata {
        write_metadata(metadata, &mut trailers);
    }
    status.write(&mut trailers);
    if let Err(err) = stream.send_trailers(trailers) {
        tracing::debug!(%err, "the gRPC caller is gone");
    }
}

/// Why messages stopped going out.
pub(crate) enum SendEnd {
    /// The producer ran out: the call ends `OK`.
    Done,
    /// The call ends with this status.
    Failed(Status),
    /// The caller reset the stream or the connection is gone: nothing more can be sent.
    Gone,
}

/// Sends `message` (already framed) as the stream's capacity allows, watching for a reset.
pub(crate) async fn send_message(stream: &mut SendStream<Bytes>, message: Bytes) -> SendEnd {
    let mut pending = Some(message);
    poll_fn(|cx| {
        if stream.poll_reset(cx).is_ready() {
            return Poll::Ready(SendEnd::Gone);
        }
        match poll_flush(stream, &mut pending, cx) {
            Poll::Ready(Ok(())) => Poll::Ready(SendEnd::Done),
            Poll::Ready(Err(())) => Poll::Ready(SendEnd::Gone),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// Items ready at once go out together, in one DATA frame of up to this many bytes: a frame
/// per small item would cost a frame header each, and HTTP/2 peers (h2's flood protection)
/// close a connection that floods them with small frames.
const BATCH_BYTES: usize = 16 * 1024;

/// Sends a stream's items, each a message encoded in `codec`, until the producer runs out,
/// fails or the caller goes. The items the producer has ready are batched into one send;
/// each batch waits for the stream's HTTP/2 window, so a slow caller holds the producer
/// back: at most one batch is buffered.
pub(crate) async fn send_items(
    stream: &mut SendStream<Bytes>,
    items: &mut OutgoingItems,
    codec: Codec,
    sent_items: &::metrics::Counter,
) -> SendEnd {
    let mut pending: Option<Bytes> = None;
    let mut batch = BytesMut::new();
    // How the stream ends, once the producer has said: sent after the batch before it.
    let mut end: Option<SendEnd> = None;
    poll_fn(|cx| {
        if stream.poll_reset(cx).is_ready() {
            return Poll::Ready(SendEnd::Gone);
        }
        loop {
            match poll_flush(stream, &mut pending, cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(())) => return Poll::Ready(SendEnd::Gone),
                Poll::Pending => return Poll::Pending,
            }
            if let Some(end) = end.take() {
                return Poll::Ready(end);
            }
            while batch.len() < BATCH_BYTES && end.is_none() {
                let start = batch.len();
                batch.extend_from_slice(&[0; PREFIX_LEN]);
                // The producer runs here: a panic in it ends the stream like a panicking
                // handler, after the items it made before.
                let polled = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    items.poll_encode(cx, codec.into(), &mut batch)
                }));
                match polled {
                    Ok(Poll::Ready(Some(Ok(_last)))) => {
                        set_prefix(&mut batch[start..]);
                        sent_items.increment(1);
                        continue;
                    }
                    Ok(Poll::Pending) => {
                        batch.truncate(start);
                        break;
                    }
                    Ok(Poll::Ready(None)) => end = Some(SendEnd::Done),
                    Ok(Poll::Ready(Some(Err(err)))) => {
                        end = Some(SendEnd::Failed(Status::of(
                            ErrorCode::EncodeFailed,
                            format!("a stream item did not encode: {err}"),
                        )));
                    }
                    Err(panic) => {
                        end = Some(SendEnd::Failed(Status::of(
                            ErrorCode::HandlerPanicked,
                            panic_message(panic.as_ref()),
                        )));
                    }
                }
                batch.truncate(start);
            }
            if batch.is_empty() && end.is_none() {
                return Poll::Pending;
            }
            pending = Some(batch.split().freeze());
        }
    })
    .await
}

/// Moves what `pending` holds into the stream as its window opens; `Ready(Ok)` once it is
/// all handed over (or there was nothing), `Ready(Err)` when the stream is gone.
fn poll_flush(
    stream: &mut SendStream<Bytes>,
    pending: &mut Option<Bytes>,
    cx: &mut Context<'_>,
) -> Poll<Result<(), ()>> {
    while let Some(data) = pending {
        if data.is_empty() {
            *pending = None;
            break;
        }
        stream.reserve_capacity(data.len());
        let capacity = stream.capacity();
        if capacity == 0 {
            match stream.poll_capacity(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(_))) => continue,
                Poll::Ready(None | Some(Err(_))) => return Poll::Ready(Err(())),
            }
        }
        let chunk = data.split_to(capacity.min(data.len()));
        if stream.send_data(chunk, false).is_err() {
            return Poll::Ready(Err(()));
        }
    }
    Poll::Ready(Ok(()))
}

/// The status for a caller that sent no message where one was due.
pub(crate) fn no_message() -> Status {
    Status::new(Code::Internal, "the request carried no message")
}
