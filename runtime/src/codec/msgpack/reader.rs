//! The bytes of MessagePack values, read front to back from one payload: markers, lengths,
//! numbers, and values skipped whole. `deserializer.rs` hands what it reads to serde.

use serde::de::{self, Expected, Unexpected, Visitor};

use super::error::{truncated, ReadError, Why};
use super::marker::*;

/// Reads values from a MessagePack payload, front to back.
pub(super) struct Reader<'de> {
    input: &'de [u8],
    /// How many more arrays, maps and enum variants may be entered.
    depth_left: usize,
    /// The nesting limit, for the error message.
    max_depth: usize,
}

/// A value's kind, read from its marker (and its length, if it has one) by code shared by
/// every type; what a type's own code then does with it is a short `match`.
pub(super) enum Head<'de> {
    /// nil, a boolean or a number: its marker, for [`Reader::number`] to read the rest.
    Number(u8),
    /// A string's bytes (UTF-8 not yet checked).
    Str(&'de [u8]),
    /// A binary value's bytes.
    Bin(&'de [u8]),
    /// An array of this many elements, to be read next.
    Array(u32),
    /// A map of this many entries, to be read next.
    Map(u32),
    /// An extension value (its marker), which no wirecall type reads.
    Extension(u8),
    /// The reserved marker byte.
    Reserved,
}

impl<'de> Reader<'de> {
    /// Reads `input`, entering at most `max_depth` nested arrays, maps and enum variants.
    pub(super) fn new(input: &'de [u8], max_depth: usize) -> Self {
        Self {
            input,
            depth_left: max_depth,
            max_depth,
        }
    }

    #[inline]
    pub(super) fn byte(&mut self) -> Result<u8, ReadError> {
        let (&first, rest) = self.input.split_first().ok_or_else(truncated)?;
        self.input = rest;
        Ok(first)
    }

    #[inline]
    pub(super) fn peek(&self) -> Result<u8, ReadError> {
        self.input.first().copied().ok_or_else(truncated)
    }

    #[inline]
    pub(super) fn take(&mut self, len: usize) -> Result<&'de [u8], ReadError> {
        if len > self.input.len() {
            return Err(truncated());
        }
        let (taken, rest) = self.input.split_at(len);
        self.input = rest;
        Ok(taken)
    }

    #[inline]
    fn array_of<const N: usize>(&mut self) -> Result<[u8; N], ReadError> {
        <[u8; N]>::try_from(self.take(N)?).map_err(|_| truncated())
    }

    #[inline]
    fn u16(&mut self) -> Result<u16, ReadError> {
        Ok(u16::from_be_bytes(self.array_of()?))
    }

    #[inline]
    fn u32(&mut self) -> Result<u32, ReadError> {
        Ok(u32::from_be_bytes(self.array_of()?))
    }

    /// The `len` bytes of a string or binary value.
    #[inline]
    pub(super) fn data(&mut self, len: u32) -> Result<&'de [u8], ReadError> {
        let len = usize::try_from(len).map_err(|_| truncated())?;
        self.take(len)
    }

    /// Reads the next value's marker, and its length and data for a string or binary
    /// value, its length for an array or a map.
    pub(super) fn head(&mut self) -> Result<Head<'de>, ReadError> {
        let marker = self.byte()?;
        Ok(match marker {
            FIXSTR_FIRST..=FIXSTR_LAST => Head::Str(self.data(u32::from(marker & 0x1f))?),
            FIXARRAY_FIRST..=FIXARRAY_LAST => Head::Array(u32::from(marker & 0x0f)),
            FIXMAP_FIRST..=FIXMAP_LAST => Head::Map(u32::from(marker & 0x0f)),
            STR8 => {
                let len = self.byte()?;
                Head::Str(self.data(len.into())?)
            }
            STR16 => {
                let len = self.u16()?;
                Head::Str(self.data(len.into())?)
            }
            STR32 => {
                let len = self.u32()?;
                Head::Str(self.data(len)?)
            }
            BIN8 => {
                let len = self.byte()?;
                Head::Bin(self.data(len.into())?)
            }
            BIN16 => {
                let len = self.u16()?;
                Head::Bin(self.data(len.into())?)
            }
            BIN32 => {
                let len = self.u32()?;
                Head::Bin(self.data(len)?)
            }
            ARRAY16 => Head::Array(self.u16()?.into()),
            ARRAY32 => Head::Array(self.u32()?),
            MAP16 => Head::Map(self.u16()?.into()),
            MAP32 => Head::Map(self.u32()?),
            FIXEXT1 | FIXEXT2 | FIXEXT4 | FIXEXT8 | FIXEXT16 | EXT8 | EXT16 | EXT32 => {
                Head::Extension(marker)
            }
            RESERVED => Head::Reserved,
            number => Head::Number(number),
        })
    }

    /// Reads a map's marker and length; `None`, reading nothing, when the next value is no
    /// map.
    pub(super) fn map_start(&mut self) -> Result<Option<u32>, ReadError> {
        let len = match self.peek()? {
            marker @ FIXMAP_FIRST..=FIXMAP_LAST => {
                self.byte()?;
                u32::from(marker & 0x0f)
            }
            MAP16 => {
                self.byte()?;
                self.u16()?.into()
            }
            MAP32 => {
                self.byte()?;
                self.u32()?
            }
            _ => return Ok(None),
        };
        Ok(Some(len))
    }

    /// Counts one more level of nesting, refusing it past the limit.
    #[inline]
    pub(super) fn enter(&mut self) -> Result<(), ReadError> {
        match self.depth_left {
            0 | 1 => Err(Why::TooDeep(self.max_depth).into()),
            _ => {
                self.depth_left -= 1;
                Ok(())
            }
        }
    }

    #[inline]
    pub(super) fn leave(&mut self) {
        self.depth_left += 1;
    }

    /// A nil, boolean or number `marker`'s value, to `visitor`. Out of line and generic over
    /// the visitor only: the numeric types share it across every message.
    #[inline(never)]
    pub(super) fn number<V: Visitor<'de>>(
        &mut self,
        marker: u8,
        visitor: V,
    ) -> Result<V::Value, ReadError> {
        match marker {
            POSITIVE_FIXINT_FIRST..=POSITIVE_FIXINT_LAST => visitor.visit_u8(marker),
            NEGATIVE_FIXINT_FIRST..=NEGATIVE_FIXINT_LAST => {
                visitor.visit_i8(i8::from_be_bytes([marker]))
            }
            NIL => visitor.visit_unit(),
            TRUE => visitor.visit_bool(true),
            FALSE => visitor.visit_bool(false),
            U8 => visitor.visit_u8(self.byte()?),
            U16 => visitor.visit_u16(self.u16()?),
            U32 => visitor.visit_u32(self.u32()?),
            U64 => visitor.visit_u64(u64::from_be_bytes(self.array_of()?)),
            I8 => visitor.visit_i8(i8::from_be_bytes(self.array_of()?)),
            I16 => visitor.visit_i16(i16::from_be_bytes(self.array_of()?)),
            I32 => visitor.visit_i32(i32::from_be_bytes(self.array_of()?)),
            I64 => visitor.visit_i64(i64::from_be_bytes(self.array_of()?)),
            F32 => visitor.visit_f32(f32::from_be_bytes(self.array_of()?)),
            F64 => visitor.visit_f64(f64::from_be_bytes(self.array_of()?)),
            other => Err(mismatch(other, &visitor)),
        }
    }

    /// A 128-bit integer: any integer, or the 16 big-endian bytes of a byte string, as
    /// rmp-serde writes one.
    pub(super) fn int128(&mut self) -> Result<i128, ReadError> {
        let marker = self.byte()?;
        Ok(match marker {
            POSITIVE_FIXINT_FIRST..=POSITIVE_FIXINT_LAST => marker.into(),
            NEGATIVE_FIXINT_FIRST..=NEGATIVE_FIXINT_LAST => i8::from_be_bytes([marker]).into(),
            U8 => self.byte()?.into(),
            U16 => self.u16()?.into(),
            U32 => self.u32()?.into(),
            U64 => u64::from_be_bytes(self.array_of()?).into(),
            I8 => i8::from_be_bytes(self.array_of()?).into(),
            I16 => i16::from_be_bytes(self.array_of()?).into(),
            I32 => i32::from_be_bytes(self.array_of()?).into(),
            I64 => i64::from_be_bytes(self.array_of()?).into(),
            BIN8 => match self.byte()? {
                16 => i128::from_be_bytes(self.array_of()?),
                len => return Err(Why::WideInteger(len).into()),
            },
            other => return Err(mismatch(other, &"a 128-bit integer")),
        })
    }

    /// The length of a fixarray (up to 15 elements), read, if one comes next; nothing is
    /// read otherwise. The usual message, without the call to [`head`](Self::head).
    #[inline]
    pub(super) fn fixarray(&mut self) -> Option<u32> {
        match self.input.split_first() {
            Some((&marker @ FIXARRAY_FIRST..=FIXARRAY_LAST, rest)) => {
                self.input = rest;
                Some(u32::from(marker & 0x0f))
            }
            _ => None,
        }
    }

    /// The bytes of a fixstr (up to 31), read, if one comes next; nothing is read otherwise.
    /// The usual string, without the call to [`head`](Self::head).
    #[inline]
    pub(super) fn fixstr(&mut self) -> Result<Option<&'de [u8]>, ReadError> {
        match self.input.split_first() {
            Some((&marker @ FIXSTR_FIRST..=FIXSTR_LAST, rest)) => {
                self.input = rest;
                self.data(u32::from(marker & 0x1f)).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// Skips one value of any kind, nested ones included, without looking at it.
    pub(super) fn skip(&mut self) -> Result<(), ReadError> {
        let data = match self.head()? {
            Head::Array(len) => return self.skip_values(u64::from(len)),
            Head::Map(len) => return self.skip_values(2 * u64::from(len)),
            Head::Str(_) | Head::Bin(_) => return Ok(()),
            Head::Reserved => return Err(Why::Reserved.into()),
            Head::Number(U8 | I8) => 1,
            Head::Number(U16 | I16) => 2,
            Head::Number(U32 | I32 | F32) => 4,
            Head::Number(U64 | I64 | F64) => 8,
            Head::Number(_) => 0,
            // An extension's type byte, then its data.
            Head::Extension(FIXEXT1) => 2,
            Head::Extension(FIXEXT2) => 3,
            Head::Extension(FIXEXT4) => 5,
            Head::Extension(FIXEXT8) => 9,
            Head::Extension(FIXEXT16) => 17,
            Head::Extension(EXT8) => 1 + usize::from(self.byte()?),
            Head::Extension(EXT16) => 1 + usize::from(self.u16()?),
            Head::Extension(_) => usize::try_from(self.u32()?)
                .map_err(|_| truncated())?
                .saturating_add(1),
        };
        self.take(data)?;
        Ok(())
    }

    fn skip_values(&mut self, count: u64) -> Result<(), ReadError> {
        self.enter()?;
        for _ in 0..count {
            self.skip()?;
        }
        self.leave();
        Ok(())
    }
}

/// The error for a value starting with `marker` that the visitor cannot take: generic over
/// nothing, so that one copy serves every type.
#[cold]
#[inline(never)]
pub(super) fn mismatch(marker: u8, expected: &dyn Expected) -> ReadError {
    let found = match marker {
        NIL => "nil",
        TRUE | FALSE => "a boolean",
        F32 | F64 => "a float",
        FIXSTR_FIRST..=FIXSTR_LAST | STR8 | STR16 | STR32 => "a string",
        BIN8 | BIN16 | BIN32 => "a byte string",
        FIXARRAY_FIRST..=FIXARRAY_LAST | ARRAY16 | ARRAY32 => "an array",
        FIXMAP_FIRST..=FIXMAP_LAST | MAP16 | MAP32 => "a map",
        FIXEXT1 | FIXEXT2 | FIXEXT4 | FIXEXT8 | FIXEXT16 | EXT8 | EXT16 | EXT32 => {
            return Why::Extension.into()
        }
        RESERVED => return Why::Reserved.into(),
        _ => "an integer",
    };
    de::Error::invalid_type(Unexpected::Other(found), expected)
}

/// The error for an array or map of `len` items of which `left` were not read.
#[cold]
#[inline(never)]
pub(super) fn unread(len: u32, left: u32) -> ReadError {
    Why::Unread {
        len,
        read: len - left,
    }
    .into()
}

/// The error for a value of kind `head` the visitor cannot take.
#[cold]
#[inline(never)]
pub(super) fn head_mismatch(head: Head<'_>, expected: &dyn Expected) -> ReadError {
    let found = match head {
        Head::Number(marker) => return mismatch(marker, expected),
        Head::Extension(_) => return Why::Extension.into(),
        Head::Reserved => return Why::Reserved.into(),
        Head::Str(_) => "a string",
        Head::Bin(_) => "a byte string",
        Head::Array(_) => "an array",
        Head::Map(_) => "a map",
    };
    de::Error::invalid_type(Unexpected::Other(found), expected)
}
