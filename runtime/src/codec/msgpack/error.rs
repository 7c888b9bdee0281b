//! Why a MessagePack payload did not read as the expected type.

use std::fmt::Display;

/// A MessagePack payload that does not hold the expected value. Boxed: every value read
/// returns a `Result` with this error, and a pointer keeps those results small.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub(crate) struct ReadError(Box<Why>);

impl From<Why> for ReadError {
    #[cold]
    fn from(why: Why) -> Self {
        Self(Box::new(why))
    }
}

/// What was wrong with the payload.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Why {
    /// The payload ends inside a value.
    #[error("the MessagePack payload ends inside a value")]
    Truncated,
    /// Byte `0xc1`, which MessagePack reserves, where a value starts.
    #[error("byte 0xc1 is not a MessagePack value (the format reserves it)")]
    Reserved,
    /// Arrays, maps and enum variants nested deeper than the reader allows.
    #[error("arrays and maps nest deeper than the limit of {0} (depth limit exceeded)")]
    TooDeep(usize),
    /// An array or map with items left after the type had read all it takes.
    #[error("an array or map of {len} items where the type takes {read}")]
    Unread {
        /// The array's or map's length on the wire.
        len: u32,
        /// The items the type read.
        read: u32,
    },
    /// An enum written as a map of other than one entry.
    #[error("an enum variant is a map of one entry, not {0}")]
    VariantLength(u32),
    /// A 128-bit integer written as a byte string of other than 16 bytes.
    #[error("a 128-bit integer is a byte string of 16 bytes, not {0}")]
    WideInteger(u8),
    /// A string that is not UTF-8, for a type that takes only text.
    #[error("a MessagePack string is not UTF-8: {0}")]
    Utf8(#[from] std::str::Utf8Error),
    /// A MessagePack extension value, which no wirecall type carries.
    #[error("a MessagePack extension value, which no wirecall type reads")]
    Extension,
    /// What the type being read refused (a value of the wrong kind, an unknown variant...).
    #[error("{0}")]
    Refused(String),
}

/// The payload ends inside a value: out of line, so that the reads' fast paths stay short.
#[cold]
#[inline(never)]
pub(super) fn truncated() -> ReadError {
    Why::Truncated.into()
}

impl serde::de::Error for ReadError {
    #[cold]
    fn custom<T: Display>(message: T) -> Self {
        Why::Refused(message.to_string()).into()
    }
}
