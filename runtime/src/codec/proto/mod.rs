//! How Rust types travel in Protobuf: the [`ProtoField`] trait and its implementations for the
//! standard types, used by the code that `#[wirecall::message]` and `#[wirecall::service]`
//! generate.
//!
//! Every type has two forms on the wire:
//!
//! - its **field** form, as a field of a message: scalars follow proto3 (a default value is not
//!   written), `Option<T>` is written only when `Some`, lists and sets are a `repeated` field
//!   (packed for numbers) and maps a `map` field;
//! - its **value** form, one value that is always present: an element of a list, a map value,
//!   the inside of an `Option` or a variant of an enum with data. Where the field form is
//!   several occurrences (a list, a set, a map) or a presence (an `Option`), the value form
//!   wraps it in a message whose field 1 holds it, so `Vec<Vec<u32>>` is
//!   `repeated List values`, with `message List { repeated uint32 values = 1; }`.
//!
//! This module is compiled whatever codecs are enabled: generated types implement it always.
//! Nested messages are decoded through prost's `message::merge`, so prost's recursion limit
//! (100 nested messages) bounds every nesting, wrappers included.

mod collections;
mod message;
mod scalar;
mod time;
mod unit_enum;

use bytes::{Buf, BufMut};
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, key_len, WireType};
pub use prost::encoding::{skip_field, DecodeContext};
pub use prost::DecodeError;

pub use message::{encode_message, merge_message, merge_variant, message_len, VariantFields};
pub use unit_enum::{deserialize_unit_enum, serialize_unit_enum, UnitEnum};

/// A type that can be a field of a wirecall message, in every codec (see the module docs for
/// its two Protobuf forms). `#[wirecall::message]` implements it for structs and enums.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot travel in a wirecall message",
    label = "add `#[wirecall::message]` to `{Self}`, or use a type from the book's type table",
    note = "wirecall carries numbers, `bool`, `char`, `String`, `Bytes`, `Duration`, \
            `SystemTime`, tuples, arrays, `Option`, `Box`, `Vec`, sets, maps and \
            `#[wirecall::message]` structs and enums",
    note = "a service that needs no Protobuf can take any serde type: \
            `#[wirecall::service(codecs(json, msgpack))]`"
)]
pub trait ProtoField: Sized + Send + Sync {
    /// Whether the field form is several occurrences of the tag (a list, a set or a map).
    const REPEATS: bool = false;

    /// The value of a field that is absent on the wire.
    fn proto_default() -> Self;

    /// Writes the value form: always present, exactly one occurrence of `tag`.
    fn encode_value(&self, tag: u32, buf: &mut impl BufMut);

    /// The length of [`encode_value`](Self::encode_value)'s output.
    fn value_len(&self, tag: u32) -> usize;

    /// Reads one occurrence of the value form into `self`.
    fn merge_value(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError>;

    /// Whether the field form leaves this value out (proto3: a scalar at its default).
    fn is_omitted(&self) -> bool {
        false
    }

    /// Writes the field form.
    fn encode_field(&self, tag: u32, buf: &mut impl BufMut) {
        if !self.is_omitted() {
            self.encode_value(tag, buf);
        }
    }

    /// The length of [`encode_field`](Self::encode_field)'s output.
    fn field_len(&self, tag: u32) -> usize {
        if self.is_omitted() {
            0
        } else {
            self.value_len(tag)
        }
    }

    /// Reads one occurrence of the field form into `self`.
    fn merge_field(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        self.merge_value(wire_type, buf, ctx)
    }

    /// Writes a list of `Self` as a repeated field (numbers override this to pack, `u8` to
    /// write `bytes`).
    fn encode_list<'a>(
        items: impl Iterator<Item = &'a Self> + Clone,
        tag: u32,
        buf: &mut impl BufMut,
    ) where
        Self: 'a,
    {
        for item in items {
            item.encode_value(tag, buf);
        }
    }

