//! A channel's connection and its call path: encode the arguments (and metadata) into a
//! frame, register the call, send, wait for the reply or the deadline, decode. Cancelling a
//! call (dropping its future) sends a `Cancel`.
//!
//! A connection opened with early calls starts before its server hello has arrived: its
//! hello is the first thing its writer sends, calls follow right behind it, and its reader
//! reads the server hello before any frame (see [`EarlyHello`]).

use std::future::{ready, Future};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::Either;
use futures::FutureExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::task::TaskTracker;

use crate::codec::encoding::Encoding;
use crate::codec::Codec;
use crate::compression::{Algorithm, FrameCompressor};
use crate::error::Error;
use crate::metadata::Metadata;
use crate::method::MethodId;
use crate::negotiate::{read_verdict, ClientHello, Negotiated, NegotiationError};
use crate::stream::credit_window::WindowSize;
use crate::trace::TRACEPARENT;
use crate::transport::frame::{ErrorBody, Frame, FrameBuf, FrameCodec, FrameKind, FLAG_METADATA};
use crate::transport::frame_reader::{FrameReader, ReadPolicy};
use crate::transport::one_task::with_writer;
use crate::transport::writer::{Delivery, FrameSink, TrySend};
use crate::transport::{BoxedRead, BoxedStream};

use super::early::{self, KnownServer, ServerKey};
use super::pending::PendingCalls;
use super::reader;
use crate::client::reply_metadata;
use crate::client::settings::ConnectionSettings;
use crate::client::stack::call::Call;
use crate::client::stack::deadline::{deadline_ms, Deadline};

/// One negotiated connection: the call path from encoded arguments to a decoded reply.
pub(crate) struct Connection {
    pub(crate) codec: Codec,
    /// The negotiated protocol version: metadata travels from version 2 on.
    pub(crate) version: u8,
    pub(crate) sink: FrameSink,
    pub(crate) pending: Arc<PendingCalls>,
    pub(crate) next_request_id: AtomicU64,
    /// The largest frame this connection may send: the channel's `max_frame_len`, lowered to
    /// the server's announced limit (version 2). With early calls, the limit the server
    /// announced last time until its hello says again.
    pub(crate) send_limit: Arc<AtomicU32>,
    /// For a connection opened with early calls: what its server hello said, once read.
    pub(super) hello: Option<watch::Receiver<Verdict>>,
    /// Compresses requests and uploaded items when the connection negotiated compression
    /// (`None`: this connection never compresses).
    pub(crate) compressor: Option<Arc<FrameCompressor>>,
    /// The credit window of the server streams opened on this connection.
    pub(crate) stream_window: WindowSize,
    pub(crate) peer: Option<SocketAddr>,
    /// The connection's one task: its reader, with its writer run beside it
    /// (`transport::one_task`).
    pub(crate) reader: JoinHandle<()>,
    /// The connection's task, so that closing can wait for it to end.
    pub(crate) tasks: TaskTracker,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // The writer sends what is queued and shuts the stream down; the reader sees it end
        // and stops, which ends the task.
        self.sink.close();
    }
}

