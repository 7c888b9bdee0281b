//! The 26 bytes in front of every frame's payload, length prefix included.

use bytes::BufMut;

use crate::method::MethodId;
use crate::wire::{FrameKind, FRAME_OVERHEAD};

/// Writes a frame header (length prefix included) for a frame of `len` bytes after the prefix.
pub(crate) fn put_header(
    dst: &mut impl BufMut,
    len: usize,
    kind: FrameKind,
    flags: u8,
    request_id: u64,
    method: MethodId,
    deadline_ms: u32,
) {
    // Assembled in a fixed array and written with one copy: six `put_*` calls each check
    // and advance the destination, which cost more than the rest of a small frame's framing.
    let mut header = [0u8; FRAME_OVERHEAD];
    header[..4].copy_from_slice(&(len as u32).to_be_bytes());
    header[4] = kind as u8;
    header[5] = flags;
    header[6..14].copy_from_slice(&request_id.to_be_bytes());
    header[14..22].copy_from_slice(&method.get().to_be_bytes());
    header[22..26].copy_from_slice(&deadline_ms.to_be_bytes());
    dst.put_slice(&header);
}
