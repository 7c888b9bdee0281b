//! A channel's connection and its call path: encode the arguments (and metadata) into a
//! frame, register the call, send, wait for the reply or the deadline, decode. Cancelling a
//! call (dropping its future) sends a `Cancel`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::Either;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::codec::{Codec, WireMessage};
use crate::context::CallContext;
use crate::error::{Error, ErrorCode};
use crate::frame::{ErrorBody, Frame, FrameBuf, FrameCodec, FrameKind, FLAG_METADATA};
use crate::metadata::Metadata;
use crate::method::MethodId;
use crate::negotiate::Negotiated;
use crate::trace::{TraceContext, TRACEPARENT};
use crate::transport::Transport;
use crate::writer::{Delivery, FrameSink};

use super::dial::ConnectionSettings;
use super::pending::{Closed, PendingCalls};
use super::request::EncodeArgs;
use super::{reader, reply_metadata};

/// One negotiated connection: the call path from encoded arguments to a decoded reply.
pub(crate) struct Connection {
    pub(super) codec: Codec,
    /// The negotiated protocol version: metadata travels from version 2 on.
    pub(super) version: u8,
    pub(super) sink: FrameSink,
    pub(super) pending: Arc<PendingCalls>,
    pub(super) next_request_id: AtomicU64,
    /// The largest frame this connection may send: the channel's `max_frame_len`, lowered to
    /// the server's announced limit (version 2).
    pub(super) send_limit: u32,
    pub(super) peer: Option<SocketAddr>,
    pub(super) reader: JoinHandle<()>,
    /// The reader and writer tasks, so that closing can wait for both to end.
    pub(super) tasks: TaskTracker,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // The writer sends what is queued, then shuts the stream down.
        self.sink.close();
        self.reader.abort();
    }
}

impl Connection {
    /// The connection's codec.
    pub(crate) fn codec(&self) -> Codec {
        self.codec
    }

    /// Starts the writer and the reader of a connection whose hello was accepted.
    pub(super) fn start<T: Transport>(
        stream: T,
        negotiated: Negotiated,
        peer: Option<SocketAddr>,
        settings: &ConnectionSettings,
    ) -> Self {
        let (read_half, write_half) = stream.split_io();
        let (sink, sink_writer) = FrameSink::new(write_half);
        let tasks = TaskTracker::new();
        tasks.spawn(async move {
            if let Err(err) = sink_writer.run(None).await {
                tracing::debug!(%err, "client writer ended");
            }
        });
        let pending = Arc::new(PendingCalls::default());
        let frames = FramedRead::new(
            read_half,
            FrameCodec::for_version(settings.max_frame_len, negotiated.version),
        );
        let reader = tasks.spawn(reader::run_reader(
            frames,
            Arc::clone(&pending),
            sink.clone(),
            settings.keepalive,
        ));
        Self {
            codec: negotiated.codec,
            version: negotiated.version,
            sink,
            pending,
            next_request_id: AtomicU64::new(1),
            send_limit: negotiated.send_limit(settings.max_frame_len),
            peer,
            reader,
            tasks,
        }
    }

    pub(super) async fn call<A: WireMessage, R: WireMessage>(
        &self,
        method: MethodId,
        args: A,
        timeout: Option<Duration>,
        outgoing: Outgoing<'_>,
    ) -> Result<R, Error> {
        // Encoded before the first await: the future then holds `args` (`Send`), never a
        // borrow of them (which would need `A: Sync`).
        let (request_id, frame) = self.encode_request(method, &args, timeout, &outgoing)?;
        drop(args);
        let payload = self
            .exchange(method, request_id, frame, timeout, outgoing.trace)
            .await?;
        Ok(self.codec.decode(&payload)?)
    }

    /// A call whose reply payload is returned still encoded.
    pub(super) async fn call_encoded<E: EncodeArgs + ?Sized>(
        &self,
        method: MethodId,
        args: &E,
        timeout: Option<Duration>,
        outgoing: Outgoing<'_>,
    ) -> Result<Bytes, Error> {
        let (request_id, frame) = self.encode_request(method, args, timeout, &outgoing)?;
        self.exchange(method, request_id, frame, timeout, outgoing.trace)
            .await
    }

    /// A call's frame, ready to send, with the request id it uses.
    pub(super) fn encode_request<E: EncodeArgs + ?Sized>(
        &self,
        method: MethodId,
        args: &E,
        timeout: Option<Duration>,
        outgoing: &Outgoing<'_>,
    ) -> Result<(u64, Bytes), Error> {
        let request_id = self.next_request_id.fetch_add(1, Ordering::Relaxed);
        let frame = self.encode(
            FrameKind::Request,
            request_id,
            method,
            deadline_ms(timeout),
            args,
            outgoing,
        )?;
        Ok((request_id, frame))
    }

