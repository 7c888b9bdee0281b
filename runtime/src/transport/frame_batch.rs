//! [`FrameBatch`]: frames queued for the writer, viewed as one [`Buf`] so that a vectored
//! write sends many of them without copying.

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::{Buf, Bytes};

/// Queued frames viewed as one [`Buf`], so vectored writes send them without copying.
#[derive(Default)]
pub(crate) struct FrameBatch {
    frames: VecDeque<Bytes>,
    remaining: usize,
}

impl FrameBatch {
    /// Moves these frames in front of `later`'s.
    pub(crate) fn prepend_to(self, later: &mut FrameBatch) {
        let mut frames = self.frames;
        frames.extend(later.frames.drain(..));
        later.frames = frames;
        later.remaining += self.remaining;
    }

    /// Keeps the storage of `written`, a batch that has been sent, when this batch is empty:
    /// the queue is taken whole for every write, and handing it back its storage saves an
    /// allocation per frame.
    pub(crate) fn recycle(&mut self, written: FrameBatch) {
        if self.frames.is_empty() && written.frames.capacity() > self.frames.capacity() {
            debug_assert_eq!(written.remaining, 0);
            let mut frames = written.frames;
            frames.clear();
            self.frames = frames;
        }
    }

    pub(crate) fn push(&mut self, frame: Bytes) {
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
