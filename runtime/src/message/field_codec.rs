//! How one field of a generated message travels: a [`Slot`] is a field's type together with
//! its serde form. [`Plain`] is the field as serde and Protobuf write its type; [`Nested`] is
//! an `Option<Option<T>>` field, whose serde form keeps `Some(None)` apart from `None`.

use std::fmt;
use std::marker::PhantomData;

use bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType};
use prost::DecodeError;
use serde::de::{self, DeserializeOwned, DeserializeSeed, SeqAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize};

use crate::codec::evolve::FieldValue;
use crate::codec::proto::{nested_option, ProtoField};

/// A field of a generated message: its Rust type. Every slot has one, whatever its type, so
/// that naming a message is always well-formed and a type that cannot travel is reported
/// where the message is used, on the method ([`SlotCodec`] says how it travels).
pub trait Slot: 'static {
    /// The field's Rust type.
    type Value;
}

/// How a [`Slot`]'s field reads and writes itself. The Protobuf side is the type's
/// [`ProtoField`] field form for every slot.
pub trait SlotCodec: Slot<Value: ProtoField + 'static> {
    /// Writes the field into a struct serializer.
    fn serialize_field<S: SerializeStruct>(
        state: &mut S,
        name: &'static str,
        value: &Self::Value,
    ) -> Result<(), S::Error>;

    /// Reads the field's value (a map entry's value).
    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self::Value, D::Error>;

    /// Reads the field as the next element of an array; `None` when the array ended.
    fn next_element<'de, A: SeqAccess<'de>>(seq: &mut A) -> Result<Option<Self::Value>, A::Error>;

    /// The value of a field the peer did not send.
    #[inline]
    fn absent() -> Self::Value {
        Self::Value::proto_default()
    }

    /// Writes the Protobuf field form under `tag`.
    #[inline]
    fn encode(value: &Self::Value, tag: u32, buf: &mut impl BufMut) {
        value.encode_field(tag, buf);
    }

    /// The length of [`encode`](Self::encode)'s output.
    #[inline]
    fn encoded_len(value: &Self::Value, tag: u32) -> usize {
        value.field_len(tag)
    }

    /// Reads one occurrence of the Protobuf field into `value`.
    #[inline]
    fn merge(
        value: &mut Self::Value,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        value.merge_field(wire_type, buf, ctx)
    }
}

/// A field of type `T`, written as serde and Protobuf write `T`.
pub struct Plain<T>(PhantomData<fn() -> T>);

impl<T: 'static> Slot for Plain<T> {
    type Value = T;
}

impl<T> SlotCodec for Plain<T>
where
    T: ProtoField + Serialize + DeserializeOwned + 'static,
{
    #[inline]
    fn serialize_field<S: SerializeStruct>(
        state: &mut S,
        name: &'static str,
        value: &T,
    ) -> Result<(), S::Error> {
        state.serialize_field(name, value)
    }

    // Through `ProtoField`, so that a `Bytes` can be a view of the payload.
    #[inline]
    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
        T::deserialize_shared(deserializer)
    }

    #[inline]
    fn next_element<'de, A: SeqAccess<'de>>(seq: &mut A) -> Result<Option<T>, A::Error> {
        seq.next_element_seed(FieldValue::<T>::new())
    }
}

/// An `Option<T>` field written as [`Plain`] writes it, whose value is read with
/// [`ProtoField::deserialize_shared`]: the `ok` and `err` of a result, so that a
/// `Result<Bytes, E>` reply or item shares the payload as a `Bytes` one does. (`Plain`'s
/// `Option<T>` reads through `Option`'s `Deserialize`, which copies a `Bytes`.)
pub struct Optional<T>(PhantomData<fn() -> T>);

impl<T: 'static> Slot for Optional<T> {
    type Value = Option<T>;
}

impl<T> SlotCodec for Optional<T>
where
    T: ProtoField + Serialize + DeserializeOwned + 'static,
    Option<T>: ProtoField,
{
    #[inline]
    fn serialize_field<S: SerializeStruct>(
        state: &mut S,
        name: &'static str,
        value: &Option<T>,
    ) -> Result<(), S::Error> {
        state.serialize_field(name, value)
    }

    #[inline]
    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
        deserializer.deserialize_option(OptionalVisitor(PhantomData))
    }

    #[inline]
    fn next_element<'de, A: SeqAccess<'de>>(seq: &mut A) -> Result<Option<Option<T>>, A::Error> {
        seq.next_element_seed(OptionalSeed::<T>(PhantomData))
    }
}

/// An [`Optional`] field read as one array element.
struct OptionalSeed<T>(PhantomData<fn() -> T>);

impl<'de, T: ProtoField + Deserialize<'de>> DeserializeSeed<'de> for OptionalSeed<T> {
    type Value = Option<T>;

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<T>, D::Error> {
        deserializer.deserialize_option(OptionalVisitor(PhantomData))
    }
}

/// Reads an `Option<T>` as `Option`'s `Deserialize` does, the value through
/// [`ProtoField::deserialize_shared`].
struct OptionalVisitor<T>(PhantomData<fn() -> T>);

impl<'de, T: ProtoField + Deserialize<'de>> Visitor<'de> for OptionalVisitor<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("option")
    }

    #[inline]
    fn visit_none<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    #[inline]
    fn visit_unit<E: de::Error>(self) -> Result<Option<T>, E> {
        Ok(None)
    }

    #[inline]
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<T>, D::Error> {
        T::deserialize_shared(deserializer).map(Some)
    }
}

/// An `Option<Option<T>>` field (`Nested<Option<Option<T>>>`), whose serde form is `null` for
/// `None` and a one-element array for `Some` ([`nested_option`]), so that JSON and
/// MessagePack keep `Some(None)` apart from `None` as Protobuf does.
pub struct Nested<T>(PhantomData<fn() -> T>);

impl<T: 'static> Slot for Nested<Option<T>> {
    type Value = Option<T>;
}

impl<T> SlotCodec for Nested<Option<T>>
where
    T: Serialize + DeserializeOwned + 'static,
    Option<T>: ProtoField,
{
    #[inline]
    fn serialize_field<S: SerializeStruct>(
        state: &mut S,
        name: &'static str,
        value: &Option<T>,
    ) -> Result<(), S::Error> {
        state.serialize_field(name, &NestedRef(value))
    }

    #[inline]
    fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
        nested_option::deserialize(deserializer)
    }

    #[inline]
    fn next_element<'de, A: SeqAccess<'de>>(seq: &mut A) -> Result<Option<Option<T>>, A::Error> {
        Ok(seq.next_element::<NestedValue<T>>()?.map(|nested| nested.0))
    }
}

/// Serializes a borrowed `Option<T>` in [`nested_option`]'s form.
struct NestedRef<'a, T>(&'a Option<T>);

impl<T: Serialize> Serialize for NestedRef<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        nested_option::serialize(self.0, serializer)
    }
}

/// A [`Nested`] field read as one array element.
struct NestedValue<T>(Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for NestedValue<T> {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        nested_option::deserialize(deserializer).map(NestedValue)
    }
}
