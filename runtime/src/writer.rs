//! The write side of a connection.
//!
//! A [`FrameSink`] is shared by everything that sends on one connection. When nothing else is
//! being written, a sender writes its frame straight to the socket from its own task: no hop
//! through another task, which is most of the latency of a sequential call. When the socket
//! is busy (a write would block, or the writer task is draining), frames queue in a batch that
//! the connection's writer task sends with vectored writes, many frames per syscall. The batch
//! is bounded in bytes: senders wait for space, so a peer that does not read cannot make the
//! queue grow without limit.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use tokio::io::AsyncWrite;
use tokio::sync::Notify;

/// Bytes queued per connection before senders wait for the writer.
pub(crate) const MAX_QUEUED_BYTES: usize = 1024 * 1024;

/// Most slices handed to one vectored write.
const MAX_IO_SLICES: usize = 64;

/// Who writes a queued frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// The sender, right away, when the socket is idle: lowest latency for a lone call.
    Now,
    /// The writer task: when many senders are active, it coalesces their frames.
    Background,
    /// Nobody yet: the sender calls [`FrameSink::flush`] once it has queued a burst.
    Corked,
}

/// The sink is closed: the connection failed or is shutting down.
#[derive(Debug)]
pub(crate) struct SinkClosed;

type BoxedWrite = Pin<Box<dyn AsyncWrite + Send>>;

/// The shared write side of one connection.
#[derive(Clone)]
pub(crate) struct FrameSink {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the writer task when the batch needs draining or the sink is closing.
    writer: Notify,
    /// Wakes senders waiting for room in the batch.
    space: Notify,
}

struct State {
    io: BoxedWrite,
    batch: FrameBatch,
    /// The writer task owns draining the batch; senders only append.
    writer_busy: bool,
    /// No more frames are accepted; the writer drains and shuts the stream down.
    closing: bool,
    failed: bool,
}

impl State {
    /// Writes as much of the batch as the stream takes without blocking. Returns `Ready` when
    /// the batch is empty and flushed, `Pending` when the stream is full.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while self.batch.has_remaining() {
            let mut slices = [IoSlice::new(&[]); MAX_IO_SLICES];
            let count = self.batch.chunks_vectored(&mut slices);
            match self.io.as_mut().poll_write_vectored(cx, &slices[..count]) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(written)) => self.batch.advance(written),
                Poll::Ready(Err(err)) => return Poll::Ready(Err(err)),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.io.as_mut().poll_flush(cx)
    }

    fn fail(&mut self) {
        self.failed = true;
        self.batch = FrameBatch::default();
    }
}

impl FrameSink {
    /// Wraps the write half of a connection; the returned [`SinkWriter`] must be run (usually
    /// spawned) for queued frames to be written.
    pub(crate) fn new<W>(io: W) -> (Self, SinkWriter)
    where
        W: AsyncWrite + Send + 'static,
    {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                io: Box::pin(io),
                batch: FrameBatch::default(),
                writer_busy: false,
                closing: false,
                failed: false,
            }),
            writer: Notify::new(),
            space: Notify::new(),
        });
        let writer = SinkWriter {
            shared: Arc::clone(&shared),
        };
        (Self { shared }, writer)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every critical section leaves the state consistent, even if a write panicked.
        self.shared.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `frame` for `delivery`. Waits while the queue is full.
    pub(crate) async fn send(&self, frame: Bytes, delivery: Delivery) -> Result<(), SinkClosed> {
        let mut frame = Some(frame);
        loop {
            let space = self.shared.space.notified();
            tokio::pin!(space);
            let queued = poll_fn(|cx| {
                let mut state = self.lock();
                if state.closing || state.failed {
                    return Poll::Ready(Err(SinkClosed));
                }
                let Some(next) = frame.as_ref() else {
                    return Poll::Ready(Ok(true));
                };
                if state.batch.remaining > 0
                    && state.batch.remaining + next.len() > MAX_QUEUED_BYTES
                {
                    // Register for space before releasing the lock, so no wake-up is lost,
                    // and make sure someone is draining: corked frames wait for no one.
                    space.as_mut().enable();
                    if !state.writer_busy {
                        state.writer_busy = true;
                        self.shared.writer.notify_one();
                    }
                    return Poll::Ready(Ok(false));
                }
                if let Some(next) = frame.take() {
                    state.batch.push(next);
                }
                if !state.writer_busy {
                    match delivery {
                        Delivery::Now => self.write_now(&mut state, cx),
                        Delivery::Background => {
                            state.writer_busy = true;
                            self.shared.writer.notify_one();
                        }
                        Delivery::Corked => {}
                    }
                }
                Poll::Ready(Ok(true))
            })
            .await?;
            if queued {
                return Ok(());
            }
            space.await;
        }
    }

    /// Writes what is queued now, from the caller's task, unless the writer task is at it.
    pub(crate) async fn flush(&self) {
        poll_fn(|cx| {
            let mut state = self.lock();
            if !state.writer_busy && state.batch.has_remaining() && !state.failed {
                self.write_now(&mut state, cx);
            }
            Poll::Ready(())
        })
        .await
    }

    /// Queues a frame without waiting: for control frames (cancel, pong) sent from places that
    /// cannot wait. Dropped when the queue is full; the writer task sends it.
    pub(crate) fn send_now(&self, frame: Bytes) {
        let mut state = self.lock();
        if state.closing || state.failed || state.batch.remaining > MAX_QUEUED_BYTES {
            return;
        }
        state.batch.push(frame);
        if !state.writer_busy {
            state.writer_busy = true;
            self.shared.writer.notify_one();
        }
    }

    /// Stops accepting frames; the writer task sends what is queued, then shuts the stream.
    pub(crate) fn close(&self) {
        self.lock().closing = true;
        self.shared.writer.notify_one();
        self.shared.space.notify_waiters();
    }

    fn write_now(&self, state: &mut State, cx: &mut Context<'_>) {
        match state.drain(cx) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(err)) => {
                tracing::debug!(%err, "write failed");
                state.fail();
                self.shared.writer.notify_one();
                self.shared.space.notify_waiters();
            }
            Poll::Pending => {
                // The socket is full: the writer task takes over. (The stream also holds the
                // caller's waker now; waking it later is harmless.)
                state.writer_busy = true;
                self.shared.writer.notify_one();
            }
        }
    }
}

