//! The two hellos as bytes: encoding, and one incremental parser with no I/O that both
//! handshake drivers feed.
//!
//! A parser is given whatever has arrived so far and answers either with the hello and the
//! number of bytes it used, or with how many bytes the hello needs *at least* in total. A
//! driver reads exactly that many, so it never consumes a byte that belongs to the frames
//! after the hello, and errors surface as soon as the bytes that prove them are in: a wrong
//! magic after four bytes, a bad codec count after six.

use std::fmt;

use crate::codec::Codec;
use crate::wire::{
    HelloStatus, COMPRESSION_SINCE_VERSION, EXTENSION_COMPRESSION, EXTENSION_EARLY_CALLS,
    EXTENSION_MAX_FRAME_LEN, MAGIC, MAX_CODECS, MAX_COMPRESSION_ALGORITHMS, MAX_EXTENSIONS_LEN,
    MAX_TOKEN_LEN, PROTOCOL_VERSION,
};

use super::codec_list::CodecList;
use super::error::NegotiationError;

/// How far parsing a hello got.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Progress<T> {
    /// The hello is at least this many bytes long in total; read up to here and parse again.
    Need(usize),
    /// The hello, and how many bytes of the input it used.
    Done(T, usize),
}

impl<T> Progress<T> {
    fn into_option(self) -> Option<(T, usize)> {
        match self {
            Self::Need(_) => None,
            Self::Done(hello, used) => Some((hello, used)),
        }
    }
}

/// A parsed client hello.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientHello {
    /// The client's protocol version.
    pub version: u8,
    /// The offered codec ids, most preferred first (unknown ids are kept; none twice).
    pub codecs: Vec<u8>,
    /// The token (empty: none sent).
    pub token: Vec<u8>,
    /// The largest frame the client accepts, from the hello's extension block (version 2 and
    /// later; `None` when not announced).
    pub max_frame_len: Option<u32>,
    /// Request and Notify frames encoded in the first codec of `codecs` follow this hello
    /// without waiting for the server's (extension type 2, version 2 and later).
    pub early_calls: bool,
    /// The compression algorithm ids the client can decompress, most preferred first
    /// (extension type 3, version 5 and later; empty: none offered).
    pub compression: Vec<u8>,
}

impl fmt::Debug for ClientHello {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientHello")
            .field("version", &self.version)
            .field("codecs", &self.codecs)
            .field(
                "token",
                &format_args!("<{} bytes, redacted>", self.token.len()),
            )
            .field("max_frame_len", &self.max_frame_len)
            .field("early_calls", &self.early_calls)
            .field("compression", &self.compression)
            .finish()
    }
}

impl ClientHello {
    /// Encodes a hello offering `codecs`, without a token.
    pub fn encode(codecs: &[Codec]) -> Vec<u8> {
        Self::encode_with_token(codecs, &[])
    }

    /// Encodes a hello offering `codecs` and presenting `token`.
    pub fn encode_with_token(codecs: &[Codec], token: &[u8]) -> Vec<u8> {
        Self::encode_for_version(PROTOCOL_VERSION, codecs, token)
    }

    /// Encodes a hello of protocol `version` that announces no frame limit.
    pub fn encode_for_version(version: u8, codecs: &[Codec], token: &[u8]) -> Vec<u8> {
        Self {
            version,
            codecs: CodecList::of(codecs).0,
            token: token.to_vec(),
            max_frame_len: None,
            early_calls: false,
            compression: Vec::new(),
        }
        .to_bytes()
    }

