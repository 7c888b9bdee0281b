//! What a server listens on (TCP or a Unix socket), the accept loop and its back-off when
//! `accept` fails, and how an accepted stream becomes a wirecall connection: the TLS
//! handshake when configured, then the same connection code for every stream type (boxed).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures::future::Either;
use futures::FutureExt;
use tokio::net::{TcpListener, TcpSocket, TcpStream, ToSocketAddrs};
use tokio::time::Instant;

use super::accept_backoff::AcceptBackoff;
use super::connection::{open_connection, Connection};
use super::identity::PeerIdentity;
use super::shared::{ConnectionSlot, Shared};
use crate::cold_task::cold;
use crate::error::Error;
use crate::negotiate::{refuse, HelloStatus};
use crate::transport::{configure_tcp, BoxedStream, Transport};

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
pub(crate) async fn open_stream<S: Transport>(stream: S, shared: Arc<Shared>) -> Option<Opened> {
    let deadline = Instant::now() + shared.config.handshake_timeout;
    let stream = BoxedStream::new(stream);
    secure_then_open(stream, PeerIdentity::default(), deadline, shared).await
}

/// Turns away a stream the caller connected itself with a `Busy` hello.
pub(crate) async fn refuse_stream<S: Transport>(stream: S, shared: Arc<Shared>) {
    let deadline = Instant::now() + shared.config.handshake_timeout;
    secure_then_refuse(BoxedStream::new(stream), deadline, shared).await;
}

/// An opened connection, ready to be served.
#[cfg_attr(
    feature = "grpc",
    allow(
        clippy::large_enum_variant,
        reason = "made once per connection and moved straight into its task; boxing the \
                  wirecall connection would cost every connection an allocation"
    )
)]
pub(crate) enum Opened {
    /// A wirecall connection, its hello done.
    Wirecall(Connection),
    /// A gRPC connection: the future that serves it (boxed, so that the tasks of wirecall
    /// connections stay their size).
    #[cfg(feature = "grpc")]
    Grpc(Pin<Box<dyn Future<Output = ()> + Send>>),
}

impl Accepted {
    /// Opens the connection: TLS first when the server has it, then the wirecall hello. One
    /// deadline bounds both handshakes. `None` when either failed (logged). With the gRPC
    /// door on, a plain TCP connection that opens with HTTP/2's preface is gRPC's.
    pub(crate) async fn open(self, shared: Arc<Shared>) -> Option<Opened> {
        let deadline = Instant::now() + shared.config.handshake_timeout;
        match self {
            Self::Tcp(stream, peer) => {
                let identity = PeerIdentity {
                    peer_addr: Some(peer),
                    ..PeerIdentity::default()
                };
                #[cfg(feature = "grpc")]
                if let Some(door) = shared.grpc.clone().filter(|_| !shared.has_tls()) {
                    use crate::grpc::sniff::{sniff, Protocol};
                    match sniff(&stream, deadline).await? {
                        Protocol::Grpc => {
                            let serve = door.serve(Box::new(stream), identity, deadline, shared);
                            return Some(Opened::Grpc(serve));
                        }
                        Protocol::Wirecall => {}
                    }
                }
                secure_then_open(BoxedStream::new(stream), identity, deadline, shared).await
            }
            #[cfg(unix)]
            Self::Unix(stream) => {
                let stream = BoxedStream::new(stream);
                secure_then_open(stream, PeerIdentity::default(), deadline, shared).await
            }
        }
    }

    /// Turns the connection away with a `Busy` hello (inside TLS when the server has it, so
    /// that the client can read it).
    pub(crate) async fn refuse_busy(self, shared: Arc<Shared>) {
        let deadline = Instant::now() + shared.config.handshake_timeout;
        let stream = match self {
            Self::Tcp(stream, _) => BoxedStream::new(stream),
            #[cfg(unix)]
            Self::Unix(stream) => BoxedStream::new(stream),
        };
        secure_then_refuse(stream, deadline, shared).await;
    }
}

async fn secure_then_open(
    stream: BoxedStream,
    identity: PeerIdentity,
    deadline: Instant,
    shared: Arc<Shared>,
) -> Option<Opened> {
    #[cfg(feature = "tls")]
    if let Some(acceptor) = shared.tls.clone() {
        // Boxed: a TLS handshake's state is several KiB, and inline it would enlarge the
        // opening of plain connections too.
        return Box::pin(open_tls(acceptor, stream, identity, deadline, shared)).await;
    }
    open_connection(stream, identity, deadline, shared)
        .await
        .map(Opened::Wirecall)
}

