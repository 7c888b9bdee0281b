//! Stream calls (protocol version 3): what both sides share. A server stream's producer is a
//! [`Streaming`]; each item travels as the method's item message ([`ItemMessage`]) in one
//! `Item` frame, paid for in advance by the receiver's `Credit` ([`credit`]).
//!
//! Layout: `streaming.rs` the producer type handlers return; `item.rs` the item messages
//! generated code declares; `credit.rs` the sender's credit window; `outgoing.rs` a
//! producer's items encoded for the wire. The client's side of a stream is
//! `client/item_stream.rs`, the server's `server/connection/stream.rs`.

pub(crate) mod credit;
mod item;
pub(crate) mod outgoing;
mod streaming;

pub use item::ItemMessage;
pub use outgoing::{OpenFuture, OutgoingItems};
pub use streaming::Streaming;

/// Items a client grants a server stream when it opens it, and the most it lets the server
/// have sent ahead of its consumer (see `ChannelBuilder::stream_window`).
pub const DEFAULT_STREAM_WINDOW: u32 = 32;

pub use crate::wire::MAX_STREAM_CREDIT;
