//! `call` of a server-streaming method: each item printed as it arrives, one JSON line per
//! item, so that the output can be piped into line-oriented tools (`jq`, `head`) while the
//! stream is still open.

use futures::StreamExt as _;

use crate::call::{pretty, Answer, PreparedCall};
use crate::error::CliError;
use crate::output::out;

/// Opens the stream and prints its items until it ends. A method that returns `()` items
/// prints `null` for each, so that every item has its line. An application error (`Err(e)`,
/// a stream's last item) is printed on stderr as `call` prints it; a failed stream is a
/// [`CliError::StreamFailed`].
pub async fn print_items(prepared: &PreparedCall) -> Result<(), CliError> {
    let mut items = prepared.open_stream().await?;
    let mut printed = 0u64;
    while let Some(item) = items.next().await {
        let message = item.map_err(|source| CliError::StreamFailed {
            target: prepared.target.clone(),
            items: printed,
            source,
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
    Ok(())
}
