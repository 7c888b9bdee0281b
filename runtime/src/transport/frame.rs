//! Length-prefixed frames: the unit that travels on a connection after the handshake.
//!
//! ```text
//! offset  size  field
//!      0     4  length      u32 BE, bytes after this field (header + payload), <= max frame length
//!      4     1  kind        FrameKind
//!      5     1  flags       0, or FLAG_METADATA on a protocol-version-2 connection
//!      6     8  request id  u64 BE
//!     14     8  method id   u64 BE (0 where the kind has no method)
//!     22     4  deadline    u32 BE, milliseconds the caller will wait; 0 = no deadline
//!     26     -  payload
//! ```
//!
//! [`FrameCodec`] implements tokio-util's [`Decoder`] and [`Encoder`]. The decoder checks the
//! length prefix against the configured maximum *before* it reserves any memory, so a peer
//! cannot make the reader allocate more than one maximum-size frame.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::method::MethodId;
use crate::wire::ErrorCode;

pub use wirecall_wire::{
    FrameKind, DEFAULT_MAX_FRAME_LEN, FLAG_METADATA, FRAME_OVERHEAD, HEADER_LEN, LENGTH_PREFIX_LEN,
};

pub use wirecall_wire::{CREDIT_LEN, MAX_STREAM_CREDIT};

/// Read buffers larger than this are released once they are empty.
const SHRINK_ABOVE: usize = 64 * 1024;

/// A buffer that a read fills completely doubles, up to this size.
const GROW_UP_TO: usize = 64 * 1024;

/// One decoded frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// What the frame is for.
    pub kind: FrameKind,
    /// Correlates requests with their responses; chosen by the caller.
    pub request_id: u64,
    /// The method called (requests and notifications) or answered.
    pub method: MethodId,
    /// Milliseconds the caller will wait for this request; 0 means no deadline.
    pub deadline_ms: u32,
    /// The flags byte: 0, or [`FLAG_METADATA`].
    pub flags: u8,
    /// The codec-encoded body (or an error body, see [`ErrorBody`]), after the metadata
    /// block when [`FLAG_METADATA`] is set.
    pub payload: Bytes,
}

impl Frame {
    /// A frame without payload.
    pub fn control(kind: FrameKind, request_id: u64) -> Self {
        Self {
            kind,
            request_id,
            method: MethodId::new(0),
            deadline_ms: 0,
            flags: 0,
            payload: Bytes::new(),
        }
    }

    /// An `Error` frame for `request_id` (0 for the whole connection).
    pub fn error(request_id: u64, method: MethodId, code: ErrorCode, message: &str) -> Self {
        Self {
            kind: FrameKind::Error,
            request_id,
            method,
            deadline_ms: 0,
            flags: 0,
            payload: ErrorBody::encode(code, message),
        }
    }

    /// The whole frame as wire bytes.
    pub fn to_bytes(&self) -> Bytes {
        let mut buf = BytesMut::with_capacity(FRAME_OVERHEAD + self.payload.len());
        put_header(
            &mut buf,
            HEADER_LEN + self.payload.len(),
            self.kind,
            self.flags,
            self.request_id,
            self.method,
            self.deadline_ms,
        );
        buf.extend_from_slice(&self.payload);
        buf.freeze()
    }
}

/// Errors of the frame layer. Each one ends the connection: after it the byte stream can no
/// longer be trusted to be aligned on frame boundaries.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The length prefix is larger than the configured maximum.
    #[error("frame of {len} bytes exceeds the maximum of {max} bytes")]
    TooLarge {
        /// The announced length.
        len: u64,
        /// The configured maximum.
        max: u32,
    },
    /// The length prefix is too small to hold a header.
    #[error("frame length {len} is shorter than the {HEADER_LEN}-byte header")]
    TooShort {
        /// The announced length.
        len: u32,
    },
    /// The kind byte is not one of [`FrameKind`].
    #[error("unknown frame kind {0}")]
    UnknownKind(u8),
    /// The flags byte has a bit this connection does not allow (version 1 allows none,
    /// version 2 only [`FLAG_METADATA`]).
    #[error("frame flags {0:#04x} have a bit this connection does not allow")]
    ReservedFlags(u8),
    /// Reading or writing the underlying stream failed.
    #[error("transport i/o failed: {0}")]
    Io(std::io::Error),
}

// The message shows the i/o error, so it is not also a `source()` (see `error.rs`).
impl From<std::io::Error> for FrameError {
    fn from(error: std::io::Error) -> Self {
        Self::Io(error)
    }
}

