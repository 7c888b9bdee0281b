//! [`ErrorBody`]: the payload of an `Error` frame.

use bytes::{BufMut, Bytes, BytesMut};

use crate::wire::ErrorCode;

/// The body of an `Error` frame: a `u16` BE [`ErrorCode`] followed by a UTF-8 message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorBody {
    /// What went wrong.
    pub code: ErrorCode,
    /// Human-readable detail (may be empty).
    pub message: String,
}

impl ErrorBody {
    /// Encodes a body.
    pub fn encode(code: ErrorCode, message: &str) -> Bytes {
        let mut buf = BytesMut::with_capacity(2 + message.len());
        buf.put_u16(code.to_u16());
        buf.extend_from_slice(message.as_bytes());
        buf.freeze()
    }

    /// Decodes a body; a body shorter than two bytes is reported as a protocol violation and
    /// invalid UTF-8 is replaced rather than rejected (the message is for humans).
    pub fn decode(payload: &[u8]) -> Self {
        match payload {
            [hi, lo, message @ ..] => Self {
                code: ErrorCode::from_u16(u16::from_be_bytes([*hi, *lo])),
                message: String::from_utf8_lossy(message).into_owned(),
            },
            _ => Self {
                code: ErrorCode::ProtocolViolation,
                message: "error frame without an error code".to_owned(),
            },
        }
    }
}
