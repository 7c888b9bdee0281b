//! What a server listens on (TCP or a Unix socket), and how an accepted stream becomes a
//! wirecall connection: the TLS handshake when configured, then the same generic connection
//! code for every stream type.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use super::connection::{open_connection, Connection};
use super::identity::PeerIdentity;
use super::shared::Shared;
use crate::negotiate::{refuse, HelloStatus};
use crate::transport::{configure_tcp, Transport};

/// A bound listener.
pub(crate) enum Listener {
    Tcp(TcpListener),
    #[cfg(unix)]
    Unix(tokio::net::UnixListener),
    /// No listener: connections arrive only through `RunningServer::serve_stream`.
    Nothing,
}

/// An accepted stream, before any byte is read from it.
pub(crate) enum Accepted {
    Tcp(TcpStream, SocketAddr),
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
}

impl Listener {
    pub(crate) async fn accept(&self) -> std::io::Result<Accepted> {
        match self {
            Self::Tcp(listener) => {
                let (stream, peer) = listener.accept().await?;
                if let Err(err) = configure_tcp(&stream) {
                    tracing::debug!(%err, %peer, "could not configure socket");
                }
                Ok(Accepted::Tcp(stream, peer))
            }
            #[cfg(unix)]
            Self::Unix(listener) => Ok(Accepted::Unix(listener.accept().await?.0)),
            Self::Nothing => std::future::pending().await,
        }
    }
}

/// Opens a stream the caller connected itself, like an accepted one without a peer address.
pub(crate) async fn open_stream<S: Transport>(
    stream: S,
    shared: Arc<Shared>,
) -> Option<Connection> {
    let deadline = Instant::now() + shared.config.handshake_timeout;
    secure_then_open(stream, PeerIdentity::default(), deadline, shared).await
}

/// Turns away a stream the caller connected itself with a `Busy` hello.
pub(crate) async fn refuse_stream<S: Transport>(stream: S, shared: Arc<Shared>) {
    let deadline = Instant::now() + shared.config.handshake_timeout;
    secure_then_refuse(stream, deadline, shared).await;
}

impl Accepted {
    /// Opens the connection: TLS first when the server has it, then the wirecall hello. One
    /// deadline bounds both handshakes. `None` when either failed (logged).
    pub(crate) async fn open(self, shared: Arc<Shared>) -> Option<Connection> {
        let deadline = Instant::now() + shared.config.handshake_timeout;
        match self {
            Self::Tcp(stream, peer) => {
                let identity = PeerIdentity {
                    peer_addr: Some(peer),
                    ..PeerIdentity::default()
                };
                secure_then_open(stream, identity, deadline, shared).await
            }
            #[cfg(unix)]
            Self::Unix(stream) => {
                secure_then_open(stream, PeerIdentity::default(), deadline, shared).await
            }
        }
    }

    /// Turns the connection away with a `Busy` hello (inside TLS when the server has it, so
    /// that the client can read it).
    pub(crate) async fn refuse_busy(self, shared: Arc<Shared>) {
        let deadline = Instant::now() + shared.config.handshake_timeout;
        match self {
            Self::Tcp(stream, _) => secure_then_refuse(stream, deadline, shared).await,
            #[cfg(unix)]
            Self::Unix(stream) => secure_then_refuse(stream, deadline, shared).await,
        }
    }
}

async fn secure_then_open<S: Transport>(
    stream: S,
    identity: PeerIdentity,
    deadline: Instant,
    shared: Arc<Shared>,
) -> Option<Connection> {
    #[cfg(feature = "tls")]
    if let Some(acceptor) = shared.tls.clone() {
        // Boxed: a TLS handshake's state is several KiB, and inline it would enlarge the
        // opening of plain connections too.
        return Box::pin(open_tls(acceptor, stream, identity, deadline, shared)).await;
    }
    open_connection(stream, identity, deadline, shared).await
}

#[cfg(feature = "tls")]
async fn open_tls<S: Transport>(
    acceptor: tokio_rustls::TlsAcceptor,
    stream: S,
    mut identity: PeerIdentity,
    deadline: Instant,
    shared: Arc<Shared>,
) -> Option<Connection> {
    let stream = tls_accept(&acceptor, stream, &identity, deadline, &shared).await?;
    identity.tls_client_certificate = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|leaf| leaf.as_ref().to_vec());
    open_connection(stream, identity, deadline, shared).await
}

#[cfg_attr(not(feature = "tls"), allow(unused_variables))]
async fn secure_then_refuse<S: Transport>(mut stream: S, deadline: Instant, shared: Arc<Shared>) {
    super::metrics::handshake_failed("busy");
    #[cfg(feature = "tls")]
    if let Some(acceptor) = shared.tls.clone() {
        Box::pin(async move {
            let identity = PeerIdentity::default();
            if let Some(mut stream) =
                tls_accept(&acceptor, stream, &identity, deadline, &shared).await
            {
                refuse(&mut stream, HelloStatus::Busy, shared.codecs_before_auth()).await;
            }
        })
        .await;
        return;
    }
    refuse(&mut stream, HelloStatus::Busy, shared.codecs_before_auth()).await;
}

/// The server side of the TLS handshake, bounded by the connection's handshake deadline and
/// by shutdown; `None` when it failed (logged).
#[cfg(feature = "tls")]
async fn tls_accept<S: Transport>(
    acceptor: &tokio_rustls::TlsAcceptor,
    stream: S,
    identity: &PeerIdentity,
    deadline: Instant,
    shared: &Shared,
) -> Option<tokio_rustls::server::TlsStream<S>> {
    let peer = identity.peer_addr;
    tokio::select! {
        outcome = tokio::time::timeout_at(deadline, acceptor.accept(stream)) => match outcome {
            Ok(Ok(stream)) => Some(stream),
            Ok(Err(err)) => {
                tracing::debug!(?peer, %err, "TLS handshake failed");
                super::metrics::handshake_failed("tls");
                None
            }
            Err(_) => {
                tracing::debug!(?peer, "TLS handshake timed out");
                super::metrics::handshake_failed("timeout");
                None
            }
        },
        _ = shared.shutdown.cancelled() => None,
    }
}