    /// The hello as wire bytes. The builders refuse codec lists and tokens longer than a hello
    /// can carry before this is called; here the lists are cut to the limits so that the
    /// bytes always parse.
    pub fn to_bytes(&self) -> Vec<u8> {
        let codecs = &self.codecs[..self.codecs.len().min(MAX_CODECS)];
        let token = &self.token[..self.token.len().min(MAX_TOKEN_LEN)];
        let mut out = Vec::with_capacity(7 + codecs.len() + token.len() + 8);
        out.extend_from_slice(&MAGIC);
        out.push(self.version);
        out.push(codecs.len() as u8);
        out.extend_from_slice(codecs);
        out.push(token.len() as u8);
        out.extend_from_slice(token);
        if self.version >= 2 {
            // Compression is offered from version 5 on, at most as many algorithms as fit.
            let offered = if self.version >= COMPRESSION_SINCE_VERSION {
                self.compression.len().min(MAX_COMPRESSION_ALGORITHMS)
            } else {
                0
            };
            put_extensions(
                &mut out,
                self.max_frame_len,
                self.early_calls,
                &self.compression[..offered],
            );
        }
        out
    }

    /// Parses a hello from the start of `buf`. `Ok(None)` means more bytes are needed; on
    /// success also returns how many bytes the hello used.
    pub fn parse(buf: &[u8]) -> Result<Option<(Self, usize)>, NegotiationError> {
        Self::parse_progress(buf).map(Progress::into_option)
    }

    pub(crate) fn parse_progress(buf: &[u8]) -> Result<Progress<Self>, NegotiationError> {
        check_magic(buf)?;
        if buf.len() < 4 {
            return Ok(Progress::Need(4));
        }
        let Some(&[version, count]) = buf.get(4..6) else {
            return Ok(Progress::Need(6));
        };
        if count == 0 || count as usize > MAX_CODECS {
            return Err(NegotiationError::BadCodecCount(count));
        }
        let ids_end = 6 + count as usize;
        let (Some(ids), Some(&token_len)) = (buf.get(6..ids_end), buf.get(ids_end)) else {
            return Ok(Progress::Need(ids_end + 1));
        };
        check_no_duplicates(ids)?;
        let token_end = ids_end + 1 + token_len as usize;
        let Some(token) = buf.get(ids_end + 1..token_end) else {
            return Ok(Progress::Need(token_end));
        };
        // Compression is a version 5 extension: in an older client hello it is an unknown
        // entry, skipped, as an older server skips it.
        let compression_known = version >= COMPRESSION_SINCE_VERSION;
        let (extensions, end) = match parse_tail(buf, token_end, version, compression_known)? {
            Progress::Need(total) => return Ok(Progress::Need(total)),
            Progress::Done(extensions, end) => (extensions, end),
        };
        let hello = Self {
            version,
            codecs: ids.to_vec(),
            token: token.to_vec(),
            max_frame_len: extensions.max_frame_len,
            early_calls: extensions.early_calls,
            compression: extensions.compression,
        };
        Ok(Progress::Done(hello, end))
    }
}

/// A parsed server hello.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerHello {
    /// The server's protocol version.
    pub version: u8,
    /// The verdict.
    pub status: HelloStatus,
    /// The chosen codec id (0 unless accepted).
    pub codec: u8,
    /// The codecs the server allows, in its preference order.
    pub supported: Vec<u8>,
    /// The largest frame the server accepts, from the hello's extension block (version 2 and
    /// later; `None` when not announced).
    pub max_frame_len: Option<u32>,
    /// The server understands early calls (extension type 2, version 2 and later): a client
    /// may send its next connection's first calls right behind its hello.
    pub early_calls: bool,
    /// The compression algorithm the server chose for the connection (extension type 3,
    /// version 5 and later): one id, or empty for none. A hello that names more is kept as
    /// parsed, for the client to refuse.
    pub compression: Vec<u8>,
}

impl ServerHello {
    /// Encodes this hello.
    pub fn encode(&self) -> Vec<u8> {
        let supported = &self.supported[..self.supported.len().min(MAX_CODECS)];
        let mut out = Vec::with_capacity(8 + supported.len() + 8);
        out.extend_from_slice(&MAGIC);
        out.push(self.version);
        out.push(self.status as u8);
        out.push(self.codec);
        out.push(supported.len() as u8);
        out.extend_from_slice(supported);
        if self.version >= 2 {
            put_extensions(
                &mut out,
                self.max_frame_len,
                self.early_calls,
                &self.compression,
            );
        }
        out
    }