/// Decodes and encodes [`Frame`]s, enforcing a maximum length.
#[derive(Clone, Copy, Debug)]
pub struct FrameCodec {
    max_frame_len: u32,
    allowed_flags: u8,
    /// The connection's protocol version: a kind newer than it is an unknown kind.
    version: u8,
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
            reserves: true,
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
        let payload = src.split_to(len as usize - HEADER_LEN).freeze();
        if src.is_empty() && src.capacity() > SHRINK_ABOVE {
            // A large frame left a large buffer behind: give it back rather than keep it for
            // the life of an (often idle) connection.
            *src = BytesMut::new();
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
const CHUNK: usize = 2 * 1024;

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

    /// Writes the header and returns the wire bytes, or an error when the frame would exceed
    /// `max_frame_len` (the peer would reject it).
    pub fn finish(
        mut self,
        kind: FrameKind,
        request_id: u64,
        method: MethodId,
        deadline_ms: u32,
        max_frame_len: u32,
    ) -> Result<Bytes, FrameError> {
        let len = self.buf.len() - LENGTH_PREFIX_LEN;
        if len > max_frame_len as usize {
            return Err(FrameError::TooLarge {
                len: len as u64,
                max: max_frame_len,
            });
        }
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

/// The body of an `Error` frame: a `u16` BE [`ErrorCode`] followed by a UTF-8 message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorBody {
    /// What went wrong.
    pub code: ErrorCode,
    /// Human-readable detail (may be empty).
    pub message: String,
}

impl ErrorBody {
    /// Encodes a body.
    pub fn encode(code: ErrorCode, message: &str) -> Bytes {
        let mut buf = BytesMut::with_capacity(2 + message.len());
        buf.put_u16(code.to_u16());
        buf.extend_from_slice(message.as_bytes());
        buf.freeze()
    }

    /// Decodes a body; a body shorter than two bytes is reported as a protocol violation and
    /// invalid UTF-8 is replaced rather than rejected (the message is for humans).
    pub fn decode(payload: &[u8]) -> Self {
        match payload {
            [hi, lo, message @ ..] => Self {
                code: ErrorCode::from_u16(u16::from_be_bytes([*hi, *lo])),
                message: String::from_utf8_lossy(message).into_owned(),
            },
            _ => Self {
                code: ErrorCode::ProtocolViolation,
                message: "error frame without an error code".to_owned(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Frame {
        Frame {
            kind: FrameKind::Request,
            request_id: 7,
            method: MethodId::new(0x0102_0304_0506_0708),
            deadline_ms: 250,
            flags: 0,
            payload: Bytes::from_static(b"hello"),
        }
    }

    #[test]
    fn round_trips_a_frame() {
        let mut codec = FrameCodec::default();
        let mut buf = BytesMut::new();
        codec.encode(sample(), &mut buf).unwrap();
        assert_eq!(buf.len(), FRAME_OVERHEAD + 5);
        assert_eq!(&buf[..4], &[0, 0, 0, 27]);
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(sample()));
        assert!(buf.is_empty());
    }

    #[test]
    fn a_stream_kind_is_unknown_below_version_3() {
        let open = Frame {
            kind: FrameKind::Open,
            ..sample()
        };
        for version in 1..=2 {
            let mut buf = BytesMut::from(&open.to_bytes()[..]);
            let mut codec = FrameCodec::for_version(DEFAULT_MAX_FRAME_LEN, version);
            assert!(matches!(
                codec.decode(&mut buf),
                Err(FrameError::UnknownKind(8))
            ));
        }
        let mut buf = BytesMut::from(&open.to_bytes()[..]);
        let mut codec = FrameCodec::for_version(DEFAULT_MAX_FRAME_LEN, 3);
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(open));
    }

    /// Encodes a frame whose payload is `len` bytes of `byte`, through `FrameBuf`.
    fn built(byte: u8, len: usize) -> Bytes {
        let mut frame = FrameBuf::with_capacity(8);
        frame.payload_writer().put_bytes(byte, len);
        frame
            .finish(FrameKind::Request, 7, MethodId::new(9), 0, u32::MAX)
            .unwrap()
    }

    #[test]
    fn frames_built_one_after_another_keep_their_own_bytes() {
        // Small frames share a chunk, large ones get their own buffer, and a chunk is reused
        // once its frames are gone: a finished frame must not change when the next one is
        // built, whichever happened.
        let sizes = [
            10,
            CHUNK - FRAME_OVERHEAD,
            CHUNK + 1,
            3,
            5 * CHUNK,
            5,
            40,
            7,
        ];
        let frames: Vec<Bytes> = sizes
            .iter()
            .enumerate()
            .map(|(i, &len)| built(i as u8 + 1, len))
            .collect();
        for (i, (frame, &len)) in frames.iter().zip(&sizes).enumerate() {
            assert_eq!(frame.len(), FRAME_OVERHEAD + len);
            let decoded = FrameCodec::default()
                .decode(&mut BytesMut::from(&frame[..]))
                .unwrap()
                .unwrap();
            assert_eq!(decoded.request_id, 7);
            assert!(
                decoded.payload.iter().all(|&b| b == i as u8 + 1),
                "frame {i}"
            );
        }
    }

    #[test]
    fn frames_kept_among_dropped_ones_keep_their_bytes() {
        // Some frames live on (a reply waiting for a slow peer) while the frames around them
        // are written and dropped, and chunks are reclaimed under them.
        let mut kept = Vec::new();
        for i in 0..600usize {
            let len = [40, 3, 300, 1000, 0][i % 5];
            let frame = built(i as u8, len);
            if i % 7 == 0 {
                kept.push((i, len, frame));
            }
        }
        for (i, len, frame) in kept {
            assert_eq!(frame.len(), FRAME_OVERHEAD + len, "frame {i}");
            assert!(
                frame[FRAME_OVERHEAD..].iter().all(|&b| b == i as u8),
                "frame {i}"
            );
        }
    }

    #[test]
    fn read_incomplete_head_waits() {
        let mut codec = FrameCodec::default();
        let mut buf = BytesMut::from(&[0u8, 0][..]);
        assert_eq!(codec.decode(&mut buf).unwrap(), None);
    }

    #[test]
    fn read_single_frame_multi_packet() {
        let wire = sample().to_bytes();
        let mut codec = FrameCodec::default();
        let mut buf = BytesMut::new();
        for (i, byte) in wire.iter().enumerate() {
            buf.put_u8(*byte);
            let decoded = codec.decode(&mut buf).unwrap();
            if i + 1 < wire.len() {
                assert_eq!(decoded, None, "frame decoded early at byte {i}");
            } else {
                assert_eq!(decoded, Some(sample()));
            }
        }
    }

    #[test]
    fn read_max_frame_len_is_rejected_before_allocating() {
        let mut codec = FrameCodec::new(1024);
        let mut buf = BytesMut::from(&u32::MAX.to_be_bytes()[..]);
        let capacity_before = buf.capacity();
        let err = codec.decode(&mut buf).unwrap_err();
        assert!(
            matches!(err, FrameError::TooLarge { len, max: 1024 } if len == u64::from(u32::MAX))
        );
        assert_eq!(buf.capacity(), capacity_before);
    }

    #[test]
    fn the_read_buffer_shrinks_after_a_large_frame() {
        let mut frame = sample();
        frame.payload = Bytes::from(vec![1u8; 1 << 20]);
        let mut buf = BytesMut::from(&frame.to_bytes()[..]);
        buf.reserve(1 << 20);
        let decoded = FrameCodec::default().decode(&mut buf).unwrap().unwrap();
        assert_eq!(decoded.payload.len(), 1 << 20);
        assert!(
            buf.capacity() <= SHRINK_ABOVE,
            "kept {} bytes",
            buf.capacity()
        );
    }

    #[test]
    fn length_shorter_than_header_is_rejected() {
        let mut codec = FrameCodec::default();
        let mut buf = BytesMut::from(&0u32.to_be_bytes()[..]);
        assert!(matches!(
            codec.decode(&mut buf),
            Err(FrameError::TooShort { len: 0 })
        ));
    }

    #[test]
    fn unknown_kind_is_rejected() {
        let mut wire = BytesMut::from(&sample().to_bytes()[..]);
        wire[4] = 99;
        assert!(matches!(
            FrameCodec::default().decode(&mut wire),
            Err(FrameError::UnknownKind(99))
        ));
    }

    #[test]
    fn frame_buf_writes_the_same_bytes_as_the_encoder() {
        let mut frame = FrameBuf::with_capacity(5);
        frame.payload_writer().extend_from_slice(b"hello");
        let wire = frame
            .finish(
                FrameKind::Request,
                7,
                MethodId::new(0x0102_0304_0506_0708),
                250,
                DEFAULT_MAX_FRAME_LEN,
            )
            .unwrap();
        assert_eq!(wire, sample().to_bytes());
    }

    #[test]
    fn frame_buf_refuses_to_exceed_the_maximum() {
        let mut frame = FrameBuf::with_capacity(64);
        frame.payload_writer().put_bytes(1, 64);
        let err = frame
            .finish(FrameKind::Response, 1, MethodId::new(1), 0, 32)
            .unwrap_err();
        assert!(matches!(err, FrameError::TooLarge { max: 32, .. }));
    }

    #[test]
    fn error_body_round_trips_and_tolerates_garbage() {
        let body = ErrorBody::encode(ErrorCode::UnknownMethod, "no such method");
        assert_eq!(
            ErrorBody::decode(&body),
            ErrorBody {
                code: ErrorCode::UnknownMethod,
                message: "no such method".to_owned()
            }
        );
        assert_eq!(ErrorBody::decode(&[1]).code, ErrorCode::ProtocolViolation);
    }
}
