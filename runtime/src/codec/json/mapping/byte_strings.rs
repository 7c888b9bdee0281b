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

use base64_simd::{Out, STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};
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
                    writer.write_all(STANDARD.encode(piece, Out::from_slice(&mut text)))?;
                }
                writer.write_all(b"\"")
            }
        }
    }
}

/// Why a JSON string is not a byte string's base64 text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotBase64 {
    /// One character too many or too few: no number of bytes spells this many.
    #[error(
        "{0} characters of base64 spell no whole number of bytes (one more than a multiple of 4)"
    )]
    Length(usize),
    /// More `=` than the text's length leaves room for, or `=` before its end.
    #[error("`=` is padding, only at the end and only as much as the length needs")]
    Padding,
    /// A character of neither alphabet, or characters of both.
    #[error(
        "a character outside base64's standard (`+`, `/`) and URL-safe (`-`, `_`) alphabets, \
         or characters of both"
    )]
    Alphabet,
}

/// Decodes base64 `text` with the reader's leniency, from the proto3 JSON mapping: the
/// standard or the URL-safe alphabet, padded or not (but never padded beyond what the length
/// needs); and, as most base64 readers, bits past the last byte need not be zero.
///
/// The whole groups of four go to a vectorised decoder (`base64-simd`, about a quarter of
/// the scalar `base64` crate's time for 64 KiB here), which is strict about the two last
/// points; the last two or three characters, where they apply, are read here. The standard
/// alphabet, the one writers use, is tried first: looking for the URL-safe characters up
/// front would cost a pass over the text.
pub(super) fn decode(text: &[u8]) -> Result<Vec<u8>, NotBase64> {
    let body = text
        .strip_suffix(b"==")
        .or_else(|| text.strip_suffix(b"="))
        .unwrap_or(text);
    let padding = text.len() - body.len();
    let left_over = body.len() % 4;
    let needs = match left_over {
        0 => 0,
        2 => 2,
        3 => 1,
        _ => return Err(NotBase64::Length(body.len())),
    };
    if padding > needs {
        return Err(NotBase64::Padding);
    }
    let (whole, last) = body.split_at(body.len() - left_over);
    let mut bytes = Vec::with_capacity(whole.len() / 4 * 3 + left_over.saturating_sub(1));
    for alphabet in [Alphabet::Standard, Alphabet::UrlSafe] {
        if alphabet.decode(whole, last, &mut bytes).is_ok() {
            return Ok(bytes);
        }
        bytes.clear();
    }
    // A `=` left in the body is not a character of either alphabet: say what it is.
    if body.contains(&b'=') {
        Err(NotBase64::Padding)
    } else {
        Err(NotBase64::Alphabet)
    }
}

/// One of the two alphabets a reader takes.
#[derive(Clone, Copy)]
enum Alphabet {
    Standard,
    UrlSafe,
}

impl Alphabet {
    /// Appends to `bytes` what `whole` (groups of four) and then `last` (0, 2 or 3
    /// characters, their spare bits ignored) spell in this alphabet.
    fn decode(self, whole: &[u8], last: &[u8], bytes: &mut Vec<u8>) -> Result<(), ()> {
        let (engine, letter_62, letter_63) = match self {
            Self::Standard => (STANDARD_NO_PAD, b'+', b'/'),
            Self::UrlSafe => (URL_SAFE_NO_PAD, b'-', b'_'),
        };
        engine.decode_append(whole, bytes).map_err(drop)?;
        let value = |letter: u8| -> Result<u32, ()> {
            Ok(match letter {
                b'A'..=b'Z' => letter - b'A',
                b'a'..=b'z' => letter - b'a' + 26,
                b'0'..=b'9' => letter - b'0' + 52,
                _ if letter == letter_62 => 62,
                _ if letter == letter_63 => 63,
                _ => return Err(()),
            }
            .into())
        };
        let mut bits = 0u32;
        for &letter in last {
            bits = bits << 6 | value(letter)?;
        }
        // Two characters are 12 bits (one byte and 4 spare), three are 18 (two and 2 spare).
        match last.len() {
            2 => bytes.push((bits >> 4) as u8),
            3 => bytes.extend_from_slice(&[(bits >> 10) as u8, (bits >> 2) as u8]),
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use base64_simd::STANDARD;
    use serde_json::ser::Formatter;

    use super::{decode, BytesAs, JsonFormatter, NotBase64, INPUT_PIECE};

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
                format!("\"{}\"", STANDARD.encode_to_string(&bytes)).into_bytes(),
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
        assert_eq!(decode(b"YWJjZ"), Err(NotBase64::Length(5)));
        for text in ["YWI==", "YWJj=", "=", "==", "YQ=x", "YQ===", "YW=j"] {
            assert_eq!(decode(text.as_bytes()), Err(NotBase64::Padding), "{text}");
        }
        for text in ["YW.j", "+/-_", "YWJj+-==", "YQ\n"] {
            assert_eq!(decode(text.as_bytes()), Err(NotBase64::Alphabet), "{text}");
        }
    }

    #[test]
    fn the_test_vectors_of_rfc_4648_are_read_and_written() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (bytes, text) in vectors {
            let mut out = Vec::new();
            JsonFormatter(BytesAs::Base64)
                .write_byte_array(&mut out, bytes.as_bytes())
                .unwrap();
            assert_eq!(out, format!("\"{text}\"").into_bytes());
            assert_eq!(decode(text.as_bytes()).unwrap(), bytes.as_bytes());
        }
    }

    /// The reader takes exactly what the `base64` crate took with the same leniency (either
    /// alphabet, padding indifferent, spare bits allowed), and reads it the same: every text
    /// of up to 6 characters over 9 letters that mix both alphabets and padding, and long
    /// texts whose whole groups go through the vectorised decoder, some with any byte at all.
    #[test]
    fn the_reader_agrees_with_the_base64_crate() {
        use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
        use base64::engine::DecodePaddingMode;
        use base64::{alphabet, Engine};

        let config = GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true);
        let standard = GeneralPurpose::new(&alphabet::STANDARD, config);
        let url_safe = GeneralPurpose::new(&alphabet::URL_SAFE, config);
        let reference = |text: &[u8]| match standard.decode(text) {
            Err(base64::DecodeError::InvalidByte(_, b'-' | b'_')) => url_safe.decode(text).ok(),
            decoded => decoded.ok(),
        };
        let letters = b"AQw9+/-_=";
        let mut checked = 0;
        for len in 0..=6u32 {
            for mut index in 0..letters.len().pow(len) {
                let mut text = Vec::new();
                for _ in 0..len {
                    text.push(letters[index % letters.len()]);
                    index /= letters.len();
                }
                assert_eq!(decode(&text).ok(), reference(&text), "{text:?}");
                checked += 1;
            }
        }
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for _ in 0..2000 {
            let len = 60 + next() % 70;
            let mut text: Vec<u8> = (0..len).map(|_| b"AQw9+/"[next() % 6]).collect();
            match next() % 5 {
                0 => text[next() % len] = letters[next() % letters.len()],
                1 => text.extend_from_slice(&b"=="[..next() % 3]),
                2 => text.iter_mut().for_each(|c| {
                    *c = match *c {
                        b'+' => b'-',
                        b'/' => b'_',
                        c => c,
                    }
                }),
                3 => text[next() % len] = next() as u8,
                _ => {}
            }
            assert_eq!(decode(&text).ok(), reference(&text), "{text:?}");
            checked += 1;
        }
        assert!(checked > 500_000, "{checked}");
    }
}
