//! MessagePack: written by rmp-serde, read by our own [`Reader`] (`deserializer.rs` says
//! why).
//! Structs are encoded as arrays (rmp-serde's default), so field names do not travel:
//! compact, and positional like Protobuf tags.
//!
//! Layout: this module is the codec's two entry points; `reader.rs` reads the bytes of values
//! from a payload, `deserializer.rs` hands them to serde's visitors, `access.rs` walks
//! arrays, maps and enum variants for a visitor, `marker.rs` names the format's marker
//! bytes, `error.rs` says why a payload did not read.

mod access;
mod deserializer;
mod error;
mod marker;
mod reader;

use bytes::BytesMut;

use super::{Codec, CodecError, WireMessage};
use reader::Reader;

#[inline]
pub(super) fn encode<T: WireMessage>(value: &T, dst: &mut BytesMut) -> Result<(), CodecError> {
    rmp_serde::encode::write(&mut Append(dst), value).map_err(|e| CodecError::Encode {
        codec: Codec::MessagePack,
        cause: e.into(),
    })
}

/// Appends to a `BytesMut`, which cannot fail: rmp writes a message a few bytes at a time, and
/// `bytes`' own `Writer` checks the room left on each write, which keeps rmp's small writers
/// (a marker, a length) from being inlined.
struct Append<'a>(&'a mut BytesMut);

impl std::io::Write for Append<'_> {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.0.extend_from_slice(buf);
        Ok(())
    }

    #[inline]
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// How deeply arrays, maps and enum variants may nest: serde_json's fixed limit, so that JSON
/// and MessagePack refuse the same input. A much deeper limit (rmp-serde's default was 1,024)
/// overflows a 2 MiB tokio worker stack in debug builds before it is reached: a peer could
/// abort the process.
const MAX_DEPTH: usize = 128;

#[inline]
pub(super) fn decode<T: WireMessage>(src: &[u8]) -> Result<T, CodecError> {
    T::deserialize(&mut Reader::new(src, MAX_DEPTH)).map_err(|e| CodecError::Decode {
        codec: Codec::MessagePack,
        cause: e.into(),
    })
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod reader_tests;
