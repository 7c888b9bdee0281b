//! The bytes on a connection, below calls: the byte stream a connection runs over
//! ([`Transport`]: TCP, TLS, Unix sockets, an in-memory duplex), the length-prefixed
//! [`frame`]s on it, and the read and write loops both sides share.
//!
//! Layout: `byte_stream.rs` is [`Transport`], the boxed stream every connection runs over, and
//! the TCP socket options; `frame.rs` the frame codec (a tokio-util `Decoder`/`Encoder` with an
//! explicit limit) and frame buffers; `frame_reader.rs` reading frames without holding a buffer
//! while idle, and `spare_buffers.rs` the buffers a busy reader reads into again; `writer.rs`
//! the write side a connection's senders share (its tests in `writer_tests.rs`), with
//! `frame_batch.rs` the frames it queues, and `one_task.rs` a writer run inside the task that
//! reads its connection; `liveness.rs` when a silent peer counts as dead.

mod byte_stream;
/// The frame codec, for wirecall's own tests, fuzzers and benches, which write frames by
/// hand: not a public API (the wire format itself is `wirecall_wire` and the book's wire
/// chapter).
#[doc(hidden)]
pub mod frame;
mod frame_batch;
pub(crate) mod frame_reader;
pub(crate) mod liveness;
pub(crate) mod one_task;
mod spare_buffers;
pub(crate) mod writer;

pub use byte_stream::Transport;
pub(crate) use byte_stream::{configure_tcp, BoxedRead, BoxedStream};
