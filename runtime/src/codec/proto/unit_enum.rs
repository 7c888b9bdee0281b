//! Enums whose variants carry no data: a protobuf `enum` (an `int32` field holding the
//! variant's number), the variant's name in JSON, and its number in MessagePack.
//!
//! A number or name this side does not know (a variant added by a newer peer) decodes to the
//! enum's `#[wirecall(other)]` variant if it has one, and is a decode error otherwise.

use std::fmt;
use std::marker::PhantomData;

use bytes::{Buf, BufMut};
use prost::encoding::{check_wire_type, encode_key, key_len, DecodeContext, WireType};
use prost::DecodeError;
use serde::de::{self, Deserializer, Visitor};
use serde::Serializer;

use super::scalar::Scalar;

/// A unit-only enum, as `#[wirecall::message]` describes it.
pub trait UnitEnum: Send + Sync + Sized + 'static {
    /// The enum's name, for error messages.
    const NAME: &'static str;
    /// The variant names, for error messages.
    const VARIANTS: &'static [&'static str];
    /// The variant a missing field decodes to (the one numbered 0).
    fn first() -> Self;
    /// The variant's number on the wire.
    fn number(&self) -> i32;
    /// The variant's name.
    fn name(&self) -> &'static str;
    /// The variant numbered `number`, or the catch-all variant.
    fn from_number(number: i32) -> Option<Self>;
    /// The variant named `name`, or the catch-all variant.
    fn from_name(name: &str) -> Option<Self>;
}

/// See [`UnitEnum::first`].
pub fn unit_enum_default<E: UnitEnum>() -> E {
    E::first()
}

fn unknown_number<E: UnitEnum>(number: i64) -> DecodeError {
    super::field::decode_error(format!("unknown value {number} for enum `{}`", E::NAME))
}

fn decode_number<E: UnitEnum>(buf: &mut impl Buf) -> Result<E, DecodeError> {
    // An `int32` on the wire; a value outside `i32` is as unknown as any other.
    let raw = <i64 as Scalar>::get(buf)?;
    i32::try_from(raw)
        .ok()
        .and_then(E::from_number)
        .ok_or_else(|| unknown_number::<E>(raw))
}

/// Writes `value` as an `int32` field.
pub fn encode_unit_enum<E: UnitEnum>(value: &E, tag: u32, buf: &mut impl BufMut) {
    encode_key(tag, WireType::Varint, buf);
    value.number().put(buf);
}

/// The length of [`encode_unit_enum`]'s output.
pub fn unit_enum_len<E: UnitEnum>(value: &E, tag: u32) -> usize {
    key_len(tag) + value.number().raw_len()
}

/// Reads an `int32` field into `value`.
pub fn merge_unit_enum<E: UnitEnum>(
    value: &mut E,
    wire_type: WireType,
    buf: &mut impl Buf,
) -> Result<(), DecodeError> {
    check_wire_type(WireType::Varint, wire_type)?;
    *value = decode_number(buf)?;
    Ok(())
}

/// Writes a packed repeated `int32` field.
pub fn encode_unit_enum_list<'a, E: UnitEnum>(
    items: impl Iterator<Item = &'a E> + Clone,
    tag: u32,
    buf: &mut impl BufMut,
) {
    let len = packed_body_len(items.clone());
    if len == 0 {
        return;
    }
    super::field::encode_header(tag, len, buf);
    for item in items {
        item.number().put(buf);
    }
}

fn packed_body_len<'a, E: UnitEnum>(items: impl Iterator<Item = &'a E>) -> usize {
    items.map(|item| item.number().raw_len()).sum()
}

/// The length of [`encode_unit_enum_list`]'s output.
pub fn unit_enum_list_len<'a, E: UnitEnum>(
    items: impl Iterator<Item = &'a E> + Clone,
    tag: u32,
) -> usize {
    match packed_body_len(items) {
        0 => 0,
        len => super::field::header_len(tag, len),
    }
}

/// Reads a packed or unpacked repeated `int32` field into `items`.
pub fn merge_unit_enum_list<E: UnitEnum>(
    items: &mut impl Extend<E>,
    wire_type: WireType,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError> {
    if wire_type == WireType::LengthDelimited {
        prost::encoding::merge_loop(items, buf, ctx, |items, buf, _| {
            items.extend(core::iter::once(decode_number::<E>(buf)?));
            Ok(())
        })
    } else {
        check_wire_type(WireType::Varint, wire_type)?;
        items.extend(core::iter::once(decode_number::<E>(buf)?));
        Ok(())
    }
}

/// The variant's name for human-readable formats (JSON), its number for the others
/// (MessagePack).
pub fn serialize_unit_enum<E: UnitEnum, S: Serializer>(
    value: &E,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    if serializer.is_human_readable() {
        serializer.serialize_str(value.name())
    } else {
        serializer.serialize_i32(value.number())
    }
}

/// Accepts a variant's name or number in every format.
pub fn deserialize_unit_enum<'de, E: UnitEnum, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<E, D::Error> {
    deserializer.deserialize_any(UnitEnumVisitor(PhantomData))
}

struct UnitEnumVisitor<E>(PhantomData<E>);

impl<E: UnitEnum> Visitor<'_> for UnitEnumVisitor<E> {
    type Value = E;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a variant name or number of enum `{}`", E::NAME)
    }

    fn visit_str<Err: de::Error>(self, name: &str) -> Result<E, Err> {
        E::from_name(name).ok_or_else(|| Err::unknown_variant(name, E::VARIANTS))
    }

    fn visit_i64<Err: de::Error>(self, number: i64) -> Result<E, Err> {
        i32::try_from(number)
            .ok()
            .and_then(E::from_number)
            .ok_or_else(|| Err::custom(format!("unknown value {number} for enum `{}`", E::NAME)))
    }

    fn visit_u64<Err: de::Error>(self, number: u64) -> Result<E, Err> {
        match i64::try_from(number) {
            Ok(number) => self.visit_i64(number),
            Err(_) => Err(Err::custom(format!(
                "unknown value {number} for enum `{}`",
                E::NAME
            ))),
        }
    }
}
