//! Numbers, `bool`, `char`, strings and bytes.
//!
//! 8- and 16-bit integers travel as `uint32`/`int32` and `char` as `uint32` (its code point);
//! decoding checks the range, so a value the Rust type cannot hold is a decode error, never a
//! silent wrap. Floats are left out only when their bits are zero, so `-0.0` keeps its sign
//! (as protobuf-go does).

use bytes::{Buf, BufMut, Bytes};
use prost::encoding::{
    check_wire_type, decode_varint, encode_key, encode_varint, encoded_len_varint, key_len,
    merge_loop, DecodeContext, WireType,
};
use prost::DecodeError;

use super::field::{encode_header, header_len, ProtoField};
use crate::codec::shared_bytes;

/// A fixed-size value with one wire type: the numbers, `bool` and `char`.
pub(super) trait Scalar: Copy + Send + Sync + 'static {
    const WIRE_TYPE: WireType;
    fn zero() -> Self;
    fn is_zero(self) -> bool;
    fn put(self, buf: &mut impl BufMut);
    fn raw_len(self) -> usize;
    fn get(buf: &mut impl Buf) -> Result<Self, DecodeError>;
}

fn out_of_range(value: impl std::fmt::Display, ty: &str) -> DecodeError {
    super::field::decode_error(format!("value {value} is out of range for `{ty}`"))
}

macro_rules! varint_scalar {
    ($ty:ty, |$v:ident| $to_wire:expr, |$w:ident| $from_wire:expr) => {
        impl Scalar for $ty {
            const WIRE_TYPE: WireType = WireType::Varint;
            fn zero() -> Self {
                Self::default()
            }
            fn is_zero(self) -> bool {
                self == Self::default()
            }
            fn put(self, buf: &mut impl BufMut) {
                let $v = self;
                encode_varint($to_wire, buf);
            }
            fn raw_len(self) -> usize {
                let $v = self;
                encoded_len_varint($to_wire)
            }
            fn get(buf: &mut impl Buf) -> Result<Self, DecodeError> {
                let $w: u64 = decode_varint(buf)?;
                $from_wire
            }
        }
    };
}

// uint32/uint64/int32/int64 as proto3 defines them: int32 is sign-extended to 64 bits, and a
// wider varint is truncated for the 32-bit types.
varint_scalar!(bool, |v| u64::from(v), |w| Ok(w != 0));
varint_scalar!(u32, |v| u64::from(v), |w| Ok(w as u32));
varint_scalar!(u64, |v| v, |w| Ok(w));
varint_scalar!(i32, |v| i64::from(v) as u64, |w| Ok(w as i32));
varint_scalar!(i64, |v| v as u64, |w| Ok(w as i64));
varint_scalar!(u8, |v| u64::from(v), |w| u8::try_from(w)
    .map_err(|_| out_of_range(w, "u8")));
varint_scalar!(u16, |v| u64::from(v), |w| u16::try_from(w)
    .map_err(|_| out_of_range(w, "u16")));
varint_scalar!(i8, |v| i64::from(v) as u64, |w| i8::try_from(w as i64)
    .map_err(|_| out_of_range(w as i64, "i8")));
varint_scalar!(i16, |v| i64::from(v) as u64, |w| i16::try_from(w as i64)
    .map_err(|_| out_of_range(w as i64, "i16")));
varint_scalar!(char, |v| u64::from(u32::from(v)), |w| u32::try_from(w)
    .ok()
    .and_then(char::from_u32)
    .ok_or_else(|| super::field::decode_error(format!(
        "{w} is not a Unicode scalar value for `char`"
    ))));

macro_rules! fixed_scalar {
    ($ty:ty, $wire:expr, $width:expr, $put:ident, $get:ident) => {
        impl Scalar for $ty {
            const WIRE_TYPE: WireType = $wire;
            fn zero() -> Self {
                0.0
            }
            fn is_zero(self) -> bool {
                // Bits, not `==`: `-0.0 == 0.0`, but `-0.0` must keep its sign.
                self.to_bits() == 0
            }
            fn put(self, buf: &mut impl BufMut) {
                buf.$put(self);
            }
            fn raw_len(self) -> usize {
                $width
            }
            fn get(buf: &mut impl Buf) -> Result<Self, DecodeError> {
                if buf.remaining() < $width {
                    return Err(super::field::decode_error("buffer underflow"));
                }
                Ok(buf.$get())
            }
        }
    };
}

