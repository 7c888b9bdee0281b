//! The read side of a client connection: routes replies to waiting calls by request id.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use tokio::io::AsyncRead;
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

use super::pending::PendingCalls;
use crate::frame::{ErrorBody, Frame, FrameCodec, FrameKind};

/// Reads frames until the connection ends, then fails every call still waiting.
pub(crate) async fn run_reader<R>(
    mut frames: FramedRead<R, FrameCodec>,
    pending: Arc<PendingCalls>,
    queue: mpsc::Sender<Bytes>,
) where
    R: AsyncRead + Unpin,
{
    let mut reason = String::from("the server closed the connection");
    while let Some(next) = frames.next().await {
        let frame = match next {
            Ok(frame) => frame,
            Err(err) => {
                reason = format!("reading from the server failed: {err}");
                break;
            }
        };
        match frame.kind {
            FrameKind::Response | FrameKind::Error if frame.request_id != 0 => {
                // Request ids start at 1, so 0 never names a call.
                // No waiter means the caller gave up (timeout or drop); the reply is dropped.
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
                // Best effort: a full queue already proves liveness to the server.
                let _ =
                    queue.try_send(Frame::control(FrameKind::Pong, frame.request_id).to_bytes());
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
}
