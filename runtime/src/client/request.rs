//! What travels through a channel's tower layers: a [`Request`] in, a [`Reply`] out, and the
//! innermost service that puts a request on the connection.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::connection::Outgoing;
use super::ChannelShared;
use crate::codec::{Codec, CodecError, WireMessage};
use crate::error::Error;
use crate::metadata::{Metadata, MetadataError};
use crate::method::MethodId;
use crate::trace::TraceContext;

/// Arguments whose type the layers do not know; encoded once the connection (and so the
/// codec) is known.
pub(crate) trait EncodeArgs: Send {
    fn encode_to(&self, codec: Codec, dst: &mut BytesMut) -> Result<(), CodecError>;
}

impl<A: WireMessage> EncodeArgs for A {
    fn encode_to(&self, codec: Codec, dst: &mut BytesMut) -> Result<(), CodecError> {
        codec.encode(self, dst)
    }
}

/// Arguments already encoded in the connection's codec
/// ([`Channel::call_raw`](crate::Channel::call_raw)), copied into the frame untouched.
pub(crate) struct RawArgs(pub(crate) Bytes);

impl EncodeArgs for Box<dyn EncodeArgs> {
    fn encode_to(&self, codec: Codec, dst: &mut BytesMut) -> Result<(), CodecError> {
        (**self).encode_to(codec, dst)
    }
}

impl EncodeArgs for RawArgs {
    fn encode_to(&self, _codec: Codec, dst: &mut BytesMut) -> Result<(), CodecError> {
        dst.extend_from_slice(&self.0);
        Ok(())
    }
}

/// One call, as a channel's tower layers see it
/// ([`ChannelBuilder::layer`](crate::ChannelBuilder::layer)): the method, its deadline, the
/// metadata it carries (a layer may add to it) and its arguments, encoded only when the
/// innermost service sends them.
pub struct Request {
    pub(crate) method: MethodId,
    pub(crate) one_way: bool,
    pub(crate) timeout: Option<Duration>,
    pub(crate) metadata: Option<Arc<Metadata>>,
    pub(crate) trace: Option<TraceContext>,
    pub(crate) args: Box<dyn EncodeArgs>,
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("one_way", &self.one_way)
            .field("timeout", &self.timeout)
            .field("metadata", &self.metadata)
            .finish_non_exhaustive()
    }
}

impl Request {
    /// The method called.
    pub fn method_id(&self) -> MethodId {
        self.method
    }

    /// Whether it is a one-way call (no reply is awaited; its [`Reply`] is empty).
    pub fn is_one_way(&self) -> bool {
        self.one_way
    }

    /// The call's deadline, which also travels to the server.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Changes the call's deadline.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.timeout = timeout;
    }

    /// The metadata the call carries.
    pub fn metadata(&self) -> &Metadata {
        static EMPTY: Metadata = Metadata::new();
        self.metadata.as_deref().unwrap_or(&EMPTY)
    }

    /// Adds `key: value` to this call's metadata (replacing a value already set for `key`).
    pub fn insert_metadata(
        &mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<(), MetadataError> {
        Arc::make_mut(self.metadata.get_or_insert_with(Default::default)).insert(key, value)
    }
}

/// A successful reply, as it leaves the innermost service: still encoded, decoded by the
/// generated method once it has passed every layer. Errors (the server's included) travel as
/// the layers' errors instead.
#[derive(Debug)]
pub struct Reply {
    pub(crate) payload: Bytes,
    pub(crate) codec: Codec,
}

impl Reply {
    /// The encoded reply.
    pub fn payload(&self) -> &Bytes {
        &self.payload
    }

    /// The codec it is encoded with.
    pub fn codec(&self) -> Codec {
        self.codec
    }
}

/// The innermost service of a layered channel: sends a request on the channel's current
/// connection (dialling again when it broke) and waits for the reply.
#[derive(Clone)]
pub(crate) struct Connector {
    pub(crate) shared: Arc<ChannelShared>,
}

type ConnectorFuture = Pin<Box<dyn Future<Output = Result<Reply, Error>> + Send>>;

impl tower::Service<Request> for Connector {
    type Response = Reply;
    type Error = Error;
    type Future = ConnectorFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> ConnectorFuture {
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let Request {
                method,
                one_way,
                timeout,
                metadata,
                trace,
                args,
            } = request;
            let outgoing = Outgoing {
                metadata: metadata.as_deref(),
                trace,
            };
            if one_way {
                shared.send_notify(method, args, timeout, outgoing).await?;
                // No reply to decode: the codec is only what the reply says it is in.
                let codec = shared.current().codec;
                return Ok(Reply {
                    payload: Bytes::new(),
                    codec,
                });
            }
            let (payload, codec) = shared.send_call(method, args, timeout, outgoing).await?;
            Ok(Reply { payload, codec })
        })
    }
}
