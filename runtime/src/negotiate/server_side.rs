//! The server side of the handshake: read the client's hello, check its version and token,
//! choose the codec and answer, or refuse with a status the client can explain.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::choice::{negotiate_codec, Preference};
use super::codec_list::CodecList;
use super::error::NegotiationError;
use super::hello::{ClientHello, ServerHello};
use super::negotiated::Negotiated;
use super::read_hello::read_hello;
use crate::codec::Codec;
use crate::compression::Compression;
use crate::wire::{
    HelloStatus, COMPRESSION_SINCE_VERSION, MAX_CODECS, MAX_EXTENSIONS_LEN, MAX_TOKEN_LEN,
    MIN_PROTOCOL_VERSION, PROTOCOL_VERSION,
};

/// The longest possible client hello: 16 codecs, a 255-byte token, the largest extensions.
const MAX_CLIENT_HELLO: usize = 7 + MAX_CODECS + MAX_TOKEN_LEN + 2 + MAX_EXTENSIONS_LEN;

/// What the server side of a handshake offers and requires.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ServerHandshake<'a> {
    /// The codecs clients may pick, in the server's preference order.
    pub supported: &'a [Codec],
    /// Whose order wins when several codecs are common.
    pub preference: Preference,
    /// The newest protocol version the server speaks: a hello of that version or newer gets
    /// `max_version`, an older one its own. A server with `max_version` 1 behaves as a
    /// version 1 server does and refuses every other version.
    pub max_version: u8,
    /// Whether refusals sent before the token is checked (a malformed hello, a version
    /// mismatch) may list the server's codecs; a server that requires a token says `false`,
    /// so that an unauthenticated peer learns nothing about it.
    pub reveal_codecs: bool,
    /// The largest frame the server accepts, announced to version-2 clients.
    pub max_frame_len: u32,
    /// The compression the server allows (version 5): chosen when the client offers it.
    pub compression: Compression,
}

/// Runs the server side: reads the offer, answers, and returns the chosen codec. On an error the
/// refusal (when the hello was parsable enough to deserve one) has already been sent.
///
/// `authenticate` sees the token the client sent (empty when none) once the whole hello is
/// read and the version matches; when it returns false the client gets
/// [`HelloStatus::AuthenticationFailed`] and no codec is chosen.
///
/// A hello announcing early calls gets the first codec it lists when the server allows it,
/// whatever `preference` says, and [`HelloStatus::EarlyCallsRefused`] otherwise. After a
/// refusal of such a hello the early frames are read and discarded (never run) until the
/// client closes, so that closing does not reset the connection under the refusal.
pub(crate) async fn server_handshake<S>(
    stream: &mut S,
    config: ServerHandshake<'_>,
    authenticate: impl FnOnce(&[u8]) -> bool,
) -> Result<Negotiated, NegotiationError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let ServerHandshake {
        supported,
        preference,
        max_version,
        reveal_codecs,
        max_frame_len,
        compression,
    } = config;
    let before_auth: &[Codec] = if reveal_codecs { supported } else { &[] };
    let mut buf = vec![0u8; MAX_CLIENT_HELLO];
    // A malformed hello is refused as soon as the bytes that prove it are in: a stranger is
    // turned away after four bytes.
    let hello = match read_hello(stream, &mut buf, ClientHello::parse_progress).await? {
        Ok(hello) => hello,
        Err(error) => {
            refuse_as(stream, max_version, HelloStatus::Malformed, before_auth).await;
            return Err(error);
        }
    };
    // A version-1 hello has no extensions, so never early calls.
    let early = hello.early_calls;
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
        discard_early_frames(stream, early).await;
        return Err(NegotiationError::UnsupportedVersion {
            client: hello.version,
            server: max_version,
        });
    }
    let version = hello.version.min(max_version);
    if !authenticate(&hello.token) {
        refuse_as(stream, version, HelloStatus::AuthenticationFailed, &[]).await;
        discard_early_frames(stream, early).await;
        return Err(NegotiationError::AuthenticationFailed);
    }
    let chosen = if early {
        // The early frames are encoded in the first codec offered: that one or none.
        let first = hello.codecs.iter().take(1).copied().collect::<Vec<u8>>();
        match negotiate_codec(&first, supported, preference) {
            Some(codec) => codec,
            None => {
                refuse_as(stream, version, HelloStatus::EarlyCallsRefused, supported).await;
                discard_early_frames(stream, early).await;
                return Err(NegotiationError::EarlyCallsRefused {
                    codec: CodecList(first),
                    supported: CodecList::of(supported),
                });
            }
        }
    } else {
        let Some(codec) = negotiate_codec(&hello.codecs, supported, preference) else {
            refuse_as(stream, version, HelloStatus::NoCommonCodec, supported).await;
            return Err(NegotiationError::NoCommonCodec {
                offered: CodecList(hello.codecs),
                supported: CodecList::of(supported),
            });
        };
        codec
    };
    let compression = if version >= COMPRESSION_SINCE_VERSION {
        compression.choose(&hello.compression)
    } else {
        None
    };
    let reply = ServerHello {
        version,
        status: HelloStatus::Accepted,
        codec: chosen.id(),
        supported: CodecList::of(supported).0,
        max_frame_len: (version >= 2).then_some(max_frame_len),
        early_calls: version >= 2,
        compression: compression
            .map(|algorithm| algorithm.id())
            .into_iter()
            .collect(),
    };
    stream.write_all(&reply.encode()).await?;
    stream.flush().await?;
    Ok(Negotiated {
        codec: chosen,
        version,
        // A version-1 connection has no extensions, whatever the hello carried.
        peer_max_frame_len: hello.max_frame_len.filter(|_| version >= 2),
        early_calls: early,
        compression,
    })
}

