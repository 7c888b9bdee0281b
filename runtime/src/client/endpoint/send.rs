//! One attempt of a call on a server's connection, whatever its shape: a unary call waits for
//! its `Response`, a one-way call for its frame to be queued, a stream call for its `Open` to
//! be sent (its items then come through the stream it returns).
//!
//! The common attempts (a unary or one-way call on an open connection whose hello is settled,
//! a write queue with room) are started here, without waiting: [`Attempt`] is then the
//! exchange itself, or the outcome at once. Anything that must wait first (a connection to
//! dial again, a hello not yet answered, a full queue, a stream's open) is boxed.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use super::connection::Connection;
use super::exchange::Exchange;
use super::link::Link;
use crate::client::request::Reply;
use crate::client::stack::call::{Call, Kind};
use crate::codec::Codec;
use crate::error::Error;
use crate::transport::writer::{Delivery, TrySend};

pin_project_lite::pin_project! {
    /// One attempt on a connection.
    #[project = AttemptProj]
    pub(crate) enum Attempt<'a> {
        /// Over before it started: failed, or a one-way call queued.
        Done { outcome: Option<Result<Reply, Error>> },
        /// A unary call waiting for its reply.
        Exchange { #[pin] exchange: Exchange },
        /// Whatever had to wait first.
        Waiting { attempt: Pin<Box<dyn Future<Output = Result<Reply, Error>> + Send + 'a>> },
    }
}

impl Future for Attempt<'_> {
    type Output = Result<Reply, Error>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            AttemptProj::Exchange { exchange } => exchange.poll(cx),
            AttemptProj::Done { outcome } => Poll::Ready(outcome.take().unwrap_or_else(|| {
                Err(Error::Config(
                    "an attempt was polled after it ended (a wirecall bug)".to_owned(),
                ))
            })),
            AttemptProj::Waiting { attempt } => attempt.as_mut().poll(cx),
        }
    }
}

impl Attempt<'_> {
    fn done(outcome: Result<Reply, Error>) -> Self {
        Self::Done {
            outcome: Some(outcome),
        }
    }
}

impl Link {
    /// Sends one attempt of `call` on the current connection, `wire` being what the server is
    /// told of the call's deadline.
    pub(crate) fn send<'a>(&'a self, call: &'a Call<'a>, wire: Option<Duration>) -> Attempt<'a> {
        match self.ready_connection() {
            Some(connection) if call.kind != Kind::Stream => start(connection, call, wire),
            _ => Attempt::Waiting {
                attempt: Box::pin(self.send_after_waiting(call, wire)),
            },
        }
    }

    /// An attempt that waits for its connection (dialled again if it broke), or opens a
    /// stream.
    async fn send_after_waiting(
        &self,
        call: &Call<'_>,
        wire: Option<Duration>,
    ) -> Result<Reply, Error> {
        let connection = self.connection().await?;
        if call.kind != Kind::Stream {
            return start(connection, call, wire).await;
        }
        if let Some(codec) = call.raw_codec {
            check_codec(&connection, codec)?;
        }
        let codec = connection.codec;
        let stream = connection.open(call, wire).await?;
        Ok(Reply::empty(codec, Some(Box::new(stream))))
    }
}

/// Starts a unary or one-way attempt on `connection`.
fn start<'a>(
    connection: Arc<Connection>,
    call: &'a Call<'a>,
    wire: Option<Duration>,
) -> Attempt<'a> {
    if let Some(codec) = call.raw_codec {
        if let Err(err) = check_codec(&connection, codec) {
            return Attempt::done(Err(err));
        }
    }
    if call.kind == Kind::Unary {
        return match connection.encode_request(call, wire) {
            Ok((request_id, frame)) => Attempt::Exchange {
                exchange: connection.exchange(call, request_id, frame),
            },
            Err(err) => Attempt::done(Err(err)),
        };
    }
    let frame = match connection.encode_notify(call) {
        Ok(frame) => frame,
        Err(err) => return Attempt::done(Err(err)),
    };
    let codec = connection.codec;
    // On a connection opened with early calls, a one-way call also waits for the server's
    // hello: a call the server refused unrun is then sent once more on a new connection
    // rather than lost.
    if connection.hello_settled() && !connection.pending.is_closed() {
        match connection.sink.try_send(frame, Delivery::Background) {
            Ok(()) => return Attempt::done(Ok(Reply::empty(codec, None))),
            Err(TrySend::Closed) => return Attempt::done(Err(connection.pending.unsent_error())),
            Err(TrySend::Full(frame)) => {
                return Attempt::Waiting {
                    attempt: Box::pin(notify(connection, frame, call)),
                }
            }
        }
    }
    Attempt::Waiting {
        attempt: Box::pin(notify(connection, frame, call)),
    }
}

/// A one-way call that waits: for room in the write queue (at most until its deadline), then
/// for the server's verdict on an early hello.
async fn notify(
    connection: Arc<Connection>,
    frame: bytes::Bytes,
    call: &Call<'_>,
) -> Result<Reply, Error> {
    connection.send_notify(frame, call.deadline).await?;
    connection.accepted().await?;
    Ok(Reply::empty(connection.codec, None))
}

/// A payload encoded by the caller must be in the codec the connection speaks.
fn check_codec(connection: &Connection, codec: Codec) -> Result<(), Error> {
    if connection.codec == codec {
        return Ok(());
    }
    Err(Error::Config(format!(
        "the arguments are encoded in {codec} but the connection uses {}; build the channel \
         with `.codec(Codec::{codec:?})` alone",
        connection.codec
    )))
}