impl Connection {
    /// Starts the task that reads and writes a connection whose hello was accepted, or, with
    /// `early`, whose hello is yet to be sent: `negotiated` is then what the server settled
    /// last time, and the reader checks that it settles the same again.
    pub(super) fn start(
        stream: BoxedStream,
        negotiated: Negotiated,
        peer: Option<SocketAddr>,
        settings: &ConnectionSettings,
        early: Option<EarlyHello>,
    ) -> Self {
        let (read_half, write_half) = stream.into_halves();
        let (sink, sink_writer) = FrameSink::new(write_half);
        let tasks = TaskTracker::new();
        let pending = Arc::new(PendingCalls::default());
        let own_limit = settings.max_frame_len;
        let send_limit = Arc::new(AtomicU32::new(negotiated.send_limit(own_limit)));
        let codec = FrameCodec::for_version(own_limit, negotiated.version);
        let keepalive = settings.keepalive;
        // An early-calls connection learns from the server's hello whether it compresses.
        let compressor = match (&early, negotiated.compression) {
            (None, None) => None,
            (None, negotiated) => Some(FrameCompressor::new(&settings.compression, negotiated)),
            (Some(_), _) => settings
                .compression
                .is_enabled()
                .then(|| FrameCompressor::new(&settings.compression, None)),
        }
        .map(Arc::new);
        let (reader, hello) = match early {
            None => {
                let codec = codec.decompressing(negotiated.compression);
                let frames = FrameReader::new(read_half, codec, ReadPolicy::Client);
                let run = reader::run_reader(frames, Arc::clone(&pending), sink.clone(), keepalive);
                (tasks.spawn(with_writer(sink_writer, None, run)), None)
            }
            Some(early) => {
                // First on the wire. Corked: a call made right away writes it together with
                // its own frame, from its own task; else the reader writes it when it starts.
                let _ = sink.try_send(Bytes::from(early.hello.to_bytes()), Delivery::Corked);
                let (verdict, hello) = watch::channel(Verdict::Waiting);
                // Settling the hello is boxed (and freed once done), and the connection's task
                // holds either it or the read loop: the task lives as long as the connection.
                let settling = Box::pin(settle_early(
                    early,
                    read_half,
                    own_limit,
                    Arc::clone(&send_limit),
                    verdict,
                    Arc::clone(&pending),
                    sink.clone(),
                ));
                let (pending, sink) = (Arc::clone(&pending), sink.clone());
                let settles = compressor.clone();
                let reading = settling.then(move |settled| match settled {
                    Some((read_half, compression)) => {
                        if let Some(compressor) = settles {
                            compressor.settle(compression);
                        }
                        let codec = codec.decompressing(compression);
                        let frames = FrameReader::new(read_half, codec, ReadPolicy::Client);
                        Either::Left(reader::run_reader(frames, pending, sink, keepalive))
                    }
                    None => Either::Right(std::future::ready(())),
                });
                let reader = tasks.spawn(with_writer(sink_writer, None, reading));
                (reader, Some(hello))
            }
        };
        Self {
            codec: negotiated.codec,
            version: negotiated.version,
            sink,
            pending,
            next_request_id: AtomicU64::new(1),
            send_limit,
            hello,
            compressor,
            stream_window: settings.stream_window,
            peer,
            reader,
            tasks,
        }
    }

    /// Whether this connection's hello went out with early calls that the server refused: no
    /// call sent on it ran, so each may be sent again on a new connection.
    pub(crate) fn refused_early_calls(&self) -> bool {
        self.hello.as_ref().is_some_and(|hello| {
            matches!(
                *hello.borrow(),
                Verdict::Refused {
                    refused_early: true
                }
            )
        })
    }

    /// Whether the server's verdict on this connection's hello is in and an acceptance (or
    /// the hello was read before the connection started).
    pub(crate) fn hello_settled(&self) -> bool {
        self.hello
            .as_ref()
            .is_none_or(|hello| *hello.borrow() == Verdict::Accepted)
    }

