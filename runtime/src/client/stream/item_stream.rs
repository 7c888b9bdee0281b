//! [`ItemStream`]: the caller's side of a stream call, its items decoded.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;

use super::raw::RawStream;
use crate::codec::Codec;
use crate::error::{Error, ErrorCode};
use crate::metadata::Metadata;
use crate::method::MethodId;
use crate::stream::ItemMessage;

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
    raw: RawStream,
    decode: fn(Codec, Bytes) -> Result<T, Error>,
}

fn decode_item<M: ItemMessage>(codec: Codec, payload: Bytes) -> Result<M::Item, Error> {
    codec.decode_shared::<M>(payload)?.into_item()
}

impl<T> ItemStream<T> {
    /// The items of `raw`, each decoded as an `M`.
    pub(crate) fn new<M: ItemMessage<Item = T>>(raw: RawStream) -> Self {
        Self {
            raw,
            decode: decode_item::<M>,
        }
    }

    /// The method this stream calls.
    pub fn method(&self) -> MethodId {
        self.raw.method()
    }

    /// The reply metadata the server's handler set for this stream (protocol version 4; see
    /// the "Streaming" chapter): waits for the server's first frame on the stream (its
    /// metadata, its first item or its end) without taking an item. Empty when the server
    /// sent none, speaks an older version, or the stream failed before it answered (the
    /// error is then what the stream yields).
    ///
    /// ```no_run
    /// # async fn show(mut stream: wirecall_runtime::client::ItemStream<u64>) {
    /// let unit = stream.metadata().await.get("unit").map(str::to_owned);
    /// # }
    /// ```
    pub async fn metadata(&mut self) -> &Metadata {
        std::future::poll_fn(|cx| self.raw.poll_head(cx)).await;
        self.raw.head()
    }

    /// The trailers the server sent with the stream's end (protocol version 4): `Some` once
    /// the stream has ended with the server's End or Error (empty when it sent none), `None`
    /// before, or when the stream ended otherwise (its deadline, a lost connection, or
    /// dropped items).
    pub fn trailers(&self) -> Option<&Metadata> {
        self.raw.trailers()
    }
}

/// The one reply of a client-streaming call: the server's only item, once its End has come
/// too. The stream's reply metadata and trailers go, as one set, to a surrounding
/// [`with_reply_metadata`](crate::client::reply_metadata::with_reply_metadata). Used by
/// generated code.
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
                    stream.method()
                ),
            })
        }
    };
    // The End follows right behind the reply; an error instead of it fails the call.
    let ended = match stream.next().await {
        Some(Err(err)) => Err(err),
        _ => Ok(reply),
    };
    let mut metadata = stream.raw.head().clone();
    if let Some(trailers) = stream.trailers() {
        // Both sides checked the limits; a merge past them keeps what fits.
        let _ = metadata.merge(trailers);
    }
    if !metadata.is_empty() {
        crate::client::reply_metadata::deliver(metadata);
    }
    ended
}

impl<T> Stream for ItemStream<T> {
    type Item = Result<T, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let payload = match this.raw.poll_item(cx) {
            Poll::Ready(Some(Ok(payload))) => payload,
            Poll::Ready(Some(Err(err))) => return Poll::Ready(Some(Err(err))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => return Poll::Pending,
        };
        Poll::Ready(Some(match (this.decode)(this.raw.codec(), payload) {
            Ok(item) => Ok(item),
            Err(err) => {
                // The rest of the stream cannot be trusted either.
                this.raw.fail(&err);
                Err(err)
            }
        }))
    }
}

impl<T> fmt::Debug for ItemStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemStream")
            .field("method", &self.raw.method())
            .finish_non_exhaustive()
    }
}