    /// The length of [`encode_list`](Self::encode_list)'s output.
    fn list_len<'a>(items: impl Iterator<Item = &'a Self> + Clone, tag: u32) -> usize
    where
        Self: 'a,
    {
        items.map(|item| item.value_len(tag)).sum()
    }

    /// Reads one occurrence of a repeated field of `Self` into `items`.
    fn merge_list(
        items: &mut impl Extend<Self>,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        let mut item = Self::proto_default();
        item.merge_value(wire_type, buf, ctx)?;
        items.extend(core::iter::once(item));
        Ok(())
    }

    /// Writes a list of `Self` as one value: a message whose field 1 is the list (`u8`
    /// overrides this to write `bytes`).
    fn encode_list_value<'a>(
        items: impl Iterator<Item = &'a Self> + Clone,
        tag: u32,
        buf: &mut impl BufMut,
    ) where
        Self: 'a,
    {
        encode_header(tag, Self::list_len(items.clone(), 1), buf);
        Self::encode_list(items, 1, buf);
    }

    /// The length of [`encode_list_value`](Self::encode_list_value)'s output.
    fn list_value_len<'a>(items: impl Iterator<Item = &'a Self> + Clone, tag: u32) -> usize
    where
        Self: 'a,
    {
        header_len(tag, Self::list_len(items, 1))
    }

    /// Reads a list written by [`encode_list_value`](Self::encode_list_value) into `items`.
    fn merge_list_value<C: Extend<Self> + Send + Sync>(
        items: &mut C,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        collections::merge_wrapped_list(items, wire_type, buf, ctx)
    }
}

/// A decode error with a message. `Message::merge_field` can only return prost's
/// `DecodeError`, and prost marks its constructor as internal (deprecated) without offering
/// another; this is the one place that calls it.
#[allow(deprecated)]
pub fn decode_error(description: impl Into<std::borrow::Cow<'static, str>>) -> DecodeError {
    DecodeError::new(description)
}

/// The error for an enum variant this side does not know (added by a newer peer), when the
/// enum has no `#[wirecall(other)]` variant.
pub fn unknown_variant(enum_name: &'static str, tag: u32) -> DecodeError {
    decode_error(format!(
        "unknown variant (field {tag}) of enum `{enum_name}`; a newer peer may have added it \
         (mark a unit variant #[wirecall(other)] to accept it)"
    ))
}

/// The key and length of a length-delimited field whose contents are `len` bytes long.
pub fn encode_header(tag: u32, len: usize, buf: &mut impl BufMut) {
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(len as u64, buf);
}

/// The length of a length-delimited field whose contents are `len` bytes long, header included.
pub fn header_len(tag: u32, len: usize) -> usize {
    key_len(tag) + encoded_len_varint(len as u64) + len
}

