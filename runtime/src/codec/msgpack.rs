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

/// How deeply arrays and maps may nest: serde_json's fixed limit, so that JSON and MessagePack
/// refuse the same input. rmp-serde's own default (1,024) overflows a 2 MiB tokio worker stack
/// in debug builds before it is reached: a peer could abort the process.
const MAX_DEPTH: usize = 128;

pub(super) fn decode<T: WireMessage>(src: &[u8]) -> Result<T, CodecError> {
    let mut deserializer = rmp_serde::Deserializer::from_read_ref(src);
    deserializer.set_max_depth(MAX_DEPTH);
    T::deserialize(&mut deserializer).map_err(|e| CodecError::Decode {
        codec: Codec::MessagePack,
        cause: e.into(),
    })
}
