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
    let off_loop = payload.len() >= DECODE_OFF_LOOP_FROM;
    // Only building the reply future, which does not run the handler yet: the same code
    // serves both paths, so a method's decoding and its handler's future are compiled once.
    let start = move || -> ReplyFuture {
        match codec.decode_shared::<A>(payload) {
            Err(err) => Box::pin(std::future::ready(Err(CallError::BadRequest(err)))),
            Ok(args) => Box::pin(run(args)),
        }
    };
    if off_loop {
        Box::pin(started_off_loop(Box::new(start)))
    } else {
        start()
    }
}

/// Builds a reply future on tokio's blocking pool (where `start` decodes the arguments), then
/// runs it here. Not generic, so that one instance of the blocking task's machinery and of
/// this future serves every method (a generic `spawn_blocking` per argument type costs about
/// 4 KB of binary per method).
async fn started_off_loop(
    start: Box<dyn FnOnce() -> ReplyFuture + Send>,
) -> Result<Reply, CallError> {
    let reply = match tokio::task::spawn_blocking(start).await {
        Ok(reply) => reply,
        // A panicking decoder is reported like a panicking handler.
        Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
        Err(_) => return Err(CallError::DecodeInterrupted),
    };
    reply.await
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
    let (metadata, encoding) = crate::context::CallContext::take_reply_head(codec);
    let mut frame = match metadata {
        Some(metadata) => FrameBuf::with_metadata(64, &metadata),
        None => FrameBuf::with_capacity(64),
    };
    encoding
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

#[cfg(test)]
mod tests {
    use std::thread::{self, ThreadId};

    use bytes::BytesMut;
    use serde::{Deserialize, Deserializer, Serialize};
    use tokio::sync::oneshot;

    use super::*;

    /// Arguments that remember the thread that decoded them.
    #[derive(Serialize)]
    struct Recorded {
        body: Vec<u8>,
        #[serde(skip)]
        decoded_on: Option<ThreadId>,
    }

    /// Serde alone, as a service declared without Protobuf has.
    impl WireMessage for Recorded {}

    impl<'de> Deserialize<'de> for Recorded {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            #[derive(Deserialize)]
            struct Plain {
                body: Vec<u8>,
            }
            let Plain { body } = Plain::deserialize(deserializer)?;
            Ok(Self {
                body,
                decoded_on: Some(thread::current().id()),
            })
        }
    }

    fn payload(len: usize) -> Bytes {
        let mut out = BytesMut::new();
        let args = Recorded {
            body: vec![7; len],
            decoded_on: None,
        };
        Codec::MessagePack.encode(&args, &mut out).expect("encodes");
        out.freeze()
    }

    /// Runs `decoded` on `payload`: the decoded arguments, or the call's error.
    async fn decode(payload: Bytes) -> Result<Recorded, CallError> {
        let (tx, rx) = oneshot::channel();
        let reply = decoded(
            Codec::MessagePack,
            payload,
            move |args: Recorded| async move {
                let _ = tx.send(args);
                encode_reply(Codec::MessagePack, &())
            },
        )
        .await;
        reply?;
        Ok(rx.await.expect("the handler ran"))
    }

    #[tokio::test]
    async fn small_arguments_decode_where_the_call_starts() {
        let args = decode(payload(16)).await.expect("decodes");
        assert_eq!(args.body, vec![7; 16]);
        assert_eq!(args.decoded_on, Some(thread::current().id()));
    }

    #[tokio::test]
    async fn large_arguments_decode_on_the_blocking_pool() {
        let args = decode(payload(DECODE_OFF_LOOP_FROM))
            .await
            .expect("decodes");
        assert_eq!(args.body.len(), DECODE_OFF_LOOP_FROM);
        let decoded_on = args.decoded_on.expect("decoded");
        assert_ne!(decoded_on, thread::current().id(), "decoded on the loop");
    }

    #[tokio::test]
    async fn large_arguments_that_do_not_decode_are_a_bad_request() {
        let garbage = Bytes::from(vec![0xC1; DECODE_OFF_LOOP_FROM]);
        match decode(garbage).await {
            Err(CallError::BadRequest(_)) => {}
            Err(other) => panic!("expected BadRequest, got {other:?}"),
            Ok(_) => panic!("garbage decoded"),
        }
    }
}