    /// Waits until the server has accepted this connection's hello (at once when it was
    /// read before the connection started, or has been accepted since); the error every call
    /// on it gets otherwise. The wait is boxed: it stays out of the futures of calls on a
    /// connection whose hello is settled.
    pub(crate) fn accepted(&self) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        match &self.hello {
            Some(hello) if *hello.borrow() != Verdict::Accepted => {
                Either::Right(Box::pin(self.wait_accepted(hello)))
            }
            _ => Either::Left(ready(Ok(()))),
        }
    }

    async fn wait_accepted(&self, hello: &watch::Receiver<Verdict>) -> Result<(), Error> {
        let mut hello = hello.clone();
        let accepted = hello
            .wait_for(|verdict| *verdict != Verdict::Waiting)
            .await
            .is_ok_and(|verdict| *verdict == Verdict::Accepted);
        if accepted {
            Ok(())
        } else {
            Err(self.pending.closed_error())
        }
    }

    /// A unary call's frame, ready to send, with the request id it uses; `wire` is what the
    /// server is told of its deadline.
    pub(crate) fn encode_request(
        &self,
        call: &Call<'_>,
        wire: Option<Duration>,
    ) -> Result<(u64, Bytes), Error> {
        let request_id = self.next_request_id();
        let frame = self.encode(FrameKind::Request, request_id, call, deadline_ms(wire))?;
        Ok((request_id, frame))
    }

    /// A one-way call's frame (it carries no deadline: nothing waits for it on the server).
    pub(crate) fn encode_notify(&self, call: &Call<'_>) -> Result<Bytes, Error> {
        let request_id = self.next_request_id();
        self.encode(FrameKind::Notify, request_id, call, 0)
    }

    pub(crate) fn next_request_id(&self) -> u64 {
        self.next_request_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Queues a one-way call's frame: at once when the write queue has room, else once it
    /// has (boxed: the wait, and the deadline's timer, stay out of the futures of the calls
    /// that never wait), at most until the call's deadline.
    pub(crate) fn send_notify(
        &self,
        frame: Bytes,
        deadline: Option<Deadline>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        if self.pending.is_closed() {
            return Either::Left(ready(Err(self.pending.unsent_error())));
        }
        match self.sink.try_send(frame, Delivery::Background) {
            Ok(()) => Either::Left(ready(Ok(()))),
            Err(TrySend::Closed) => Either::Left(ready(Err(self.pending.unsent_error()))),
            Err(TrySend::Full(frame)) => Either::Right(Box::pin(async move {
                let send = self.sink.send(frame, Delivery::Background);
                match deadline {
                    Some(deadline) => tokio::time::timeout_at(deadline.at(), send)
                        .await
                        .map_err(|_| deadline.expired())?,
                    None => send.await,
                }
                .map_err(|_| self.pending.unsent_error())
            })),
        }
    }

    /// The frame of `kind` for `call`: its metadata (and trace context) when the server can
    /// receive them, then its arguments in this connection's codec.
    pub(crate) fn encode(
        &self,
        kind: FrameKind,
        request_id: u64,
        call: &Call<'_>,
        deadline_ms: u32,
    ) -> Result<Bytes, Error> {
        let metadata = call.metadata.map(|metadata| &**metadata);
        let mut frame = match (self.version >= 2, metadata, call.trace) {
            // Nothing to send, or a version 1 server that cannot receive it.
            (false, ..) | (true, None, None) => FrameBuf::with_capacity(64),
            (true, Some(metadata), None) => FrameBuf::with_metadata(64, metadata),
            (true, metadata, Some(trace)) => {
                let mut metadata = metadata.cloned().unwrap_or_default();
                metadata.insert(TRACEPARENT, trace.to_traceparent())?;
                FrameBuf::with_metadata(64, &metadata)
            }
        };
        call.args
            .encode_to(self.encoding(), frame.payload_writer())?;
        let send_limit = self.send_limit.load(Ordering::Relaxed);
        Ok(frame.finish_compressed(
            kind,
            request_id,
            call.method,
            deadline_ms,
            send_limit,
            self.compressor_for(call.uncompressed),
        )?)
    }

    /// How payloads are written on this connection: its codec, as its version writes it.
    pub(crate) fn encoding(&self) -> Encoding {
        Encoding::new(self.codec, self.version)
    }

    /// The compressor for the frames of a call, `None` when the connection does not compress
    /// or the call opted out.
    pub(crate) fn compressor_for(&self, uncompressed: bool) -> Option<&FrameCompressor> {
        self.compressor.as_deref().filter(|_| !uncompressed)
    }

    /// Why this connection closed (for messages).
    pub(crate) fn closed_reason(&self) -> String {
        self.pending
            .closed_reason()
            .unwrap_or_else(|| "the connection's tasks ended".to_owned())
    }

    /// The payload of a Response frame, or the caller's error for an Error frame.
    pub(crate) fn reply_payload(&self, method: MethodId, frame: Frame) -> Result<Bytes, Error> {
        let payload = if frame.flags & FLAG_METADATA != 0 {
            let (metadata, payload) = Metadata::decode(frame.payload)?;
            reply_metadata::deliver(metadata);
            payload
        } else {
            frame.payload
        };
        match frame.kind {
            FrameKind::Response => Ok(payload),
            _ => {
                let body = ErrorBody::decode(&payload);
                Err(Error::from_remote(method, body.code, body.message))
            }
        }
    }
}

