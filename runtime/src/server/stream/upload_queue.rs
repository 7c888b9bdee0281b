//! An upload on the server: the items a client streams to a handler (client and
//! bidirectional streaming), queued as they are read, handed to the handler as a
//! [`Streaming`], and paid for with `Credit` frames as the handler takes them (wire chapter,
//! "Credit").
//!
//! What waits here is bounded by the credit the server granted: a client that sends more is
//! a protocol violation, which closes the connection.

use std::collections::VecDeque;
use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures::Stream;

use crate::codec::Codec;
use crate::stream::credit::credit_frame;
use crate::stream::credit_window::{Neighbours, ReceiveWindow, WindowSize};
use crate::stream::item::ItemMessage;
use crate::stream::streaming::Streaming;
use crate::transport::writer::FrameSink;

/// The items a client uploads to one call, for its handler. Opaque: generated code turns it
/// into the handler's `Streaming<T>` argument; a stream call without an upload has an empty
/// one.
pub struct Upload {
    source: UploadSource,
}

/// Where an upload's items come from.
enum UploadSource {
    /// The method takes no upload.
    None,
    /// `Item` frames, queued by a wirecall connection's read loop.
    Frames(Arc<UploadQueue>),
    /// The messages of a gRPC request body, read as the handler takes them.
    #[cfg(feature = "grpc")]
    Grpc(crate::grpc::upload::GrpcUpload),
}

impl Default for Upload {
    /// No upload: the call's method takes none.
    fn default() -> Self {
        Self::none()
    }
}

impl fmt::Debug for Upload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upload")
            .field("open", &!matches!(self.source, UploadSource::None))
            .finish()
    }
}

impl Upload {
    /// No upload: the call's method takes none.
    pub(crate) fn none() -> Self {
        Self {
            source: UploadSource::None,
        }
    }

    /// The items arriving in `queue`.
    pub(crate) fn new(queue: Arc<UploadQueue>) -> Self {
        Self {
            source: UploadSource::Frames(queue),
        }
    }

    /// The items of a gRPC request body.
    #[cfg(feature = "grpc")]
    pub(crate) fn grpc(upload: crate::grpc::upload::GrpcUpload) -> Self {
        Self {
            source: UploadSource::Grpc(upload),
        }
    }

    /// The handler's stream of the uploaded items, each decoded as an `M` in `codec`. An
    /// item that does not decode ends the stream, and the call then fails with `BadRequest`.
    /// Used by generated code.
    #[doc(hidden)]
    pub fn into_items<M: ItemMessage>(self, codec: Codec) -> Streaming<M::Item> {
        match self.source {
            UploadSource::None => Streaming::empty(),
            UploadSource::Frames(queue) => Streaming::new(UploadItems::<M> {
                queue,
                codec,
                _message: PhantomData,
            }),
            #[cfg(feature = "grpc")]
            UploadSource::Grpc(upload) => upload.into_items::<M>(codec),
        }
    }
}

/// The items of one upload, queued by the connection's read loop.
pub(crate) struct UploadQueue {
    state: Mutex<UploadState>,
    sink: FrameSink,
    request_id: u64,
}

struct UploadState {
    items: VecDeque<Bytes>,
    /// The client sent its End.
    ended: bool,
    /// The handler dropped its stream: items are counted and discarded.
    closed: bool,
    waker: Option<Waker>,
    window: ReceiveWindow,
    /// Why the upload failed on this side (an item that did not decode).
    failure: Option<String>,
}

impl UploadQueue {
    /// The queue of upload `request_id`, and its first credit (`window.items`), queued on
    /// `sink` for the client.
    pub(crate) fn open(sink: FrameSink, request_id: u64, window: WindowSize) -> Arc<Self> {
        sink.send_control(credit_frame(request_id, window.items));
        Arc::new(Self {
            state: Mutex::new(UploadState {
                items: VecDeque::new(),
                ended: false,
                closed: false,
                waker: None,
                window: ReceiveWindow::granted(window),
                failure: None,
            }),
            sink,
            request_id,
        })
    }

    fn lock(&self) -> MutexGuard<'_, UploadState> {
        // Every operation leaves the state whole, so a poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues an item the client sent; an error (a protocol violation) when it had no credit
    /// for it or had ended its upload.
    pub(crate) fn push(&self, item: Bytes) -> Result<(), String> {
        let waker = {
            let mut state = self.lock();
            if state.ended {
                return Err(format!(
                    "an Item on stream {} after its upload's End",
                    self.request_id
                ));
            }
            if !state.window.receive(item.len()) {
                return Err(format!(
                    "an upload Item on stream {} without credit",
                    self.request_id
                ));
            }
            if state.closed {
                return Ok(());
            }
            state.items.push_back(item);
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// The client's End; an error (a protocol violation) for a second one.
    pub(crate) fn end(&self) -> Result<(), String> {
        let waker = {
            let mut state = self.lock();
            if state.ended {
                return Err(format!("a second End on stream {}", self.request_id));
            }
            state.ended = true;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// Why the upload failed on this side, if it did.
    pub(crate) fn failure(&self) -> Option<String> {
        self.lock().failure.clone()
    }

    fn poll_item(&self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let (item, grant) = {
            let mut state = self.lock();
            match state.items.pop_front() {
                Some(item) => {
                    let grant = state
                        .window
                        .take(Neighbours::ALONE)
                        .filter(|_| !state.ended);
                    (item, grant)
                }
                None if state.ended => return Poll::Ready(None),
                None => {
                    if !state
                        .waker
                        .as_ref()
                        .is_some_and(|w| w.will_wake(cx.waker()))
                    {
                        state.waker = Some(cx.waker().clone());
                    }
                    return Poll::Pending;
                }
            }
        };
        if let Some(granted) = grant {
            self.sink
                .send_control(credit_frame(self.request_id, granted));
        }
        Poll::Ready(Some(item))
    }

    /// The handler stopped reading (`failure`: because an item did not decode).
    fn close(&self, failure: Option<String>) {
        let mut state = self.lock();
        state.closed = true;
        state.items.clear();
        if failure.is_some() {
            state.failure = failure;
        }
    }
}

/// The handler's side of an upload: decodes each item as it is taken.
struct UploadItems<M> {
    queue: Arc<UploadQueue>,
    codec: Codec,
    _message: PhantomData<fn() -> M>,
}

impl<M: ItemMessage> Stream for UploadItems<M> {
    type Item = M::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<M::Item>> {
        let Some(payload) = std::task::ready!(self.queue.poll_item(cx)) else {
            return Poll::Ready(None);
        };
        match self
            .codec
            .decode_shared::<M>(payload)
            .map_err(crate::error::Error::from)
            .and_then(M::into_item)
        {
            Ok(item) => Poll::Ready(Some(item)),
            Err(err) => {
                self.queue
                    .close(Some(format!("an upload item did not decode: {err}")));
                Poll::Ready(None)
            }
        }
    }
}

impl<M> Drop for UploadItems<M> {
    fn drop(&mut self) {
        self.queue.close(None);
    }
}
