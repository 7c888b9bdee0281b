//! [`RawStream`]: the caller's side of an open stream call, before its items are decoded: what
//! the stack hands back when a stream opens (it knows no item types), and what the typed
//! [`ItemStream`](super::item_stream::ItemStream) reads.
//!
//! It ends exactly once: with the server's End, with one error (the server's, the deadline,
//! the connection's end), or cancelled when dropped before either; the policy state it holds
//! (the method's concurrency place, the breaker's pending outcome) is settled then.

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;
use tracing::Span;

use super::slot::{StreamNext, Taken};
use crate::client::endpoint::connection::Connection;
use crate::client::endpoint::round_trip::TIMING_PING_ID;
use crate::codec::Codec;
use crate::error::{Error, ErrorCode};
use crate::layers::circuit_breaker::circuits::OwnedOutcome;
use crate::metadata::{Metadata, EMPTY_METADATA};
use crate::method::MethodId;
use crate::policy::table::StreamPermit;
use crate::stream::credit::credit_frame;
use crate::transport::frame::{ErrorBody, Frame, FrameKind, FLAG_METADATA};

/// How close to the caller's own deadline a server's `DeadlineExceeded` must come to be the
/// same deadline (the server starts its clock later, and counts whole milliseconds).
pub(crate) const SAME_DEADLINE: Duration = Duration::from_millis(5);

/// An open stream call: its items as the server sends them, still encoded.
pub(crate) struct RawStream {
    connection: Arc<Connection>,
    request_id: u64,
    method: MethodId,
    timeout: Option<Duration>,
    deadline: Option<Instant>,
    /// The stream has ended (or failed): it yields nothing more, and sends no `Cancel` when
    /// dropped.
    ended: bool,
    /// The call's span, entered while the stream is polled and closed when it is dropped;
    /// only there when a subscriber wants it (boxed: a stream without one stays small).
    span: Option<Box<Span>>,
    /// Items yielded, for the span.
    items: u64,
    /// Items moved here from the stream's slot, not yet yielded: one visit to the
    /// connection's table takes every item read meanwhile.
    ready: VecDeque<Frame>,
    /// Items yielded since the slot last counted them (credit is granted as items are
    /// yielded).
    taken: u32,
    /// After how many taken items the slot is to count them (credit is due then).
    report_after: u32,
    /// The method's concurrency place and its breaker's pending outcome, held until the
    /// stream ends.
    policy: StreamPolicy,
    /// The stream's end, read from its slot while waiting for its reply metadata: yielded
    /// after the items in `ready`.
    held_end: Option<Result<Frame, Error>>,
    /// The server's reply metadata (its Head), once known: the server's first frame on the
    /// stream says whether there is one.
    head: Option<Metadata>,
    /// The server's trailers, once the stream has ended with its End or Error.
    trailers: Option<Metadata>,
}

/// What a stream holds of its method's policy while it is open.
#[derive(Default)]
struct StreamPolicy {
    permit: Option<StreamPermit>,
    breaker: Option<OwnedOutcome>,
}

/// What [`RawStream::new`] needs besides the connection.
pub(crate) struct OpenedStream {
    pub(crate) request_id: u64,
    pub(crate) method: MethodId,
    pub(crate) timeout: Option<Duration>,
    pub(crate) deadline: Option<Instant>,
    /// The call's span, when a subscriber wants it.
    pub(crate) span: Option<Span>,
}

impl RawStream {
    /// The stream of a registered (and sent) stream call.
    pub(crate) fn new(connection: Arc<Connection>, opened: OpenedStream) -> Self {
        Self {
            connection,
            request_id: opened.request_id,
            method: opened.method,
            timeout: opened.timeout,
            deadline: opened.deadline,
            ended: false,
            span: opened.span.filter(|span| !span.is_disabled()).map(Box::new),
            items: 0,
            ready: VecDeque::new(),
            taken: 0,
            report_after: u32::MAX,
            policy: StreamPolicy::default(),
            held_end: None,
            head: None,
            trailers: None,
        }
    }

    /// Holds the method's concurrency place until the stream ends.
    pub(crate) fn hold_permit(&mut self, permit: StreamPermit) {
        self.policy.permit = Some(permit);
    }

    /// Reports the stream's end to the method's circuit breaker: a clean end counts as a
    /// success, an error as the breaker counts errors, a cancelled stream not at all.
    pub(crate) fn report_to(&mut self, breaker: OwnedOutcome) {
        self.policy.breaker = Some(breaker);
    }

