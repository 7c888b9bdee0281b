//! The write side of a connection: one task per connection drains a queue of encoded frames
//! and writes everything that is queued with as few syscalls as possible.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::time::Duration;

use bytes::{Buf, Bytes};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Frames queued per connection before senders wait: bounds memory when the peer reads slowly.
pub(crate) const WRITE_QUEUE_FRAMES: usize = 1024;

/// Most bytes gathered into one write; larger batches are split.
const MAX_BATCH_BYTES: usize = 256 * 1024;

/// Writes queued frames until every sender is gone, then shuts the stream down.
///
/// A write that makes no progress for `stall_limit` fails with `TimedOut`: the peer is not
/// reading, and holding its replies forever would hold their memory forever.
pub(crate) async fn run_writer<W>(
    mut io: W,
    mut queue: mpsc::Receiver<Bytes>,
    stall_limit: Option<Duration>,
) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let mut batch = FrameBatch::default();
    while let Some(first) = queue.recv().await {
        batch.push(first);
        // Coalesce whatever else is already queued into the same write.
        while batch.remaining < MAX_BATCH_BYTES {
            match queue.try_recv() {
                Ok(frame) => batch.push(frame),
                Err(_) => break,
            }
        }
        match stall_limit {
            Some(limit) => tokio::time::timeout(limit, io.write_all_buf(&mut batch))
                .await
                .map_err(|_| {
                    std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the peer stopped reading; write stalled",
                    )
                })??,
            None => io.write_all_buf(&mut batch).await?,
        }
    }
    io.shutdown().await
}

/// Queued frames viewed as one [`Buf`], so vectored writes send them without copying.
#[derive(Default)]
struct FrameBatch {
    frames: VecDeque<Bytes>,
    remaining: usize,
}

impl FrameBatch {
    fn push(&mut self, frame: Bytes) {
        self.remaining += frame.len();
        self.frames.push_back(frame);
    }
}

impl Buf for FrameBatch {
    fn remaining(&self) -> usize {
        self.remaining
    }

    fn chunk(&self) -> &[u8] {
        self.frames.front().map(|f| f.as_ref()).unwrap_or(&[])
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
        // Drop empty frames so `chunk` never returns an empty slice while bytes remain.
        while self.frames.front().is_some_and(|f| f.is_empty()) {
            self.frames.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn writes_all_queued_frames_in_order_then_closes() {
        let (client, mut server) = tokio::io::duplex(7);
        let (tx, rx) = mpsc::channel(8);
        let writer = tokio::spawn(run_writer(client, rx, None));
        for chunk in ["ab", "", "cdefgh", "ijklmnopq"] {
            tx.send(Bytes::from(chunk)).await.unwrap();
        }
        drop(tx);
        let mut out = String::new();
        server.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "abcdefghijklmnopq");
        writer.await.unwrap().unwrap();
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
