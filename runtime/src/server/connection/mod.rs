//! One server connection: handshake, then a read loop that starts every call as its own task,
//! so a slow call never holds up a fast one, while the connection's writer sends replies in
//! whatever order they finish. The read loop and the writer share the connection's one task
//! (`transport::one_task`).
//!
//! Layout: this module is the read loop and the close; `handshake.rs` the hello within the
//! handshake deadline; `state.rs` what every call task of the connection shares;
//! `admission.rs` how a request, a one-way call or a stream's open becomes a running call
//! (its route found once, its span, then the server's one pipeline; run inline, or as a task);
//! `supervise.rs` what every call that runs as a task goes through (cancellation, deadline,
//! its outcome recorded); `stream_task.rs` a stream's task (its items come from
//! `server/stream/`, its one end goes out here); `calls.rs` the calls running, by request id
//! and against the connection's limits; `slots.rs` those limits; `reply.rs` how an outcome
//! becomes a frame; `rejected.rs` why a call was not started; `gauge.rs` a running call's
//! share of the in-flight gauge.
//!
//! Memory: a server holds one task per connection for the connection's whole life, most of
//! them idle, so that task is kept small, and it is the only one: the writer runs in it.
//! Opening a connection ([`open_connection`]) runs in its own boxed future, freed once the
//! hello is done; what the read loop needs afterwards is one [`Serving`] value, which
//! [`Connection::run`] uses in place; every path taken at most once (a wait for a call slot,
//! the close) is boxed.

mod admission;
mod calls;
mod gauge;
mod handshake;
mod rejected;
pub(crate) mod reply;
mod slots;
mod state;
mod stream_task;
mod supervise;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::{Instant, Sleep};

use super::identity::PeerIdentity;
use super::shared::{ConnectionSlot, Shared};
use crate::compression::FrameCompressor;
use crate::error::ErrorCode;
use crate::transport::frame::{Frame, FrameCodec, FrameError, FrameKind};
use crate::transport::frame_reader::{FrameReader, ReadPolicy};
use crate::transport::liveness::{Liveness, Seen, Silence};
use crate::transport::one_task::{with_writer, writer_ended};
use crate::transport::writer::{Delivery, FrameSink, SinkWriter};
use crate::transport::{BoxedRead, BoxedStream};

use admission::start_call;
use calls::{CallSlot, Calls, UploadTarget};
use handshake::handshake;
use rejected::CallRejected;
use reply::{queue_reply, send_connection_error};
use state::ConnectionState;

/// How long the writer may take to flush the last replies before the connection is dropped.
const CLOSE_FLUSH_LIMIT: Duration = Duration::from_secs(5);

/// Why the read loop stopped.
enum End {
    /// The peer closed or reset the connection: nobody will read replies any more.
    PeerGone,
    /// The peer broke the protocol: it is sent this error frame, then the connection closes.
    Violation(ErrorCode, String),
    /// The server is shutting down: finish what runs, then close.
    Shutdown,
}

/// Runs the wirecall handshake on an accepted (and, with TLS, already secured) stream and
/// sets the connection up; `None` when the connection is to be dropped (logged). `deadline`
/// bounds the whole handshake, TLS included.
pub(crate) async fn open_connection(
    mut stream: BoxedStream,
    mut identity: PeerIdentity,
    deadline: Instant,
    shared: Arc<Shared>,
) -> Option<Connection> {
    let negotiated = handshake(&mut stream, identity.peer_addr, deadline, &shared).await?;
    identity.token_authenticated = shared.token.is_some();
    tracing::debug!(peer = ?identity.peer_addr, codec = %negotiated.codec, version = negotiated.version, "connection accepted");
    shared.metrics.connections_total.increment(1);
    shared.metrics.connections.increment(1.0);
    let config = &shared.config;
    let (read_half, write_half) = stream.into_halves();
    let (sink, writer) = FrameSink::new(write_half);
    let frames = FrameReader::new(
        read_half,
        FrameCodec::for_version(config.max_frame_len, negotiated.version)
            .decompressing(negotiated.compression),
        ReadPolicy::Server,
    );
    let state = ConnectionState {
        codec: negotiated.codec,
        version: negotiated.version,
        sink,
        calls: Arc::new(Calls::new(
            config.max_in_flight_per_connection,
            config.max_streams_per_connection,
        )),
        send_limit: negotiated.send_limit(config.max_frame_len),
        compressor: negotiated
            .compression
            .map(|algorithm| Arc::new(FrameCompressor::new(&config.compression, Some(algorithm)))),
        identity: Arc::new(identity),
    };
    Some(Connection {
        writer,
        serving: Serving {
            frames,
            clock: None,
            state,
            shared,
        },
    })
}

