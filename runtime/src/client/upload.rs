//! A client's upload (client and bidirectional streaming): the task that sends the caller's
//! items on an open stream as the server's credit allows, then the `End`.
//!
//! The task stops as soon as the stream ends on this side, whatever ended it: the server's
//! answer (which may come before the upload is over), the deadline, the caller dropping the
//! stream, the connection's end. Items are taken from the caller's stream only when there is
//! credit to send them, so a server that stops reading pauses the caller's producer.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use tokio_util::sync::CancellationToken;

use super::connection::Connection;
use crate::error::Error;
use crate::method::MethodId;
use crate::stream::credit::SendCredit;
use crate::stream::ItemMessage;
use crate::transport::frame::{Frame, FrameBuf, FrameKind};
use crate::transport::writer::Delivery;

/// Starts sending `items` (as `U` messages) on stream `request_id` of `connection`.
pub(super) fn spawn_upload<U, S>(
    connection: Arc<Connection>,
    request_id: u64,
    credit: Arc<SendCredit>,
    stop: CancellationToken,
    items: S,
) where
    U: ItemMessage,
    S: Stream<Item = U::Item> + Send + 'static,
{
    tokio::spawn(async move {
        tokio::select! {
            () = stop.cancelled() => {}
            () = send_items::<U, S>(&connection, request_id, &credit, items) => {}
        }
    });
}

async fn send_items<U, S>(connection: &Connection, request_id: u64, credit: &SendCredit, items: S)
where
    U: ItemMessage,
    S: Stream<Item = U::Item> + Send,
{
    let mut items = std::pin::pin!(items);
    // Each item's buffer starts at the size of the one before: an upload's items are usually
    // alike, and a 64 KiB chunk encoded into a buffer grown from a few bytes was copied many
    // times over on the way.
    let mut size_hint = 64;
    loop {
        // Paid for first: without credit, the caller's producer is not asked for more.
        credit.spend().await;
        let Some(item) = items.next().await else {
            break;
        };
        let frame = match encode::<U>(connection, request_id, item, size_hint) {
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

/// Frames `item`, in a buffer with room for `size_hint` bytes at first.
fn encode<U: ItemMessage>(
    connection: &Connection,
    request_id: u64,
    item: U::Item,
    size_hint: usize,
) -> Result<bytes::Bytes, Error> {
    let (message, _) = U::from_item(item);
    let mut frame = FrameBuf::with_capacity(size_hint);
    connection.codec.encode(&message, frame.payload_writer())?;
    let send_limit = connection
        .send_limit
        .load(std::sync::atomic::Ordering::Relaxed);
    Ok(frame.finish(FrameKind::Item, request_id, MethodId::new(0), 0, send_limit)?)
}
