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
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = source {
        if let Some(timeout) = error.downcast_ref::<RequestTimeout>() {
            return Some(*timeout);
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
        let over_limit = std::error::Error::source(&error)
            .is_some_and(|source| source.is::<http_body_util::LengthLimitError>());
        if over_limit {
            GatewayError::BodyTooLarge { max }
        } else {
            GatewayError::BadBody(format!("the body could not be read: {error}"))
        }
    })
}
