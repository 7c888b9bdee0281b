//! [`Fields`]: one generic message for every method's arguments, reply and stream items, so
//! that `#[wirecall::service]` names a message's fields and their [`Slot`]s instead of
//! writing its serde and Protobuf code.
//!
//! A message `Fields<N, (S1, .., Sn)>` holds the values of its slots as a tuple and travels as
//! a struct named by `N`: in JSON an object keyed by field name, in MessagePack an array in
//! field order (read back tolerantly, [`evolve`](crate::codec::evolve)), in Protobuf a message
//! whose field `i` has tag `i`. The bytes are those of a struct with the same fields.

use std::fmt;
use std::marker::PhantomData;

use bytes::{Buf, BufMut};
use prost::encoding::{skip_field, DecodeContext, WireType};
use prost::DecodeError;
use serde::de::{IgnoredAny, SeqAccess};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::field_codec::{Slot, SlotCodec};
use crate::codec::evolve::{deserialize_message, skip_rest, SerdeFields};

/// The names of a message's fields, in order, and the name its serde form gives the message.
pub trait FieldNames: 'static {
    /// The message's name (serde's struct name; JSON and MessagePack do not write it).
    const NAME: &'static str;
    /// The field names, one per slot.
    const FIELDS: &'static [&'static str];
}

/// A tuple of [`Slot`]s: a message's fields.
pub trait Slots: 'static {
    /// The tuple of the slots' values.
    type Values;
    /// How many fields.
    const LEN: usize;
}

/// A message whose fields are named by `N` and typed by the slots `S`; see the module docs.
pub struct Fields<N, S: Slots> {
    /// The field values, in order.
    pub values: S::Values,
    names: PhantomData<fn() -> N>,
}

impl<N: FieldNames, S: Slots> Fields<N, S> {
    /// The message holding `values`.
    #[inline]
    pub fn new(values: S::Values) -> Self {
        const {
            assert!(
                N::FIELDS.len() == S::LEN,
                "a message's field names and slots differ in number"
            );
        }
        Self {
            values,
            names: PhantomData,
        }
    }
}

impl<N: FieldNames, S: Slots> fmt::Debug for Fields<N, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(N::NAME).finish_non_exhaustive()
    }
}

/// Implements `Slots`, serde and prost for `Fields` over one tuple of slots: `$slot` names
/// its slot types, `$index` the tuple positions, `$tag` the Protobuf tags (positions + 1).
macro_rules! fields_of_tuple {
    ($($slot:ident $index:tt $tag:literal),*) => {
        impl<$($slot: Slot),*> Slots for ($($slot,)*) {
            type Values = ($($slot::Value,)*);
            const LEN: usize = <[u8]>::len(&[$($tag),*]);
        }

        impl<N: FieldNames, $($slot: SlotCodec),*> Default for Fields<N, ($($slot,)*)> {
            #[inline]
            fn default() -> Self {
                Self::new(($($slot::absent(),)*))
            }
        }

        impl<N: FieldNames, $($slot: SlotCodec),*> Serialize for Fields<N, ($($slot,)*)> {
            #[inline]
            fn serialize<Ser: Serializer>(&self, serializer: Ser) -> Result<Ser::Ok, Ser::Error> {
                #[allow(unused_mut)]
                let mut state = serializer.serialize_struct(N::NAME, N::FIELDS.len())?;
                $($slot::serialize_field(&mut state, N::FIELDS[$index], &self.values.$index)?;)*
                state.end()
            }
        }

        impl<N: FieldNames, $($slot: SlotCodec),*> SerdeFields for Fields<N, ($($slot,)*)> {
            const NAME: &'static str = N::NAME;
            const FIELDS: &'static [&'static str] = N::FIELDS;

            #[inline]
            fn deserialize_field<'de, De: Deserializer<'de>>(
                &mut self,
                index: usize,
                deserializer: De,
            ) -> Result<(), De::Error> {
                match index {
                    $($index => {
                        self.values.$index = $slot::deserialize(deserializer)?;
                        Ok(())
                    })*
                    _ => IgnoredAny::deserialize(deserializer).map(|_| ()),
                }
            }

            // Straight-line code, field after field (see `SerdeFields::deserialize_seq`).
            #[inline]
            #[allow(unused_mut, unused_variables)]
            fn deserialize_seq<'de, Seq: SeqAccess<'de>>(seq: &mut Seq) -> Result<Self, Seq::Error> {
                let mut ended = false;
                let values = ($(
                    match if ended { None } else { $slot::next_element(seq)? } {
                        Some(value) => value,
                        None => {
                            ended = true;
                            $slot::absent()
                        }
                    },
                )*);
                if !ended {
                    skip_rest(seq)?;
                }
                Ok(Self::new(values))
            }
        }

        impl<'de, N: FieldNames, $($slot: SlotCodec),*> Deserialize<'de> for Fields<N, ($($slot,)*)> {
            #[inline]
            fn deserialize<De: Deserializer<'de>>(deserializer: De) -> Result<Self, De::Error> {
                deserialize_message(deserializer)
            }
        }

        impl<N: FieldNames, $($slot: SlotCodec),*> prost::Message for Fields<N, ($($slot,)*)> {
            #[inline]
            #[allow(unused_variables)]
            fn encode_raw(&self, buf: &mut impl BufMut) {
                $($slot::encode(&self.values.$index, $tag, buf);)*
            }

            #[inline]
            fn merge_field(
                &mut self,
                tag: u32,
                wire_type: WireType,
                buf: &mut impl Buf,
                ctx: DecodeContext,
            ) -> Result<(), DecodeError> {
                match tag {
                    $($tag => $slot::merge(&mut self.values.$index, wire_type, buf, ctx),)*
                    _ => skip_field(wire_type, tag, buf, ctx),
                }
            }

            #[inline]
            fn encoded_len(&self) -> usize {
                0 $(+ $slot::encoded_len(&self.values.$index, $tag))*
            }

            fn clear(&mut self) {
                *self = Self::default();
            }
        }
    };
}

