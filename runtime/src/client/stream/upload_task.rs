//! A caller's upload (client and bidirectional streaming): the task that sends the items
//! waiting in the call's `UploadSlot` once an attempt has opened the stream, as the server's
//! credit allows, then the `End`.
//!
//! The task stops as soon as the stream ends on this side, whatever ended it: the server's
//! answer (which may come before the upload is over), the deadline, the caller dropping the
//! stream, the connection's end. Items are taken from the caller's stream only when there is
//! credit to send them, so a server that stops reading pauses the caller's producer.

use std::sync::Arc;

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::client::endpoint::connection::Connection;
use crate::error::Error;
use crate::method::MethodId;
use crate::stream::credit::SendCredit;
use crate::stream::outgoing::OutgoingItems;
use crate::transport::frame::{Frame, FrameBuf, FrameKind};
use crate::transport::writer::Delivery;

/// The open upload a task sends items on.
pub(crate) struct Upload {
    pub(crate) request_id: u64,
    pub(crate) credit: Arc<SendCredit>,
    pub(crate) stop: CancellationToken,
    /// The call opted out of compression: the items go uncompressed.
    pub(crate) uncompressed: bool,
}

/// Starts sending `items` on `upload` of `connection`.
pub(crate) fn spawn_upload(connection: Arc<Connection>, upload: Upload, items: OutgoingItems) {
    tokio::spawn(async move {
        tokio::select! {
            () = upload.stop.cancelled() => {}
            () = send_items(&connection, &upload, items) => {}
        }
    });
}

async fn send_items(connection: &Connection, upload: &Upload, mut items: OutgoingItems) {
    let (request_id, credit) = (upload.request_id, &upload.credit);
    // Each item's buffer starts at the size of the one before: an upload's items are usually
    // alike, and a 64 KiB chunk encoded into a buffer grown from a few bytes was copied many
    // times over on the way.
    let mut size_hint = 64;
    loop {
        // Paid for first: without credit, the caller's producer is not asked for more.
        credit.spend().await;
        let mut frame = FrameBuf::with_capacity(size_hint);
        let encoded = std::future::poll_fn(|cx| {
            items.poll_encode(cx, connection.encoding(), frame.payload_writer())
        })
        .await;
        let frame = match encoded {
            None => break,
            Some(encoded) => encoded
                .map_err(Error::from)
                .and_then(|_| finish(connection, upload, frame)),
        };
        let frame = match frame {
            Ok(frame) => {
                size_hint = frame.len();
                frame
            }
            Err(err) => {
                // The caller's item cannot travel: the stream fails with why, and the
                // server is told to stop.
                connection.pending.fail(request_id, err);
                let cancel = Frame::control(FrameKind::Cancel, request_id).to_bytes();
                connection.sink.send_control(cancel);
                return;
            }
        };
        if connection
            .sink
            .send(frame, Delivery::Background)
            .await
            .is_err()
        {
            return;
        }
    }
    let end = Frame::control(FrameKind::End, request_id).to_bytes();
    let _ = connection.sink.send(end, Delivery::Now).await;
}

/// The `Item` frame of an encoded item.
fn finish(connection: &Connection, upload: &Upload, frame: FrameBuf) -> Result<Bytes, Error> {
    let send_limit = connection
        .send_limit
        .load(std::sync::atomic::Ordering::Relaxed);
    Ok(frame.finish_compressed(
        FrameKind::Item,
        upload.request_id,
        MethodId::new(0),
        0,
        send_limit,
        connection.compressor_for(upload.uncompressed),
    )?)
}
