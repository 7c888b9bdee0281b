//! [`FrameCodec`]: tokio-util's `Decoder` and `Encoder` for [`Frame`]s, with the length
//! prefix checked against the maximum before any memory is reserved.

use bytes::{Buf, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::decoded::Frame;
use super::error::FrameError;
use super::header::put_header;
use crate::compression::{decompress_payload, Algorithm, DecompressError};
use crate::method::MethodId;
use crate::wire::{
    FrameKind, DEFAULT_MAX_FRAME_LEN, FLAG_COMPRESSED, FLAG_METADATA, FRAME_OVERHEAD, HEADER_LEN,
    LENGTH_PREFIX_LEN,
};

/// Read buffers larger than this are released once they are empty.
pub(super) const SHRINK_ABOVE: usize = 64 * 1024;

/// A buffer that a read fills completely doubles, up to this size.
const GROW_UP_TO: usize = 64 * 1024;

/// Decodes and encodes [`Frame`]s, enforcing a maximum length.
#[derive(Clone, Copy, Debug)]
pub struct FrameCodec {
    max_frame_len: u32,
    allowed_flags: u8,
    /// The connection's protocol version: a kind newer than it is an unknown kind.
    version: u8,
    /// The algorithm compressed frames arrive in, when the connection negotiated one.
    compression: Option<Algorithm>,
    /// Whether decoding reserves room in the buffer for the rest of a partial frame (off
    /// when a [`FrameReader`](crate::transport::frame_reader) manages its buffers itself).
    reserves: bool,
}

impl FrameCodec {
    /// A codec that rejects frames whose length prefix exceeds `max_frame_len`, and any
    /// non-zero flags (protocol version 1).
    pub fn new(max_frame_len: u32) -> Self {
        Self {
            max_frame_len,
            allowed_flags: 0,
            version: 1,
            compression: None,
            reserves: true,
        }
    }

    /// The codec of a connection that negotiated protocol `version`: version 2 and later
    /// allow [`FLAG_METADATA`], version 3 and later the stream kinds.
    pub fn for_version(max_frame_len: u32, version: u8) -> Self {
        Self {
            max_frame_len,
            allowed_flags: if version >= 2 { FLAG_METADATA } else { 0 },
            version,
            compression: None,
            reserves: true,
        }
    }

    /// The same codec on a connection that negotiated zstd (protocol version 5): frames that
    /// set [`FLAG_COMPRESSED`] are checked against the frame limit, decompressed as they are
    /// decoded, and yielded uncompressed, with the flag cleared.
    #[cfg(feature = "zstd")]
    pub fn accepting_zstd(self) -> Self {
        self.decompressing(Some(Algorithm::Zstd))
    }

    /// The same codec on a connection that negotiated `compression`: frames that set
    /// [`FLAG_COMPRESSED`] are decompressed as they are decoded (and the flag cleared).
    pub(crate) fn decompressing(self, compression: Option<Algorithm>) -> Self {
        let compressed = if compression.is_some() {
            FLAG_COMPRESSED
        } else {
            0
        };
        Self {
            compression,
            allowed_flags: self.allowed_flags | compressed,
            ..self
        }
    }

    /// The configured maximum.
    pub fn max_frame_len(&self) -> u32 {
        self.max_frame_len
    }

    /// The same codec, leaving the room in the buffer to its caller: decoding a partial frame
    /// reserves nothing.
    pub(crate) fn without_reserving(self) -> Self {
        Self {
            reserves: false,
            ..self
        }
    }

    /// How many more bytes the frame at the start of `src` needs before it decodes: 0 when
    /// it is whole, or when its length is not valid (decoding it says why).
    pub(crate) fn missing(&self, src: &[u8]) -> usize {
        let Some(prefix) = src.get(..LENGTH_PREFIX_LEN) else {
            return LENGTH_PREFIX_LEN - src.len();
        };
        let len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
        if len > self.max_frame_len {
            return 0;
        }
        (LENGTH_PREFIX_LEN + len as usize).saturating_sub(src.len())
    }
}

impl Default for FrameCodec {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME_LEN)
    }
}

