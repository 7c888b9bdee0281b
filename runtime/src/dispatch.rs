//! Generic helpers that generated code calls, so the macro stays thin.

use std::future::Future;

use bytes::Bytes;

use crate::codec::{Codec, CodecError, WireMessage};
use crate::error::{CallError, Error};
use crate::frame::FrameBuf;
use crate::method::MethodId;
use crate::service::ReplyFuture;

/// Decodes `payload` as `A`, runs `handler` on it and encodes its reply with `codec`.
pub fn dispatch<A, R, F, Fut>(codec: Codec, payload: Bytes, handler: F) -> ReplyFuture
where
    A: WireMessage,
    R: WireMessage,
    F: FnOnce(A) -> Fut + Send + 'static,
    Fut: Future<Output = R> + Send + 'static,
{
    match codec.decode::<A>(&payload) {
        Err(err) => Box::pin(std::future::ready(Err(CallError::BadRequest(err)))),
        Ok(args) => Box::pin(async move {
            let reply = handler(args).await;
            let mut frame = FrameBuf::with_capacity(64);
            codec
                .encode(&reply, frame.payload_writer())
                .map_err(CallError::Encode)?;
            Ok(frame)
        }),
    }
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
