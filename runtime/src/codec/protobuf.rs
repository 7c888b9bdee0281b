//! Protobuf through prost: genuine proto3 wire format, so any protobuf library can read it
//! given the equivalent `.proto` (the book shows how methods map to messages).

use bytes::BytesMut;

use super::{Codec, CodecError};

// Always compiled: `WireMessage`'s impl for prost types names these; `Codec` refuses Protobuf
// when its feature is off before they are reached.
pub(super) fn encode<T: prost::Message>(value: &T, dst: &mut BytesMut) -> Result<(), CodecError> {
    // Reserving first makes prost's capacity check infallible.
    dst.reserve(value.encoded_len());
    value.encode(dst).map_err(|e| CodecError::Encode {
        codec: Codec::Protobuf,
        cause: e.into(),
    })
}

pub(super) fn decode<T: prost::Message + Default>(src: &[u8]) -> Result<T, CodecError> {
    T::decode(src).map_err(|e| CodecError::Decode {
        codec: Codec::Protobuf,
        cause: e.into(),
    })
}
