//! The handshake that opens every connection and picks its codec.
//!
//! ```text
//! client hello:  "WCAL"  version:u8  count:u8 (1..=16)  codec ids:[u8; count]  (preference order)
//!                token_len:u8 (0 = no token)  token:[u8; token_len]
//!                (version >= 2) extensions_len:u16  extensions (the client's frame limit,
//!                early calls)
//! server hello:  "WCAL"  version:u8  status:u8  chosen codec id:u8  count:u8  server codec ids:[u8; count]
//!                (version >= 2) extensions_len:u16  extensions (the server's frame limit,
//!                early calls)
//! ```
//!
//! `hello.rs` turns hellos into bytes and back without I/O; the two drivers here read exactly
//! the bytes its parser asks for. The server answers every hello it can parse, even a
//! refusal, so that the client can say precisely why it was refused; after a refusal it
//! closes the connection. A server that requires a token checks it before it chooses a codec,
//! and answers a wrong or missing one with [`HelloStatus::AuthenticationFailed`], listing no
//! codecs.
//!
//! Early calls (book: "Early calls"): a client hello with the early-calls extension is
//! followed by frames encoded in the first codec it lists, sent before the server's answer.
//! The server then chooses that codec whatever its own preference, or refuses with
//! [`HelloStatus::EarlyCallsRefused`]; after any refusal it reads no frame. A server announces
//! in its `Accepted` hellos that it understands early calls, and a client sends them only to
//! a server that said so.

mod choice;
mod codec_list;
mod error;
mod hello;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::codec::Codec;

pub(crate) use choice::check_codec_list;
pub use choice::{negotiate_codec, Preference};
pub use codec_list::CodecList;
pub use error::NegotiationError;
pub use hello::{ClientHello, ServerHello};
pub use wirecall_wire::{
    HelloStatus, MAGIC, MAX_CODECS, MAX_TOKEN_LEN, MIN_PROTOCOL_VERSION, PROTOCOL_VERSION,
};

use hello::Progress;

/// What a handshake settled for a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// The connection's codec.
    pub codec: Codec,
    /// The connection's protocol version: the lower of the two sides' versions.
    pub version: u8,
    /// The largest frame the peer accepts, as its hello announced (version 2); `None` when it
    /// announced none.
    pub peer_max_frame_len: Option<u32>,
    /// The peer's hello carried the early-calls extension: on the client, the server
    /// understands early calls; on the server, early frames follow the client's hello.
    pub early_calls: bool,
}

impl Negotiated {
    /// The largest frame this side may send: its own limit `own` (which bounds both
    /// directions), lowered to the peer's announced one.
    pub fn send_limit(&self, own: u32) -> u32 {
        self.peer_max_frame_len.map_or(own, |peer| peer.min(own))
    }
}

/// Reads exactly the bytes a hello parser asks for, from `stream` into `buf`, until it has
/// the whole hello. The outer error is the connection's; the inner one is the parser's, which
/// the server answers with a refusal.
async fn read_hello<S, T>(
    stream: &mut S,
    buf: &mut [u8],
    parse: impl Fn(&[u8]) -> Result<Progress<T>, NegotiationError>,
) -> std::io::Result<Result<T, NegotiationError>>
where
    S: AsyncRead + Unpin,
{
    let mut filled = 0;
    loop {
        match parse(&buf[..filled]) {
            Ok(Progress::Done(hello, _)) => return Ok(Ok(hello)),
            Ok(Progress::Need(total)) => {
                // The parsers bound every length, so `buf` (sized for the longest hello)
                // always has room; refuse rather than trust that.
                let Some(more) = buf.get_mut(filled..total) else {
                    return Ok(Err(NegotiationError::BadExtensions(format!(
                        "a hello of {total} bytes is longer than any valid one"
                    ))));
                };
                stream.read_exact(more).await?;
                filled = total;
            }
            Err(error) => return Ok(Err(error)),
        }
    }
}