/// The most early-frame bytes read and dropped after refusing an early-calls hello.
const MAX_DISCARDED: usize = 256 * 1024;

/// After refusing a hello that announced early calls: ends the write side (the refusal goes
/// out with it) and reads and drops what the client sent until it closes, at most
/// [`MAX_DISCARDED`] bytes and within the handshake deadline the caller imposes. Closing a
/// socket with unread bytes resets the connection, and a reset can overtake the refusal at
/// the client; draining lets the client read why it was refused. No frame is parsed, none runs.
async fn discard_early_frames<S>(stream: &mut S, early: bool)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if !early {
        return;
    }
    let _ = stream.shutdown().await;
    // On the heap: on the stack it would be part of every handshake's future, refused or not,
    // and a server opening many connections at once holds many of those.
    let mut scratch = vec![0u8; 4096];
    let mut discarded = 0;
    while discarded < MAX_DISCARDED {
        match stream.read(&mut scratch).await {
            Ok(0) | Err(_) => break,
            Ok(n) => discarded += n,
        }
    }
}

/// Sends a refusal carrying this build's protocol version; failures are ignored because the
/// connection is closed right after.
pub(crate) async fn refuse<S>(stream: &mut S, status: HelloStatus, supported: &[Codec])
where
    S: AsyncWrite + Unpin,
{
    refuse_as(stream, PROTOCOL_VERSION, status, supported).await;
}

