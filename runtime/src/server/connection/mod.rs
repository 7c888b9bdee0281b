//! One server connection: handshake, then a read loop that starts every call as its own task,
//! so a slow call never holds up a fast one, while the writer task sends replies in whatever
//! order they finish.
//!
//! Layout: this module is the read loop and the close; `handshake.rs` the hello within the
//! handshake deadline; `admission.rs` how a request becomes a running call (in-flight limits,
//! cancellation, deadline, inline or spawned); `reply.rs` how an outcome becomes a frame.

mod admission;
mod handshake;
mod reply;

use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

use super::identity::PeerIdentity;
use super::Shared;
use crate::codec::Codec;
use crate::error::ErrorCode;
use crate::frame::{Frame, FrameCodec, FrameError, FrameKind};
use crate::frame_reader::FrameReader;
use crate::liveness::{Liveness, Silence};
use crate::negotiate::Negotiated;
use crate::transport::Transport;
use crate::writer::FrameSink;

use admission::{start_call, CallRejected, InFlight};
use handshake::handshake;
use reply::{send_connection_error, send_reply};

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
            let stopped = tokio::select! {
                _ = tasks.wait() => 0,
                _ = shared.force.cancelled() => calls.abort_all(),
            };
            tasks.wait().await;
            // The goodbye tells the client that every call it still waits for never ran, so
            // that a balanced channel may send them elsewhere, idempotent or not. Calls the
            // grace period (or an abort) stopped half-way may have run: then the connection
            // closes without it, and the client counts them as maybe run.
            if stopped == 0 {
                send_connection_error(
                    &sink,
                    ErrorCode::ShuttingDown,
                    "the server is shutting down",
                )
                .await;
            }
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
