//! Stream calls on the server, one home for what is theirs: `produce.rs` a stream's items on
//! their way out (the handler's producer, the client's credit, batches); `batch.rs` the frames
//! of several items in one write; `upload_queue.rs` the items a client uploads, queued for the
//! handler as its `Streaming` argument. A stream's task is supervised by its connection like
//! every call that runs as a task (`connection/stream_task.rs`).

pub(crate) mod batch;
pub(crate) mod produce;
pub(crate) mod upload_queue;