/// What the server hello of a connection opened with early calls said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Not read yet.
    Waiting,
    /// Accepted with the codec and version the calls were sent in.
    Accepted,
    /// Refused, garbled or never read: every call on the connection failed with the error a
    /// connect would have returned. `refused_early`: the refusal was `EarlyCallsRefused`.
    Refused { refused_early: bool },
}

/// The hello of a connection opened with early calls, and how to check the answer to it.
pub(super) struct EarlyHello {
    /// Sent first; announces early calls and lists their codec first.
    pub(super) hello: ClientHello,
    /// The server, as the early-calls table knows it.
    pub(super) key: ServerKey,
    /// Whether the server chooses by its own order, as the table knows (the answer to an
    /// early hello cannot tell).
    pub(super) server_order: bool,
    /// How long the server hello may take (the handshake timeout).
    pub(super) timeout: Duration,
    /// Turns a failed handshake into the error a connect would have returned (with TLS, an
    /// alert read in place of the hello is a TLS failure).
    pub(super) map_error: fn(Error) -> Error,
}

impl EarlyHello {
    /// Reads and checks the server hello, records in the early-calls table what it said, and
    /// lowers `send_limit` to the limit it announced.
    async fn settle<R: tokio::io::AsyncRead + Unpin>(
        self,
        read_half: &mut R,
        own_limit: u32,
        send_limit: &AtomicU32,
    ) -> Result<Option<Algorithm>, Error> {
        let verdict = tokio::time::timeout(self.timeout, read_verdict(read_half, &self.hello))
            .await
            .unwrap_or(Err(NegotiationError::TimedOut));
        match verdict {
            Ok((negotiated, supported)) => {
                send_limit.store(negotiated.send_limit(own_limit), Ordering::Relaxed);
                if negotiated.early_calls {
                    let known = KnownServer::accepted(
                        &self.hello.codecs,
                        &negotiated,
                        &supported,
                        Some(self.server_order),
                    );
                    early::remember(self.key, known);
                } else {
                    // A server that no longer announces early calls ran these as first
                    // frames (same codec, same version), but gets none next time.
                    early::forget(&self.key);
                }
                Ok(negotiated.compression)
            }
            Err(err) => {
                early::forget(&self.key);
                Err((self.map_error)(Error::Negotiation(err)))
            }
        }
    }
}

/// Reads the server's verdict on an early hello (after writing the hello, unless a call
/// already did), and publishes it. Returns the read half to read replies from, or `None` when
/// the server refused: then every waiting call has failed with the cause, and the connection
/// is closed. The verdict is out before the calls fail, so that each of them can see why, and
/// it is final: the reader reads no frame after a refusal.
async fn settle_early(
    early: EarlyHello,
    mut read_half: BoxedRead,
    own_limit: u32,
    send_limit: Arc<AtomicU32>,
    verdict: watch::Sender<Verdict>,
    pending: Arc<PendingCalls>,
    sink: FrameSink,
) -> Option<(BoxedRead, Option<Algorithm>)> {
    // Calls sent behind the hello time out meanwhile as they would once the reader runs.
    let settling = async {
        sink.flush().await;
        early.settle(&mut read_half, own_limit, &send_limit).await
    };
    let settled = tokio::select! {
        settled = settling => settled,
        never = reader::sweep_deadlines(&pending, &sink) => match never {},
    };
    match settled {
        Ok(compression) => {
            verdict.send_replace(Verdict::Accepted);
            Some((read_half, compression))
        }
        Err(err) => {
            let refused_early = matches!(
                err,
                Error::Negotiation(NegotiationError::EarlyCallsRefused { .. })
            );
            verdict.send_replace(Verdict::Refused { refused_early });
            tracing::debug!(%err, "the server did not accept the early hello");
            pending.fail_hello(err);
            sink.close();
            None
        }
    }
}