    /// The method this stream calls.
    pub(crate) fn method(&self) -> MethodId {
        self.method
    }

    /// The codec its items are encoded in.
    pub(crate) fn codec(&self) -> Codec {
        self.connection.codec
    }

    /// The next item's payload, the end (`None`) or the one error.
    pub(crate) fn poll_item(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Error>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let span = self.span.take();
        let entered = span.as_deref().map(Span::enter);
        let next = self.next_item(cx);
        drop(entered);
        self.span = span;
        if let Poll::Ready(item) = &next {
            match item {
                Some(Ok(_)) => self.items += 1,
                Some(Err(err)) => self.finish(End::Failed(err)),
                None => self.finish(End::Complete),
            }
        }
        next
    }

    /// The stream failed on this side (an item that did not decode): the rest of it cannot
    /// be trusted either, so the call is cancelled.
    pub(crate) fn fail(&mut self, error: &Error) {
        if !self.ended {
            self.finish(End::Failed(error));
        }
        self.cancel();
    }

    /// Records how the stream ended: on its span (`ok`, `cancelled`, or `error` and the
    /// error), and to the method's breaker (a cancelled stream counts for nothing); gives back
    /// its concurrency place.
    fn finish(&mut self, end: End<'_>) {
        if let Some(span) = &self.span {
            span.record("items", self.items);
            let outcome = match end {
                End::Complete => "ok",
                End::Failed(error) => {
                    span.record("error", tracing::field::display(error));
                    "error"
                }
                End::Cancelled => "cancelled",
            };
            span.record("outcome", outcome);
        }
        let breaker = self.policy.breaker.take();
        match (breaker, end) {
            (Some(breaker), End::Complete) => breaker.finish(&Ok(())),
            (Some(breaker), End::Failed(error)) => breaker.finish_failed(error),
            // Dropped, the pending outcome gives back a trial call's place.
            (Some(breaker), End::Cancelled) => drop(breaker),
            (None, _) => {}
        }
        self.policy.permit = None;
    }

    /// The error the server's End or Error frame (or a stray Response) ends the stream with;
    /// `None` for an End.
    fn end_error(&mut self, frame: Frame) -> Option<Error> {
        let payload = if frame.flags & FLAG_METADATA != 0 {
            match Metadata::decode(frame.payload) {
                Ok((trailers, payload)) => {
                    self.trailers = Some(trailers);
                    payload
                }
                Err(err) => return Some(err.into()),
            }
        } else {
            self.trailers = Some(Metadata::default());
            frame.payload
        };
        match frame.kind {
            FrameKind::End => None,
            FrameKind::Error => {
                let body = ErrorBody::decode(&payload);
                Some(self.remote_error(body.code, body.message))
            }
            other => Some(Error::closed(format!(
                "protocol violation: the server answered a stream with a {other:?} frame"
            ))),
        }
    }

    /// The server's error; its `DeadlineExceeded` at the caller's own deadline is the
    /// caller's timeout.
    fn remote_error(&self, code: ErrorCode, message: String) -> Error {
        let at_own_deadline = self
            .deadline
            .is_some_and(|deadline| Instant::now() + SAME_DEADLINE >= deadline);
        match (code, self.timeout) {
            (ErrorCode::DeadlineExceeded, Some(after)) if at_own_deadline => {
                Error::Timeout { after }
            }
            _ => Error::from_remote(self.method, code, message),
        }
    }

    /// Stops the call: withdraws it from the table and tells the server, unless it ended.
    fn cancel(&mut self) {
        if !self.ended {
            self.stop_on_server();
        }
        self.ended = true;
    }

    /// Withdraws the call from the connection's table and, if it was still there, tells the
    /// server to stop it.
    fn stop_on_server(&self) {
        if self.connection.pending.remove(self.request_id) {
            // Never dropped for a full queue: a lost Cancel would leave the producer running.
            let cancel = Frame::control(FrameKind::Cancel, self.request_id).to_bytes();
            self.connection.sink.send_control(cancel);
        }
    }

