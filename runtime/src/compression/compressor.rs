//! [`FrameCompressor`]: compresses a connection's outgoing frames in place, when that pays.

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

use bytes::{BufMut, BytesMut};

use super::algorithm::Algorithm;
use super::config::Compression;
use crate::wire::{FrameKind, FLAG_COMPRESSED, FRAME_OVERHEAD};

/// Frames in a row that compressed badly before the connection stops trying on every frame.
const MISSES_BEFORE_BACKING_OFF: u32 = 4;

/// While backing off, one frame in this many is still tried at first, so that traffic that
/// turns compressible again is noticed; each try that fails again doubles the interval, up to
/// [`TRY_AT_LEAST_ONE_IN`].
const TRY_ONE_IN: u32 = 32;

/// The longest interval between tries while backing off: incompressible traffic then pays
/// for compressing one frame in 1,024 (a 64 KiB frame's attempt is about 100 us: 0.1 us a
/// frame), and compressible traffic is noticed within 1,024 frames.
const TRY_AT_LEAST_ONE_IN: u32 = 1024;

/// A compressed payload must save at least 1/16 of the bytes; less is not worth the
/// receiver's time to decompress it.
const MIN_SAVING_SHIFT: u32 = 4;

/// The outgoing compression of one connection, shared by everything that frames on it. Until
/// the handshake settles an algorithm (an early-calls connection learns it from the server's
/// hello, after its first frames went out) it compresses nothing.
#[derive(Debug)]
pub(crate) struct FrameCompressor {
    /// The negotiated algorithm's id, 0 for none.
    algorithm: AtomicU8,
    level: i32,
    min_size: usize,
    /// Frames in a row whose payload did not shrink enough.
    misses: AtomicU32,
    /// Frames passed over while backing off.
    passed_over: AtomicU32,
}

impl FrameCompressor {
    /// The compressor of a connection configured with `config`, which compresses with
    /// `negotiated` (none until [`settle`](Self::settle) when `None`).
    pub(crate) fn new(config: &Compression, negotiated: Option<Algorithm>) -> Self {
        Self {
            algorithm: AtomicU8::new(negotiated.map_or(0, Algorithm::id)),
            level: config.configured_level(),
            min_size: config.configured_min_size() as usize,
            misses: AtomicU32::new(0),
            passed_over: AtomicU32::new(0),
        }
    }

    /// The connection's handshake settled `negotiated`.
    pub(crate) fn settle(&self, negotiated: Option<Algorithm>) {
        self.algorithm
            .store(negotiated.map_or(0, Algorithm::id), Ordering::Relaxed);
    }

    /// Compresses the payload of the frame of `kind` that starts at `frame_start` in `buf`
    /// and runs to its end, when the connection negotiated an algorithm, the kind may be
    /// compressed, the payload is large enough and it shrinks by enough. Returns the flag to
    /// add to the frame's header: [`FLAG_COMPRESSED`], or 0 when `buf` is unchanged.
    pub(crate) fn compress_in_place(
        &self,
        kind: FrameKind,
        buf: &mut BytesMut,
        frame_start: usize,
    ) -> u8 {
        let payload_start = frame_start + FRAME_OVERHEAD;
        let payload_len = buf.len() - payload_start;
        if payload_len < self.min_size || !kind.may_be_compressed() {
            return 0;
        }
        let Some(algorithm) = Algorithm::from_id(self.algorithm.load(Ordering::Relaxed)) else {
            return 0;
        };
        if self.backing_off() {
            return 0;
        }
        let Ok(uncompressed_len) = u32::try_from(payload_len) else {
            return 0;
        };
        // The most compressed bytes worth sending: none for a payload too small to shrink
        // (`min_size` may be set to 0).
        let Some(worth) = (payload_len - (payload_len >> MIN_SAVING_SHIFT))
            .checked_sub(crate::wire::UNCOMPRESSED_LEN)
        else {
            return 0;
        };
        match compress(algorithm, self.level, &buf[payload_start..]) {
            Some(compressed) if compressed.len() <= worth => {
                buf.truncate(payload_start);
                buf.put_u32(uncompressed_len);
                buf.extend_from_slice(&compressed);
                self.misses.store(0, Ordering::Relaxed);
                FLAG_COMPRESSED
            }
            _ => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                0
            }
        }
    }

    /// Whether to pass over this frame: after [`MISSES_BEFORE_BACKING_OFF`] misses in a row,
    /// all but one frame in [`TRY_ONE_IN`], then in twice as many after each further miss, up
    /// to [`TRY_AT_LEAST_ONE_IN`].
    fn backing_off(&self) -> bool {
        let misses = self.misses.load(Ordering::Relaxed);
        let Some(failed_tries) = misses.checked_sub(MISSES_BEFORE_BACKING_OFF) else {
            return false;
        };
        let interval = (TRY_ONE_IN << failed_tries.min(5)).min(TRY_AT_LEAST_ONE_IN);
        self.passed_over.fetch_add(1, Ordering::Relaxed) % interval != 0
    }
}

/// `source` compressed with `algorithm`, or `None` when the algorithm failed.
#[cfg(feature = "zstd")]
fn compress(
    algorithm: Algorithm,
    level: i32,
    source: &[u8],
) -> Option<super::zstd_frames::Compressed> {
    match algorithm {
        Algorithm::Zstd => super::zstd_frames::compress(level, source),
    }
}