/// The task half of a [`FrameSink`]: drains the batch whenever senders could not.
pub(crate) struct SinkWriter {
    shared: Arc<Shared>,
}

impl SinkWriter {
    /// Runs until the sink is closed and drained (then shuts the stream down) or a write
    /// fails. A write that makes no progress for `stall_limit` fails with `TimedOut`: the peer
    /// is not reading, and holding its replies forever would hold their memory forever.
    pub(crate) async fn run(self, stall_limit: Option<Duration>) -> std::io::Result<()> {
        let outcome = self.drain_until_closed(stall_limit).await;
        let mut state = self.lock();
        if outcome.is_err() {
            state.fail();
        }
        state.closing = true;
        drop(state);
        self.shared.space.notify_waiters();
        outcome
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn drain_until_closed(&self, stall_limit: Option<Duration>) -> std::io::Result<()> {
        loop {
            self.shared.writer.notified().await;
            let drained = poll_fn(|cx| {
                let mut state = self.lock();
                if state.failed {
                    return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
                }
                let poll = state.drain(cx);
                if let Poll::Ready(Ok(())) = poll {
                    state.writer_busy = false;
                    self.shared.space.notify_waiters();
                }
                poll.map_ok(|()| state.closing)
            });
            let closing = match stall_limit {
                Some(limit) => tokio::time::timeout(limit, drained).await.map_err(|_| {
                    std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the peer stopped reading; write stalled",
                    )
                })??,
                None => drained.await?,
            };
            if closing {
                return poll_fn(|cx| self.lock().io.as_mut().poll_shutdown(cx)).await;
            }
        }
    }
}

/// Queued frames viewed as one [`Buf`], so vectored writes send them without copying.
#[derive(Default)]
struct FrameBatch {
    frames: VecDeque<Bytes>,
    remaining: usize,
}

impl FrameBatch {
    fn push(&mut self, frame: Bytes) {
        if frame.is_empty() {
            return;
        }
        self.remaining += frame.len();
        self.frames.push_back(frame);
    }
}

impl Buf for FrameBatch {
    fn remaining(&self) -> usize {
        self.remaining
    }

    fn chunk(&self) -> &[u8] {
        self.frames.front().map_or(&[], |f| f.as_ref())
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let mut n = 0;
        for (slot, frame) in dst.iter_mut().zip(self.frames.iter()) {
            *slot = IoSlice::new(frame);
            n += 1;
        }
        n
    }

    fn advance(&mut self, mut cnt: usize) {
        self.remaining -= cnt;
        while cnt > 0 {
            let Some(front) = self.frames.front_mut() else {
                return;
            };
            if cnt < front.len() {
                front.advance(cnt);
                return;
            }
            cnt -= front.len();
            self.frames.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn writes_every_frame_in_order_through_a_small_pipe_then_closes() {
        // A 7-byte pipe forces partial writes and hand-offs to the writer task.
        let (client, mut server) = tokio::io::duplex(7);
        let (sink, writer) = FrameSink::new(client);
        let writer = tokio::spawn(writer.run(None));
        let reader = tokio::spawn(async move {
            let mut out = String::new();
            server.read_to_string(&mut out).await.unwrap();
            out
        });
        for chunk in ["ab", "", "cdefgh", "ijklmnopq"] {
            sink.send(Bytes::from(chunk), Delivery::Now).await.unwrap();
        }
        sink.send_now(Bytes::from_static(b"rs"));
        sink.close();
        assert_eq!(reader.await.unwrap(), "abcdefghijklmnopqrs");
        writer.await.unwrap().unwrap();
        assert!(sink
            .send(Bytes::from_static(b"x"), Delivery::Background)
            .await
            .is_err());
    }

    #[tokio::test]
    async fn a_peer_that_does_not_read_fails_the_writer_after_the_stall_limit() {
        let (client, _server) = tokio::io::duplex(16);
        let (sink, writer) = FrameSink::new(client);
        let writer = tokio::spawn(writer.run(Some(Duration::from_millis(50))));
        sink.send(Bytes::from(vec![0u8; 64]), Delivery::Background)
            .await
            .unwrap();
        let err = writer.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        assert!(sink
            .send(Bytes::from_static(b"x"), Delivery::Background)
            .await
            .is_err());
    }

    #[test]
    fn batch_advance_crosses_frame_boundaries() {
        let mut batch = FrameBatch::default();
        batch.push(Bytes::from_static(b"abc"));
        batch.push(Bytes::from_static(b""));
        batch.push(Bytes::from_static(b"de"));
        batch.advance(3);
        assert_eq!(batch.chunk(), b"de");
        batch.advance(1);
        assert_eq!(batch.chunk(), b"e");
        assert_eq!(batch.remaining(), 1);
    }
}
