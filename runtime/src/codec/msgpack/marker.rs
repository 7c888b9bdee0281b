//! MessagePack's marker bytes, the first byte of every value (the MessagePack specification,
//! "Formats"). A value's kind is read from its marker byte directly: a `match` on the byte
//! compiles to a jump table, where converting it to an enum first cost every value a call.

pub(super) const POSITIVE_FIXINT_FIRST: u8 = 0x00;
pub(super) const POSITIVE_FIXINT_LAST: u8 = 0x7f;
/// A map of up to 15 entries, its length in the low four bits.
pub(super) const FIXMAP_FIRST: u8 = 0x80;
pub(super) const FIXMAP_LAST: u8 = 0x8f;
/// An array of up to 15 elements, its length in the low four bits.
pub(super) const FIXARRAY_FIRST: u8 = 0x90;
pub(super) const FIXARRAY_LAST: u8 = 0x9f;
pub(super) const EMPTY_FIXARRAY: u8 = 0x90;
/// A string of up to 31 bytes, its length in the low five bits.
pub(super) const FIXSTR_FIRST: u8 = 0xa0;
pub(super) const FIXSTR_LAST: u8 = 0xbf;
pub(super) const NIL: u8 = 0xc0;
/// Never used by the format.
pub(super) const RESERVED: u8 = 0xc1;
pub(super) const FALSE: u8 = 0xc2;
pub(super) const TRUE: u8 = 0xc3;
pub(super) const BIN8: u8 = 0xc4;
pub(super) const BIN16: u8 = 0xc5;
pub(super) const BIN32: u8 = 0xc6;
pub(super) const EXT8: u8 = 0xc7;
pub(super) const EXT16: u8 = 0xc8;
pub(super) const EXT32: u8 = 0xc9;
pub(super) const F32: u8 = 0xca;
pub(super) const F64: u8 = 0xcb;
pub(super) const U8: u8 = 0xcc;
pub(super) const U16: u8 = 0xcd;
pub(super) const U32: u8 = 0xce;
pub(super) const U64: u8 = 0xcf;
pub(super) const I8: u8 = 0xd0;
pub(super) const I16: u8 = 0xd1;
pub(super) const I32: u8 = 0xd2;
pub(super) const I64: u8 = 0xd3;
pub(super) const FIXEXT1: u8 = 0xd4;
pub(super) const FIXEXT2: u8 = 0xd5;
pub(super) const FIXEXT4: u8 = 0xd6;
pub(super) const FIXEXT8: u8 = 0xd7;
pub(super) const FIXEXT16: u8 = 0xd8;
pub(super) const STR8: u8 = 0xd9;
pub(super) const STR16: u8 = 0xda;
pub(super) const STR32: u8 = 0xdb;
pub(super) const ARRAY16: u8 = 0xdc;
pub(super) const ARRAY32: u8 = 0xdd;
pub(super) const MAP16: u8 = 0xde;
pub(super) const MAP32: u8 = 0xdf;
pub(super) const NEGATIVE_FIXINT_FIRST: u8 = 0xe0;
pub(super) const NEGATIVE_FIXINT_LAST: u8 = 0xff;
