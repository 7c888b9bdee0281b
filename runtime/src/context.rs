//! The context of the call a server handler is serving: who calls, which request, how long
//! the caller waits, the metadata it sent, and the metadata to send back.
//!
//! Handlers keep their plain signatures; the context is set around every poll of the call's
//! future, and read with [`CallContext::with_current`] (or cloned with
//! [`CallContext::current`]) from anywhere inside the handler, including the functions it
//! calls. Like a task-local, it does not follow the handler into tasks it spawns.
//!
//! The context lives inline in the call's future and moves into a thread-local only while
//! that future is polled: no allocation per call, and nothing to pay for a handler that never
//! looks.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

use crate::codec::encoding::Encoding;
use crate::codec::Codec;
use crate::metadata::{Metadata, MetadataError};
use crate::method::{MethodDescriptor, MethodId, ServiceDescriptor};
use crate::server::identity::PeerIdentity;
use crate::trace::TraceContext;

thread_local! {
    /// The context of the call whose future this thread is polling, if any.
    static CURRENT: RefCell<Option<CallContext>> = const { RefCell::new(None) };
}

/// What a handler can learn about the call it serves. See the module docs.
///
/// ```
/// use wirecall_runtime::CallContext;
///
/// // Called from inside a handler (elsewhere it returns `None`).
/// fn tenant_of_this_call() -> Option<String> {
///     CallContext::with_current(|call| {
///         call.set_reply_metadata("served-by", "echo-1").ok();
///         call.metadata().get("tenant").unwrap_or("none").to_owned()
///     })
/// }
/// assert_eq!(tenant_of_this_call(), None);
/// ```
#[derive(Debug)]
pub struct CallContext {
    pub(crate) request_id: u64,
    /// The method's name and id, and its service's name: one pointer each, since the context
    /// is moved into the thread-local and back on every poll of the call.
    pub(crate) method: &'static MethodDescriptor,
    pub(crate) service: &'static ServiceDescriptor,
    pub(crate) peer: Arc<PeerIdentity>,
    pub(crate) deadline: Option<Instant>,
    pub(crate) metadata: Metadata,
    pub(crate) trace: Option<TraceContext>,
    /// Whether the connection can carry reply metadata (protocol version 2).
    pub(crate) replies_carry_metadata: bool,
    /// Whether it can carry a stream's reply metadata and trailers (protocol version 4).
    pub(crate) streams_carry_metadata: bool,
    /// The connection's protocol version, which says how JSON writes the reply's byte strings.
    pub(crate) protocol_version: u8,
    /// The reply metadata and a stream's trailers, set by the handler. Boxed, and only once
    /// an entry is set: most calls send none back. One cell for both keeps the context at
    /// 120 bytes, which the compiler moves inline, where 136 took a call to `memcpy`: the
    /// context is moved into the thread-local and back on every poll of the call.
    pub(crate) sent_back: RefCell<Option<Box<SentBack>>>,
    /// A copy made by [`current`](Self::current): its reply metadata goes to the call it was
    /// copied from, while that call is current, rather than into its own unused cell.
    pub(crate) copied: bool,
}

impl CallContext {
    /// Runs `f` with the context of the call this task is serving; `None` outside a handler.
    pub fn with_current<R>(f: impl FnOnce(&CallContext) -> R) -> Option<R> {
        CURRENT
            .try_with(|current| current.borrow().as_ref().map(f))
            .ok()
            .flatten()
    }

    /// A copy of the current call's context (its metadata included); `None` outside a
    /// handler. Prefer [`with_current`](Self::with_current) when a look is enough.
    pub fn current() -> Option<CallContext> {
        Self::with_current(CallContext::snapshot)
    }

    fn snapshot(&self) -> CallContext {
        CallContext {
            request_id: self.request_id,
            method: self.method,
            service: self.service,
            peer: Arc::clone(&self.peer),
            deadline: self.deadline,
            metadata: self.metadata.clone(),
            trace: self.trace,
            replies_carry_metadata: self.replies_carry_metadata,
            streams_carry_metadata: self.streams_carry_metadata,
            protocol_version: self.protocol_version,
            sent_back: RefCell::new(None),
            copied: true,
        }
    }

