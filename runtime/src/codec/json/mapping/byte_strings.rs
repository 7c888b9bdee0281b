//! Byte strings in JSON as the proto3 JSON mapping writes `bytes`: base64 text.
//!
//! serde_json writes a byte string (`Bytes`, `serde_bytes::ByteBuf`) as an array of numbers,
//! up to four bytes of text a byte, each parsed as a number. From protocol version 6 on a
//! byte string is a JSON string of its base64 instead: 1.33 bytes a byte, encoded and decoded
//! in bulk. Connections of older versions keep the arrays (their peers read nothing else), so
//! the writer takes the form from the connection ([`BytesAs`]); a reader takes both forms on
//! every version, which also keeps JSON stored or queued by older versions readable.
//!
//! Writing happens in serde_json's [`Formatter`], which serde_json hands every byte string:
//! base64 needs no escaping, so the text goes to the output as it is encoded, without the
//! pass over each character that a string written through the serializer gets.

use std::io;

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use serde_json::ser::{CompactFormatter, Formatter};

/// How a JSON writer writes byte strings: the connection's protocol version decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BytesAs {
    /// A string of base64, standard alphabet, padded (protocol version 6 and later).
    Base64,
    /// An array of numbers, as protocol versions 1 to 5 write them.
    Numbers,
}

/// serde_json's compact output, with byte strings as [`BytesAs`] says.
pub(crate) struct JsonFormatter(pub(crate) BytesAs);

/// Bytes of input encoded per piece of output: a multiple of 3, so that only the last piece
/// is padded.
const INPUT_PIECE: usize = 3 * 1024;

impl Formatter for JsonFormatter {
    fn write_byte_array<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        value: &[u8],
    ) -> io::Result<()> {
        match self.0 {
            BytesAs::Numbers => CompactFormatter.write_byte_array(writer, value),
            BytesAs::Base64 => {
                let mut text = [0u8; INPUT_PIECE / 3 * 4];
                writer.write_all(b"\"")?;
                for piece in value.chunks(INPUT_PIECE) {
                    let len = STANDARD
                        .encode_slice(piece, &mut text)
                        .map_err(|_| io::Error::other("a base64 piece outgrew its buffer"))?;
                    writer.write_all(&text[..len])?;
                }
                writer.write_all(b"\"")
            }
        }
    }
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
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    use serde_json::ser::Formatter;

    use super::{decode, BytesAs, JsonFormatter, INPUT_PIECE};

    #[test]
    fn the_formatter_writes_base64_across_pieces_as_one_text() {
        for len in [
            0,
            1,
            2,
            3,
            INPUT_PIECE - 1,
            INPUT_PIECE,
            INPUT_PIECE + 1,
            3 * INPUT_PIECE + 2,
        ] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let mut out = Vec::new();
            JsonFormatter(BytesAs::Base64)
                .write_byte_array(&mut out, &bytes)
                .unwrap();
            assert_eq!(
                out,
                format!("\"{}\"", STANDARD.encode(&bytes)).into_bytes(),
                "{len}"
            );
            assert_eq!(decode(&out[1..out.len() - 1]).unwrap(), bytes, "{len}");
        }
        let mut out = Vec::new();
        JsonFormatter(BytesAs::Numbers)
            .write_byte_array(&mut out, &[1, 255])
            .unwrap();
        assert_eq!(out, b"[1,255]");
    }

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
