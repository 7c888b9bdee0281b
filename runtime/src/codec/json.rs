//! JSON through serde_json.

use bytes::{BufMut, BytesMut};

use super::{Codec, CodecError, WireMessage};

pub(super) fn encode<T: WireMessage>(value: &T, dst: &mut BytesMut) -> Result<(), CodecError> {
    serde_json::to_writer(dst.writer(), value).map_err(|e| CodecError::Encode {
        codec: Codec::Json,
        cause: e.into(),
    })
}

pub(super) fn decode<T: WireMessage>(src: &[u8]) -> Result<T, CodecError> {
    serde_json::from_slice(src).map_err(|e| CodecError::Decode {
        codec: Codec::Json,
        cause: e.into(),
    })
}