// Up to 16 fields: `#[wirecall::service]` refuses a method with more arguments.
fields_of_tuple!();
fields_of_tuple!(S0 0 1);
fields_of_tuple!(S0 0 1, S1 1 2);
fields_of_tuple!(S0 0 1, S1 1 2, S2 2 3);
fields_of_tuple!(S0 0 1, S1 1 2, S2 2 3, S3 3 4);
fields_of_tuple!(S0 0 1, S1 1 2, S2 2 3, S3 3 4, S4 4 5);
fields_of_tuple!(S0 0 1, S1 1 2, S2 2 3, S3 3 4, S4 4 5, S5 5 6);
fields_of_tuple!(S0 0 1, S1 1 2, S2 2 3, S3 3 4, S4 4 5, S5 5 6, S6 6 7);
fields_of_tuple!(S0 0 1, S1 1 2, S2 2 3, S3 3 4, S4 4 5, S5 5 6, S6 6 7, S7 7 8);
fields_of_tuple!(S0 0 1, S1 1 2, S2 2 3, S3 3 4, S4 4 5, S5 5 6, S6 6 7, S7 7 8, S8 8 9);
fields_of_tuple!(
    S0 0 1, S1 1 2, S2 2 3, S3 3 4, S4 4 5, S5 5 6, S6 6 7, S7 7 8, S8 8 9, S9 9 10
);
fields_of_tuple!(
    S0 0 1, S1 1 2, S2 2 3, S3 3 4, S4 4 5, S5 5 6, S6 6 7, S7 7 8, S8 8 9, S9 9 10,
    S10 10 11
);
fields_of_tuple!(
    S0 0 1, S1 1 2, S2 2 3, S3 3 4, S4 4 5, S5 5 6, S6 6 7, S7 7 8, S8 8 9, S9 9 10,
    S10 10 11, S11 11 12
);
fields_of_tuple!(
    S0 0 1, S1 1 2, S2 2 3, S3 3 4, S4 4 5, S5 5 6, S6 6 7, S7 7 8, S8 8 9, S9 9 10,
    S10 10 11, S11 11 12, S12 12 13
);
fields_of_tuple!(
    S0 0 1, S1 1 2, S2 2 3, S3 3 4, S4 4 5, S5 5 6, S6 6 7, S7 7 8, S8 8 9, S9 9 10,
    S10 10 11, S11 11 12, S12 12 13, S13 13 14
);
fields_of_tuple!(
    S0 0 1, S1 1 2, S2 2 3, S3 3 4, S4 4 5, S5 5 6, S6 6 7, S7 7 8, S8 8 9, S9 9 10,
    S10 10 11, S11 11 12, S12 12 13, S13 13 14, S14 14 15
);
fields_of_tuple!(
    S0 0 1, S1 1 2, S2 2 3, S3 3 4, S4 4 5, S5 5 6, S6 6 7, S7 7 8, S8 8 9, S9 9 10,
    S10 10 11, S11 11 12, S12 12 13, S13 13 14, S14 14 15, S15 15 16
);
