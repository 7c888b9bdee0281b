//! The write side of a connection.
//!
//! A [`FrameSink`] is shared by everything that sends on one connection. When nothing else is
//! being written, a sender writes its frame straight to the socket from its own task: no hop
//! through another task, which is most of the latency of a sequential call. When the socket
//! is busy (a write would block, or the writer is draining), frames queue in a batch that the
//! connection's writer sends with vectored writes, many frames per syscall. The writer runs in
//! the connection's own task, beside its reader (`one_task.rs`), and takes a turn only when it
//! was handed work. The batch
//! is bounded in bytes: senders wait for space, so a peer that does not read cannot make the
//! queue grow without limit.

use std::future::{poll_fn, Future};
use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::{Buf, Bytes};
use futures::task::AtomicWaker;
use tokio::sync::Notify;

use super::byte_stream::BoxedWrite;
use super::frame_batch::FrameBatch;

/// Bytes queued per connection before senders wait for the writer.
pub(crate) const MAX_QUEUED_BYTES: usize = 1024 * 1024;

/// Bytes queued per connection before a stream's items wait for the writer: far below
/// [`MAX_QUEUED_BYTES`], so that a saturating stream keeps the queue short and a call's reply
/// queued behind its items waits for little.
pub(crate) const MAX_QUEUED_STREAM_BYTES: usize = 64 * 1024;

/// Most slices handed to one vectored write.
const MAX_IO_SLICES: usize = 64;

/// Who writes a queued frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// The sender, right away, when the socket is idle: lowest latency for a lone call.
    Now,
    /// The writer: when many senders are active, it coalesces their frames.
    Background,
    /// Nobody yet: the sender calls [`FrameSink::flush`] once it has queued a burst.
    Corked,
}

/// The sink is closed: the connection failed or is shutting down.
#[derive(Debug)]
pub(crate) struct SinkClosed;

/// Why [`FrameSink::try_send`] did not queue a frame.
#[derive(Debug)]
pub(crate) enum TrySend {
    /// The queue is full; here is the frame back.
    Full(Bytes),
    /// The sink is closed.
    Closed,
}

/// How much of the queue a sender may fill before it waits, and how it is woken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lane {
    /// Calls, replies and uploads: the whole queue ([`MAX_QUEUED_BYTES`]).
    Any,
    /// A server stream's items: [`MAX_QUEUED_STREAM_BYTES`].
    Stream,
}

impl Lane {
    fn limit(self) -> usize {
        match self {
            Self::Any => MAX_QUEUED_BYTES,
            Self::Stream => MAX_QUEUED_STREAM_BYTES,
        }
    }
}

/// Who owns writing to the stream. Exactly one party writes at a time, so frames never
/// interleave; a sender that owns it hands what is left to the writer when it stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    Nobody,
    Sender,
    Writer,
}

/// The shared write side of one connection.
#[derive(Clone)]
pub(crate) struct FrameSink {
    shared: Arc<Shared>,
}

/// Two locks, so that no sender ever waits for a syscall: `queue` is held only to append or
/// take frames; `io` only by the one party that currently owns writing (see [`Owner`]).
struct Shared {
    queue: Mutex<Queue>,
    io: Mutex<Io>,
    /// Set when the writer has work (a backlog handed over, the sink closing or failed),
    /// cleared when it takes the work: a flag, not a queue of wake-ups, so that a task that
    /// runs the writer beside its own work can tell at a glance whether the writer needs a
    /// turn (see [`SinkWriter::is_wanted`]).
    writer_wanted: AtomicBool,
    /// The task that runs the writer, woken when `writer_wanted` is set.
    writer_waker: AtomicWaker,
    /// The writer is waiting for `writer_wanted`, and for nothing else.
    writer_parked: AtomicBool,
    /// The writer has ended: its stream is shut down, or a write failed or stalled.
    writer_ended: AtomicBool,
    /// Wakes senders waiting for room in the queue, all at once: they wait only when the
    /// queue is full to [`MAX_QUEUED_BYTES`], which is rare.
    space: Notify,
    /// Wakes streams waiting for their share of the queue, one at a time (see
    /// [`FrameSink::send_stream_items`]).
    stream_space: Notify,
    /// Writes that moved bytes into the socket, counted (wrapping) so that a liveness check
    /// can tell a backlog that drains (a large frame on a slow link, with a ping behind it)
    /// from one that does not (a peer that stopped reading).
    writes: AtomicU32,
}

