//! The floor of the stream cells: server streams of items over plain tokio TCP, each frame a
//! 4-byte big-endian length and a body, with the flow control wirecall's streams have and
//! nothing else. An item is as long as wirecall's MessagePack `Item` frame for the same
//! [`StreamItem`](crate::model::StreamItem) and carries its producer's timestamp; a call
//! (S3) is as long as wirecall's `get_user` request and is echoed.
//!
//! Bodies, by their first byte:
//!
//! | from | byte | then |
//! |---|---|---|
//! | client | `OPEN` | stream id (u32), item count (u64, `u64::MAX`: endless), first credit (u32) |
//! | client | `CREDIT` | stream id (u32), items granted (u32) |
//! | client | `CALL` | filler up to wirecall's request length |
//! | client | `CANCEL` | stream id (u32) |
//! | server | `ITEM` | stream id (u32), producer timestamp (u64), filler up to the item length |
//! | server | `END` | stream id (u32) |
//! | server | `REPLY` | the call's body, echoed |
//!
//! Credit works as wirecall's: the client grants its window (the cell's, wirecall's default
//! of 32 items unless the cell says otherwise) when it opens a stream and half of it again
//! each time it has read half. The client reads, grants and calls on one task, with a
//! [`READ_BUFFER`] read buffer (see [`Credit::new`] for when a grant is written). The
//! server's connection has a reader task and a writer loop; each pass of the writer takes
//! every reply waiting, then one item from each stream with credit, round after round, up to
//! [`WRITE_BATCH`] bytes, and writes them with one `write_all`.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures::{SinkExt, StreamExt as _};
use tokio::io::AsyncWriteExt as _;
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio_util::codec::{Framed, FramedRead, LengthDelimitedCodec};

use super::{BenchResult, BesideStream, STREAM_AT_SPEED};
use crate::measure::Latencies;
use crate::model::{item_latency, raw_item_len, raw_request_len, wall_clock_ns, Case, Fixtures};

const OPEN: u8 = 1;
const CREDIT: u8 = 2;
const CALL: u8 = 3;
const CANCEL: u8 = 4;
const ITEM: u8 = 1;
const END: u8 = 2;
const REPLY: u8 = 3;

/// The most the server's writer puts in one `write_all`.
const WRITE_BATCH: usize = 64 * 1024;

/// The client's read buffer: one read takes in up to this much.
const READ_BUFFER: usize = 64 * 1024;

/// A client's connection: one framed socket.
pub type RawConn = Framed<TcpStream, LengthDelimitedCodec>;

/// Starts the stream server on an ephemeral loopback port.
pub async fn serve() -> BenchResult<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let item_len = raw_item_len();
    tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(serve_connection(stream, item_len));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    });
    Ok(addr)
}

/// One open stream on the server.
struct Producer {
    id: u32,
    remaining: u64,
    credit: u64,
}

/// What the connection's reader hands its writer.
#[derive(Default)]
struct Pending {
    producers: Vec<Producer>,
    replies: VecDeque<Bytes>,
    /// The client has closed its side (or sent garbage): stop.
    closed: bool,
}

struct Shared {
    pending: Mutex<Pending>,
    wake: Notify,
}

impl Shared {
    fn update(&self, change: impl FnOnce(&mut Pending)) {
        if let Ok(mut pending) = self.pending.lock() {
            change(&mut pending);
        }
        self.wake.notify_one();
    }
}

async fn serve_connection(stream: TcpStream, item_len: usize) {
    let (read, mut write) = stream.into_split();
    let shared = Arc::new(Shared {
        pending: Mutex::new(Pending::default()),
        wake: Notify::new(),
    });
    tokio::spawn(read_requests(read, Arc::clone(&shared)));
    let filler = vec![0x5A; item_len];
    let mut out = BytesMut::with_capacity(WRITE_BATCH + item_len + 4);
    loop {
        let closed = match shared.pending.lock() {
            Ok(mut pending) => {
                take_batch(&mut pending, &mut out, &filler);
                pending.closed
            }
            Err(_) => true,
        };
        if closed {
            return;
        }
        if out.is_empty() {
            // A permit stored by a notify that came before this wait is not lost.
            shared.wake.notified().await;
            continue;
        }
        if write.write_all(&out).await.is_err() {
            return;
        }
        out.clear();
    }
}

