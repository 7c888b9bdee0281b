//! Call metadata: string key/value pairs that travel with a call (a request id, an auth header,
//! a trace context) and with its reply (server timing, say), beside the codec-encoded payload.
//!
//! On the wire (protocol version 2, frame flag [`FLAG_METADATA`](crate::transport::frame::FLAG_METADATA))
//! the block comes first in the payload:
//!
//! ```text
//! count      u16 BE, 0..=64
//! count x    key_len u8 (1..=255), key (lowercase ASCII: a-z 0-9 - _ .),
//!            value_len u16 BE, value (UTF-8)
//! ```
//!
//! The whole block (count included) is at most [`MAX_METADATA_BYTES`]. Both sides check these
//! limits: a sender refuses to build a larger block, a receiver treats one as a protocol
//! violation.

use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Most entries one call or reply may carry.
pub const MAX_METADATA_ENTRIES: usize = 64;
/// Most bytes one metadata block may take on the wire, its count included.
pub const MAX_METADATA_BYTES: usize = 8 * 1024;
/// Longest key.
pub const MAX_KEY_LEN: usize = 255;

/// Why metadata was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// A key is empty, longer than 255 bytes, or has a character other than `a-z 0-9 - _ .`.
    #[error("invalid metadata key {0:?}: use 1 to 255 characters from a-z, 0-9, '-', '_', '.'")]
    InvalidKey(String),
    /// More than [`MAX_METADATA_ENTRIES`] entries.
    #[error("too many metadata entries: at most {MAX_METADATA_ENTRIES}")]
    TooManyEntries,
    /// The block would take more than [`MAX_METADATA_BYTES`].
    #[error("metadata of {0} bytes exceeds the limit of {MAX_METADATA_BYTES} bytes")]
    TooLarge(usize),
    /// The block on the wire is cut short or its value is not UTF-8.
    #[error("malformed metadata block: {0}")]
    Malformed(&'static str),
    /// Reply metadata was set through a copy of a call's context
    /// ([`CallContext::current`](crate::CallContext::current)) outside that call's handler:
    /// in another task, or after the call ended. Nothing was sent.
    #[error("reply metadata can only be set from the call's own handler while it runs; this copy of the call context is used in another task or after the call ended")]
    CallNotCurrent,
    /// A trailer was added to a unary reply: trailers go with a stream's end, and a unary
    /// call's handler sets reply metadata instead.
    #[error("trailers go with a stream's end; a unary reply carries reply metadata only (set it from the handler)")]
    NotAStream,
}

/// No entries: what a reply without metadata reads as.
pub(crate) static EMPTY_METADATA: Metadata = Metadata {
    entries: Vec::new(),
};

/// An ordered list of metadata entries with unique keys. Setting a key again replaces its
/// value, so per-call entries override a channel's defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Metadata {
    entries: Vec<(String, String)>,
}

impl Metadata {
    /// A handle's metadata with one more entry: a copy of `base` (or nothing) with `key` set,
    /// shared by the calls of the new handle.
    pub(crate) fn extended(
        base: Option<&Metadata>,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Arc<Metadata>, MetadataError> {
        let mut metadata = base.cloned().unwrap_or_default();
        metadata.insert(key, value)?;
        Ok(Arc::new(metadata))
    }

    /// No entries.
    pub const fn new() -> Self {
        Self {
            entries: Vec::new(),
        }
    }

    /// Sets `key` to `value` (replacing an earlier value), checking the key and the limits.
    pub fn insert(
        &mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<(), MetadataError> {
        let (key, value) = (key.into(), value.into());
        check_key(&key)?;
        if let Some(slot) = self.entries.iter_mut().find(|(k, _)| *k == key) {
            let old = std::mem::replace(&mut slot.1, value);
            return self.check_size().inspect_err(|_| {
                if let Some(slot) = self.entries.iter_mut().find(|(k, _)| *k == key) {
                    slot.1 = old;
                }
            });
        }
        if self.entries.len() >= MAX_METADATA_ENTRIES {
            return Err(MetadataError::TooManyEntries);
        }
        self.entries.push((key, value));
        self.check_size().inspect_err(|_| {
            self.entries.pop();
        })
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let index = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(index).1)
    }

    /// The entries, in the order they were first set.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Sets every entry of `other` here (its values win).
    pub fn merge(&mut self, other: &Metadata) -> Result<(), MetadataError> {
        for (key, value) in other.iter() {
            self.insert(key, value)?;
        }
        Ok(())
    }

    /// Bytes of the encoded block.
    pub fn encoded_len(&self) -> usize {
        2 + self
            .entries
            .iter()
            .map(|(k, v)| 1 + k.len() + 2 + v.len())
            .sum::<usize>()
    }

    fn check_size(&self) -> Result<(), MetadataError> {
        match self.encoded_len() {
            len if len > MAX_METADATA_BYTES => Err(MetadataError::TooLarge(len)),
            _ => Ok(()),
        }
    }

    /// Appends the wire block. The limits hold by construction, so this cannot fail.
    pub fn encode(&self, dst: &mut BytesMut) {
        dst.reserve(self.encoded_len());
        dst.put_u16(self.entries.len() as u16);
        for (key, value) in &self.entries {
            dst.put_u8(key.len() as u8);
            dst.put_slice(key.as_bytes());
            dst.put_u16(value.len() as u16);
            dst.put_slice(value.as_bytes());
        }
    }

    /// Splits a frame payload that starts with a metadata block into the metadata and the rest
    /// (the codec's payload), checking every limit before allocating.
    pub fn decode(mut payload: Bytes) -> Result<(Metadata, Bytes), MetadataError> {
        let start = payload.len();
        let count = read_u16(&mut payload)? as usize;
        if count > MAX_METADATA_ENTRIES {
            return Err(MetadataError::TooManyEntries);
        }
        let mut metadata = Metadata {
            entries: Vec::with_capacity(count),
        };
        for _ in 0..count {
            let key_len = usize::from(read_u8(&mut payload)?);
            let key = read_str(&mut payload, key_len)?;
            let value_len = usize::from(read_u16(&mut payload)?);
            let value = read_str(&mut payload, value_len)?;
            if start - payload.len() > MAX_METADATA_BYTES {
                return Err(MetadataError::TooLarge(start - payload.len()));
            }
            check_key(&key)?;
            match metadata.entries.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => metadata.entries.push((key, value)),
            }
        }
        Ok((metadata, payload))
    }
}

