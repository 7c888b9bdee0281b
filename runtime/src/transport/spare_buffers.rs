//! Read buffers a busy connection has moved on from, kept to read into again once the frames
//! read into them are gone.
//!
//! A frame's payload shares its read buffer's allocation, so while a caller (or a stream's
//! consumer) still holds frames, the reader cannot reuse the buffer in place and has to read
//! into a new one. Allocated and freed at the pace of the reads, those buffers made the
//! allocator hand memory back to the kernel and fault it in again on the next read: for a
//! saturating stream of 1 KiB items, a fifth of the client's time went to page faults. The
//! reader now keeps the buffers it leaves, oldest first; frames are consumed in the order they
//! were read, so the oldest is the first to come free, and a free one is read into again.

use std::collections::VecDeque;

use bytes::BytesMut;

/// Most buffers kept: with reads of up to 64 KiB, 1 MiB a connection, about one stream's
/// window of items still held by their consumer.
const MAX_SPARE: usize = 16;

/// Larger buffers (made for one large frame) are not kept: the next large frame may be far
/// off, and sixteen of them would be a lot of memory to hold for it.
const MAX_KEPT_SIZE: usize = 128 * 1024;

/// The buffers a reader has left, oldest first, each with the size it was allocated with.
#[derive(Debug, Default)]
pub(crate) struct SpareBuffers {
    left: VecDeque<(BytesMut, usize)>,
    /// Buffers handed out again, for the tests to see.
    #[cfg(test)]
    reused: usize,
}

impl SpareBuffers {
    /// Keeps `buffer`, allocated with `size` bytes, which the reader is leaving, to read into
    /// again once it is free: its frames are gone. The oldest kept buffer is let go when there
    /// are too many.
    pub(crate) fn keep(&mut self, mut buffer: BytesMut, size: usize) {
        if size > MAX_KEPT_SIZE {
            return;
        }
        buffer.clear();
        if self.left.len() == MAX_SPARE {
            self.left.pop_front();
        }
        self.left.push_back((buffer, size));
    }

    /// The oldest kept buffer, with its size, if it is free and has room for `capacity`
    /// bytes. Buffers too small for it (left while the reads were growing) are let go on the
    /// way: their frames keep them only as long as they live.
    pub(crate) fn take_free(&mut self, capacity: usize) -> Option<(BytesMut, usize)> {
        while self.left.front()?.1 < capacity {
            self.left.pop_front();
        }
        let (oldest, _) = self.left.front_mut()?;
        // Only a buffer no frame shares any more can be reclaimed whole.
        if !oldest.try_reclaim(capacity) {
            return None;
        }
        #[cfg(test)]
        {
            self.reused += 1;
        }
        self.left.pop_front()
    }

    /// How many buffers are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.left.len()
    }

    /// How many kept buffers were handed out again.
    #[cfg(test)]
    pub(crate) fn reused(&self) -> usize {
        self.reused
    }

    /// Lets go of every kept buffer: the connection has calmed down.
    pub(crate) fn clear(&mut self) {
        self.left.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_buffer_is_read_into_again_once_its_frames_are_gone() {
        let mut spare = SpareBuffers::default();
        let mut buffer = BytesMut::with_capacity(1024);
        buffer.extend_from_slice(&[7; 100]);
        let frame = buffer.split_to(100).freeze();
        let allocation = frame.as_ptr();
        spare.keep(buffer, 1024);
        assert!(spare.take_free(1024).is_none(), "its frame is still held");
        drop(frame);
        let (again, size) = spare.take_free(1024).expect("free now");
        assert_eq!(size, 1024);
        assert_eq!(
            again.as_ptr(),
            allocation,
            "the same allocation, from its start"
        );
        assert!(again.is_empty() && again.capacity() >= 1024);
        assert!(spare.take_free(1).is_none(), "taken: nothing left");
    }

    #[test]
    fn a_free_buffer_too_small_is_let_go() {
        let mut spare = SpareBuffers::default();
        spare.keep(BytesMut::with_capacity(16), 16);
        spare.keep(BytesMut::with_capacity(1024), 1024);
        assert!(spare.take_free(1024).is_some());
        assert_eq!(spare.len(), 0);
    }

    #[test]
    fn the_oldest_goes_first_and_only_so_many_are_kept() {
        let mut spare = SpareBuffers::default();
        let held: Vec<_> = (0..MAX_SPARE + 1)
            .map(|_| {
                let mut buffer = BytesMut::with_capacity(64);
                buffer.extend_from_slice(&[1; 8]);
                let frame = buffer.split_to(8).freeze();
                spare.keep(buffer, 64);
                frame
            })
            .collect();
        assert_eq!(spare.left.len(), MAX_SPARE);
        drop(held);
        let mut taken = 0;
        while spare.take_free(64).is_some() {
            taken += 1;
        }
        assert_eq!(taken, MAX_SPARE);
    }
}
