//! Opening a channel's connections: one [`ConnectionSettings`] value, built once by the
//! builder and kept by the channel, dials TCP or a Unix socket, runs TLS and the hello, and
//! hands the stream to a new [`Connection`]; [`Redial`] is what a channel keeps to do it again.
//!
//! A TCP server that announced early calls last time (see `early.rs`) is not waited for: the
//! hello goes out with early calls, the connection starts at once, and its reader checks the
//! server's answer.

use std::net::SocketAddr;
#[cfg(unix)]
use std::path::PathBuf;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::auth::Token;
use crate::codec::Codec;
use crate::error::Error;
use crate::negotiate::{
    client_handshake_listed, ClientHello, CodecList, Negotiated, NegotiationError,
    MIN_PROTOCOL_VERSION,
};
#[cfg(feature = "tls")]
use crate::tls::ClientTlsConfig;
use crate::transport::{configure_tcp, BoxedStream, Transport};

use super::connection::{Connection, EarlyHello};
use super::early::{self, KnownServer, ServerKey};
use crate::client::settings::{ConnectionSettings, FIRST_BACKOFF};

impl ConnectionSettings {
    /// Negotiates over a stream the caller opened, within the connect timeout.
    pub(crate) async fn open_stream<T: Transport>(&self, stream: T) -> Result<Connection, Error> {
        let version = self.max_protocol_version;
        // No address to know the server by: no early calls.
        let limit = self.connect_timeout.min(self.handshake_timeout);
        let stream = BoxedStream::new(stream);
        tokio::time::timeout(limit, self.secure(stream, None, version))
            .await
            .map_err(|_| Error::Negotiation(NegotiationError::TimedOut))?
    }

    /// Connects (over TCP or a Unix socket) and negotiates, within the connect timeout. A
    /// server that refuses the hello's version because it speaks only an older one is dialled
    /// again with its version.
    pub(crate) async fn dial(&self, target: &Target) -> Result<Connection, Error> {
        match self.dial_version(target, self.max_protocol_version).await {
            Err(Error::Negotiation(NegotiationError::UnsupportedVersion { client, server }))
                if (MIN_PROTOCOL_VERSION..client).contains(&server) =>
            {
                tracing::debug!(
                    server,
                    "the server speaks an older protocol; dialling again"
                );
                self.dial_version(target, server).await
            }
            other => other,
        }
    }

    async fn dial_version(&self, target: &Target, version: u8) -> Result<Connection, Error> {
        tokio::time::timeout(self.connect_timeout, async {
            let (stream, peer) = match target {
                Target::Tcp(addrs) => {
                    let stream = connect_tcp(addrs).await?;
                    let peer = stream.peer_addr().ok();
                    (BoxedStream::new(stream), peer)
                }
                #[cfg(unix)]
                Target::Unix(path) => {
                    let stream = tokio::net::UnixStream::connect(path)
                        .await
                        .map_err(|cause| Error::Connect {
                            addr: path.display().to_string(),
                            cause,
                        })?;
                    (BoxedStream::new(stream), None)
                }
            };
            self.secure_in_time(stream, peer, version).await
        })
        .await
        .map_err(|_| Error::Negotiation(NegotiationError::TimedOut))?
    }

    /// [`secure`](Self::secure) within the handshake timeout.
    async fn secure_in_time(
        &self,
        stream: BoxedStream,
        peer: Option<SocketAddr>,
        version: u8,
    ) -> Result<Connection, Error> {
        tokio::time::timeout(self.handshake_timeout, self.secure(stream, peer, version))
            .await
            .map_err(|_| Error::Negotiation(NegotiationError::TimedOut))?
    }

    /// Runs the TLS handshake when the channel uses TLS, then opens the connection.
    async fn secure(
        &self,
        stream: BoxedStream,
        peer: Option<SocketAddr>,
        version: u8,
    ) -> Result<Connection, Error> {
        #[cfg(feature = "tls")]
        if let Some(tls) = &self.tls {
            // Boxed: the TLS handshake's state is kilobytes, and inline it would be part of
            // every plain connection's dial too.
            return Box::pin(self.secure_tls(tls, stream, peer, version)).await;
        }
        let key = peer.map(|addr| ServerKey {
            addr,
            server_name: None,
        });
        self.open(stream, peer, key, version, |err| err).await
    }

    #[cfg(feature = "tls")]
    async fn secure_tls(
        &self,
        tls: &ClientTlsConfig,
        stream: BoxedStream,
        peer: Option<SocketAddr>,
        version: u8,
    ) -> Result<Connection, Error> {
        let name = tls.server_name();
        let stream = tls
            .connector()
            .connect(name.clone(), stream)
            .await
            .map_err(Error::Tls)?;
        let key = peer.map(|addr| ServerKey {
            addr,
            server_name: Some(name.to_str().into_owned()),
        });
        self.open(BoxedStream::new(stream), peer, key, version, tls_failure)
            .await
            .map_err(tls_failure)
    }

