//! An [`Envelope`] as AMQP message properties and headers, and back.
//!
//! | envelope | AMQP |
//! | --- | --- |
//! | id | `message-id` (32 hex digits) |
//! | timestamp | `timestamp` (seconds since the Unix epoch, AMQP's unit) |
//! | event | `type`, and the routing key on first publish |
//! | contract | `app-id` |
//! | codec | `content-type` |
//! | attempts | header `x-wirecall-attempts`, absent while 0 |
//! | trace context | header `traceparent` |
//! | metadata | one header `x-wirecall-meta-{key}` per entry |
//!
//! Message properties are used wherever AMQP has one, so that a first publish carries one
//! header (`traceparent`): every header is work for the broker on every message.
//!
//! Dead letters add `x-wirecall-dead-reason`, `x-wirecall-error` and
//! `x-wirecall-routing-key` (the event's original routing key).

use std::borrow::Cow;
use std::time::SystemTime;

use bytes::Bytes;
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::BasicProperties;

use super::super::envelope::{from_micros_since_epoch, Envelope, EventId};
use super::super::error::{DeadLetterReason, HandlerError};
use crate::metadata::Metadata;
use crate::trace::{TraceContext, TRACEPARENT};

/// Header: failed handler runs so far.
pub const ATTEMPTS: &str = "x-wirecall-attempts";
/// Header prefix of a metadata entry.
pub const METADATA_PREFIX: &str = "x-wirecall-meta-";
/// Dead-letter header: why ([`DeadLetterReason::as_str`]).
pub const DEAD_REASON: &str = "x-wirecall-dead-reason";
/// Dead-letter header: the last error.
pub const DEAD_ERROR: &str = "x-wirecall-error";
/// Dead-letter header: the event's original routing key.
pub const ROUTING_KEY: &str = "x-wirecall-routing-key";

/// AMQP delivery mode 2: the broker writes the message to disk (in a durable queue it
/// survives a broker restart).
const PERSISTENT: u8 = 2;

fn text(value: &str) -> AMQPValue {
    AMQPValue::LongString(value.into())
}

/// The properties an envelope is published with.
pub fn properties(envelope: &Envelope) -> BasicProperties {
    let mut headers = FieldTable::default();
    if envelope.attempts > 0 {
        headers.insert(
            ATTEMPTS.into(),
            AMQPValue::LongLongInt(i64::from(envelope.attempts)),
        );
    }
    if let Some(trace) = &envelope.trace {
        headers.insert(TRACEPARENT.into(), text(&trace.to_traceparent()));
    }
    for (key, value) in envelope.metadata.iter() {
        if let Ok(key) = ShortString::try_new(format!("{METADATA_PREFIX}{key}")) {
            headers.insert(key, text(value));
        }
    }
    BasicProperties::default()
        .with_message_id(envelope.id.to_string().into())
        .with_timestamp(envelope.timestamp_micros() / 1_000_000)
        .with_type(ShortString::from(envelope.event.as_ref()))
        .with_app_id(ShortString::from(envelope.contract.as_ref()))
        .with_content_type(ShortString::from(envelope.content_type.as_ref()))
        .with_delivery_mode(PERSISTENT)
        .with_headers(headers)
}

/// The properties of a dead letter: the envelope's, plus why.
pub fn dead_letter_properties(
    envelope: &Envelope,
    reason: DeadLetterReason,
    error: &str,
    routing_key: &str,
) -> BasicProperties {
    let properties = properties(envelope);
    let mut headers = properties.headers().clone().unwrap_or_default();
    headers.insert(DEAD_REASON.into(), text(reason.as_str()));
    headers.insert(DEAD_ERROR.into(), text(error));
    headers.insert(ROUTING_KEY.into(), text(routing_key));
    properties.with_headers(headers)
}

fn header<'a>(headers: Option<&'a FieldTable>, key: &str) -> Option<&'a AMQPValue> {
    headers?.inner().get(key)
}

