//! The client side: a [`Channel`] is one negotiated connection that any number of generated
//! clients (and tasks) share. Calls are multiplexed by request id and may complete in any
//! order.

mod pending;
mod reader;

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::net::{TcpStream, ToSocketAddrs};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::codec::FramedRead;

use crate::codec::{Codec, WireMessage};
use crate::error::Error;
use crate::frame::{ErrorBody, Frame, FrameBuf, FrameCodec, FrameKind, DEFAULT_MAX_FRAME_LEN};
use crate::method::MethodId;
use crate::negotiate::{client_handshake, NegotiationError};
use crate::transport::{configure_tcp, Transport};
use crate::writer::{run_writer, WRITE_QUEUE_FRAMES};
use pending::PendingCalls;

/// The default per-call deadline.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The default limit for connecting plus the handshake.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One connection to a wirecall server, shared by every clone.
///
/// Cheap to clone (an `Arc`); clones share the connection and may be used from many tasks at
/// once. The connection closes when the last clone is dropped. Create one with
/// [`Channel::connect`] or [`Channel::builder`], then wrap it in any generated client with
/// `{Trait}Client::new(channel.clone())`: several services can share one connection.
#[derive(Clone)]
pub struct Channel {
    connection: Arc<Connection>,
    timeout: Option<Duration>,
}

struct Connection {
    codec: Codec,
    queue: mpsc::Sender<Bytes>,
    pending: Arc<PendingCalls>,
    next_request_id: AtomicU64,
    max_frame_len: u32,
    peer: Option<SocketAddr>,
    reader: JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // The writer ends by itself once the last queue sender (ours, and the reader's) is gone.
        self.reader.abort();
    }
}

impl fmt::Debug for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Channel")
            .field("peer", &self.connection.peer)
            .field("codec", &self.connection.codec)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Channel {
    /// Connects to `addr` offering every compiled-in codec, with default options.
    pub async fn connect<A: ToSocketAddrs>(addr: A) -> Result<Self, Error> {
        Self::builder().connect(addr).await
    }

    /// Options for a new connection.
    pub fn builder() -> ChannelBuilder {
        ChannelBuilder::default()
    }

    /// The codec negotiated for this connection.
    pub fn codec(&self) -> Codec {
        self.connection.codec
    }

    /// The server's address, for TCP connections.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.connection.peer
    }

    /// The deadline of calls made through this handle (`None`: calls wait forever).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// A handle on the same connection whose calls use `timeout` as their deadline.
    pub fn with_timeout(&self, timeout: Duration) -> Self {
        Self {
            connection: Arc::clone(&self.connection),
            timeout: Some(timeout),
        }
    }

    /// A handle on the same connection whose calls have no deadline.
    pub fn without_timeout(&self) -> Self {
        Self {
            connection: Arc::clone(&self.connection),
            timeout: None,
        }
    }

    /// Whether the connection has closed; calls on a closed channel fail at once with
    /// [`Error::ConnectionClosed`].
    pub fn is_closed(&self) -> bool {
        self.connection.pending.closed_reason().is_some()
    }

    /// Calls currently waiting for a reply on this connection.
    pub fn in_flight(&self) -> usize {
        self.connection.pending.len()
    }

    /// Calls `method` with `args` and waits for its reply, at most for the handle's timeout.
    ///
    /// Dropping the returned future before it completes cancels the call: the server is sent a
    /// `Cancel` frame and stops the handler. Generated clients call this; use it directly only
    /// for hand-written clients.
    pub async fn call<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        args: A,
    ) -> Result<R, Error> {
        let connection = &*self.connection;
        let request_id = connection.next_request_id.fetch_add(1, Ordering::Relaxed);
        let frame = connection.encode(
            FrameKind::Request,
            request_id,
            method,
            deadline_ms(self.timeout),
            &args,
        )?;
        let reply = connection.pending.register(request_id)?;
        let mut cancel = CancelOnDrop {
            connection,
            request_id,
            armed: true,
        };
        let exchange = async {
            connection
                .queue
                .send(frame)
                .await
                .map_err(|_| connection.closed_error())?;
            reply.await.map_err(|_| connection.closed_error())?
        };
        let frame = match self.timeout {
            Some(after) => tokio::time::timeout(after, exchange)
                .await
                .map_err(|_| Error::Timeout { after })??,
            None => exchange.await?,
        };
        cancel.armed = false;
        connection.decode_reply(method, frame)
    }

    /// Sends a one-way call: resolves once the frame is queued on the connection, without
    /// waiting for (or ever receiving) a reply.
    pub async fn notify<A: WireMessage>(&self, method: MethodId, args: A) -> Result<(), Error> {
        let connection = &*self.connection;
        let request_id = connection.next_request_id.fetch_add(1, Ordering::Relaxed);
        let frame = connection.encode(FrameKind::Notify, request_id, method, 0, &args)?;
        if let Some(reason) = connection.pending.closed_reason() {
            return Err(Error::closed(reason));
        }
        let send = connection.queue.send(frame);
        match self.timeout {
            Some(after) => tokio::time::timeout(after, send)
                .await
                .map_err(|_| Error::Timeout { after })?,
            None => send.await,
        }
        .map_err(|_| connection.closed_error())
    }
}

impl Connection {
    fn encode<A: WireMessage>(
        &self,
        kind: FrameKind,
        request_id: u64,
        method: MethodId,
        deadline_ms: u32,
        args: &A,
    ) -> Result<Bytes, Error> {
        let mut frame = FrameBuf::with_capacity(64);
        self.codec.encode(args, frame.payload_writer())?;
        Ok(frame.finish(kind, request_id, method, deadline_ms, self.max_frame_len)?)
    }

