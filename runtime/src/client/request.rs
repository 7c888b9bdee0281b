//! What travels through a channel's tower layers: a [`Request`] in, a [`Reply`] out.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::args::CallArgs;
use super::stream_opener::{ErasedStream, StreamOpener};
use crate::codec::Codec;
use crate::metadata::{Metadata, MetadataError};
use crate::method::MethodId;
use crate::policy::table::MethodState;
use crate::trace::TraceContext;

/// One call, as a channel's tower layers see it
/// ([`ChannelBuilder::layer`](crate::ChannelBuilder::layer)): the method, its deadline, the
/// metadata it carries (a layer may add to it) and its arguments, encoded only when the
/// innermost service sends them.
///
/// Opening a stream call is a `Request` too ([`is_stream`](Self::is_stream)): its [`Reply`]
/// comes once the stream is open, so layers see the open, not the items.
///
/// A balanced channel ([`BalancedChannel`](crate::discovery::BalancedChannel)) sends the same
/// `Request` type through its own layers (once per call) and then through the layers of the
/// endpoint it picked (once per attempt).
pub struct Request {
    pub(crate) method: MethodId,
    pub(crate) one_way: bool,
    /// The method is `#[idempotent]`: a failed attempt may be sent again to another endpoint
    /// even when it may have run.
    pub(crate) idempotent: bool,
    pub(crate) timeout: Option<Duration>,
    pub(crate) metadata: Option<Arc<Metadata>>,
    pub(crate) trace: Option<TraceContext>,
    /// For [`Balance::ConsistentHash`](crate::discovery::Balance::ConsistentHash).
    pub(crate) hash_key: Option<u64>,
    /// Set for arguments already encoded: the codec they are in, which the endpoint's
    /// connection must speak.
    pub(crate) raw_codec: Option<Codec>,
    /// The method's resolved policy, when one applies: its breaker is consulted per attempt,
    /// its `retries` bound a balanced channel's failover.
    pub(crate) policy: Option<Arc<MethodState>>,
    pub(crate) args: CallArgs,
    /// Set for a stream call: opens it once the connection is known.
    pub(crate) opener: Option<StreamOpener>,
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("one_way", &self.one_way)
            .field("stream", &self.opener.is_some())
            .field("idempotent", &self.idempotent)
            .field("timeout", &self.timeout)
            .field("metadata", &self.metadata)
            .finish_non_exhaustive()
    }
}

impl Request {
    /// A call (`one_way`: a one-way call) of `method` with `args`.
    pub(crate) fn new(
        method: MethodId,
        one_way: bool,
        args: CallArgs,
        timeout: Option<Duration>,
        metadata: Option<Arc<Metadata>>,
        trace: Option<TraceContext>,
    ) -> Self {
        Self {
            method,
            one_way,
            idempotent: false,
            timeout,
            metadata,
            trace,
            hash_key: None,
            raw_codec: None,
            policy: None,
            args,
            opener: None,
        }
    }

    /// The same request, opening a stream call with `opener`.
    pub(crate) fn opening(mut self, opener: StreamOpener) -> Self {
        self.opener = Some(opener);
        self
    }

    /// The same call once more, for one attempt on one endpoint, with what is left of its
    /// deadline. The arguments are shared, not copied.
    pub(crate) fn attempt(&self, timeout: Option<Duration>) -> Self {
        Self {
            timeout,
            metadata: self.metadata.clone(),
            policy: self.policy.clone(),
            args: self.args.clone(),
            opener: self.opener.clone(),
            ..*self
        }
    }

    /// The method called.
    pub fn method_id(&self) -> MethodId {
        self.method
    }

    /// Whether it is a one-way call (no reply is awaited; its [`Reply`] is empty).
    pub fn is_one_way(&self) -> bool {
        self.one_way
    }

    /// Whether it opens a stream call (a server stream, an upload, or both): its [`Reply`]
    /// comes once the stream is open, with an empty payload, and the items then flow to the
    /// caller without passing the layers again.
    pub fn is_stream(&self) -> bool {
        self.opener.is_some()
    }

    /// Whether the method is marked `#[idempotent]`, so that a balanced channel may send a
    /// failed attempt again to another endpoint even when it may have run.
    pub fn is_idempotent(&self) -> bool {
        self.idempotent
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
/// the layers' errors instead. The reply to a stream call's open carries the opened stream
/// (and an empty payload).
pub struct Reply {
    pub(crate) payload: Bytes,
    pub(crate) codec: Codec,
    pub(crate) stream: Option<ErasedStream>,
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply")
            .field("payload", &self.payload)
            .field("codec", &self.codec)
            .field("stream", &self.stream.is_some())
            .finish()
    }
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
