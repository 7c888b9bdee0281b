//! Server-streaming methods over HTTP: the items as newline-delimited JSON
//! (`application/x-ndjson`), one item per line, each written as it arrives. A bidirectional
//! method's items are answered the same way (`upload.rs` opens it).
//!
//! The status is decided by the stream's first item: an error before it (a bad argument, an
//! unknown method, the deadline) is answered like a unary call's, with its status and body; an
//! application error as its first item is a 422. From the first item on the status is 200 and
//! already sent, so a stream that fails later ends with one last line `{"error": body}`, the
//! body a unary call would have answered. Nothing follows that line.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::stream::{self, StreamExt as _};
use serde_json::{json, Value};
use wirecall::client::ItemStream;
use wirecall::reflect::{JsonArgs, JsonItem, MethodSchema, ReplySchema};
use wirecall::Error;

use crate::time_limit::CallTimeLimit;
use crate::{method_of, GatewayError, Upstream};

/// The media type of a server stream's response and of an upload's request body:
/// newline-delimited JSON, one JSON value per line.
pub const NDJSON: &str = "application/x-ndjson";

impl Upstream {
    /// Opens a server stream with JSON arguments; each item is its whole item message.
    async fn open_stream(
        &self,
        method: &MethodSchema,
        args: Value,
    ) -> Result<ItemStream<Value>, Error> {
        self.0
            .open_stream::<JsonArgs, JsonItem>(&method_of(method), JsonArgs(args))
            .await
    }
}

/// Something other than the server that can end an answer early: for a method that takes
/// an upload, a line of the request body that cannot be sent (`upload.rs`). It resolves with
/// the error the call ends with, or never.
pub(crate) type Interruption = Pin<Box<dyn Future<Output = GatewayError> + Send>>;

/// The first item (or end) of an answer, within `time`, unless the upload is `interrupted`
/// first.
pub(crate) async fn first_item(
    items: &mut ItemStream<Value>,
    interrupted: &mut Interruption,
    time: CallTimeLimit,
) -> Result<Option<Result<Value, Error>>, GatewayError> {
    time.bound(async {
        tokio::select! {
            // Biased: once the upload is known to be broken, no answer to it is shown.
            biased;
            error = interrupted => Err(error),
            first = items.next() => Ok(first),
        }
    })
    .await?
}

/// Opens `method` on `upstream` and answers with its items as they come. The time limit
/// bounds the wait for the first item; the upstream's own deadline (the same limit) bounds
/// the whole stream.
pub(crate) async fn stream_response(
    upstream: Upstream,
    method: MethodSchema,
    args: Value,
    time: CallTimeLimit,
) -> Result<Response, GatewayError> {
    let items = time.bound(upstream.open_stream(&method, args)).await??;
    items_response(items, method.reply, Box::pin(std::future::pending()), time).await
}

/// Answers an opened stream's items (read with `reply`, the method's reply schema) as
/// newline-delimited JSON, each written as it arrives, until the stream ends, fails, or is
/// `interrupted`. The status is decided by the first item, which `time` bounds.
pub(crate) async fn items_response(
    mut items: ItemStream<Value>,
    reply: ReplySchema,
    mut interrupted: Interruption,
    time: CallTimeLimit,
) -> Result<Response, GatewayError> {
    let first = first_item(&mut items, &mut interrupted, time).await?;
    let first = match first {
        None => Bytes::new(),
        Some(message) => line(&item_value(&reply, message?)?),
    };
    let rest = stream::unfold(Some((items, reply, interrupted)), |state| async move {
        let (mut items, reply, mut interrupted) = state?;
        let next = tokio::select! {
            biased;
            error = &mut interrupted => error,
            next = items.next() => match next? {
                Ok(message) => match item_value(&reply, message) {
                    Ok(value) => return Some((line(&value), Some((items, reply, interrupted)))),
                    Err(error) => error,
                },
                Err(error) => GatewayError::Call(error),
            },
        };
        // The stream's end: its error, then nothing.
        Some((error_line(&next), None))
    });
    let body = stream::once(std::future::ready(first))
        .chain(rest)
        .map(Ok::<_, Infallible>);
    let mut response = Body::from_stream(body).into_response();
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(NDJSON));
    Ok(response)
}

/// What one item message carries, read with the method's reply schema as a unary reply is:
/// the value (`null` for `()`), or the method's application error.
pub(crate) fn item_value(reply: &ReplySchema, message: Value) -> Result<Value, GatewayError> {
    let mut message = message;
    let mut take = |field: &str| message.get_mut(field).map(Value::take).unwrap_or_default();
    match reply {
        ReplySchema::Unit => Ok(Value::Null),
        ReplySchema::Value(_) => Ok(take("value")),
        ReplySchema::Result { .. } => match take("err") {
            Value::Null => Ok(take("ok")),
            error => Err(GatewayError::Application(error)),
        },
    }
}

/// One line of the response: the value's compact JSON and a newline.
fn line(value: &Value) -> Bytes {
    Bytes::from(format!("{value}\n"))
}

/// The last line of a stream that failed after its first item.
fn error_line(error: &GatewayError) -> Bytes {
    let (_, body) = error.status_and_body();
    line(&json!({ "error": body }))
}