/// An open connection, not yet served.
pub(crate) struct Connection {
    /// What writes what the call tasks could not write themselves.
    writer: SinkWriter,
    serving: Serving,
}

/// What a connection's read loop keeps for the connection's life.
struct Serving {
    frames: FrameReader<BoxedRead>,
    /// When the last call finished inline, if the loop has not waited since: the arrival
    /// time of the next frame of the same burst (see [`start_call`]).
    clock: Option<Instant>,
    state: ConnectionState,
    shared: Arc<Shared>,
}

impl Connection {
    /// Serves the connection until the peer leaves, breaks the protocol or the server shuts
    /// down, then closes it, the read loop and the writer in one task.
    /// `slot` (the connection's place in the server's count) is freed at the end.
    pub(super) fn run(self, slot: ConnectionSlot) -> impl Future<Output = ()> + Send {
        let stall_limit = Some(self.serving.shared.config.write_timeout);
        with_writer(self.writer, stall_limit, self.serving.run(slot))
    }
}

impl Serving {
    /// The read loop, then the close; see [`Connection::run`].
    #[allow(
        clippy::manual_async_fn,
        reason = "an `async fn` keeps a second copy of its arguments in its state"
    )]
    fn run(mut self, slot: ConnectionSlot) -> impl Future<Output = ()> + Send {
        // An `async` block rather than an `async fn`: it uses `self` where it is, where an
        // `async fn` would keep a second copy of its argument for the connection's life.
        async move {
            let end = self.read_loop().await;
            if matches!(end, End::PeerGone)
                && self.state.calls.none_running()
                && self.state.sink.backlog_writes().is_none()
            {
                // The usual end: the peer left, nothing runs and everything queued is
                // written. Nothing is left to wait for, and when thousands of peers leave
                // at once, their connections free their memory now instead of all waiting
                // together.
                self.state.sink.close();
            } else {
                // Boxed: dead until the end, and inline it would enlarge the task all along.
                Box::pin(self.close(end)).await;
            }
            self.shared.metrics.connections.decrement(1.0);
            tracing::debug!(peer = ?self.state.identity.peer_addr, "connection closed");
            drop(slot);
        }
    }

    /// Reads and handles frames until the connection is to close. Only the timer, the
    /// liveness record and the wait itself live across its waits: handling a frame does not
    /// wait (what must wait is a boxed step), and a violation's error frame is sent by
    /// [`close`](Self::close).
    #[allow(
        clippy::manual_async_fn,
        reason = "an `async fn` keeps a second copy of its arguments in its state"
    )]
    fn read_loop(&mut self) -> impl Future<Output = End> + Send + '_ {
        async move {
            let mut liveness = Liveness::new();
            let idle =
                tokio::time::sleep_until(liveness.first_deadline(&self.shared.config.liveness()));
            tokio::pin!(idle);

            loop {
                // Under a continuous stream of frames the loop never waits; look at the shutdown
                // token now and then instead of per frame.
                if liveness.burst() % 64 == 63 && self.shared.shutdown.is_cancelled() {
                    return End::Shutdown;
                }
                let next = match self.next_frame(&mut liveness, idle.as_mut()).await {
                    Ok(next) => next,
                    Err(end) => return end,
                };
                liveness.frame();
                let frame = match admit_frame(next) {
                    Ok(frame) => frame,
                    Err(end) => return end,
                };
                match frame.kind {
                    FrameKind::Cancel => self.state.calls.abort(frame.request_id),
                    FrameKind::Credit => {
                        if let Err(err) = self.state.calls.grant(frame.request_id, &frame.payload) {
                            let message = format!("stream {}: {err}", frame.request_id);
                            return End::Violation(ErrorCode::ProtocolViolation, message);
                        }
                    }
                    FrameKind::Item | FrameKind::End => {
                        if let Err(message) = route_upload(&self.state.calls, frame) {
                            return End::Violation(ErrorCode::ProtocolViolation, message);
                        }
                    }
                    FrameKind::Pong => {}
                    FrameKind::Response | FrameKind::Error | FrameKind::Head => {
                        let message = format!("a client may not send {:?} frames", frame.kind);
                        return End::Violation(ErrorCode::ProtocolViolation, message);
                    }
                    FrameKind::Request | FrameKind::Notify | FrameKind::Open | FrameKind::Ping => {
                        let unfinished = match self.handle(frame) {
                            Ok(None) => continue,
                            Ok(Some(unfinished)) => unfinished,
                            Err(end) => return end,
                        };
                        // Rare, so boxed: inline, its state would enlarge every connection.
                        if let Err(end) = Box::pin(self.finish_handling(unfinished)).await {
                            return end;
                        }
                    }
                }
            }
        }
    }

    /// The next frame: at once if it is already buffered; otherwise, once the replies queued
    /// so far are written (one write for a whole burst of pipelined requests), the next to
    /// arrive, with the liveness timer, the writer's end and the shutdown watched meanwhile.
    /// Nothing it computes outlives a wait, so that the loop's state stays small: the liveness
    /// periods are read from the config where they are used.
    #[allow(
        clippy::manual_async_fn,
        reason = "an `async fn` keeps a second copy of its arguments in its state"
    )]
    fn next_frame<'a>(
        &'a mut self,
        liveness: &'a mut Liveness,
        mut idle: Pin<&'a mut Sleep>,
    ) -> impl Future<Output = Result<Option<Result<Frame, FrameError>>, End>> + Send + 'a {
        async move {
            loop {
                if let Poll::Ready(next) = futures::poll!(self.frames.next()) {
                    return Ok(next);
                }
                // After a wait, the next frame's arrival is read afresh.
                self.clock = None;
                liveness.before_wait(self.frames.reads());
                // Calls running: the client gets the shorter silence (a frame that started one moved
                // `last_frame`, and the timer may be far out).
                if let Some(busy_deadline) = liveness.busy_deadline(&self.shared.config.liveness())
                {
                    if busy_deadline < idle.deadline() && !self.state.calls.none_running() {
                        idle.as_mut().reset(busy_deadline);
                    }
                }
                self.frames.park();
                self.state.sink.flush().await;
                tokio::select! {
                    biased;
                    _ = self.shared.shutdown.cancelled() => return Err(End::Shutdown),
                    // The writer only ends early when the peer stopped reading or the socket
                    // broke.
                    () = writer_ended(&self.state.sink) => return Err(End::PeerGone),
                    _ = &mut idle => {
                        let seen = Seen {
                            busy: !self.state.calls.none_running(),
                            reads: self.frames.reads(),
                            backlog_writes: self.state.sink.backlog_writes(),
                        };
                        let periods = self.shared.config.liveness();
                        match liveness.on_timer(Instant::now(), seen, &periods) {
                            Silence::Rearm(at) => idle.as_mut().reset(at),
                            Silence::Ping(at) => {
                                let ping = Frame::control(FrameKind::Ping, 0).to_bytes();
                                self.state.sink.send_now(ping);
                                idle.as_mut().reset(at);
                            }
                            Silence::Dead => {
                                return Err(End::Violation(
                                    ErrorCode::IdleTimeout,
                                    format!(
                                        "no frame for {:?} ({:?} while calls ran) and no answer \
                                         to a ping within {:?}",
                                        periods.idle, periods.busy, periods.answer
                                    ),
                                ));
                            }
                        }
                    }
                next = self.frames.next() => return Ok(next),
                }
            }
        }
    }

    /// Starts a call, or answers a ping, without waiting: the usual call costs no future.
    /// What needs a wait (a free call slot, room in the sink) is returned, for
    /// [`finish_handling`](Self::finish_handling).
    fn handle(&mut self, frame: Frame) -> Result<Option<Unfinished>, End> {
        if frame.kind == FrameKind::Ping {
            let pong = Frame::control(FrameKind::Pong, frame.request_id).to_bytes();
            return queue_reply(&self.state.sink, pong)
                .map(|full| full.map(Unfinished::Reply))
                .map_err(End::from);
        }
        if frame.kind == FrameKind::Open {
            let Some(slot) = self.state.calls.try_stream_slot() else {
                // Refused rather than waited for (see `Calls`); checked for a duplicate id
                // first, as every call is.
                if self.state.calls.contains(frame.request_id) {
                    let message = format!("request id {} is already in flight", frame.request_id);
                    return Err(End::Violation(ErrorCode::ProtocolViolation, message));
                }
                let limit = self.state.calls.stream_limit();
                let refused = Frame::error(
                    frame.request_id,
                    frame.method,
                    ErrorCode::Overloaded,
                    &format!("the connection has {limit} streams open, its limit"),
                );
                return queue_reply(&self.state.sink, refused.to_bytes())
                    .map(|full| full.map(Unfinished::Reply))
                    .map_err(End::from);
            };
            return start_call(frame, slot, &self.state, &self.shared, &mut self.clock)
                .map(|full| full.map(Unfinished::Reply))
                .map_err(End::from);
        }
        let Some(slot) = self.state.calls.try_slot() else {
            return Ok(Some(Unfinished::NoSlot(frame)));
        };
        start_call(frame, slot, &self.state, &self.shared, &mut self.clock)
            .map(|full| full.map(Unfinished::Reply))
            .map_err(End::from)
    }

    /// Does what [`handle`](Self::handle) could not do without waiting.
    async fn finish_handling(&mut self, unfinished: Unfinished) -> Result<(), End> {
        let reply = match unfinished {
            Unfinished::Reply(reply) => reply,
            Unfinished::NoSlot(frame) => {
                let slot = self.wait_for_slot().await?;
                self.clock = None;
                match start_call(frame, slot, &self.state, &self.shared, &mut self.clock)? {
                    Some(reply) => reply,
                    None => return Ok(()),
                }
            }
        };
        let sent = self.state.sink.send(reply, Delivery::Corked).await;
        // The send may have waited.
        self.clock = None;
        sent.map_err(|_| End::PeerGone)
    }

    /// Waits for a call slot when every one is taken. Waiting here stops reading the
    /// connection: backpressure on the peer.
    async fn wait_for_slot(&mut self) -> Result<CallSlot, End> {
        self.state.sink.flush().await;
        tokio::select! {
            slot = self.state.calls.slot() => Ok(slot),
            _ = self.shared.shutdown.cancelled() => Err(End::Shutdown),
            () = writer_ended(&self.state.sink) => Err(End::PeerGone),
        }
    }

    /// Finishes or stops the calls still running, says goodbye when shutting down, and lets
    /// the writer send what is queued.
    async fn close(&mut self, end: End) {
        let sink = &self.state.sink;
        let calls = &self.state.calls;
        match end {
            End::Shutdown => {
                sink.flush().await;
                // The calls still running are finished, but their streams still need the
                // client's Credit, Cancel and upload frames: those are read meanwhile.
                let stopped = tokio::select! {
                    _ = calls.finished() => 0,
                    _ = self.shared.force.cancelled() => calls.abort_all(),
                    () = serve_running_streams(&mut self.frames, &self.state) => calls.abort_all(),
                };
                calls.finished().await;
                // The goodbye tells the client that every call it still waits for never ran,
                // so that a balanced channel may send them elsewhere, idempotent or not. Calls
                // the grace period (or an abort) stopped half-way may have run: then the
                // connection closes without it, and the client counts them as maybe run.
                if stopped == 0 {
                    send_connection_error(
                        sink,
                        ErrorCode::ShuttingDown,
                        "the server is shutting down",
                    )
                    .await;
                }
            }
            End::Violation(code, message) => {
                send_connection_error(sink, code, &message).await;
                // Nobody will read the replies: stop the work.
                calls.abort_all();
                calls.finished().await;
            }
            End::PeerGone => {
                // Nobody will read the replies: stop the work.
                calls.abort_all();
                calls.finished().await;
            }
        }
        sink.close();
        // Past the limit, the connection's task ends and drops the writer with the rest.
        let _ = tokio::time::timeout(CLOSE_FLUSH_LIMIT, writer_ended(sink)).await;
    }
}