/// The stream, and the batch the writer is writing: kept here rather than in the writer's
/// future, which is part of the task of every connection a server holds.
struct Io {
    stream: BoxedWrite,
    writing: FrameBatch,
}

struct Queue {
    batch: FrameBatch,
    /// Who may write to the stream right now. Everyone else only appends to the queue.
    owner: Owner,
    /// No more frames are accepted; the writer drains and shuts the stream down.
    closing: bool,
    failed: bool,
}

impl FrameSink {
    /// Wraps the write half of a connection; the returned [`SinkWriter`] must be run (usually
    /// spawned) for queued frames to be written.
    pub(crate) fn new(io: BoxedWrite) -> (Self, SinkWriter) {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                batch: FrameBatch::default(),
                owner: Owner::Nobody,
                closing: false,
                failed: false,
            }),
            io: Mutex::new(Io {
                stream: io,
                writing: FrameBatch::default(),
            }),
            writer_wanted: AtomicBool::new(false),
            writer_waker: AtomicWaker::new(),
            writer_parked: AtomicBool::new(false),
            writer_ended: AtomicBool::new(false),
            space: Notify::new(),
            stream_space: Notify::new(),
            writes: AtomicU32::new(0),
        });
        let writer = SinkWriter {
            shared: Arc::clone(&shared),
            stall_limit: None,
        };
        (Self { shared }, writer)
    }

    /// Queues `frame` for `delivery`. Waits while the queue is full.
    pub(crate) async fn send(&self, frame: Bytes, delivery: Delivery) -> Result<(), SinkClosed> {
        self.send_within(frame, delivery, Lane::Any).await
    }

    /// Queues a stream's items for the writer, waiting while the queue holds more than
    /// [`MAX_QUEUED_STREAM_BYTES`]: a stream that could fill the whole queue would hold the
    /// replies to other calls behind it.
    ///
    /// Waiting streams are woken one at a time, in the order they began to wait, and each
    /// one that gets in wakes the next while there is room: with many streams on a
    /// connection, waking them all whenever the writer took the queue woke a hundred tasks
    /// for the two or three batches that fit.
    pub(crate) async fn send_stream_items(&self, frames: Bytes) -> Result<(), SinkClosed> {
        self.send_within(frames, Delivery::Background, Lane::Stream)
            .await
    }

    /// Queues `frame` for `delivery`, waiting while the queue holds more than `lane` allows.
    async fn send_within(
        &self,
        mut frame: Bytes,
        delivery: Delivery,
        lane: Lane,
    ) -> Result<(), SinkClosed> {
        let waiters = match lane {
            Lane::Any => &self.shared.space,
            Lane::Stream => &self.shared.stream_space,
        };
        let limit = lane.limit();
        let mut waited = false;
        loop {
            let space = waiters.notified();
            tokio::pin!(space);
            let admitted = {
                let mut queue = self.shared.lock_queue();
                let admitted = self.shared.admit(&mut queue, frame, delivery, limit);
                match admitted {
                    Err(TrySend::Full(_)) => {
                        // Register before unlocking so no wake-up is lost, and make sure
                        // someone drains: corked frames wait for no one.
                        space.as_mut().enable();
                        self.shared.hand_to_writer(&mut queue);
                    }
                    // Woken alone and in: the next stream in line may fit too.
                    Ok(_) if waited && lane == Lane::Stream && queue.batch.remaining() < limit => {
                        self.shared.stream_space.notify_one();
                    }
                    _ => {}
                }
                admitted
            };
            match admitted {
                Ok(true) => {
                    poll_fn(|cx| {
                        self.shared.write_claimed(cx);
                        Poll::Ready(())
                    })
                    .await;
                    return Ok(());
                }
                Ok(false) => return Ok(()),
                Err(TrySend::Closed) => return Err(SinkClosed),
                Err(TrySend::Full(back)) => {
                    frame = back;
                    space.await;
                    waited = true;
                }
            }
        }
    }

    /// Queues `frame` for `delivery` if there is room, without waiting. Hands the frame back
    /// when the queue is full, so that the caller can wait with [`send`](Self::send): keeping
    /// the waiting path out of line keeps the callers' futures small.
    pub(crate) fn try_send(&self, frame: Bytes, delivery: Delivery) -> Result<(), TrySend> {
        let claimed = {
            let mut queue = self.shared.lock_queue();
            self.shared
                .admit(&mut queue, frame, delivery, MAX_QUEUED_BYTES)?
        };
        if claimed {
            // No waker needed: if the socket is full, the writer takes over and waits
            // for it with its own.
            self.shared
                .write_claimed(&mut Context::from_waker(Waker::noop()));
        }
        Ok(())
    }

    /// Writes what is queued now, from the caller's task, unless someone else is writing.
    pub(crate) async fn flush(&self) {
        let claimed = {
            let mut queue = self.shared.lock_queue();
            !queue.failed && self.shared.claim(&mut queue)
        };
        if claimed {
            poll_fn(|cx| {
                self.shared.write_claimed(cx);
                Poll::Ready(())
            })
            .await;
        }
    }

    /// Queues a frame without waiting: for control frames (cancel, pong) sent from places that
    /// cannot wait. Dropped when the queue is full; the writer sends it.
    pub(crate) fn send_now(&self, frame: Bytes) {
        let mut queue = self.shared.lock_queue();
        if queue.closing || queue.failed || queue.batch.remaining() > MAX_QUEUED_BYTES {
            return;
        }
        queue.batch.push(frame);
        self.shared.hand_to_writer(&mut queue);
    }

    /// Queues a small control frame even when the queue is full, without waiting: for frames
    /// that must not be lost and whose number the peer's own progress bounds (a stream's
    /// `Credit`, sent once per half window of items consumed). Dropped only when the sink is
    /// closed or failed, when nobody reads anyway.
    pub(crate) fn send_control(&self, frame: Bytes) {
        let mut queue = self.shared.lock_queue();
        if queue.closing || queue.failed {
            return;
        }
        queue.batch.push(frame);
        self.shared.hand_to_writer(&mut queue);
    }

    /// The count of writes that moved bytes, if frames are waiting to be written (or being
    /// written) now; `None` when everything queued is in the socket.
    pub(crate) fn backlog_writes(&self) -> Option<u32> {
        let queue = self.shared.lock_queue();
        (queue.owner != Owner::Nobody || queue.batch.has_remaining())
            .then(|| self.shared.writes.load(Ordering::Relaxed))
    }

    /// Whether the writer has ended: the stream is shut down, or a write failed or stalled
    /// (the peer stopped reading).
    pub(crate) fn writer_ended(&self) -> bool {
        self.shared.writer_ended.load(Ordering::Acquire)
    }

    /// Whether a write failed (or stalled past its limit): the sink was not closed by its
    /// owner.
    pub(crate) fn write_failed(&self) -> bool {
        self.shared.lock_queue().failed
    }

    /// Stops accepting frames; the writer sends what is queued, then shuts the stream down.
    pub(crate) fn close(&self) {
        self.shared.lock_queue().closing = true;
        self.shared.wake_writer();
        self.shared.wake_all_senders();
    }
}

