//! One call's wait for its reply: [`Exchange`], the future [`Connection::exchange`] returns.
//!
//! A named future rather than an `async` block: the caller holds one per call in flight (ten
//! thousand idle connections with a call each hold ten thousand), and a block keeps every
//! value it captured and every future it awaited in its state for its whole life. This one
//! holds what the wait needs and nothing else: the request id (the reply waits in the call's
//! slot in the connection's table, see `pending.rs`), the deadline, the request frame until
//! the first poll sends it, and (boxed, rarely set) a send still waiting for room or the
//! call's span.
//!
//! The first poll registers the call together with the caller's waker, then sends: the
//! table is visited once on the way out and once to take the reply, where registering and
//! a first poll that found nothing visited it twice on the way out. The deadline has no timer of its own:
//! the connection's reader sweeps every call's deadline (see `deadlines.rs`) and completes a
//! call that runs out with [`Error::Timeout`], through the same slot.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;
use tracing::Span;

use super::connection::Connection;
use crate::call_span::{CallSpan, Side};
use crate::client::request::Reply;
use crate::client::stack::call::Call;
use crate::client::stack::deadline::Deadline;
use crate::client::stream::raw::SAME_DEADLINE;
use crate::error::{Error, ErrorCode};
use crate::method::MethodId;
use crate::transport::frame::{Frame, FrameKind};
use crate::transport::writer::{Delivery, SinkClosed, TrySend};

/// A send waiting for room in the connection's write queue.
pub(super) type WaitingSend = Pin<Box<dyn Future<Output = Result<(), SinkClosed>> + Send>>;

impl Connection {
    /// The wait of unary `call` for its reply, at most until its deadline, resolving to the
    /// reply (after its metadata, which goes to [`reply_metadata`]). Its first poll registers
    /// the call and sends its request `frame`; dropping it after that, before the reply,
    /// cancels the call.
    pub(crate) fn exchange(
        self: Arc<Self>,
        call: &Call<'_>,
        request_id: u64,
        frame: Bytes,
    ) -> Exchange {
        let span = CallSpan {
            side: Side::Client,
            stream: false,
            service: None,
            method: &call.method,
            request_id,
            codec: self.codec,
            peer: self.peer,
            trace: call.trace,
        }
        .start();
        Exchange {
            connection: self,
            method: call.method,
            request_id,
            deadline: call.deadline,
            unsent: Some(frame),
            sending: None,
            span: span.filter(|span| !span.is_disabled()).map(Box::new),
            cancel_on_drop: false,
        }
    }

    /// Registers call `request_id` with the caller's waker and sends its frame: one trip
    /// through the pending table where registering and a first poll took two. Returns the
    /// send still waiting for room in the write queue, if it is full.
    fn register_and_send(
        &self,
        request_id: u64,
        frame: Bytes,
        deadline: Option<(Instant, Duration)>,
        cx: &Context<'_>,
    ) -> Result<Option<WaitingSend>, Error> {
        self.pending
            .register(request_id, deadline, Some(cx.waker().clone()))?;
        // A lone call writes its own frame; among many, the connection's writer batches them.
        let delivery = if self.pending.len() <= 1 {
            Delivery::Now
        } else {
            Delivery::Background
        };
        match self.sink.try_send(frame, delivery) {
            Ok(()) => Ok(None),
            Err(TrySend::Full(frame)) => {
                let sink = self.sink.clone();
                Ok(Some(
                    Box::pin(async move { sink.send(frame, delivery).await }) as WaitingSend,
                ))
            }
            Err(TrySend::Closed) => {
                self.pending.remove(request_id);
                Err(self.pending.unsent_error())
            }
        }
    }
}

pin_project_lite::pin_project! {
    /// A call waiting for its reply, at most until its deadline. Dropped after its first
    /// poll and before it ends (cancelled, or timed out), it withdraws the call and sends
    /// the server a `Cancel`.
    pub(crate) struct Exchange {
        connection: Arc<Connection>,
        method: MethodId,
        request_id: u64,
        // When the call times out (the reader enforces it).
        deadline: Option<Deadline>,
        // The request frame, until the first poll sends it.
        unsent: Option<Bytes>,
        // The frame, when the write queue was full as it was sent.
        sending: Option<WaitingSend>,
        // Entered while the future is polled; only there when a subscriber wants it.
        span: Option<Box<Span>>,
        // Until the reply arrives: dropping the future cancels the call.
        cancel_on_drop: bool,
    }

    impl PinnedDrop for Exchange {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if *this.cancel_on_drop && this.connection.pending.remove(*this.request_id) {
                // Best effort: if the queue is full, the reply is discarded on arrival.
                let cancel = Frame::control(FrameKind::Cancel, *this.request_id).to_bytes();
                this.connection.sink.send_now(cancel);
            }
        }
    }
}

impl Future for Exchange {
    type Output = Result<Reply, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let _entered = this.span.as_deref().map(Span::enter);
        let connection = &**this.connection;
        if let Some(frame) = this.unsent.take() {
            let deadline = this
                .deadline
                .map(|deadline| (deadline.at(), deadline.timeout()));
            match connection.register_and_send(*this.request_id, frame, deadline, cx) {
                Ok(sending) => {
                    *this.cancel_on_drop = true;
                    *this.sending = sending;
                    // Registered with this poll's waker, and sent: the reply (or the end)
                    // wakes the task. A waiting send still needs its first poll below.
                    if this.sending.is_none() {
                        return Poll::Pending;
                    }
                }
                Err(err) => return Poll::Ready(Err(err)),
            }
        }
        // A reply read before the reader swept the deadline counts even if the deadline
        // passed meanwhile (as with `tokio::time::timeout`); a timeout comes as the result.
        let frame = ready!(poll_reply(connection, *this.request_id, this.sending, cx));
        // The reply, the timeout (the reader has cancelled the call) or the connection's end:
        // the call is over either way.
        *this.cancel_on_drop = false;
        let result = frame.and_then(|frame| connection.reply_payload(*this.method, frame));
        let result = result.map(|payload| Reply {
            payload,
            codec: connection.codec,
            stream: None,
        });
        Poll::Ready(match result {
            // The server's copy of the deadline can fire a moment before ours: it is the same
            // deadline, so the caller sees the same error either way. Well before ours, it is
            // a time limit of the server's own (a timeout layer), reported as the server's.
            Err(Error::Remote {
                code: ErrorCode::DeadlineExceeded,
                ..
            }) if this
                .deadline
                .is_some_and(|deadline| Instant::now() + SAME_DEADLINE >= deadline.at()) =>
            {
                Err(this.deadline.map_or(
                    Error::Timeout {
                        after: Duration::ZERO,
                    },
                    Deadline::expired,
                ))
            }
            other => other,
        })
    }
}

/// Finishes a waiting send, then waits for the reply frame.
fn poll_reply(
    connection: &Connection,
    request_id: u64,
    sending: &mut Option<WaitingSend>,
    cx: &mut Context<'_>,
) -> Poll<Result<Frame, Error>> {
    if let Some(send) = sending {
        match send.as_mut().poll(cx) {
            Poll::Ready(Ok(())) => *sending = None,
            Poll::Ready(Err(_)) => return Poll::Ready(Err(connection.pending.unsent_error())),
            // Not sent yet, so no reply: but the deadline or the connection's end may have
            // ended the call meanwhile.
            Poll::Pending => {}
        }
    }
    connection.pending.poll_reply(request_id, cx)
}
