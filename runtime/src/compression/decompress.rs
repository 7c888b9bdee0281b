//! Checking and decompressing a received compressed payload.

use bytes::{Buf, Bytes};

use super::algorithm::Algorithm;
use super::error::DecompressError;
use crate::wire::{HEADER_LEN, UNCOMPRESSED_LEN};

/// The uncompressed payload of a frame that arrived with the compressed flag on a connection
/// that negotiated `algorithm`, for a receiver whose frame limit is `max_frame_len`. The
/// announced size is checked against the limit before anything is allocated.
pub(crate) fn decompress_payload(
    algorithm: Algorithm,
    mut payload: Bytes,
    max_frame_len: u32,
) -> Result<Bytes, DecompressError> {
    if payload.len() < UNCOMPRESSED_LEN {
        return Err(DecompressError::Truncated(payload.len()));
    }
    let len = payload.get_u32() as usize;
    let frame_len = (HEADER_LEN + len) as u64;
    if frame_len > u64::from(max_frame_len) {
        return Err(DecompressError::TooLarge {
            len: frame_len,
            max: max_frame_len,
        });
    }
    match algorithm {
        #[cfg(feature = "zstd")]
        Algorithm::Zstd => Ok(Bytes::from(super::zstd_frames::decompress(&payload, len)?)),
    }
}

#[cfg(test)]
#[cfg(feature = "zstd")]
mod tests {
    use bytes::BufMut;

    use super::*;

    fn payload(announced: u32, data: &[u8]) -> Bytes {
        let mut payload = bytes::BytesMut::new();
        payload.put_u32(announced);
        payload.extend_from_slice(data);
        payload.freeze()
    }

    #[test]
    fn every_way_a_compressed_payload_can_be_wrong_has_its_error() {
        let text = b"hello hello hello hello".repeat(10);
        let data = zstd::bulk::compress(&text, 3).unwrap();
        let len = text.len() as u32;
        let decode = |payload| decompress_payload(Algorithm::Zstd, payload, 1024);
        assert_eq!(decode(payload(len, &data)).unwrap(), text);
        let mut twice = data.clone();
        twice.extend_from_slice(&data);
        let mut flipped = data.clone();
        flipped[6] ^= 0xff;
        let cases = [
            (Bytes::from_static(&[0, 0, 1]), "too short"),
            (payload(2000, &data), "over the limit"),
            (payload(len + 1, &data), "more than the data holds"),
            (payload(len - 1, &data), "less than the data holds"),
            (payload(len, &twice), "two frames"),
            (payload(len, &data[..data.len() - 2]), "cut short"),
            (payload(len, &flipped), "flipped"),
            (payload(len, b"not zstd at all"), "not zstd"),
        ];
        for (payload, case) in cases {
            assert!(decode(payload).is_err(), "{case}");
        }
        assert!(matches!(
            decode(payload(2000, &data)),
            Err(DecompressError::TooLarge {
                len: 2022,
                max: 1024
            })
        ));
    }
}
