//! [`ItemStream`]: the caller's side of a server stream.

use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::Stream;
use tokio::time::Instant;
use tracing::Span;

use super::connection::Connection;
use super::stream_slot::{StreamNext, Taken};
use crate::codec::Codec;
use crate::error::{Error, ErrorCode};
use crate::method::MethodId;
use crate::stream::credit::credit_frame;
use crate::stream::ItemMessage;
use crate::transport::frame::{ErrorBody, Frame, FrameKind, FLAG_METADATA};

/// How close to the caller's own deadline a server's `DeadlineExceeded` must come to be the
/// same deadline (as for unary calls, see `exchange.rs`).
const SAME_DEADLINE: Duration = Duration::from_millis(5);

/// The items of a server stream, as the caller receives them: a [`Stream`] of
/// `Result<T, Error>` that ends after the server's last item.
///
/// Each item is `Ok` with the server's item (for a method streaming `Result<U, E>`, that is
/// the application's `Ok(u)` or its final `Err(e)`), or `Err` once with why the stream
/// failed (the server's error, the call's deadline, the connection's end), after which the
/// stream ends: every stream ends exactly once, with its end or with one error.
///
/// The server sends only as many items as this stream has room for (its window, see
/// [`ChannelBuilder::stream_window`](crate::ChannelBuilder::stream_window)): a consumer that
/// stops reading pauses the producer, and the rest of the connection goes on. Dropping the
/// stream before its end cancels the call: the server stops producing at once.
#[must_use = "a stream does nothing unless polled, and dropping it cancels the call"]
pub struct ItemStream<T> {
    connection: Arc<Connection>,
    request_id: u64,
    method: MethodId,
    codec: Codec,
    timeout: Option<Duration>,
    deadline: Option<Instant>,
    decode: fn(Codec, &Bytes) -> Result<T, Error>,
    /// The stream has yielded its end (or its error): it yields nothing more, and sends no
    /// `Cancel` when dropped.
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
    _item: PhantomData<fn() -> T>,
}

/// What [`ItemStream::new`] needs besides the connection.
pub(super) struct OpenedStream {
    pub(super) request_id: u64,
    pub(super) method: MethodId,
    pub(super) timeout: Option<Duration>,
    pub(super) deadline: Option<Instant>,
    /// The call's span, when a subscriber wants it.
    pub(super) span: Option<Span>,
}

fn decode_item<M: ItemMessage>(codec: Codec, payload: &Bytes) -> Result<M::Item, Error> {
    codec.decode::<M>(payload)?.into_item()
}

impl<T> ItemStream<T> {
    /// The stream of a registered (and sent) stream call whose items are `M`s.
    pub(super) fn new<M: ItemMessage<Item = T>>(
        connection: Arc<Connection>,
        opened: OpenedStream,
    ) -> Self {
        Self {
            codec: connection.codec,
            connection,
            request_id: opened.request_id,
            method: opened.method,
            timeout: opened.timeout,
            deadline: opened.deadline,
            decode: decode_item::<M>,
            ended: false,
            span: opened.span.filter(|span| !span.is_disabled()).map(Box::new),
            items: 0,
            ready: VecDeque::new(),
            taken: 0,
            report_after: u32::MAX,
            _item: PhantomData,
        }
    }

    /// Records how the stream ended on its span: `ok`, `cancelled`, or `error` and the error.
    fn record_end(&self, outcome: &str, error: Option<&Error>) {
        if let Some(span) = &self.span {
            span.record("items", self.items);
            span.record("outcome", outcome);
            if let Some(error) = error {
                span.record("error", tracing::field::display(error));
            }
        }
    }

    /// The method this stream calls.
    pub fn method(&self) -> MethodId {
        self.method
    }

    /// The error the server's End or Error frame (or a stray Response) ends the stream with;
    /// `None` for an End.
    fn end_error(&self, frame: Frame) -> Option<Error> {
        let payload = if frame.flags & FLAG_METADATA != 0 {
            match crate::metadata::Metadata::decode(frame.payload) {
                Ok((_, payload)) => payload,
                Err(err) => return Some(err.into()),
            }
        } else {
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
        if !self.ended && self.connection.pending.remove(self.request_id) {
            // Never dropped for a full queue: a lost Cancel would leave the producer running.
            let cancel = Frame::control(FrameKind::Cancel, self.request_id).to_bytes();
            self.connection.sink.send_control(cancel);
        }
        self.ended = true;
    }
}

/// The one reply of a client-streaming call: the server's only item, once its End has come
/// too. Used by generated code.
#[doc(hidden)]
pub async fn single_reply<T>(mut stream: ItemStream<T>) -> Result<T, Error> {
    use futures::StreamExt;
    let reply = match stream.next().await {
        Some(reply) => reply?,
        None => {
            return Err(Error::Remote {
                code: ErrorCode::ProtocolViolation,
                message: format!(
                    "the server ended the client-streaming call {} without a reply",
                    stream.method
                ),
            })
        }
    };
    // The End follows right behind the reply; an error instead of it fails the call.
    match stream.next().await {
        Some(Err(err)) => Err(err),
        _ => Ok(reply),
    }
}

impl<T> Stream for ItemStream<T> {
    type Item = Result<T, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
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
                Some(Err(err)) => self.record_end("error", Some(err)),
                None => self.record_end("ok", None),
            }
        }
        next
    }
}

impl<T> ItemStream<T> {
    /// The next item, the end (`None`) or the one error, as `poll_next` yields them.
    fn next_item(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, Error>>> {
        if self.ready.is_empty() {
            let taken = std::mem::take(&mut self.taken);
            let next =
                self.connection
                    .pending
                    .poll_stream(self.request_id, taken, &mut self.ready, cx);
            match next {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(StreamNext::Items {
                    grant,
                    report_after,
                }) => {
                    self.grant(grant);
                    self.report_after = report_after;
                }
                Poll::Ready(StreamNext::End(end)) => {
                    self.ended = true;
                    return Poll::Ready(match end {
                        Ok(frame) => self.end_error(frame).map(Err),
                        Err(err) => Some(Err(err)),
                    });
                }
            }
        }
        // Nothing moved (only credit was due): the slot wakes this task when items come.
        let Some(frame) = self.ready.pop_front() else {
            return Poll::Pending;
        };
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
        Poll::Ready(match (self.decode)(self.codec, &frame.payload) {
            Ok(item) => Some(Ok(item)),
            Err(err) => {
                // The rest of the stream cannot be trusted either.
                self.cancel();
                Some(Err(err))
            }
        })
    }

    /// Sends the server the credit due, if any.
    fn grant(&self, grant: Option<u32>) {
        if let Some(granted) = grant {
            self.connection
                .sink
                .send_control(credit_frame(self.request_id, granted));
        }
    }
}

impl<T> Drop for ItemStream<T> {
    fn drop(&mut self) {
        if !self.ended {
            self.record_end("cancelled", None);
        }
        self.cancel();
    }
}

impl<T> fmt::Debug for ItemStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemStream")
            .field("method", &self.method)
            .field("request_id", &self.request_id)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}
