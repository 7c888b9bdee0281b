//! NaN and the infinities in JSON, as the proto3 JSON mapping writes them: the strings `"NaN"`,
//! `"Infinity"` and `"-Infinity"`.
//!
//! JSON numbers cannot say NaN or infinity, and serde_json writes such a float as `null`, which
//! does not read back as a float (or reads back as `None` for an `Option<f64>`). A float is
//! serialised by the impl of whatever type contains it (`Vec<f64>`, a map value, a field of a
//! message), so the fix cannot live in those impls: it lives in the serializer and the
//! deserializer instead. [`Ser`] and [`De`] wrap serde_json's and pass every call through
//! unchanged, except that a non-finite float is written as its string, and a string where a
//! float is expected is read as one of those three names.
//!
//! Both adapters wrap every value, element, key and variant they hand on, so the rule holds at
//! any depth. Everything is generic and inlines away: JSON encoding and decoding of finite
//! values costs what it did without the adapter.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, Visitor};
use serde::ser::{self, Serialize, Serializer};

const NAN: &str = "NaN";
const INFINITY: &str = "Infinity";
const NEG_INFINITY: &str = "-Infinity";

fn non_finite_name(value: f64) -> &'static str {
    if value.is_nan() {
        NAN
    } else if value > 0.0 {
        INFINITY
    } else {
        NEG_INFINITY
    }
}

fn non_finite_value(name: &str) -> Option<f64> {
    match name {
        NAN => Some(f64::NAN),
        INFINITY => Some(f64::INFINITY),
        NEG_INFINITY => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Serialisation
// ---------------------------------------------------------------------------------------------

/// A serializer (or one of its compound states) that writes non-finite floats as strings.
pub(super) struct Ser<S>(pub(super) S);

/// A value whose serialisation goes through [`Ser`].
struct Wrapped<'a, T: ?Sized>(&'a T);

impl<T: ?Sized + Serialize> Serialize for Wrapped<'_, T> {
    #[inline]
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(Ser(serializer))
    }
}

/// Passes a serializer method through unchanged.
macro_rules! forward_scalars {
    ($($method:ident($ty:ty);)*) => {
        $(
            #[inline]
            fn $method(self, v: $ty) -> Result<S::Ok, S::Error> {
                self.0.$method(v)
            }
        )*
    };
}

impl<S: Serializer> Serializer for Ser<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Ser<S::SerializeSeq>;
    type SerializeTuple = Ser<S::SerializeTuple>;
    type SerializeTupleStruct = Ser<S::SerializeTupleStruct>;
    type SerializeTupleVariant = Ser<S::SerializeTupleVariant>;
    type SerializeMap = Ser<S::SerializeMap>;
    type SerializeStruct = Ser<S::SerializeStruct>;
    type SerializeStructVariant = Ser<S::SerializeStructVariant>;

    forward_scalars! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_i128(i128);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_u128(u128);
        serialize_char(char);
        serialize_str(&str);
        serialize_bytes(&[u8]);
        serialize_unit_struct(&'static str);
    }

    #[inline]
    fn serialize_f32(self, v: f32) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            self.0.serialize_f32(v)
        } else {
            self.0.serialize_str(non_finite_name(f64::from(v)))
        }
    }

    #[inline]
    fn serialize_f64(self, v: f64) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            self.0.serialize_f64(v)
        } else {
            self.0.serialize_str(non_finite_name(v))
        }
    }

    #[inline]
    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_none()
    }

    #[inline]
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<S::Ok, S::Error> {
        self.0.serialize_some(&Wrapped(value))
    }

    #[inline]
    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit()
    }

    #[inline]
    fn serialize_unit_variant(
        self,
        name: &'static str,
        variant_index: u32,
        variant: &'static str,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit_variant(name, variant_index, variant)
    }

    #[inline]
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_newtype_struct(name, &Wrapped(value))
    }

    #[inline]
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        variant_index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0
            .serialize_newtype_variant(name, variant_index, variant, &Wrapped(value))
    }

    #[inline]
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        self.0.serialize_seq(len).map(Ser)
    }

    #[inline]
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        self.0.serialize_tuple(len).map(Ser)
    }

    #[inline]
    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        self.0.serialize_tuple_struct(name, len).map(Ser)
    }

    #[inline]
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        variant_index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        self.0
            .serialize_tuple_variant(name, variant_index, variant, len)
            .map(Ser)
    }

    #[inline]
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        self.0.serialize_map(len).map(Ser)
    }

    #[inline]
    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        self.0.serialize_struct(name, len).map(Ser)
    }

    #[inline]
    fn serialize_struct_variant(
        self,
        name: &'static str,
        variant_index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        self.0
            .serialize_struct_variant(name, variant_index, variant, len)
            .map(Ser)
    }

    #[inline]
    fn collect_str<T: ?Sized + fmt::Display>(self, value: &T) -> Result<S::Ok, S::Error> {
        self.0.collect_str(value)
    }

    #[inline]
    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// Implements one of serde's compound-serializer traits for [`Ser`], wrapping each element.
