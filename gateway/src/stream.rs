//! Server-streaming methods over HTTP: the items as newline-delimited JSON
//! (`application/x-ndjson`), one item per line, each written as it arrives.
//!
//! The status is decided by the stream's first item: an error before it (a bad argument, an
//! unknown method, the deadline) is answered like a unary call's, with its status and body; an
//! application error as its first item is a 422. From the first item on the status is 200 and
//! already sent, so a stream that fails later ends with one last line `{"error": body}`, the
//! body a unary call would have answered. Nothing follows that line.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::stream::{self, StreamExt as _};
use serde_json::{json, Value};
use wirecall::client::ItemStream;
use wirecall::policy::{DeclaredPolicy, MethodPolicy};
use wirecall::reflect::{JsonArgs, JsonItem, MethodSchema, ReplySchema};
use wirecall::{Caller, Error, MethodId};

use crate::{GatewayError, Upstream};

/// The media type of a server stream's response.
pub const NDJSON: &str = "application/x-ndjson";

/// The declaration a balanced channel opens the gateway's streams under: none of their own
/// (the gateway knows methods by reflection, not from a trait), so only run-time policy
/// overrides for every method apply, as they would to a call.
static UNDECLARED: DeclaredPolicy = DeclaredPolicy::new("", "", false, MethodPolicy::new());

impl Upstream {
    /// Opens a server stream with JSON arguments; each item is its whole item message.
    async fn open_stream(
        &self,
        method: &MethodSchema,
        args: Value,
    ) -> Result<ItemStream<Value>, Error> {
        let id = MethodId::new(method.id);
        match self {
            Self::Single(channel) => {
                channel
                    .open_stream::<JsonArgs, JsonItem>(id, JsonArgs(args))
                    .await
            }
            Self::Balanced(channel) => {
                Caller::open_stream::<JsonArgs, JsonItem>(channel, id, &UNDECLARED, JsonArgs(args))
                    .await
            }
        }
    }
}

/// Opens `method` on `upstream` and answers with its items as they come. `limit` bounds the
/// wait for the first item; the upstream's own deadline (the same limit) bounds the whole
/// stream.
pub(crate) async fn stream_response(
    upstream: Upstream,
    method: MethodSchema,
    args: Value,
    limit: Duration,
) -> Result<Response, GatewayError> {
    let (items, first) = tokio::time::timeout(limit, async {
        let mut items = upstream.open_stream(&method, args).await?;
        let first = items.next().await;
        Ok::<_, Error>((items, first))
    })
    .await
    .map_err(|_| GatewayError::TimeLimit(limit))??;
    let first = match first {
        None => Bytes::new(),
        Some(message) => line(&item_value(&method.reply, message?)?),
    };
    let rest = stream::unfold(Some((items, method.reply)), |state| async move {
        let (mut items, reply) = state?;
        let next = match items.next().await? {
            Ok(message) => match item_value(&reply, message) {
                Ok(value) => return Some((line(&value), Some((items, reply)))),
                Err(error) => error,
            },
            Err(error) => GatewayError::Call(error),
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
fn item_value(reply: &ReplySchema, message: Value) -> Result<Value, GatewayError> {
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
