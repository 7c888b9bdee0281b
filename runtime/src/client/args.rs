//! A call's arguments on their way to a frame: typed, or already encoded.

use bytes::{Bytes, BytesMut};

use crate::codec::{Codec, CodecError, WireMessage};

/// Arguments whose type the layers do not know; encoded once the connection (and so the
/// codec) is known.
pub(crate) trait EncodeArgs: Send {
    fn encode_to(&self, codec: Codec, dst: &mut BytesMut) -> Result<(), CodecError>;
}

impl<A: WireMessage> EncodeArgs for A {
    fn encode_to(&self, codec: Codec, dst: &mut BytesMut) -> Result<(), CodecError> {
        codec.encode(self, dst)
    }
}

/// Arguments already encoded in the connection's codec
/// ([`Channel::call_raw`](crate::Channel::call_raw)), copied into the frame untouched.
pub(crate) struct RawArgs(pub(crate) Bytes);

impl EncodeArgs for Box<dyn EncodeArgs> {
    fn encode_to(&self, codec: Codec, dst: &mut BytesMut) -> Result<(), CodecError> {
        (**self).encode_to(codec, dst)
    }
}

impl EncodeArgs for RawArgs {
    fn encode_to(&self, _codec: Codec, dst: &mut BytesMut) -> Result<(), CodecError> {
        dst.extend_from_slice(&self.0);
        Ok(())
    }
}
