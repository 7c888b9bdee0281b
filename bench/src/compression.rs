//! The compression cell (`--features zstd`): bytes on the wire and calls/s with compression
//! off (`Compression::none()`, what a build without the feature does) and on (the default
//! with the feature: zstd at level 3 from 1 KiB), in the same run, against one `wirecall-bench
//! server` process. Three payloads: W1-100obj (`get` with 100 users, one call at a time),
//! and W5's `bulk` with 64 KiB of text-like log lines and with 64 KiB of random bytes. The
//! bytes are counted on the client's socket, both ways, handshake included.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use wirecall::Transport;
use wirecall::{Channel, Codec, Compression};

use crate::load::{drive, spawn_server, Round};
use crate::measure::median;
use crate::model::{Fixtures, BULK_LEN};
use crate::systems::wirecall::UserServiceClient;
use crate::systems::BenchResult;

/// One payload, both settings.
#[derive(Debug, Serialize)]
pub struct PayloadResult {
    /// `W1-100obj`, `W5-text` or `W5-random`.
    pub payload: &'static str,
    /// Calls per round.
    pub calls: usize,
    /// Calls/s without compression (median of the rounds).
    pub off_calls_per_s: f64,
    /// Calls/s with it.
    pub on_calls_per_s: f64,
    /// on / off calls/s.
    pub ratio: f64,
    /// Bytes per call, client to server, without compression.
    pub off_bytes_up: f64,
    /// Bytes per call, client to server, with it.
    pub on_bytes_up: f64,
    /// Bytes per call, server to client, without compression.
    pub off_bytes_down: f64,
    /// Bytes per call, server to client, with it.
    pub on_bytes_down: f64,
    /// Client CPU per call without compression, in microseconds.
    pub off_cpu_us_per_call: f64,
    /// Client CPU per call with it, in microseconds.
    pub on_cpu_us_per_call: f64,
}

/// The three payloads.
#[derive(Clone, Copy, Debug)]
enum Payload {
    Users100,
    Text,
    Random,
}

impl Payload {
    fn name(self) -> &'static str {
        match self {
            Self::Users100 => "W1-100obj",
            Self::Text => "W5-text",
            Self::Random => "W5-random",
        }
    }
}

/// 64 KiB of log lines: timestamps, ids and latencies that vary, words that repeat, as a
/// service's text payloads do (zstd takes them to about a quarter).
fn text_like() -> Bytes {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut text = String::with_capacity(BULK_LEN + 128);
    let paths = [
        "/api/v1/users",
        "/api/v1/orders",
        "/health",
        "/api/v1/search",
    ];
    let levels = ["INFO", "INFO", "INFO", "WARN", "DEBUG"];
    while text.len() < BULK_LEN {
        text.push_str(&format!(
            "2026-12-04T10:{:02}:{:02}.{:03}Z {} request={:08x} path={}/{} status={} \
             latency_ms={}\n",
            rng.u32(..60),
            rng.u32(..60),
            rng.u32(..1000),
            levels[rng.usize(..levels.len())],
            rng.u32(..),
            paths[rng.usize(..paths.len())],
            rng.u32(..100_000),
            [200, 200, 200, 404, 500][rng.usize(..5)],
            rng.u32(..400),
        ));
    }
    text.truncate(BULK_LEN);
    Bytes::from(text)
}

/// 64 KiB that no compressor shrinks.
fn random() -> Bytes {
    let mut rng = fastrand::Rng::with_seed(11);
    (0..BULK_LEN).map(|_| rng.u8(..)).collect()
}

