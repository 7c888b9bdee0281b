//! MessagePack read into serde types, straight from the payload: the serde side of the
//! [`Reader`].
//!
//! Why a reader of our own (rmp-serde still writes): rmp-serde reads every struct, sequence
//! and tuple through the one routine that reads any MessagePack value, so each message type
//! compiled its own copy of the number, string, binary and extension paths, and of its fields'
//! reading a second time for a byte string read as an array: about 2.5 KB a type, and a
//! typed method reads four types (its arguments, its reply and the two wrappers naming
//! them). Here a message reads its array or map marker first and calls its visitor only for
//! an array or a map; anything else is refused through one shared error path.
//!
//! What it accepts is what rmp-serde 1.3 accepted (`reader_tests.rs` reads the same inputs
//! with both), with three differences: an extension value is refused wherever a value is read
//! (no wirecall type is one; skipping it, as an unknown field, still works); an enum's map
//! counts against the nesting limit, as JSON's objects do; and a byte string read as
//! an array gives each byte as a MessagePack number, which a type taking a number among other
//! things (an enum, by its variant's index) takes, where rmp-serde offered it only as a `u8`.

use serde::de::{self, Visitor};

use super::access::{ArrayAccess, EnumAccess, MapAccess};
use super::error::{ReadError, Why};
use super::marker::{EMPTY_FIXARRAY, NIL};
use super::reader::{head_mismatch, mismatch, unread, Head, Reader};

/// How a value meets its visitor.
impl<'de> Reader<'de> {
    /// A string, borrowed from the payload. Bytes that are not UTF-8 go to a visitor that
    /// takes byte strings, as rmp-serde allowed.
    fn string<V: Visitor<'de>>(bytes: &'de [u8], visitor: V) -> Result<V::Value, ReadError> {
        match std::str::from_utf8(bytes) {
            Ok(text) => visitor.visit_borrowed_str(text),
            Err(err) => visitor
                .visit_borrowed_bytes::<ReadError>(bytes)
                .map_err(|_| Why::Utf8(err).into()),
        }
    }

    /// An array of `len` elements; the visitor must read them all.
    fn array<V: Visitor<'de>>(&mut self, len: u32, visitor: V) -> Result<V::Value, ReadError> {
        self.enter()?;
        let mut elements = ArrayAccess::new(self, len);
        let value = visitor.visit_seq(&mut elements)?;
        let left = elements.left();
        self.leave();
        all_read(value, len, left)
    }

    /// A map of `len` entries; the visitor must read them all.
    fn map<V: Visitor<'de>>(&mut self, len: u32, visitor: V) -> Result<V::Value, ReadError> {
        self.enter()?;
        let mut entries = MapAccess::new(self, len);
        let value = visitor.visit_map(&mut entries)?;
        let left = entries.left();
        self.leave();
        all_read(value, len, left)
    }

    /// A struct, sequence, tuple or map: an array or a map, or a binary value read as an
    /// array of its bytes (rmp-serde's leniency, which lets a `Vec<u8>` take a byte string).
    fn compound<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, ReadError> {
        let head = match self.fixarray() {
            Some(len) => Head::Array(len),
            None => self.head()?,
        };
        match head {
            Head::Array(len) => self.array(len, visitor),
            Head::Map(len) => self.map(len, visitor),
            // Bytes left unread are not an error here, as they were not in rmp-serde.
            Head::Bin(bytes) => visitor.visit_seq(&mut ArrayAccess::of_bytes(self, bytes)),
            other => Err(head_mismatch(other, &visitor)),
        }
    }

    /// Text: a string, a binary value (for a visitor that takes bytes), or a number (a field
    /// index).
    fn text<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, ReadError> {
        let head = match self.fixstr()? {
            Some(bytes) => Head::Str(bytes),
            None => self.head()?,
        };
        match head {
            Head::Str(bytes) => Self::string(bytes, visitor),
            Head::Bin(bytes) => visitor.visit_borrowed_bytes(bytes),
            Head::Number(marker) => self.number(marker, visitor),
            other => Err(head_mismatch(other, &visitor)),
        }
    }
}

/// `value`, read from an array or map of `len` items, if the visitor left none of them unread
/// (rmp-serde's check, kept).
#[inline]
fn all_read<T>(value: T, len: u32, left: u32) -> Result<T, ReadError> {
    match left {
        0 => Ok(value),
        left => Err(unread(len, left)),
    }
}

/// `Deserializer` methods that take only a visitor, each reading as the first word says:
/// `number` (the marker, then [`Reader::number`]), `text` or `any`.
macro_rules! read_as {
    (number: $($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
            let marker = self.byte()?;
            self.number(marker, visitor)
        }
    )*};
    (text: $($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
            self.text(visitor)
        }
    )*};
    (any: $($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
            self.deserialize_any(visitor)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for &mut Reader<'de> {
    type Error = ReadError;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        match self.head()? {
            Head::Number(marker) => self.number(marker, visitor),
            Head::Str(bytes) => Reader::string(bytes, visitor),
            Head::Bin(bytes) => visitor.visit_borrowed_bytes(bytes),
            Head::Array(len) => self.array(len, visitor),
            Head::Map(len) => self.map(len, visitor),
            Head::Extension(_) => Err(Why::Extension.into()),
            Head::Reserved => Err(Why::Reserved.into()),
        }
    }

    // nil, booleans and numbers: the marker says which; `number` reads the rest.
    read_as! { number: deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
    deserialize_i64 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
    deserialize_f32 deserialize_f64 deserialize_unit }

    read_as! { text: deserialize_char deserialize_str deserialize_string deserialize_identifier }

    // A byte string's visitor also takes a string or an array, as from `deserialize_any`.
    read_as! { any: deserialize_bytes deserialize_byte_buf }

    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        visitor.visit_i128(self.int128()?)
    }

    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        // A negative number reads as its two's complement, as it did in rmp-serde.
        visitor.visit_u128(self.int128()? as u128)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        if self.peek()? == NIL {
            self.take(1)?;
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        // rmp-serde writes a unit struct as an empty array, and reads nil as one too.
        match self.byte()? {
            NIL | EMPTY_FIXARRAY => visitor.visit_unit(),
            other => Err(mismatch(other, &visitor)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        self.compound(visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        self.compound(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        self.compound(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        self.compound(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        self.compound(visitor)
    }

    /// rmp-serde writes a unit variant as its name alone, and a variant with data as a map
    /// of one entry, the name to the data.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        match self.map_start()? {
            Some(len) => {
                if len != 1 {
                    return Err(Why::VariantLength(len).into());
                }
                self.enter()?;
                let value = visitor.visit_enum(EnumAccess::with_data(self))?;
                self.leave();
                Ok(value)
            }
            None => visitor.visit_enum(EnumAccess::unit(self)),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ReadError> {
        self.skip()?;
        visitor.visit_unit()
    }
}
