//! JSON through serde_json, with NaN and the infinities written as the proto3 JSON mapping
//! writes them (see [`non_finite`]).

mod non_finite;

use bytes::{BufMut, BytesMut};

use super::{Codec, CodecError, WireMessage};

pub(super) fn encode<T: WireMessage>(value: &T, dst: &mut BytesMut) -> Result<(), CodecError> {
    let mut serializer = serde_json::Serializer::new(dst.writer());
    value
        .serialize(non_finite::Ser(&mut serializer))
        .map_err(|e| CodecError::Encode {
            codec: Codec::Json,
            cause: e.into(),
        })
}

pub(super) fn decode<T: WireMessage>(src: &[u8]) -> Result<T, CodecError> {
    let mut deserializer = serde_json::Deserializer::from_slice(src);
    T::deserialize(non_finite::De(&mut deserializer))
        .and_then(|value| deserializer.end().map(|()| value))
        .map_err(|e| CodecError::Decode {
            codec: Codec::Json,
            cause: e.into(),
        })
}