/// What the writer does next, from the queue's state.
enum Turn {
    /// Write this batch.
    Write(FrameBatch),
    /// Nothing to write, or a sender is writing: wait for work.
    Idle,
    /// Everything is written and the sink is closing: shut the stream down.
    ShutDown,
    /// A write failed.
    Failed,
}

impl Shared {
    /// Takes what the writer is to write, and ownership of writing with it; gives the
    /// ownership up when nothing is left.
    fn take_for_writer(&self) -> Turn {
        let mut queue = self.lock_queue();
        if queue.failed {
            return Turn::Failed;
        }
        match queue.owner {
            // A sender is writing; it hands over when it stops, if anything is left.
            Owner::Sender => return Turn::Idle,
            Owner::Nobody if !queue.closing => return Turn::Idle,
            _ => queue.owner = Owner::Writer,
        }
        if queue.batch.has_remaining() {
            Turn::Write(std::mem::take(&mut queue.batch))
        } else if queue.closing {
            Turn::ShutDown
        } else {
            queue.owner = Owner::Nobody;
            Turn::Idle
        }
    }

    /// Gives the writer work: it takes it at its next turn.
    fn wake_writer(&self) {
        self.writer_wanted.store(true, Ordering::Release);
        self.writer_waker.wake();
    }

    /// Ready once the writer has work, which it then takes.
    fn poll_wanted(&self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.writer_wanted.swap(false, Ordering::AcqRel) {
            // Registered before looking again, so that no wake-up is lost in between.
            self.writer_waker.register(cx.waker());
            if !self.writer_wanted.swap(false, Ordering::AcqRel) {
                self.writer_parked.store(true, Ordering::Relaxed);
                return Poll::Pending;
            }
        }
        self.writer_parked.store(false, Ordering::Relaxed);
        Poll::Ready(())
    }

