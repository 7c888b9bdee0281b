//! One server connection: handshake, then a read loop that starts every call as its own task,
//! so a slow call never holds up a fast one, while the writer task sends replies in whatever
//! order they finish.

use std::cell::RefCell;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use futures::future::{AbortHandle, Abortable, Aborted, Either};
use futures::FutureExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::identity::PeerIdentity;
use super::metrics::{self, Outcome as Ended};
use super::request::{Reply, Request};
use super::Shared;
use crate::codec::Codec;
use crate::context::CallContext;
use crate::error::{CallError, ErrorCode};
use crate::frame::{Frame, FrameCodec, FrameError, FrameKind, FLAG_METADATA, FRAME_OVERHEAD};
use crate::frame_reader::FrameReader;
use crate::id_hash::IdMap;
use crate::liveness::{Liveness, Silence};
use crate::metadata::Metadata;
use crate::method::MethodId;
use crate::negotiate::{server_handshake, Negotiated, NegotiationError, ServerHandshake};
use crate::trace::{TraceContext, TRACEPARENT};
use crate::transport::Transport;
use crate::writer::{Delivery, FrameSink, TryCork};

/// How long the writer may take to flush the last replies before the connection is dropped.
const CLOSE_FLUSH_LIMIT: Duration = Duration::from_secs(5);

/// Why the read loop stopped.
enum End {
    /// The peer closed or reset the connection: nobody will read replies any more.
    PeerGone,
    /// The peer broke the protocol; it has been sent an error frame.
    Violation,
    /// The server is shutting down: finish what runs, then close.
    Shutdown,
}

/// Runs the wirecall handshake on an accepted (and, with TLS, already secured) stream, then
/// serves it. `deadline` bounds the whole handshake, TLS included.
pub(crate) async fn serve_connection<T: Transport>(
    mut stream: T,
    mut identity: PeerIdentity,
    deadline: Instant,
    shared: Arc<Shared>,
) {
    // Boxed: the handshake's state (its buffers and timer) is dead once it is done, and inline
    // it would enlarge the connection task for the connection's whole life.
    let Some(negotiated) = Box::pin(handshake(
        &mut stream,
        identity.peer_addr,
        deadline,
        &shared,
    ))
    .await
    else {
        return;
    };
    let peer = identity.peer_addr;
    identity.token_authenticated = shared.token.is_some();
    tracing::debug!(?peer, codec = %negotiated.codec, version = negotiated.version, "connection accepted");
    shared.metrics.connections_total.increment(1);
    shared.metrics.connections.increment(1.0);
    run_connection(stream, negotiated, identity, &shared).await;
    shared.metrics.connections.decrement(1.0);
    tracing::debug!(?peer, "connection closed");
}

/// Runs the server side of the hello within the handshake deadline; `None` when the
/// connection is to be dropped.
async fn handshake<T: Transport>(
    stream: &mut T,
    peer: Option<SocketAddr>,
    deadline: Instant,
    shared: &Shared,
) -> Option<Negotiated> {
    let config = &shared.config;
    let ip = peer.map(|addr| addr.ip());
    let authenticate = |token: &[u8]| shared.authenticate(ip, token);
    let reveal_codecs = shared.token_check.is_none();
    let offer = ServerHandshake {
        supported: &config.codecs,
        preference: config.preference,
        max_version: config.max_protocol_version,
        reveal_codecs,
        max_frame_len: config.max_frame_len,
    };
    let handshake = server_handshake(stream, offer, authenticate);
    tokio::select! {
        outcome = tokio::time::timeout_at(deadline, handshake) => match outcome {
            Ok(Ok(negotiated)) => Some(negotiated),
            Ok(Err(NegotiationError::AuthenticationFailed)) => {
                tracing::warn!(?peer, "authentication failed");
                metrics::handshake_failed("authentication");
                None
            }
            Ok(Err(err)) => {
                tracing::debug!(?peer, %err, "handshake failed");
                metrics::handshake_failed(metrics::handshake_reason(&err));
                None
            }
            Err(_) => {
                tracing::debug!(?peer, "handshake timed out");
                metrics::handshake_failed("timeout");
                None
            }
        },
        _ = shared.shutdown.cancelled() => None,
    }
}