fixed_scalar!(f32, WireType::ThirtyTwoBit, 4, put_f32_le, get_f32_le);
fixed_scalar!(f64, WireType::SixtyFourBit, 8, put_f64_le, get_f64_le);

fn encode_packed<'a, T: Scalar>(
    items: impl Iterator<Item = &'a T> + Clone,
    tag: u32,
    buf: &mut impl BufMut,
) {
    let len: usize = items.clone().map(|item| item.raw_len()).sum();
    if len == 0 {
        // Every scalar takes at least one byte, so the list is empty.
        return;
    }
    encode_header(tag, len, buf);
    for item in items {
        item.put(buf);
    }
}

fn packed_len<'a, T: Scalar>(items: impl Iterator<Item = &'a T>, tag: u32) -> usize {
    let len: usize = items.map(|item| item.raw_len()).sum();
    if len == 0 {
        0
    } else {
        header_len(tag, len)
    }
}

/// Accepts a packed and an unpacked repeated field alike, as the protobuf spec requires.
fn merge_packed<T: Scalar>(
    items: &mut impl Extend<T>,
    wire_type: WireType,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError> {
    if wire_type == WireType::LengthDelimited {
        merge_loop(items, buf, ctx, |items, buf, _| {
            items.extend(core::iter::once(T::get(buf)?));
            Ok(())
        })
    } else {
        check_wire_type(T::WIRE_TYPE, wire_type)?;
        items.extend(core::iter::once(T::get(buf)?));
        Ok(())
    }
}

macro_rules! scalar_field {
    ($($ty:ty),*) => {$(
        impl ProtoField for $ty {
            fn proto_default() -> Self {
                <$ty as Scalar>::zero()
            }
            fn is_omitted(&self) -> bool {
                self.is_zero()
            }
            fn encode_value(&self, tag: u32, buf: &mut impl BufMut) {
                encode_key(tag, <$ty as Scalar>::WIRE_TYPE, buf);
                self.put(buf);
            }
            fn value_len(&self, tag: u32) -> usize {
                key_len(tag) + self.raw_len()
            }
            fn merge_value(
                &mut self,
                wire_type: WireType,
                buf: &mut impl Buf,
                _ctx: DecodeContext,
            ) -> Result<(), DecodeError> {
                check_wire_type(<$ty as Scalar>::WIRE_TYPE, wire_type)?;
                *self = <$ty as Scalar>::get(buf)?;
                Ok(())
            }
            fn encode_list<'a>(items: impl Iterator<Item = &'a Self> + Clone, tag: u32, buf: &mut impl BufMut)
            where
                Self: 'a,
            {
                encode_packed(items, tag, buf);
            }
            fn list_len<'a>(items: impl Iterator<Item = &'a Self> + Clone, tag: u32) -> usize
            where
                Self: 'a,
            {
                packed_len(items, tag)
            }
            fn merge_list(
                items: &mut impl Extend<Self>,
                wire_type: WireType,
                buf: &mut impl Buf,
                ctx: DecodeContext,
            ) -> Result<(), DecodeError> {
                merge_packed(items, wire_type, buf, ctx)
            }
        }
    )*};
}

scalar_field!(bool, u16, u32, u64, i8, i16, i32, i64, f32, f64, char);

