//! The physical floor: plain tokio TCP with tokio-util's `LengthDelimitedCodec` (a 4-byte
//! big-endian length, then the payload). The server echoes every frame; in one-way mode (W6)
//! it counts frames instead, and answers an empty frame with the count as 8 big-endian bytes.
//! The stream cells' floor speaks its own protocol (`raw_streams`) to its own server, and so
//! does the upload cell's (`raw_upload`).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{FutureExt, SinkExt, StreamExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::codec::{Framed, FramedRead, FramedWrite, LengthDelimitedCodec};

use super::{
    check_received, raw_streams, raw_upload, BenchResult, BesideStream, BoxError, Counter, Rpc,
};
use crate::measure::Latencies;
use crate::model::{raw_request_len, Case, Fixtures, RECORD_LEN};

/// Starts the echo (or, with `one_way`, counting) server on an ephemeral loopback port.
pub async fn serve(one_way: bool, counted: Counter) -> BenchResult<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(serve_connection(stream, one_way, Arc::clone(&counted)));
                }
                // Typically EMFILE: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    });
    Ok(addr)
}

async fn serve_connection(stream: TcpStream, one_way: bool, counted: Counter) {
    let mut frames = Framed::new(stream, LengthDelimitedCodec::new());
    while let Some(Ok(first)) = frames.next().await {
        let mut frame = Some(first);
        // Answer every frame already received, then write them all with one flush.
        while let Some(received) = frame.take() {
            let reply = if !one_way {
                Some(received.freeze())
            } else if received.is_empty() {
                let count = counted.load(Ordering::Relaxed);
                Some(Bytes::copy_from_slice(&count.to_be_bytes()))
            } else {
                counted.fetch_add(1, Ordering::Relaxed);
                None
            };
            if let Some(reply) = reply {
                if frames.feed(reply).await.is_err() {
                    return;
                }
            }
            frame = frames.next().now_or_never().flatten().and_then(Result::ok);
        }
        if SinkExt::<Bytes>::flush(&mut frames).await.is_err() {
            return;
        }
    }
}

/// A raw-TCP client whose payloads are as large as wirecall's MessagePack requests.
#[derive(Clone)]
pub struct RawRpc {
    addr: SocketAddr,
    payloads: Arc<[Bytes; 5]>,
    /// The id of the next stream S3 opens.
    next_stream: Arc<AtomicU32>,
    /// The credit window of the stream cells, in items.
    stream_window: u32,
}

impl RawRpc {
    /// A client of the server at `addr`.
    pub fn new(addr: SocketAddr, fixtures: &Fixtures) -> Self {
        let payload = |case| Bytes::from(vec![0x5A; raw_request_len(case, fixtures)]);
        Self {
            addr,
            payloads: Arc::new([
                payload(Case::Dictionary),
                payload(Case::User),
                payload(Case::Users10),
                payload(Case::Users100),
                payload(Case::Bulk),
            ]),
            next_stream: Arc::new(AtomicU32::new(0)),
            stream_window: wirecall_runtime::stream::DEFAULT_STREAM_WINDOW,
        }
    }

    /// Streams whose credit window is `items` (default 32, what wirecall grants at the open).
    pub fn with_stream_window(mut self, items: u32) -> Self {
        self.stream_window = items;
        self
    }

    fn payload(&self, case: Case) -> Bytes {
        let index = match case {
            Case::Dictionary => 0,
            Case::User => 1,
            Case::Users10 => 2,
            Case::Users100 => 3,
            Case::Bulk => 4,
        };
        self.payloads[index].clone()
    }
}

/// The next frame, or an error if the server closed the connection.
async fn next_frame<S>(frames: &mut S) -> BenchResult<bytes::BytesMut>
where
    S: futures::Stream<Item = std::io::Result<bytes::BytesMut>> + Unpin,
{
    Ok(frames
        .next()
        .await
        .ok_or("the server closed the connection")??)
}

impl Rpc for RawRpc {
    type Conn = Framed<TcpStream, LengthDelimitedCodec>;