    /// The hello, the verdict, then the connection's reader and writer; or, for a server
    /// known to understand early calls, the connection at once with the hello queued first.
    async fn open(
        &self,
        mut stream: BoxedStream,
        peer: Option<SocketAddr>,
        key: Option<ServerKey>,
        version: u8,
        map_error: fn(Error) -> Error,
    ) -> Result<Connection, Error> {
        let offer = CodecList::of(&self.codecs).0;
        let known = key
            .as_ref()
            .and_then(|key| self.early_calls_to(key, version, &offer));
        let mut hello = ClientHello {
            version,
            codecs: offer,
            token: self
                .token
                .as_ref()
                .map_or(&[][..], Token::as_bytes)
                .to_vec(),
            max_frame_len: Some(self.max_frame_len),
            early_calls: false,
            compression: self.compression.offer(),
        };
        if let (Some((known, codec)), Some(key)) = (known, key.clone()) {
            // The early calls' codec leads the offer; the server must choose it or refuse.
            let id = codec.id();
            hello.codecs.retain(|other| *other != id);
            hello.codecs.insert(0, id);
            hello.early_calls = true;
            let negotiated = Negotiated {
                codec,
                version,
                peer_max_frame_len: known.max_frame_len,
                early_calls: true,
                // Learnt from the server's hello, after the early frames went out.
                compression: None,
            };
            let early = EarlyHello {
                hello,
                key,
                server_order: known.server_order,
                timeout: self.handshake_timeout.min(self.connect_timeout),
                map_error,
            };
            return Ok(Connection::start(
                stream,
                negotiated,
                peer,
                self,
                Some(early),
            ));
        }
        let (negotiated, supported) = client_handshake_listed(&mut stream, &hello).await?;
        if let Some(key) = key {
            if negotiated.early_calls {
                let known = KnownServer::accepted(&hello.codecs, &negotiated, &supported, None);
                early::remember(key, known);
            } else {
                early::forget(&key);
            }
        }
        Ok(Connection::start(stream, negotiated, peer, self, None))
    }

    /// What the early-calls table knows about `key`, and the codec to send it early calls
    /// in, when this channel may send them in protocol `version`: the option is on, the
    /// server said it understands them on a connection of the same version, and it allows
    /// a codec of `offer` (the one a hello without early calls would get).
    fn early_calls_to(
        &self,
        key: &ServerKey,
        version: u8,
        offer: &[u8],
    ) -> Option<(KnownServer, Codec)> {
        if !self.early_calls || version < 2 {
            return None;
        }
        let known = early::lookup(key).filter(|known| known.version == version)?;
        let codec = known.codec_for(offer)?;
        Some((known, codec))
    }
}

/// How a channel dials again after its connection broke.
pub(crate) struct Redial {
    /// Whether a broken connection is dialled again. A connection whose early calls were
    /// refused is dialled again anyway: that is part of connecting.
    pub(crate) reconnect: bool,
    pub(crate) target: Target,
    pub(crate) settings: ConnectionSettings,
    /// The cap of the doubling wait between failed attempts.
    pub(crate) max_backoff: Duration,
    /// Also serialises reconnects: one attempt at a time, the others wait for its outcome.
    pub(crate) backoff: tokio::sync::Mutex<Backoff>,
}

impl Redial {
    pub(crate) fn new(
        target: Target,
        settings: ConnectionSettings,
        max_backoff: Duration,
        reconnect: bool,
    ) -> Self {
        Self {
            reconnect,
            target,
            settings,
            max_backoff,
            backoff: tokio::sync::Mutex::new(Backoff {
                not_before: Instant::now(),
                delay: FIRST_BACKOFF,
            }),
        }
    }
}

pub(crate) struct Backoff {
    pub(crate) not_before: Instant,
    pub(crate) delay: Duration,
}

/// Where a channel dials (again).
pub(crate) enum Target {
    Tcp(Vec<SocketAddr>),
    #[cfg(unix)]
    Unix(PathBuf),
}

/// With TLS 1.3 the server checks a client certificate after the client's side of the TLS
/// handshake is done, so its refusal arrives as a TLS alert while the client reads the
/// server hello: report that as the TLS failure it is.
#[cfg(feature = "tls")]
fn tls_failure(err: Error) -> Error {
    match err {
        Error::Negotiation(NegotiationError::Io(io))
            if io
                .get_ref()
                .is_some_and(|inner| inner.is::<tokio_rustls::rustls::Error>()) =>
        {
            Error::Tls(io)
        }
        other => other,
    }
}

async fn connect_tcp(addrs: &[SocketAddr]) -> Result<TcpStream, Error> {
    let mut last_error = None;
    for candidate in addrs {
        match TcpStream::connect(candidate).await {
            Ok(stream) => {
                configure_tcp(&stream).map_err(|cause| Error::Connect {
                    addr: candidate.to_string(),
                    cause,
                })?;
                return Ok(stream);
            }
            Err(err) => last_error = Some(err),
        }
    }
    Err(Error::Connect {
        addr: addrs
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        cause: last_error.unwrap_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the address resolved to nothing",
            )
        }),
    })
}
