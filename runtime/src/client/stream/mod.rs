//! Stream calls on the client, one home for all of them: a stream opens through the one call
//! stack like any call (its open is what layers, policies and retries see), and this module is
//! what happens on its connection and after.
//!
//! Layout: `open.rs` sends the `Open` and registers the stream; `raw.rs` is the open stream,
//! its items still encoded ([`RawStream`](raw::RawStream), what the stack returns);
//! `item_stream.rs` the caller's typed [`ItemStream`](item_stream::ItemStream); `slot.rs` a
//! stream's place in the connection's table of calls (its items, its window, its end);
//! `upload_task.rs` the items a caller uploads and the task that sends them.

pub(crate) mod item_stream;
mod open;
pub(crate) mod raw;
pub(crate) mod slot;
pub(crate) mod upload_task;
