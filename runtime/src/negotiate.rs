//! The handshake that opens every connection and picks its codec.
//!
//! ```text
//! client hello:  "WCAL"  version:u8  count:u8 (1..=16)  codec ids:[u8; count]  (preference order)
//!                token_len:u8 (0 = no token)  token:[u8; token_len]
//! server hello:  "WCAL"  version:u8  status:u8  chosen codec id:u8  count:u8  server codec ids:[u8; count]
//! ```
//!
//! The server answers every hello it can parse, even a refusal, so that the client can say
//! precisely why it was refused; after a refusal it closes the connection. A server that
//! requires a token checks it before it chooses a codec, and answers a wrong or missing one
//! with [`HelloStatus::AuthenticationFailed`], listing no codecs.

use std::fmt;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::codec::Codec;

pub use wirecall_wire::{
    HelloStatus, MAGIC, MAX_CODECS, MAX_TOKEN_LEN, MIN_PROTOCOL_VERSION, PROTOCOL_VERSION,
};

/// A list of codec ids as seen on the wire, printed by name where known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodecList(pub Vec<u8>);

impl CodecList {
    /// The ids of `codecs`.
    pub fn of(codecs: &[Codec]) -> Self {
        Self(codecs.iter().map(|c| c.id()).collect())
    }
}

impl fmt::Display for CodecList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, id) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match Codec::from_id(*id) {
                Some(codec) => f.write_str(codec.name())?,
                None => write!(f, "unknown({id})")?,
            }
        }
        f.write_str("]")
    }
}

/// Errors of the handshake.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NegotiationError {
    /// No codec is both offered by the client and allowed by the server.
    #[error("no common codec: the client offered {offered}, the server supports {supported}")]
    NoCommonCodec {
        /// The client's list, in its preference order.
        offered: CodecList,
        /// The server's list, in its preference order.
        supported: CodecList,
    },
    /// The two sides speak different protocol versions.
    #[error("protocol version mismatch: the client speaks {client}, the server {server}")]
    UnsupportedVersion {
        /// The client's version.
        client: u8,
        /// The server's version.
        server: u8,
    },
    /// The peer's first bytes are not `WCAL`: it is not a wirecall peer.
    #[error("the peer is not a wirecall endpoint (first bytes {0:02x?}, expected \"WCAL\")")]
    BadMagic([u8; 4]),
    /// The hello lists no codec, or more than [`MAX_CODECS`].
    #[error("the hello lists {0} codecs; 1 to {MAX_CODECS} are allowed")]
    BadCodecCount(u8),
    /// The server named a codec the client did not offer, or an unknown status.
    #[error("the server's hello is invalid: {0}")]
    BadServerHello(String),
    /// The server said the client hello was malformed.
    #[error("the server rejected the hello as malformed")]
    RejectedAsMalformed,
    /// The server is at its connection limit or shutting down.
    #[error("the server is busy (connection limit reached or shutting down); retry later")]
    Busy,
    /// The server requires a token and refused the one sent (wrong, missing, or too many
    /// failures from this address recently). The message never contains the token.
    #[error("authentication failed: the server refused the token (wrong or missing token, or too many failed attempts from this address)")]
    AuthenticationFailed,
    /// The peer answered with a TLS record: it expects TLS and this side spoke plain TCP.
    #[error("the peer speaks TLS: configure TLS on this side too (first bytes {0:02x?})")]
    PeerSpeaksTls([u8; 4]),
    /// The client was configured to offer no codec at all.
    #[error("no codec to offer: enable at least one codec feature and list at least one codec")]
    NothingToOffer,
    /// The handshake did not complete in time.
    #[error("the handshake did not complete within the timeout")]
    TimedOut,
    /// The connection failed during the handshake.
    #[error("i/o during the handshake: {0}")]
    Io(std::io::Error),
}

// The message shows the i/o error, so it is not also a `source()` (see `error.rs`).
impl From<std::io::Error> for NegotiationError {
    fn from(error: std::io::Error) -> Self {
        Self::Io(error)
    }
}

/// A parsed client hello.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientHello {
    /// The client's protocol version.
    pub version: u8,
    /// The offered codec ids, most preferred first (unknown ids are kept).
    pub codecs: Vec<u8>,
    /// The token (empty: none sent).
    pub token: Vec<u8>,
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
            .finish()
    }
}

impl ClientHello {
    /// Encodes a hello offering `codecs`, without a token.
    pub fn encode(codecs: &[Codec]) -> Vec<u8> {
        Self::encode_with_token(codecs, &[])
    }

