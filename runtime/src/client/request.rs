//! What travels through a channel's tower layers: a [`Request`] in, a [`Reply`] out.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::args::EncodeArgs;
use crate::codec::Codec;
use crate::metadata::{Metadata, MetadataError};
use crate::method::MethodId;
use crate::trace::TraceContext;

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