    /// The queue has room again (the writing party took what was queued): wakes the senders
    /// waiting for the whole queue, and the first stream in line.
    fn room_freed(&self) {
        self.space.notify_waiters();
        self.stream_space.notify_one();
    }

    /// The sink closed or failed: every waiting sender learns it.
    fn wake_all_senders(&self) {
        self.space.notify_waiters();
        self.stream_space.notify_waiters();
    }

    fn lock_queue(&self) -> MutexGuard<'_, Queue> {
        // Every critical section leaves the queue consistent, so a poisoned lock is usable.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_io(&self) -> MutexGuard<'_, Io> {
        self.io.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `frame` for `delivery` if the queue holds no more than `limit` bytes with it
    /// (or nothing). `Ok(true)`: the caller now owns writing and must call
    /// [`write_claimed`](Self::write_claimed).
    fn admit(
        &self,
        queue: &mut Queue,
        frame: Bytes,
        delivery: Delivery,
        limit: usize,
    ) -> Result<bool, TrySend> {
        if queue.closing || queue.failed {
            return Err(TrySend::Closed);
        }
        if queue.batch.remaining() > 0 && queue.batch.remaining() + frame.len() > limit {
            return Err(TrySend::Full(frame));
        }
        queue.batch.push(frame);
        Ok(match delivery {
            _ if queue.owner != Owner::Nobody => false,
            Delivery::Now => self.claim(queue),
            Delivery::Background => {
                self.hand_to_writer(queue);
                false
            }
            Delivery::Corked => false,
        })
    }

    /// Takes ownership of writing if nobody has it and there is something to write.
    fn claim(&self, queue: &mut Queue) -> bool {
        if queue.owner != Owner::Nobody || !queue.batch.has_remaining() {
            return false;
        }
        queue.owner = Owner::Sender;
        true
    }

    /// Makes the writer own writing, unless someone already does.
    fn hand_to_writer(&self, queue: &mut Queue) {
        if queue.owner == Owner::Nobody {
            queue.owner = Owner::Writer;
            self.wake_writer();
        }
    }

    /// Called by the owner of writing (a sender): writes what is queued without blocking, then
    /// gives up ownership, handing any rest to the writer.
    fn write_claimed(&self, cx: &mut Context<'_>) {
        let mut batch = std::mem::take(&mut self.lock_queue().batch);
        let written = write_batch(&mut self.lock_io().stream, &mut batch, &self.writes, cx);
        let mut queue = self.lock_queue();
        match written {
            Poll::Ready(Err(err)) => {
                tracing::debug!(%err, "write failed");
                queue.fail();
                queue.owner = Owner::Nobody;
                drop(queue);
                self.wake_writer();
                self.wake_all_senders();
            }
            Poll::Ready(Ok(())) if !queue.batch.has_remaining() && !queue.closing => {
                queue.owner = Owner::Nobody;
                queue.batch.recycle(batch);
                drop(queue);
                self.room_freed();
            }
            // The socket is full, or more frames arrived meanwhile: the writer takes
            // over, ahead of newer frames with whatever is left of ours. (A full socket also
            // holds the sender's waker now, if it had one; waking it later is harmless.)
            _ => {
                batch.prepend_to(&mut queue.batch);
                queue.owner = Owner::Writer;
                self.wake_writer();
            }
        }
    }
}

impl Queue {
    fn fail(&mut self) {
        self.failed = true;
        self.batch = FrameBatch::default();
    }
}

/// Writes `batch` until it is empty and flushed (`Ready`) or the stream is full (`Pending`).
fn write_batch(
    io: &mut BoxedWrite,
    batch: &mut FrameBatch,
    writes: &AtomicU32,
    cx: &mut Context<'_>,
) -> Poll<std::io::Result<()>> {
    while batch.has_remaining() {
        let mut slices = [IoSlice::new(&[]); MAX_IO_SLICES];
        let count = batch.chunks_vectored(&mut slices);
        match io.as_mut().poll_write_vectored(cx, &slices[..count]) {
            Poll::Ready(Ok(0)) => return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into())),
            Poll::Ready(Ok(written)) => {
                batch.advance(written);
                writes.fetch_add(1, Ordering::Relaxed);
            }
            Poll::Ready(Err(err)) => return Poll::Ready(Err(err)),
            Poll::Pending => return Poll::Pending,
        }
    }
    io.as_mut().poll_flush(cx)
}