    /// Parses a hello from the start of `buf`; `Ok(None)` means more bytes are needed.
    pub fn parse(buf: &[u8]) -> Result<Option<(Self, usize)>, NegotiationError> {
        Self::parse_progress(buf).map(Progress::into_option)
    }

    pub(crate) fn parse_progress(buf: &[u8]) -> Result<Progress<Self>, NegotiationError> {
        check_magic(buf)?;
        if buf.len() < 4 {
            return Ok(Progress::Need(4));
        }
        let Some(&[version, status, codec, count]) = buf.get(4..8) else {
            return Ok(Progress::Need(8));
        };
        let status = HelloStatus::from_u8(status)
            .ok_or_else(|| NegotiationError::BadServerHello(format!("unknown status {status}")))?;
        if count as usize > MAX_CODECS {
            return Err(NegotiationError::BadCodecCount(count));
        }
        let ids_end = 8 + count as usize;
        let Some(ids) = buf.get(8..ids_end) else {
            return Ok(Progress::Need(ids_end));
        };
        check_no_duplicates(ids)?;
        // Kept at any version, for the client to refuse a choice below version 5.
        let (extensions, end) = match parse_tail(buf, ids_end, version, true)? {
            Progress::Need(total) => return Ok(Progress::Need(total)),
            Progress::Done(extensions, end) => (extensions, end),
        };
        let hello = Self {
            version,
            status,
            codec,
            supported: ids.to_vec(),
            max_frame_len: extensions.max_frame_len,
            early_calls: extensions.early_calls,
            compression: extensions.compression,
        };
        Ok(Progress::Done(hello, end))
    }
}

/// The extension block of a version-2 hello: `len:u16 BE`, then `type:u8 len:u8 value`
/// entries: the frame limit, early calls, then compression (when there are algorithms).
fn put_extensions(
    out: &mut Vec<u8>,
    max_frame_len: Option<u32>,
    early_calls: bool,
    compression: &[u8],
) {
    let compression_len = if compression.is_empty() {
        0
    } else {
        2 + compression.len() as u16
    };
    let len = max_frame_len.map_or(0u16, |_| 6) + if early_calls { 2 } else { 0 } + compression_len;
    out.extend_from_slice(&len.to_be_bytes());
    if let Some(max) = max_frame_len {
        out.extend_from_slice(&[EXTENSION_MAX_FRAME_LEN, 4]);
        out.extend_from_slice(&max.to_be_bytes());
    }
    if early_calls {
        out.extend_from_slice(&[EXTENSION_EARLY_CALLS, 0]);
    }
    if !compression.is_empty() {
        out.extend_from_slice(&[EXTENSION_COMPRESSION, compression.len() as u8]);
        out.extend_from_slice(compression);
    }
}

/// What a hello's extension block says (all absent in version 1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Extensions {
    max_frame_len: Option<u32>,
    early_calls: bool,
    compression: Vec<u8>,
}

/// What follows a hello's fixed fields at `at`: nothing in version 1, the extension block
/// from version 2 on (with `compression_known`, its compression entry is read; otherwise it
/// is skipped as unknown).
fn parse_tail(
    buf: &[u8],
    at: usize,
    version: u8,
    compression_known: bool,
) -> Result<Progress<Extensions>, NegotiationError> {
    if version >= 2 {
        parse_extensions(buf, at, compression_known)
    } else {
        Ok(Progress::Done(Extensions::default(), at))
    }
}