impl<K: Into<String>, V: Into<String>> TryFrom<Vec<(K, V)>> for Metadata {
    type Error = MetadataError;

    fn try_from(entries: Vec<(K, V)>) -> Result<Self, MetadataError> {
        let mut metadata = Metadata::new();
        for (key, value) in entries {
            metadata.insert(key, value)?;
        }
        Ok(metadata)
    }
}

fn check_key(key: &str) -> Result<(), MetadataError> {
    let valid = !key.is_empty()
        && key.len() <= MAX_KEY_LEN
        && key
            .bytes()
            .all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.'));
    if valid {
        Ok(())
    } else {
        Err(MetadataError::InvalidKey(key.to_owned()))
    }
}

fn read_u8(src: &mut Bytes) -> Result<u8, MetadataError> {
    if src.is_empty() {
        return Err(MetadataError::Malformed("cut short"));
    }
    Ok(src.get_u8())
}

fn read_u16(src: &mut Bytes) -> Result<u16, MetadataError> {
    if src.len() < 2 {
        return Err(MetadataError::Malformed("cut short"));
    }
    Ok(src.get_u16())
}

fn read_str(src: &mut Bytes, len: usize) -> Result<String, MetadataError> {
    if src.len() < len {
        return Err(MetadataError::Malformed("cut short"));
    }
    let bytes = src.split_to(len);
    String::from_utf8(bytes.to_vec()).map_err(|_| MetadataError::Malformed("text is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_leaves_the_payload() {
        let mut metadata = Metadata::new();
        metadata.insert("x-request-id", "abc-1").unwrap();
        metadata.insert("tenant", "acme").unwrap();
        let mut wire = BytesMut::new();
        metadata.encode(&mut wire);
        assert_eq!(wire.len(), metadata.encoded_len());
        wire.extend_from_slice(b"payload");
        let (decoded, rest) = Metadata::decode(wire.freeze()).unwrap();
        assert_eq!(decoded, metadata);
        assert_eq!(&rest[..], b"payload");
    }

    #[test]
    fn setting_a_key_again_replaces_it() {
        let mut metadata = Metadata::new();
        metadata.insert("a", "1").unwrap();
        metadata.insert("a", "2").unwrap();
        assert_eq!(metadata.len(), 1);
        assert_eq!(metadata.get("a"), Some("2"));
    }

    #[test]
    fn keys_are_checked() {
        let mut metadata = Metadata::new();
        for bad in ["", "Upper", "with space", "ü", &"k".repeat(256)] {
            assert!(
                matches!(metadata.insert(bad, "v"), Err(MetadataError::InvalidKey(_))),
                "{bad:?}"
            );
        }
        assert!(metadata.is_empty());
    }

    #[test]
    fn limits_are_enforced_on_both_sides() {
        let mut metadata = Metadata::new();
        for i in 0..MAX_METADATA_ENTRIES {
            metadata.insert(format!("k{i}"), "v").unwrap();
        }
        assert_eq!(
            metadata.insert("one-more", "v"),
            Err(MetadataError::TooManyEntries)
        );
        let mut big = Metadata::new();
        assert!(matches!(
            big.insert("big", "x".repeat(MAX_METADATA_BYTES)),
            Err(MetadataError::TooLarge(_))
        ));
        assert!(big.is_empty(), "a refused entry is not kept");

        // A hostile block: 65 entries announced.
        let mut wire = BytesMut::new();
        wire.put_u16(65);
        assert_eq!(
            Metadata::decode(wire.freeze()),
            Err(MetadataError::TooManyEntries)
        );
        // A value longer than what follows.
        let mut wire = BytesMut::new();
        wire.put_u16(1);
        wire.put_u8(1);
        wire.put_slice(b"a");
        wire.put_u16(100);
        assert!(matches!(
            Metadata::decode(wire.freeze()),
            Err(MetadataError::Malformed(_))
        ));
        // Over the byte limit in total, with every entry within its own limits.
        let mut wire = BytesMut::new();
        wire.put_u16(3);
        for key in [b"a", b"b", b"c"] {
            wire.put_u8(1);
            wire.put_slice(key);
            wire.put_u16(4000);
            wire.put_bytes(b'x', 4000);
        }
        assert!(matches!(
            Metadata::decode(wire.freeze()),
            Err(MetadataError::TooLarge(_))
        ));
    }
}