    fn decode_reply<R: WireMessage>(&self, method: MethodId, frame: Frame) -> Result<R, Error> {
        match frame.kind {
            FrameKind::Response => Ok(self.codec.decode(&frame.payload)?),
            _ => {
                let body = ErrorBody::decode(&frame.payload);
                Err(Error::from_remote(method, body.code, body.message))
            }
        }
    }

    fn closed_error(&self) -> Error {
        Error::closed(
            self.pending
                .closed_reason()
                .unwrap_or_else(|| "the connection's tasks ended".to_owned()),
        )
    }
}

/// The wire deadline: milliseconds, at least 1 so that a tiny timeout is not read as "none".
fn deadline_ms(timeout: Option<Duration>) -> u32 {
    timeout.map_or(0, |t| t.as_millis().clamp(1, u128::from(u32::MAX)) as u32)
}

/// Tells the server to stop a call whose caller gave up (timeout or dropped future).
struct CancelOnDrop<'a> {
    connection: &'a Connection,
    request_id: u64,
    armed: bool,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed && self.connection.pending.remove(self.request_id) {
            // Best effort: if the queue is full the reply will simply be discarded on arrival.
            let cancel = Frame::control(FrameKind::Cancel, self.request_id).to_bytes();
            let _ = self.connection.queue.try_send(cancel);
        }
    }
}

/// Options for a [`Channel`].
///
/// ```no_run
/// # async fn run() -> Result<(), wirecall_runtime::Error> {
/// use std::time::Duration;
/// use wirecall_runtime::{Channel, Codec};
///
/// let channel = Channel::builder()
///     .codecs([Codec::Protobuf, Codec::MessagePack])
///     .timeout(Duration::from_secs(2))
///     .connect("127.0.0.1:7000")
///     .await?;
/// println!("talking {}", channel.codec());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ChannelBuilder {
    codecs: Vec<Codec>,
    timeout: Option<Duration>,
    connect_timeout: Duration,
    max_frame_len: u32,
}

impl Default for ChannelBuilder {
    fn default() -> Self {
        Self {
            codecs: Codec::available(),
            timeout: Some(DEFAULT_TIMEOUT),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
        }
    }
}

impl ChannelBuilder {
    /// The codecs to offer, most preferred first (default: every compiled-in codec,
    /// MessagePack, Protobuf, JSON). Codecs not compiled in are dropped from the offer.
    pub fn codecs(mut self, codecs: impl IntoIterator<Item = Codec>) -> Self {
        self.codecs = codecs.into_iter().filter(|c| c.is_available()).collect();
        self
    }

    /// Offers exactly one codec.
    pub fn codec(self, codec: Codec) -> Self {
        self.codecs([codec])
    }

    /// The default deadline of each call (default 30 s). It travels to the server, which
    /// stops the handler when it passes.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Calls wait for their reply however long it takes.
    pub fn no_timeout(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// Limit for the TCP connect plus the handshake (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The largest frame this side sends or accepts (default 16 MiB).
    pub fn max_frame_len(mut self, max: u32) -> Self {
        self.max_frame_len = max;
        self
    }

    /// Opens a TCP connection to `addr` and negotiates a codec.
    pub async fn connect<A: ToSocketAddrs>(self, addr: A) -> Result<Channel, Error> {
        let limit = self.connect_timeout;
        tokio::time::timeout(limit, async {
            let stream = connect_tcp(addr).await?;
            let peer = stream.peer_addr().ok();
            self.handshake(stream, peer).await
        })
        .await
        .map_err(|_| Error::Negotiation(NegotiationError::TimedOut))?
    }

    /// Negotiates over an already open stream (a Unix socket, an in-memory duplex, ...).
    pub async fn connect_with<T: Transport>(self, stream: T) -> Result<Channel, Error> {
        let limit = self.connect_timeout;
        tokio::time::timeout(limit, self.handshake(stream, None))
            .await
            .map_err(|_| Error::Negotiation(NegotiationError::TimedOut))?
    }

    async fn handshake<T: Transport>(
        self,
        mut stream: T,
        peer: Option<SocketAddr>,
    ) -> Result<Channel, Error> {
        let codec = client_handshake(&mut stream, &self.codecs).await?;
        let (read_half, write_half) = stream.split_io();
        let (queue, queued) = mpsc::channel(WRITE_QUEUE_FRAMES);
        tokio::spawn(async move {
            if let Err(err) = run_writer(write_half, queued).await {
                tracing::debug!(%err, "client writer ended");
            }
        });
        let pending = Arc::new(PendingCalls::default());
        let frames = FramedRead::new(read_half, FrameCodec::new(self.max_frame_len));
        let reader = tokio::spawn(reader::run_reader(
            frames,
            Arc::clone(&pending),
            queue.clone(),
        ));
        Ok(Channel {
            connection: Arc::new(Connection {
                codec,
                queue,
                pending,
                next_request_id: AtomicU64::new(1),
                max_frame_len: self.max_frame_len,
                peer,
                reader,
            }),
            timeout: self.timeout,
        })
    }
}

async fn connect_tcp<A: ToSocketAddrs>(addr: A) -> Result<TcpStream, Error> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host(addr)
        .await
        .map_err(|source| Error::Connect {
            addr: "(address lookup)".to_owned(),
            source,
        })?
        .collect();
    let mut last_error = None;
    for candidate in &addrs {
        match TcpStream::connect(candidate).await {
            Ok(stream) => {
                configure_tcp(&stream).map_err(|source| Error::Connect {
                    addr: candidate.to_string(),
                    source,
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
        source: last_error.unwrap_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the address resolved to nothing",
            )
        }),
    })
}