    /// Encodes a hello offering `codecs` and presenting `token` (at most [`MAX_TOKEN_LEN`]
    /// bytes; longer tokens are refused by the builders before this is called).
    pub fn encode_with_token(codecs: &[Codec], token: &[u8]) -> Vec<u8> {
        Self::encode_for_version(PROTOCOL_VERSION, codecs, token)
    }

    /// Encodes a hello of protocol `version` (every version has this layout).
    pub fn encode_for_version(version: u8, codecs: &[Codec], token: &[u8]) -> Vec<u8> {
        let token = &token[..token.len().min(MAX_TOKEN_LEN)];
        let mut out = Vec::with_capacity(7 + codecs.len() + token.len());
        out.extend_from_slice(&MAGIC);
        out.push(version);
        out.push(codecs.len() as u8);
        out.extend(codecs.iter().map(|c| c.id()));
        out.push(token.len() as u8);
        out.extend_from_slice(token);
        out
    }

    /// Parses a hello from the start of `buf`. `Ok(None)` means more bytes are needed; on
    /// success also returns how many bytes the hello used.
    pub fn parse(buf: &[u8]) -> Result<Option<(Self, usize)>, NegotiationError> {
        check_magic(buf)?;
        let Some(&[version, count]) = buf.get(4..6) else {
            return Ok(None);
        };
        if count == 0 || count as usize > MAX_CODECS {
            return Err(NegotiationError::BadCodecCount(count));
        }
        let ids_end = 6 + count as usize;
        let (Some(ids), Some(&token_len)) = (buf.get(6..ids_end), buf.get(ids_end)) else {
            return Ok(None);
        };
        let end = ids_end + 1 + token_len as usize;
        let Some(token) = buf.get(ids_end + 1..end) else {
            return Ok(None);
        };
        Ok(Some((
            Self {
                version,
                codecs: ids.to_vec(),
                token: token.to_vec(),
            },
            end,
        )))
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
}

impl ServerHello {
    /// Encodes this hello.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + self.supported.len());
        out.extend_from_slice(&MAGIC);
        out.push(self.version);
        out.push(self.status as u8);
        out.push(self.codec);
        out.push(self.supported.len() as u8);
        out.extend_from_slice(&self.supported);
        out
    }

    /// Parses a hello from the start of `buf`; `Ok(None)` means more bytes are needed.
    pub fn parse(buf: &[u8]) -> Result<Option<(Self, usize)>, NegotiationError> {
        check_magic(buf)?;
        let Some(&[version, status, codec, count]) = buf.get(4..8) else {
            return Ok(None);
        };
        let status = HelloStatus::from_u8(status)
            .ok_or_else(|| NegotiationError::BadServerHello(format!("unknown status {status}")))?;
        if count as usize > MAX_CODECS {
            return Err(NegotiationError::BadCodecCount(count));
        }
        let end = 8 + count as usize;
        let Some(ids) = buf.get(8..end) else {
            return Ok(None);
        };
        Ok(Some((
            Self {
                version,
                status,
                codec,
                supported: ids.to_vec(),
            },
            end,
        )))
    }
}

fn check_magic(buf: &[u8]) -> Result<(), NegotiationError> {
    let seen = &buf[..buf.len().min(4)];
    if seen != &MAGIC[..seen.len()] {
        let mut magic = [0u8; 4];
        magic[..seen.len()].copy_from_slice(seen);
        return Err(NegotiationError::BadMagic(magic));
    }
    Ok(())
}

/// The server's first bytes, checked by a client: a TLS record header (handshake or alert,
/// version 3.x) means the server wants TLS, which deserves a clearer error than "bad magic".
fn check_server_magic(buf: &[u8; 4]) -> Result<(), NegotiationError> {
    match check_magic(buf) {
        Err(NegotiationError::BadMagic(magic)) if matches!(magic, [0x15 | 0x16, 0x03, ..]) => {
            Err(NegotiationError::PeerSpeaksTls(magic))
        }
        other => other,
    }
}

/// Which side's preference order wins when several codecs are common.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Preference {
    /// The first codec in the client's list that the server allows (the default: the client
    /// knows its payloads best).
    #[default]
    Client,
    /// The first codec in the server's list that the client offered.
    Server,
}

/// Picks the codec for a connection, or `None` when the lists share none. Unknown ids in the
/// offer are ignored, so newer clients can offer codecs older servers lack.
pub fn negotiate_codec(
    offered: &[u8],
    supported: &[Codec],
    preference: Preference,
) -> Option<Codec> {
    match preference {
        Preference::Client => offered
            .iter()
            .filter_map(|id| Codec::from_id(*id))
            .find(|c| supported.contains(c)),
        Preference::Server => supported
            .iter()
            .copied()
            .find(|c| offered.contains(&c.id())),
    }
}