    /// The caller's request id on its connection.
    pub fn request_id(&self) -> u64 {
        self.request_id
    }

    /// The method called.
    pub fn method_id(&self) -> MethodId {
        self.method.id
    }

    /// The method's name as written in the trait.
    pub fn method_name(&self) -> &'static str {
        self.method.name
    }

    /// The service's wire name.
    pub fn service(&self) -> &'static str {
        self.service.name
    }

    /// Who is calling: address, token, TLS client certificate.
    pub fn peer(&self) -> &PeerIdentity {
        &self.peer
    }

    /// When the caller stops waiting (counted from when the server read the request), if it
    /// sent a deadline.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Time left before the deadline (zero once it passed); `None` without a deadline.
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|at| at.saturating_duration_since(Instant::now()))
    }

    /// The metadata the caller sent with this call (empty from a protocol version 1 peer).
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// The W3C trace context of the call (from the caller's `traceparent`, with a fresh span
    /// id for this server-side call), if the caller sent one.
    pub fn trace(&self) -> Option<TraceContext> {
        self.trace
    }

    /// Adds an entry to the metadata sent back with the reply: a unary call's Response or
    /// Error, or a stream's head, sent before its first item (see the "Streaming" chapter).
    /// On a protocol version 1 connection it is dropped (such a peer cannot receive
    /// metadata), and so is a stream's below version 4, or once its first item has gone.
    /// Fails on an invalid key or when the limits would be exceeded, and, on a copy made by
    /// [`current`](Self::current), with [`MetadataError::CallNotCurrent`] when it is not used
    /// from the call's own handler while the call runs.
    pub fn set_reply_metadata(
        &self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<(), MetadataError> {
        self.insert_into(|sent| &mut sent.reply_metadata, key, value)
    }

    /// Adds a trailer: an entry sent with a stream's end (its End, or the Error of a handler
    /// that failed), for what is only known once the items are out (a count, a checksum,
    /// status details). Settable from the handler and from the stream it returns, while the
    /// stream runs. A unary call has one reply, so its trailers join its reply metadata. Not
    /// sent below protocol version 4, nor when the stream is stopped by its deadline, a
    /// cancel or a shutdown. Fails as [`set_reply_metadata`](Self::set_reply_metadata) does.
    pub fn set_trailer(
        &self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<(), MetadataError> {
        if self.method.shape.is_stream() {
            self.insert_into(|sent| &mut sent.trailers, key, value)
        } else {
            self.set_reply_metadata(key, value)
        }
    }

    /// Sets `key` in the entries `entries` picks of this call, or, on a copy, of the call it
    /// was copied from, if that is still the call this task serves (the same request on the
    /// same connection).
    fn insert_into(
        &self,
        entries: fn(&mut SentBack) -> &mut Metadata,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<(), MetadataError> {
        if !self.copied {
            return insert_sent_back(&self.sent_back, entries, key, value);
        }
        Self::with_current(|call| {
            let same_call =
                call.request_id == self.request_id && Arc::ptr_eq(&call.peer, &self.peer);
            if same_call {
                insert_sent_back(&call.sent_back, entries, key, value)
            } else {
                Err(MetadataError::CallNotCurrent)
            }
        })
        .unwrap_or(Err(MetadataError::CallNotCurrent))
    }

    /// `future`, with this context current while it is polled.
    pub(crate) fn around<F: Future + Unpin>(self, future: F) -> InCall<F> {
        InCall {
            context: Some(self),
            future,
        }
    }

    /// A stream's reply metadata, taken, if there is any and the connection can carry it.
    pub(crate) fn take_stream_head(&self) -> Option<Metadata> {
        take_if(
            &self.sent_back,
            |sent| &mut sent.reply_metadata,
            self.streams_carry_metadata,
        )
    }

    /// A stream's trailers, taken, if there are any and the connection can carry them.
    pub(crate) fn take_trailers(&self) -> Option<Metadata> {
        take_if(
            &self.sent_back,
            |sent| &mut sent.trailers,
            self.streams_carry_metadata,
        )
    }

    /// What a unary reply of the current call starts with: its reply metadata, taken if the
    /// connection can carry it (and any was set), and how `codec` writes the reply on the
    /// call's connection. Outside a call: no metadata, and the newest version's encoding.
    /// One look at the thread-local for both, since every unary reply needs both.
    pub(crate) fn take_reply_head(codec: Codec) -> (Option<Metadata>, Encoding) {
        Self::with_current(|call| {
            let metadata = take_if(
                &call.sent_back,
                |sent| &mut sent.reply_metadata,
                call.replies_carry_metadata,
            );
            (metadata, Encoding::new(codec, call.protocol_version))
        })
        .unwrap_or_else(|| (None, codec.into()))
    }
}

/// What a handler set to send back with its call's reply: kept in one box, made at the first
/// entry set.
#[derive(Debug, Default)]
pub(crate) struct SentBack {
    /// Sent with a unary reply, or as a stream's head before its first item.
    reply_metadata: Metadata,
    /// Sent with a stream's end.
    trailers: Metadata,
}

/// The entries `entries` picks in `cell`, taken, if `carried` and there are any.
fn take_if(
    cell: &RefCell<Option<Box<SentBack>>>,
    entries: fn(&mut SentBack) -> &mut Metadata,
    carried: bool,
) -> Option<Metadata> {
    if !carried {
        return None;
    }
    let mut sent = cell.borrow_mut();
    let taken = std::mem::take(entries(sent.as_mut()?));
    (!taken.is_empty()).then_some(taken)
}

/// Sets `key` in the entries `entries` picks in `cell`, making the box at the first entry.
fn insert_sent_back(
    cell: &RefCell<Option<Box<SentBack>>>,
    entries: fn(&mut SentBack) -> &mut Metadata,
    key: impl Into<String>,
    value: impl Into<String>,
) -> Result<(), MetadataError> {
    entries(cell.borrow_mut().get_or_insert_with(Box::default)).insert(key, value)
}

/// A call's future with its context (see [`CallContext::around`]).
#[derive(Debug)]
pub(crate) struct InCall<F> {
    context: Option<CallContext>,
    future: F,
}

impl<F> InCall<F> {
    /// The call's context, taken out (between polls): a stream's goes on with its items.
    pub(crate) fn take_context(&mut self) -> Option<CallContext> {
        self.context.take()
    }
}

impl<F: Future + Unpin> Future for InCall<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let future = &mut this.future;
        with_context(&mut this.context, || Pin::new(future).poll(cx))
    }
}

