//! Server-streaming methods over HTTP: the items as they arrive, in the format the request's
//! `Accept` prefers (`accept.rs`): newline-delimited JSON (`ndjson.rs`), the default, or
//! Server-Sent Events (`event_stream.rs`). A bidirectional method's items are answered the
//! same way (`upload.rs` opens it).
//!
//! The status is decided by the stream's first item: an error before it (a bad argument, an
//! unknown method, the deadline) is answered like a unary call's, with its status and JSON
//! body, whichever format was asked for; an application error as its first item is a 422. From the first
//! item on the status is 200 and already sent, so the body says how the stream ended: its
//! last part is the end, or the error the call failed with (the body a unary call would have
//! answered). Nothing follows it.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use axum::http::header::VARY;
use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;
use futures::stream::{self, StreamExt as _};
use serde_json::Value;
use wirecall::client::ItemStream;
use wirecall::reflect::{JsonArgs, JsonItem, MethodSchema, ReplySchema, TypeRef};
use wirecall::{Error, Metadata};

use crate::accept::StreamFormat;
use crate::answer_part::AnswerPart;
use crate::time_limit::CallTimeLimit;
use crate::{event_stream, method_of, ndjson, GatewayError, Upstream, METADATA_HEADER_PREFIX};

/// How a stream's answer is written.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AnswerFormat {
    /// The body's format, from the request's `Accept`.
    pub(crate) format: StreamFormat,
    /// The keep-alive interval of an event stream
    /// ([`GatewayBuilder::event_stream_keep_alive`](crate::GatewayBuilder::event_stream_keep_alive)).
    pub(crate) keep_alive: Duration,
}

impl AnswerFormat {
    /// The 200 response whose body is `parts`.
    fn respond<S>(self, parts: S) -> Response
    where
        S: stream::Stream<Item = AnswerPart> + Send + 'static,
    {
        let mut response = match self.format {
            StreamFormat::Ndjson => ndjson::response(parts),
            StreamFormat::EventStream => event_stream::response(parts, self.keep_alive),
        };
        // The body's format depends on `Accept`: a cache must not answer one with the other.
        response
            .headers_mut()
            .insert(VARY, HeaderValue::from_static("accept"));
        response
    }
}

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
    format: AnswerFormat,
) -> Result<Response, GatewayError> {
    let items = time.bound(upstream.open_stream(&method, args)).await??;
    items_response(
        items,
        method.reply,
        Box::pin(std::future::pending()),
        time,
        format,
    )
    .await
}

/// Answers an opened stream's items (read with `reply`, the method's reply schema) in
/// `format`, each written as it arrives, until the stream ends, fails, or is `interrupted`.
/// The status is decided by the first item, which `time` bounds.
pub(crate) async fn items_response(
    mut items: ItemStream<Value>,
    reply: ReplySchema,
    mut interrupted: Interruption,
    time: CallTimeLimit,
    format: AnswerFormat,
) -> Result<Response, GatewayError> {
    let first = first_item(&mut items, &mut interrupted, time).await?;
    // The status is decided: the stream's reply metadata is known by now.
    let headers = metadata_headers(items.metadata().await);
    let first = match first {
        None => {
            let parts = with_trailers(&items, AnswerPart::End);
            return Ok(with_headers(format.respond(stream::iter(parts)), headers));
        }
        Some(message) => AnswerPart::Item(item_value(&reply, message?)?),
    };
    let rest = stream::unfold(Some((items, reply, interrupted)), |state| async move {
        let (mut items, reply, mut interrupted) = state?;
        let error = tokio::select! {
            biased;
            error = &mut interrupted => error,
            next = items.next() => match next {
                None => return Some((with_trailers(&items, AnswerPart::End), None)),
                Some(Ok(message)) => match item_value(&reply, message) {
                    Ok(value) => {
                        let part = vec![AnswerPart::Item(value)];
                        return Some((part, Some((items, reply, interrupted))));
                    }
                    Err(error) => error,
                },
                Some(Err(error)) => GatewayError::Call(error),
            },
        };
        Some((with_trailers(&items, AnswerPart::Failed(error)), None))
    });
    let parts = stream::once(std::future::ready(first)).chain(rest.flat_map(stream::iter));
    Ok(with_headers(format.respond(parts), headers))
}

/// The last part of an answer, after the stream's trailers when the server sent any.
fn with_trailers(items: &ItemStream<Value>, last: AnswerPart) -> Vec<AnswerPart> {
    match items.trailers().filter(|trailers| !trailers.is_empty()) {
        Some(trailers) => vec![AnswerPart::Trailers(metadata_object(trailers)), last],
        None => vec![last],
    }
}

/// Metadata as a JSON object of strings.
fn metadata_object(metadata: &Metadata) -> Value {
    Value::Object(
        metadata
            .iter()
            .map(|(key, value)| (key.to_owned(), Value::String(value.to_owned())))
            .collect(),
    )
}

/// A stream's reply metadata as `wirecall-meta-{key}` headers, as a unary call's.
pub(crate) fn metadata_headers(metadata: &Metadata) -> Vec<(HeaderName, HeaderValue)> {
    metadata
        .iter()
        .filter_map(|(key, value)| {
            let name = HeaderName::try_from(format!("{METADATA_HEADER_PREFIX}{key}")).ok()?;
            Some((name, HeaderValue::from_str(value).ok()?))
        })
        .collect()
}

fn with_headers(mut response: Response, headers: Vec<(HeaderName, HeaderValue)>) -> Response {
    response.headers_mut().extend(headers);
    response
}

/// What one item message carries, read with the method's reply schema as a unary reply is:
/// the value (`null` for `()`), or the method's application error.
pub(crate) fn item_value(reply: &ReplySchema, message: Value) -> Result<Value, GatewayError> {
    let mut message = message;
    let mut take = |field: &str| message.get_mut(field).map(Value::take).unwrap_or_default();
    match reply {
        ReplySchema::Unit => Ok(Value::Null),
        ReplySchema::Value(_) => Ok(take("value")),
        ReplySchema::Result { ok, .. } => match take("err") {
            // `ok` is a field of type `Option<T>`: for a `T` that is itself an `Option`, the
            // codec writes it `[value]` (so that `Ok(None)` is not the absent `ok`). The
            // answer is the `T`, as the document says.
            Value::Null => Ok(match (ok, take("ok")) {
                (Some(TypeRef::Option(_)), Value::Array(mut wrapped)) if wrapped.len() == 1 => {
                    wrapped.swap_remove(0)
                }
                (_, value) => value,
            }),
            error => Err(GatewayError::Application(error)),
        },
    }
}
