//! The frame header (book: "Frames").
//!
//! ```text
//! offset  size  field
//!      0     4  length      u32 BE, bytes after this field (header + payload)
//!      4     1  kind        FrameKind
//!      5     1  flags       0, or FLAG_METADATA from protocol version 2 on, FLAG_COMPRESSED
//!                           from version 5 on
//!      6     8  request id  u64 BE
//!     14     8  method id   u64 BE (0 where the kind has no method)
//!     22     4  deadline    u32 BE, milliseconds the caller will wait; 0 = no deadline
//!     26     -  payload
//! ```

/// Bytes of the length prefix.
pub const LENGTH_PREFIX_LEN: usize = 4;
/// Bytes of the header that follows the length prefix.
pub const HEADER_LEN: usize = 22;
/// Length prefix plus header: the smallest possible frame on the wire.
pub const FRAME_OVERHEAD: usize = LENGTH_PREFIX_LEN + HEADER_LEN;
/// The default maximum of the length prefix: 16 MiB.
pub const DEFAULT_MAX_FRAME_LEN: u32 = 16 * 1024 * 1024;

/// Frame flag (protocol version 2): the payload starts with a metadata block, then the
/// codec's payload. Allowed on Request, Notify, Response and Error frames, and from version 4
/// on a stream's `Head` (which MUST set it) and the server's `End` (its trailers).
pub const FLAG_METADATA: u8 = 0x01;

/// Frame flag (protocol version 5, on a connection that negotiated compression): the payload
/// is compressed: its uncompressed length (a `u32` BE), then the compressed bytes. Allowed on
/// the kinds that carry a codec's payload, see [`FrameKind::may_be_compressed`].
pub const FLAG_COMPRESSED: u8 = 0x02;

/// What a frame is for. The numeric values are the wire values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FrameKind {
    /// A call that expects exactly one `Response` or `Error` with the same request id.
    Request = 1,
    /// The successful result of a request.
    Response = 2,
    /// A failed request (request id != 0) or a connection-level error (request id 0).
    Error = 3,
    /// The caller gave up on a request; the server stops working on it.
    Cancel = 4,
    /// Liveness probe; answered with `Pong` carrying the same request id.
    Ping = 5,
    /// Answer to `Ping`.
    Pong = 6,
    /// A one-way call: no reply of any kind is sent.
    Notify = 7,
    /// Protocol version 3: opens a stream call (like a `Request`, but answered by `Item`
    /// frames and one `End` or `Error`).
    Open = 8,
    /// Protocol version 3: one item of an open stream.
    Item = 9,
    /// Protocol version 3: the sender's last frame on a stream: it sends no more items.
    End = 10,
    /// Protocol version 3: the receiver of a stream allows its peer this many more items.
    Credit = 11,
    /// Protocol version 4: a stream's reply metadata, sent by the server before the stream's
    /// first item (its payload is one metadata block, flag [`FLAG_METADATA`] set).
    Head = 12,
}

impl FrameKind {
    /// Parses a wire value.
    pub const fn from_u8(value: u8) -> Option<Self> {
        Some(match value {
            1 => Self::Request,
            2 => Self::Response,
            3 => Self::Error,
            4 => Self::Cancel,
            5 => Self::Ping,
            6 => Self::Pong,
            7 => Self::Notify,
            8 => Self::Open,
            9 => Self::Item,
            10 => Self::End,
            11 => Self::Credit,
            12 => Self::Head,
            _ => return None,
        })
    }

    /// Whether a frame of this kind may set [`FLAG_COMPRESSED`]: the kinds that carry a
    /// codec's payload (Request, Response, Notify, Open, Item). The others are small or
    /// fixed-size, and a compressed one is a protocol violation.
    pub const fn may_be_compressed(self) -> bool {
        matches!(
            self,
            Self::Request | Self::Response | Self::Notify | Self::Open | Self::Item
        )
    }

    /// The oldest protocol version that has this kind: 4 for `Head`, 3 for the other stream
    /// kinds, 1 otherwise. A frame of a newer kind than its connection's version is an unknown
    /// kind there.
    pub const fn since_version(self) -> u8 {
        match self {
            Self::Head => 4,
            Self::Open | Self::Item | Self::End | Self::Credit => 3,
            _ => 1,
        }
    }
}

/// Bytes of a `Credit` frame's payload: the granted item count, a `u32` BE.
pub const CREDIT_LEN: usize = 4;

/// The most items a stream's receiver may have granted and not yet received: a `Credit` that
/// takes the outstanding credit past this is a protocol violation. Bounds what a receiver
/// commits to buffer, whatever the peer asks.
pub const MAX_STREAM_CREDIT: u32 = 65_536;

#[cfg(test)]
mod tests {
    use super::FrameKind;

    #[test]
    fn every_kind_parses_back_from_its_wire_value() {
        for value in 0..=u8::MAX {
            if let Some(kind) = FrameKind::from_u8(value) {
                assert_eq!(kind as u8, value);
            }
        }
        assert_eq!(FrameKind::from_u8(0), None);
        assert_eq!(FrameKind::from_u8(13), None);
    }

    #[test]
    fn only_the_stream_kinds_need_version_3_and_head_version_4() {
        for value in 1..=12 {
            let kind = FrameKind::from_u8(value).unwrap();
            let since = match value {
                12 => 4,
                8.. => 3,
                _ => 1,
            };
            assert_eq!(kind.since_version(), since);
        }
    }
}
