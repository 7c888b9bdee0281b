//! Replies: how a call's outcome becomes a frame, and the frames the read loop writes itself.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;

use super::rejected::CallRejected;
use crate::compression::FrameCompressor;
use crate::error::{CallError, ErrorCode};
use crate::method::MethodId;
use crate::server::request::{Reply, ReplyBody};
use crate::transport::frame::{Frame, FrameKind};
use crate::transport::writer::{Delivery, FrameSink, TrySend};

/// Queues a reply (or pong) written by the read loop, without waiting; it is flushed when the
/// loop runs out of input. `Ok(Some(frame))`: the sink is full, and the read loop sends the
/// frame once there is room (see `Connection::finish_handling`).
pub(super) fn queue_reply(sink: &FrameSink, frame: Bytes) -> Result<Option<Bytes>, CallRejected> {
    match sink.try_send(frame, Delivery::Corked) {
        Ok(()) => Ok(None),
        Err(TrySend::Closed) => Err(CallRejected::SinkClosed),
        Err(TrySend::Full(frame)) => Ok(Some(frame)),
    }
}

/// What a handler's future resolved to: its encoded reply or call error, or the panic.
pub(crate) type HandlerOutcome = std::thread::Result<Result<Reply, CallError>>;

/// Where a call's reply goes, and what it needs to be framed.
pub(super) struct ReplyTo {
    pub(super) request_id: u64,
    pub(super) method: MethodId,
    pub(super) deadline_ms: u32,
    /// The largest reply frame the client accepts.
    pub(super) send_limit: u32,
    /// Compresses the reply when the connection negotiated compression.
    pub(super) compressor: Option<Arc<FrameCompressor>>,
}

impl ReplyTo {
    /// The reply frame for a handler's outcome (`None`: the deadline passed first).
    pub(super) fn frame(&self, outcome: Option<HandlerOutcome>) -> Bytes {
        let error = |code: ErrorCode, message: &str| {
            Frame::error(self.request_id, self.method, code, message).to_bytes()
        };
        match outcome {
            None => error(
                ErrorCode::DeadlineExceeded,
                &format!("the handler did not finish within {} ms", self.deadline_ms),
            ),
            Some(Err(panic)) => {
                let message = panic_message(panic.as_ref());
                tracing::error!(method = %self.method, %message, "handler panicked");
                error(ErrorCode::HandlerPanicked, &message)
            }
            Some(Ok(Err(call_error))) => {
                tracing::debug!(method = %self.method, %call_error, "call failed");
                error(call_error.code(), &call_error.to_string())
            }
            // Admission sends every stream call to its own task: a layer swapped the reply.
            Some(Ok(Ok(Reply {
                body: ReplyBody::Stream(_),
                ..
            }))) => error(
                ErrorCode::LayerFailed,
                "a server layer answered a unary call with a stream",
            ),
            Some(Ok(Ok(Reply {
                body: ReplyBody::Message(reply),
                ..
            }))) => match reply.finish_compressed(
                FrameKind::Response,
                self.request_id,
                self.method,
                0,
                self.send_limit,
                self.compressor.as_deref(),
            ) {
                Ok(bytes) => bytes,
                // The client would close the connection on a frame over its limit: fail
                // this one call instead.
                Err(err) => error(
                    ErrorCode::FrameTooLarge,
                    &format!("the reply {err} that the client accepts (its max_frame_len)"),
                ),
            },
        }
    }
}

pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&'static str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "the handler panicked".to_owned()
    }
}

/// Sends a connection-level Error frame (request id 0) before a close. Boxed here rather than
/// at every call site: it runs at most once per connection, and its state inline would
/// enlarge the connection task for the connection's whole life.
pub(super) fn send_connection_error<'a>(
    sink: &'a FrameSink,
    code: ErrorCode,
    message: &str,
) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
    let frame = Frame::error(0, MethodId::new(0), code, message).to_bytes();
    Box::pin(async move {
        let _ = sink.send(frame, Delivery::Now).await;
    })
}
