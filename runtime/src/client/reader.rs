//! The read side of a client connection: routes replies to waiting calls by request id, and
//! pings a silent server to find out whether it is still there.

use std::sync::Arc;
use std::task::Poll;

use futures::StreamExt;
use tokio::io::AsyncRead;
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

use super::pending::PendingCalls;
use super::Keepalive;
use crate::frame::{ErrorBody, Frame, FrameCodec, FrameKind};
use crate::writer::FrameSink;

/// A keepalive interval so long that it never fires (for connections without keepalive).
const NEVER: std::time::Duration = std::time::Duration::from_secs(60 * 60 * 24 * 365);

/// Reads frames until the connection ends, then fails every call still waiting.
pub(crate) async fn run_reader<R>(
    mut frames: FramedRead<R, FrameCodec>,
    pending: Arc<PendingCalls>,
    sink: FrameSink,
    keepalive: Option<Keepalive>,
) where
    R: AsyncRead + Unpin,
{
    let interval = keepalive.map_or(NEVER, |k| k.interval);
    let silence = tokio::time::sleep(interval);
    tokio::pin!(silence);
    let mut last_frame = Instant::now();
    let mut pinged = false;
    let mut reason = String::from("the server closed the connection");

    // Frames handled since the reader last waited; the clock is read per burst, not per frame.
    let mut burst = 0u32;

    loop {
        let next = match futures::poll!(frames.next()) {
            Poll::Ready(next) => {
                burst += 1;
                next
            }
            Poll::Pending => {
                if burst > 0 {
                    last_frame = Instant::now();
                    pinged = false;
                    burst = 0;
                }
                tokio::select! {
                    next = frames.next() => {
                        burst = 1;
                        next
                    }
                    _ = &mut silence => {
                        let now = Instant::now();
                        if !pinged && now < last_frame + interval {
                            silence.as_mut().reset(last_frame + interval);
                            continue;
                        }
                        let Some(keepalive) = keepalive else { continue };
                        if pinged {
                            reason = format!(
                                "the server sent nothing for {:?}, not even an answer to a ping",
                                keepalive.interval + keepalive.timeout
                            );
                            break;
                        }
                        sink.send_now(Frame::control(FrameKind::Ping, 0).to_bytes());
                        pinged = true;
                        silence.as_mut().reset(now + keepalive.timeout);
                        continue;
                    }
                }
            }
        };
        let frame = match next {
            None => break,
            Some(Ok(frame)) => frame,
            Some(Err(err)) => {
                reason = format!("reading from the server failed: {err}");
                break;
            }
        };
        match frame.kind {
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
                tracing::debug!(%reason, "connection-level error from the server");
            }
            FrameKind::Ping => {
                sink.send_now(Frame::control(FrameKind::Pong, frame.request_id).to_bytes());
            }
            FrameKind::Pong => {}
            FrameKind::Request | FrameKind::Notify | FrameKind::Cancel => {
                reason = format!(
                    "protocol violation: the server sent a {:?} frame",
                    frame.kind
                );
                break;
            }
        }
    }
    tracing::debug!(%reason, "client connection ended");
    pending.close_all(&reason);
    sink.close();
}