/// Whether a [`SinkWriter`] run beside other work in one task needs its turn.
pub(crate) struct WriterTurns {
    shared: Arc<Shared>,
}

impl WriterTurns {
    /// False while the writer waits for work and none was handed to it (polling it then
    /// would find nothing to do), and once it has ended (it must not be polled again).
    pub(crate) fn due(&self) -> bool {
        (!self.shared.writer_parked.load(Ordering::Relaxed)
            || self.shared.writer_wanted.load(Ordering::Acquire))
            && !self.shared.writer_ended.load(Ordering::Relaxed)
    }
}

/// The task half of a [`FrameSink`]: drains the queue whenever senders could not.
pub(crate) struct SinkWriter {
    shared: Arc<Shared>,
    /// How long a write may make no progress before it fails (set by [`run`](Self::run)).
    stall_limit: Option<Duration>,
}

impl SinkWriter {
    /// Runs until the sink is closed and drained (then shuts the stream down) or a write
    /// fails. A write that makes no progress for `stall_limit` fails with `TimedOut`: the peer
    /// is not reading, and holding its replies forever would hold their memory forever.
    ///
    /// A server runs one of these per connection for the connection's life, so its state is
    /// kept small: `async` blocks use their captures in place (an `async fn` would keep a
    /// second copy of its arguments), and the stall timer is boxed, as only a full socket
    /// needs it.
    pub(crate) fn run(
        mut self,
        stall_limit: Option<Duration>,
    ) -> impl Future<Output = std::io::Result<()>> + Send {
        self.stall_limit = stall_limit;
        // One `async` block, the drain loop written in it: a nested future would keep its own
        // copy of the writer's address, and the writer is part of every connection's task.
        async move {
            let outcome: std::io::Result<()> = 'drain: loop {
                poll_fn(|cx| self.shared.poll_wanted(cx)).await;
                // Let the tasks that are ready now queue their frames first: a waker puts this
                // task next in line (tokio's LIFO slot), which would otherwise send one frame
                // per write while many calls are being issued.
                tokio::task::yield_now().await;
                loop {
                    let batch = match self.shared.take_for_writer() {
                        Turn::Write(batch) => batch,
                        Turn::Idle => break,
                        Turn::ShutDown => {
                            break 'drain poll_fn(|cx| {
                                self.shared.lock_io().stream.as_mut().poll_shutdown(cx)
                            })
                            .await
                        }
                        Turn::Failed => break 'drain Err(std::io::ErrorKind::BrokenPipe.into()),
                    };
                    self.shared.lock_io().writing = batch;
                    self.shared.room_freed();
                    if let Err(err) = self.write_all().await {
                        break 'drain Err(err);
                    }
                    let written = std::mem::take(&mut self.shared.lock_io().writing);
                    self.shared.lock_queue().batch.recycle(written);
                }
            };
            let mut queue = self.shared.lock_queue();
            if outcome.is_err() {
                queue.fail();
            }
            queue.closing = true;
            drop(queue);
            self.shared.writer_ended.store(true, Ordering::Release);
            self.shared.wake_all_senders();
            outcome
        }
    }

    /// What a task that runs this writer beside its own work looks at to skip the writer's
    /// turn while it has nothing to do (see `transport::one_task`).
    pub(crate) fn turns(&self) -> WriterTurns {
        WriterTurns {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Writes the batch in [`Io::writing`] out; only a write the socket is not ready for
    /// waits, under the stall limit.
    #[allow(
        clippy::manual_async_fn,
        reason = "an `async fn` keeps a second copy of its arguments in its state"
    )]
    fn write_all(&self) -> impl Future<Output = std::io::Result<()>> + Send + '_ {
        async move {
            let mut written = poll_fn(|cx| {
                let mut io = self.shared.lock_io();
                let Io { stream, writing } = &mut *io;
                write_batch(stream, writing, &self.shared.writes, cx)
            });
            if let Poll::Ready(outcome) = futures::poll!(&mut written) {
                return outcome;
            }
            match self.stall_limit {
                Some(limit) => Box::pin(tokio::time::timeout(limit, written))
                    .await
                    .map_err(|_| {
                        std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            "the peer stopped reading; write stalled",
                        )
                    })?,
                None => written.await,
            }
        }
    }
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
