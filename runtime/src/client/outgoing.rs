//! What a call sends besides its arguments: its metadata and its trace context.

use crate::context::CallContext;
use crate::metadata::Metadata;
use crate::trace::{TraceContext, TRACEPARENT};

/// What a call sends besides its arguments.
pub(crate) struct Outgoing<'a> {
    pub(crate) metadata: Option<&'a Metadata>,
    pub(crate) trace: Option<TraceContext>,
}

impl<'a> Outgoing<'a> {
    /// With the trace context of a new call: a child of the server call it is made from (so
    /// a handler's calls join the trace of the call it serves), of a `traceparent` the caller
    /// set by hand, or, with `start_trace` (tracing on for the channel), a new trace.
    pub(crate) fn new(metadata: Option<&'a Metadata>, start_trace: bool) -> Self {
        let trace = CallContext::with_current(|call| call.trace())
            .flatten()
            .or_else(|| {
                metadata
                    .and_then(|metadata| metadata.get(TRACEPARENT))
                    .and_then(TraceContext::parse)
            })
            .map(|parent| parent.child())
            .or_else(|| start_trace.then(TraceContext::new_root));
        Self { metadata, trace }
    }
}
