//! Feeds arbitrary bytes to the frame decoder in chunks, as a socket would deliver them.
//!
//! Input layout: byte 0 picks the maximum frame length (22..=277), byte 1 seeds the chunk
//! sizes (its two high bits pick protocol version 1 to 4: 2 allows the metadata flag, 3 the
//! stream kinds, 4 the Head kind), the rest is the wire. Invariants: the decoder never panics, never yields a frame
//! longer than the maximum, never consumes more bytes than it was given, and once it reports
//! an error the connection is over (we stop feeding, like the server does).

#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use tokio_util::codec::{Decoder, Encoder};
use wirecall_runtime::transport::frame::{FrameCodec, HEADER_LEN, LENGTH_PREFIX_LEN};

fuzz_target!(|data: &[u8]| {
    let [max_byte, chunk_seed, wire @ ..] = data else {
        return;
    };
    let max = HEADER_LEN as u32 + u32::from(*max_byte);
    let version = 1 + (chunk_seed >> 6);
    let mut codec = FrameCodec::for_version(max, version);
    let mut buf = BytesMut::new();
    let mut consumed = 0usize;
    let mut fed = 0usize;
    let mut chunk_len = 1 + usize::from((*chunk_seed & 0x3f) % 31);
    let mut rest = wire;
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(chunk_len.min(rest.len()));
        rest = tail;
        buf.extend_from_slice(chunk);
        fed += chunk.len();
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => {
                    let len = HEADER_LEN + frame.payload.len();
                    assert!(len <= max as usize, "decoded {len} bytes, max {max}");
                    consumed += LENGTH_PREFIX_LEN + len;
                    assert!(consumed <= fed, "consumed {consumed} of {fed} bytes");
                    // What was decoded encodes back to the same bytes.
                    let mut again = BytesMut::new();
                    codec.encode(frame.clone(), &mut again).expect("re-encodes");
                    assert_eq!(again.len(), LENGTH_PREFIX_LEN + len);
                    assert_eq!(&again[..], &frame.to_bytes()[..]);
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
        assert_eq!(consumed + buf.len(), fed);
        chunk_len = chunk_len * 7 % 31 + 1;
    }
});
