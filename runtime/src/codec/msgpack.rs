//! MessagePack through rmp-serde. Structs are encoded as arrays (rmp-serde's default), so
//! field names do not travel: compact, and positional like Protobuf tags.

use bytes::{BufMut, BytesMut};

use super::{Codec, CodecError, WireMessage};

pub(super) fn encode<T: WireMessage>(value: &T, dst: &mut BytesMut) -> Result<(), CodecError> {
    let mut writer = dst.writer();
    rmp_serde::encode::write(&mut writer, value).map_err(|e| CodecError::Encode {
        codec: Codec::MessagePack,
        cause: e.into(),
    })
}

pub(super) fn decode<T: WireMessage>(src: &[u8]) -> Result<T, CodecError> {
    rmp_serde::from_slice(src).map_err(|e| CodecError::Decode {
        codec: Codec::MessagePack,
        cause: e.into(),
    })
}