/// Runs `f` with `context` (if any) as the current call's, and puts it back after.
pub(crate) fn with_context<R>(context: &mut Option<CallContext>, f: impl FnOnce() -> R) -> R {
    // Swapped in for the call and back out after it (also when it panics), so a call polled
    // inside another one sees its own context and then the outer one again.
    let previous = CURRENT.with(|current| current.replace(context.take()));
    let restore = Restore {
        slot: context,
        previous: Some(previous),
    };
    let output = f();
    drop(restore);
    output
}

/// Puts the polled call's context back into its future, and the outer one back into the
/// thread-local.
struct Restore<'a> {
    slot: &'a mut Option<CallContext>,
    previous: Option<Option<CallContext>>,
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let previous = self.previous.take().unwrap_or_default();
        *self.slot = CURRENT.with(|current| current.replace(previous));
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod tests {
    use crate::context::CallContext;

    /// A context is moved into the thread-local and back on every poll of its call. Up to 128
    /// bytes, LLVM moves it inline; past that, each move is a call to `memcpy` (five a call
    /// at 136 bytes, about 160 instructions of I1's server count).
    #[test]
    fn a_context_is_small_enough_to_move_inline() {
        let size = std::mem::size_of::<Option<CallContext>>();
        assert!(size <= 128, "a call's context grew to {size} bytes");
    }
}