/// The longest possible client hello: 16 codecs, a 255-byte token, the largest extensions.
const MAX_CLIENT_HELLO: usize =
    7 + MAX_CODECS + MAX_TOKEN_LEN + 2 + wirecall_wire::MAX_EXTENSIONS_LEN;
/// The longest possible server hello.
const MAX_SERVER_HELLO: usize = 8 + MAX_CODECS + 2 + wirecall_wire::MAX_EXTENSIONS_LEN;

/// Runs the client side: sends `hello` and reads the verdict.
pub async fn client_handshake<S>(
    stream: &mut S,
    hello: &ClientHello,
) -> Result<Negotiated, NegotiationError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    Ok(client_handshake_listed(stream, hello).await?.0)
}

/// [`client_handshake`], also returning the codecs the server allows (its accepting hello
/// lists them).
pub(crate) async fn client_handshake_listed<S>(
    stream: &mut S,
    hello: &ClientHello,
) -> Result<(Negotiated, Vec<u8>), NegotiationError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if hello.codecs.is_empty() {
        return Err(NegotiationError::NothingToOffer);
    }
    stream.write_all(&hello.to_bytes()).await?;
    stream.flush().await?;
    read_verdict(stream, hello).await
}

/// Reads the server's answer to `hello`, which was sent on `stream`, and checks it against
/// what the hello offered (with early calls: that the server chose the codec they are
/// encoded in). Also returns the codecs the server allows.
pub(crate) async fn read_verdict<S>(
    stream: &mut S,
    hello: &ClientHello,
) -> Result<(Negotiated, Vec<u8>), NegotiationError>
where
    S: AsyncRead + Unpin,
{
    let version = hello.version;
    let mut buf = vec![0u8; MAX_SERVER_HELLO];
    // A TLS record where the magic should be means the server wants TLS, which deserves a
    // clearer error than "bad magic".
    let parse = |bytes: &[u8]| {
        ServerHello::parse_progress(bytes).map_err(|error| match error {
            NegotiationError::BadMagic(magic) if matches!(magic, [0x15 | 0x16, 0x03, ..]) => {
                NegotiationError::PeerSpeaksTls(magic)
            }
            other => other,
        })
    };
    let server = read_hello(stream, &mut buf, parse).await??;
    let offered = |id: u8| hello.codecs.contains(&id);
    match server.status {
        HelloStatus::Accepted => match Codec::from_id(server.codec) {
            Some(_) if !(MIN_PROTOCOL_VERSION..=version).contains(&server.version) => {
                Err(NegotiationError::BadServerHello(format!(
                    "the server accepted with protocol version {}; this client offered {version}",
                    server.version
                )))
            }
            Some(codec) if hello.early_calls && hello.codecs.first() != Some(&codec.id()) => {
                Err(NegotiationError::BadServerHello(format!(
                    "the server chose {codec}, not {} in which the early calls were sent",
                    CodecList(hello.codecs.iter().take(1).copied().collect())
                )))
            }
            Some(_) if hello.early_calls && server.version != version => {
                Err(NegotiationError::BadServerHello(format!(
                    "the server accepted early calls of protocol version {version} with version {}",
                    server.version
                )))
            }
            Some(codec) if offered(codec.id()) => Ok((
                Negotiated {
                    codec,
                    version: server.version,
                    peer_max_frame_len: server.max_frame_len,
                    early_calls: server.early_calls,
                },
                server.supported,
            )),
            _ => Err(NegotiationError::BadServerHello(format!(
                "the server chose codec id {}, which was not offered",
                server.codec
            ))),
        },
        HelloStatus::NoCommonCodec => Err(NegotiationError::NoCommonCodec {
            offered: CodecList(hello.codecs.clone()),
            supported: CodecList(server.supported),
        }),
        HelloStatus::UnsupportedVersion => Err(NegotiationError::UnsupportedVersion {
            client: version,
            server: server.version,
        }),
        HelloStatus::Malformed => Err(NegotiationError::RejectedAsMalformed),
        HelloStatus::Busy => Err(NegotiationError::Busy),
        HelloStatus::AuthenticationFailed => Err(NegotiationError::AuthenticationFailed),
        HelloStatus::EarlyCallsRefused if hello.early_calls => {
            Err(NegotiationError::EarlyCallsRefused {
                codec: CodecList(hello.codecs.iter().take(1).copied().collect()),
                supported: CodecList(server.supported),
            })
        }
        HelloStatus::EarlyCallsRefused => Err(NegotiationError::BadServerHello(
            "the server refused early calls, and none were sent".to_owned(),
        )),
    }
}

