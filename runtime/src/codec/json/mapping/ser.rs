//! [`Ser`]: serde_json's serializer, with non-finite floats written as their names.

use std::fmt;

use serde::ser::{self, Serialize, Serializer};

use super::names::non_finite_name;

/// A serializer (or one of its compound states) that writes non-finite floats as strings.
pub(crate) struct Ser<S>(pub(crate) S);

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
