//! What travels through the server's call pipeline: a [`Request`] in, a [`Reply`] out.

use bytes::Bytes;

use crate::codec::Codec;
use crate::context::CallContext;
use crate::metadata::Metadata;
use crate::method::MethodId;
use crate::server::identity::PeerIdentity;
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
}

/// A handler's encoded reply, as it leaves the server's tower layers. Opaque: a layer passes
/// it on (or returns an error instead).
#[derive(Debug)]
pub struct Reply(pub(crate) FrameBuf);

impl Reply {
    /// Bytes of the encoded reply (reply metadata included).
    pub fn len(&self) -> usize {
        self.0.payload_len()
    }

    /// Whether the encoded reply is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
