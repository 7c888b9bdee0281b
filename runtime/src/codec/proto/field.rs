//! The [`ProtoField`] trait, and the helpers every implementation uses: field headers,
//! map entries and decode errors.

use bytes::{Buf, BufMut};
use std::marker::PhantomData;

use prost::encoding::{
    encode_key, encode_varint, encoded_len_varint, key_len, skip_field, DecodeContext, WireType,
};
use prost::{DecodeError, Message};

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

    /// Reads the value from a serde format (JSON, MessagePack): `Deserialize`, except that
    /// `Bytes` becomes a view of the payload where it can (see `codec/shared_bytes.rs`).
    fn deserialize_shared<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Self, D::Error>
    where
        Self: serde::Deserialize<'de>,
    {
        Self::deserialize(deserializer)
    }

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
        merge_wrapped_list(items, wire_type, buf, ctx)
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

/// Decodes a message whose field 1 is a repeated `T`, into `items`.
fn merge_wrapped_list<T: ProtoField, C: Extend<T> + Send + Sync>(
    items: &mut C,
    wire_type: WireType,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError> {
    prost::encoding::message::merge(
        wire_type,
        &mut ListBody {
            items,
            element: PhantomData::<fn() -> T>,
        },
        buf,
        ctx,
    )
}

/// Decode-only view of a wrapped list, so that prost's nested-message decoding (and its
/// recursion limit) applies to it.
struct ListBody<'a, T, C> {
    items: &'a mut C,
    element: PhantomData<fn() -> T>,
}

impl<T: ProtoField, C: Extend<T> + Send + Sync> Message for ListBody<'_, T, C> {
    fn encode_raw(&self, _buf: &mut impl BufMut) {}
    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        if tag == 1 {
            T::merge_list(self.items, wire_type, buf, ctx)
        } else {
            skip_field(wire_type, tag, buf, ctx)
        }
    }
    fn encoded_len(&self) -> usize {
        0
    }
    fn clear(&mut self) {}
}
