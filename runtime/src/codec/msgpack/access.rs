//! How a visitor walks what the [`Reader`] found: an array's elements, a map's entries, an
//! enum's variant.

use serde::de::{self, DeserializeSeed, Unexpected, Visitor};

use super::error::{truncated, ReadError};
use super::reader::Reader;

/// An array's elements, read from the payload; or a byte string's bytes, each read as a
/// number.
pub(super) struct ArrayAccess<'a, 'de> {
    reader: &'a mut Reader<'de>,
    left: u32,
    /// The bytes of a byte string read as an array, if that is what this is.
    bytes: Option<&'de [u8]>,
}

impl<'a, 'de> ArrayAccess<'a, 'de> {
    pub(super) fn new(reader: &'a mut Reader<'de>, len: u32) -> Self {
        Self {
            reader,
            left: len,
            bytes: None,
        }
    }

    pub(super) fn of_bytes(reader: &'a mut Reader<'de>, bytes: &'de [u8]) -> Self {
        Self {
            reader,
            left: u32::try_from(bytes.len()).unwrap_or(u32::MAX),
            bytes: Some(bytes),
        }
    }

    /// The elements not read.
    pub(super) fn left(&self) -> u32 {
        self.left
    }
}

impl<'de> de::SeqAccess<'de> for ArrayAccess<'_, 'de> {
    type Error = ReadError;

    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, ReadError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        // One call of `seed` for both kinds, so that the element's reading is compiled once:
        // a byte is read from its own encoding as a MessagePack number.
        let mut one_byte;
        let reader = match &mut self.bytes {
            None => &mut *self.reader,
            Some(bytes) => {
                let (&byte, rest) = bytes.split_first().ok_or_else(truncated)?;
                *bytes = rest;
                one_byte = Reader::new(byte_as_number(byte), 1);
                &mut one_byte
            }
        };
        seed.deserialize(reader).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        usize::try_from(self.left).ok()
    }
}

/// Every byte's MessagePack encoding as an unsigned number: itself below 128, `0xcc` and
/// itself above.
static BYTES_AS_NUMBERS: [[u8; 2]; 256] = {
    let mut table = [[0; 2]; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = if byte < 128 {
            [byte as u8, 0]
        } else {
            [0xcc, byte as u8]
        };
        byte += 1;
    }
    table
};

fn byte_as_number(byte: u8) -> &'static [u8] {
    let encoded = &BYTES_AS_NUMBERS[usize::from(byte)];
    if byte < 128 {
        &encoded[..1]
    } else {
        encoded
    }
}

/// A map's entries.
pub(super) struct MapAccess<'a, 'de> {
    reader: &'a mut Reader<'de>,
    left: u32,
}

impl<'a, 'de> MapAccess<'a, 'de> {
    pub(super) fn new(reader: &'a mut Reader<'de>, len: u32) -> Self {
        Self { reader, left: len }
    }
}

impl MapAccess<'_, '_> {
    /// The entries not read.
    pub(super) fn left(&self) -> u32 {
        self.left
    }
}

impl<'de> de::MapAccess<'de> for MapAccess<'_, 'de> {
    type Error = ReadError;

    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ReadError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.reader).map(Some)
    }

    #[inline]
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ReadError> {
        seed.deserialize(&mut *self.reader)
    }

    fn size_hint(&self) -> Option<usize> {
        usize::try_from(self.left).ok()
    }
}

/// An enum's variant: its name (or number), then its data if it was written with any. One
/// type for both, so that an enum's visitor is compiled once.
pub(super) struct EnumAccess<'a, 'de> {
    reader: &'a mut Reader<'de>,
    /// Written as a map of one entry, the variant to its data; otherwise the variant alone,
    /// a unit variant.
    with_data: bool,
}

impl<'a, 'de> EnumAccess<'a, 'de> {
    pub(super) fn with_data(reader: &'a mut Reader<'de>) -> Self {
        Self {
            reader,
            with_data: true,
        }
    }

    pub(super) fn unit(reader: &'a mut Reader<'de>) -> Self {
        Self {
            reader,
            with_data: false,
        }
    }

    /// The error for data asked of a variant written without any.
    fn no_data(expected: &str) -> ReadError {
        de::Error::invalid_type(Unexpected::UnitVariant, &expected)
    }
}

impl<'a, 'de> de::EnumAccess<'de> for EnumAccess<'a, 'de> {
    type Error = ReadError;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), ReadError> {
        let variant = seed.deserialize(&mut *self.reader)?;
        Ok((variant, self))
    }
}

impl<'de> de::VariantAccess<'de> for EnumAccess<'_, 'de> {
    type Error = ReadError;

    fn unit_variant(self) -> Result<(), ReadError> {
        if self.with_data {
            // The data of a unit variant written as a map is nil.
            de::Deserialize::deserialize(&mut *self.reader)
        } else {
            Ok(())
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, ReadError> {
        if !self.with_data {
            return Err(Self::no_data("newtype variant"));
        }
        seed.deserialize(self.reader)
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, ReadError> {
        if !self.with_data {
            return Err(Self::no_data("tuple variant"));
        }
        de::Deserializer::deserialize_tuple(self.reader, len, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        if !self.with_data {
            return Err(Self::no_data("struct variant"));
        }
        de::Deserializer::deserialize_tuple(self.reader, fields.len(), visitor)
    }
}