impl Decoder for FrameCodec {
    type Item = Frame;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        let Some(prefix) = src.get(..LENGTH_PREFIX_LEN) else {
            if self.reserves {
                grow_if_full(src);
            }
            return Ok(None);
        };
        let len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
        // Validate before reserving: the length comes from the peer.
        if len > self.max_frame_len {
            return Err(FrameError::TooLarge {
                len: len.into(),
                max: self.max_frame_len,
            });
        }
        if (len as usize) < HEADER_LEN {
            return Err(FrameError::TooShort { len });
        }
        let total = LENGTH_PREFIX_LEN + len as usize;
        if src.len() < total {
            if self.reserves {
                grow_if_full(src);
                src.reserve(total - src.len());
            }
            return Ok(None);
        }
        // The header is read from one slice, and the buffer advanced once: `get_*` calls on
        // the `BytesMut` would advance it field by field.
        let header = &src[LENGTH_PREFIX_LEN..FRAME_OVERHEAD];
        let kind_byte = header[0];
        let kind = FrameKind::from_u8(kind_byte)
            .filter(|kind| kind.since_version() <= self.version)
            .ok_or(FrameError::UnknownKind(kind_byte))?;
        let flags = header[1];
        if flags & !self.allowed_flags != 0 {
            return Err(FrameError::ReservedFlags(flags));
        }
        let request_id = u64::from_be_bytes(array_at(header, 2));
        let method = MethodId::new(u64::from_be_bytes(array_at(header, 10)));
        let deadline_ms = u32::from_be_bytes(array_at(header, 18));
        src.advance(FRAME_OVERHEAD);
        let mut payload = src.split_to(len as usize - HEADER_LEN).freeze();
        if src.is_empty() && src.capacity() > SHRINK_ABOVE {
            // A large frame left a large buffer behind: give it back rather than keep it for
            // the life of an (often idle) connection.
            *src = BytesMut::new();
        }
        let mut flags = flags;
        if flags & FLAG_COMPRESSED != 0 {
            payload = self.decompress(kind, payload)?;
            flags &= !FLAG_COMPRESSED;
        }
        Ok(Some(Frame {
            kind,
            request_id,
            method,
            deadline_ms,
            flags,
            payload,
        }))
    }
}

impl FrameCodec {
    /// The uncompressed payload of a frame of `kind` that set [`FLAG_COMPRESSED`] (which only
    /// a connection that negotiated compression allows).
    fn decompress(
        &self,
        kind: FrameKind,
        payload: bytes::Bytes,
    ) -> Result<bytes::Bytes, FrameError> {
        let Some(algorithm) = self.compression else {
            return Err(DecompressError::NotNegotiated.into());
        };
        if !kind.may_be_compressed() {
            return Err(DecompressError::KindNotCompressible(kind as u8).into());
        }
        Ok(decompress_payload(algorithm, payload, self.max_frame_len)?)
    }
}

/// The `N` bytes of `bytes` from `at` (the caller has checked the length).
fn array_at<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut array = [0u8; N];
    array.copy_from_slice(&bytes[at..at + N]);
    array
}

/// When a read filled the whole buffer the peer is sending in bulk: double the buffer (up to
/// [`GROW_UP_TO`]) so the next read takes more per syscall. Idle connections keep a small one.
fn grow_if_full(src: &mut BytesMut) {
    if src.len() == src.capacity() && src.capacity() < GROW_UP_TO {
        src.reserve(src.capacity().max(1024));
    }
}

impl Encoder<Frame> for FrameCodec {
    type Error = FrameError;

    fn encode(&mut self, frame: Frame, dst: &mut BytesMut) -> Result<(), FrameError> {
        let len = HEADER_LEN + frame.payload.len();
        if len > self.max_frame_len as usize {
            return Err(FrameError::TooLarge {
                len: len as u64,
                max: self.max_frame_len,
            });
        }
        dst.reserve(LENGTH_PREFIX_LEN + len);
        put_header(
            dst,
            len,
            frame.kind,
            frame.flags,
            frame.request_id,
            frame.method,
            frame.deadline_ms,
        );
        dst.extend_from_slice(&frame.payload);
        Ok(())
    }
}
