//! A server stream's items framed back to back in one buffer: the items a producer has ready
//! go to the connection as one write, with one allocation and one queue entry for all of
//! them, where each item used to take its own.
//!
//! An item is framed in place: its header is reserved, the codec appends the payload after it,
//! and the header is written over the reservation once the length is known. An item that
//! fails (a panic, a codec error, a frame over the client's limit) is cut off again, so the
//! batch only ever holds whole frames.

use bytes::{Bytes, BytesMut};

use std::sync::Arc;

use crate::compression::FrameCompressor;
use crate::method::MethodId;
use crate::transport::frame::{
    put_header, FrameError, FrameKind, FRAME_OVERHEAD, LENGTH_PREFIX_LEN,
};

/// A batch is sent once it holds this many bytes, even if more items are ready: a few dozen
/// small items, or one 32 KiB one.
const BATCH_BYTES: usize = 32 * 1024;

/// The largest item frame that sizes the room a new batch starts with: a larger item grows
/// the buffer (one copy of the batch before it), as it would anyway.
const MAX_ITEM_HINT: usize = BATCH_BYTES;

/// Where an item's frame starts in the batch, while the item is being encoded.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ItemStart(usize);

/// The framed items of one stream, waiting to be sent together.
#[derive(Debug)]
pub(crate) struct ItemBatch {
    buf: BytesMut,
    request_id: u64,
    /// The largest frame the client accepts.
    send_limit: u32,
    /// Items in the batch.
    items: u64,
    /// The largest item frame seen (up to [`MAX_ITEM_HINT`]): a batch ends with the item that
    /// takes it past [`BATCH_BYTES`], so it may hold that much more.
    largest_frame: usize,
    /// Compresses each item's payload when the connection negotiated compression.
    compressor: Option<Arc<FrameCompressor>>,
}

impl ItemBatch {
    /// An empty batch of stream `request_id`'s items, each at most `send_limit` long
    /// uncompressed, and compressed by `compressor` when that pays.
    pub(crate) fn new(
        request_id: u64,
        send_limit: u32,
        compressor: Option<Arc<FrameCompressor>>,
    ) -> Self {
        Self {
            buf: BytesMut::new(),
            request_id,
            send_limit,
            items: 0,
            largest_frame: 0,
            compressor,
        }
    }

    /// Reserves the header of the next item; its payload goes into [`payload`](Self::payload).
    ///
    /// A new batch starts with room for all of it: a buffer that ran out in the middle of a
    /// batch copied the items before to grow (a 1 KiB item stream's server spent a fifth of
    /// its instructions there). The room is made for two batches, so that the next one
    /// usually fits in what this one leaves.
    pub(crate) fn begin(&mut self) -> ItemStart {
        let wanted = if self.buf.is_empty() {
            BATCH_BYTES + self.largest_frame.max(FRAME_OVERHEAD)
        } else {
            FRAME_OVERHEAD
        };
        if self.buf.capacity() - self.buf.len() < wanted {
            self.buf
                .reserve(2 * (BATCH_BYTES + self.largest_frame.max(FRAME_OVERHEAD)));
        }
        let start = self.buf.len();
        self.buf.resize(start + FRAME_OVERHEAD, 0);
        ItemStart(start)
    }