macro_rules! compound {
    ($trait:ident, $element:ident $(, $key:ident: $key_ty:ty)?) => {
        impl<S: ser::$trait> ser::$trait for Ser<S> {
            type Ok = S::Ok;
            type Error = S::Error;

            #[inline]
            fn $element<T: ?Sized + Serialize>(
                &mut self,
                $($key: $key_ty,)?
                value: &T,
            ) -> Result<(), S::Error> {
                self.0.$element($($key,)? &Wrapped(value))
            }

            #[inline]
            fn end(self) -> Result<S::Ok, S::Error> {
                self.0.end()
            }
        }
    };
}

compound!(SerializeSeq, serialize_element);
compound!(SerializeTuple, serialize_element);
compound!(SerializeTupleStruct, serialize_field);
compound!(SerializeTupleVariant, serialize_field);
compound!(SerializeStructVariant, serialize_field, key: &'static str);

impl<S: ser::SerializeStruct> ser::SerializeStruct for Ser<S> {
    type Ok = S::Ok;
    type Error = S::Error;

    #[inline]
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), S::Error> {
        self.0.serialize_field(key, &Wrapped(value))
    }

    #[inline]
    fn skip_field(&mut self, key: &'static str) -> Result<(), S::Error> {
        self.0.skip_field(key)
    }

    #[inline]
    fn end(self) -> Result<S::Ok, S::Error> {
        self.0.end()
    }
}

impl<S: ser::SerializeMap> ser::SerializeMap for Ser<S> {
    type Ok = S::Ok;
    type Error = S::Error;

    #[inline]
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Result<(), S::Error> {
        self.0.serialize_key(&Wrapped(key))
    }

    #[inline]
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), S::Error> {
        self.0.serialize_value(&Wrapped(value))
    }

    #[inline]
    fn end(self) -> Result<S::Ok, S::Error> {
        self.0.end()
    }
}

// ---------------------------------------------------------------------------------------------
// Deserialisation
// ---------------------------------------------------------------------------------------------

/// A deserializer (or one of its access states) that reads the three names as floats where a
/// float is expected.
pub(super) struct De<D>(pub(super) D);

/// A visitor whose nested deserializers and accesses go through [`De`].
struct Vis<V>(V);

/// A seed whose deserializer goes through [`De`].
struct Seed<T>(T);

/// A visitor for `f32`/`f64` that also takes the three names.
struct FloatVis<V>(V);

impl<'de, T: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<T> {
    type Value = T::Value;

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T::Value, D::Error> {
        self.0.deserialize(De(deserializer))
    }
}

