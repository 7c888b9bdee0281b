//! `Duration` and `SystemTime` as the well-known `google.protobuf.Duration` and
//! `google.protobuf.Timestamp` messages (through prost-types). JSON and MessagePack use serde's
//! own forms: `{"secs": u64, "nanos": u32}` and `{"secs_since_epoch": u64,
//! "nanos_since_epoch": u32}` (in MessagePack, arrays of the two numbers).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{Buf, BufMut};
use prost::encoding::{DecodeContext, WireType};
use prost::DecodeError;

use super::field::ProtoField;
use super::message::{encode_message, merge_message, message_len};

/// A `Duration` longer than `i64::MAX` seconds (292 billion years) is sent as the longest
/// `google.protobuf.Duration`.
fn to_proto_duration(value: &Duration) -> prost_types::Duration {
    prost_types::Duration::try_from(*value).unwrap_or(prost_types::Duration {
        seconds: i64::MAX,
        nanos: 999_999_999,
    })
}

impl ProtoField for Duration {
    fn proto_default() -> Self {
        Duration::ZERO
    }
    fn encode_value(&self, tag: u32, buf: &mut impl BufMut) {
        encode_message(&to_proto_duration(self), tag, buf);
    }
    fn value_len(&self, tag: u32) -> usize {
        message_len(&to_proto_duration(self), tag)
    }
    fn merge_value(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        let mut proto = to_proto_duration(self);
        merge_message(&mut proto, wire_type, buf, ctx)?;
        // prost-types' own conversion negates the seconds, which overflows for `i64::MIN`.
        match (u64::try_from(proto.seconds), u32::try_from(proto.nanos)) {
            (Ok(seconds), Ok(nanos)) if nanos < 1_000_000_000 => {
                *self = Duration::new(seconds, nanos);
                Ok(())
            }
            _ => Err(super::field::decode_error(format!(
                "invalid duration for `Duration` (negative or not normalised): {}s {}ns",
                proto.seconds, proto.nanos
            ))),
        }
    }
}

impl ProtoField for SystemTime {
    fn proto_default() -> Self {
        UNIX_EPOCH
    }
    fn encode_value(&self, tag: u32, buf: &mut impl BufMut) {
        encode_message(&prost_types::Timestamp::from(*self), tag, buf);
    }
    fn value_len(&self, tag: u32) -> usize {
        message_len(&prost_types::Timestamp::from(*self), tag)
    }
    fn merge_value(
        &mut self,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        let mut proto = prost_types::Timestamp::from(*self);
        merge_message(&mut proto, wire_type, buf, ctx)?;
        *self = SystemTime::try_from(proto)
            .map_err(|e| super::field::decode_error(format!("invalid timestamp: {e}")))?;
        Ok(())
    }
}