    /// The buffer the codec appends the item's payload to.
    pub(crate) fn payload(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Writes the header of the item that starts at `start`: it is in the batch. A frame over
    /// the client's limit is cut off again, and the error says by how much.
    pub(crate) fn finish(&mut self, start: ItemStart) -> Result<(), FrameError> {
        let len = self.buf.len() - start.0 - LENGTH_PREFIX_LEN;
        if len > self.send_limit as usize {
            self.abandon(start);
            return Err(FrameError::TooLarge {
                len: len as u64,
                max: self.send_limit,
            });
        }
        let flags = match &self.compressor {
            Some(compressor) => {
                compressor.compress_in_place(FrameKind::Item, &mut self.buf, start.0)
            }
            None => 0,
        };
        let len = self.buf.len() - start.0 - LENGTH_PREFIX_LEN;
        self.largest_frame = self
            .largest_frame
            .max(LENGTH_PREFIX_LEN + len)
            .min(MAX_ITEM_HINT);
        put_header(
            &mut &mut self.buf[start.0..start.0 + FRAME_OVERHEAD],
            len,
            FrameKind::Item,
            flags,
            self.request_id,
            MethodId::new(0),
            0,
        );
        self.items += 1;
        Ok(())
    }

    /// Cuts off the item that starts at `start` (it was not produced, or failed).
    pub(crate) fn abandon(&mut self, start: ItemStart) {
        self.buf.truncate(start.0);
    }

    /// Whether the batch is large enough to be sent without waiting for more items.
    pub(crate) fn is_full(&self) -> bool {
        self.buf.len() >= BATCH_BYTES
    }

    /// The batch's frames and how many items they are, leaving it empty; `None` when it holds
    /// no item.
    pub(crate) fn take(&mut self) -> Option<(Bytes, u64)> {
        if self.items == 0 {
            return None;
        }
        let frames = self.buf.split().freeze();
        Some((frames, std::mem::take(&mut self.items)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::frame::{Frame, FrameCodec};
    use tokio_util::codec::Decoder;

    fn push(batch: &mut ItemBatch, payload: &[u8]) -> Result<(), FrameError> {
        let start = batch.begin();
        batch.payload().extend_from_slice(payload);
        batch.finish(start)
    }

    fn frames(mut bytes: BytesMut) -> Vec<Frame> {
        let mut codec = FrameCodec::for_version(u32::MAX, crate::wire::STREAMS_SINCE_VERSION);
        let mut frames = Vec::new();
        while let Some(frame) = codec.decode(&mut bytes).expect("whole frames") {
            frames.push(frame);
        }
        assert!(bytes.is_empty(), "no bytes after the last frame");
        frames
    }

    #[test]
    fn items_are_framed_back_to_back() {
        let mut batch = ItemBatch::new(7, 1024, None);
        push(&mut batch, b"one").unwrap();
        push(&mut batch, b"").unwrap();
        push(&mut batch, b"three").unwrap();
        let (bytes, items) = batch.take().unwrap();
        assert_eq!(items, 3);
        let frames = frames(BytesMut::from(&bytes[..]));
        let payloads: Vec<&[u8]> = frames.iter().map(|f| &f.payload[..]).collect();
        assert_eq!(payloads, [&b"one"[..], b"", b"three"]);
        assert!(frames
            .iter()
            .all(|f| f.kind == FrameKind::Item && f.request_id == 7));
        assert!(batch.take().is_none(), "taken: the batch is empty");
    }

    #[test]
    fn an_abandoned_or_oversized_item_leaves_only_whole_frames() {
        let mut batch = ItemBatch::new(1, 64, None);
        push(&mut batch, b"kept").unwrap();
        let start = batch.begin();
        batch.payload().extend_from_slice(b"half-encoded");
        batch.abandon(start);
        assert!(matches!(
            push(&mut batch, &[0; 100]),
            Err(FrameError::TooLarge { max: 64, .. })
        ));
        push(&mut batch, b"after").unwrap();
        let (bytes, items) = batch.take().unwrap();
        assert_eq!(items, 2);
        let frames = frames(BytesMut::from(&bytes[..]));
        assert_eq!(frames[0].payload, &b"kept"[..]);
        assert_eq!(frames[1].payload, &b"after"[..]);
    }

    #[test]
    fn a_batch_never_grows_in_the_middle() {
        let mut batch = ItemBatch::new(1, u32::MAX, None);
        // The earlier batches are still queued (shared) when the next one is framed.
        let mut queued = Vec::new();
        for _ in 0..20 {
            push(&mut batch, &[7; 1000]).unwrap();
            let at = batch.payload().as_ptr();
            while !batch.is_full() {
                push(&mut batch, &[7; 1000]).unwrap();
            }
            assert_eq!(batch.payload().as_ptr(), at, "the batch moved to grow");
            queued.push(batch.take().unwrap().0);
        }
    }

    #[test]
    fn a_batch_is_full_at_its_size() {
        let mut batch = ItemBatch::new(1, u32::MAX, None);
        while !batch.is_full() {
            push(&mut batch, &[0; 1000]).unwrap();
        }
        assert_eq!(batch.take().unwrap().1, 32);
    }
}
