//! What a call carries on its way to its frames: its arguments (typed, or already encoded),
//! encoded by each attempt in the codec of the connection it goes out on, and for a stream
//! call that takes one, its upload.

use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};

use crate::codec::encoding::Encoding;
use crate::codec::{CodecError, WireMessage};
use crate::stream::outgoing::OutgoingItems;
use crate::stream::{ItemMessage, Streaming};

/// Arguments whose type the stack does not know; encoded once the connection (and so the
/// codec) is known.
pub(crate) trait EncodeArgs: Send {
    fn encode_to(&self, encoding: Encoding, dst: &mut BytesMut) -> Result<(), CodecError>;
}

impl<A: WireMessage> EncodeArgs for A {
    fn encode_to(&self, encoding: Encoding, dst: &mut BytesMut) -> Result<(), CodecError> {
        encoding.encode(self, dst)
    }
}

/// Arguments already encoded in the connection's codec
/// ([`Channel::call_raw`](crate::Channel::call_raw)), copied into the frame untouched.
pub(crate) struct RawArgs(pub(crate) Bytes);

impl EncodeArgs for RawArgs {
    fn encode_to(&self, _encoding: Encoding, dst: &mut BytesMut) -> Result<(), CodecError> {
        dst.extend_from_slice(&self.0);
        Ok(())
    }
}

/// Arguments as the stack carries them: shared by reference across the awaits of a call (its
/// attempts, its layers), so `Sync` even when the arguments are not (a `WireMessage` need not
/// be). Each attempt holds the lock while it encodes, one at a time.
pub(crate) trait SharedArgs: Send + Sync {
    fn encode_to(&self, encoding: Encoding, dst: &mut BytesMut) -> Result<(), CodecError>;
}

/// Arguments behind a lock: [`SharedArgs`] for any [`EncodeArgs`].
pub(crate) struct Locked<E>(Mutex<E>);

impl<E> Locked<E> {
    pub(crate) fn new(args: E) -> Self {
        Self(Mutex::new(args))
    }
}

impl<E: EncodeArgs> SharedArgs for Locked<E> {
    #[inline]
    fn encode_to(&self, encoding: Encoding, dst: &mut BytesMut) -> Result<(), CodecError> {
        // Encoding never leaves the value half-changed, so a poisoned lock is still usable.
        let args = self.0.lock().unwrap_or_else(|p| p.into_inner());
        args.encode_to(encoding, dst)
    }
}

/// Arguments that are `Sync` themselves (every generated argument message is): shared by
/// reference without a lock.
pub(crate) struct Bare<E>(E);

impl<E> Bare<E> {
    pub(crate) fn new(args: E) -> Self {
        Self(args)
    }
}

impl<E: EncodeArgs + Sync> SharedArgs for Bare<E> {
    #[inline]
    fn encode_to(&self, encoding: Encoding, dst: &mut BytesMut) -> Result<(), CodecError> {
        self.0.encode_to(encoding, dst)
    }
}

/// The arguments of a call that crosses a tower layer as a [`Request`](super::Request):
/// owned, type-erased and shared by the call's attempts, since a balanced channel may encode
/// them again for a second endpoint (whose codec may differ).
#[derive(Clone)]
pub(crate) struct CallArgs(Arc<dyn SharedArgs>);

impl CallArgs {
    pub(crate) fn new<E: EncodeArgs + 'static>(args: E) -> Self {
        Self(Arc::new(Locked::new(args)))
    }

    /// [`new`](Self::new) for arguments that are `Sync` themselves: no lock, and the same
    /// `encode_to` as the call that keeps them [`Bare`], not a second copy per argument type.
    pub(crate) fn new_sync<E: EncodeArgs + Sync + 'static>(args: E) -> Self {
        Self(Arc::new(Bare::new(args)))
    }

    /// Arguments that fail to encode: what a layer would get if the stack had not shared a
    /// call's arguments before it (it always does; see `Core::erases_args`), rather than a
    /// panic.
    pub(crate) fn unavailable() -> Self {
        Self::new(Unshared)
    }
}

impl SharedArgs for CallArgs {
    fn encode_to(&self, encoding: Encoding, dst: &mut BytesMut) -> Result<(), CodecError> {
        self.0.encode_to(encoding, dst)
    }
}

/// See [`CallArgs::unavailable`].
struct Unshared;

impl EncodeArgs for Unshared {
    fn encode_to(&self, encoding: Encoding, _dst: &mut BytesMut) -> Result<(), CodecError> {
        Err(CodecError::Encode {
            codec: encoding.codec,
            cause: "the call's arguments were not shared before a layer (a wirecall bug)".into(),
        })
    }
}

/// The items a stream call uploads, until the attempt that opens the stream takes them: a
/// call sent again (its first attempt failed before the stream opened) still has them.
#[derive(Clone)]
pub(crate) struct UploadSlot(Arc<Mutex<Option<OutgoingItems>>>);

impl UploadSlot {
    /// The items of `items`, each to travel as a `U` message.
    pub(crate) fn new<U: ItemMessage>(items: Streaming<U::Item>) -> Self {
        Self(Arc::new(Mutex::new(Some(OutgoingItems::encoding::<U>(
            items,
        )))))
    }

    /// The items, for the attempt that opened the stream; `None` if an earlier one took them.
    pub(crate) fn take(&self) -> Option<OutgoingItems> {
        // Only ever held to take the items, so a poisoned lock is still consistent.
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}
