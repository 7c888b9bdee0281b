//! What travels through a channel's tower layers: a [`Request`] in, a [`Reply`] out.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::args::CallArgs;
use super::args::UploadSlot;
use super::stack::call::{Call, Kind};
use super::stack::deadline::Deadline;
use super::stream::raw::RawStream;
use crate::codec::Codec;
use crate::metadata::{Metadata, MetadataError};
use crate::method::MethodId;
use crate::policy::table::{MethodState, StateRef};
use crate::trace::TraceContext;

/// One call, as a channel's tower layers see it
/// ([`ChannelBuilder::layer`](crate::ChannelBuilder::layer),
/// [`BalancedChannelBuilder::layer`](crate::discovery::BalancedChannelBuilder::layer)): the
/// method, its deadline, the metadata it carries (a layer may add to it) and its arguments,
/// encoded only when the connection sends them.
///
/// Every call shape is a `Request`: a unary call, a one-way call
/// ([`is_one_way`](Self::is_one_way)) and the opening of a stream
/// ([`is_stream`](Self::is_stream)), whose [`Reply`] comes once the stream is open, so that
/// layers see the open, not the items.
pub struct Request {
    pub(crate) method: MethodId,
    pub(crate) kind: Kind,
    pub(crate) idempotent: bool,
    pub(crate) deadline: Option<Deadline>,
    pub(crate) metadata: Option<Arc<Metadata>>,
    pub(crate) trace: Option<TraceContext>,
    pub(crate) hash_key: Option<std::num::NonZeroU64>,
    pub(crate) uncompressed: bool,
    pub(crate) raw_codec: Option<Codec>,
    pub(crate) policy: Option<Arc<MethodState>>,
    pub(crate) args: CallArgs,
    pub(crate) upload: Option<UploadSlot>,
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("kind", &self.kind)
            .field("idempotent", &self.idempotent)
            .field("timeout", &self.timeout())
            .field("metadata", &self.metadata)
            .finish_non_exhaustive()
    }
}

impl Request {
    /// `call` as a tower layer sees it. Only made where the stack has layers, and then the
    /// arguments were made shareable where the call began.
    pub(crate) fn from_call(call: &Call<'_>) -> Self {
        let args = match call.shared_args {
            Some(args) => args.clone(),
            // The stack shares the arguments whenever it has a layer (`Core::erases_args`).
            None => CallArgs::unavailable(),
        };
        Self {
            method: call.method,
            kind: call.kind,
            idempotent: call.idempotent,
            deadline: call.deadline,
            metadata: call.metadata.cloned(),
            trace: call.trace,
            hash_key: call.hash_key,
            uncompressed: call.uncompressed,
            raw_codec: call.raw_codec,
            policy: call.policy.as_deref().cloned(),
            args,
            upload: call.upload.cloned(),
        }
    }

    /// The request as the stack below the layer goes on with it.
    pub(crate) fn as_call(&self) -> Call<'_> {
        Call {
            method: self.method,
            kind: self.kind,
            args: &self.args,
            shared_args: Some(&self.args),
            upload: self.upload.as_ref(),
            deadline: self.deadline,
            metadata: self.metadata.as_ref(),
            trace: self.trace,
            idempotent: self.idempotent,
            hash_key: self.hash_key,
            uncompressed: self.uncompressed,
            raw_codec: self.raw_codec,
            policy: self.policy.as_ref().map(StateRef::Slot),
        }
    }

    /// The method called.
    pub fn method_id(&self) -> MethodId {
        self.method
    }

    /// Whether it is a one-way call (no reply is awaited; its [`Reply`] is empty).
    pub fn is_one_way(&self) -> bool {
        self.kind == Kind::OneWay
    }

    /// Whether it opens a stream call (a server stream, an upload, or both): its [`Reply`]
    /// comes once the stream is open, with an empty payload, and the items then flow to the
    /// caller without passing the layers again.
    pub fn is_stream(&self) -> bool {
        self.kind == Kind::Stream
    }

    /// Whether the method is marked `#[idempotent]`, so that a failed attempt that may have
    /// run may be sent again.
    pub fn is_idempotent(&self) -> bool {
        self.idempotent
    }

    /// What is left of the call's deadline (`None`: no deadline; zero once it has passed). It
    /// travels to the server, and each attempt below the layer gets what is left of it then.
    pub fn timeout(&self) -> Option<Duration> {
        self.deadline
            .map(|deadline| deadline.remaining().unwrap_or(Duration::ZERO))
    }

    /// Gives the call a new deadline, `timeout` from now (`None`: none).
    pub fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.deadline = Deadline::starting(timeout);
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

/// A successful reply, as it leaves the stack below the layers: still encoded, decoded once
/// it has passed every layer. Errors (the server's included) travel as the layers' errors
/// instead. The reply to a stream call's open carries the opened stream (and an empty
/// payload).
pub struct Reply {
    pub(crate) payload: Bytes,
    pub(crate) codec: Codec,
    /// Boxed: a reply travels up through every stage's future, and most carry no stream.
    pub(crate) stream: Option<Box<RawStream>>,
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
    /// A reply with no payload: a one-way call's, or a stream's open (with the stream).
    pub(crate) fn empty(codec: Codec, stream: Option<Box<RawStream>>) -> Self {
        Self {
            payload: Bytes::new(),
            codec,
            stream,
        }
    }

    /// The encoded reply.
    pub fn payload(&self) -> &Bytes {
        &self.payload
    }

    /// The codec it is encoded with.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// Whether it carries an opened stream.
    pub fn is_stream(&self) -> bool {
        self.stream.is_some()
    }
}
