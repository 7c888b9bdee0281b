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
//! `FrameCodec` implements tokio-util's `Decoder` and `Encoder`. The decoder checks the
//! length prefix against the configured maximum *before* it reserves any memory, so a peer
//! cannot make the reader allocate more than one maximum-size frame.
//!
//! Layout: `decoded.rs` is the `Frame`; `error.rs` the `FrameError`s; `header.rs` writes
//! the header; `codec.rs` the codec; `buf.rs` the buffer an outgoing frame is encoded into;
//! `error_body.rs` the body of an `Error` frame.

mod buf;
mod codec;
mod decoded;
mod error;
mod error_body;
mod header;

pub use buf::FrameBuf;
pub use codec::FrameCodec;
pub use decoded::Frame;
pub use error::FrameError;
pub use error_body::ErrorBody;
pub(crate) use header::put_header;
pub use wirecall_wire::{
    FrameKind, DEFAULT_MAX_FRAME_LEN, FLAG_METADATA, FRAME_OVERHEAD, HEADER_LEN, LENGTH_PREFIX_LEN,
};

pub use wirecall_wire::{CREDIT_LEN, MAX_STREAM_CREDIT};

#[cfg(test)]
mod tests {
    use bytes::BufMut;
    use tokio_util::codec::{Decoder, Encoder};

    use bytes::{Bytes, BytesMut};

    use super::buf::CHUNK;
    use super::codec::SHRINK_ABOVE;
    use super::*;
    use crate::method::MethodId;
    use crate::wire::ErrorCode;

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