/// Runs the cell and prints one JSON line per payload and a summary table.
/// `level`: the zstd level of the "on" client, `None` for the default's.
pub async fn run(calls: usize, repeat: u32, level: Option<i32>) -> BenchResult<()> {
    if !Compression::default().is_enabled() {
        return Err("the compression cell needs zstd: cargo run --release -p wirecall-bench --features zstd -- compression".into());
    }
    let (_server, addr) = spawn_server().await?;
    let fixtures = Fixtures::new();
    let (text, noise) = (text_like(), random());
    let mut results = Vec::new();
    for payload in [Payload::Users100, Payload::Text, Payload::Random] {
        let mut off = Counted::connect(&addr, Compression::none()).await?;
        let on_setting = match level {
            Some(level) => Compression::default().level(level),
            None => Compression::default(),
        };
        let mut on = Counted::connect(&addr, on_setting).await?;
        let call = |client: &UserServiceClient| {
            let client = client.clone();
            let (users, text, noise) = (fixtures.users100.clone(), text.clone(), noise.clone());
            move || {
                let (client, users, text, noise) =
                    (client.clone(), users.clone(), text.clone(), noise.clone());
                async move {
                    let done = match payload {
                        Payload::Users100 => client.get(users).await.map(drop),
                        Payload::Text => client.bulk(text).await.map(drop),
                        Payload::Random => client.bulk(noise).await.map(drop),
                    };
                    done.map_err(|err| err.to_string())
                }
            }
        };
        // Warm both up, then alternate the rounds so that drift hits both alike.
        drive(calls / 10 + 1, 1, call(&off.client)).await?;
        drive(calls / 10 + 1, 1, call(&on.client)).await?;
        let mut rounds: [Vec<(Round, (f64, f64))>; 2] = Default::default();
        for _ in 0..repeat {
            for (side, counted) in [&mut off, &mut on].into_iter().enumerate() {
                let before = counted.bytes();
                let round = drive(calls, 1, call(&counted.client)).await?;
                let after = counted.bytes();
                let per_call = |a: u64, b: u64| (a - b) as f64 / calls as f64;
                rounds[side].push((
                    round,
                    (per_call(after.0, before.0), per_call(after.1, before.1)),
                ));
            }
        }
        let [off_rounds, on_rounds] = rounds;
        let summary = |rounds: Vec<(Round, (f64, f64))>| {
            let mut calls_per_s: Vec<f64> = rounds.iter().map(|(r, _)| r.calls_per_s).collect();
            let mut cpu: Vec<f64> = rounds.iter().map(|(r, _)| r.cpu_us_per_call).collect();
            let mut up: Vec<f64> = rounds.iter().map(|(_, bytes)| bytes.0).collect();
            let mut down: Vec<f64> = rounds.iter().map(|(_, bytes)| bytes.1).collect();
            [&mut calls_per_s, &mut cpu, &mut up, &mut down]
                .map(|values| median(values).unwrap_or_default())
        };
        let [off_cps, off_cpu, off_up, off_down] = summary(off_rounds);
        let [on_cps, on_cpu, on_up, on_down] = summary(on_rounds);
        let result = PayloadResult {
            payload: payload.name(),
            calls,
            off_calls_per_s: off_cps,
            on_calls_per_s: on_cps,
            ratio: on_cps / off_cps,
            off_bytes_up: off_up,
            on_bytes_up: on_up,
            off_bytes_down: off_down,
            on_bytes_down: on_down,
            off_cpu_us_per_call: off_cpu,
            on_cpu_us_per_call: on_cpu,
        };
        println!("{}", serde_json::to_string(&result)?);
        results.push(result);
    }
    println!(
        "\n| payload | calls/s off | calls/s on | on/off | bytes/call up off -> on | bytes/call down off -> on | client CPU us/call off -> on |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for r in &results {
        println!(
            "| {} | {:.0} | {:.0} | {:.2}x | {:.0} -> {:.0} | {:.0} -> {:.0} | {:.1} -> {:.1} |",
            r.payload,
            r.off_calls_per_s,
            r.on_calls_per_s,
            r.ratio,
            r.off_bytes_up,
            r.on_bytes_up,
            r.off_bytes_down,
            r.on_bytes_down,
            r.off_cpu_us_per_call,
            r.on_cpu_us_per_call,
        );
    }
    Ok(())
}

/// A MessagePack client whose socket counts the bytes it moves.
struct Counted {
    client: UserServiceClient,
    sent: Arc<AtomicU64>,
    received: Arc<AtomicU64>,
}

impl Counted {
    async fn connect(addr: &str, compression: Compression) -> BenchResult<Self> {
        let (sent, received) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let socket = TcpStream::connect(addr).await?;
        socket.set_nodelay(true)?;
        let stream = CountingStream {
            inner: socket,
            sent: Arc::clone(&sent),
            received: Arc::clone(&received),
        };
        let channel = Channel::builder()
            .codec(Codec::MessagePack)
            .compression(compression)
            .connect_with(stream)
            .await?;
        Ok(Self {
            client: UserServiceClient::new(channel),
            sent,
            received,
        })
    }

    /// Bytes sent and received so far.
    fn bytes(&self) -> (u64, u64) {
        (
            self.sent.load(Ordering::Relaxed),
            self.received.load(Ordering::Relaxed),
        )
    }
}

/// A stream (or half of one) that adds what it reads and writes to shared counters.
struct CountingStream<S> {
    inner: S,
    sent: Arc<AtomicU64>,
    received: Arc<AtomicU64>,
}

impl<S: AsyncRead + Unpin> AsyncRead for CountingStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = buf.filled().len() - before;
        self.received.fetch_add(read as u64, Ordering::Relaxed);
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for CountingStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &polled {
            self.sent.fetch_add(*n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = &polled {
            self.sent.fetch_add(*n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl Transport for CountingStream<TcpStream> {
    type Read = CountingStream<tokio::net::tcp::OwnedReadHalf>;
    type Write = CountingStream<tokio::net::tcp::OwnedWriteHalf>;

    fn split_io(self) -> (Self::Read, Self::Write) {
        let (read, write) = self.inner.into_split();
        let read = CountingStream {
            inner: read,
            sent: Arc::clone(&self.sent),
            received: Arc::clone(&self.received),
        };
        let write = CountingStream {
            inner: write,
            sent: self.sent,
            received: self.received,
        };
        (read, write)
    }
}
