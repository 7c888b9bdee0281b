//! What goes back to a gRPC caller: the response headers (with the reply's metadata), its
//! messages as HTTP/2 flow control lets them go, and the status in the trailers; or, for a
//! call that fails before any message, a trailers-only response.

use std::future::poll_fn;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use h2::server::SendResponse;
use h2::SendStream;
use http::{HeaderMap, HeaderValue, Response};

use super::headers::write_metadata;
use super::messages::{finish_message, start_message, PREFIX_LEN};
use super::status::{Code, Status};
use crate::codec::Codec;
use crate::error::ErrorCode;
use crate::metadata::Metadata;
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
    let mut trailers = HeaderMap::new();
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

/// Sends a stream's items, each a message encoded in `codec`, until the producer runs out,
/// fails or the caller goes. Each message waits for the stream's HTTP/2 window, so a slow
/// caller holds the producer back: at most one message is buffered.
pub(crate) async fn send_items(
    stream: &mut SendStream<Bytes>,
    items: &mut OutgoingItems,
    codec: Codec,
) -> SendEnd {
    let mut pending: Option<Bytes> = None;
    let mut next: Option<BytesMut> = None;
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
            let out = next.get_or_insert_with(|| start_message(64));
            match items.poll_encode(cx, codec, out) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => return Poll::Ready(SendEnd::Done),
                Poll::Ready(Some(Err(err))) => {
                    return Poll::Ready(SendEnd::Failed(Status::of(
                        ErrorCode::EncodeFailed,
                        format!("a stream item did not encode: {err}"),
                    )))
                }
                Poll::Ready(Some(Ok(_last))) => {
                    if let Some(out) = next.take() {
                        debug_assert!(out.len() >= PREFIX_LEN);
                        pending = Some(finish_message(out));
                    }
                }
            }
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