/// What a handshake settled for a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// The connection's codec.
    pub codec: Codec,
    /// The connection's protocol version: the lower of the two sides' versions.
    pub version: u8,
}

/// Runs the client side: sends the offer (and the token, empty for none) in a hello of
/// protocol `version` and reads the verdict.
pub async fn client_handshake<S>(
    stream: &mut S,
    version: u8,
    offer: &[Codec],
    token: &[u8],
) -> Result<Negotiated, NegotiationError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if offer.is_empty() {
        return Err(NegotiationError::NothingToOffer);
    }
    stream
        .write_all(&ClientHello::encode_for_version(version, offer, token))
        .await?;
    stream.flush().await?;

    let mut buf = [0u8; 8 + MAX_CODECS];
    // Magic first, so that a non-wirecall server is named as such.
    let mut magic = [0u8; 4];
    stream.read_exact(&mut magic).await?;
    check_server_magic(&magic)?;
    buf[..4].copy_from_slice(&magic);
    stream.read_exact(&mut buf[4..8]).await?;
    let count = buf[7] as usize;
    if count > MAX_CODECS {
        return Err(NegotiationError::BadCodecCount(buf[7]));
    }
    stream.read_exact(&mut buf[8..8 + count]).await?;
    let (hello, _) = ServerHello::parse(&buf[..8 + count])?
        .ok_or_else(|| NegotiationError::BadServerHello("truncated".to_owned()))?;
    match hello.status {
        HelloStatus::Accepted => match Codec::from_id(hello.codec) {
            Some(_) if !(MIN_PROTOCOL_VERSION..=version).contains(&hello.version) => {
                Err(NegotiationError::BadServerHello(format!(
                    "the server accepted with protocol version {}; this client offered {version}",
                    hello.version
                )))
            }
            Some(codec) if offer.contains(&codec) => Ok(Negotiated {
                codec,
                version: hello.version,
            }),
            _ => Err(NegotiationError::BadServerHello(format!(
                "the server chose codec id {}, which was not offered",
                hello.codec
            ))),
        },
        HelloStatus::NoCommonCodec => Err(NegotiationError::NoCommonCodec {
            offered: CodecList::of(offer),
            supported: CodecList(hello.supported),
        }),
        HelloStatus::UnsupportedVersion => Err(NegotiationError::UnsupportedVersion {
            client: version,
            server: hello.version,
        }),
        HelloStatus::Malformed => Err(NegotiationError::RejectedAsMalformed),
        HelloStatus::Busy => Err(NegotiationError::Busy),
        HelloStatus::AuthenticationFailed => Err(NegotiationError::AuthenticationFailed),
    }
}

/// Runs the server side: reads the offer, answers, and returns the chosen codec. On an error the
/// refusal (when the hello was parsable enough to deserve one) has already been sent.
///
/// `authenticate` sees the token the client sent (empty when none) once the whole hello is
/// read and the version matches; when it returns false the client gets
/// [`HelloStatus::AuthenticationFailed`] and no codec is chosen.
///
/// `reveal_codecs` says whether refusals sent before the token is checked (a bad magic, codec
/// count or version) may list the server's codecs; a server that requires a token passes
/// `false`, so that an unauthenticated peer learns nothing about it.
///
/// `max_version` is the newest protocol version the server speaks: a hello of that version or
/// newer gets `max_version`, an older one its own. A server with `max_version` 1 behaves as a
/// version 1 server does and refuses every other version.
pub async fn server_handshake<S>(
    stream: &mut S,
    supported: &[Codec],
    preference: Preference,
    max_version: u8,
    reveal_codecs: bool,
    authenticate: impl FnOnce(&[u8]) -> bool,
) -> Result<Negotiated, NegotiationError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let before_auth: &[Codec] = if reveal_codecs { supported } else { &[] };
    let mut buf = [0u8; 7 + MAX_CODECS + MAX_TOKEN_LEN];
    // Magic first, so that a stranger is turned away after four bytes.
    stream.read_exact(&mut buf[..4]).await?;
    if let Err(err) = check_magic(&buf[..4]) {
        refuse_as(stream, max_version, HelloStatus::Malformed, before_auth).await;
        return Err(err);
    }
    stream.read_exact(&mut buf[4..6]).await?;
    let count = buf[5];
    if count == 0 || count as usize > MAX_CODECS {
        refuse_as(stream, max_version, HelloStatus::Malformed, before_auth).await;
        return Err(NegotiationError::BadCodecCount(count));
    }
    // The codec ids and the token length byte.
    let token_at = 7 + count as usize;
    stream.read_exact(&mut buf[6..token_at]).await?;
    let end = token_at + buf[token_at - 1] as usize;
    stream.read_exact(&mut buf[token_at..end]).await?;
    let (hello, _) = ClientHello::parse(&buf[..end])?
        .ok_or_else(|| NegotiationError::BadServerHello("truncated".to_owned()))?;
    let speaks = if max_version <= 1 {
        hello.version == 1
    } else {
        hello.version >= MIN_PROTOCOL_VERSION
    };
    if !speaks {
        refuse_as(
            stream,
            max_version,
            HelloStatus::UnsupportedVersion,
            before_auth,
        )
        .await;
        return Err(NegotiationError::UnsupportedVersion {
            client: hello.version,
            server: max_version,
        });
    }
    let version = hello.version.min(max_version);
    if !authenticate(&hello.token) {
        refuse_as(stream, version, HelloStatus::AuthenticationFailed, &[]).await;
        return Err(NegotiationError::AuthenticationFailed);
    }
    let Some(codec) = negotiate_codec(&hello.codecs, supported, preference) else {
        refuse_as(stream, version, HelloStatus::NoCommonCodec, supported).await;
        return Err(NegotiationError::NoCommonCodec {
            offered: CodecList(hello.codecs),
            supported: CodecList::of(supported),
        });
    };
    let reply = ServerHello {
        version,
        status: HelloStatus::Accepted,
        codec: codec.id(),
        supported: CodecList::of(supported).0,
    };
    stream.write_all(&reply.encode()).await?;
    stream.flush().await?;
    Ok(Negotiated { codec, version })
}

