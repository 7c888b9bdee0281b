//! One call's wait for its reply: [`Exchange`], the future [`Connection::exchange`] returns.
//!
//! A named future rather than an `async` block: the caller holds one per call in flight (ten
//! thousand idle connections with a call each hold ten thousand), and a block keeps every
//! value it captured and every future it awaited in its state for its whole life. This one
//! holds what the wait needs and nothing else: the reply channel, the deadline's timer, and
//! (boxed, rarely set) a send still waiting for room or the call's span.

use std::future::{Future, Ready};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::future::Either;
use tokio::time::{Instant, Sleep};
use tracing::Span;

use super::connection::Connection;
use super::pending::ReplyReceiver;
use crate::error::{Error, ErrorCode};
use crate::method::MethodId;
use crate::trace::TraceContext;
use crate::transport::frame::{Frame, FrameKind};
use crate::transport::writer::{Delivery, SinkClosed, TrySend};

/// How close to the caller's own deadline a server's `DeadlineExceeded` must come to be the
/// same deadline (the server starts its clock later, and counts whole milliseconds).
const SAME_DEADLINE: Duration = Duration::from_millis(5);

/// A send waiting for room in the connection's write queue.
pub(super) type WaitingSend<'a> = Pin<Box<dyn Future<Output = Result<(), SinkClosed>> + Send + 'a>>;

impl Connection {
    /// Registers the call and sends its request frame now; the returned future waits for the
    /// reply, at most `timeout`, and resolves to its payload (after its metadata, which goes
    /// to [`reply_metadata`]). Dropping the future before then cancels the call.
    pub(super) fn exchange(
        &self,
        method: MethodId,
        request_id: u64,
        frame: Bytes,
        timeout: Option<Duration>,
        trace: Option<TraceContext>,
    ) -> Result<Exchange<'_>, Error> {
        let span = tracing::debug_span!(
            "wirecall.call",
            side = "client",
            %method,
            request_id,
            codec = %self.codec,
            trace_id = trace.map(|t| t.trace_id_hex()),
            span_id = trace.map(|t| t.span_id_hex()),
        );
        let reply = self.pending.register(request_id)?;
        // A lone call writes its own frame; among many, the writer task batches them.
        let delivery = if self.pending.len() <= 1 {
            Delivery::Now
        } else {
            Delivery::Background
        };
        let sent = span.in_scope(|| self.sink.try_send(frame, delivery));
        let sending = match sent {
            Ok(()) => None,
            Err(TrySend::Full(frame)) => {
                Some(Box::pin(self.sink.send(frame, delivery)) as WaitingSend<'_>)
            }
            Err(TrySend::Closed) => {
                self.pending.remove(request_id);
                return Err(self.pending.closed_error());
            }
        };
        Ok(Exchange::new(
            self,
            Sent {
                method,
                request_id,
                timeout,
                sending,
                reply,
                span,
            },
        ))
    }
}

pin_project_lite::pin_project! {
    /// A sent call waiting for its reply, at most until its deadline. Dropped before it ends
    /// (cancelled, or timed out), it withdraws the call and sends the server a `Cancel`.
    pub(super) struct Exchange<'a> {
        connection: &'a Connection,
        method: MethodId,
        request_id: u64,
        timeout: Option<Duration>,
        // The frame, when the write queue was full as it was sent.
        sending: Option<WaitingSend<'a>>,
        reply: ReplyReceiver,
        #[pin]
        timer: Option<Sleep>,
        // Entered while the future is polled; only there when a subscriber wants it.
        span: Option<Box<Span>>,
        // Until the reply arrives: dropping the future cancels the call.
        cancel_on_drop: bool,
    }

    impl PinnedDrop for Exchange<'_> {
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

/// What [`Exchange::new`] needs besides the connection.
pub(super) struct Sent<'a> {
    pub(super) method: MethodId,
    pub(super) request_id: u64,
    pub(super) timeout: Option<Duration>,
    pub(super) sending: Option<WaitingSend<'a>>,
    pub(super) reply: ReplyReceiver,
    pub(super) span: Span,
}

impl<'a> Exchange<'a> {
    /// Waits for the reply to a call already registered (and sent, or waiting to be).
    pub(super) fn new(connection: &'a Connection, sent: Sent<'a>) -> Self {
        Self {
            connection,
            method: sent.method,
            request_id: sent.request_id,
            timeout: sent.timeout,
            sending: sent.sending,
            reply: sent.reply,
            timer: sent
                .timeout
                .map(|after| tokio::time::sleep_until(Instant::now() + after)),
            span: (!sent.span.is_disabled()).then(|| Box::new(sent.span)),
            cancel_on_drop: true,
        }
    }
}

impl Future for Exchange<'_> {
    type Output = Result<Bytes, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let _entered = this.span.as_deref().map(Span::enter);
        let connection = *this.connection;
        // The reply first, then the timer: a reply that is there counts even if the deadline
        // passed meanwhile (as with `tokio::time::timeout`).
        let frame = match poll_reply(connection, this.sending, this.reply, cx) {
            Poll::Ready(frame) => frame,
            Poll::Pending => {
                if let Some(timer) = this.timer.as_mut().as_pin_mut() {
                    ready!(timer.poll(cx));
                    return Poll::Ready(Err(Error::Timeout {
                        after: this.timeout.unwrap_or_default(),
                    }));
                }
                return Poll::Pending;
            }
        };
        *this.cancel_on_drop = false;
        let result = frame.and_then(|frame| connection.reply_payload(*this.method, frame));
        Poll::Ready(match result {
            // The server's copy of the deadline can fire a moment before ours: it is the same
            // deadline, so the caller sees the same error either way. Well before ours, it is
            // a time limit of the server's own (a timeout layer), reported as the server's.
            Err(Error::Remote {
                code: ErrorCode::DeadlineExceeded,
                ..
            }) if this
                .timer
                .as_ref()
                .get_ref()
                .as_ref()
                .is_some_and(|timer| Instant::now() + SAME_DEADLINE >= timer.deadline()) =>
            {
                Err(Error::Timeout {
                    after: this.timeout.unwrap_or_default(),
                })
            }
            other => other,
        })
    }
}

/// The future of a call [`Connection::exchange`] sent, or of the error that kept it from being
/// sent. Awaiting this instead of matching on the `Result` across the wait keeps the caller's
/// future from holding both.
pub(super) fn sent_or_failed(
    sent: Result<Exchange<'_>, Error>,
) -> Either<Exchange<'_>, Ready<Result<Bytes, Error>>> {
    match sent {
        Ok(exchange) => Either::Left(exchange),
        Err(err) => Either::Right(std::future::ready(Err(err))),
    }
}

/// Finishes a waiting send, then waits for the reply frame.
fn poll_reply(
    connection: &Connection,
    sending: &mut Option<WaitingSend<'_>>,
    reply: &mut ReplyReceiver,
    cx: &mut Context<'_>,
) -> Poll<Result<Frame, Error>> {
    if let Some(send) = sending {
        if ready!(send.as_mut().poll(cx)).is_err() {
            return Poll::Ready(Err(connection.pending.closed_error()));
        }
        *sending = None;
    }
    match ready!(Pin::new(reply).poll(cx)) {
        Ok(frame) => Poll::Ready(frame),
        Err(_) => Poll::Ready(Err(connection.pending.closed_error())),
    }
}