    /// Sends a request frame and waits for its reply, at most `timeout`; the reply's payload
    /// (after its metadata, which goes to [`reply_metadata`]) on success.
    pub(super) async fn exchange(
        &self,
        method: MethodId,
        request_id: u64,
        frame: Bytes,
        timeout: Option<Duration>,
        trace: Option<TraceContext>,
    ) -> Result<Bytes, Error> {
        let span = tracing::debug_span!(
            "wirecall.call",
            side = "client",
            %method,
            request_id,
            codec = %self.codec,
            trace_id = trace.map(|t| t.trace_id_hex()),
            span_id = trace.map(|t| t.span_id_hex()),
        );
        let reply = self.pending.register(request_id)?;
        let mut cancel = CancelOnDrop {
            connection: self,
            request_id,
            armed: true,
        };
        let exchange = async {
            // A lone call writes its own frame; among many, the writer task batches them.
            let delivery = if self.pending.len() <= 1 {
                Delivery::Now
            } else {
                Delivery::Background
            };
            self.sink
                .send(frame, delivery)
                .await
                .map_err(|_| self.closed_error())?;
            reply.await.map_err(|_| self.closed_error())?
        };
        let exchange = if span.is_disabled() {
            Either::Left(exchange)
        } else {
            Either::Right(exchange.instrument(span))
        };
        let deadline = timeout.map(|after| Instant::now() + after);
        let frame = match deadline {
            Some(at) => {
                tokio::time::timeout_at(at, exchange)
                    .await
                    .map_err(|_| Error::Timeout {
                        after: timeout.unwrap_or_default(),
                    })??
            }
            None => exchange.await?,
        };
        cancel.armed = false;
        match self.reply_payload(method, frame) {
            // The server's copy of the deadline can fire a moment before ours: it is the same
            // deadline, so the caller sees the same error either way. Well before ours, it is
            // a time limit of the server's own (a timeout layer), reported as the server's.
            Err(Error::Remote {
                code: ErrorCode::DeadlineExceeded,
                ..
            }) if deadline.is_some_and(|at| Instant::now() + SAME_DEADLINE >= at) => {
                Err(Error::Timeout {
                    after: timeout.unwrap_or_default(),
                })
            }
            other => other,
        }
    }

    /// Sends a one-way call; resolves once it is queued.
    ///
    /// Encoded before this returns: the future holds no borrow of `args`, so it is `Send`
    /// whatever they are.
    pub(super) fn notify<E: EncodeArgs + ?Sized>(
        &self,
        method: MethodId,
        args: &E,
        timeout: Option<Duration>,
        outgoing: Outgoing<'_>,
    ) -> impl Future<Output = Result<(), Error>> + Send + '_ {
        let frame = self.encode_notify(method, args, &outgoing);
        async move { self.send_notify(frame?, timeout).await }
    }

    pub(super) fn encode_notify<E: EncodeArgs + ?Sized>(
        &self,
        method: MethodId,
        args: &E,
        outgoing: &Outgoing<'_>,
    ) -> Result<Bytes, Error> {
        let request_id = self.next_request_id.fetch_add(1, Ordering::Relaxed);
        self.encode(FrameKind::Notify, request_id, method, 0, args, outgoing)
    }

    pub(super) async fn send_notify(
        &self,
        frame: Bytes,
        timeout: Option<Duration>,
    ) -> Result<(), Error> {
        if self.pending.is_closed() {
            return Err(self.closed_error());
        }
        let send = self.sink.send(frame, Delivery::Background);
        match timeout {
            Some(after) => tokio::time::timeout(after, send)
                .await
                .map_err(|_| Error::Timeout { after })?,
            None => send.await,
        }
        .map_err(|_| self.closed_error())
    }

    pub(super) fn encode<E: EncodeArgs + ?Sized>(
        &self,
        kind: FrameKind,
        request_id: u64,
        method: MethodId,
        deadline_ms: u32,
        args: &E,
        outgoing: &Outgoing<'_>,
    ) -> Result<Bytes, Error> {
        let mut frame = match (self.version >= 2, outgoing.metadata, outgoing.trace) {
            // Nothing to send, or a version 1 server that cannot receive it.
            (false, ..) | (true, None, None) => FrameBuf::with_capacity(64),
            (true, Some(metadata), None) => FrameBuf::with_metadata(64, metadata),
            (true, metadata, Some(trace)) => {
                let mut metadata = metadata.cloned().unwrap_or_default();
                metadata.insert(TRACEPARENT, trace.to_traceparent())?;
                FrameBuf::with_metadata(64, &metadata)
            }
        };
        args.encode_to(self.codec, frame.payload_writer())?;
        Ok(frame.finish(kind, request_id, method, deadline_ms, self.send_limit)?)
    }

    /// The payload of a Response frame, or the caller's error for an Error frame.
    pub(super) fn reply_payload(&self, method: MethodId, frame: Frame) -> Result<Bytes, Error> {
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

    /// The error of a call that found this connection closed.
    pub(super) fn closed_error(&self) -> Error {
        self.closed().error()
    }

    /// Why this connection closed.
    pub(super) fn closed(&self) -> Closed {
        self.pending
            .closed()
            .unwrap_or_else(|| Closed::new("the connection's tasks ended", None))
    }
}

/// What a call sends besides its arguments.
pub(super) struct Outgoing<'a> {
    pub(super) metadata: Option<&'a Metadata>,
    pub(super) trace: Option<TraceContext>,
}

impl<'a> Outgoing<'a> {
    /// With the trace context of a new call: a child of the server call it is made from (so
    /// a handler's calls join the trace of the call it serves), of a `traceparent` the caller
    /// set by hand, or, with `start_trace` (tracing on for the channel), a new trace.
    pub(super) fn new(metadata: Option<&'a Metadata>, start_trace: bool) -> Self {
        let trace = CallContext::with_current(|call| call.trace())
            .flatten()
            .or_else(|| {
                metadata
                    .and_then(|metadata| metadata.get(TRACEPARENT))
                    .and_then(TraceContext::parse)
            })
            .map(|parent| parent.child())
            .or_else(|| start_trace.then(TraceContext::new_root));
        Self { metadata, trace }
    }
}

/// How close to the caller's own deadline a server's `DeadlineExceeded` must come to be the
/// same deadline (the server starts its clock later, and counts whole milliseconds).
const SAME_DEADLINE: Duration = Duration::from_millis(5);

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
            self.connection.sink.send_now(cancel);
        }
    }
}