/// Every waiting reply, then items round-robin from the streams with credit, up to
/// [`WRITE_BATCH`] bytes; each stream that has sent its last item ends with `END`.
fn take_batch(pending: &mut Pending, out: &mut BytesMut, filler: &[u8]) {
    while let Some(reply) = pending.replies.pop_front() {
        put_frame(out, &reply);
    }
    loop {
        let mut sent = false;
        for producer in &mut pending.producers {
            if producer.credit > 0 && producer.remaining > 0 {
                out.put_u32(filler.len() as u32);
                out.put_u8(ITEM);
                out.put_u32(producer.id);
                out.put_u64(wall_clock_ns());
                out.put_slice(&filler[13..]);
                producer.credit -= 1;
                if producer.remaining != u64::MAX {
                    producer.remaining -= 1;
                }
                sent = true;
            }
        }
        pending.producers.retain(|producer| {
            if producer.remaining == 0 {
                let mut end = [END, 0, 0, 0, 0];
                end[1..].copy_from_slice(&producer.id.to_be_bytes());
                put_frame(out, &end);
            }
            producer.remaining > 0
        });
        if !sent || out.len() >= WRITE_BATCH {
            return;
        }
    }
}

fn put_frame(out: &mut BytesMut, body: &[u8]) {
    out.put_u32(body.len() as u32);
    out.put_slice(body);
}

/// The server connection's reader: opens, credits, calls and cancels, until the client
/// closes or sends something malformed.
async fn read_requests(read: OwnedReadHalf, shared: Arc<Shared>) {
    let mut frames = FramedRead::new(read, LengthDelimitedCodec::new());
    while let Some(Ok(frame)) = frames.next().await {
        let mut body = frame.freeze();
        let kind = if body.is_empty() { 0 } else { body.get_u8() };
        let understood = match (kind, body.len()) {
            (OPEN, 16) => {
                let (id, remaining, credit) = (body.get_u32(), body.get_u64(), body.get_u32());
                shared.update(|pending| {
                    pending.producers.push(Producer {
                        id,
                        remaining,
                        credit: u64::from(credit),
                    });
                });
                true
            }
            (CREDIT, 8) => {
                let (id, granted) = (body.get_u32(), body.get_u32());
                shared.update(|pending| {
                    if let Some(producer) = pending.producers.iter_mut().find(|p| p.id == id) {
                        producer.credit += u64::from(granted);
                    }
                });
                true
            }
            (CANCEL, 4) => {
                let id = body.get_u32();
                shared.update(|pending| pending.producers.retain(|p| p.id != id));
                true
            }
            (CALL, _) => {
                let mut reply = BytesMut::with_capacity(body.len() + 1);
                reply.put_u8(REPLY);
                reply.put_slice(&body);
                shared.update(|pending| pending.replies.push_back(reply.freeze()));
                true
            }
            _ => false,
        };
        if !understood {
            break;
        }
    }
    shared.update(|pending| pending.closed = true);
}

/// A frame from the server, parsed.
enum Received {
    Item { id: u32, sent_at_ns: u64 },
    End { id: u32 },
    Reply,
}

fn parse(mut body: BytesMut) -> BenchResult<Received> {
    let kind = if body.is_empty() { 0 } else { body.get_u8() };
    match (kind, body.len()) {
        (ITEM, len) if len >= 12 => Ok(Received::Item {
            id: body.get_u32(),
            sent_at_ns: body.get_u64(),
        }),
        (END, 4) => Ok(Received::End { id: body.get_u32() }),
        (REPLY, _) => Ok(Received::Reply),
        (kind, len) => Err(format!("unexpected frame: kind {kind}, {len} bytes").into()),
    }
}

