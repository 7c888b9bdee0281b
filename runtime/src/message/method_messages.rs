//! A method's messages as one type, [`MethodMessages`]: its arguments ([`ArgsMessage`]), its
//! reply or stream items, and its uploaded items. The generated code names a method's
//! messages once (`struct __GetUser;` implementing it) and hands that type to the runtime's
//! call and handler functions.

use super::fields::{FieldNames, Fields, Slots};
use crate::codec::WireMessage;
use crate::stream::ItemMessage;

/// The message a method's arguments travel in, made from and taken apart into the tuple of
/// the arguments (the upload, if any, aside). `Sync`, so that a call shares it with its
/// attempts without a lock (every type that travels in Protobuf is; a serde-only service's
/// arguments must be too).
pub trait ArgsMessage: WireMessage + Sync {
    /// The arguments, in declaration order, as a tuple.
    type Values: Send + 'static;

    /// The message carrying `values`.
    fn from_values(values: Self::Values) -> Self;

    /// The arguments this message carries.
    fn into_values(self) -> Self::Values;
}

impl<N: FieldNames, S: Slots> ArgsMessage for Fields<N, S>
where
    Self: WireMessage,
    S::Values: Send + Sync,
{
    type Values = S::Values;

    #[inline]
    fn from_values(values: S::Values) -> Self {
        Self::new(values)
    }

    #[inline]
    fn into_values(self) -> S::Values {
        self.values
    }
}

/// The messages of one method (or event). The associated types have no bounds here, so the
/// generated impl is well-formed whatever the method's types; the functions that use a
/// method require them to travel ([`ArgsMessage`], [`ItemMessage`]), and a type that cannot
/// is reported there, on the method.
pub trait MethodMessages: 'static {
    /// Its arguments: an [`ArgsMessage`].
    type Args;
    /// Its reply, or each item of the stream it returns: an [`ItemMessage`].
    type Reply;
    /// Each item of its upload (an [`ItemMessage`]); [`UnitMessage`](super::UnitMessage) for
    /// a method without one.
    type Upload;
}

/// The arguments of method `M`, as a tuple.
pub type ArgValues<M> = <<M as MethodMessages>::Args as ArgsMessage>::Values;
/// What a call of method `M` returns, or each item of its stream.
pub type ReplyItem<M> = <<M as MethodMessages>::Reply as ItemMessage>::Item;
/// Each item of method `M`'s upload.
pub type UploadItem<M> = <<M as MethodMessages>::Upload as ItemMessage>::Item;