/// Reads the extension block that starts at `at`: the announced frame limit and early
/// calls, the compression algorithms, and where the hello ends. Unknown extension types are
/// skipped, so later versions can add some; a block over [`MAX_EXTENSIONS_LEN`], an entry
/// running past the block, a frame limit that is not four bytes or smaller than a frame
/// header, an early-calls entry with a value, a compression list that is empty, longer than
/// [`MAX_COMPRESSION_ALGORITHMS`] or names an id twice, or a known entry given twice is
/// malformed.
fn parse_extensions(
    buf: &[u8],
    at: usize,
    compression_known: bool,
) -> Result<Progress<Extensions>, NegotiationError> {
    let Some(&[high, low]) = buf.get(at..at + 2) else {
        return Ok(Progress::Need(at + 2));
    };
    let len = usize::from(u16::from_be_bytes([high, low]));
    if len > MAX_EXTENSIONS_LEN {
        return Err(NegotiationError::BadExtensions(format!(
            "{len} bytes of extensions; at most {MAX_EXTENSIONS_LEN} are allowed"
        )));
    }
    let end = at + 2 + len;
    let Some(mut block) = buf.get(at + 2..end) else {
        return Ok(Progress::Need(end));
    };
    let mut max_frame_len = None;
    let mut early_calls = false;
    let mut compression: Option<Vec<u8>> = None;
    while let [kind, value_len, rest @ ..] = block {
        let Some(value) = rest.get(..usize::from(*value_len)) else {
            return Err(NegotiationError::BadExtensions(format!(
                "extension {kind} claims {value_len} bytes; {} are left",
                rest.len()
            )));
        };
        if *kind == EXTENSION_MAX_FRAME_LEN {
            let Ok(bytes) = <[u8; 4]>::try_from(value) else {
                return Err(NegotiationError::BadExtensions(format!(
                    "the frame limit takes 4 bytes, not {value_len}"
                )));
            };
            let max = u32::from_be_bytes(bytes);
            if max < crate::wire::HEADER_LEN as u32 || max_frame_len.replace(max).is_some() {
                return Err(NegotiationError::BadExtensions(format!(
                    "a frame limit of {max} bytes, or a second one"
                )));
            }
        } else if *kind == EXTENSION_EARLY_CALLS {
            if !value.is_empty() || early_calls {
                return Err(NegotiationError::BadExtensions(format!(
                    "early calls with a {value_len}-byte value (it takes none), or twice"
                )));
            }
            early_calls = true;
        } else if *kind == EXTENSION_COMPRESSION && compression_known {
            let repeated = value
                .iter()
                .enumerate()
                .any(|(i, id)| value[..i].contains(id));
            if value.is_empty()
                || value.len() > MAX_COMPRESSION_ALGORITHMS
                || repeated
                || compression.replace(value.to_vec()).is_some()
            {
                return Err(NegotiationError::BadExtensions(format!(
                    "a compression list of {value_len} ids (1 to {MAX_COMPRESSION_ALGORITHMS}, \
                     all different), or a second one"
                )));
            }
        }
        block = &rest[value.len()..];
    }
    if let [stray] = block {
        return Err(NegotiationError::BadExtensions(format!(
            "a stray byte {stray:#04x} at the end of the extensions"
        )));
    }
    let extensions = Extensions {
        max_frame_len,
        early_calls,
        compression: compression.unwrap_or_default(),
    };
    Ok(Progress::Done(extensions, end))
}

fn check_no_duplicates(ids: &[u8]) -> Result<(), NegotiationError> {
    for (i, id) in ids.iter().enumerate() {
        if ids[..i].contains(id) {
            return Err(NegotiationError::DuplicateCodec(*id));
        }
    }
    Ok(())
}

pub(crate) fn check_magic(buf: &[u8]) -> Result<(), NegotiationError> {
    let seen = &buf[..buf.len().min(4)];
    if seen != &MAGIC[..seen.len()] {
        let mut magic = [0u8; 4];
        magic[..seen.len()].copy_from_slice(seen);
        return Err(NegotiationError::BadMagic(magic));
    }
    Ok(())
}

#[cfg(test)]
#[path = "hello_tests.rs"]
mod tests;
