//! A call's arguments on their way to a frame: typed, or already encoded.

use std::sync::{Arc, Mutex};

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

/// The arguments of a call that travels through layers as a [`Request`](super::Request):
/// type-erased, and shared by the call's attempts, since a balanced channel may encode them
/// again for a second endpoint (whose codec may differ). The lock only makes the arguments
/// `Sync` (a `WireMessage` need not be); each attempt holds it while encoding, one at a time.
#[derive(Clone)]
pub(crate) struct CallArgs(Arc<dyn EncodeShared>);

trait EncodeShared: Send + Sync {
    fn encode_to(&self, codec: Codec, dst: &mut BytesMut) -> Result<(), CodecError>;
}

struct Locked<E>(Mutex<E>);

impl<E: EncodeArgs> EncodeShared for Locked<E> {
    fn encode_to(&self, codec: Codec, dst: &mut BytesMut) -> Result<(), CodecError> {
        // Encoding never leaves the value half-changed, so a poisoned lock is still usable.
        let args = self.0.lock().unwrap_or_else(|p| p.into_inner());
        args.encode_to(codec, dst)
    }
}

impl CallArgs {
    pub(crate) fn new<E: EncodeArgs + 'static>(args: E) -> Self {
        Self(Arc::new(Locked(Mutex::new(args))))
    }
}

impl EncodeArgs for CallArgs {
    fn encode_to(&self, codec: Codec, dst: &mut BytesMut) -> Result<(), CodecError> {
        self.0.encode_to(codec, dst)
    }
}

impl EncodeArgs for RawArgs {
    fn encode_to(&self, _codec: Codec, dst: &mut BytesMut) -> Result<(), CodecError> {
        dst.extend_from_slice(&self.0);
        Ok(())
    }
}
