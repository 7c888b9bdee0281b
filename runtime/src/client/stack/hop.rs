//! [`Hop`]: the future of one stage of the stack, handing the call to the next: the next
//! stage's own future, held inline, for the path a common call takes (no layers, no breaker,
//! one server); a boxed one for the others.
//!
//! The stages are plain functions returning a `Hop` rather than `async fn`s: each `async fn`
//! would be one more state machine around the next, built on every call and moved, whole,
//! into its parent's; a `Hop` holds the next future where it is.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

pin_project_lite::pin_project! {
    /// The next stage's future, inline or boxed.
    #[project = HopProj]
    pub(crate) enum Hop<'a, F, T> {
        /// The common path's next stage.
        Inline { #[pin] next: F },
        /// Any other path.
        Boxed { next: Pin<Box<dyn Future<Output = T> + Send + 'a>> },
    }
}

impl<'a, F, T> Hop<'a, F, T> {
    pub(crate) fn inline(next: F) -> Self {
        Self::Inline { next }
    }

    pub(crate) fn boxed(next: impl Future<Output = T> + Send + 'a) -> Self {
        Self::from_box(Box::pin(next))
    }

    /// A next stage boxed already.
    pub(crate) fn from_box(next: Pin<Box<dyn Future<Output = T> + Send + 'a>>) -> Self {
        Self::Boxed { next }
    }
}

impl<F: Future<Output = T>, T> Future for Hop<'_, F, T> {
    type Output = T;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match self.project() {
            HopProj::Inline { next } => next.poll(cx),
            HopProj::Boxed { next } => next.as_mut().poll(cx),
        }
    }
}