/// What the server side of a handshake offers and requires.
#[derive(Clone, Copy, Debug)]
pub struct ServerHandshake<'a> {
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
pub async fn server_handshake<S>(
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
    let reply = ServerHello {
        version,
        status: HelloStatus::Accepted,
        codec: chosen.id(),
        supported: CodecList::of(supported).0,
        max_frame_len: (version >= 2).then_some(max_frame_len),
        early_calls: version >= 2,
    };
    stream.write_all(&reply.encode()).await?;
    stream.flush().await?;
    Ok(Negotiated {
        codec: chosen,
        version,
        // A version-1 connection has no extensions, whatever the hello carried.
        peer_max_frame_len: hello.max_frame_len.filter(|_| version >= 2),
        early_calls: early,
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
        max_frame_len: None,
        early_calls: false,
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
        assert_eq!(bytes, b"WCAL\x02\x02\x02\x01\x00\x00\x00");
        let (hello, used) = ClientHello::parse(&bytes).unwrap().unwrap();
        assert_eq!(used, bytes.len());
        assert_eq!(hello.codecs, vec![2, 1]);
        assert!(hello.token.is_empty());
    }

    #[test]
    fn client_hello_carries_a_token() {
        let bytes = ClientHello::encode_with_token(&[Codec::Json], b"s3cret");
        assert_eq!(bytes, b"WCAL\x02\x01\x01\x06s3cret\x00\x00");
        let (hello, used) = ClientHello::parse(&bytes).unwrap().unwrap();
        assert_eq!(used, bytes.len());
        assert_eq!(hello.token, b"s3cret");
        assert!(!format!("{hello:?}").contains("s3cret"));
    }

    #[test]
    fn partial_hellos_ask_for_more() {
        for token in [&b""[..], b"token"] {
            let bytes = ClientHello::encode_with_token(&[Codec::Protobuf], token);
            for cut in 0..bytes.len() {
                assert_eq!(
                    ClientHello::parse(&bytes[..cut]).unwrap(),
                    None,
                    "cut at {cut}"
                );
            }
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
                };
                server_handshake(&mut server, offer, authenticate).await
            });
            let hello = ClientHello {
                version: self.client_version,
                codecs: CodecList::of(self.offer).0,
                token: self.token.to_vec(),
                max_frame_len: Some(CLIENT_MAX_FRAME),
                early_calls: false,
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
        }
        .encode();
        // Version 1 has no extension block to carry it.
        assert!(!ServerHello::parse(&bytes).unwrap().unwrap().0.early_calls);
    }

    #[tokio::test]
    async fn a_tls_answer_is_named_as_such() {
        let (mut client, mut server) = tokio::io::duplex(1024);
        tokio::spawn(async move {
            let mut hello = [0u8; 9];
            server.read_exact(&mut hello).await.unwrap();
            // A TLS alert record, as a TLS server sends to a plain-text client.
            server
                .write_all(b"\x15\x03\x03\x00\x02\x02\x32")
                .await
                .unwrap();
        });
        let hello = ClientHello {
            version: PROTOCOL_VERSION,
            codecs: vec![Codec::Json.id()],
            token: Vec::new(),
            max_frame_len: None,
            early_calls: false,
        };
        let err = client_handshake(&mut client, &hello).await.unwrap_err();
        assert!(matches!(err, NegotiationError::PeerSpeaksTls(_)), "{err}");
    }
}
