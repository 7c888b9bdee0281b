//! [`FrameBuf`]: an outgoing frame, encoded in place after its reserved header.

use bytes::{BufMut, Bytes, BytesMut};

use super::error::FrameError;
use super::header::put_header;
use crate::compression::FrameCompressor;
use crate::method::MethodId;
use crate::wire::{FrameKind, FLAG_METADATA, FRAME_OVERHEAD, LENGTH_PREFIX_LEN};

/// An outgoing frame under construction: the codec encodes the payload straight after a
/// reserved header.
///
/// Small frames are cut from per-thread chunks of 2 KiB: a finished frame is split
/// off the chunk, and the next frame is encoded into the room after it, so a chunk's frames
/// share one allocation. A chunk whose frames have all been dropped (written, in the usual
/// case) is reused in place. A frame that outgrows the room left gets a buffer of its own.
/// The cost of sharing: a frame still alive keeps its whole chunk allocated.
#[derive(Debug)]
pub struct FrameBuf {
    buf: BytesMut,
    flags: u8,
}

/// The size of the chunks small frames are cut from. Small enough that a frame kept alive
/// (a reply waiting for a slow peer) pins little; large enough for a few dozen typical calls.
pub(super) const CHUNK: usize = 2 * 1024;

/// Room under this size is not worth keeping for the next frame.
const MIN_ROOM: usize = 64;

thread_local! {
    /// The room left in this thread's current chunk (`None` while a frame is being built, or
    /// when there is none).
    static ROOM: std::cell::Cell<Option<BytesMut>> = const { std::cell::Cell::new(None) };
}

/// An empty buffer with room for at least `capacity` bytes: this thread's current chunk, the
/// same chunk again if all its frames are gone, or a new one.
fn start_frame(capacity: usize) -> BytesMut {
    if let Some(mut room) = ROOM.take() {
        if room.capacity() >= capacity || room.try_reclaim(capacity) {
            return room;
        }
    }
    BytesMut::with_capacity(capacity.max(CHUNK))
}

/// Splits the finished frame off `buf`, keeping the room after it for the next frame when
/// the frame was cut from a chunk (a large frame's leftover is not kept: small frames cut from
/// it would keep the large allocation alive).
fn cut_frame(mut buf: BytesMut) -> Bytes {
    let frame = buf.split().freeze();
    if frame.len() <= CHUNK && buf.capacity() >= MIN_ROOM {
        ROOM.set(Some(buf));
    }
    frame
}

impl FrameBuf {
    /// An empty frame with room for `payload_hint` bytes of payload.
    pub fn with_capacity(payload_hint: usize) -> Self {
        let mut buf = start_frame(FRAME_OVERHEAD + payload_hint);
        buf.put_bytes(0, FRAME_OVERHEAD);
        Self { buf, flags: 0 }
    }

    /// An empty frame that starts with `metadata` (and sets [`FLAG_METADATA`]); the payload
    /// is appended after it. Empty metadata writes nothing, so the frame is readable by a
    /// version 1 peer.
    pub fn with_metadata(payload_hint: usize, metadata: &crate::Metadata) -> Self {
        if metadata.is_empty() {
            return Self::with_capacity(payload_hint);
        }
        let mut frame = Self::with_capacity(metadata.encoded_len() + payload_hint);
        metadata.encode(&mut frame.buf);
        frame.flags = FLAG_METADATA;
        frame
    }

    /// The buffer the payload is appended to (its first bytes are the reserved header).
    pub fn payload_writer(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Bytes of payload written so far.
    pub fn payload_len(&self) -> usize {
        self.buf.len() - FRAME_OVERHEAD
    }

    /// The reply metadata and the payload, for a door that frames replies its own way (gRPC):
    /// an error when the metadata block does not decode.
    #[cfg(feature = "grpc")]
    pub(crate) fn into_parts(self) -> Result<(Option<crate::Metadata>, Bytes), String> {
        let body = self.buf.freeze().slice(FRAME_OVERHEAD..);
        if self.flags & FLAG_METADATA == 0 {
            return Ok((None, body));
        }
        let (metadata, payload) = crate::Metadata::decode(body).map_err(|err| err.to_string())?;
        Ok((Some(metadata), payload))
    }

    /// Writes the header and returns the wire bytes, or an error when the frame would exceed
    /// `max_frame_len` (the peer would reject it).
    pub fn finish(
        self,
        kind: FrameKind,
        request_id: u64,
        method: MethodId,
        deadline_ms: u32,
        max_frame_len: u32,
    ) -> Result<Bytes, FrameError> {
        self.finish_compressed(kind, request_id, method, deadline_ms, max_frame_len, None)
    }

    /// [`finish`](Self::finish), compressing the payload with `compressor` when it pays. The
    /// limit applies to the uncompressed frame, as the receiver checks it.
    pub(crate) fn finish_compressed(
        mut self,
        kind: FrameKind,
        request_id: u64,
        method: MethodId,
        deadline_ms: u32,
        max_frame_len: u32,
        compressor: Option<&FrameCompressor>,
    ) -> Result<Bytes, FrameError> {
        let uncompressed_len = self.buf.len() - LENGTH_PREFIX_LEN;
        if uncompressed_len > max_frame_len as usize {
            return Err(FrameError::TooLarge {
                len: uncompressed_len as u64,
                max: max_frame_len,
            });
        }
        if let Some(compressor) = compressor {
            self.flags |= compressor.compress_in_place(kind, &mut self.buf, 0);
        }
        let len = self.buf.len() - LENGTH_PREFIX_LEN;
        // Written in place, over the bytes reserved for it: no buffer of its own.
        put_header(
            &mut &mut self.buf[..FRAME_OVERHEAD],
            len,
            kind,
            self.flags,
            request_id,
            method,
            deadline_ms,
        );
        Ok(cut_frame(self.buf))
    }
}
