//! The compression algorithms this build can use: those whose feature is on.

/// An algorithm this build compresses and decompresses with. Without the `zstd` feature there
/// is none, and a connection never compresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Algorithm {
    /// zstd (RFC 8878), algorithm id 1.
    #[cfg(feature = "zstd")]
    Zstd,
}

impl Algorithm {
    /// The algorithm with wire id `id`, if this build has it.
    pub(crate) fn from_id(id: u8) -> Option<Self> {
        match id {
            #[cfg(feature = "zstd")]
            crate::wire::COMPRESSION_ZSTD => Some(Self::Zstd),
            _ => None,
        }
    }

    /// The algorithm's wire id.
    pub(crate) fn id(self) -> u8 {
        match self {
            #[cfg(feature = "zstd")]
            Self::Zstd => crate::wire::COMPRESSION_ZSTD,
        }
    }
}