/// Queues an upload's `Item` or takes its `End`; the message of a protocol violation
/// (wire chapter, "Credit"). A frame for a call that has ended is discarded: the server may
/// answer before the client's upload is over.
fn route_upload(calls: &Calls, frame: Frame) -> Result<(), String> {
    match calls.upload(frame.request_id) {
        UploadTarget::Gone => Ok(()),
        UploadTarget::NoUpload => Err(format!(
            "a client may not send {:?} frames on stream {}: its method takes no upload",
            frame.kind, frame.request_id
        )),
        UploadTarget::Queue(queue) if frame.kind == FrameKind::End => queue.end(),
        UploadTarget::Queue(queue) => queue.push(frame.payload),
    }
}

/// While a shutting-down connection waits for its calls: reads what running streams need
/// (Credit, Cancel, upload Items and End) and answers Pings; a new call is refused with
/// `ShuttingDown`, as it never ran. Returns when the peer is gone or breaks the protocol:
/// then the calls cannot be answered any more.
async fn serve_running_streams(frames: &mut FrameReader<BoxedRead>, state: &ConnectionState) {
    while let Some(Ok(frame)) = frames.next().await {
        let ended = match frame.kind {
            FrameKind::Cancel => {
                state.calls.abort(frame.request_id);
                false
            }
            FrameKind::Credit => state.calls.grant(frame.request_id, &frame.payload).is_err(),
            FrameKind::Item | FrameKind::End => route_upload(&state.calls, frame).is_err(),
            FrameKind::Ping => {
                state
                    .sink
                    .send_now(Frame::control(FrameKind::Pong, frame.request_id).to_bytes());
                false
            }
            FrameKind::Request | FrameKind::Open => {
                let refused = Frame::error(
                    frame.request_id,
                    frame.method,
                    ErrorCode::ShuttingDown,
                    "the server is shutting down and starts no new call",
                );
                state.sink.send_now(refused.to_bytes());
                false
            }
            FrameKind::Notify | FrameKind::Pong => false,
            FrameKind::Response | FrameKind::Error | FrameKind::Head => true,
        };
        if ended {
            return;
        }
    }
}

