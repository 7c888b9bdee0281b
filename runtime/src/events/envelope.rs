//! What travels with every event: its id and timestamp (for de-duplication), the contract and
//! event it belongs to, the codec of its payload (as a MIME content type), how many times it
//! was handled already, and the publisher's metadata and trace context.

use std::borrow::Cow;
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use crate::codec::Codec;
use crate::metadata::Metadata;
use crate::trace::TraceContext;

/// A 128-bit random id, the same on every delivery of one published event (a redelivery or a
/// retry never changes it), written as 32 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(pub u128);

impl EventId {
    /// A fresh random id. Ids need to be unique, not secret: 128 random bits make a clash
    /// between two events vanishingly unlikely.
    pub fn random() -> Self {
        Self(fastrand::u128(..))
    }

    /// Parses the 32-hex-digit form written by [`Display`](fmt::Display).
    pub fn parse(text: &str) -> Option<Self> {
        if text.len() != 32 {
            return None;
        }
        u128::from_str_radix(text, 16).ok().map(Self)
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl fmt::Debug for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EventId({self})")
    }
}

/// The MIME content type that names each codec in a message's `content-type`.
pub fn content_type(codec: Codec) -> &'static str {
    match codec {
        Codec::Json => "application/json",
        Codec::MessagePack => "application/msgpack",
        Codec::Protobuf => "application/protobuf",
    }
}

/// The codec a `content-type` names; `None` for any other type, which a consumer sends to the
/// dead letters. Parameters (`; charset=utf-8`) are ignored; `application/x-msgpack` and
/// `application/x-protobuf`, which other producers write, are accepted too.
pub fn codec_of(content_type: &str) -> Option<Codec> {
    // Every event passes here, nearly all with a type as `content_type` writes it: matched
    // whole first, it needs no parsing.
    match content_type {
        "application/msgpack" => return Some(Codec::MessagePack),
        "application/json" => return Some(Codec::Json),
        "application/protobuf" => return Some(Codec::Protobuf),
        _ => {}
    }
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    // Compare without allocating a lowercase copy.
    const NAMES: [(&str, Codec); 6] = [
        ("application/msgpack", Codec::MessagePack),
        ("application/json", Codec::Json),
        ("application/protobuf", Codec::Protobuf),
        ("application/x-msgpack", Codec::MessagePack),
        ("application/vnd.msgpack", Codec::MessagePack),
        ("application/x-protobuf", Codec::Protobuf),
    ];
    NAMES
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(essence))
        .map(|&(_, codec)| codec)
}

/// One event as a back-end carries it.
#[derive(Clone, Debug)]
pub struct Envelope {
    /// Unique per published event; kept across redeliveries and retries.
    pub id: EventId,
    /// When the event was published (microsecond precision on the wire).
    pub timestamp: SystemTime,
    /// The contract's name (the exchange).
    pub contract: Cow<'static, str>,
    /// The event's name (the routing key): the trait method's name.
    pub event: Cow<'static, str>,
    /// The payload's MIME type; see [`content_type`] and [`codec_of`].
    pub content_type: Cow<'static, str>,
    /// How many times a handler has already tried this event and failed (0 on the first
    /// delivery).
    pub attempts: u32,
    /// The publisher's metadata, for handlers to read.
    pub metadata: Metadata,
    /// The publisher's trace context: the handler's span joins its trace.
    pub trace: Option<TraceContext>,
    /// The encoded arguments of the event.
    pub payload: Bytes,
}

impl Envelope {
    /// A new event of `contract` named `event` with an encoded `payload`: a fresh id, the
    /// current time, no metadata and no trace context.
    pub fn new(
        contract: impl Into<Cow<'static, str>>,
        event: impl Into<Cow<'static, str>>,
        codec: Codec,
        payload: Bytes,
    ) -> Self {
        Self {
            id: EventId::random(),
            timestamp: SystemTime::now(),
            contract: contract.into(),
            event: event.into(),
            content_type: Cow::Borrowed(content_type(codec)),
            attempts: 0,
            metadata: Metadata::default(),
            trace: None,
            payload,
        }
    }

    /// Microseconds since the Unix epoch, the form the timestamp travels in.
    pub fn timestamp_micros(&self) -> u64 {
        micros_since_epoch(self.timestamp)
    }
}

/// `time` as microseconds since the Unix epoch (0 before it).
pub fn micros_since_epoch(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_micros()).unwrap_or(u64::MAX)
    })
}

/// The inverse of [`micros_since_epoch`].
#[cfg(any(feature = "rabbitmq", test))]
pub fn from_micros_since_epoch(micros: u64) -> SystemTime {
    UNIX_EPOCH + std::time::Duration::from_micros(micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_round_trip_through_their_text() {
        let id = EventId::random();
        assert_eq!(EventId::parse(&id.to_string()), Some(id));
        assert_eq!(EventId::parse("xyz"), None);
        assert_eq!(EventId(1).to_string().len(), 32);
    }

    #[test]
    fn every_codec_is_named_by_its_content_type() {
        for codec in Codec::ALL {
            assert_eq!(codec_of(content_type(codec)), Some(codec));
        }
        assert_eq!(
            codec_of("application/json; charset=utf-8"),
            Some(Codec::Json)
        );
        assert_eq!(codec_of("text/xml"), None);
    }

    #[test]
    fn timestamps_keep_microseconds() {
        let now = SystemTime::now();
        let back = from_micros_since_epoch(micros_since_epoch(now));
        assert!(now.duration_since(back).unwrap() < std::time::Duration::from_micros(1));
    }
}
