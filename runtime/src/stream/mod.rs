//! Stream calls (protocol version 3): what both sides share. A server stream's producer is a
//! [`Streaming`]; each item travels as the method's item message ([`ItemMessage`]) in one
//! `Item` frame, paid for in advance by the receiver's `Credit`.
//!
//! Layout: `streaming.rs` the producer type handlers return; `item.rs` the item messages
//! generated code declares; `credit.rs` the sender's credit; `credit_window.rs` the receiver's,
//! and `bandwidth_delay.rs` whether it is too small for its link;
//! `outgoing.rs` items encoded for the wire, a handler's or an upload's. Each side's streams
//! have one home of their own: the client's `client/stream/`, the server's `server/stream/`.

pub(crate) mod bandwidth_delay;
pub(crate) mod credit;
pub(crate) mod credit_window;
pub(crate) mod item;
pub(crate) mod outgoing;
pub(crate) mod streaming;

pub use crate::server::stream::upload_queue::Upload;
pub use item::ItemMessage;
pub use streaming::Streaming;

/// Items a client grants a server stream when it opens it, and the most it lets the server
/// have sent ahead of its consumer (see `ChannelBuilder::stream_window`).
pub const DEFAULT_STREAM_WINDOW: u32 = 32;

/// The bytes of items all the server streams of one client connection share (see
/// `ChannelBuilder::connection_window_bytes`): 8 MiB, so eight or more streams that all run
/// full share it rather than taking 1 MiB each.
pub const DEFAULT_CONNECTION_WINDOW_BYTES: u32 = 8 * 1024 * 1024;

/// The bytes of items a stream's window grows towards once items have come (see
/// `ChannelBuilder::stream_window_bytes`): 1 MiB, so 1 KiB items get a window of about 960
/// (each item counts 64 bytes more, for its header and queue place).
pub const DEFAULT_STREAM_WINDOW_BYTES: u32 = 1024 * 1024;

pub use crate::wire::MAX_STREAM_CREDIT;
