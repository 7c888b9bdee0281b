//! A connection served by one task: its writer runs inside the task that reads it, instead
//! of in a task of its own.
//!
//! A server holds a task per connection for the connection's whole life, most of them idle.
//! A task of its own for each connection's writer cost every connection a second task's
//! allocation (256 bytes: its header, its state and its scheduler links). The writer has
//! work only when a sender could not write itself (the socket was full, or a stream's items
//! were handed to it), so the shared task gives it a turn only then: an idle writer costs
//! the connection's wake-ups a few atomic loads, not a poll.
//!
//! The read side learns that the writer ended (the sink was closed and drained, the peer
//! stopped reading, a write failed) from [`writer_ended`]: the writer's turn comes first in
//! every poll, so the read side sees its end in the same poll.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::writer::{FrameSink, SinkWriter, WriterTurns};

/// Runs `connection` with `writer` in the same task, until `connection` ends; the writer is
/// dropped then, with whatever it had not written. `stall_limit` is the writer's (see
/// [`SinkWriter::run`]).
pub(crate) fn with_writer<F: Future>(
    writer: SinkWriter,
    stall_limit: Option<Duration>,
    connection: F,
) -> WithWriter<impl Future<Output = io::Result<()>>, F> {
    WithWriter {
        turns: writer.turns(),
        writer: writer.run(stall_limit),
        connection,
    }
}

pin_project_lite::pin_project! {
    /// A connection and its writer, polled together (see [`with_writer`]). A struct rather
    /// than an `async` block, which would keep room for both futures twice: once as it
    /// captured them, once where it pinned them.
    pub(crate) struct WithWriter<W, F> {
        #[pin]
        writer: W,
        #[pin]
        connection: F,
        // Says when the writer has ended too, so that it is never polled again.
        turns: WriterTurns,
    }
}

impl<W: Future<Output = io::Result<()>>, F: Future> Future for WithWriter<W, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if this.turns.due() {
            if let Poll::Ready(Err(err)) = this.writer.poll(cx) {
                tracing::debug!(%err, "connection writer ended");
            }
        }
        this.connection.poll(cx)
    }
}

/// Ready once the connection's writer has ended. It needs no wake-up of its own: in a
/// connection run by [`with_writer`], the writer's last turn is followed by the read side's
/// poll in the same wake-up.
pub(crate) fn writer_ended(sink: &FrameSink) -> impl Future<Output = ()> + Send + '_ {
    std::future::poll_fn(|_| {
        if sink.writer_ended() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
}
