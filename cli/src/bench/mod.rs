//! `bench`: many calls of one method, `concurrency` at a time on one connection, and what
//! they measured. Each call shape has its file: `unary_calls.rs` (unary and one-way methods),
//! `server_streams.rs` (streams read to their end: items/s and the gap before each item),
//! `uploads.rs` (the same items uploaded by every call: items/s and each call's latency).
//! `workers.rs` runs the calls of any shape; `report.rs` formats what they measured.

mod report;
mod server_streams;
mod unary_calls;
mod uploads;
mod workers;

use std::sync::Arc;

use crate::call::PreparedCall;
use crate::connect::ConnectOptions;
use crate::error::CliError;
use crate::upload_lines::UploadSource;
pub use workers::Load;

/// Benchmarks `target` with `calls` calls, `concurrency` at a time, choosing the measure by
/// the method's shape: a unary call's latency, a server stream's items, an upload's items.
/// `upload` is the `--upload` option, as for `call`.
pub async fn bench(
    options: &ConnectOptions,
    addr: &str,
    target: &str,
    args: Option<&str>,
    upload: Option<UploadSource>,
    load: Load,
) -> Result<(), CliError> {
    if load.calls == 0 || load.concurrency == 0 {
        return Err(CliError::Input(
            "--calls and --concurrency must be at least 1".to_owned(),
        ));
    }
    let prepared = Arc::new(PreparedCall::new(options, addr, target, args, upload).await?);
    match (
        prepared.upload_source.clone(),
        prepared.method.server_stream,
    ) {
        // A bidirectional method is benched as an upload whose answer has many items.
        (Some(source), _) => uploads::bench(prepared, &source, load).await,
        (None, true) => server_streams::bench(prepared, load).await,
        (None, false) => unary_calls::bench(prepared, load).await,
    }
}
