//! How a message struct reads itself from serde formats (JSON and MessagePack) so that a
//! message may gain or lose fields at its end and old and new peers still talk.
//!
//! The write side is serde's derive: a JSON object keyed by field name, a MessagePack array in
//! field order (compact, positional like Protobuf's tags). The read side, here, accepts:
//!
//! - an array with fewer elements than the struct has fields (the missing trailing fields get
//!   their defaults) or more (the extra trailing elements, fields a newer peer added, are
//!   skipped); serde's derive, and the MessagePack reader's length check, refuse both;
//! - a map keyed by field name (JSON, and MessagePack from other writers) or by field index,
//!   where unknown keys are skipped and missing fields get their defaults.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Unexpected, Visitor,
};
use serde::Deserialize;

use super::proto::ProtoField;

/// A message struct's fields, as `#[wirecall::message]` and `#[wirecall::service]` generate.
pub trait SerdeFields: Default {
    /// The struct's name.
    const NAME: &'static str;
    /// The field names, in declaration (and array) order.
    const FIELDS: &'static [&'static str];
    /// Reads the field at `index` from `deserializer` into `self`.
    fn deserialize_field<'de, D: Deserializer<'de>>(
        &mut self,
        index: usize,
        deserializer: D,
    ) -> Result<(), D::Error>;

    /// Reads the fields from an array, in order, stopping early if the array is shorter and
    /// skipping what is left if it is longer. Generated as straight-line code: a loop over
    /// [`deserialize_field`](Self::deserialize_field) made MessagePack decoding up to 80%
    /// slower.
    fn deserialize_seq<'de, A: SeqAccess<'de>>(seq: &mut A) -> Result<Self, A::Error>;
}

/// Skips the elements of an array that a newer peer added.
pub fn skip_rest<'de, A: SeqAccess<'de>>(seq: &mut A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// An `Option<Option<T>>` field read with [`nested_option`](super::proto::nested_option), as
/// one array element.
pub struct NestedOption<T>(pub Option<Option<T>>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for NestedOption<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        super::proto::nested_option::deserialize(deserializer).map(NestedOption)
    }
}

/// One field's value as an array element, read with
/// [`ProtoField::deserialize_shared`] (so that a `Bytes` field can share the payload).
pub struct FieldValue<T>(PhantomData<fn() -> T>);

impl<T> FieldValue<T> {
    /// The seed for a field of type `T`.
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T> Default for FieldValue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'de, T: ProtoField + Deserialize<'de>> DeserializeSeed<'de> for FieldValue<T> {
    type Value = T;

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        T::deserialize_shared(deserializer)
    }
}

/// `Deserialize::deserialize` for a [`SerdeFields`] struct.
pub fn deserialize_message<'de, T: SerdeFields, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    deserializer.deserialize_struct(T::NAME, T::FIELDS, MessageVisitor(PhantomData))
}

struct MessageVisitor<T>(PhantomData<T>);

impl<'de, T: SerdeFields> Visitor<'de> for MessageVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        de::Expected::fmt(&ExpectedMessage(T::NAME), f)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        T::deserialize_seq(&mut seq)
    }

    // What is not a message. serde's defaults would refuse these too, but each through its
    // own copy of the error path for every message type (a self-describing format such as
    // MessagePack instantiates them all, about 1.6 KB a type); these share one per format.
    // The narrower integers and floats and the borrowed strings reach these through serde's
    // defaults.
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        Err(not_a_message(Unexpected::Bool(v), T::NAME))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        Err(not_a_message(Unexpected::Signed(v), T::NAME))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        Err(not_a_message(Unexpected::Unsigned(v), T::NAME))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        Err(not_a_message(Unexpected::Float(v), T::NAME))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        Err(not_a_message(Unexpected::Str(v), T::NAME))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<T, E> {
        Err(not_a_message(Unexpected::Bytes(v), T::NAME))
    }

    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Err(not_a_message(Unexpected::Unit, T::NAME))
    }

    fn visit_none<E: de::Error>(self) -> Result<T, E> {
        Err(not_a_message(Unexpected::Option, T::NAME))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, _: D) -> Result<T, D::Error> {
        Err(not_a_message(Unexpected::NewtypeStruct, T::NAME))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        let mut value = T::default();
        let keys = KeySeed {
            count: T::FIELDS.len(),
            index_of: field_index::<T>,
        };
        read_map(map, keys, &mut value)?;
        Ok(value)
    }
}