    fn next_item(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Error>>> {
        loop {
            if ready!(self.poll_filled(cx)).is_none() {
                return Poll::Pending;
            }
            let Some(frame) = self.ready.pop_front() else {
                // Every item was yielded: the end comes next.
                let Some(end) = self.held_end.take() else {
                    return Poll::Pending;
                };
                self.ended = true;
                return Poll::Ready(match end {
                    Ok(frame) => self.end_error(frame).map(Err),
                    Err(err) => Some(Err(err)),
                });
            };
            if frame.kind == FrameKind::Head {
                self.read_head(frame);
                continue;
            }
            self.head.get_or_insert_with(Metadata::default);
            self.taken += 1;
            if self.taken >= self.report_after {
                let Taken {
                    grant,
                    report_after,
                } = self
                    .connection
                    .pending
                    .stream_taken(self.request_id, std::mem::take(&mut self.taken));
                self.grant(grant);
                self.report_after = report_after;
            }
            return Poll::Ready(Some(Ok(frame.payload)));
        }
    }

    /// Ready (`Some`) once a frame waits in `ready` or the end is held; `Pending` while the
    /// slot has neither. One visit to the slot moves every item read meanwhile, and reports
    /// the items taken since the last (the credit due goes out then).
    fn poll_filled(&mut self, cx: &mut Context<'_>) -> Poll<Option<()>> {
        if !self.ready.is_empty() || self.held_end.is_some() {
            return Poll::Ready(Some(()));
        }
        let taken = std::mem::take(&mut self.taken);
        match ready!(self.connection.pending.poll_stream(
            self.request_id,
            taken,
            &mut self.ready,
            cx
        )) {
            StreamNext::Items {
                grant,
                report_after,
            } => {
                self.grant(grant);
                self.report_after = report_after;
            }
            StreamNext::End(end) => self.held_end = Some(end),
        }
        // Nothing moved (only credit was due): the slot wakes this task when items come.
        Poll::Ready((!self.ready.is_empty() || self.held_end.is_some()).then_some(()))
    }

    /// Reads the stream's Head. A malformed one fails the stream (the items behind it are
    /// dropped and the server is told to stop): its error is what the stream yields next.
    fn read_head(&mut self, frame: Frame) {
        let decoded = if frame.flags & FLAG_METADATA == 0 {
            Err(Error::closed(format!(
                "protocol violation: the Head of stream {} lacks the metadata flag",
                self.request_id
            )))
        } else {
            match Metadata::decode(frame.payload) {
                Ok((head, rest)) if rest.is_empty() => Ok(head),
                Ok(_) => Err(Error::closed(format!(
                    "protocol violation: the Head of stream {} has bytes after its metadata",
                    self.request_id
                ))),
                Err(err) => Err(err.into()),
            }
        };
        match decoded {
            Ok(head) => self.head = Some(head),
            Err(err) => {
                self.head = Some(Metadata::default());
                self.ready.clear();
                self.held_end = Some(Err(err));
                self.stop_on_server();
            }
        }
    }

    /// Ready once the server's reply metadata is known: its Head was read, or its first item
    /// or its end came without one (the metadata is then empty). Takes no item.
    pub(crate) fn poll_head(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            if self.head.is_some() || self.ended {
                return Poll::Ready(());
            }
            if ready!(self.poll_filled(cx)).is_none() {
                return Poll::Pending;
            }
            match self.ready.front() {
                Some(frame) if frame.kind == FrameKind::Head => {
                    if let Some(head) = self.ready.pop_front() {
                        self.read_head(head);
                    }
                }
                // An item, or the end, before any Head: there is none.
                _ => {
                    self.head = Some(Metadata::default());
                }
            }
        }
    }

    /// The server's reply metadata, once [`poll_head`](Self::poll_head) was ready (empty
    /// before, and when the stream ended without any).
    pub(crate) fn head(&self) -> &Metadata {
        self.head.as_ref().unwrap_or(&EMPTY_METADATA)
    }

    /// The server's trailers, once the stream ended with its End or Error frame.
    pub(crate) fn trailers(&self) -> Option<&Metadata> {
        self.trailers.as_ref()
    }

    /// Sends the server the credit due, if any, and with it a Ping that times the round
    /// trip when one is due (the window grows with it on a long link).
    fn grant(&self, grant: Option<u32>) {
        if let Some(granted) = grant {
            let sink = &self.connection.sink;
            sink.send_control(credit_frame(self.request_id, granted));
            if self.connection.pending.round_trip.ping_due() {
                sink.send_control(Frame::control(FrameKind::Ping, TIMING_PING_ID).to_bytes());
            }
        }
    }
}

/// How a stream ended, for its span and its method's breaker.
#[derive(Clone, Copy)]
enum End<'a> {
    Complete,
    Failed(&'a Error),
    Cancelled,
}

impl Drop for RawStream {
    fn drop(&mut self) {
        if !self.ended {
            self.finish(End::Cancelled);
        }
        self.cancel();
    }
}
