//! Compressed frames (protocol version 5), valid and damaged, through the decoder of a
//! connection that negotiated zstd.
//!
//! Input layout: byte 0 picks the frame kind (any of 1 to 12) and the zstd level, byte 1 how
//! the frame is damaged, byte 2 the decoder's frame limit (in 64-byte steps from 22), bytes
//! 3 and 4 a signed shift of the announced uncompressed length, byte 5 a position to flip and
//! byte 6 the bit; the rest is the payload that gets compressed. Damage: none, a shifted
//! announced length, a flipped bit in the compressed data, data cut short, bytes appended,
//! or the rest of the input taken as the compressed data as it is.
//!
//! Invariants: decoding never panics and never allocates past the limit (libFuzzer's malloc
//! limit would report it); an undamaged frame within the limit decodes to exactly the
//! payload, with the compressed flag cleared, and one over the limit is refused; whatever
//! decodes is within the limit and exactly as long as it announced.

#![no_main]

use bytes::{BufMut, BytesMut};
use libfuzzer_sys::fuzz_target;
use tokio_util::codec::Decoder;
use wirecall_runtime::transport::frame::{FrameCodec, HEADER_LEN};
use wirecall_runtime::wire::{FrameKind, FLAG_COMPRESSED, PROTOCOL_VERSION};

fuzz_target!(|data: &[u8]| {
    let [kind_level, damage, limit, shift_high, shift_low, flip_at, flip_bit, payload @ ..] =
        data
    else {
        return;
    };
    let kind = FrameKind::from_u8(1 + kind_level % 12).expect("1 to 12 are kinds");
    let level = i32::from(kind_level >> 4) - 2;
    let max = HEADER_LEN as u32 + 64 * u32::from(*limit);
    let shift = i16::from_be_bytes([*shift_high, *shift_low]);
    let Ok(compressed) = zstd::bulk::compress(payload, level) else {
        return;
    };
    let mut data = compressed;
    let mut announced = payload.len() as i64;
    let damaged = match damage % 6 {
        0 => false,
        1 => {
            announced += i64::from(shift);
            shift != 0
        }
        2 if !data.is_empty() => {
            let at = usize::from(*flip_at) % data.len();
            data[at] ^= 1 << (flip_bit % 8);
            true
        }
        3 if !data.is_empty() => {
            data.truncate(usize::from(*flip_at) % data.len());
            true
        }
        4 => {
            data.extend_from_slice(&payload[..payload.len().min(usize::from(*flip_at))]);
            *flip_at > 0 && !payload.is_empty()
        }
        5 => {
            data = payload.to_vec();
            true
        }
        _ => false,
    };
    let Ok(announced) = u32::try_from(announced) else {
        return;
    };
    let mut wire = BytesMut::new();
    wire.put_u32((HEADER_LEN + 4 + data.len()) as u32);
    wire.put_u8(kind as u8);
    wire.put_u8(FLAG_COMPRESSED);
    wire.put_u64(1);
    wire.put_u64(0);
    wire.put_u32(0);
    wire.put_u32(announced);
    wire.extend_from_slice(&data);
    // The wire frame itself must fit the limit for the decoder to look inside it.
    let wire_fits = wire.len() - 4 <= max as usize;
    let mut codec = FrameCodec::for_version(max, PROTOCOL_VERSION).accepting_zstd();
    let decoded = codec.decode(&mut wire);
    let expands_within = HEADER_LEN + payload.len() <= max as usize;
    match decoded {
        Ok(Some(frame)) => {
            assert_eq!(frame.flags & FLAG_COMPRESSED, 0, "the flag is cleared");
            assert_eq!(frame.payload.len(), announced as usize, "as long as announced");
            assert!(HEADER_LEN + frame.payload.len() <= max as usize, "within the limit");
            assert!(kind.may_be_compressed(), "{kind:?} may not be compressed");
            if !damaged {
                assert_eq!(&frame.payload[..], payload, "the payload, exactly");
            }
        }
        Ok(None) => panic!("a whole frame is never incomplete"),
        Err(_) => assert!(
            damaged || !wire_fits || !expands_within || !kind.may_be_compressed(),
            "an undamaged {kind:?} frame of {} bytes within {max} was refused",
            payload.len()
        ),
    }
});
