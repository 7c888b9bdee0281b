//! What a server listens on (TCP or a Unix socket), and how an accepted stream becomes a
//! wirecall connection: the TLS handshake when configured, then the same generic connection
//! code for every stream type.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use super::connection::serve_connection;
use super::identity::PeerIdentity;
use super::Shared;
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

/// Serves a stream the caller connected itself, like an accepted one without a peer address.
pub(crate) async fn serve_stream<S: Transport>(stream: S, shared: Arc<Shared>) {
    let deadline = Instant::now() + shared.config.handshake_timeout;
    secure_then_serve(stream, PeerIdentity::default(), deadline, shared).await;
}

/// Turns away a stream the caller connected itself with a `Busy` hello.
pub(crate) async fn refuse_stream<S: Transport>(stream: S, shared: Arc<Shared>) {
    let deadline = Instant::now() + shared.config.handshake_timeout;
    secure_then_refuse(stream, deadline, shared).await;
}

impl Accepted {
    /// Serves the connection: TLS first when the server has it, then the wirecall hello and
    /// frames. One deadline bounds both handshakes.
    pub(crate) async fn serve(self, shared: Arc<Shared>) {
        let deadline = Instant::now() + shared.config.handshake_timeout;
        match self {
            Self::Tcp(stream, peer) => {
                let identity = PeerIdentity {
                    peer_addr: Some(peer),
                    ..PeerIdentity::default()
                };
                secure_then_serve(stream, identity, deadline, shared).await;
            }
            #[cfg(unix)]
            Self::Unix(stream) => {
                secure_then_serve(stream, PeerIdentity::default(), deadline, shared).await;
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

async fn secure_then_serve<S: Transport>(
    stream: S,
    identity: PeerIdentity,
    deadline: Instant,
    shared: Arc<Shared>,
) {
    #[cfg(feature = "tls")]
    if let Some(acceptor) = shared.tls.clone() {
        // Boxed: a TLS session's state is several KiB, and inline it would enlarge every
        // connection's task, plain ones included.
        Box::pin(serve_tls(acceptor, stream, identity, deadline, shared)).await;
        return;
    }
    serve_connection(stream, identity, deadline, shared).await;
}

#[cfg(feature = "tls")]
async fn serve_tls<S: Transport>(
    acceptor: tokio_rustls::TlsAcceptor,
    stream: S,
    mut identity: PeerIdentity,
    deadline: Instant,
    shared: Arc<Shared>,
) {
    let Some(stream) = tls_accept(&acceptor, stream, &identity, deadline, &shared).await else {
        return;
    };
    identity.tls_client_certificate = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|leaf| leaf.as_ref().to_vec());
    serve_connection(stream, identity, deadline, shared).await;
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
