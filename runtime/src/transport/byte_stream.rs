//! Byte streams a connection can run over. A [`Transport`] (TCP, TLS, a Unix socket, an
//! in-memory duplex) becomes a [`BoxedStream`] as soon as it is connected or accepted, so
//! negotiation, client and server are compiled once, not once for each kind of stream.

use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
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

/// The read half of any transport.
pub(crate) type BoxedRead = Pin<Box<dyn AsyncRead + Send>>;

/// The write half of any transport.
pub(crate) type BoxedWrite = Pin<Box<dyn AsyncWrite + Send>>;

/// Any transport, split into its halves (so a TCP stream keeps its lock-free owned halves)
/// and boxed: the one stream type of the handshakes and of every connection. Generic code
/// would be compiled again for each kind of stream (the dial, the hello, the connection's
/// reader), for the price of one indirect call per read or write, which is a system call.
pub(crate) struct BoxedStream {
    read: BoxedRead,
    write: BoxedWrite,
}

impl BoxedStream {
    pub(crate) fn new<T: Transport>(stream: T) -> Self {
        let (read, write) = stream.split_io();
        Self {
            read: Box::pin(read),
            write: Box::pin(write),
        }
    }

    /// The halves, for the connection's reader and writer.
    pub(crate) fn into_halves(self) -> (BoxedRead, BoxedWrite) {
        (self.read, self.write)
    }
}

impl AsyncRead for BoxedStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        self.read.as_mut().poll_read(cx, buf)
    }
}

impl AsyncWrite for BoxedStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.write.as_mut().poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.write.as_mut().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.write.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.write.as_mut().poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.write.as_mut().poll_shutdown(cx)
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
