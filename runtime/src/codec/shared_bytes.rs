//! `Bytes` fields decoded as views of the payload they arrived in, not as copies.
//!
//! serde hands a byte string to its visitor as a slice of the input, and prost reads one from
//! a slice too; `Bytes`'s own `Deserialize` and prost copy it. While a MessagePack or Protobuf
//! payload of [`SHARED_FROM`] bytes or more is decoded, the payload sits here, one per thread
//! (decoding never yields), and a `Bytes` whose slice lies inside it becomes
//! `payload.slice(..)`: a reference count, not a copy. (Decoding from the `Bytes` itself would
//! spare the thread-local for Protobuf, but prost's varint reading from a `Bytes` is not
//! inlined as it is from a slice: about 70 instructions more per small call.)
//!
//! Byte strings shorter than [`SHARED_FROM`] are still copied: a view keeps the whole
//! payload's buffer (and the read buffer it was split from) alive for as long as the value
//! lives, which for a few bytes costs more memory than the copy costs time. It also keeps
//! small payloads, most calls, from paying for the thread-local at all.

use std::cell::Cell;
use std::fmt;

use bytes::Bytes;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

/// Byte strings from this many bytes on are decoded as views of their payload; shorter ones
/// are copied.
pub const SHARED_FROM: usize = 256;

thread_local! {
    /// The payload being decoded on this thread, if it is large enough to share.
    static PAYLOAD: Cell<Option<Bytes>> = const { Cell::new(None) };
}

/// Runs `decode` on `payload`'s bytes, with the payload available to the `Bytes` it reads
/// (through [`deserialize`] and `ProtoField for Bytes`). Meant for payloads of at least
/// [`SHARED_FROM`] bytes: a shorter one holds nothing to share.
///
/// Out of line, as are the installing and the removing: only payloads of [`SHARED_FROM`]
/// bytes or more come here, and each message type's decoding would otherwise carry its own
/// copy of the thread-local's handling (0.7 KB of binary a typed method in
/// `bench/build-cost/methods.py`).
#[cfg_attr(not(any(feature = "msgpack", feature = "protobuf")), allow(dead_code))]
#[inline(never)]
pub(super) fn with_payload<R>(payload: &Bytes, decode: impl FnOnce(&[u8]) -> R) -> R {
    let _installed = Installed::new(payload.clone());
    decode(payload)
}

/// Puts a payload in [`PAYLOAD`] for as long as it lives, then puts back what was there (a
/// `Deserialize` impl may decode another payload inside this one, or panic).
#[cfg_attr(not(any(feature = "msgpack", feature = "protobuf")), allow(dead_code))]
struct Installed {
    previous: Option<Bytes>,
}

impl Installed {
    #[inline(never)]
    fn new(payload: Bytes) -> Self {
        // Only during the thread's teardown is the thread-local gone; the fields are then
        // copied, as without it.
        let previous = PAYLOAD
            .try_with(|slot| slot.replace(Some(payload)))
            .ok()
            .flatten();
        Self { previous }
    }
}

impl Drop for Installed {
    #[inline(never)]
    fn drop(&mut self) {
        let previous = self.previous.take();
        let _ = PAYLOAD.try_with(|slot| slot.set(previous));
    }
}

/// `part` as a `Bytes`: a view of the payload being decoded when `part` lies inside it and
/// is long enough, else a copy.
pub(crate) fn shared_or_copied(part: &[u8]) -> Bytes {
    if part.len() >= SHARED_FROM {
        let view = PAYLOAD.try_with(|slot| {
            let payload = slot.take();
            let view = payload.as_ref().and_then(|payload| view_of(payload, part));
            slot.set(payload);
            view
        });
        if let Ok(Some(view)) = view {
            return view;
        }
    }
    Bytes::copy_from_slice(part)
}

/// The view of `payload` that holds exactly `part`'s memory, if `part` lies inside it.
fn view_of(payload: &Bytes, part: &[u8]) -> Option<Bytes> {
    let start = (part.as_ptr() as usize).checked_sub(payload.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= payload.len()).then(|| payload.slice(start..end))
}

/// Reads a `Bytes` as `Bytes`'s own `Deserialize` does (a byte string, a string, or a
/// sequence of numbers), sharing the payload's buffer where it can.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Bytes, D::Error> {
    deserializer.deserialize_byte_buf(SharedBytesVisitor)
}

struct SharedBytesVisitor;

impl<'de> Visitor<'de> for SharedBytesVisitor {
    type Value = Bytes;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("byte array")
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
        Ok(shared_or_copied(v))
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Bytes, E> {
        Ok(Bytes::from(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Bytes, E> {
        Ok(shared_or_copied(v.as_bytes()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Bytes, E> {
        Ok(Bytes::from(v.into_bytes()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Bytes, A::Error> {
        // The peer's length is a hint, not a promise: reserve no more than `Bytes` does.
        let mut values = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(value) = seq.next_element::<u8>()? {
            values.push(value);
        }
        Ok(Bytes::from(values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_inside_the_payload_is_a_view_of_it() {
        let payload = Bytes::from(vec![7u8; 1024]);
        let view = view_of(&payload, &payload[100..600]).expect("inside");
        assert_eq!(view.as_ptr(), payload[100..].as_ptr());
        assert_eq!(view.len(), 500);
    }

    #[test]
    fn a_part_outside_the_payload_or_across_its_end_is_not() {
        let payload = Bytes::from(vec![7u8; 1024]);
        let elsewhere = vec![7u8; 512];
        assert!(view_of(&payload, &elsewhere).is_none());
        let larger = Bytes::from(vec![7u8; 2048]);
        let across = larger.slice(0..2048);
        assert!(view_of(&larger.slice(0..1024), &across).is_none());
    }

    #[test]
    fn long_parts_are_shared_only_while_their_payload_is_installed() {
        let payload = Bytes::from(vec![1u8; 1024]);
        let shared = with_payload(&payload, |bytes| shared_or_copied(&bytes[..SHARED_FROM]));
        assert_eq!(shared.as_ptr(), payload.as_ptr());
        let short = with_payload(&payload, |bytes| {
            shared_or_copied(&bytes[..SHARED_FROM - 1])
        });
        assert_ne!(short.as_ptr(), payload.as_ptr());
        let after = shared_or_copied(&payload[..SHARED_FROM]);
        assert_ne!(after.as_ptr(), payload.as_ptr());
    }

    #[test]
    fn a_nested_payload_is_put_back_when_its_decode_ends() {
        let outer = Bytes::from(vec![1u8; 1024]);
        let inner = Bytes::from(vec![2u8; 1024]);
        let shared = with_payload(&outer, |bytes| {
            let _ = with_payload(&inner, shared_or_copied);
            shared_or_copied(bytes)
        });
        assert_eq!(shared.as_ptr(), outer.as_ptr());
    }
}