/// Passes `deserialize_*` methods through, wrapping the visitor.
macro_rules! forward_deserialize {
    ($($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(
            #[inline]
            fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
                self.0.$method($($arg,)* Vis(visitor))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for De<D> {
    type Error = D::Error;

    forward_deserialize! {
        deserialize_any();
        deserialize_bool();
        deserialize_i8();
        deserialize_i16();
        deserialize_i32();
        deserialize_i64();
        deserialize_i128();
        deserialize_u8();
        deserialize_u16();
        deserialize_u32();
        deserialize_u64();
        deserialize_u128();
        deserialize_char();
        deserialize_str();
        deserialize_string();
        deserialize_bytes();
        deserialize_byte_buf();
        deserialize_option();
        deserialize_unit();
        deserialize_unit_struct(name: &'static str);
        deserialize_newtype_struct(name: &'static str);
        deserialize_seq();
        deserialize_tuple(len: usize);
        deserialize_tuple_struct(name: &'static str, len: usize);
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
        deserialize_enum(name: &'static str, variants: &'static [&'static str]);
        deserialize_identifier();
        deserialize_ignored_any();
    }

    // A float may come as a number or as one of the three names: serde_json's own
    // `deserialize_f64` refuses strings, so ask for any value and sort it out in `FloatVis`.
    #[inline]
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(FloatVis(visitor))
    }

    #[inline]
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(FloatVis(visitor))
    }

    #[inline]
    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

impl<'de, V: Visitor<'de>> Visitor<'de> for FloatVis<V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(formatter)?;
        formatter.write_str(r#" (or "NaN", "Infinity", "-Infinity")"#)
    }

    #[inline]
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<V::Value, E> {
        self.0.visit_f64(v)
    }

    #[inline]
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<V::Value, E> {
        self.0.visit_i64(v)
    }

    #[inline]
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<V::Value, E> {
        self.0.visit_u64(v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<V::Value, E> {
        match non_finite_value(v) {
            Some(value) => self.0.visit_f64(value),
            None => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
        }
    }
}

/// Passes `visit_*` methods that carry a plain value straight to the wrapped visitor.
macro_rules! forward_visit {
    ($($method:ident($ty:ty);)*) => {
        $(
            #[inline]
            fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
                self.0.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Vis<V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(formatter)
    }

    forward_visit! {
        visit_bool(bool);
        visit_i8(i8);
        visit_i16(i16);
        visit_i32(i32);
        visit_i64(i64);
        visit_i128(i128);
        visit_u8(u8);
        visit_u16(u16);
        visit_u32(u32);
        visit_u64(u64);
        visit_u128(u128);
        visit_f32(f32);
        visit_f64(f64);
        visit_char(char);
        visit_str(&str);
        visit_borrowed_str(&'de str);
        visit_string(String);
        visit_bytes(&[u8]);
        visit_borrowed_bytes(&'de [u8]);
        visit_byte_buf(Vec<u8>);
    }

    #[inline]
    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }

    #[inline]
    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }

    #[inline]
    fn visit_some<D2: Deserializer<'de>>(self, deserializer: D2) -> Result<V::Value, D2::Error> {
        self.0.visit_some(De(deserializer))
    }

    #[inline]
    fn visit_newtype_struct<D2: Deserializer<'de>>(
        self,
        deserializer: D2,
    ) -> Result<V::Value, D2::Error> {
        self.0.visit_newtype_struct(De(deserializer))
    }

    #[inline]
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(De(seq))
    }

    #[inline]
    fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(De(map))
    }

    #[inline]
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.0.visit_enum(De(data))
    }
}

impl<'de, A: de::SeqAccess<'de>> de::SeqAccess<'de> for De<A> {
    type Error = A::Error;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(Seed(seed))
    }

    #[inline]
    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: de::MapAccess<'de>> de::MapAccess<'de> for De<A> {
    type Error = A::Error;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(Seed(seed))
    }

    #[inline]
    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Seed(seed))
    }

    #[inline]
    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: de::EnumAccess<'de>> de::EnumAccess<'de> for De<A> {
    type Error = A::Error;
    type Variant = De<A::Variant>;

    #[inline]
    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        let (value, variant) = self.0.variant_seed(Seed(seed))?;
        Ok((value, De(variant)))
    }
}

impl<'de, A: de::VariantAccess<'de>> de::VariantAccess<'de> for De<A> {
    type Error = A::Error;

    #[inline]
    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    #[inline]
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Seed(seed))
    }

    #[inline]
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Vis(visitor))
    }

    #[inline]
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Vis(visitor))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    use super::{De, Ser};

    fn to_json<T: Serialize>(value: &T) -> String {
        let mut out = Vec::new();
        value
            .serialize(Ser(&mut serde_json::Serializer::new(&mut out)))
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    fn from_json<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let value = T::deserialize(De(&mut de))?;
        de.end()?;
        Ok(value)
    }

    #[derive(Debug, Serialize, Deserialize)]
    enum Shape {
        Circle(f64),
        Rect { w: f32, h: f32 },
        Pair(f64, f64),
    }

    #[test]
    fn non_finite_floats_are_strings_at_any_depth() {
        assert_eq!(to_json(&f64::NAN), r#""NaN""#);
        assert_eq!(to_json(&f32::INFINITY), r#""Infinity""#);
        assert_eq!(to_json(&f64::NEG_INFINITY), r#""-Infinity""#);
        assert_eq!(to_json(&Some(f64::NAN)), r#""NaN""#);
        assert_eq!(to_json(&vec![1.5, f64::INFINITY]), r#"[1.5,"Infinity"]"#);
        let map = BTreeMap::from([("x".to_owned(), f32::NEG_INFINITY)]);
        assert_eq!(to_json(&map), r#"{"x":"-Infinity"}"#);
        assert_eq!(to_json(&Shape::Circle(f64::NAN)), r#"{"Circle":"NaN"}"#);
        assert_eq!(
            to_json(&Shape::Rect {
                w: f32::INFINITY,
                h: 2.0
            }),
            r#"{"Rect":{"w":"Infinity","h":2.0}}"#
        );
        assert_eq!(
            to_json(&Shape::Pair(f64::NEG_INFINITY, 0.5)),
            r#"{"Pair":["-Infinity",0.5]}"#
        );
        // Finite values and strings are untouched.
        assert_eq!(to_json(&(-0.0f64, "NaN")), r#"[-0.0,"NaN"]"#);
    }

    #[test]
    fn the_names_read_back_where_a_float_is_expected() {
        assert!(from_json::<f64>(r#""NaN""#).unwrap().is_nan());
        assert_eq!(from_json::<f32>(r#""Infinity""#).unwrap(), f32::INFINITY);
        assert_eq!(
            from_json::<Vec<f64>>(r#"[1, -2, 0.25, "-Infinity"]"#).unwrap(),
            [1.0, -2.0, 0.25, f64::NEG_INFINITY]
        );
        assert!(from_json::<Option<f64>>(r#""NaN""#)
            .unwrap()
            .unwrap()
            .is_nan());
        assert_eq!(from_json::<Option<f64>>("null").unwrap(), None);
        match from_json::<Shape>(r#"{"Rect":{"w":"Infinity","h":"-Infinity"}}"#).unwrap() {
            Shape::Rect { w, h } => assert_eq!((w, h), (f32::INFINITY, f32::NEG_INFINITY)),
            other => panic!("decoded {other:?}"),
        }
        let map: BTreeMap<String, f64> = from_json(r#"{"a":"NaN"}"#).unwrap();
        assert!(map["a"].is_nan());
        // A string field named like a float keeps its text.
        assert_eq!(from_json::<String>(r#""NaN""#).unwrap(), "NaN");
        // Finite values keep every bit.
        assert_eq!(
            from_json::<f64>("-0.0").unwrap().to_bits(),
            (-0.0f64).to_bits()
        );
        assert_eq!(from_json::<f64>("0.1").unwrap(), 0.1);
    }

    #[test]
    fn other_strings_and_null_are_not_floats() {
        for text in [r#""nan""#, r#""inf""#, r#""1.5""#, "null", "true", "[]"] {
            let err = from_json::<f64>(text).unwrap_err();
            assert!(err.is_data(), "{text}: {err}");
        }
        let err = from_json::<f64>(r#""infinity""#).unwrap_err().to_string();
        assert!(err.contains(r#""NaN", "Infinity", "-Infinity""#), "{err}");
    }
}
