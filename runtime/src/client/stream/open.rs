//! Opening a stream call on a connection: the `Open` frame with the arguments, the first
//! credit right behind it, the stream's slot in the pending table and, for a method that
//! takes an upload, the task that sends it.

use std::sync::Arc;
use std::time::Duration;

use super::raw::{OpenedStream, RawStream};
use super::slot::UploadSender;
use super::upload_task::{spawn_upload, Upload};
use crate::call_span::{CallSpan, Side};
use crate::client::endpoint::connection::Connection;
use crate::client::stack::call::Call;
use crate::client::stack::deadline::deadline_ms;
use crate::error::Error;
use crate::stream::credit::credit_frame;
use crate::transport::frame::FrameKind;
use crate::transport::writer::Delivery;
use crate::wire::STREAMS_SINCE_VERSION;

impl Connection {
    /// Opens stream `call`, bounded as a whole by its deadline (`wire` is what the server is
    /// told of it), and returns it once its `Open` is sent. Fails before sending anything on
    /// a connection of a protocol version without streams. For a method that takes an upload,
    /// starts the task that sends it.
    pub(crate) async fn open(
        self: &Arc<Self>,
        call: &Call<'_>,
        wire: Option<Duration>,
    ) -> Result<RawStream, Error> {
        if self.version < STREAMS_SINCE_VERSION {
            return Err(Error::StreamsUnsupported {
                method: call.method,
                version: self.version,
            });
        }
        let request_id = self.next_request_id();
        // Encoded before any wait, so that the arguments need not be `Sync`.
        let frame = self.encode(FrameKind::Open, request_id, call, deadline_ms(wire))?;
        self.accepted().await?;
        let upload = call.upload.map(|_| UploadSender::new());
        let sender = upload
            .as_ref()
            .map(|upload| (Arc::clone(&upload.credit), upload.stop.clone()));
        self.pending.register_stream(
            request_id,
            self.stream_window,
            upload,
            call.deadline
                .map(|deadline| (deadline.at(), deadline.timeout())),
        )?;
        let span = CallSpan {
            side: Side::Client,
            stream: true,
            service: None,
            method: &call.method,
            request_id,
            codec: self.codec,
            peer: self.peer,
            trace: call.trace,
        }
        .start();
        // From here the stream is registered: dropped (or failed), it cancels itself.
        let stream = RawStream::new(
            Arc::clone(self),
            OpenedStream {
                request_id,
                method: call.method,
                timeout: call.deadline.map(|deadline| deadline.timeout()),
                deadline: call.deadline.map(|deadline| deadline.at()),
                span,
            },
        );
        if self.sink.send(frame, Delivery::Now).await.is_err() {
            return Err(self.pending.unsent_error());
        }
        self.sink
            .send_control(credit_frame(request_id, self.stream_window.items));
        if let (Some(slot), Some((credit, stop))) = (call.upload, sender) {
            match slot.take() {
                Some(items) => {
                    let upload = Upload {
                        request_id,
                        credit,
                        stop,
                        uncompressed: call.uncompressed,
                    };
                    spawn_upload(Arc::clone(self), upload, items)
                }
                // Only an attempt that opened its stream takes the items, and it is the last:
                // a layer sent the same stream call on twice.
                None => self.pending.fail(
                    request_id,
                    Error::Layer {
                        code: crate::error::ErrorCode::LayerFailed,
                        cause: "a layer sent a stream call on twice; a stream is opened once"
                            .into(),
                    },
                ),
            }
        }
        Ok(stream)
    }
}
