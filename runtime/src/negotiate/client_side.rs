//! The client side of the handshake: send the hello, read the server's verdict and check it
//! against what was offered.

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::codec_list::CodecList;
use super::error::NegotiationError;
use super::hello::{ClientHello, ServerHello};
use super::negotiated::Negotiated;
use super::read_hello::read_hello;
use crate::codec::Codec;
use crate::compression::Algorithm;
use crate::wire::{
    HelloStatus, COMPRESSION_SINCE_VERSION, MAX_CODECS, MAX_EXTENSIONS_LEN, MIN_PROTOCOL_VERSION,
};

/// The longest possible server hello.
const MAX_SERVER_HELLO: usize = 8 + MAX_CODECS + 2 + MAX_EXTENSIONS_LEN;

/// Runs the client side: sends `hello` and reads the verdict (the tests' handshake; the
/// channel uses [`client_handshake_listed`]).
#[cfg(test)]
pub(crate) async fn client_handshake<S>(
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
                    compression: chosen_compression(hello, &server)?,
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

/// The compression an accepting `server` hello chose: none, or one algorithm that `hello`
/// offered on a connection of version 5 or later. Anything else is a broken server.
fn chosen_compression(
    hello: &ClientHello,
    server: &ServerHello,
) -> Result<Option<Algorithm>, NegotiationError> {
    match server.compression[..] {
        [] => Ok(None),
        [id] if server.version >= COMPRESSION_SINCE_VERSION && hello.compression.contains(&id) => {
            Ok(Algorithm::from_id(id))
        }
        _ => Err(NegotiationError::BadServerHello(format!(
            "the server chose compression {:?} on a version {} connection; this client offered \
             {:?}",
            server.compression, server.version, hello.compression
        ))),
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;
    use crate::wire::PROTOCOL_VERSION;

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
            compression: Vec::new(),
        };
        let err = client_handshake(&mut client, &hello).await.unwrap_err();
        assert!(matches!(err, NegotiationError::PeerSpeaksTls(_)), "{err}");
    }

    /// The verdict on a hello offering `offered` compression, from a server hello of
    /// `version` naming `chosen`.
    async fn verdict(
        offered: Vec<u8>,
        version: u8,
        chosen: Vec<u8>,
    ) -> Result<Negotiated, NegotiationError> {
        let (mut client, mut server) = tokio::io::duplex(1024);
        let reply = ServerHello {
            version,
            status: HelloStatus::Accepted,
            codec: Codec::Json.id(),
            supported: vec![Codec::Json.id()],
            max_frame_len: None,
            early_calls: true,
            compression: chosen,
        };
        server.write_all(&reply.encode()).await.unwrap();
        let hello = ClientHello {
            version: PROTOCOL_VERSION,
            codecs: vec![Codec::Json.id()],
            token: Vec::new(),
            max_frame_len: None,
            early_calls: false,
            compression: offered,
        };
        read_verdict(&mut client, &hello)
            .await
            .map(|(negotiated, _)| negotiated)
    }

    #[tokio::test]
    async fn a_server_may_only_choose_one_offered_algorithm_from_version_5_on() {
        let none = verdict(vec![1], 5, Vec::new()).await.unwrap();
        assert_eq!(none.compression, None);
        for (offered, version, chosen) in [
            (vec![], 5, vec![1]),
            (vec![1], 5, vec![2]),
            (vec![1], 5, vec![1, 2]),
            (vec![1], 4, vec![1]),
        ] {
            let err = verdict(offered.clone(), version, chosen.clone())
                .await
                .unwrap_err();
            assert!(
                matches!(err, NegotiationError::BadServerHello(_)),
                "{offered:?} {version} {chosen:?}: {err}"
            );
        }
    }

    #[cfg(feature = "zstd")]
    #[tokio::test]
    async fn an_offered_algorithm_is_taken() {
        let zstd = verdict(vec![1], 5, vec![1]).await.unwrap();
        assert_eq!(zstd.compression, Some(Algorithm::Zstd));
    }
}
