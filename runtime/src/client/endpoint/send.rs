//! One attempt of a call on a server's connection, whatever its shape: a unary call waits for
//! its `Response`, a one-way call for its frame to be queued, a stream call for its `Open` to
//! be sent (its items then come through the stream it returns).

use std::time::Duration;

use super::connection::Connection;
use super::link::Link;
use crate::client::request::Reply;
use crate::client::stack::call::{Call, Kind};
use crate::codec::Codec;
use crate::error::Error;

impl Link {
    /// Sends one attempt of `call` on the current connection, `wire` being what the server is
    /// told of the call's deadline.
    pub(crate) async fn send(
        &self,
        call: &Call<'_>,
        wire: Option<Duration>,
    ) -> Result<Reply, Error> {
        let connection = self.connection().await?;
        if let Some(codec) = call.raw_codec {
            check_codec(&connection, codec)?;
        }
        match call.kind {
            Kind::Unary => {
                let (request_id, frame) = connection.encode_request(call, wire)?;
                let payload = connection.exchange(call, request_id, frame).await?;
                Ok(Reply {
                    payload,
                    codec: connection.codec,
                    stream: None,
                })
            }
            Kind::OneWay => {
                let frame = connection.encode_notify(call)?;
                connection.send_notify(frame, call.deadline).await?;
                // On a connection opened with early calls, a one-way call also waits for the
                // server's hello: a call the server refused unrun is then sent once more on a
                // new connection rather than lost.
                connection.accepted().await?;
                Ok(Reply::empty(connection.codec, None))
            }
            Kind::Stream => {
                let codec = connection.codec;
                let stream = connection.open(call, wire).await?;
                Ok(Reply::empty(codec, Some(stream)))
            }
        }
    }
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
