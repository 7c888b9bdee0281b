//! What a call carries: typed values, which the connection encodes with its codec, or raw
//! payloads already in that codec ([`Channel::call_raw`](super::Channel::call_raw)).

use bytes::{Bytes, BytesMut};

use crate::codec::{Codec, CodecError, WireMessage};

/// Arguments or a reply the connection moves through its codec.
pub(super) trait Payload: Sized {
    /// Appends the payload, in `codec`, to `dst`.
    fn encode(&self, codec: Codec, dst: &mut BytesMut) -> Result<(), CodecError>;
    /// Reads one whole payload in `codec`.
    fn decode(codec: Codec, payload: Bytes) -> Result<Self, CodecError>;
}

/// A value the codec encodes and decodes.
pub(super) struct Typed<T>(pub(super) T);

impl<T: WireMessage> Payload for Typed<T> {
    fn encode(&self, codec: Codec, dst: &mut BytesMut) -> Result<(), CodecError> {
        codec.encode(&self.0, dst)
    }
    fn decode(codec: Codec, payload: Bytes) -> Result<Self, CodecError> {
        codec.decode(&payload).map(Typed)
    }
}

/// Bytes already in the connection's codec, passed through untouched.
pub(super) struct Raw(pub(super) Bytes);

impl Payload for Raw {
    fn encode(&self, _codec: Codec, dst: &mut BytesMut) -> Result<(), CodecError> {
        dst.extend_from_slice(&self.0);
        Ok(())
    }
    fn decode(_codec: Codec, payload: Bytes) -> Result<Self, CodecError> {
        Ok(Raw(payload))
    }
}
