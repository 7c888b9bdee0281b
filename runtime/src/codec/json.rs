//! JSON through serde_json, with NaN, the infinities and byte strings written as the proto3
//! JSON mapping writes them (see [`mapping`]).

mod mapping;

pub(crate) use mapping::BytesAs;

use bytes::{BufMut, BytesMut};

use super::{Codec, CodecError, WireMessage};

pub(super) fn encode<T: WireMessage>(
    value: &T,
    dst: &mut BytesMut,
    bytes: BytesAs,
) -> Result<(), CodecError> {
    let mut serializer =
        serde_json::Serializer::with_formatter(dst.writer(), mapping::JsonFormatter(bytes));
    value
        .serialize(mapping::Ser(&mut serializer))
        .map_err(|e| CodecError::Encode {
            codec: Codec::Json,
            cause: e.into(),
        })
}

pub(super) fn decode<T: WireMessage>(src: &[u8]) -> Result<T, CodecError> {
    let mut deserializer = serde_json::Deserializer::from_slice(src);
    T::deserialize(mapping::De(&mut deserializer))
        .and_then(|value| deserializer.end().map(|()| value))
        .map_err(|e| CodecError::Decode {
            codec: Codec::Json,
            cause: e.into(),
        })
}
