//! The read side of a client connection: routes replies to waiting calls by request id,
//! times out calls whose deadline passed (the connection's one deadline timer, see
//! `deadlines.rs`), and pings a silent server to find out whether it is still there.

use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::sync::Arc;
use std::task::Poll;

use tokio::io::AsyncRead;
use tokio::time::Instant;

use super::closed::Closed;
use super::pending::PendingCalls;
use super::round_trip::TIMING_PING_ID;
use crate::transport::frame::{ErrorBody, Frame, FrameKind};
use crate::transport::frame_reader::FrameReader;
use crate::transport::liveness::{Liveness, Periods, Seen, Silence};
use crate::transport::one_task::writer_ended;
use crate::transport::writer::FrameSink;

/// A keepalive interval so long that it never fires (for connections without keepalive).
const NEVER: std::time::Duration = std::time::Duration::from_secs(60 * 60 * 24 * 365);

/// While replies keep coming without a wait, the deadlines are looked at once per this many
/// frames (else only when the reader waits): a call whose reply never comes still times
/// out amid a flood of other replies.
const SWEEP_EVERY: u32 = 64;

/// Reads frames until the connection ends, then fails every call still waiting.
///
/// An `async` block rather than an `async fn`, which would keep a second copy of its
/// arguments: the connection's task, which runs it, lives as long as the connection.
#[allow(
    clippy::manual_async_fn,
    reason = "an `async fn` keeps a second copy of its arguments in its state"
)]
pub(crate) fn run_reader<R>(
    mut frames: FrameReader<R>,
    pending: Arc<PendingCalls>,
    sink: FrameSink,
    keepalive: Option<Periods>,
) -> impl Future<Output = ()>
where
    R: AsyncRead + Unpin,
{
    async move {
        let mut liveness = keepalive.map(|_| Liveness::new());
        let silence = tokio::time::sleep_until(match (&liveness, &keepalive) {
            (Some(liveness), Some(k)) => liveness.first_deadline(k),
            _ => Instant::now() + NEVER,
        });
        tokio::pin!(silence);
        let mut reason = String::from("the server closed the connection");
        // The code of the server's connection-level Error frame, once it sent one.
        let mut code = None;
        let mut unswept: u32 = 0;

        loop {
            unswept += 1;
            if unswept == SWEEP_EVERY {
                unswept = 0;
                if futures::poll!(poll_fn(|cx| pending.poll_expiry(cx))).is_ready() {
                    expire_calls(&pending, &sink);
                }
            }
            let next = match futures::poll!(frames.next()) {
                Poll::Ready(next) => next,
                Poll::Pending => {
                    if let Some(liveness) = &mut liveness {
                        liveness.before_wait(frames.reads());
                    }
                    // Waiting for replies holds no read buffer.
                    frames.park();
                    tokio::select! {
                        next = frames.next() => next,
                        // The writer, run in this task, ended: the connection was dropped or
                        // closed and what it queued is written, or writing failed.
                        () = writer_ended(&sink) => {
                            reason = if sink.write_failed() {
                                "writing to the server failed (it stopped reading, or the \
                                 connection broke)"
                            } else {
                                "the connection was closed by its owner"
                            }
                            .to_owned();
                            break;
                        }
                        () = poll_fn(|cx| pending.poll_expiry(cx)) => {
                            expire_calls(&pending, &sink);
                            continue;
                        }
                        _ = &mut silence => {
                            let (Some(liveness), Some(k)) = (&mut liveness, &keepalive) else {
                                continue;
                            };
                            let seen = Seen {
                                busy: pending.holds_calls(),
                                reads: frames.reads(),
                                backlog_writes: sink.backlog_writes(),
                            };
                            match liveness.on_timer(Instant::now(), seen, k) {
                                Silence::Rearm(at) => silence.as_mut().reset(at),
                                Silence::Ping(at) => {
                                    sink.send_now(Frame::control(FrameKind::Ping, 0).to_bytes());
                                    silence.as_mut().reset(at);
                                }
                                Silence::Dead => {
                                    reason = "the server sent nothing, not even an answer to a \
                                              keepalive ping"
                                        .to_owned();
                                    break;
                                }
                            }
                            continue;
                        }
                    }
                }
            };
            if let Some(liveness) = &mut liveness {
                liveness.frame();
            }
            let frame = match next {
                None => break,
                Some(Ok(frame)) => frame,
                Some(Err(err)) => {
                    reason = format!("reading from the server failed: {err}");
                    break;
                }
            };
            match frame.kind {
                FrameKind::Item => {
                    if let Err(violation) = pending.stream_item(frame.request_id, frame) {
                        reason = violation;
                        break;
                    }
                }
                // A stream's reply metadata (version 4), before its first item.
                FrameKind::Head => {
                    if let Err(violation) = pending.stream_head(frame.request_id, frame) {
                        reason = violation;
                        break;
                    }
                }
                // A stream's last frame ends it like a reply ends a call.
                FrameKind::End => {
                    pending.complete(frame.request_id, frame);
                }
                // Credit for an upload.
                FrameKind::Credit => {
                    if let Err(violation) = pending.upload_credit(frame.request_id, &frame.payload)
                    {
                        reason = violation;
                        break;
                    }
                }
                FrameKind::Response | FrameKind::Error if frame.request_id != 0 => {
                    // Request ids start at 1, so 0 never names a call. No waiter means the caller
                    // gave up (timeout or drop); the reply is dropped.
                    pending.complete(frame.request_id, frame);
                }
                FrameKind::Response => {}
                FrameKind::Error => {
                    // Request id 0: the server is about to close the whole connection.
                    let body = ErrorBody::decode(&frame.payload);
                    reason = format!(
                        "the server closed the connection ({:?}): {}",
                        body.code, body.message
                    );
                    code = Some(body.code);
                    tracing::debug!(%reason, "connection-level error from the server");
                }
                FrameKind::Ping => {
                    sink.send_now(Frame::control(FrameKind::Pong, frame.request_id).to_bytes());
                }
                FrameKind::Pong if frame.request_id == TIMING_PING_ID => {
                    pending.round_trip.answered();
                }
                FrameKind::Pong => {}
                FrameKind::Request | FrameKind::Notify | FrameKind::Cancel | FrameKind::Open => {
                    reason = format!(
                        "protocol violation: the server sent a {:?} frame",
                        frame.kind
                    );
                    break;
                }
            }
        }
        tracing::debug!(%reason, "client connection ended");
        pending.close_all(Closed::new(reason, code));
        sink.close();
    }
}

/// Fails the calls whose deadline has passed, and tells the server to stop them.
fn expire_calls(pending: &PendingCalls, sink: &FrameSink) {
    for request_id in pending.expire(Instant::now()) {
        // Best effort: if the queue is full, the reply is discarded on arrival.
        sink.send_now(Frame::control(FrameKind::Cancel, request_id).to_bytes());
    }
}

/// Times out calls as their deadlines pass, for as long as it is polled: beside a wait that
/// is not the read loop (the server hello of a connection opened with early calls).
pub(crate) async fn sweep_deadlines(pending: &PendingCalls, sink: &FrameSink) -> Infallible {
    loop {
        poll_fn(|cx| pending.poll_expiry(cx)).await;
        expire_calls(pending, sink);
    }
}
