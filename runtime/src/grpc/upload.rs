//! A gRPC call's upload: the messages of its request body after the arguments, decoded as
//! the handler takes them. Nothing is read ahead, so HTTP/2 flow control is the upload's
//! credit: a client that sends faster than the handler reads is held back by its window.

use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};

use futures::Stream;

use super::messages::Messages;
use super::status::{Code, Status};
use crate::codec::Codec;
use crate::stream::item::ItemMessage;
use crate::stream::streaming::Streaming;

/// Why an upload ended early on the server's side (a message that did not decode, a body
/// cut off): the call then ends with this status, whatever the handler returned.
#[derive(Clone, Default)]
pub(crate) struct UploadFailure(Arc<Mutex<Option<Status>>>);

impl UploadFailure {
    fn set(&self, status: Status) {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(status);
    }

    /// The failure, if the upload had one.
    pub(crate) fn take(&self) -> Option<Status> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// The rest of a request body, for the handler.
pub(crate) struct GrpcUpload {
    pub(crate) messages: Messages,
    pub(crate) failure: UploadFailure,
}

impl GrpcUpload {
    /// The handler's stream of items, each message decoded as an `M`.
    pub(crate) fn into_items<M: ItemMessage>(self, codec: Codec) -> Streaming<M::Item> {
        Streaming::new(UploadItems::<M> {
            messages: self.messages,
            failure: self.failure,
            codec,
            done: false,
            _message: PhantomData,
        })
    }
}

struct UploadItems<M> {
    messages: Messages,
    failure: UploadFailure,
    codec: Codec,
    done: bool,
    _message: PhantomData<fn() -> M>,
}

impl<M: ItemMessage> Stream for UploadItems<M> {
    type Item = M::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<M::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        let status = match ready!(Pin::new(&mut self.messages).poll_next(cx)) {
            None => {
                self.done = true;
                return Poll::Ready(None);
            }
            Some(Ok(payload)) => match self
                .codec
                .decode_shared::<M>(payload)
                .map_err(crate::error::Error::from)
                .and_then(M::into_item)
            {
                Ok(item) => return Poll::Ready(Some(item)),
                Err(err) => Status::new(
                    Code::InvalidArgument,
                    format!("an upload message did not decode: {err}"),
                ),
            },
            Some(Err(status)) => status,
        };
        self.failure.set(status);
        self.done = true;
        Poll::Ready(None)
    }
}
