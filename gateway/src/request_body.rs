//! Reading a request body under the gateway's limits: its size
//! ([`GatewayBuilder::max_body_bytes`]), how long it may stall
//! ([`GatewayBuilder::body_read_timeout`]) and the call's time limit
//! ([`GatewayBuilder::time_limit`]), which counts the reading of the body too.
//!
//! The stall clock runs only while the gateway waits for the body: it starts when a read
//! finds nothing to take and stops when a frame comes. An upload that the server reads slowly
//! is not read meanwhile, and that wait is not the client's stall.
//!
//! [`GatewayBuilder::max_body_bytes`]: crate::GatewayBuilder::max_body_bytes
//! [`GatewayBuilder::body_read_timeout`]: crate::GatewayBuilder::body_read_timeout
//! [`GatewayBuilder::time_limit`]: crate::GatewayBuilder::time_limit

use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::header::CONTENT_LENGTH;
use axum::http::HeaderMap;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::time::Sleep;

use crate::status::RequestTimeout;
use crate::time_limit::CallTimeLimit;
use crate::GatewayError;

/// A request body that fails with [`RequestTimeout::BodyStalled`] when no frame comes for
/// `stall` while it is read.
struct StallLimited {
    inner: Body,
    stall: Duration,
    /// Running while a read waits for a frame.
    waiting: Option<Pin<Box<Sleep>>>,
}

impl HttpBody for StallLimited {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            this.waiting = None;
            return Poll::Ready(frame);
        }
        let stall = this.stall;
        let waiting = this
            .waiting
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(stall)));
        match waiting.as_mut().poll(cx) {
            Poll::Ready(()) => {
                this.waiting = None;
                Poll::Ready(Some(Err(axum::Error::new(RequestTimeout::BodyStalled(
                    stall,
                )))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The request with its body held to `stall` (none if it is zero): the router's first step.
pub(crate) fn limit_stalls(request: Request, stall: Duration) -> Request {
    if stall.is_zero() {
        return request;
    }
    request.map(|inner| {
        Body::new(StallLimited {
            inner,
            stall,
            waiting: None,
        })
    })
}

/// The stall that broke a body off, if that is what `error` (from reading it) is.
pub(crate) fn stalled(error: &axum::Error) -> Option<RequestTimeout> {
    in_chain::<RequestTimeout>(error).copied()
}

/// The first error of type `E` in `error`'s chain of sources, `error` included.
fn in_chain<E: std::error::Error + 'static>(error: &axum::Error) -> Option<&E> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = source {
        if let Some(found) = error.downcast_ref::<E>() {
            return Some(found);
        }
        source = error.source();
    }
    None
}

/// The whole body of a unary call or a stream's opening, at most `max` bytes, read within
/// `time`. A body whose `Content-Length` says it is longer is refused before it is read.
pub(crate) async fn read_whole(
    headers: &HeaderMap,
    body: Body,
    max: usize,
    time: CallTimeLimit,
) -> Result<Bytes, GatewayError> {
    let announced = headers
        .get(CONTENT_LENGTH)
        .and_then(|length| length.to_str().ok())
        .and_then(|length| length.parse::<u64>().ok());
    if announced.is_some_and(|length| length > max as u64) {
        return Err(GatewayError::BodyTooLarge { max });
    }
    let read = time
        .bound(axum::body::to_bytes(body, max))
        .await
        .map_err(|_| RequestTimeout::TimeLimit(time.limit()))?;
    read.map_err(|error| {
        if let Some(timeout) = stalled(&error) {
            return GatewayError::RequestTimeout(timeout);
        }
        if in_chain::<http_body_util::LengthLimitError>(&error).is_some() {
            GatewayError::BodyTooLarge { max }
        } else {
            GatewayError::BadBody(format!("the body could not be read: {error}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use futures::FutureExt as _;
    use http_body_util::BodyExt as _;

    use super::*;

    /// A body whose frames come from `chunks`, held to a stall of one second.
    fn limited(chunks: tokio::sync::mpsc::Receiver<Bytes>) -> Body {
        let frames = futures::stream::unfold(chunks, |mut chunks| async move {
            let chunk = chunks.recv().await?;
            Some((Ok::<_, std::io::Error>(chunk), chunks))
        });
        let request = Request::new(Body::from_stream(frames));
        limit_stalls(request, Duration::from_secs(1)).into_body()
    }

    /// The clock runs only while a read waits: time the body is not read does not count,
    /// and a frame stops the clock.
    #[tokio::test(start_paused = true)]
    async fn the_clock_runs_only_while_a_read_waits() {
        let (send, chunks) = tokio::sync::mpsc::channel(4);
        let mut body = limited(chunks);
        send.send(Bytes::from_static(b"1")).await.unwrap();
        assert!(body.frame().await.unwrap().is_ok());
        // Not read for a minute: an upload the server takes slowly.
        tokio::time::advance(Duration::from_secs(60)).await;
        send.send(Bytes::from_static(b"2")).await.unwrap();
        assert!(
            body.frame().await.unwrap().is_ok(),
            "time not reading is not a stall"
        );
        let waited = tokio::time::Instant::now();
        let error = body.frame().await.unwrap().unwrap_err();
        assert_eq!(waited.elapsed(), Duration::from_secs(1));
        assert_eq!(
            stalled(&error),
            Some(RequestTimeout::BodyStalled(Duration::from_secs(1)))
        );
        drop(send);
    }

    /// A frame that comes within the stall resets the clock for the next one.
    #[tokio::test(start_paused = true)]
    async fn a_frame_within_the_stall_resets_the_clock() {
        let (send, chunks) = tokio::sync::mpsc::channel(4);
        let mut body = limited(chunks);
        let mut next = Box::pin(body.frame());
        assert!(next.as_mut().now_or_never().is_none(), "the clock starts");
        tokio::time::advance(Duration::from_millis(900)).await;
        send.send(Bytes::from_static(b"1")).await.unwrap();
        assert!(next.await.unwrap().is_ok());
        let mut next = Box::pin(body.frame());
        assert!(next.as_mut().now_or_never().is_none());
        // 1.8 s since the first wait began, 0.9 s since the frame.
        tokio::time::advance(Duration::from_millis(900)).await;
        assert!(next.as_mut().now_or_never().is_none(), "a fresh second");
        tokio::time::advance(Duration::from_millis(100)).await;
        let error = next.await.unwrap().unwrap_err();
        assert!(stalled(&error).is_some(), "{error}");
        drop(send);
    }
}
