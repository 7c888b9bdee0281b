//! The systems under test. Each one provides a server (run in the `server` process) and an
//! [`Rpc`] client (run in the `client` process); the workloads in `crate::client` drive any
//! [`Rpc`] the same way.

pub mod gateway;
pub mod grpc_wirecall;
pub mod raw;
pub mod raw_streams;
pub mod raw_upload;
pub mod tarpc;
pub mod tonic;
pub mod wirecall;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::BoxStream;
use futures::StreamExt as _;

use crate::measure::Latencies;
use crate::model::{item_latency, Case, CHUNK_LEN};

/// Any error of a benchmark run; it ends the cell, which is reported as failed.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The result type of everything that can fail a cell.
pub type BenchResult<T> = Result<T, BoxError>;

/// A client of one system: open connections, make calls.
pub trait Rpc: Clone + Send + Sync + 'static {
    /// One open (and, where the protocol has one, negotiated) connection.
    type Conn: Send + 'static;

    /// Opens a connection to the server.
    fn connect(&self) -> impl Future<Output = BenchResult<Self::Conn>> + Send;

    /// Makes one call of `case` and waits for its reply.
    fn call(
        &self,
        conn: &mut Self::Conn,
        case: Case,
    ) -> impl Future<Output = BenchResult<()>> + Send;

    /// Makes `calls` calls of `case` on one connection, keeping `in_flight` outstanding, and
    /// returns each call's latency.
    fn pipelined(
        &self,
        conn: &mut Self::Conn,
        case: Case,
        in_flight: usize,
        calls: usize,
    ) -> impl Future<Output = BenchResult<Latencies>> + Send;

    /// Before W2 times its calls: whatever `pipelined` with `in_flight` calls needs beyond
    /// `conn` itself, opened `fan_out` at a time (HTTP/1.1's extra connections; nothing for a
    /// protocol that multiplexes).
    fn open_for_pipelining(
        &self,
        conn: &mut Self::Conn,
        in_flight: usize,
        fan_out: usize,
    ) -> impl Future<Output = BenchResult<()>> + Send {
        let _ = (conn, in_flight, fan_out);
        async { Ok(()) }
    }

    /// Sends `calls` one-way messages of `RECORD_LEN` bytes.
    fn send_one_way(
        &self,
        conn: &mut Self::Conn,
        calls: usize,
    ) -> impl Future<Output = BenchResult<()>> + Send;

    /// Asks the server how many one-way messages it has counted so far.
    fn server_count(&self, conn: &mut Self::Conn) -> impl Future<Output = BenchResult<u64>> + Send;

    /// W7: makes `calls` sequential 1-object calls on `conn` and returns their latencies;
    /// with `big_every`, the same connection meanwhile carries a request of about
    /// [`BIG_REQUEST_LEN`](crate::model::BIG_REQUEST_LEN) bytes at that interval.
    fn beside_big_requests(
        &self,
        conn: &mut Self::Conn,
        calls: usize,
        big_every: Option<Duration>,
    ) -> impl Future<Output = BenchResult<Latencies>> + Send {
        let _ = (conn, calls, big_every);
        async { Err("this system does not run W7".into()) }
    }

    /// S1 and S2: opens `streams` server streams of `items_each` items of
    /// [`ITEM_BODY_LEN`](crate::model::ITEM_BODY_LEN) bytes at once on `conn`, reads every
    /// item, and returns each item's latency from its producer's timestamp to its arrival.
    fn consume_streams(
        &self,
        conn: &mut Self::Conn,
        streams: usize,
        items_each: u64,
    ) -> impl Future<Output = BenchResult<Latencies>> + Send {
        let _ = (conn, streams, items_each);
        async { Err("this system has no server streams".into()) }
    }

    /// S3: makes `calls` sequential 1-object calls on `conn` and returns their latencies;
    /// with `beside_stream`, one server stream on the same connection is read as fast as
    /// it comes meanwhile.
    fn calls_beside_stream(
        &self,
        conn: &mut Self::Conn,
        calls: usize,
        beside_stream: bool,
    ) -> impl Future<Output = BenchResult<BesideStream>> + Send {
        let _ = (conn, calls, beside_stream);
        async { Err("this system has no server streams".into()) }
    }

    /// U1: uploads `chunks` chunks of [`CHUNK_LEN`] bytes as one client stream on `conn`
    /// and waits for the server's answer, which must count every byte
    /// ([`check_received`]).
    fn upload(
        &self,
        conn: &mut Self::Conn,
        chunks: u64,
    ) -> impl Future<Output = BenchResult<()>> + Send {
        let _ = (conn, chunks);
        async { Err("this system has no client streams".into()) }
    }
}

/// U1: an error unless the server's answer, `received` bytes, is what `chunks` chunks of
/// [`CHUNK_LEN`] bytes carry.
pub fn check_received(received: u64, chunks: u64) -> BenchResult<()> {
    let sent = chunks * CHUNK_LEN as u64;
    if received == sent {
        Ok(())
    } else {
        Err(format!("the server received {received} bytes of the {sent} uploaded").into())
    }
}

