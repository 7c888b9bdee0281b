//! The wire messages of every method, shared by the generated code of all services: one
//! generic message ([`Fields`]) for arguments, replies and stream items, the shapes of a
//! method's output, and a method's messages as one type ([`MethodMessages`]).
//!
//! A service whose types all travel in Protobuf names its messages through these types; a
//! service declared `codecs(json, msgpack)` generates serde structs instead and implements
//! [`ArgsMessage`] and [`ItemMessage`](crate::stream::ItemMessage) for them.
//!
//! Layout: `fields.rs` is [`Fields`] over a tuple of fields; `field_codec.rs` how one field
//! reads and writes itself ([`Slot`], [`Plain`], [`Nested`]); `output.rs` the messages of a
//! method's output (`value`, `ok`/`err`, nothing) and their [`ItemMessage`]s;
//! `method_messages.rs` [`MethodMessages`] and [`ArgsMessage`].
//!
//! [`ItemMessage`]: crate::stream::ItemMessage

mod field_codec;
mod fields;
mod method_messages;
pub(crate) mod output;

pub use field_codec::{Nested, Plain, Slot, SlotCodec};
pub use fields::{FieldNames, Fields, Slots};
pub use method_messages::{ArgValues, ArgsMessage, MethodMessages, ReplyItem, UploadItem};
pub use output::{
    result_from_parts, ErrField, NoFields, OkErrFields, ResultMessage, UnitMessage,
    UnitResultMessage, ValueField, ValueMessage,
};