async fn run_connection<T: Transport>(
    stream: T,
    negotiated: Negotiated,
    identity: PeerIdentity,
    shared: &Arc<Shared>,
) {
    let config = &shared.config;
    let (read_half, write_half) = stream.split_io();
    let (sink, sink_writer) = FrameSink::new(write_half);
    let mut writer = tokio::spawn(sink_writer.run(Some(config.write_timeout)));
    let mut writer_done = false;
    let mut frames = FrameReader::new(
        read_half,
        FrameCodec::for_version(config.max_frame_len, negotiated.version),
    );
    let calls = Arc::new(InFlight::default());
    let tasks = TaskTracker::new();
    let permits = Arc::new(Semaphore::new(config.max_in_flight_per_connection));
    let context = ConnectionState {
        codec: negotiated.codec,
        version: negotiated.version,
        sink: sink.clone(),
        calls: Arc::clone(&calls),
        send_limit: negotiated.send_limit(config.max_frame_len),
        identity: Arc::new(identity),
    };
    let mut liveness = Liveness::new(config.idle_timeout, config.ping_timeout);
    let idle = tokio::time::sleep_until(liveness.first_deadline());
    tokio::pin!(idle);

    let end = loop {
        // Under a continuous stream of frames the loop never waits; look at the shutdown token
        // now and then instead of per frame.
        if liveness.burst() % 64 == 63 && shared.shutdown.is_cancelled() {
            break End::Shutdown;
        }
        // Take the next frame if it is already buffered. Only when the connection has nothing
        // more to read right now are the replies queued so far written: one write for a whole
        // burst of pipelined requests.
        let next = match futures::poll!(frames.next()) {
            Poll::Ready(next) => next,
            Poll::Pending => {
                liveness.before_wait();
                frames.park();
                sink.flush().await;
                tokio::select! {
                    biased;
                    _ = shared.shutdown.cancelled() => break End::Shutdown,
                    // The writer only ends early when the peer stopped reading or the socket broke.
                    _ = &mut writer, if !writer_done => {
                        writer_done = true;
                        break End::PeerGone;
                    }
                    _ = &mut idle => {
                        match liveness.on_timer(Instant::now()) {
                            Silence::Rearm(at) => idle.as_mut().reset(at),
                            Silence::Ping(at) => {
                                sink.send_now(Frame::control(FrameKind::Ping, 0).to_bytes());
                                idle.as_mut().reset(at);
                            }
                            Silence::Dead => {
                                let message = format!(
                                    "no frame for {:?} and no answer to a ping within {:?}",
                                    config.idle_timeout, config.ping_timeout
                                );
                                send_connection_error(&sink, ErrorCode::IdleTimeout, &message)
                                    .await;
                                break End::Violation;
                            }
                        }
                        continue;
                    }
                    next = frames.next() => next,
                }
            }
        };
        liveness.frame();
        let frame = match next {
            None => break End::PeerGone,
            Some(Ok(frame)) => frame,
            Some(Err(FrameError::Io(err))) => {
                tracing::debug!(%err, "connection read failed");
                break End::PeerGone;
            }
            Some(Err(err)) => {
                let code = match err {
                    FrameError::TooLarge { .. } => ErrorCode::FrameTooLarge,
                    _ => ErrorCode::ProtocolViolation,
                };
                tracing::debug!(%err, "closing connection on a bad frame");
                send_connection_error(&sink, code, &err.to_string()).await;
                break End::Violation;
            }
        };
        if let Err(message) = check_header(&frame) {
            tracing::debug!(%message, "closing connection on a malformed frame header");
            send_connection_error(&sink, ErrorCode::ProtocolViolation, &message).await;
            break End::Violation;
        }
        match frame.kind {
            FrameKind::Request | FrameKind::Notify => {
                let permit = match Arc::clone(&permits).try_acquire_owned() {
                    Ok(permit) => permit,
                    Err(_) => {
                        // Waiting here stops reading the connection: backpressure on the peer.
                        sink.flush().await;
                        tokio::select! {
                            permit = Arc::clone(&permits).acquire_owned() => match permit {
                                Ok(permit) => permit,
                                Err(_) => break End::Shutdown,
                            },
                            _ = shared.shutdown.cancelled() => break End::Shutdown,
                            _ = &mut writer, if !writer_done => {
                                writer_done = true;
                                break End::PeerGone;
                            }
                        }
                    }
                };
                // Boxed: one small allocation per call keeps the call's state out of the
                // connection task, which lives (and holds its size) as long as the connection.
                match Box::pin(start_call(frame, permit, &context, shared, &tasks)).await {
                    Ok(()) => {}
                    Err(CallRejected::Violation(message)) => {
                        send_connection_error(&sink, ErrorCode::ProtocolViolation, &message).await;
                        break End::Violation;
                    }
                    Err(CallRejected::SinkClosed) => break End::PeerGone,
                }
            }
            FrameKind::Cancel => calls.abort(frame.request_id),
            FrameKind::Ping => {
                let pong = Frame::control(FrameKind::Pong, frame.request_id).to_bytes();
                if send_reply(&sink, pong).await.is_err() {
                    break End::PeerGone;
                }
            }
            FrameKind::Pong => {}
            FrameKind::Response | FrameKind::Error => {
                let message = format!("a client may not send {:?} frames", frame.kind);
                send_connection_error(&sink, ErrorCode::ProtocolViolation, &message).await;
                break End::Violation;
            }
        }
    };

    // Boxed, like every path taken at most once: a connection task's size is that of its
    // largest state, and it lives as long as the connection.
    Box::pin(close_connection(
        end,
        Closing {
            shared,
            sink,
            writer,
            writer_done,
            calls,
            tasks,
        },
    ))
    .await;
}

