//! Generic helpers that generated code calls, so the macro stays thin.

use std::future::Future;

use bytes::Bytes;

use crate::codec::{Codec, CodecError, WireMessage};
use crate::error::{CallError, Error};
use crate::method::MethodId;
use crate::service::ReplyFuture;
use crate::transport::frame::FrameBuf;

/// Payloads at least this large are decoded on tokio's blocking pool instead of where the call
/// starts (the connection's read loop): decoding megabytes takes milliseconds, and inline it
/// would hold up every Ping, Cancel and small call queued behind it on the connection.
pub const DECODE_OFF_LOOP_FROM: usize = 128 * 1024;

/// Decodes `payload` as `A`, runs `handler` on it and encodes its reply with `codec`.
///
/// A small payload is decoded before this returns, so a bad one fails without spawning
/// anything; one of [`DECODE_OFF_LOOP_FROM`] bytes or more is decoded on the blocking pool
/// when the returned future is first polled.
pub fn dispatch<A, R, F, Fut>(codec: Codec, payload: Bytes, handler: F) -> ReplyFuture
where
    A: WireMessage,
    R: WireMessage,
    F: FnOnce(A) -> Fut + Send + 'static,
    Fut: Future<Output = R> + Send + 'static,
{
    if payload.len() >= DECODE_OFF_LOOP_FROM {
        return Box::pin(async move {
            let decoded = tokio::task::spawn_blocking(move || codec.decode::<A>(&payload)).await;
            let args = match decoded {
                Ok(args) => args.map_err(CallError::BadRequest)?,
                // A panicking decoder is reported like a panicking handler.
                Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
                Err(_) => return Err(CallError::DecodeInterrupted),
            };
            reply(codec, handler(args).await)
        });
    }
    match codec.decode::<A>(&payload) {
        Err(err) => Box::pin(std::future::ready(Err(CallError::BadRequest(err)))),
        Ok(args) => Box::pin(async move { reply(codec, handler(args).await) }),
    }
}

/// Encodes a handler's reply into a frame buffer, after the reply metadata the handler set
/// through its [`CallContext`](crate::CallContext), if any.
fn reply<R: WireMessage>(codec: Codec, reply: R) -> Result<FrameBuf, CallError> {
    let mut frame = match crate::context::CallContext::take_reply_metadata() {
        Some(metadata) => FrameBuf::with_metadata(64, &metadata),
        None => FrameBuf::with_capacity(64),
    };
    codec
        .encode(&reply, frame.payload_writer())
        .map_err(CallError::Encode)?;
    Ok(frame)
}

/// The reply future for a method id the service does not have.
pub fn unknown_method(method: MethodId) -> ReplyFuture {
    Box::pin(std::future::ready(Err(CallError::UnknownMethod(method))))
}

/// Turns the two optional fields of a result reply into the caller's nested result. A reply
/// with neither field set is a decode error: the peer sent something that is not a result.
pub fn result_from_parts<T, E>(ok: Option<T>, err: Option<E>) -> Result<Result<T, E>, Error> {
    match (ok, err) {
        (_, Some(err)) => Ok(Err(err)),
        (Some(ok), None) => Ok(Ok(ok)),
        (None, None) => Err(Error::Codec(CodecError::EmptyResult)),
    }
}