/// Reads a map's entries into `target`, whose keys `keys` knows: generic over the format's
/// map only, so that the loop (and the format's key and separator parsing inlined into it) is
/// compiled once per format, not once per message type and format. Finding a key's field
/// and reading one field's value are the message's own code, reached through `keys` and
/// `target`.
#[inline(never)]
fn read_map<'de, A: MapAccess<'de>>(
    mut map: A,
    keys: KeySeed,
    target: &mut dyn MapTarget<'de, A>,
) -> Result<(), A::Error> {
    while let Some(key) = map.next_key_seed(keys)? {
        match key {
            Some(index) => target.read_value(index, &mut map)?,
            None => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(())
}

/// A message being read from a map, as [`read_map`] sees it.
trait MapTarget<'de, A: MapAccess<'de>> {
    /// Reads the value of the entry whose key named field `index` into that field.
    fn read_value(&mut self, index: usize, map: &mut A) -> Result<(), A::Error>;
}

impl<'de, A: MapAccess<'de>, T: SerdeFields> MapTarget<'de, A> for T {
    fn read_value(&mut self, index: usize, map: &mut A) -> Result<(), A::Error> {
        map.next_value_seed(FieldSeed {
            target: self,
            index,
        })
    }
}

/// The error for a value that is not the message `name`: generic over the format's error
/// only, so one copy serves every message type.
#[inline(never)]
fn not_a_message<E: de::Error>(unexpected: Unexpected<'_>, name: &'static str) -> E {
    E::invalid_type(unexpected, &ExpectedMessage(name))
}

/// What a message visitor expects, for [`not_a_message`].
struct ExpectedMessage(&'static str);

impl de::Expected for ExpectedMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a `{}` message (a map of fields or an array)", self.0)
    }
}

/// Reads one map value into its field; an index past the struct's fields is skipped.
struct FieldSeed<'a, T> {
    target: &'a mut T,
    index: usize,
}

impl<'de, T: SerdeFields> DeserializeSeed<'de> for FieldSeed<'_, T> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        if self.index < T::FIELDS.len() {
            self.target.deserialize_field(self.index, deserializer)
        } else {
            IgnoredAny::deserialize(deserializer).map(|_| ())
        }
    }
}

/// The index of the field named `name` in `T`, compiled per message type: with the names
/// constant, the compiler matches them inline. (Matching against the names as a slice known
/// only at run time, in the shared loop, cost JSON about 250 instructions a call.)
fn field_index<T: SerdeFields>(name: &str) -> Option<usize> {
    T::FIELDS.iter().position(|field| *field == name)
}

/// A map key: a field name or index; `None` for a field this struct does not have.
#[derive(Clone, Copy)]
struct KeySeed {
    /// How many fields the struct has.
    count: usize,
    /// The struct's [`field_index`].
    index_of: fn(&str) -> Option<usize>,
}

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<usize>, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name or index")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Option<usize>, E> {
        Ok((self.index_of)(name))
    }

    // Field names are UTF-8: bytes that are not cannot name one.
    fn visit_bytes<E: de::Error>(self, name: &[u8]) -> Result<Option<usize>, E> {
        Ok(std::str::from_utf8(name).ok().and_then(self.index_of))
    }

    fn visit_u64<E: de::Error>(self, index: u64) -> Result<Option<usize>, E> {
        Ok(usize::try_from(index)
            .ok()
            .filter(|index| *index < self.count))
    }
}

/// Generates `Deserialize` for a [`SerdeFields`] struct.
#[doc(hidden)]
#[macro_export]
macro_rules! serde_message {
    ($ty:ty) => {
        impl<'de> $crate::__serde::Deserialize<'de> for $ty {
            fn deserialize<D: $crate::__serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::core::result::Result<Self, D::Error> {
                $crate::codec::evolve::deserialize_message(deserializer)
            }
        }
    };
}
