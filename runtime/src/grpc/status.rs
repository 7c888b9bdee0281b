//! gRPC status codes, the one table from wirecall's error codes to them, and the
//! `grpc-message` and `grpc-timeout` header values.

use std::fmt::Write as _;
use std::time::Duration;

use crate::error::ErrorCode;

/// A gRPC status code (the `grpc-status` trailer), as the gRPC specification numbers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Code {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    Unauthenticated = 16,
}

impl Code {
    /// The code for a wirecall error code: the table the book's gRPC section shows.
    pub(crate) fn of(code: ErrorCode) -> Self {
        match code {
            ErrorCode::UnknownMethod => Self::Unimplemented,
            ErrorCode::BadRequest => Self::InvalidArgument,
            ErrorCode::HandlerPanicked => Self::Internal,
            ErrorCode::DeadlineExceeded => Self::DeadlineExceeded,
            ErrorCode::FrameTooLarge => Self::ResourceExhausted,
            ErrorCode::ProtocolViolation => Self::Internal,
            // Refused before the handler ran: UNAVAILABLE tells gRPC clients that trying
            // again (elsewhere) is safe.
            ErrorCode::Overloaded => Self::Unavailable,
            ErrorCode::ShuttingDown => Self::Unavailable,
            ErrorCode::IdleTimeout => Self::Unavailable,
            ErrorCode::EncodeFailed => Self::Internal,
            ErrorCode::PermissionDenied => Self::PermissionDenied,
            _ => Self::Unknown,
        }
    }

    /// The `grpc-status` value.
    pub(crate) fn header_value(self) -> http::HeaderValue {
        http::HeaderValue::from(self as u16)
    }
}

/// A call's end as a gRPC caller reads it: a code and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Status {
    pub(crate) code: Code,
    pub(crate) message: String,
}

impl Status {
    pub(crate) fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn ok() -> Self {
        Self::new(Code::Ok, "")
    }

    /// The status of a call that failed with a wirecall error code.
    pub(crate) fn of(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(Code::of(code), message)
    }

    /// The trailers (or the headers of a trailers-only reply) that carry this status.
    pub(crate) fn write(&self, headers: &mut http::HeaderMap) {
        headers.insert("grpc-status", self.code.header_value());
        if !self.message.is_empty() {
            if let Ok(value) = http::HeaderValue::from_str(&percent_encode(&self.message)) {
                headers.insert("grpc-message", value);
            }
        }
    }
}

/// `grpc-message` is percent-encoded UTF-8: every byte outside printable ASCII, and `%`.
fn percent_encode(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for byte in message.bytes() {
        if (0x20..=0x7e).contains(&byte) && byte != b'%' {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

/// Parses a `grpc-timeout` value (`1..=8` digits and a unit: `H`, `M`, `S`, `m`, `u`, `n`);
/// `None` when it is malformed.
pub(crate) fn parse_timeout(value: &[u8]) -> Option<Duration> {
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let amount: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(match unit {
        b'H' => Duration::from_secs(amount * 3600),
        b'M' => Duration::from_secs(amount * 60),
        b'S' => Duration::from_secs(amount),
        b'm' => Duration::from_millis(amount),
        b'u' => Duration::from_micros(amount),
        b'n' => Duration::from_nanos(amount),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_parse_in_every_unit_and_refuse_the_malformed() {
        assert_eq!(parse_timeout(b"100m"), Some(Duration::from_millis(100)));
        assert_eq!(parse_timeout(b"2S"), Some(Duration::from_secs(2)));
        assert_eq!(parse_timeout(b"1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_timeout(b"5u"), Some(Duration::from_micros(5)));
        assert_eq!(
            parse_timeout(b"99999999n"),
            Some(Duration::from_nanos(99_999_999))
        );
        for bad in [&b""[..], b"m", b"123456789m", b"10x", b"-1S", b"1.5S"] {
            assert_eq!(parse_timeout(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn messages_are_percent_encoded() {
        assert_eq!(percent_encode("no user 7"), "no user 7");
        assert_eq!(percent_encode("100% été"), "100%25 %C3%A9t%C3%A9");
        assert_eq!(percent_encode("a\nb"), "a%0Ab");
    }

    #[test]
    fn every_wirecall_code_has_a_grpc_code() {
        assert_eq!(Code::of(ErrorCode::UnknownMethod), Code::Unimplemented);
        assert_eq!(
            Code::of(ErrorCode::DeadlineExceeded),
            Code::DeadlineExceeded
        );
        assert_eq!(
            Code::of(ErrorCode::PermissionDenied),
            Code::PermissionDenied
        );
        assert_eq!(Code::of(ErrorCode::Overloaded), Code::Unavailable);
        assert_eq!(Code::of(ErrorCode::Other(99)), Code::Unknown);
    }
}
