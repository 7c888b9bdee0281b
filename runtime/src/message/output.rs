//! The messages a method's output travels in, the same for a unary reply, a stream item and an
//! uploaded item: a value in the field `value`; a result in the optional fields `ok` and
//! `err`, or `err` alone for `Result<(), E>`; nothing for `()`. Each is a [`Fields`] whose
//! [`ItemMessage`] turns it into the caller's value and back.

use super::field_codec::{Optional, Plain, SlotCodec};
use super::fields::{FieldNames, Fields};
use crate::codec::CodecError;
use crate::error::Error;
use crate::stream::ItemMessage;

/// The field names of a value: `value`.
pub struct ValueField;

impl FieldNames for ValueField {
    const NAME: &'static str = "Value";
    const FIELDS: &'static [&'static str] = &["value"];
}

/// The field names of a result: `ok`, `err`.
pub struct OkErrFields;

impl FieldNames for OkErrFields {
    const NAME: &'static str = "Result";
    const FIELDS: &'static [&'static str] = &["ok", "err"];
}

/// The field name of a result without a value: `err`.
pub struct ErrField;

impl FieldNames for ErrField {
    const NAME: &'static str = "Result";
    const FIELDS: &'static [&'static str] = &["err"];
}

/// No fields: the reply of a method that returns `()`.
pub struct NoFields;

impl FieldNames for NoFields {
    const NAME: &'static str = "Empty";
    const FIELDS: &'static [&'static str] = &[];
}

/// The message of a `T`.
pub type ValueMessage<T> = Fields<ValueField, (Plain<T>,)>;
/// The message of a `Result<T, E>`.
pub type ResultMessage<T, E> = Fields<OkErrFields, (Optional<T>, Optional<E>)>;
/// The message of a `Result<(), E>`.
pub type UnitResultMessage<E> = Fields<ErrField, (Optional<E>,)>;
/// The message of a `()`.
pub type UnitMessage = Fields<NoFields, ()>;

impl<S: SlotCodec> ItemMessage for Fields<ValueField, (S,)>
where
    Self: crate::codec::WireMessage,
{
    type Item = S::Value;

    #[inline]
    fn from_item(item: S::Value) -> (Self, bool) {
        (Self::new((item,)), false)
    }

    #[inline]
    fn into_item(self) -> Result<S::Value, Error> {
        let (value,) = self.values;
        Ok(value)
    }
}

impl<OkSlot, ErrSlot, T, E> ItemMessage for Fields<OkErrFields, (OkSlot, ErrSlot)>
where
    OkSlot: SlotCodec<Value = Option<T>>,
    ErrSlot: SlotCodec<Value = Option<E>>,
    T: Send + 'static,
    E: Send + 'static,
    Self: crate::codec::WireMessage,
{
    type Item = Result<T, E>;

    /// An error is a stream's last item.
    #[inline]
    fn from_item(item: Result<T, E>) -> (Self, bool) {
        match item {
            Ok(ok) => (Self::new((Some(ok), None)), false),
            Err(err) => (Self::new((None, Some(err))), true),
        }
    }

    #[inline]
    fn into_item(self) -> Result<Result<T, E>, Error> {
        let (ok, err) = self.values;
        result_from_parts(ok, err)
    }
}

impl<ErrSlot, E> ItemMessage for Fields<ErrField, (ErrSlot,)>
where
    ErrSlot: SlotCodec<Value = Option<E>>,
    E: Send + 'static,
    Self: crate::codec::WireMessage,
{
    type Item = Result<(), E>;

    /// An error is a stream's last item.
    #[inline]
    fn from_item(item: Result<(), E>) -> (Self, bool) {
        match item {
            Ok(()) => (Self::new((None,)), false),
            Err(err) => (Self::new((Some(err),)), true),
        }
    }

    #[inline]
    fn into_item(self) -> Result<Result<(), E>, Error> {
        let (err,) = self.values;
        Ok(err.map_or(Ok(()), Err))
    }
}

impl ItemMessage for UnitMessage {
    type Item = ();

    #[inline]
    fn from_item((): ()) -> (Self, bool) {
        (Self::new(()), false)
    }

    #[inline]
    fn into_item(self) -> Result<(), Error> {
        Ok(())
    }
}

/// Turns the two optional fields of a result reply into the caller's nested result. A reply
/// with neither field set is a decode error: the peer sent something that is not a result.
pub fn result_from_parts<T, E>(ok: Option<T>, err: Option<E>) -> Result<Result<T, E>, Error> {
    match (ok, err) {
        (_, Some(err)) => Ok(Err(err)),
        (Some(ok), None) => Ok(Ok(ok)),
        (None, None) => Err(Error::Codec(CodecError::EmptyResult)),
    }
}

#[cfg(test)]
mod tests {
    use bytes::{Bytes, BytesMut};

    use super::*;
    use crate::codec::Codec;

    fn is_view(part: &Bytes, payload: &Bytes) -> bool {
        let start = payload.as_ptr() as usize;
        (start..start + payload.len()).contains(&(part.as_ptr() as usize))
    }

    fn round_trip<M: ItemMessage>(codec: Codec, item: M::Item) -> (M::Item, Bytes) {
        let (message, _) = M::from_item(item);
        let mut payload = BytesMut::new();
        codec.encode(&message, &mut payload).unwrap();
        let payload = payload.freeze();
        let decoded: M = codec.decode_shared(payload.clone()).unwrap();
        (decoded.into_item().unwrap(), payload)
    }

    /// The generated messages (a method's arguments, replies and items) read a `Bytes` value
    /// as a view of the payload, as `#[wirecall::message]` structs do, and so do results.
    #[test]
    fn a_long_bytes_value_or_result_is_a_view_of_its_payload() {
        for codec in [Codec::MessagePack, Codec::Protobuf] {
            for (len, shared) in [(1024, true), (255, false)] {
                let value = Bytes::from(vec![9u8; len]);
                let (got, payload) = round_trip::<ValueMessage<Bytes>>(codec, value.clone());
                assert_eq!(got, value, "{codec}");
                assert_eq!(is_view(&got, &payload), shared, "{codec}, {len} bytes");

                let (got, payload) =
                    round_trip::<ResultMessage<Bytes, Bytes>>(codec, Ok(value.clone()));
                let ok = got.unwrap();
                assert_eq!(ok, value, "{codec}");
                assert_eq!(is_view(&ok, &payload), shared, "{codec}, ok of {len} bytes");

                let (got, payload) =
                    round_trip::<UnitResultMessage<Bytes>>(codec, Err(value.clone()));
                let err = got.unwrap_err();
                assert_eq!(err, value, "{codec}");
                assert_eq!(
                    is_view(&err, &payload),
                    shared,
                    "{codec}, err of {len} bytes"
                );
            }
        }
        // JSON's `null` and MessagePack's nil are `None`, as `Option`'s own reading has it.
        for codec in [Codec::Json, Codec::MessagePack] {
            let (got, _) = round_trip::<UnitResultMessage<Bytes>>(codec, Ok(()));
            assert_eq!(got, Ok(()), "{codec}");
            let (got, _) = round_trip::<ResultMessage<u32, String>>(codec, Err("no".into()));
            assert_eq!(got, Err("no".to_owned()), "{codec}");
        }
    }
}
