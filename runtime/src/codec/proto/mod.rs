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
mod field;
mod message;
mod scalar;
mod time;
mod unit_enum;

pub use prost::encoding::{skip_field, DecodeContext};
pub use prost::DecodeError;

pub use field::{
    decode_error, encode_header, header_len, merge_empty, unknown_variant, ProtoField,
};
pub use message::{encode_message, merge_message, merge_variant, message_len, VariantFields};
pub use unit_enum::{deserialize_unit_enum, serialize_unit_enum, UnitEnum};

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
