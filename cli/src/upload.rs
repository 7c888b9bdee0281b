//! `call` of a method that takes an upload (client or bidirectional streaming): its items are
//! read as JSON lines (`upload_lines.rs`) and sent while they are still being read; the end of
//! the input ends the upload. A client-streaming method's one reply is printed as a unary
//! call's is; a bidirectional method's items are printed as they arrive, while the upload is
//! still going (`stream.rs`).

use std::future::Future;

use futures::{Stream, StreamExt as _};
use serde_json::{json, Value};
use tokio::sync::oneshot;
use wirecall::client::ItemStream;

use crate::call::{print_answer, PreparedCall};
use crate::error::CliError;
use crate::reply_metadata::{print_metadata, print_trailers};
use crate::stream::print_each_item;
use crate::upload_lines::{json_lines, LineError, UploadSource};

/// Calls `prepared`, whose method takes an upload, with the lines of `source` as its items,
/// and prints what the server answers.
pub async fn call_with_upload(
    prepared: &PreparedCall,
    source: &UploadSource,
) -> Result<(), CliError> {
    let reader = source.open().await?;
    let (items, line_failed) = report_beside(json_lines(reader));
    let answer = prepared.open_upload(items).await?;
    let interrupted = async {
        let failure = line_failed.await;
        line_error(prepared, source, failure)
    };
    if prepared.method.server_stream {
        print_each_item(prepared, answer, interrupted).await
    } else {
        print_single_reply(prepared, answer, interrupted).await
    }
}

/// The upload as the runtime takes it, plain item messages, and the line error that stopped
/// it, reported beside it. On an error the items stop without ending: an end would send the
/// upload's End, and the server would answer for the lines before it as if they were the
/// whole upload. The caller cancels the call instead. The future never resolves when the
/// input ends well.
fn report_beside<S>(
    lines: S,
) -> (
    impl Stream<Item = Value> + Send + 'static,
    impl Future<Output = LineError>,
)
where
    S: Stream<Item = Result<Value, LineError>> + Send + 'static,
{
    let (report, reported) = oneshot::channel();
    let items = futures::stream::unfold((Box::pin(lines), report), |(mut lines, report)| {
        async move {
            match lines.next().await? {
                Ok(value) => Some((item_message(value), (lines, report))),
                Err(error) => {
                    // Nobody listening means the call is over already.
                    let _ = report.send(error);
                    std::future::pending().await
                }
            }
        }
    });
    let failed = async move {
        match reported.await {
            Ok(error) => error,
            // The input ended well (or the upload was stopped): nothing to report, ever.
            Err(_) => std::future::pending().await,
        }
    };
    (items, failed)
}

/// One uploaded item as it travels: a message whose field `value` holds it (the book's wire
/// chapter, "Streams").
pub fn item_message(value: Value) -> Value {
    json!({ "value": value })
}

/// A line error as the command reports it, with the source, the method and the type of item
/// it expects.
pub fn line_error(prepared: &PreparedCall, source: &UploadSource, error: LineError) -> CliError {
    let origin = source.to_string();
    let target = prepared.target.clone();
    match error {
        LineError::NotJson { line, error } => CliError::UploadNotJson {
            origin,
            line,
            target,
            item_type: prepared
                .method
                .upload
                .as_ref()
                .map_or_else(|| "value".to_owned(), ToString::to_string),
            source: error,
        },
        LineError::Unreadable { line, error } => CliError::UploadUnreadable {
            origin,
            line,
            target,
            source: error,
        },
    }
}

/// Prints a client-streaming method's reply, its one item, once the End behind it has come
/// too: an error there instead fails the call, and the reply is not printed.
async fn print_single_reply(
    prepared: &PreparedCall,
    mut answer: ItemStream<Value>,
    interrupted: impl Future<Output = CliError>,
) -> Result<(), CliError> {
    let reply = tokio::select! {
        reply = answer.next() => reply,
        reason = interrupted => return Err(reason),
    };
    let reply = match reply {
        Some(reply) => reply?,
        None => {
            return Err(CliError::Call(wirecall::Error::Remote {
                code: wirecall::ErrorCode::ProtocolViolation,
                message: format!(
                    "the server ended the client-streaming call {} without a reply",
                    prepared.target
                ),
            }))
        }
    };
    if let Some(Err(error)) = answer.next().await {
        return Err(error.into());
    }
    print_metadata(answer.metadata().await);
    print_trailers(answer.trailers());
    print_answer(prepared, &reply)
}

#[cfg(test)]
mod tests {
    use futures::FutureExt as _;

    use super::*;

    fn not_json(line: u64) -> LineError {
        LineError::NotJson {
            line,
            error: serde_json::from_str::<Value>("x").unwrap_err(),
        }
    }

    #[tokio::test]
    async fn items_travel_as_messages_and_a_good_input_reports_nothing() {
        let lines = futures::stream::iter([Ok(json!(1)), Ok(json!({"n": 2}))]);
        let (items, failed) = report_beside(lines);
        let items: Vec<Value> = items.collect().await;
        assert_eq!(items, [json!({"value": 1}), json!({"value": {"n": 2}})]);
        assert!(
            failed.now_or_never().is_none(),
            "an input that ended well has no failure"
        );
    }

    /// Ending the items would end the upload, and the server would answer for the lines
    /// before the bad one: they must stop without ending, and the error come beside them.
    #[tokio::test]
    async fn a_line_error_stops_the_items_without_ending_them() {
        let lines = futures::stream::iter([Ok(json!(1)), Err(not_json(2)), Ok(json!(3))]);
        let (items, failed) = report_beside(lines);
        let mut items = std::pin::pin!(items);
        assert_eq!(items.next().await, Some(json!({"value": 1})));
        assert!(
            items.next().now_or_never().is_none(),
            "the items neither end nor go on after the error"
        );
        let error = failed.now_or_never().expect("the error is reported");
        assert!(
            matches!(error, LineError::NotJson { line: 2, .. }),
            "{error:?}"
        );
    }
}