/// What closing a connection needs from its read loop.
struct Closing<'a> {
    shared: &'a Shared,
    sink: FrameSink,
    writer: tokio::task::JoinHandle<std::io::Result<()>>,
    writer_done: bool,
    calls: Arc<InFlight>,
    tasks: TaskTracker,
}

/// Finishes or stops the calls still running, says goodbye when shutting down, and lets the
/// writer send what is queued.
async fn close_connection(end: End, closing: Closing<'_>) {
    let Closing {
        shared,
        sink,
        mut writer,
        writer_done,
        calls,
        tasks,
    } = closing;
    tasks.close();
    match end {
        End::Shutdown => {
            sink.flush().await;
            tokio::select! {
                _ = tasks.wait() => {}
                _ = shared.force.cancelled() => calls.abort_all(),
            }
            tasks.wait().await;
            send_connection_error(
                &sink,
                ErrorCode::ShuttingDown,
                "the server is shutting down",
            )
            .await;
        }
        End::PeerGone | End::Violation => {
            // Nobody will read the replies: stop the work.
            calls.abort_all();
            tasks.wait().await;
        }
    }
    sink.close();
    if !writer_done
        && tokio::time::timeout(CLOSE_FLUSH_LIMIT, &mut writer)
            .await
            .is_err()
    {
        writer.abort();
    }
}

/// Why a call was not started.
enum CallRejected {
    /// The peer broke the protocol (a request id already in flight).
    Violation(String),
    /// The connection can no longer be written to.
    SinkClosed,
}

