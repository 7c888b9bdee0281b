//! The wire messages of every method, shared by the generated code of all services: one
//! generic message ([`Fields`]) for arguments, replies and stream items, the reply shapes
//! ([`reply`]), and a method's messages as one type ([`MethodMessages`]).
//!
//! A service whose types all travel in Protobuf names its messages through these types; a
//! service declared `codecs(json, msgpack)` generates serde structs instead and implements
//! [`ArgsMessage`] and [`ItemMessage`](crate::stream::ItemMessage) for them.

mod fields;
mod method;
pub(crate) mod reply;
mod slot;

pub use fields::{FieldNames, Fields, Slots};
pub use method::{ArgValues, ArgsMessage, MethodMessages, ReplyItem, UploadItem};
pub use reply::{
    ErrField, NoFields, OkErrFields, ResultMessage, UnitMessage, UnitResultMessage, ValueField,
    ValueMessage,
};
pub use slot::{Nested, Plain, Slot, SlotCodec};

use crate::codec::CodecError;
use crate::error::Error;

/// Turns the two optional fields of a result reply into the caller's nested result. A reply
/// with neither field set is a decode error: the peer sent something that is not a result.
pub fn result_from_parts<T, E>(ok: Option<T>, err: Option<E>) -> Result<Result<T, E>, Error> {
    match (ok, err) {
        (_, Some(err)) => Ok(Err(err)),
        (Some(ok), None) => Ok(Ok(ok)),
        (None, None) => Err(Error::Codec(CodecError::EmptyResult)),
    }
}
