//! Stream items on their way to the wire, whichever side sends them: a handler's
//! [`Streaming`] (a server stream) or a caller's upload, each item encoded in the connection's
//! codec as it is taken; and the generic helpers generated servers open a stream through.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Bytes, BytesMut};
use futures::stream::StreamExt;

use super::item::ItemMessage;
use super::streaming::Streaming;
use super::upload::Upload;
use crate::codec::{Codec, CodecError, WireMessage};
use crate::error::CallError;

/// The future of one opened stream call: its encoded items, or why it could not start.
pub type OpenFuture = Pin<Box<dyn Future<Output = Result<OutgoingItems, CallError>> + Send>>;

/// The items of an opened stream, each encoded in the connection's codec when it is taken,
/// into the buffer the stream frames it in: a server stream's (opaque, it travels through the
/// server's layers inside a [`Reply`](crate::server::Reply)), or a caller's upload.
pub struct OutgoingItems(Box<dyn ItemSource>);

/// A producer whose items come out encoded: the item type, known to the generated code, is
/// erased here, so that the tasks that send stream items are not generic.
trait ItemSource: Send {
    /// Polls the producer for its next item and appends it, encoded in `codec`, to `out`:
    /// `Some(last)` when it did (`last`: an application error, the stream's last item),
    /// `None` once the producer has run out. An error leaves `out` with part of an item in
    /// it.
    fn poll_encode(
        &mut self,
        cx: &mut Context<'_>,
        codec: Codec,
        out: &mut BytesMut,
    ) -> Poll<Option<Result<bool, CodecError>>>;
}

/// The items of a `Streaming<M::Item>`, encoded as `M`s.
struct Encoding<M: ItemMessage> {
    items: Streaming<M::Item>,
}

impl<M: ItemMessage> ItemSource for Encoding<M> {
    fn poll_encode(
        &mut self,
        cx: &mut Context<'_>,
        codec: Codec,
        out: &mut BytesMut,
    ) -> Poll<Option<Result<bool, CodecError>>> {
        let Some(item) = ready!(self.items.poll_next_unpin(cx)) else {
            return Poll::Ready(None);
        };
        let (message, last) = M::from_item(item);
        Poll::Ready(Some(codec.encode(&message, out).map(|()| last)))
    }
}

impl OutgoingItems {
    /// Encodes each item of `items` as an `M`.
    pub(crate) fn encoding<M: ItemMessage>(items: Streaming<M::Item>) -> Self {
        Self(Box::new(Encoding::<M> { items }))
    }

    /// Polls the producer for its next item, appending it encoded in `codec` to `out` (see
    /// `ItemSource::poll_encode`).
    pub(crate) fn poll_encode(
        &mut self,
        cx: &mut Context<'_>,
        codec: Codec,
        out: &mut BytesMut,
    ) -> Poll<Option<Result<bool, CodecError>>> {
        self.0.poll_encode(cx, codec, out)
    }
}

impl fmt::Debug for OutgoingItems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutgoingItems").finish_non_exhaustive()
    }
}

/// Decodes `payload` as `A`, runs `handler` on it, and encodes the items of the stream it
/// returns as `M`s: what a generated server's `open` calls for each server-streaming method.
/// A bad payload fails without running anything.
pub fn serve_stream<A, M, F, Fut>(codec: Codec, payload: Bytes, handler: F) -> OpenFuture
where
    A: WireMessage,
    M: ItemMessage,
    F: FnOnce(A) -> Fut + Send + 'static,
    Fut: Future<Output = Streaming<M::Item>> + Send + 'static,
{
    match codec.decode::<A>(&payload) {
        Err(err) => Box::pin(std::future::ready(Err(CallError::BadRequest(err)))),
        Ok(args) => Box::pin(async move {
            let items = handler(args).await;
            Ok(OutgoingItems::encoding::<M>(items))
        }),
    }
}

/// Like [`serve_stream`], for a bidirectional method: `handler` also gets the client's
/// uploaded items, decoded as `U`s.
pub fn serve_bidi_stream<A, U, M, F, Fut>(
    codec: Codec,
    payload: Bytes,
    upload: Upload,
    handler: F,
) -> OpenFuture
where
    A: WireMessage,
    U: ItemMessage,
    M: ItemMessage,
    F: FnOnce(A, Streaming<U::Item>) -> Fut + Send + 'static,
    Fut: Future<Output = Streaming<M::Item>> + Send + 'static,
{
    let uploaded = upload.into_items::<U>(codec);
    serve_stream::<A, M, _, _>(codec, payload, move |args| handler(args, uploaded))
}

/// For a client-streaming method: `handler` gets the arguments and the uploaded items
/// (decoded as `U`s) and returns one reply, which travels as the server's only item (an `M`).
pub fn serve_client_stream<A, U, M, F, Fut>(
    codec: Codec,
    payload: Bytes,
    upload: Upload,
    handler: F,
) -> OpenFuture
where
    A: WireMessage,
    U: ItemMessage,
    M: ItemMessage,
    F: FnOnce(A, Streaming<U::Item>) -> Fut + Send + 'static,
    Fut: Future<Output = M::Item> + Send + 'static,
{
    let uploaded = upload.into_items::<U>(codec);
    serve_stream::<A, M, _, _>(codec, payload, move |args| async move {
        let reply = handler(args, uploaded).await;
        Streaming::new(futures::stream::once(std::future::ready(reply)))
    })
}

/// The open future for a method id the service does not have.
pub fn unknown_stream(method: crate::method::MethodId) -> OpenFuture {
    Box::pin(std::future::ready(Err(CallError::UnknownMethod(method))))
}