/// What every call task of one connection needs.
struct ConnectionState {
    codec: Codec,
    /// The negotiated protocol version (2: metadata may travel).
    version: u8,
    sink: FrameSink,
    calls: Arc<InFlight>,
    /// The largest frame this connection may send: the server's `max_frame_len`, lowered to
    /// the client's announced limit (version 2).
    send_limit: u32,
    /// Who is calling, for the authorisation hook and the handlers' call context.
    identity: Arc<PeerIdentity>,
}

/// Starts one call: runs it inline if it finishes without waiting, else as its own task.
async fn start_call(
    frame: Frame,
    permit: OwnedSemaphorePermit,
    context: &ConnectionState,
    shared: &Shared,
    tasks: &TaskTracker,
) -> Result<(), CallRejected> {
    let Frame {
        kind,
        request_id,
        method,
        deadline_ms,
        flags,
        payload,
    } = frame;
    // The deadline clock starts when the frame is read (wire chapter, "Deadlines"); so does
    // the call's duration.
    let received = Instant::now();
    let deadline = (deadline_ms != 0).then(|| received + Duration::from_millis(deadline_ms.into()));
    shared
        .metrics
        .received_bytes
        .increment((payload.len() + FRAME_OVERHEAD) as u64);
    // Checked before anything else: a duplicate id is a violation whatever the method.
    if context.calls.contains(request_id) {
        return Err(CallRejected::Violation(format!(
            "request id {request_id} is already in flight"
        )));
    }
    // A malformed block is a violation whatever the method, like a duplicate id.
    let (metadata, payload) = if flags & FLAG_METADATA != 0 {
        Metadata::decode(payload)
            .map_err(|err| CallRejected::Violation(format!("request {request_id}: {err}")))?
    } else {
        (Metadata::new(), payload)
    };
    let one_way = kind == FrameKind::Notify;
    let Some(route) = shared.router.get(method) else {
        tracing::debug!(%method, "call to an unknown method");
        metrics::unknown_method();
        if !one_way {
            let error = Frame::error(
                request_id,
                method,
                ErrorCode::UnknownMethod,
                &format!("no service on this server has method id {method}"),
            );
            send_reply(&context.sink, error.to_bytes()).await?;
        }
        return Ok(());
    };
    let trace = metadata
        .get(TRACEPARENT)
        .and_then(TraceContext::parse)
        .map(|parent| parent.child());
    let span = tracing::debug_span!(
        "wirecall.call",
        side = "server",
        service = route.service.descriptor().name,
        method = route.method.name,
        request_id,
        codec = %context.codec,
        peer = ?context.identity.peer_addr,
        trace_id = trace.map(|t| t.trace_id_hex()),
        span_id = trace.map(|t| t.span_id_hex()),
        outcome = tracing::field::Empty,
    );
    let call = CallContext {
        request_id,
        method,
        method_name: route.method.name,
        service: route.service.descriptor().name,
        peer: Arc::clone(&context.identity),
        deadline,
        metadata,
        trace,
        replies_carry_metadata: context.version >= 2,
        reply_metadata: RefCell::new(Metadata::new()),
    };
    let request = Request {
        context: call,
        codec: context.codec,
        payload,
    };
    // Every piece of the pipeline is always ready (see `Pipeline`): no `poll_ready` needed.
    let work = tower::Service::call(&mut &shared.pipeline, request);
    // A disabled span (no subscriber wants it) costs nothing if the future is not wrapped.
    let work = if span.is_disabled() {
        Either::Left(work)
    } else {
        Either::Right(work.instrument(span.clone()))
    };
    let mut work = AssertUnwindSafe(work).catch_unwind();
    let reply = ReplyTo {
        request_id,
        method,
        deadline_ms,
        send_limit: context.send_limit,
    };
    // Most handlers finish without ever waiting: run them here, saving a task spawn and a
    // timer. Only a handler that is still pending after its first poll gets its own task.
    shared.metrics.in_flight.increment(1.0);
    if let Poll::Ready(outcome) = futures::poll!(&mut work) {
        drop(permit);
        let now = Instant::now();
        let outcome = within(deadline, now, outcome);
        let ended = Ended::of(&outcome);
        span.record("outcome", ended.label());
        route.metrics.record(ended, now - received);
        shared.metrics.in_flight.decrement(1.0);
        if !one_way {
            let frame = reply.frame(outcome);
            shared.metrics.sent_bytes.increment(frame.len() as u64);
            send_reply(&context.sink, frame).await?;
        }
        return Ok(());
    }
    let (abort, registration) = AbortHandle::new_pair();
    context.calls.insert(request_id, abort);
    let sink = context.sink.clone();
    let calls = Arc::clone(&context.calls);
    let route_metrics = Arc::clone(&route.metrics);
    let in_flight = shared.metrics.in_flight.clone();
    let sent_bytes = shared.metrics.sent_bytes.clone();
    tasks.spawn(async move {
        let _permit = permit;
        // Counts the call out however the task ends (an abort at shutdown included).
        let _in_flight = InFlightGauge(in_flight);
        let work = Abortable::new(work, registration);
        let outcome = match deadline {
            Some(at) => tokio::time::timeout_at(at, work).await.ok(),
            None => Some(work.await),
        };
        calls.remove(request_id);
        let now = Instant::now();
        let outcome = match outcome {
            // Cancelled by the caller or by the end of the connection: no reply is wanted.
            Some(Err(Aborted)) => {
                span.record("outcome", Ended::Cancelled.label());
                route_metrics.record(Ended::Cancelled, now - received);
                return;
            }
            // `timeout_at` polls the call before its timer, so a call that became ready after
            // the deadline (say, once a long decode finished) still needs the check.
            Some(Ok(outcome)) => within(deadline, now, outcome),
            None => None,
        };
        let ended = Ended::of(&outcome);
        span.record("outcome", ended.label());
        route_metrics.record(ended, now - received);
        if !one_way {
            let frame = reply.frame(outcome);
            sent_bytes.increment(frame.len() as u64);
            let _ = sink.send(frame, Delivery::Now).await;
        }
    });
    Ok(())
}

