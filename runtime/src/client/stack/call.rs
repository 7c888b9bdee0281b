//! [`Call`]: one call on its way down the stack, whatever its shape. Every stage reads the
//! same value: the policy stages set its deadline, the retry loop sends it again, the
//! connection frames it as a Request, a Notify or an Open.
//!
//! A `Call` borrows what it carries from the caller's future, so a call that passes no layer
//! is neither boxed nor copied. Where a tower layer sits in the stack, the call crosses it as
//! an owned [`Request`](crate::client::Request) (`Request::from_call`) and comes back out of
//! it as a `Call` again (`Request::as_call`).

use std::num::NonZeroU64;
use std::sync::Arc;

use super::deadline::Deadline;
use crate::client::args::{CallArgs, SharedArgs, UploadSlot};
use crate::codec::Codec;
use crate::context::CallContext;
use crate::error::Error;
use crate::layers::circuit_breaker::config::CircuitBreakerConfig;
use crate::metadata::Metadata;
use crate::method::MethodId;
use crate::policy::table::{CallPermit, StateRef, StreamPermit};
use crate::policy::Hedge;
use crate::trace::{TraceContext, TRACEPARENT};

/// Which frames a call travels in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A `Request` answered by one `Response`.
    Unary,
    /// A `Notify`: no reply.
    OneWay,
    /// An `Open`: the server's items (or its one reply), and for a method that takes one,
    /// the caller's upload.
    Stream,
}

/// One call, borrowed from whoever made it.
pub(crate) struct Call<'a> {
    pub(crate) method: MethodId,
    pub(crate) kind: Kind,
    /// The arguments, encoded by each attempt in the codec of its connection.
    pub(crate) args: &'a dyn SharedArgs,
    /// The same arguments, shareable, when a layer in the stack needs to own them.
    pub(crate) shared_args: Option<&'a CallArgs>,
    /// The items a stream call uploads, taken by the attempt that opens the stream.
    pub(crate) upload: Option<&'a UploadSlot>,
    pub(crate) deadline: Option<Deadline>,
    pub(crate) metadata: Option<&'a Arc<Metadata>>,
    pub(crate) trace: Option<TraceContext>,
    /// The method is `#[idempotent]`: an attempt that may have run may be sent again.
    pub(crate) idempotent: bool,
    /// For [`Balance::ConsistentHash`](crate::discovery::Balance::ConsistentHash) (see
    /// [`hash_key_of`]).
    pub(crate) hash_key: Option<NonZeroU64>,
    /// The frames this call sends go uncompressed ([`Channel::without_compression`]).
    ///
    /// [`Channel::without_compression`]: crate::Channel::without_compression
    pub(crate) uncompressed: bool,
    /// Set for arguments already encoded: the codec they are in, which the connection must
    /// speak.
    pub(crate) raw_codec: Option<Codec>,
    /// The method's resolved policy, when one applies.
    pub(crate) policy: Option<StateRef<'a>>,
}

impl Call<'_> {
    /// The circuit breaker the method's policy turns on, if any.
    pub(crate) fn breaker(&self) -> Option<&Arc<CircuitBreakerConfig>> {
        self.policy
            .as_ref()
            .and_then(|state| state.breaker.as_ref())
    }

    /// The `retries` of the method's policy (`None`: no policy bounds them).
    pub(crate) fn retries(&self) -> Option<u32> {
        self.policy
            .as_ref()
            .and_then(|state| state.policy.retries())
    }

    /// The `hedge` of the method's policy (`None`: the policy leaves it to the channel).
    pub(crate) fn hedge(&self) -> Option<&Hedge> {
        self.policy.as_ref().and_then(|state| state.policy.hedge())
    }

    /// Stage 2 for a unary or one-way call: its place under the method's concurrency limit,
    /// held while it runs, or [`Error::ConcurrencyLimit`].
    #[inline]
    pub(crate) fn admit(&self) -> Result<Option<CallPermit<'_>>, Error> {
        match &self.policy {
            Some(state) => state.admit(),
            None => Ok(None),
        }
    }

    /// Stage 2 for a stream: its place under the method's concurrency limit, held for as
    /// long as the stream is open.
    pub(crate) fn admit_stream(&self) -> Result<Option<StreamPermit>, Error> {
        match &self.policy {
            Some(state) => state.admit_stream(),
            None => Ok(None),
        }
    }
}

/// The trace context of a new call: a child of the server call it is made from (so a
/// handler's calls join the trace of the call it serves), of a `traceparent` the caller set
/// by hand, or, with `start_trace` (tracing on for the channel), a new trace.
pub(crate) fn trace_of(metadata: Option<&Metadata>, start_trace: bool) -> Option<TraceContext> {
    CallContext::with_current(|call| call.trace())
        .flatten()
        .or_else(|| {
            metadata
                .and_then(|metadata| metadata.get(TRACEPARENT))
                .and_then(TraceContext::parse)
        })
        .map(|parent| parent.child())
        .or_else(|| start_trace.then(TraceContext::new_root))
}

/// A call's consistent-hash key, kept in 8 bytes instead of 16 (a key that hashes to 0 is
/// placed as one that hashes to 1): with its deadline's 24, this keeps a [`Call`] within 128
/// bytes, which the compiler moves without a `memcpy` call.
pub(crate) fn hash_key_of(key: Option<u64>) -> Option<NonZeroU64> {
    key.map(|key| NonZeroU64::new(key).unwrap_or(NonZeroU64::MIN))
}

#[cfg(test)]
mod tests {
    use super::Call;

    #[test]
    fn a_call_fits_in_128_bytes_so_moving_it_needs_no_memcpy() {
        assert!(
            std::mem::size_of::<Call<'static>>() <= 128,
            "Call is {} bytes",
            std::mem::size_of::<Call<'static>>()
        );
    }
}
