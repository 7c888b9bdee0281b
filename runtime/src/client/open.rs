//! Opening a stream call on a connection: the `Open` frame with the arguments, the first
//! credit right behind it, the stream's slot in the pending table and, for a method that
//! takes an upload, the task that sends it.

use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use tokio::time::Instant;

use super::args::EncodeArgs;
use super::connection::Connection;
use super::item_stream::{ItemStream, OpenedStream};
use super::outgoing::Outgoing;
use super::upload::spawn_upload;
use super::upload_sender::UploadSender;
use crate::error::Error;
use crate::method::MethodId;
use crate::stream::credit::credit_frame;
use crate::stream::ItemMessage;
use crate::transport::frame::FrameKind;
use crate::transport::writer::Delivery;
use crate::wire::STREAMS_SINCE_VERSION;

impl Connection {
    /// Opens a server stream of `method` with `args`, bounded as a whole by `timeout`, and
    /// returns its items as they come. Fails before sending anything on a connection of a
    /// protocol version without streams.
    pub(super) async fn open_stream<M: ItemMessage, E: EncodeArgs>(
        self: Arc<Self>,
        method: MethodId,
        args: E,
        timeout: Option<Duration>,
        outgoing: &Outgoing<'_>,
    ) -> Result<ItemStream<M::Item>, Error> {
        let (stream, _) = self
            .open::<M, E>(method, args, timeout, outgoing, None)
            .await?;
        Ok(stream)
    }

    /// Like [`open_stream`](Self::open_stream), for a method that takes an upload: `items`
    /// are sent (as `U` messages) as the server grants credit, then the upload's End.
    pub(super) async fn open_upload<U, M, E, S>(
        self: Arc<Self>,
        method: MethodId,
        args: E,
        items: S,
        timeout: Option<Duration>,
        outgoing: &Outgoing<'_>,
    ) -> Result<ItemStream<M::Item>, Error>
    where
        U: ItemMessage,
        M: ItemMessage,
        E: EncodeArgs,
        S: Stream<Item = U::Item> + Send + 'static,
    {
        let upload = UploadSender::new();
        let (credit, stop) = (Arc::clone(&upload.credit), upload.stop.clone());
        let (stream, request_id) = Arc::clone(&self)
            .open::<M, E>(method, args, timeout, outgoing, Some(upload))
            .await?;
        spawn_upload::<U, S>(self, request_id, credit, stop, items);
        Ok(stream)
    }

    async fn open<M: ItemMessage, E: EncodeArgs>(
        self: Arc<Self>,
        method: MethodId,
        args: E,
        timeout: Option<Duration>,
        outgoing: &Outgoing<'_>,
        upload: Option<UploadSender>,
    ) -> Result<(ItemStream<M::Item>, u64), Error> {
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
        self.pending.register_stream(
            request_id,
            self.stream_window,
            upload,
            deadline.zip(timeout),
        )?;
        // No span value at all unless a subscriber (or `log`) may want it.
        let trace = outgoing.trace;
        let span = crate::call_span::wanted().then(|| {
            tracing::debug_span!(
                "wirecall.call",
                side = "client",
                stream = true,
                %method,
                request_id,
                codec = %self.codec,
                trace_id = trace.map(|t| t.trace_id_hex()),
                span_id = trace.map(|t| t.span_id_hex()),
                items = tracing::field::Empty,
                outcome = tracing::field::Empty,
                error = tracing::field::Empty,
            )
        });
        // From here the stream is registered: dropped (or failed), it cancels itself.
        let stream = ItemStream::new::<M>(
            Arc::clone(&self),
            OpenedStream {
                request_id,
                method,
                timeout,
                deadline,
                span,
            },
        );
        if self.sink.send(frame, Delivery::Now).await.is_err() {
            return Err(self.pending.unsent_error());
        }
        self.sink
            .send_control(credit_frame(request_id, self.stream_window.items));
        Ok((stream, request_id))
    }
}