/// What [`Serving::handle`] left to do, because it needs a wait.
enum Unfinished {
    /// Every call slot is taken: start this call once one is free.
    NoSlot(Frame),
    /// The sink is full: send this reply once it has room.
    Reply(Bytes),
}

impl From<CallRejected> for End {
    fn from(rejected: CallRejected) -> Self {
        match rejected {
            CallRejected::Violation(message) => {
                End::Violation(ErrorCode::ProtocolViolation, message)
            }
            CallRejected::SinkClosed => End::PeerGone,
        }
    }
}

/// The frame the read loop got, or why the connection ends. Out of line: a local the loop
/// borrows would take room in its state at every wait.
fn admit_frame(next: Option<Result<Frame, FrameError>>) -> Result<Frame, End> {
    let frame = match next {
        None => return Err(End::PeerGone),
        Some(Ok(frame)) => frame,
        Some(Err(FrameError::Io(err))) => {
            tracing::debug!(%err, "connection read failed");
            return Err(End::PeerGone);
        }
        Some(Err(err)) => {
            let code = match err {
                FrameError::TooLarge { .. } => ErrorCode::FrameTooLarge,
                _ => ErrorCode::ProtocolViolation,
            };
            tracing::debug!(%err, "closing connection on a bad frame");
            return Err(End::Violation(code, err.to_string()));
        }
    };
    if let Err(message) = check_header(&frame) {
        tracing::debug!(%message, "closing connection on a malformed frame header");
        return Err(End::Violation(ErrorCode::ProtocolViolation, message));
    }
    Ok(frame)
}