/// The next frame from the server. Queued grants are written first unless a whole frame is
/// already in the read buffer, so each wait on the socket carries what the frames before it
/// earned.
async fn next_received(conn: &mut RawConn) -> BenchResult<Received> {
    let buffered = conn.read_buffer();
    let whole_frame = buffered.len() >= 4
        && buffered.len() - 4
            >= u32::from_be_bytes([buffered[0], buffered[1], buffered[2], buffered[3]]) as usize;
    if !whole_frame {
        SinkExt::<Bytes>::flush(conn).await?;
    }
    parse(
        conn.next()
            .await
            .ok_or("the server closed the connection")??,
    )
}

/// Room for [`READ_BUFFER`] bytes per read (tokio-util starts with 8 KiB); once reserved,
/// the buffer keeps that size as frames are split off it.
fn widen_reads(conn: &mut RawConn) {
    conn.read_buffer_mut().reserve(READ_BUFFER);
}

/// One stream's flow control on the client.
struct Credit {
    window: u32,
    /// Items read since the last grant.
    unread: u32,
    /// Grants are written at once, not with the next wait on the socket.
    at_once: bool,
}

impl Credit {
    /// A lone stream grants at once: held back until the items already buffered are read,
    /// its grant would reach the producer only after it had run dry. Beside other streams
    /// (S2), the others keep the connection busy meanwhile, so grants wait for the next read
    /// and many go out in one write, as wirecall's writer coalesces them.
    fn new(window: u32, at_once: bool) -> Self {
        Self {
            window,
            unread: 0,
            at_once,
        }
    }

    /// Counts one item read on stream `id`; once half the window was read since the last
    /// grant, grants that half.
    async fn read_one(&mut self, conn: &mut RawConn, id: u32) -> BenchResult<()> {
        self.unread += 1;
        let half = (self.window / 2).max(1);
        if self.unread >= half {
            self.unread = 0;
            let mut credit = BytesMut::with_capacity(9);
            credit.put_u8(CREDIT);
            credit.put_u32(id);
            credit.put_u32(half);
            if self.at_once {
                conn.send(credit.freeze()).await?;
            } else {
                conn.feed(credit.freeze()).await?;
            }
        }
        Ok(())
    }
}

/// Queues the opening of stream `id` with a first grant of `window` items (sent with the
/// next flush).
async fn open(conn: &mut RawConn, id: u32, count: u64, window: u32) -> BenchResult<()> {
    let mut open = BytesMut::with_capacity(17);
    open.put_u8(OPEN);
    open.put_u32(id);
    open.put_u64(count);
    open.put_u32(window);
    conn.feed(open.freeze()).await?;
    Ok(())
}

/// S1 and S2: opens `streams` streams of `items_each` items and reads them all on this task,
/// granting credit as it goes.
pub async fn consume_streams(
    conn: &mut RawConn,
    window: u32,
    streams: usize,
    items_each: u64,
) -> BenchResult<Latencies> {
    widen_reads(conn);
    let ids = u32::try_from(streams)?;
    for id in 0..ids {
        open(conn, id, items_each, window).await?;
    }
    SinkExt::<Bytes>::flush(conn).await?;
    // Per stream: items read, and its credit.
    let mut read: Vec<(u64, Credit)> = (0..streams)
        .map(|_| (0, Credit::new(window, streams == 1)))
        .collect();
    let mut latencies =
        Latencies::with_capacity(usize::try_from(items_each)?.saturating_mul(streams));
    let mut ended = 0;
    while ended < streams {
        match next_received(conn).await? {
            Received::Item { id, sent_at_ns } => {
                latencies.record(item_latency(sent_at_ns));
                let (count, credit) = read
                    .get_mut(id as usize)
                    .ok_or("an item of a stream never opened")?;
                *count += 1;
                credit.read_one(conn, id).await?;
            }
            Received::End { id } => {
                let count = read.get(id as usize).map_or(0, |(count, _)| *count);
                if count != items_each {
                    return Err(format!(
                        "stream {id} ended after {count} of its {items_each} items"
                    )
                    .into());
                }
                ended += 1;
            }
            Received::Reply => return Err("a reply to no call".into()),
        }
    }
    Ok(latencies)
}

