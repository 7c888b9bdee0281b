//! [`Compression`]: how one side of a connection compresses, configured on its builder.

use super::algorithm::Algorithm;

/// Frames whose payload is under this many bytes go uncompressed by default: below it, what
/// zstd saves on typical RPC messages does not pay for the time it takes (see the Performance
/// chapter's compression cells).
const DEFAULT_MIN_SIZE: u32 = 1024;

/// zstd's fastest regular level: on the bench's text-like payload it compresses as well as
/// level 3 (4.6x) in three quarters of the time (the Performance chapter's compression cell).
#[cfg(feature = "zstd")]
const DEFAULT_ZSTD_LEVEL: i32 = 1;

/// How a side of a connection compresses the frames it sends (book: "Compression").
///
/// A client offers the algorithm in its hello and the server chooses it when it allows it
/// too; then both sides may compress any Request, Response, Notify, Open or Item frame. Each
/// side decides frame by frame with its own settings: a payload under
/// [`min_size`](Self::min_size) goes as it is, and so does one that compresses badly; after
/// a few of those in a row, the side tries only one frame in 32 until one compresses again,
/// so incompressible traffic costs little.
///
/// The default is `Compression::zstd()` when the `zstd` feature is on, and
/// [`Compression::none`] without it.
///
/// ```
/// # #[cfg(feature = "zstd")] {
/// use wirecall_runtime::Compression;
/// let fast = Compression::zstd().level(1).min_size(4096);
/// # let _ = fast;
/// # }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compression {
    algorithm: Option<Algorithm>,
    level: i32,
    min_size: u32,
}

impl Compression {
    /// No compression: a client offers none, a server chooses none.
    pub const fn none() -> Self {
        Self {
            algorithm: None,
            level: 0,
            min_size: DEFAULT_MIN_SIZE,
        }
    }

    /// zstd at level 1, for payloads of 1 KiB and more. Needs the `zstd` feature.
    #[cfg(feature = "zstd")]
    pub const fn zstd() -> Self {
        Self {
            algorithm: Some(Algorithm::Zstd),
            level: DEFAULT_ZSTD_LEVEL,
            min_size: DEFAULT_MIN_SIZE,
        }
    }

    /// The compression level (for zstd, 1 to 22, and negative levels for speed over ratio;
    /// out-of-range values are clamped by zstd). Higher compresses more and takes longer.
    #[must_use]
    pub const fn level(mut self, level: i32) -> Self {
        self.level = level;
        self
    }

    /// The smallest payload, in bytes, this side compresses (default 1,024). Smaller frames go
    /// as they are.
    #[must_use]
    pub const fn min_size(mut self, bytes: u32) -> Self {
        self.min_size = bytes;
        self
    }

    /// Whether this side offers (client) or accepts (server) compression at all.
    pub const fn is_enabled(&self) -> bool {
        self.algorithm.is_some()
    }

    /// The algorithm ids a client hello offers.
    pub(crate) fn offer(&self) -> Vec<u8> {
        self.algorithm.map(Algorithm::id).into_iter().collect()
    }

    /// The algorithm a server chooses for a client that offered `offered` (most preferred
    /// first): its own, if the client offered it.
    pub(crate) fn choose(&self, offered: &[u8]) -> Option<Algorithm> {
        self.algorithm
            .filter(|algorithm| offered.contains(&algorithm.id()))
    }

    pub(crate) const fn configured_level(&self) -> i32 {
        self.level
    }

    pub(crate) const fn configured_min_size(&self) -> u32 {
        self.min_size
    }
}

impl Default for Compression {
    fn default() -> Self {
        #[cfg(feature = "zstd")]
        return Self::zstd();
        #[cfg(not(feature = "zstd"))]
        return Self::none();
    }
}
