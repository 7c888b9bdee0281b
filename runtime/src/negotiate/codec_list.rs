//! A list of codec ids as a hello carries it, printed by name where known: what the errors
//! of a refused handshake show.

use std::fmt;

use crate::codec::Codec;

/// A list of codec ids as seen on the wire, printed by name where known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodecList(pub Vec<u8>);

impl CodecList {
    /// The ids of `codecs`.
    pub fn of(codecs: &[Codec]) -> Self {
        Self(codecs.iter().map(|c| c.id()).collect())
    }
}

impl fmt::Display for CodecList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, id) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match Codec::from_id(*id) {
                Some(codec) => f.write_str(codec.name())?,
                None => write!(f, "unknown({id})")?,
            }
        }
        f.write_str("]")
    }
}
