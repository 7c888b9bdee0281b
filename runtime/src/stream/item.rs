//! [`ItemMessage`]: how one item of a stream (or a unary reply) travels.

use crate::codec::WireMessage;
use crate::error::Error;

/// The wire message of one stream item, and of a unary method's reply: a message with the
/// field `value` for items of type `T`, `ok` and `err` for items of type `Result<T, E>` (the
/// book's wire chapter, "Streams"), none for `()`. `#[wirecall::service]` names the runtime's
/// generic messages, which implement it; a hand-written stream implements it for its own
/// item type.
pub trait ItemMessage: WireMessage {
    /// The item as the handler produces it and the caller receives it.
    type Item: Send + 'static;

    /// The message carrying `item`, and whether it is the last (an application error ends
    /// the stream).
    fn from_item(item: Self::Item) -> (Self, bool);

    /// The item this message carries; an error when it carries neither field of a result.
    fn into_item(self) -> Result<Self::Item, Error>;
}