/// Sends a refusal carrying protocol `version`.
pub(crate) async fn refuse_as<S>(
    stream: &mut S,
    version: u8,
    status: HelloStatus,
    supported: &[Codec],
) where
    S: AsyncWrite + Unpin,
{
    let reply = ServerHello {
        version,
        status,
        codec: 0,
        supported: CodecList::of(supported).0,
        max_frame_len: None,
        early_calls: false,
        compression: Vec::new(),
    };
    let _ = stream.write_all(&reply.encode()).await;
    let _ = stream.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::negotiate::client_side::{client_handshake, read_verdict};

    const CLIENT_MAX_FRAME: u32 = 4096;
    const SERVER_MAX_FRAME: u32 = 1 << 20;

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
                let offer = ServerHandshake {
                    supported: codecs,
                    preference: Preference::Client,
                    max_version: max,
                    reveal_codecs: true,
                    max_frame_len: SERVER_MAX_FRAME,
                    compression: Compression::default(),
                };
                server_handshake(&mut server, offer, authenticate).await
            });
            let hello = ClientHello {
                version: self.client_version,
                codecs: CodecList::of(self.offer).0,
                token: self.token.to_vec(),
                max_frame_len: Some(CLIENT_MAX_FRAME),
                early_calls: false,
                compression: Compression::default().offer(),
            };
            let client = client_handshake(&mut client, &hello).await;
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
                assert_eq!(
                    (c.codec, c.version),
                    (s.codec, s.version),
                    "both sides agree"
                );
                // Each side learns the other's frame limit, from version 2 on.
                let announced = c.version >= 2;
                assert_eq!(c.peer_max_frame_len, announced.then_some(SERVER_MAX_FRAME));
                assert_eq!(s.peer_max_frame_len, announced.then_some(CLIENT_MAX_FRAME));
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

    /// A client hello with early calls offering `offer`, then an early frame's bytes, to a
    /// server allowing `supported` that prefers its own order; the client side reads the
    /// verdict and closes. Returns both outcomes and what the server left unread.
    async fn early_hello(
        offer: &[Codec],
        supported: &'static [Codec],
    ) -> (
        Result<Negotiated, NegotiationError>,
        Result<Negotiated, NegotiationError>,
        Vec<u8>,
    ) {
        let (mut client, mut server) = tokio::io::duplex(4096);
        let server = tokio::spawn(async move {
            let config = ServerHandshake {
                supported,
                preference: Preference::Server,
                max_version: PROTOCOL_VERSION,
                reveal_codecs: true,
                max_frame_len: SERVER_MAX_FRAME,
                compression: Compression::default(),
            };
            let outcome = server_handshake(&mut server, config, |_| true).await;
            let mut rest = Vec::new();
            if outcome.is_ok() {
                server.read_to_end(&mut rest).await.unwrap();
            }
            (outcome, rest)
        });
        let hello = ClientHello {
            version: PROTOCOL_VERSION,
            codecs: CodecList::of(offer).0,
            token: Vec::new(),
            max_frame_len: Some(CLIENT_MAX_FRAME),
            early_calls: true,
            compression: Vec::new(),
        };
        client.write_all(&hello.to_bytes()).await.unwrap();
        client.write_all(b"an early frame").await.unwrap();
        let verdict = read_verdict(&mut client, &hello).await.map(|(n, _)| n);
        drop(client);
        let (outcome, rest) = server.await.unwrap();
        (verdict, outcome, rest)
    }

    #[tokio::test]
    async fn early_calls_get_the_first_codec_whatever_the_server_prefers() {
        let (client, server, rest) = early_hello(
            &[Codec::Json, Codec::Protobuf],
            &[Codec::Protobuf, Codec::Json],
        )
        .await;
        let client = client.unwrap();
        assert_eq!((client.codec, client.early_calls), (Codec::Json, true));
        assert_eq!(server.unwrap().codec, Codec::Json);
        // The early frame is left for the connection to serve as its first.
        assert_eq!(rest, b"an early frame");
    }

    #[tokio::test]
    async fn early_calls_in_a_codec_the_server_lacks_are_refused_unread() {
        let (client, server, _) =
            early_hello(&[Codec::Json, Codec::Protobuf], &[Codec::Protobuf]).await;
        let err = client.unwrap_err();
        assert_eq!(
            err.to_string(),
            "early calls refused: the server does not allow [json], the codec they were sent \
             in; it supports [protobuf]"
        );
        assert!(matches!(
            server,
            Err(NegotiationError::EarlyCallsRefused { .. })
        ));
    }

    #[tokio::test]
    async fn every_accepted_version_2_hello_announces_early_calls() {
        let sides = Sides::new(
            &[Codec::Json, Codec::Protobuf],
            &[Codec::Protobuf, Codec::Json],
        );
        let (client, _) = sides.run().await;
        let client = client.unwrap();
        assert_eq!((client.codec, client.early_calls), (Codec::Json, true));
        let bytes = ServerHello {
            version: 1,
            status: HelloStatus::Accepted,
            codec: 1,
            supported: vec![1],
            max_frame_len: None,
            early_calls: true,
            compression: Vec::new(),
        }
        .encode();
        // Version 1 has no extension block to carry it.
        assert!(!ServerHello::parse(&bytes).unwrap().unwrap().0.early_calls);
    }
}