impl Ended {
    /// How a handler's outcome ends its call (`None`: the deadline passed first).
    fn of(outcome: &Option<HandlerOutcome>) -> Self {
        match outcome {
            None => Self::Failed(ErrorCode::DeadlineExceeded),
            Some(Err(_)) => Self::Failed(ErrorCode::HandlerPanicked),
            Some(Ok(Err(call_error))) => Self::Failed(call_error.code()),
            Some(Ok(Ok(_))) => Self::Ok,
        }
    }
}

/// Takes a call off the in-flight gauge when dropped.
struct InFlightGauge(::metrics::Gauge);

impl Drop for InFlightGauge {
    fn drop(&mut self) {
        self.0.decrement(1.0);
    }
}

/// A finished call's outcome, or `None` when it finished (`now`) after its deadline: a caller
/// that has given up must get a timeout, not a late success.
fn within(
    deadline: Option<Instant>,
    now: Instant,
    outcome: HandlerOutcome,
) -> Option<HandlerOutcome> {
    match deadline {
        Some(at) if now > at => None,
        _ => Some(outcome),
    }
}

/// Checks the header fields a frame's kind fixes (wire chapter, "Frame kinds"): a Request or
/// Notify needs a request id other than 0 (0 marks connection-level errors); Ping, Pong and
/// Cancel carry no method, deadline or payload.
fn check_header(frame: &Frame) -> Result<(), String> {
    match frame.kind {
        FrameKind::Request | FrameKind::Notify if frame.request_id == 0 => {
            Err(format!("a {:?} frame may not use request id 0", frame.kind))
        }
        FrameKind::Ping | FrameKind::Pong | FrameKind::Cancel
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
        _ => Ok(()),
    }
}

