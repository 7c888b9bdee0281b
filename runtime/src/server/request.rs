//! What travels through the server's call pipeline: a [`Request`] in, a [`Reply`] out.

use bytes::Bytes;

use crate::codec::Codec;
use crate::context::CallContext;
use crate::limit::{Limit, Permit};
use crate::metadata::{Metadata, MetadataError};
use crate::method::MethodId;
use crate::server::identity::PeerIdentity;
use crate::server::stream::upload_queue::Upload;
use crate::stream::outgoing::OutgoingItems;
use crate::transport::frame::FrameBuf;

/// One call, as the server's tower layers see it: its [`CallContext`] (request id, service
/// and method, peer, deadline, metadata) and its still encoded arguments.
///
/// The arguments are decoded by the handler's dispatcher, the innermost service, so a layer
/// that refuses a call never pays for decoding it.
#[derive(Debug)]
pub struct Request {
    pub(crate) context: CallContext,
    pub(crate) codec: Codec,
    pub(crate) payload: Bytes,
    /// For an `Open` (a stream call) rather than a `Request` or `Notify`: the items the
    /// client uploads (none for a server stream).
    pub(crate) open: Option<Upload>,
    /// Where the router found the call's service, resolved once when the call was read.
    pub(crate) service: usize,
}

impl Request {
    /// The call's context; the handler sees the same one through
    /// [`CallContext::with_current`]. Reply metadata set here by a layer travels back too.
    pub fn context(&self) -> &CallContext {
        &self.context
    }

    /// The metadata the caller sent (empty from a protocol version 1 peer).
    pub fn metadata(&self) -> &Metadata {
        self.context.metadata()
    }

    /// Who is calling: address, token, TLS client certificate.
    pub fn peer(&self) -> &PeerIdentity {
        self.context.peer()
    }

    /// The service's wire name.
    pub fn service(&self) -> &'static str {
        self.context.service()
    }

    /// The method's name as written in the trait.
    pub fn method_name(&self) -> &'static str {
        self.context.method_name()
    }

    /// The method's wire id.
    pub fn method_id(&self) -> MethodId {
        self.context.method_id()
    }

    /// The codec of the connection the call came on.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// The encoded arguments.
    pub fn payload(&self) -> &Bytes {
        &self.payload
    }

    /// Whether the call opens a stream (protocol version 3): its reply is the stream's items.
    pub fn opens_stream(&self) -> bool {
        self.open.is_some()
    }
}

/// A stream's place under the server's `max_in_flight`.
pub(crate) type Admission = Permit<std::sync::Arc<Limit>>;

/// A handler's encoded reply, or an opened stream's items, as it leaves the server's tower
/// layers. Opaque: a layer passes it on (or returns an error instead).
#[derive(Debug)]
pub struct Reply {
    pub(crate) body: ReplyBody,
    /// A stream's place under the server's `max_in_flight`, held while it is open (a unary
    /// call's ends with the call).
    pub(crate) admission: Option<Admission>,
}

/// What a [`Reply`] holds.
#[derive(Debug)]
pub(crate) enum ReplyBody {
    /// The encoded reply of a unary call.
    Message(FrameBuf),
    /// The items of a stream call, encoded one by one as they come. Boxed: a reply is
    /// returned through every server layer, and a unary reply (most of them) then moves 56
    /// bytes at each, not the 160 an unboxed stream would make every reply.
    Stream(Box<OutgoingItems>),
}

impl Reply {
    /// A unary call's encoded reply.
    pub(crate) fn message(frame: FrameBuf) -> Self {
        Self {
            body: ReplyBody::Message(frame),
            admission: None,
        }
    }

    /// An opened stream's items.
    pub(crate) fn stream(items: OutgoingItems) -> Self {
        Self {
            body: ReplyBody::Stream(Box::new(items)),
            admission: None,
        }
    }

    /// Bytes of the encoded reply (reply metadata included); 0 for a stream.
    pub fn len(&self) -> usize {
        match &self.body {
            ReplyBody::Message(frame) => frame.payload_len(),
            ReplyBody::Stream(_) => 0,
        }
    }

    /// Whether this is an opened stream's items rather than one reply.
    pub fn is_stream(&self) -> bool {
        matches!(self.body, ReplyBody::Stream(_))
    }

    /// Whether the encoded reply is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds a trailer to a stream's reply, sent with the stream's end beside those its
    /// handler sets ([`CallContext::set_trailer`]; the handler's value wins for a key both
    /// set). For a server layer that counts or checks what a stream sends. Fails with
    /// [`MetadataError::NotAStream`] on a unary reply, and as `set_trailer` does otherwise.
    pub fn set_trailer(
        &mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<(), MetadataError> {
        match &self.body {
            ReplyBody::Stream(items) => match items.call() {
                Some(call) => call.set_trailer(key, value),
                None => Err(MetadataError::NotAStream),
            },
            ReplyBody::Message(_) => Err(MetadataError::NotAStream),
        }
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod tests {
    use crate::server::request::Reply;

    /// Every unary reply is returned through each server layer: past 128 bytes each return
    /// is a call to `memcpy` (at 160 bytes, with a stream's items inline, about 400 of I1's
    /// server instructions a call).
    #[test]
    fn a_reply_is_small_enough_to_move_inline() {
        let size = std::mem::size_of::<Result<Reply, crate::error::CallError>>();
        assert!(size <= 64, "a reply grew to {size} bytes");
    }
}
