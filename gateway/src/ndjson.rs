//! A stream's answer as newline-delimited JSON (`application/x-ndjson`): one item per line,
//! each written as it arrives. The end of the body is the stream's end; a stream that fails
//! ends with one last line `{"error": body}`, the body a unary call would have answered. The
//! server's trailers, if it sent any, come as a line `{"trailers": {...}}` right before the
//! end (or that error line).

use std::convert::Infallible;

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::{Stream, StreamExt as _};
use serde_json::{json, Value};

use crate::answer_part::AnswerPart;

/// The media type of a server stream's response and of an upload's request body:
/// newline-delimited JSON, one JSON value per line.
pub const NDJSON: &str = "application/x-ndjson";

/// The response whose body is `parts` as lines.
pub(crate) fn response<S>(parts: S) -> Response
where
    S: Stream<Item = AnswerPart> + Send + 'static,
{
    let body = parts.filter_map(|part| {
        std::future::ready(match part {
            AnswerPart::Item(value) => Some(line(&value)),
            AnswerPart::Trailers(trailers) => Some(line(&json!({ "trailers": trailers }))),
            // The body's end says it: no line.
            AnswerPart::End => None,
            AnswerPart::Failed(error) => Some(line(&json!({ "error": error.body() }))),
        })
    });
    let mut response = Body::from_stream(body.map(Ok::<_, Infallible>)).into_response();
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(NDJSON));
    response
}

/// One line of the response: the value's compact JSON and a newline.
fn line(value: &Value) -> Bytes {
    Bytes::from(format!("{value}\n"))
}