/// S3: `calls` sequential calls on this task, each sent when the previous reply arrives;
/// with `beside_stream`, an endless stream is opened first (as `stream_id`: each phase
/// opens a new one, so that items of an earlier, cancelled one still on their way are told
/// apart), read between the replies and granted credit, and timing starts once it is at
/// speed.
pub async fn calls_beside_stream(
    conn: &mut RawConn,
    window: u32,
    calls: usize,
    beside_stream: bool,
    stream_id: u32,
) -> BenchResult<BesideStream> {
    widen_reads(conn);
    let call_len = raw_request_len(Case::User, &Fixtures::new());
    let mut call = BytesMut::with_capacity(call_len);
    call.put_u8(CALL);
    call.put_bytes(0x5A, call_len - 1);
    let call = call.freeze();

    let stream = beside_stream.then_some(stream_id);
    let mut credit = Credit::new(window, true);
    let mut delivered = 0u64;
    if let Some(id) = stream {
        open(conn, id, u64::MAX, window).await?;
        SinkExt::<Bytes>::flush(conn).await?;
        while delivered < STREAM_AT_SPEED {
            if let Received::Item { id: from, .. } = next_received(conn).await? {
                if from == id {
                    delivered += 1;
                    credit.read_one(conn, id).await?;
                }
            }
        }
    }
    let mut latencies = Latencies::with_capacity(calls);
    let before = delivered;
    let start = Instant::now();
    for _ in 0..calls {
        let call_start = Instant::now();
        conn.send(call.clone()).await?;
        loop {
            match next_received(conn).await? {
                Received::Reply => break,
                Received::Item { id: from, .. } if Some(from) == stream => {
                    delivered += 1;
                    credit.read_one(conn, from).await?;
                }
                // Items of an earlier phase's stream, cancelled, may still arrive.
                Received::Item { .. } | Received::End { .. } => {}
            }
        }
        latencies.record(call_start.elapsed());
    }
    let elapsed = start.elapsed();
    if let Some(id) = stream {
        let mut cancel = BytesMut::with_capacity(5);
        cancel.put_u8(CANCEL);
        cancel.put_u32(id);
        conn.send(cancel.freeze()).await?;
    }
    Ok(BesideStream {
        latencies,
        stream_items: delivered - before,
        elapsed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn connect(addr: SocketAddr) -> RawConn {
        let stream = TcpStream::connect(addr).await.expect("the server listens");
        Framed::new(stream, LengthDelimitedCodec::new())
    }

    #[tokio::test]
    async fn concurrent_streams_deliver_every_item_then_end() {
        let addr = serve().await.expect("bound");
        let mut conn = connect(addr).await;
        let latencies = consume_streams(&mut conn, 4, 3, 50)
            .await
            .expect("every stream ends after its items");
        assert_eq!(latencies.len(), 150);
        // The same connection opens the same ids again once those ended.
        let latencies = consume_streams(&mut conn, 4, 1, 5).await.expect("again");
        assert_eq!(latencies.len(), 5);
    }

    #[tokio::test]
    async fn calls_are_answered_beside_an_endless_stream_and_after_its_cancel() {
        let addr = serve().await.expect("bound");
        let mut conn = connect(addr).await;
        let beside = calls_beside_stream(&mut conn, 8, 20, true, 1)
            .await
            .expect("calls beside the stream");
        assert_eq!(beside.latencies.len(), 20);
        // The cancelled stream's last items are skipped.
        let alone = calls_beside_stream(&mut conn, 8, 20, false, 2)
            .await
            .expect("calls alone");
        assert_eq!((alone.latencies.len(), alone.stream_items), (20, 0));
    }
}
