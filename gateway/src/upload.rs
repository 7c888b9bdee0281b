//! Methods that take an upload (client and bidirectional streaming) over HTTP.
//!
//! The request body is newline-delimited JSON (`application/x-ndjson`): its first line is
//! the argument object of the other arguments, as a unary call's body (`{}` when there are
//! none), and every line after it is one item of the upload. Blank lines are skipped; line
//! numbers count them, as an editor does. The arguments come first so that the call can be
//! opened before any item is read: each item is then sent as soon as its line has come and
//! the server has credit for it, so an upload of any length passes through in bounded
//! memory, and a server that stops reading pauses the reading of the body. The end of the
//! body ends the upload.
//!
//! A client-streaming method answers as a unary call does (its reply as JSON, or its
//! error's status); a bidirectional one answers its items as a server stream does
//! (`stream.rs`, in the format the request's `Accept` prefers), while the upload may still be
//! going.
//!
//! A line that is not JSON, not the item's type (`json_shape.rs`), or longer than the
//! gateway's body limit ends the call: the server gets no End, so it never answers for the
//! lines before it as if they were the whole upload, and the call is cancelled. Before the
//! response has started, the answer is 400 (413 for the length) with the line's number in
//! `line`; after, the response ends with an error line holding that body.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures::{Stream, StreamExt as _};
use serde_json::{json, Value};
use tokio::sync::oneshot;
use wirecall::client::ItemStream;
use wirecall::reflect::{JsonArgs, JsonItem, MethodSchema, ReplySchema, TypeDef, TypeRef};
use wirecall::{Error, ErrorCode};

use crate::arguments::check_arguments;
use crate::body_lines::{BodyLines, LineReadError};
use crate::json_shape;
use crate::request_body;
use crate::stream::{first_item, item_value, items_response, AnswerFormat, Interruption};
use crate::time_limit::CallTimeLimit;
use crate::{method_of, GatewayError, Upstream};

impl Upstream {
    /// Opens a method that takes an upload, with JSON arguments, sending `items` (whole item
    /// messages) as the server's credit allows; each answered item is its whole message.
    async fn open_upload<S>(
        &self,
        method: &MethodSchema,
        args: Value,
        items: S,
    ) -> Result<ItemStream<Value>, Error>
    where
        S: Stream<Item = Value> + Send + 'static,
    {
        self.0
            .open_upload::<JsonArgs, JsonItem, JsonItem, S>(
                &method_of(method),
                JsonArgs(args),
                items,
            )
            .await
    }
}

/// One call of a method that takes an upload, its body not read yet.
pub(crate) struct UploadCall {
    pub(crate) upstream: Upstream,
    pub(crate) method: MethodSchema,
    /// The type of one item.
    pub(crate) item: TypeRef,
    /// The named types of the method's service, for checking items.
    pub(crate) types: Vec<TypeDef>,
    pub(crate) body: Body,
    /// The longest line accepted, the gateway's body limit.
    pub(crate) max_line: usize,
    pub(crate) time: CallTimeLimit,
    /// How a bidirectional method's items are answered.
    pub(crate) answer_format: AnswerFormat,
}

/// Reads the arguments from the body's first line, opens the call with the rest of the body
/// as its upload, and answers as the method's kind does.
pub(crate) async fn upload_response(call: UploadCall) -> Result<Response, GatewayError> {
    let UploadCall {
        upstream,
        method,
        item,
        types,
        body,
        max_line,
        time,
        answer_format,
    } = call;
    let mut lines = BodyLines::new(body, max_line);
    let args = time.bound(arguments(&mut lines, &method, &types)).await??;
    let (items, interrupted) = report_beside(upload_items(lines, item, types));
    let answer = time
        .bound(upstream.open_upload(&method, args, items))
        .await??;
    if method.server_stream {
        items_response(answer, method.reply, interrupted, time, answer_format).await
    } else {
        single_reply_response(answer, &method.reply, interrupted, time).await
    }
}

/// The argument object on the body's first line that is not blank; `{}` for an empty body.
async fn arguments(
    lines: &mut BodyLines,
    method: &MethodSchema,
    types: &[TypeDef],
) -> Result<Value, GatewayError> {
    match lines.next_line().await.map_err(line_read_error)? {
        None => Ok(Value::Object(Default::default())),
        Some((number, line)) => {
            let bad_line = |message| GatewayError::BadLine {
                line: number,
                message,
            };
            let mut args: Value = serde_json::from_slice(&line).map_err(|error| {
                bad_line(format!(
                    "the arguments are not JSON ({})",
                    json_error(&error)
                ))
            })?;
            check_arguments(method, types, &mut args).map_err(bad_line)?;
            Ok(args)
        }
    }
}

