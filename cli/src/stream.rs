//! `call` of a server-streaming method: each item printed as it arrives, one JSON line per
//! item, so that the output can be piped into line-oriented tools (`jq`, `head`) while the
//! stream is still open; its metadata and trailers go to stderr (`reply_metadata.rs`). A bidirectional method's items are printed here too (`upload.rs`
//! sends its upload).

use std::future::Future;

use futures::StreamExt as _;
use serde_json::Value;
use wirecall::client::ItemStream;

use crate::call::{pretty, Answer, PreparedCall};
use crate::error::CliError;
use crate::output::out;
use crate::reply_metadata::{print_metadata, print_trailers};

/// Opens the stream and prints its items until it ends (see [`print_each_item`]).
pub async fn print_items(prepared: &PreparedCall) -> Result<(), CliError> {
    let items = prepared.open_stream().await?;
    print_each_item(prepared, items, std::future::pending()).await
}

/// Prints `items` until they end, or until `interrupted` gives a reason to stop (a line of
/// the upload that is not JSON); dropping `items` then cancels the call. A method that
/// returns `()` items prints `null` for each, so that every item has its line. An
/// application error (`Err(e)`, a stream's last item) is printed on stderr as `call` prints
/// it; a failed stream is a [`CliError::StreamFailed`].
pub async fn print_each_item(
    prepared: &PreparedCall,
    mut items: ItemStream<Value>,
    interrupted: impl Future<Output = CliError>,
) -> Result<(), CliError> {
    let mut interrupted = std::pin::pin!(interrupted);
    tokio::select! {
        metadata = items.metadata() => print_metadata(metadata),
        reason = &mut interrupted => return Err(reason),
    }
    let mut printed = 0u64;
    loop {
        let item = tokio::select! {
            item = items.next() => item,
            reason = &mut interrupted => return Err(reason),
        };
        let Some(item) = item else {
            print_trailers(items.trailers());
            return Ok(());
        };
        let message = item.map_err(|source| {
            print_trailers(items.trailers());
            CliError::StreamFailed {
                target: prepared.target.clone(),
                items: printed,
                source,
            }
        })?;
        match Answer::read(&prepared.method.reply, &message) {
            Answer::Nothing => out!("null")?,
            // `Display` of a JSON value is its compact form: one line.
            Answer::Value(value) => out!("{value}")?,
            Answer::ApplicationError(error) => {
                eprintln!("{}", pretty(error));
                return Err(CliError::Application {
                    method: prepared.target.clone(),
                });
            }
        }
        printed += 1;
    }
}
