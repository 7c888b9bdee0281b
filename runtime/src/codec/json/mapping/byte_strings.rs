//! Byte strings in JSON as the proto3 JSON mapping writes `bytes`: base64 text.
//!
//! serde_json writes a byte string (`Bytes`, `serde_bytes::ByteBuf`) as an array of numbers,
//! up to four bytes of text a byte, each parsed as a number. From protocol version 6 on a
//! byte string is a JSON string of its base64 instead: 1.33 bytes a byte, encoded and decoded
//! in bulk. Connections of older versions keep the arrays (their peers read nothing else), so
//! the writer takes the form from the connection ([`BytesAs`]); a reader takes both forms on
//! every version, which also keeps JSON stored or queued by older versions readable.

use std::fmt;

use base64::alphabet;
use base64::display::Base64Display;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::Engine;

/// How a JSON writer writes byte strings: the connection's protocol version decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BytesAs {
    /// A string of base64, standard alphabet, padded (protocol version 6 and later).
    Base64,
    /// An array of numbers, as protocol versions 1 to 5 write them.
    Numbers,
}

/// `bytes` as base64 text, written in pieces by whatever formats it (no `String` in between).
pub(super) fn base64_text(bytes: &[u8]) -> impl fmt::Display + '_ {
    Base64Display::new(bytes, &STANDARD)
}

/// The reader's leniency, from the proto3 JSON mapping: either alphabet, padded or not; and,
/// as most base64 readers, bits past the last byte need not be zero.
const READ_CONFIG: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_padding_mode(DecodePaddingMode::Indifferent)
    .with_decode_allow_trailing_bits(true);
const READ_STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, READ_CONFIG);
const READ_URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, READ_CONFIG);

/// Decodes base64 `text` in the standard or the URL-safe alphabet, with or without padding.
/// The standard alphabet, the one writers use, is tried first: looking for the URL-safe
/// characters up front would cost a pass over the text (about a sixth of a bulk payload's
/// decoding).
pub(super) fn decode(text: &[u8]) -> Result<Vec<u8>, base64::DecodeError> {
    match READ_STANDARD.decode(text) {
        Err(base64::DecodeError::InvalidByte(_, b'-' | b'_')) => READ_URL_SAFE.decode(text),
        decoded => decoded,
    }
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn both_alphabets_are_read_with_or_without_padding() {
        let bytes = [0xfb, 0xff, 0xbf, 0x00];
        for text in ["+/+/AA==", "+/+/AA", "-_-_AA==", "-_-_AA"] {
            assert_eq!(decode(text.as_bytes()).unwrap(), bytes, "{text}");
        }
        assert_eq!(decode(b"").unwrap(), b"");
        assert_eq!(decode(b"YR==").unwrap(), b"a");
    }

    #[test]
    fn text_that_is_not_base64_is_refused() {
        for text in ["a", "ab!c", "+/-_", "YQ==YQ==", "Y==="] {
            assert!(decode(text.as_bytes()).is_err(), "{text}");
        }
    }
}