// `u8` is a number on its own, but a list of `u8` is `bytes`.
impl ProtoField for u8 {
    fn proto_default() -> Self {
        0
    }
    fn is_omitted(&self) -> bool {
        *self == 0
    }
    fn encode_value(&self, tag: u32, buf: &mut impl BufMut) {
        encode_key(tag, WireType::Varint, buf);
        self.put(buf);
    }
    fn value_len(&self, tag: u32) -> usize {
        key_len(tag) + self.raw_len()
    }
    fn merge_value(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        _ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        check_wire_type(WireType::Varint, wire_type)?;
        *self = <u8 as Scalar>::get(buf)?;
        Ok(())
    }
    fn encode_list<'a>(
        items: impl Iterator<Item = &'a Self> + Clone,
        tag: u32,
        buf: &mut impl BufMut,
    ) where
        Self: 'a,
    {
        if items.clone().next().is_some() {
            Self::encode_list_value(items, tag, buf);
        }
    }
    fn list_len<'a>(items: impl Iterator<Item = &'a Self> + Clone, tag: u32) -> usize
    where
        Self: 'a,
    {
        if items.clone().next().is_some() {
            Self::list_value_len(items, tag)
        } else {
            0
        }
    }
    fn merge_list(
        items: &mut impl Extend<Self>,
        wire_type: WireType,
        buf: &mut impl Buf,
        _ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        merge_bytes_into(items, wire_type, buf)
    }
    fn encode_list_value<'a>(
        items: impl Iterator<Item = &'a Self> + Clone,
        tag: u32,
        buf: &mut impl BufMut,
    ) where
        Self: 'a,
    {
        encode_header(tag, items.clone().count(), buf);
        for byte in items {
            buf.put_u8(*byte);
        }
    }
    fn list_value_len<'a>(items: impl Iterator<Item = &'a Self> + Clone, tag: u32) -> usize
    where
        Self: 'a,
    {
        header_len(tag, items.count())
    }
    fn merge_list_value<C: Extend<Self> + Send + Sync>(
        items: &mut C,
        wire_type: WireType,
        buf: &mut impl Buf,
        _ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        merge_bytes_into(items, wire_type, buf)
    }
}

/// Reads one `bytes` field into `items`. A repeated occurrence appends, as for any list.
fn merge_bytes_into(
    items: &mut impl Extend<u8>,
    wire_type: WireType,
    buf: &mut impl Buf,
) -> Result<(), DecodeError> {
    let len = length_delimited(wire_type, buf)?;
    let mut remaining = len;
    while remaining > 0 {
        let chunk = buf.chunk();
        let take = chunk.len().min(remaining);
        items.extend(chunk[..take].iter().copied());
        buf.advance(take);
        remaining -= take;
    }
    Ok(())
}

/// Checks the wire type and reads a length that the buffer holds.
fn length_delimited(wire_type: WireType, buf: &mut impl Buf) -> Result<usize, DecodeError> {
    check_wire_type(WireType::LengthDelimited, wire_type)?;
    let len = decode_varint(buf)?;
    if len > buf.remaining() as u64 {
        return Err(super::field::decode_error("buffer underflow"));
    }
    Ok(len as usize)
}

impl ProtoField for String {
    fn proto_default() -> Self {
        String::new()
    }
    fn is_omitted(&self) -> bool {
        self.is_empty()
    }
    fn encode_value(&self, tag: u32, buf: &mut impl BufMut) {
        prost::encoding::string::encode(tag, self, buf);
    }
    fn value_len(&self, tag: u32) -> usize {
        prost::encoding::string::encoded_len(tag, self)
    }
    fn merge_value(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        prost::encoding::string::merge(wire_type, self, buf, ctx)
    }
}

impl ProtoField for Bytes {
    fn proto_default() -> Self {
        Bytes::new()
    }
    fn is_omitted(&self) -> bool {
        self.is_empty()
    }
    fn encode_value(&self, tag: u32, buf: &mut impl BufMut) {
        prost::encoding::bytes::encode(tag, self, buf);
    }
    fn value_len(&self, tag: u32) -> usize {
        prost::encoding::bytes::encoded_len(tag, self)
    }
    fn merge_value(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        _ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        // A view of the payload being decoded where it can be (see `codec/shared_bytes.rs`).
        let len = length_delimited(wire_type, buf)?;
        *self = if let Some(bytes) = buf.chunk().get(..len) {
            let value = shared_bytes::shared_or_copied(bytes);
            buf.advance(len);
            value
        } else {
            // A buffer in pieces: copied, as prost does.
            buf.copy_to_bytes(len)
        };
        Ok(())
    }
    fn deserialize_shared<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Self, D::Error> {
        shared_bytes::deserialize(deserializer)
    }
}

impl ProtoField for () {
    fn proto_default() -> Self {}
    fn is_omitted(&self) -> bool {
        true
    }
    fn encode_value(&self, tag: u32, buf: &mut impl BufMut) {
        encode_header(tag, 0, buf);
    }
    fn value_len(&self, tag: u32) -> usize {
        header_len(tag, 0)
    }
    fn merge_value(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        _ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        let len = length_delimited(wire_type, buf)?;
        buf.advance(len);
        Ok(())
    }
}
