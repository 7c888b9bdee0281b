//! gRPC's length-prefixed messages: read one by one from a request body, as the call takes
//! them (so HTTP/2 flow control holds a fast sender back), and framed for a reply.

use std::task::{ready, Context, Poll};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures::Stream;
use h2::RecvStream;

use super::status::{Code, Status};

/// A message's prefix: a compressed flag and a big-endian length.
pub(crate) const PREFIX_LEN: usize = 5;

/// The messages of a request body, each at most `max_len` bytes.
pub(crate) struct Messages {
    body: RecvStream,
    buf: BytesMut,
    max_len: usize,
    ended: bool,
}

impl Messages {
    pub(crate) fn new(body: RecvStream, max_len: usize) -> Self {
        Self {
            body,
            buf: BytesMut::new(),
            max_len,
            ended: false,
        }
    }

    /// The next message; `None` once the body has ended between two messages.
    pub(crate) async fn next_message(&mut self) -> Option<Result<Bytes, Status>> {
        std::future::poll_fn(|cx| self.poll_message(cx)).await
    }

    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Status>>> {
        loop {
            if self.buf.len() >= PREFIX_LEN {
                let compressed = self.buf[0];
                let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]])
                    as usize;
                if compressed != 0 {
                    // No `grpc-accept-encoding` is announced, so no client compresses.
                    return Poll::Ready(Some(Err(Status::new(
                        Code::Unimplemented,
                        "compressed messages are not supported; send them uncompressed",
                    ))));
                }
                if len > self.max_len {
                    return Poll::Ready(Some(Err(Status::new(
                        Code::ResourceExhausted,
                        format!(
                            "a request message of {len} bytes is over the server's limit of {} \
                             (its max_frame_len)",
                            self.max_len
                        ),
                    ))));
                }
                if self.buf.len() >= PREFIX_LEN + len {
                    self.buf.advance(PREFIX_LEN);
                    return Poll::Ready(Some(Ok(self.buf.split_to(len).freeze())));
                }
                self.buf.reserve(PREFIX_LEN + len - self.buf.len());
            }
            if self.ended {
                if self.buf.is_empty() {
                    return Poll::Ready(None);
                }
                return Poll::Ready(Some(Err(Status::new(
                    Code::Internal,
                    "the request ended inside a message",
                ))));
            }
            match ready!(self.body.poll_data(cx)) {
                Some(Ok(chunk)) => {
                    // Taken into the buffer, which the length check above bounds: the
                    // window opens again at once.
                    let _ = self.body.flow_control().release_capacity(chunk.len());
                    self.buf.extend_from_slice(&chunk);
                }
                Some(Err(err)) => {
                    return Poll::Ready(Some(Err(Status::new(
                        Code::Cancelled,
                        format!("the request body was cut off: {err}"),
                    ))))
                }
                None => self.ended = true,
            }
        }
    }
}

impl Messages {
    /// Reads what is left of the body, normally nothing but its end, so that the call's
    /// HTTP/2 stream closes cleanly rather than with a reset: h2 counts the resets it sends,
    /// and closes a connection on which every call ends with one. A caller that keeps
    /// sending after its one message is cut off after [`FINISH_WITHIN`].
    pub(crate) async fn finish(mut self) {
        if self.body.is_end_stream() {
            return;
        }
        let rest = async {
            while let Some(Ok(chunk)) = std::future::poll_fn(|cx| self.body.poll_data(cx)).await {
                let _ = self.body.flow_control().release_capacity(chunk.len());
            }
        };
        let _ = tokio::time::timeout(FINISH_WITHIN, rest).await;
    }
}

/// How long a call answered before its caller ended the request waits for that end.
const FINISH_WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

impl Stream for Messages {
    type Item = Result<Bytes, Status>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Status>>> {
        self.get_mut().poll_message(cx)
    }
}

/// Writes the prefix of `message`, whose first [`PREFIX_LEN`] bytes were reserved for it.
pub(crate) fn set_prefix(message: &mut [u8]) {
    let len = (message.len() - PREFIX_LEN) as u32;
    message[0] = 0;
    message[1..PREFIX_LEN].copy_from_slice(&len.to_be_bytes());
}

/// One message holding `payload`.
pub(crate) fn message(payload: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(PREFIX_LEN + payload.len());
    out.put_bytes(0, PREFIX_LEN);
    out.extend_from_slice(payload);
    set_prefix(&mut out);
    out.freeze()
}