#[cfg(feature = "tls")]
async fn open_tls(
    acceptor: tokio_rustls::TlsAcceptor,
    stream: BoxedStream,
    mut identity: PeerIdentity,
    deadline: Instant,
    shared: Arc<Shared>,
) -> Option<Opened> {
    let stream = tls_accept(&acceptor, stream, &identity, deadline, &shared).await?;
    identity.tls_client_certificate = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|leaf| leaf.as_ref().to_vec());
    // A caller that asked for HTTP/2 by ALPN is a gRPC one (the server offers `h2` only with
    // the door on).
    #[cfg(feature = "grpc")]
    if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
        if let Some(door) = shared.grpc.clone() {
            let serve = door.serve(Box::new(stream), identity, deadline, shared);
            return Some(Opened::Grpc(serve));
        }
    }
    open_connection(BoxedStream::new(stream), identity, deadline, shared)
        .await
        .map(Opened::Wirecall)
}

#[cfg_attr(not(feature = "tls"), allow(unused_variables))]
async fn secure_then_refuse(mut stream: BoxedStream, deadline: Instant, shared: Arc<Shared>) {
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
async fn tls_accept(
    acceptor: &tokio_rustls::TlsAcceptor,
    stream: BoxedStream,
    identity: &PeerIdentity,
    deadline: Instant,
    shared: &Shared,
) -> Option<tokio_rustls::server::TlsStream<BoxedStream>> {
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

/// Binds the first address `addr` resolves to that accepts a listener with `backlog`.
pub(super) async fn listen<A: ToSocketAddrs>(addr: A, backlog: u32) -> Result<TcpListener, Error> {
    let candidates = tokio::net::lookup_host(addr)
        .await
        .map_err(|cause| Error::Bind {
            addr: "(address lookup)".to_owned(),
            cause,
        })?;
    let mut last_error = None;
    for candidate in candidates {
        let socket = if candidate.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        };
        let listener = socket.and_then(|socket| {
            socket.set_reuseaddr(true)?;
            socket.bind(candidate)?;
            socket.listen(backlog)
        });
        match listener {
            Ok(listener) => return Ok(listener),
            Err(err) => last_error = Some((candidate.to_string(), err)),
        }
    }
    let (addr, cause) = last_error.unwrap_or_else(|| {
        let none = std::io::Error::new(std::io::ErrorKind::NotFound, "resolved to nothing");
        ("(address lookup)".to_owned(), none)
    });
    Err(Error::Bind { addr, cause })
}

/// Accepts connections until shutdown, each served by its own task; over the connection
/// limit, one is refused with a `Busy` hello.
pub(super) async fn accept_loop(listener: Listener, shared: Arc<Shared>) {
    let mut backoff = AcceptBackoff::default();
    loop {
        let accepted = tokio::select! {
            _ = shared.shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let accepted = match accepted {
            Ok(accepted) => {
                if let Some(failures) = backoff.recovered() {
                    tracing::info!(failures, "accept works again");
                }
                accepted
            }
            Err(err) => {
                // Out of descriptors (EMFILE/ENFILE) or memory: the pending connection stays in
                // the backlog. Wait, with a growing pause, instead of spinning on the same
                // error; the connections already open keep being served meanwhile.
                let pause = backoff.failed(std::time::Instant::now());
                if let Some(failures) = pause.log_failures {
                    tracing::warn!(
                        %err,
                        failures,
                        "accept failed (out of file descriptors?); pausing new connections, \
                         serving open ones; raise the open-file limit or lower max_connections"
                    );
                }
                tokio::select! {
                    _ = shared.shutdown.cancelled() => break,
                    _ = tokio::time::sleep(pause.wait) => continue,
                }
            }
        };
        let open = shared.connections.fetch_add(1, Ordering::AcqRel);
        let guard = ConnectionSlot(Arc::clone(&shared));
        let connection_shared = Arc::clone(&shared);
        if open >= shared.max_connections {
            tracing::warn!(open, "connection limit reached; refusing");
            shared.tracker.spawn(cold(async move {
                let _guard = guard;
                accepted.refuse_busy(connection_shared).await;
            }));
            continue;
        }
        shared.tracker.spawn(serve_opened(
            Box::pin(accepted.open(connection_shared)),
            guard,
        ));
    }
}

/// A connection's task: its opening (TLS, hello), then its read loop, holding its `slot` in
/// the connection count throughout.
///
/// The task lives as long as the connection, so its size is what every held connection
/// costs: the opening is boxed (and freed once done), and the combinator holds either it or
/// the read loop, never both, where an `async` block would keep room for the opened
/// connection beside the loop that owns it.
pub(super) fn serve_opened(
    opening: Pin<Box<dyn Future<Output = Option<Opened>> + Send>>,
    slot: ConnectionSlot,
) -> impl Future<Output = ()> + Send {
    opening.then(move |opened| match opened {
        Some(Opened::Wirecall(connection)) => Either::Left(connection.run(slot)),
        #[cfg(feature = "grpc")]
        Some(Opened::Grpc(serve)) => {
            let serve: Pin<Box<dyn Future<Output = ()> + Send>> =
                Box::pin(serve.map(move |()| drop(slot)));
            Either::Right(serve)
        }
        None => {
            let done: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(std::future::ready(()));
            Either::Right(done)
        }
    })
}