    async fn connect(&self) -> BenchResult<Self::Conn> {
        let stream = TcpStream::connect(self.addr).await?;
        stream.set_nodelay(true)?;
        Ok(Framed::new(stream, LengthDelimitedCodec::new()))
    }

    async fn call(&self, conn: &mut Self::Conn, case: Case) -> BenchResult<()> {
        let payload = self.payload(case);
        let len = payload.len();
        conn.send(payload).await?;
        let echoed = next_frame(conn).await?;
        if echoed.len() != len {
            return Err(format!("echo of {len} bytes came back as {}", echoed.len()).into());
        }
        Ok(())
    }

    async fn pipelined(
        &self,
        conn: &mut Self::Conn,
        case: Case,
        in_flight: usize,
        calls: usize,
    ) -> BenchResult<Latencies> {
        let payload = self.payload(case);
        // Between calls nothing is buffered, so the stream can be split for the duration.
        let (read, write) = conn.get_mut().split();
        let mut reader = FramedRead::new(read, LengthDelimitedCodec::new());
        let mut writer = FramedWrite::new(write, LengthDelimitedCodec::new());
        let window = Semaphore::new(in_flight.max(1));
        let sent: Mutex<VecDeque<Instant>> = Mutex::new(VecDeque::with_capacity(in_flight));
        let send = async {
            for _ in 0..calls {
                let permit = match window.try_acquire() {
                    Ok(permit) => permit,
                    Err(_) => {
                        // The window is full: put what is queued on the wire, then wait.
                        SinkExt::<Bytes>::flush(&mut writer).await?;
                        window.acquire().await?
                    }
                };
                permit.forget();
                sent.lock()
                    .map_err(|_| "send-time queue poisoned")?
                    .push_back(Instant::now());
                writer.feed(payload.clone()).await?;
            }
            SinkExt::<Bytes>::flush(&mut writer).await?;
            Ok::<_, BoxError>(())
        };
        let receive = async {
            let mut latencies = Latencies::with_capacity(calls);
            for _ in 0..calls {
                next_frame(&mut reader).await?;
                let started = sent
                    .lock()
                    .map_err(|_| "send-time queue poisoned")?
                    .pop_front()
                    .ok_or("an echo arrived for a frame never sent")?;
                latencies.record(started.elapsed());
                window.add_permits(1);
            }
            Ok::<_, BoxError>(latencies)
        };
        let ((), latencies) = tokio::try_join!(send, receive)?;
        Ok(latencies)
    }

    async fn send_one_way(&self, conn: &mut Self::Conn, calls: usize) -> BenchResult<()> {
        let message = Bytes::from_static(&[0x5A; RECORD_LEN]);
        for _ in 0..calls {
            conn.feed(message.clone()).await?;
        }
        SinkExt::<Bytes>::flush(conn).await?;
        Ok(())
    }

    async fn server_count(&self, conn: &mut Self::Conn) -> BenchResult<u64> {
        conn.send(Bytes::new()).await?;
        let reply = next_frame(conn).await?;
        let count: [u8; 8] = reply[..]
            .try_into()
            .map_err(|_| "the count reply is not 8 bytes")?;
        Ok(u64::from_be_bytes(count))
    }

    async fn consume_streams(
        &self,
        conn: &mut Self::Conn,
        streams: usize,
        items_each: u64,
    ) -> BenchResult<Latencies> {
        raw_streams::consume_streams(conn, self.stream_window, streams, items_each).await
    }

    async fn calls_beside_stream(
        &self,
        conn: &mut Self::Conn,
        calls: usize,
        beside_stream: bool,
    ) -> BenchResult<BesideStream> {
        let stream_id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let window = self.stream_window;
        raw_streams::calls_beside_stream(conn, window, calls, beside_stream, stream_id).await
    }

    async fn upload(&self, conn: &mut Self::Conn, chunks: u64) -> BenchResult<()> {
        check_received(raw_upload::upload(conn, chunks).await?, chunks)
    }
}
