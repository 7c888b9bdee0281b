//! [`Streaming`]: what a handler of a server-streaming method returns.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::stream::{BoxStream, Stream, StreamExt};

/// The items of a server stream, as its handler produces them: any `Stream` of items, boxed.
///
/// A method declared `async fn watch(&self, ..) -> wirecall::Streaming<T>` is a server
/// stream: its handler returns one of these, the server sends each item as the client's
/// credit allows (so a slow consumer pauses the producer, see the book's Streaming chapter),
/// and the generated client yields them as a [`ItemStream`](crate::client::ItemStream). For
/// `T = Result<U, E>`, an `Err` item is the last: the server ends the stream after it.
///
/// Dropping the client's stream, the call's deadline and the connection's end drop the
/// producer at once: write cleanup as `Drop` of what the stream owns.
///
/// ```
/// use wirecall_runtime::stream::Streaming;
///
/// let numbers: Streaming<u32> = Streaming::new(futures::stream::iter(1..=3));
/// let same: Streaming<u32> = Streaming::from_iter(vec![1, 2, 3]);
/// ```
pub struct Streaming<T> {
    items: BoxStream<'static, T>,
}

impl<T> Streaming<T> {
    /// A stream of the items `stream` yields.
    pub fn new(stream: impl Stream<Item = T> + Send + 'static) -> Self {
        Self {
            items: stream.boxed(),
        }
    }

    /// A stream of the items of `items`, in order.
    #[allow(
        clippy::should_implement_trait,
        reason = "also implemented as `FromIterator`; this takes any `IntoIterator` whose iterator is `Send`"
    )]
    pub fn from_iter<I>(items: I) -> Self
    where
        I: IntoIterator<Item = T>,
        I::IntoIter: Send + 'static,
    {
        Self::new(futures::stream::iter(items))
    }

    /// A stream that ends at once.
    pub fn empty() -> Self
    where
        T: Send + 'static,
    {
        Self::new(futures::stream::empty())
    }
}

impl<T: Send + 'static> FromIterator<T> for Streaming<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        Self::new(futures::stream::iter(items.into_iter().collect::<Vec<_>>()))
    }
}

impl<T> Stream for Streaming<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.items.poll_next_unpin(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.items.size_hint()
    }
}

impl<T> fmt::Debug for Streaming<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Streaming").finish_non_exhaustive()
    }
}
