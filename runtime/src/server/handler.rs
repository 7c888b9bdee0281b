//! What a generated server runs a handler through, whatever the method's shape: the one path
//! from a call's encoded arguments to its reply (or its stream's items). The macro stays thin:
//! each arm of a generated `Service::call` picks one of these functions and hands it the
//! handler.
//!
//! Every shape decodes its arguments the same way (`decoded`): a small payload before the
//! reply future is returned, so a bad one fails without spawning anything; one of
//! [`DECODE_OFF_LOOP_FROM`] bytes or more on tokio's blocking pool when the future is first
//! polled, so that decoding megabytes does not hold up the connection's read loop.

use std::future::Future;

use bytes::Bytes;

use super::request::Reply;
use crate::codec::{Codec, WireMessage};
use crate::error::CallError;
use crate::message::{ArgValues, ArgsMessage, MethodMessages, ReplyItem, UploadItem};
use crate::method::MethodId;
use crate::server::stream::upload_queue::Upload;
use crate::service::ReplyFuture;
use crate::stream::item::ItemMessage;
use crate::stream::outgoing::OutgoingItems;
use crate::stream::streaming::Streaming;
use crate::transport::frame::FrameBuf;

/// Payloads at least this large are decoded on tokio's blocking pool instead of where the call
/// starts (the connection's read loop): decoding megabytes takes milliseconds, and inline it
/// would hold up every Ping, Cancel and small call queued behind it on the connection.
pub const DECODE_OFF_LOOP_FROM: usize = 128 * 1024;

/// Decodes `payload` as `A` and runs `run` on it: the one decode path of every shape.
fn decoded<A, F, Fut>(codec: Codec, payload: Bytes, run: F) -> ReplyFuture
where
    A: WireMessage,
    F: FnOnce(A) -> Fut + Send + 'static,
    Fut: Future<Output = Result<Reply, CallError>> + Send + 'static,
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
            run(args).await
        });
    }
    match codec.decode::<A>(&payload) {
        Err(err) => Box::pin(std::future::ready(Err(CallError::BadRequest(err)))),
        Ok(args) => Box::pin(run(args)),
    }
}

/// A unary method `M`: decodes `payload` as its arguments, runs `handler` on them and encodes
/// what it returns as `M`'s reply with `codec`, after the reply metadata the handler set
/// through its [`CallContext`](crate::CallContext), if any.
pub fn unary<M, F, Fut>(codec: Codec, payload: Bytes, handler: F) -> ReplyFuture
where
    M: MethodMessages<Args: ArgsMessage, Reply: ItemMessage>,
    F: FnOnce(ArgValues<M>) -> Fut + Send + 'static,
    Fut: Future<Output = ReplyItem<M>> + Send + 'static,
{
    decoded(codec, payload, move |args: M::Args| async move {
        let (reply, _) = M::Reply::from_item(handler(args.into_values()).await);
        encode_reply(codec, &reply)
    })
}

/// Encodes a handler's reply into a frame buffer, after its reply metadata.
fn encode_reply<R: WireMessage>(codec: Codec, reply: &R) -> Result<Reply, CallError> {
    let mut frame = match crate::context::CallContext::take_reply_metadata() {
        Some(metadata) => FrameBuf::with_metadata(64, &metadata),
        None => FrameBuf::with_capacity(64),
    };
    codec
        .encode(reply, frame.payload_writer())
        .map_err(CallError::Encode)?;
    Ok(Reply::message(frame))
}

/// A server-streaming method `M`: decodes `payload` as its arguments, runs `handler` on them,
/// and encodes the items of the stream it returns as `M`'s reply messages, each as the
/// client's credit lets it go.
pub fn server_stream<M, F, Fut>(codec: Codec, payload: Bytes, handler: F) -> ReplyFuture
where
    M: MethodMessages<Args: ArgsMessage, Reply: ItemMessage>,
    F: FnOnce(ArgValues<M>) -> Fut + Send + 'static,
    Fut: Future<Output = Streaming<ReplyItem<M>>> + Send + 'static,
{
    decoded(codec, payload, move |args: M::Args| async move {
        Ok(Reply::stream(OutgoingItems::encoding::<M::Reply>(
            handler(args.into_values()).await,
        )))
    })
}

/// A bidirectional method `M`: like [`server_stream`], `handler` also getting the client's
/// uploaded items.
pub fn bidi_stream<M, F, Fut>(
    codec: Codec,
    payload: Bytes,
    upload: Upload,
    handler: F,
) -> ReplyFuture
where
    M: MethodMessages<Args: ArgsMessage, Reply: ItemMessage, Upload: ItemMessage>,
    F: FnOnce(ArgValues<M>, Streaming<UploadItem<M>>) -> Fut + Send + 'static,
    Fut: Future<Output = Streaming<ReplyItem<M>>> + Send + 'static,
{
    let uploaded = upload.into_items::<M::Upload>(codec);
    server_stream::<M, _, _>(codec, payload, move |args| handler(args, uploaded))
}

/// A client-streaming method `M`: `handler` gets the arguments and the uploaded items and
/// returns one reply, which travels as the server's only item.
pub fn client_stream<M, F, Fut>(
    codec: Codec,
    payload: Bytes,
    upload: Upload,
    handler: F,
) -> ReplyFuture
where
    M: MethodMessages<Args: ArgsMessage, Reply: ItemMessage, Upload: ItemMessage>,
    F: FnOnce(ArgValues<M>, Streaming<UploadItem<M>>) -> Fut + Send + 'static,
    Fut: Future<Output = ReplyItem<M>> + Send + 'static,
{
    let uploaded = upload.into_items::<M::Upload>(codec);
    server_stream::<M, _, _>(codec, payload, move |args| async move {
        let reply = handler(args, uploaded).await;
        Streaming::new(futures::stream::once(std::future::ready(reply)))
    })
}

/// The reply future for a method id the service does not have.
pub fn unknown_method(method: MethodId) -> ReplyFuture {
    Box::pin(std::future::ready(Err(CallError::UnknownMethod(method))))
}
