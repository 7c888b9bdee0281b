//! Byte streams a connection can run over. Framing, negotiation, client and server are generic
//! over [`Transport`], so TCP, TLS and Unix sockets share every line above this one.

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A bidirectional byte stream that can be split into a read half and a write half, so the
/// reader and the writer of a connection run as independent tasks.
pub trait Transport: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    /// The read half.
    type Read: AsyncRead + Unpin + Send + 'static;
    /// The write half.
    type Write: AsyncWrite + Unpin + Send + 'static;

    /// Splits the stream.
    fn split_io(self) -> (Self::Read, Self::Write);
}

impl Transport for TcpStream {
    type Read = tokio::net::tcp::OwnedReadHalf;
    type Write = tokio::net::tcp::OwnedWriteHalf;

    fn split_io(self) -> (Self::Read, Self::Write) {
        // Owned halves need no lock between reader and writer.
        self.into_split()
    }
}

#[cfg(unix)]
impl Transport for tokio::net::UnixStream {
    type Read = tokio::net::unix::OwnedReadHalf;
    type Write = tokio::net::unix::OwnedWriteHalf;

    fn split_io(self) -> (Self::Read, Self::Write) {
        self.into_split()
    }
}

impl Transport for tokio::io::DuplexStream {
    type Read = tokio::io::ReadHalf<Self>;
    type Write = tokio::io::WriteHalf<Self>;

    fn split_io(self) -> (Self::Read, Self::Write) {
        tokio::io::split(self)
    }
}

/// Sets the socket options every wirecall TCP connection uses: TCP_NODELAY, because the
/// writer already coalesces frames and Nagle's algorithm would only add latency.
pub(crate) fn configure_tcp(stream: &TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)
}

#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
impl<S> Transport for tokio_rustls::client::TlsStream<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Read = tokio::io::ReadHalf<Self>;
    type Write = tokio::io::WriteHalf<Self>;

    fn split_io(self) -> (Self::Read, Self::Write) {
        // A TLS session's state is shared by both directions, so the halves share a lock.
        tokio::io::split(self)
    }
}

#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
impl<S> Transport for tokio_rustls::server::TlsStream<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Read = tokio::io::ReadHalf<Self>;
    type Write = tokio::io::WriteHalf<Self>;

    fn split_io(self) -> (Self::Read, Self::Write) {
        tokio::io::split(self)
    }
}