/// Reads a length-delimited field and ignores what it holds (a unit variant of an enum).
pub fn merge_empty(
    wire_type: WireType,
    tag: u32,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError> {
    prost::encoding::check_wire_type(WireType::LengthDelimited, wire_type)?;
    skip_field(wire_type, tag, buf, ctx)
}

/// Writes a field in the form a map value or an oneof takes: lists, sets and maps wrapped,
/// everything else as its field form.
pub(crate) fn encode_entry<T: ProtoField>(value: &T, tag: u32, buf: &mut impl BufMut) {
    if T::REPEATS {
        value.encode_value(tag, buf);
    } else {
        value.encode_field(tag, buf);
    }
}

pub(crate) fn entry_len<T: ProtoField>(value: &T, tag: u32) -> usize {
    if T::REPEATS {
        value.value_len(tag)
    } else {
        value.field_len(tag)
    }
}

pub(crate) fn merge_entry<T: ProtoField>(
    value: &mut T,
    wire_type: WireType,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError> {
    if T::REPEATS {
        value.merge_value(wire_type, buf, ctx)
    } else {
        value.merge_field(wire_type, buf, ctx)
    }
}

/// Implements [`ProtoField`] for a type that is a prost `Message` (a `#[wirecall::message]`
/// struct or enum with data): a message field, always written. `$default` is the value an
/// absent field takes.
#[doc(hidden)]
#[macro_export]
macro_rules! proto_message_field {
    ($ty:ty, $default:expr) => {
        impl $crate::codec::proto::ProtoField for $ty {
            fn proto_default() -> Self {
                $default
            }
            fn encode_value(&self, tag: u32, buf: &mut impl $crate::__bytes::BufMut) {
                $crate::codec::proto::encode_message(self, tag, buf)
            }
            fn value_len(&self, tag: u32) -> usize {
                $crate::codec::proto::message_len(self, tag)
            }
            fn merge_value(
                &mut self,
                wire_type: $crate::__prost::encoding::WireType,
                buf: &mut impl $crate::__bytes::Buf,
                ctx: $crate::codec::proto::DecodeContext,
            ) -> ::core::result::Result<(), $crate::codec::proto::DecodeError> {
                $crate::codec::proto::merge_message(self, wire_type, buf, ctx)
            }
        }
    };
}

/// Implements [`ProtoField`], `Serialize` and `Deserialize` for a [`UnitEnum`]: a protobuf
/// `enum` (an `int32`), the variant name in human-readable formats (JSON), the number in the
/// others (MessagePack).
#[doc(hidden)]
#[macro_export]
macro_rules! proto_unit_enum {
    ($ty:ty) => {
        impl $crate::codec::proto::ProtoField for $ty {
            fn proto_default() -> Self {
                $crate::codec::proto::unit_enum_default::<Self>()
            }
            fn is_omitted(&self) -> bool {
                $crate::codec::proto::UnitEnum::number(self) == 0
            }
            fn encode_value(&self, tag: u32, buf: &mut impl $crate::__bytes::BufMut) {
                $crate::codec::proto::encode_unit_enum(self, tag, buf)
            }
            fn value_len(&self, tag: u32) -> usize {
                $crate::codec::proto::unit_enum_len(self, tag)
            }
            fn merge_value(
                &mut self,
                wire_type: $crate::__prost::encoding::WireType,
                buf: &mut impl $crate::__bytes::Buf,
                _ctx: $crate::codec::proto::DecodeContext,
            ) -> ::core::result::Result<(), $crate::codec::proto::DecodeError> {
                $crate::codec::proto::merge_unit_enum(self, wire_type, buf)
            }
            fn encode_list<'a>(
                items: impl ::core::iter::Iterator<Item = &'a Self> + ::core::clone::Clone,
                tag: u32,
                buf: &mut impl $crate::__bytes::BufMut,
            ) where
                Self: 'a,
            {
                $crate::codec::proto::encode_unit_enum_list(items, tag, buf)
            }
            fn list_len<'a>(
                items: impl ::core::iter::Iterator<Item = &'a Self> + ::core::clone::Clone,
                tag: u32,
            ) -> usize
            where
                Self: 'a,
            {
                $crate::codec::proto::unit_enum_list_len(items, tag)
            }
            fn merge_list(
                items: &mut impl ::core::iter::Extend<Self>,
                wire_type: $crate::__prost::encoding::WireType,
                buf: &mut impl $crate::__bytes::Buf,
                ctx: $crate::codec::proto::DecodeContext,
            ) -> ::core::result::Result<(), $crate::codec::proto::DecodeError> {
                $crate::codec::proto::merge_unit_enum_list(items, wire_type, buf, ctx)
            }
        }
        impl $crate::__serde::Serialize for $ty {
            fn serialize<S: $crate::__serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::core::result::Result<S::Ok, S::Error> {
                $crate::codec::proto::serialize_unit_enum(self, serializer)
            }
        }
        impl<'de> $crate::__serde::Deserialize<'de> for $ty {
            fn deserialize<D: $crate::__serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::core::result::Result<Self, D::Error> {
                $crate::codec::proto::deserialize_unit_enum(deserializer)
            }
        }
    };
}

pub use unit_enum::{
    encode_unit_enum, encode_unit_enum_list, merge_unit_enum, merge_unit_enum_list,
    unit_enum_default, unit_enum_len, unit_enum_list_len,
};

/// serde's form for `Option<Option<T>>` fields (`#[serde(with = ...)]`): `null` for `None`
/// and a one-element array for `Some`, so that `Some(None)` (`[null]`) stays apart from `None`
/// in JSON and MessagePack, as it does in Protobuf.
pub mod nested_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Writes `None` as nil and `Some(value)` as `[value]`.
    pub fn serialize<T: Serialize, S: Serializer>(
        value: &Option<T>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            None => serializer.serialize_none(),
            Some(value) => serializer.serialize_some(&(value,)),
        }
    }

    /// Reads what [`serialize`] writes.
    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<T>, D::Error> {
        Ok(Option::<(T,)>::deserialize(deserializer)?.map(|(value,)| value))
    }
}