fn as_u64(value: &AMQPValue) -> Option<u64> {
    match value {
        AMQPValue::ShortShortUInt(v) => Some(u64::from(*v)),
        AMQPValue::ShortUInt(v) => Some(u64::from(*v)),
        AMQPValue::LongUInt(v) => Some(u64::from(*v)),
        AMQPValue::Timestamp(v) => Some(*v),
        AMQPValue::ShortShortInt(v) => u64::try_from(*v).ok(),
        AMQPValue::ShortInt(v) => u64::try_from(*v).ok(),
        AMQPValue::LongInt(v) => u64::try_from(*v).ok(),
        AMQPValue::LongLongInt(v) => u64::try_from(*v).ok(),
        _ => None,
    }
}

fn as_text(value: &AMQPValue) -> Option<String> {
    match value {
        AMQPValue::LongString(v) => Some(String::from_utf8_lossy(v.as_bytes()).into_owned()),
        AMQPValue::ShortString(v) => Some(v.as_str().to_owned()),
        _ => None,
    }
}

/// A received message as an envelope. `routing_key` is the delivery's (the event name on
/// first delivery; a queue name after a retry, which is why the event also travels in
/// `type`). `Err` when the message lacks an id or an event name: it still goes to the dead
/// letters, as the envelope this returns alongside.
pub fn envelope(
    properties: &BasicProperties,
    routing_key: &str,
    payload: Bytes,
) -> (Envelope, Option<HandlerError>) {
    let headers = properties.headers().as_ref();
    let mut problem = None;
    let id = match properties.message_id().as_ref().map(ShortString::as_str) {
        Some(text) => EventId::parse(text).unwrap_or_else(|| {
            problem = Some(HandlerError::Malformed(format!(
                "message id {text:?} is not 32 hex digits"
            )));
            EventId(0)
        }),
        None => {
            problem = Some(HandlerError::Malformed("no message id".to_owned()));
            EventId(0)
        }
    };
    let event = match properties.kind().as_ref() {
        Some(kind) => kind.as_str().to_owned(),
        None => routing_key.to_owned(),
    };
    let timestamp = properties
        .timestamp()
        .map_or(SystemTime::UNIX_EPOCH, |secs| {
            from_micros_since_epoch(secs.saturating_mul(1_000_000))
        });
    let mut metadata = Metadata::default();
    if let Some(headers) = headers {
        for (key, value) in headers.inner() {
            if let (Some(key), Some(value)) =
                (key.as_str().strip_prefix(METADATA_PREFIX), as_text(value))
            {
                // Entries past the metadata limits are left out rather than failing the event.
                let _ = metadata.insert(key, value);
            }
        }
    }
    let envelope = Envelope {
        id,
        timestamp,
        contract: Cow::Owned(
            properties
                .app_id()
                .as_ref()
                .map(|id| id.as_str().to_owned())
                .unwrap_or_default(),
        ),
        event: Cow::Owned(event),
        content_type: Cow::Owned(
            properties
                .content_type()
                .as_ref()
                .map(|t| t.as_str().to_owned())
                .unwrap_or_default(),
        ),
        attempts: header(headers, ATTEMPTS)
            .and_then(as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0),
        metadata,
        trace: header(headers, TRACEPARENT)
            .and_then(as_text)
            .and_then(|text| TraceContext::parse(&text)),
        payload,
    };
    (envelope, problem)
}

/// A dead letter's reason and error, read back from its headers; `None` when it has no
/// reason header (it came through the alternate exchange, see [`super::topology`]).
pub fn dead_letter_reason(properties: &BasicProperties) -> Option<(DeadLetterReason, String)> {
    let headers = properties.headers().as_ref();
    let reason = header(headers, DEAD_REASON).and_then(as_text)?;
    let reason = DeadLetterReason::parse(&reason).unwrap_or(DeadLetterReason::Malformed);
    let error = header(headers, DEAD_ERROR)
        .and_then(as_text)
        .unwrap_or_default();
    Some((reason, error))
}