/// One server stream as the stream cells read it: each item's producer timestamp
/// ([`StreamItem::sent_at_ns`](crate::model::StreamItem::sent_at_ns)).
pub type Stamps = BoxStream<'static, BenchResult<u64>>;

/// What one phase of S3 measured.
#[derive(Debug, Default)]
pub struct BesideStream {
    /// The calls' latencies.
    pub latencies: Latencies,
    /// Items the stream delivered while the calls ran (0 without the stream).
    pub stream_items: u64,
    /// From the first call to the last reply.
    pub elapsed: Duration,
}

/// Items a stream must have delivered before S3 times its calls: the stream is at speed.
pub const STREAM_AT_SPEED: u64 = 256;

/// S1 and S2 for clients that multiplex by themselves: `streams` tasks, each opening one
/// stream with `open` and reading it to its end.
pub async fn read_streams<F, Fut>(
    streams: usize,
    items_each: u64,
    open: F,
) -> BenchResult<Latencies>
where
    F: Fn() -> Fut,
    Fut: Future<Output = BenchResult<Stamps>> + Send + 'static,
{
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..streams {
        let opened = open();
        tasks.spawn(async move {
            let mut stamps = opened.await?;
            let mut latencies = Latencies::with_capacity(usize::try_from(items_each).unwrap_or(0));
            while let Some(sent_at_ns) = stamps.next().await {
                latencies.record(item_latency(sent_at_ns?));
            }
            if latencies.len() as u64 != items_each {
                return Err(format!(
                    "a stream ended after {} of its {items_each} items",
                    latencies.len()
                )
                .into());
            }
            Ok::<_, BoxError>(latencies)
        });
    }
    collect_latencies(tasks).await
}

/// S3 for clients that multiplex by themselves: with `stream` (an endless one, opened on
/// `conn`'s connection), a task reads it as fast as it comes; once it is at speed, `calls`
/// sequential 1-object calls are made on `conn`, then the stream is dropped (cancelled).
pub async fn calls_beside<R: Rpc>(
    rpc: &R,
    conn: &mut R::Conn,
    calls: usize,
    stream: Option<Stamps>,
) -> BenchResult<BesideStream> {
    let delivered = Arc::new(AtomicU64::new(0));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let mut reader = stream.map(|mut stream| {
        let delivered = Arc::clone(&delivered);
        tokio::spawn(async move {
            tokio::pin!(stopped);
            loop {
                tokio::select! {
                    _ = &mut stopped => return Ok(()),
                    item = stream.next() => match item {
                        Some(item) => {
                            item?;
                            delivered.fetch_add(1, Ordering::Relaxed);
                        }
                        None => return Err::<(), BoxError>("the endless stream ended".into()),
                    },
                }
            }
        })
    });
    if let Some(reader) = &reader {
        while delivered.load(Ordering::Relaxed) < STREAM_AT_SPEED && !reader.is_finished() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    if let Some(reader) = reader.as_mut().filter(|reader| reader.is_finished()) {
        // Not stopped, so it ended with the stream's error.
        reader.await??;
        return Err("the stream stopped before it was at speed".into());
    }
    let mut latencies = Latencies::with_capacity(calls);
    let before = delivered.load(Ordering::Relaxed);
    let start = Instant::now();
    for _ in 0..calls {
        let call_start = Instant::now();
        rpc.call(conn, Case::User).await?;
        latencies.record(call_start.elapsed());
    }
    let elapsed = start.elapsed();
    let stream_items = delivered.load(Ordering::Relaxed) - before;
    if let Some(reader) = reader {
        let _ = stop.send(());
        reader.await??;
    }
    Ok(BesideStream {
        latencies,
        stream_items,
        elapsed,
    })
}

/// Pipelining for clients that multiplex by themselves: `in_flight` tasks share clones of one
/// connection, each making its share of `calls` sequentially.
pub async fn fan_out<R>(
    rpc: &R,
    conn: &R::Conn,
    case: Case,
    in_flight: usize,
    calls: usize,
) -> BenchResult<Latencies>
where
    R: Rpc,
    R::Conn: Clone,
{
    let workers = in_flight.clamp(1, calls.max(1));
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..workers {
        let share = calls / workers + usize::from(worker < calls % workers);
        let rpc = rpc.clone();
        let mut conn = conn.clone();
        tasks.spawn(async move {
            let mut latencies = Latencies::with_capacity(share);
            for _ in 0..share {
                let start = Instant::now();
                rpc.call(&mut conn, case).await?;
                latencies.record(start.elapsed());
            }
            Ok::<_, BoxError>(latencies)
        });
    }
    collect_latencies(tasks).await
}

/// Waits for every task and merges their latencies; the first error wins.
pub async fn collect_latencies(
    mut tasks: tokio::task::JoinSet<BenchResult<Latencies>>,
) -> BenchResult<Latencies> {
    let mut all = Latencies::default();
    while let Some(joined) = tasks.join_next().await {
        all.extend(joined??);
    }
    Ok(all)
}

/// What every server process shares with its handlers: the one-way message count.
pub type Counter = Arc<std::sync::atomic::AtomicU64>;