/// Each line after the arguments as an item message (`{"value": item}`, the book's wire
/// chapter, "Streams"), read when the upload asks for it; the stream ends at the body's end,
/// or with one error, its last item.
fn upload_items(
    lines: BodyLines,
    item: TypeRef,
    types: Vec<TypeDef>,
) -> impl Stream<Item = Result<Value, GatewayError>> + Send + 'static {
    futures::stream::unfold(Some((lines, item, types)), |state| async move {
        let (mut lines, item, types) = state?;
        let (number, line) = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => return None,
            Err(error) => return Some((Err(line_read_error(error)), None)),
        };
        let value = serde_json::from_slice::<Value>(&line)
            .map_err(|error| format!("the item is not JSON ({})", json_error(&error)))
            .and_then(|mut value| {
                json_shape::conform_field(&mut value, &item, &types)
                    .map(|()| value)
                    .map_err(|mismatch| {
                        let expected = item.to_string();
                        format!("the item is not a {expected}: {mismatch}")
                    })
            });
        Some(match value {
            Ok(value) => (Ok(json!({ "value": value })), Some((lines, item, types))),
            Err(message) => (
                Err(GatewayError::BadLine {
                    line: number,
                    message,
                }),
                None,
            ),
        })
    })
}

/// The upload as the runtime takes it, plain item messages, and the error that stopped it,
/// reported beside it. On an error the items stop without ending: an end would send the
/// upload's End, and the server would answer for the lines before it as if they were the
/// whole upload. The call is cancelled instead, when its answer is dropped. The interruption
/// never resolves when the body ends well.
fn report_beside<S>(items: S) -> (impl Stream<Item = Value> + Send + 'static, Interruption)
where
    S: Stream<Item = Result<Value, GatewayError>> + Send + 'static,
{
    let (report, reported) = oneshot::channel();
    let items = futures::stream::unfold((Box::pin(items), Some(report)), |state| async move {
        let (mut items, mut report) = state;
        match items.next().await? {
            Ok(message) => Some((message, (items, report))),
            Err(error) => {
                if let Some(report) = report.take() {
                    // Nobody listening means the call is over already.
                    let _ = report.send(error);
                }
                std::future::pending().await
            }
        }
    });
    let interrupted: Interruption = Box::pin(async move {
        match reported.await {
            Ok(error) => error,
            // The body ended well, or the upload was stopped: nothing to report, ever.
            Err(_) => std::future::pending().await,
        }
    });
    (items, interrupted)
}

/// A client-streaming method's answer, its one reply, as a unary call's: once the End behind
/// it has come too (an error there instead fails the call).
async fn single_reply_response(
    mut answer: ItemStream<Value>,
    reply: &ReplySchema,
    mut interrupted: Interruption,
    time: CallTimeLimit,
) -> Result<Response, GatewayError> {
    let first = first_item(&mut answer, &mut interrupted, time).await?;
    let Some(message) = first else {
        return Err(GatewayError::Call(Error::Remote {
            code: ErrorCode::ProtocolViolation,
            message: "the server ended a client-streaming call without a reply".to_owned(),
        }));
    };
    let message = message?;
    if let Some(Err(error)) = time.bound(answer.next()).await? {
        return Err(error.into());
    }
    Ok(Json(item_value(reply, message)?).into_response())
}

/// What the JSON parser said, placed by column alone: its own line is always 1 here, and
/// the line that counts is the body's.
fn json_error(error: &serde_json::Error) -> String {
    let said = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    match said.strip_suffix(&position) {
        Some(what) => format!("{what} at column {}", error.column()),
        None => said,
    }
}

fn line_read_error(error: LineReadError) -> GatewayError {
    match error {
        LineReadError::TooLong { line, max } => GatewayError::LineTooLong { line, max },
        LineReadError::Unreadable { line, error } => match request_body::stalled(&error) {
            Some(timeout) => GatewayError::RequestTimeout(timeout),
            None => GatewayError::BadLine {
                line,
                message: format!("the body could not be read: {error}"),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt as _;

    use super::*;

    fn bad_line(line: u64) -> GatewayError {
        GatewayError::BadLine {
            line,
            message: "the item is not JSON".to_owned(),
        }
    }

    #[tokio::test]
    async fn good_items_pass_and_a_body_that_ends_well_reports_nothing() {
        let items = futures::stream::iter([Ok(json!({"value": 1})), Ok(json!({"value": 2}))]);
        let (items, interrupted) = report_beside(items);
        let items: Vec<Value> = items.collect().await;
        assert_eq!(items, [json!({"value": 1}), json!({"value": 2})]);
        assert!(
            interrupted.now_or_never().is_none(),
            "a body that ended well interrupts nothing"
        );
    }

    /// Ending the items would send the upload's End, and the server would answer for the
    /// lines before the bad one: they must stop without ending, the error beside them.
    #[tokio::test]
    async fn a_bad_line_stops_the_items_without_ending_them() {
        let items = futures::stream::iter([Ok(json!({"value": 1})), Err(bad_line(3))]);
        let (items, interrupted) = report_beside(items);
        let mut items = std::pin::pin!(items);
        assert_eq!(items.next().await, Some(json!({"value": 1})));
        assert!(
            items.next().now_or_never().is_none(),
            "the items neither end nor go on after the error"
        );
        let error = interrupted.now_or_never().expect("the error is reported");
        assert!(
            matches!(error, GatewayError::BadLine { line: 3, .. }),
            "{error:?}"
        );
    }
}
