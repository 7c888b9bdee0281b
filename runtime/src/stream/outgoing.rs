//! Stream items on their way to the wire, whichever side sends them: a handler's
//! [`Streaming`] (a server stream) or a caller's upload, each item encoded in the connection's
//! codec as it is taken.

use std::fmt;
use std::task::{ready, Context, Poll};

use bytes::BytesMut;
use futures::stream::StreamExt;

use super::item::ItemMessage;
use super::streaming::Streaming;
use crate::codec::encoding::Encoding;
use crate::codec::CodecError;
use crate::context::{with_context, CallContext};

/// The items of an opened stream, each encoded in the connection's codec when it is taken,
/// into the buffer the stream frames it in: a server stream's (opaque, it travels through the
/// server's layers inside a [`Reply`](crate::server::Reply)), or a caller's upload.
pub struct OutgoingItems {
    source: Box<dyn ItemSource>,
    /// A server stream's call, current while its items are produced (so the producer can
    /// set trailers), and the keeper of its reply metadata and trailers.
    call: Option<CallContext>,
}

/// A producer whose items come out encoded: the item type, known to the generated code, is
/// erased here, so that the tasks that send stream items are not generic.
trait ItemSource: Send {
    /// Polls the producer for its next item and appends it, encoded as `encoding` says, to `out`:
    /// `Some(last)` when it did (`last`: an application error, the stream's last item),
    /// `None` once the producer has run out. An error leaves `out` with part of an item in
    /// it.
    fn poll_encode(
        &mut self,
        cx: &mut Context<'_>,
        encoding: Encoding,
        out: &mut BytesMut,
    ) -> Poll<Option<Result<bool, CodecError>>>;
}

/// The items of a `Streaming<M::Item>`, encoded as `M`s.
struct EncodedItems<M: ItemMessage> {
    items: Streaming<M::Item>,
}

impl<M: ItemMessage> ItemSource for EncodedItems<M> {
    fn poll_encode(
        &mut self,
        cx: &mut Context<'_>,
        encoding: Encoding,
        out: &mut BytesMut,
    ) -> Poll<Option<Result<bool, CodecError>>> {
        let Some(item) = ready!(self.items.poll_next_unpin(cx)) else {
            return Poll::Ready(None);
        };
        let (message, last) = M::from_item(item);
        Poll::Ready(Some(encoding.encode(&message, out).map(|()| last)))
    }
}

impl OutgoingItems {
    /// Encodes each item of `items` as an `M`.
    pub(crate) fn encoding<M: ItemMessage>(items: Streaming<M::Item>) -> Self {
        Self {
            source: Box::new(EncodedItems::<M> { items }),
            call: None,
        }
    }

    /// Makes `call` current while the items are produced.
    pub(crate) fn run_in(&mut self, call: CallContext) {
        self.call = Some(call);
    }

    /// The stream's call, if it runs in one.
    pub(crate) fn call(&self) -> Option<&CallContext> {
        self.call.as_ref()
    }

    /// Runs `f` with the stream's call current for all of it: the items `f` polls for in a
    /// row pay for making the call current once, not once each (for a stream of 1 KiB
    /// items, moving the call's context in and out for each item cost its server about 300
    /// instructions an item). Meanwhile [`call`](Self::call) is `None`.
    pub(crate) fn in_call<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let Some(call) = self.call.take() else {
            return f(self);
        };
        let mut current = Some(call);
        let output = with_context(&mut current, || f(self));
        self.call = current;
        output
    }

    /// Polls the producer for its next item, appending it encoded as `encoding` says to `out` (see
    /// `ItemSource::poll_encode`).
    pub(crate) fn poll_encode(
        &mut self,
        cx: &mut Context<'_>,
        encoding: Encoding,
        out: &mut BytesMut,
    ) -> Poll<Option<Result<bool, CodecError>>> {
        let source = &mut self.source;
        match &mut self.call {
            None => source.poll_encode(cx, encoding, out),
            call => with_context(call, || source.poll_encode(cx, encoding, out)),
        }
    }
}

impl fmt::Debug for OutgoingItems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutgoingItems").finish_non_exhaustive()
    }
}