/// Checks the header fields a frame's kind fixes (wire chapter, "Frame kinds" and "Stream
/// frames"): a Request, Notify or Open needs a request id other than 0 (0 marks
/// connection-level errors); Ping, Pong, Cancel and End carry no method, deadline or
/// payload; Item and Credit no method or deadline.
fn check_header(frame: &Frame) -> Result<(), String> {
    match frame.kind {
        FrameKind::Request | FrameKind::Notify | FrameKind::Open if frame.request_id == 0 => {
            Err(format!("a {:?} frame may not use request id 0", frame.kind))
        }
        FrameKind::Ping | FrameKind::Pong | FrameKind::Cancel | FrameKind::End
            if frame.method.get() != 0
                || frame.deadline_ms != 0
                || frame.flags != 0
                || !frame.payload.is_empty() =>
        {
            Err(format!(
                "a {:?} frame must have method id 0, deadline 0, no flags and no payload",
                frame.kind
            ))
        }
        FrameKind::Item | FrameKind::Credit
            if frame.method.get() != 0 || frame.deadline_ms != 0 || frame.flags != 0 =>
        {
            Err(format!(
                "a {:?} frame must have method id 0, deadline 0 and no flags",
                frame.kind
            ))
        }
        _ => Ok(()),
    }
}
