//! Tasks that run once per server, or once per refused or unusual connection, spawned boxed.
//!
//! tokio compiles its task machinery (polling, completion, cancellation, the drop of each
//! stage) once for every future type it spawns: a few KiB of machine code each. Boxed, the
//! rare tasks are one type and share one copy, for one allocation per spawn. The tasks that
//! run per call or hold an ordinary connection stay unboxed.

use std::future::Future;
use std::pin::Pin;

/// A rare task, boxed.
pub(crate) type ColdTask = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Boxes `task` as a [`ColdTask`].
pub(crate) fn cold(task: impl Future<Output = ()> + Send + 'static) -> ColdTask {
    Box::pin(task)
}