/// Sends a refusal carrying this build's protocol version; failures are ignored because the
/// connection is closed right after.
pub async fn refuse<S>(stream: &mut S, status: HelloStatus, supported: &[Codec])
where
    S: AsyncWrite + Unpin,
{
    refuse_as(stream, PROTOCOL_VERSION, status, supported).await;
}

/// Sends a refusal carrying protocol `version`.
pub async fn refuse_as<S>(stream: &mut S, version: u8, status: HelloStatus, supported: &[Codec])
where
    S: AsyncWrite + Unpin,
{
    let reply = ServerHello {
        version,
        status,
        codec: 0,
        supported: CodecList::of(supported).0,
    };
    let _ = stream.write_all(&reply.encode()).await;
    let _ = stream.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_hello_round_trips() {
        let bytes = ClientHello::encode(&[Codec::MessagePack, Codec::Json]);
        assert_eq!(bytes, b"WCAL\x02\x02\x02\x01\x00");
        let (hello, used) = ClientHello::parse(&bytes).unwrap().unwrap();
        assert_eq!(used, bytes.len());
        assert_eq!(hello.codecs, vec![2, 1]);
        assert!(hello.token.is_empty());
    }

    #[test]
    fn client_hello_carries_a_token() {
        let bytes = ClientHello::encode_with_token(&[Codec::Json], b"s3cret");
        assert_eq!(bytes, b"WCAL\x02\x01\x01\x06s3cret");
        let (hello, used) = ClientHello::parse(&bytes).unwrap().unwrap();
        assert_eq!(used, bytes.len());
        assert_eq!(hello.token, b"s3cret");
        assert!(!format!("{hello:?}").contains("s3cret"));
    }

    #[test]
    fn partial_hellos_with_a_token_ask_for_more() {
        let bytes = ClientHello::encode_with_token(&[Codec::Protobuf], b"token");
        for cut in 0..bytes.len() {
            assert_eq!(
                ClientHello::parse(&bytes[..cut]).unwrap(),
                None,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn partial_hellos_ask_for_more() {
        let bytes = ClientHello::encode(&[Codec::Protobuf]);
        for cut in 0..bytes.len() {
            assert_eq!(
                ClientHello::parse(&bytes[..cut]).unwrap(),
                None,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn wrong_magic_is_rejected_from_the_first_byte() {
        assert!(matches!(
            ClientHello::parse(b"G"),
            Err(NegotiationError::BadMagic(_))
        ));
        assert!(matches!(
            ClientHello::parse(b"GET / HTTP/1.1"),
            Err(NegotiationError::BadMagic(_))
        ));
    }

    #[test]
    fn empty_codec_list_is_malformed() {
        assert!(matches!(
            ClientHello::parse(b"WCAL\x01\x00"),
            Err(NegotiationError::BadCodecCount(0))
        ));
    }

    #[test]
    fn preference_decides_between_common_codecs() {
        let offered = [Codec::Json.id(), Codec::Protobuf.id()];
        let supported = [Codec::Protobuf, Codec::Json];
        assert_eq!(
            negotiate_codec(&offered, &supported, Preference::Client),
            Some(Codec::Json)
        );
        assert_eq!(
            negotiate_codec(&offered, &supported, Preference::Server),
            Some(Codec::Protobuf)
        );
        assert_eq!(
            negotiate_codec(&[99, 2], &supported, Preference::Client),
            None
        );
    }

    /// Both sides of one handshake over an in-memory stream.
    struct Sides {
        client_version: u8,
        offer: &'static [Codec],
        token: &'static [u8],
        server_codecs: &'static [Codec],
        server_max: u8,
        server_token: Option<&'static [u8]>,
    }

    impl Sides {
        const fn new(offer: &'static [Codec], server_codecs: &'static [Codec]) -> Self {
            Self {
                client_version: PROTOCOL_VERSION,
                offer,
                token: &[],
                server_codecs,
                server_max: PROTOCOL_VERSION,
                server_token: None,
            }
        }

        async fn run(
            self,
        ) -> (
            Result<Negotiated, NegotiationError>,
            Result<Negotiated, NegotiationError>,
        ) {
            let (mut client, mut server) = tokio::io::duplex(1024);
            let (codecs, max, expected) = (self.server_codecs, self.server_max, self.server_token);
            let server = tokio::spawn(async move {
                let authenticate = |token: &[u8]| expected.is_none_or(|expected| token == expected);
                server_handshake(
                    &mut server,
                    codecs,
                    Preference::Client,
                    max,
                    true,
                    authenticate,
                )
                .await
            });
            let client =
                client_handshake(&mut client, self.client_version, self.offer, self.token).await;
            (client, server.await.unwrap())
        }
    }

    #[tokio::test]
    async fn refusal_names_both_lists() {
        let (client, server) = Sides::new(&[Codec::Json], &[Codec::Protobuf]).run().await;
        assert_eq!(
            client.unwrap_err().to_string(),
            "no common codec: the client offered [json], the server supports [protobuf]"
        );
        assert!(matches!(
            server,
            Err(NegotiationError::NoCommonCodec { .. })
        ));
    }

    #[tokio::test]
    async fn a_refused_token_gets_status_5_and_no_codec_list() {
        let sides = Sides {
            token: b"guess-1234",
            server_token: Some(b"right"),
            ..Sides::new(&[Codec::Json], &[Codec::Json])
        };
        let (client, server) = sides.run().await;
        let err = client.unwrap_err();
        assert!(matches!(err, NegotiationError::AuthenticationFailed));
        assert!(!err.to_string().contains("guess-1234"));
        assert!(matches!(
            server,
            Err(NegotiationError::AuthenticationFailed)
        ));
    }

    async fn handshake_versions(client_version: u8, server_max: u8) -> Result<u8, String> {
        let sides = Sides {
            client_version,
            server_max,
            ..Sides::new(&[Codec::Json], &[Codec::Json])
        };
        match sides.run().await {
            (Ok(c), Ok(s)) => {
                assert_eq!(c, s, "both sides agree");
                Ok(c.version)
            }
            (Err(c), _) => Err(c.to_string()),
            (Ok(c), Err(s)) => panic!("client {c:?}, server {s}"),
        }
    }

    #[tokio::test]
    async fn the_lower_version_wins_and_a_version_1_server_refuses_newer_hellos() {
        assert_eq!(handshake_versions(2, 2).await, Ok(2));
        assert_eq!(handshake_versions(1, 2).await, Ok(1));
        assert_eq!(handshake_versions(1, 1).await, Ok(1));
        // A future client hello: same layout, the server answers with its own version.
        assert_eq!(handshake_versions(3, 2).await, Ok(2));
        let refused = handshake_versions(2, 1).await.unwrap_err();
        assert!(
            refused.contains("the client speaks 2, the server 1"),
            "{refused}"
        );
        assert!(handshake_versions(0, 2).await.is_err());
    }

    #[tokio::test]
    async fn a_tls_answer_is_named_as_such() {
        let (mut client, mut server) = tokio::io::duplex(1024);
        tokio::spawn(async move {
            let mut hello = [0u8; 7];
            server.read_exact(&mut hello).await.unwrap();
            // A TLS alert record, as a TLS server sends to a plain-text client.
            server
                .write_all(b"\x15\x03\x03\x00\x02\x02\x32")
                .await
                .unwrap();
        });
        let err = client_handshake(&mut client, PROTOCOL_VERSION, &[Codec::Json], &[])
            .await
            .unwrap_err();
        assert!(matches!(err, NegotiationError::PeerSpeaksTls(_)), "{err}");
    }
}
