//! A server stream's items on their way to the wire: the handler's [`Streaming`] mapped to
//! encoded item frames, and the generic helper generated code opens a stream through.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};

use super::item::ItemMessage;
use super::streaming::Streaming;
use super::upload::Upload;
use crate::codec::{Codec, WireMessage};
use crate::error::CallError;
use crate::transport::frame::FrameBuf;

/// The future of one opened stream call: its encoded items, or why it could not start.
pub type OpenFuture = Pin<Box<dyn Future<Output = Result<OutgoingItems, CallError>> + Send>>;

/// The items of an opened server stream, each encoded in the connection's codec, ready to be
/// framed. Opaque: it travels through the server's layers inside a
/// [`Reply`](crate::server::Reply).
pub struct OutgoingItems(BoxStream<'static, Result<EncodedItem, CallError>>);

/// One encoded item, and whether it is the stream's last (an application error).
pub(crate) struct EncodedItem {
    pub(crate) frame: FrameBuf,
    pub(crate) last: bool,
}

impl OutgoingItems {
    /// Encodes each item of `items` as an `M` in `codec`.
    fn encoding<M: ItemMessage>(codec: Codec, items: Streaming<M::Item>) -> Self {
        Self(
            items
                .map(move |item| {
                    let (message, last) = M::from_item(item);
                    let mut frame = FrameBuf::with_capacity(64);
                    codec
                        .encode(&message, frame.payload_writer())
                        .map_err(CallError::Encode)?;
                    Ok(EncodedItem { frame, last })
                })
                .boxed(),
        )
    }
}

impl OutgoingItems {
    /// The next encoded item; `None` once the producer has run out.
    pub(crate) async fn next(&mut self) -> Option<Result<EncodedItem, CallError>> {
        self.0.next().await
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
            Ok(OutgoingItems::encoding::<M>(codec, items))
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