/// Queues a reply (or pong) written by the read loop; it is flushed when the loop runs out of
/// input.
async fn send_reply(sink: &FrameSink, frame: Bytes) -> Result<(), CallRejected> {
    match sink.try_cork(frame) {
        Ok(()) => Ok(()),
        Err(TryCork::Closed) => Err(CallRejected::SinkClosed),
        // Rare, so out of line: the waiting future would otherwise enlarge every connection.
        Err(TryCork::Full(frame)) => Box::pin(sink.send(frame, Delivery::Corked))
            .await
            .map_err(|_| CallRejected::SinkClosed),
    }
}

/// What a handler's future resolved to: its encoded reply or call error, or the panic.
type HandlerOutcome = std::thread::Result<Result<Reply, CallError>>;

/// Where a call's reply goes, and what it needs to be framed.
struct ReplyTo {
    request_id: u64,
    method: MethodId,
    deadline_ms: u32,
    /// The largest reply frame the client accepts.
    send_limit: u32,
}

impl ReplyTo {
    /// The reply frame for a handler's outcome (`None`: the deadline passed first).
    fn frame(&self, outcome: Option<HandlerOutcome>) -> Bytes {
        let error = |code: ErrorCode, message: &str| {
            Frame::error(self.request_id, self.method, code, message).to_bytes()
        };
        match outcome {
            None => error(
                ErrorCode::DeadlineExceeded,
                &format!("the handler did not finish within {} ms", self.deadline_ms),
            ),
            Some(Err(panic)) => {
                let message = panic_message(panic.as_ref());
                tracing::error!(method = %self.method, %message, "handler panicked");
                error(ErrorCode::HandlerPanicked, &message)
            }
            Some(Ok(Err(call_error))) => {
                tracing::debug!(method = %self.method, %call_error, "call failed");
                error(call_error.code(), &call_error.to_string())
            }
            Some(Ok(Ok(Reply(reply)))) => match reply.finish(
                FrameKind::Response,
                self.request_id,
                self.method,
                0,
                self.send_limit,
            ) {
                Ok(bytes) => bytes,
                // The client would close the connection on a frame over its limit: fail
                // this one call instead.
                Err(err) => error(
                    ErrorCode::FrameTooLarge,
                    &format!("the reply {err} that the client accepts (its max_frame_len)"),
                ),
            },
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&'static str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "the handler panicked".to_owned()
    }
}

/// Sends a connection-level Error frame (request id 0) before a close. Boxed here rather than
/// at every call site: it runs at most once per connection, and its state inline would
/// enlarge the connection task for the connection's whole life.
fn send_connection_error<'a>(
    sink: &'a FrameSink,
    code: ErrorCode,
    message: &str,
) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
    let frame = Frame::error(0, MethodId::new(0), code, message).to_bytes();
    Box::pin(async move {
        let _ = sink.send(frame, Delivery::Now).await;
    })
}

/// Calls running on one connection, by request id, so a `Cancel` frame can stop one.
#[derive(Default)]
struct InFlight {
    calls: Mutex<IdMap<u64, AbortHandle>>,
}

impl InFlight {
    fn lock(&self) -> MutexGuard<'_, IdMap<u64, AbortHandle>> {
        // Every operation is a single map update, so a poisoned map is still consistent.
        self.calls
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn contains(&self, request_id: u64) -> bool {
        self.lock().contains_key(&request_id)
    }

    fn insert(&self, request_id: u64, abort: AbortHandle) {
        self.lock().insert(request_id, abort);
    }

    fn remove(&self, request_id: u64) {
        self.lock().remove(&request_id);
    }

    /// Stops one call; a cancel for an id that is not running is ignored (it may have just
    /// finished).
    fn abort(&self, request_id: u64) {
        if let Some(abort) = self.lock().remove(&request_id) {
            abort.abort();
        }
    }

    fn abort_all(&self) {
        for (_, abort) in self.lock().drain() {
            abort.abort();
        }
    }
}
