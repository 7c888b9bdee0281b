//! Opening a server stream on a connection: the `Open` frame with the arguments, the first
//! credit right behind it, and the stream's slot in the pending table.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::args::EncodeArgs;
use super::connection::Connection;
use super::item_stream::{credit_frame, ItemStream, OpenedStream};
use super::outgoing::Outgoing;
use crate::error::Error;
use crate::method::MethodId;
use crate::stream::ItemMessage;
use crate::transport::frame::FrameKind;
use crate::transport::writer::Delivery;
use crate::wire::STREAMS_SINCE_VERSION;

impl Connection {
    /// Opens a stream of `method` with `args`, bounded as a whole by `timeout`, and returns
    /// its items as they come. Fails before sending anything on a connection of a protocol
    /// version without streams.
    pub(super) async fn open_stream<M: ItemMessage, E: EncodeArgs>(
        self: Arc<Self>,
        method: MethodId,
        args: E,
        timeout: Option<Duration>,
        outgoing: &Outgoing<'_>,
    ) -> Result<ItemStream<M::Item>, Error> {
        if self.version < STREAMS_SINCE_VERSION {
            return Err(Error::StreamsUnsupported {
                method,
                version: self.version,
            });
        }
        let request_id = self
            .next_request_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let deadline_ms = super::connection::deadline_ms(timeout);
        // Encoded before any wait, so that the arguments need not be `Sync`.
        let frame = self.encode(
            FrameKind::Open,
            request_id,
            method,
            deadline_ms,
            &args,
            outgoing,
        )?;
        drop(args);
        self.accepted().await?;
        let deadline = timeout.map(|after| Instant::now() + after);
        self.pending
            .register_stream(request_id, self.stream_window, deadline.zip(timeout))?;
        // From here the stream is registered: dropped (or failed), it cancels itself.
        let stream = ItemStream::new::<M>(
            Arc::clone(&self),
            OpenedStream {
                request_id,
                method,
                timeout,
                deadline,
            },
        );
        if self.sink.send(frame, Delivery::Now).await.is_err() {
            return Err(self.pending.closed_error());
        }
        self.sink
            .send_control(credit_frame(request_id, self.stream_window));
        Ok(stream)
    }
}