/// Without an algorithm feature there is no algorithm to compress with.
#[cfg(not(feature = "zstd"))]
fn compress(algorithm: Algorithm, _level: i32, _source: &[u8]) -> Option<Vec<u8>> {
    match algorithm {}
}

#[cfg(test)]
#[cfg(feature = "zstd")]
mod tests {
    use bytes::BufMut;

    use super::*;
    use crate::compression::decompress_payload;

    /// A frame buffer: `before` bytes of earlier frames, a reserved header, then `payload`.
    fn frame_with(before: usize, payload: &[u8]) -> BytesMut {
        let mut buf = BytesMut::new();
        buf.put_bytes(7, before + FRAME_OVERHEAD);
        buf.extend_from_slice(payload);
        buf
    }

    fn compressor() -> FrameCompressor {
        FrameCompressor::new(&Compression::zstd(), Some(Algorithm::Zstd))
    }

    fn random(len: usize) -> Vec<u8> {
        (0..len).map(|_| fastrand::u8(..)).collect()
    }

    #[test]
    fn a_large_compressible_payload_shrinks_in_place_and_decompresses_back() {
        let payload = "user 42 ok; ".repeat(500).into_bytes();
        let mut buf = frame_with(100, &payload);
        let flag = compressor().compress_in_place(FrameKind::Item, &mut buf, 100);
        assert_eq!(flag, FLAG_COMPRESSED);
        assert!(buf.len() < 100 + FRAME_OVERHEAD + payload.len() / 10);
        assert!(
            buf[..100 + FRAME_OVERHEAD].iter().all(|&b| b == 7),
            "earlier bytes kept"
        );
        let compressed = buf.split_off(100 + FRAME_OVERHEAD).freeze();
        let restored = decompress_payload(Algorithm::Zstd, compressed, u32::MAX).unwrap();
        assert_eq!(restored, payload);
    }

    #[test]
    fn with_no_minimum_every_payload_size_is_handled() {
        let config = Compression::zstd().min_size(0);
        for len in 0..200 {
            let compressor = FrameCompressor::new(&config, Some(Algorithm::Zstd));
            let payload = vec![b'a'; len];
            let mut buf = frame_with(0, &payload);
            match compressor.compress_in_place(FrameKind::Request, &mut buf, 0) {
                0 => assert_eq!(
                    &buf[FRAME_OVERHEAD..],
                    &payload[..],
                    "{len} bytes as they were"
                ),
                _ => {
                    let compressed = buf.split_off(FRAME_OVERHEAD).freeze();
                    assert!(compressed.len() < len, "{len} bytes shrank");
                    let restored = decompress_payload(Algorithm::Zstd, compressed, u32::MAX);
                    assert_eq!(restored.unwrap(), payload);
                }
            }
        }
    }

    #[test]
    fn small_payloads_other_kinds_and_unsettled_connections_are_left_alone() {
        let small = "x".repeat(1023).into_bytes();
        let large = "x".repeat(4096).into_bytes();
        let cases = [
            (compressor(), FrameKind::Response, &small),
            (compressor(), FrameKind::End, &large),
            (compressor(), FrameKind::Error, &large),
            (
                FrameCompressor::new(&Compression::zstd(), None),
                FrameKind::Request,
                &large,
            ),
        ];
        for (compressor, kind, payload) in cases {
            let mut buf = frame_with(0, payload);
            assert_eq!(
                compressor.compress_in_place(kind, &mut buf, 0),
                0,
                "{kind:?}"
            );
            assert_eq!(&buf[FRAME_OVERHEAD..], &payload[..]);
        }
        let settled = FrameCompressor::new(&Compression::zstd(), None);
        settled.settle(Some(Algorithm::Zstd));
        let mut buf = frame_with(0, &large);
        assert_eq!(
            settled.compress_in_place(FrameKind::Request, &mut buf, 0),
            FLAG_COMPRESSED
        );
    }

    #[test]
    fn incompressible_traffic_is_tried_ever_more_rarely_until_one_shrinks() {
        let compressor = compressor();
        let noise = random(8192);
        for _ in 0..200 {
            let mut buf = frame_with(0, &noise);
            assert_eq!(
                compressor.compress_in_place(FrameKind::Item, &mut buf, 0),
                0
            );
            assert_eq!(&buf[FRAME_OVERHEAD..], &noise[..], "sent as it is");
        }
        let tried = compressor.misses.load(Ordering::Relaxed);
        // Four misses in a row, then of the other 196 frames the first (one in 32), the 64th
        // (one in 64 after that miss) and the 128th (one in 128).
        assert_eq!(tried, MISSES_BEFORE_BACKING_OFF + 3);
        // Compressible frames come back: a try within the interval shrinks one, which ends
        // the back-off.
        let text = "abc ".repeat(2048).into_bytes();
        let compress = || {
            let mut buf = frame_with(0, &text);
            compressor.compress_in_place(FrameKind::Item, &mut buf, 0) == FLAG_COMPRESSED
        };
        let first = (0..TRY_AT_LEAST_ONE_IN).position(|_| compress());
        assert!(first.is_some(), "a try within {TRY_AT_LEAST_ONE_IN} frames");
        assert!(
            (0..10).all(|_| compress()),
            "every frame again once one shrank"
        );
    }
}
