//! Drives a whole server connection, in memory: a valid client hello, then arbitrary bytes
//! (frames or not), then the client's end of the stream closes.
//!
//! Input layout: byte 0 picks the codec of the hello (json, msgpack, protobuf) and, with its
//! high bit, whether the hello offers zstd (the server then reads compressed frames and may
//! send them), the rest is what the client sends after it. Invariants: the server never panics (the harness would
//! abort), its reply is a server hello followed by well-formed frames, every frame it sends
//! fits its maximum, it answers each request at most once, and the connection always ends
//! with a close. The clock is tokio's paused test clock, so timeouts (idle, deadlines, the
//! handshake) pass in virtual time and a hang is one the clock cannot end.

#![no_main]

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use bytes::BytesMut;
use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::codec::Decoder;
use wirecall::{Codec, RunningServer, Server};
use wirecall_runtime::negotiate::{ClientHello, ServerHello, PROTOCOL_VERSION};
use wirecall_runtime::transport::frame::{ErrorBody, FrameCodec, FrameKind};

/// The server's frame limit: small, so that every length the fuzzer can write is reachable.
const MAX_FRAME_LEN: u32 = 4096;
// No panicking handler: libFuzzer's panic hook aborts on every panic, caught or not (the
// server's handling of handler panics is tested in tests/failures.rs).

/// Virtual time after which a connection that has not closed counts as hung.
const HANG: Duration = Duration::from_secs(3600);

#[wirecall::service]
trait Target {
    async fn echo(&self, text: String) -> String;
    /// Bytes back: in JSON, base64 text or an array of numbers in, base64 text out.
    async fn blob(&self, data: wirecall::Bytes) -> wirecall::Bytes;
    async fn add(&self, a: i64, b: i64) -> i64;
    async fn sleep(&self, ms: u32) -> u32;
    async fn fail(&self, code: i32) -> Result<i32, String>;
    /// A server stream of `0..count`.
    async fn count(&self, count: u32) -> wirecall::Streaming<u32>;
    /// An upload (client stream): the total of the readings, or an error at the first over
    /// `limit`, answered without waiting for the rest.
    async fn total(&self, limit: u64, readings: wirecall::Streaming<u64>) -> Result<u64, String>;
    /// A bidirectional stream: each reading back, doubled.
    async fn doubled(&self, readings: wirecall::Streaming<u64>) -> wirecall::Streaming<u64>;
    #[oneway]
    async fn record(&self, value: u64);
}

struct TargetImpl;

impl Target for TargetImpl {
    async fn echo(&self, text: String) -> String {
        text
    }
    async fn blob(&self, data: wirecall::Bytes) -> wirecall::Bytes {
        data
    }
    async fn add(&self, a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
    async fn sleep(&self, ms: u32) -> u32 {
        tokio::time::sleep(Duration::from_millis(u64::from(ms))).await;
        ms
    }
    async fn fail(&self, code: i32) -> Result<i32, String> {
        if code % 2 == 0 {
            Ok(code)
        } else {
            Err(format!("odd {code}"))
        }
    }
    async fn record(&self, _value: u64) {}

    async fn count(&self, count: u32) -> wirecall::Streaming<u32> {
        wirecall::Streaming::from_iter(0..count.min(1_000))
    }

    async fn total(
        &self,
        limit: u64,
        mut readings: wirecall::Streaming<u64>,
    ) -> Result<u64, String> {
        let mut total = 0u64;
        while let Some(reading) = readings.next().await {
            if reading > limit {
                return Err(format!("{reading} is over {limit}"));
            }
            total = total.wrapping_add(reading);
        }
        Ok(total)
    }

    async fn doubled(&self, readings: wirecall::Streaming<u64>) -> wirecall::Streaming<u64> {
        wirecall::Streaming::new(readings.map(|reading| reading.wrapping_mul(2)))
    }
}

struct Harness {
    runtime: tokio::runtime::Runtime,
    server: RunningServer,
}

thread_local! {
    static HARNESS: RefCell<Option<Harness>> = const { RefCell::new(None) };
}

fn harness() -> Harness {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    let server = runtime.block_on(async {
        Server::builder()
            .serve(TargetServer::new(TargetImpl))
            .max_frame_len(MAX_FRAME_LEN)
            .max_in_flight_per_connection(8)
            .idle_timeout(Duration::from_secs(5))
            .ping_timeout(Duration::from_secs(1))
            .start_without_listener()
            .await
            .expect("server starts")
    });
    Harness { runtime, server }
}

fuzz_target!(|data: &[u8]| {
    let [codec_byte, wire @ ..] = data else {
        return;
    };
    let codec = [Codec::Json, Codec::MessagePack, Codec::Protobuf][usize::from(*codec_byte % 3)];
    let zstd = codec_byte & 0x80 != 0;
    HARNESS.with(|cell| {
        let mut cell = cell.borrow_mut();
        let harness = cell.get_or_insert_with(harness);
        let server = &harness.server;
        harness.runtime.block_on(async {
            let (mut client, server_end) = tokio::io::duplex(64 * 1024);
            server.serve_stream(server_end);
            let mut input = ClientHello {
                version: PROTOCOL_VERSION,
                codecs: vec![codec.id()],
                token: Vec::new(),
                max_frame_len: None,
                early_calls: false,
                compression: if zstd { vec![1] } else { Vec::new() },
            }
            .to_bytes();
            input.extend_from_slice(wire);
            // Write and read at once: the server may stop reading (backpressure) until its
            // replies are read.
            let (mut read_half, mut write_half) = tokio::io::split(&mut client);
            let write = async {
                let _ = write_half.write_all(&input).await;
                let _ = write_half.shutdown().await;
            };
            let read = async {
                let mut output = Vec::new();
                read_half.read_to_end(&mut output).await.map(|_| output)
            };
            let (_, output) = tokio::time::timeout(HANG, async { tokio::join!(write, read) })
                .await
                .expect("the server closes the connection");
            let output = output.expect("reading the server's side never fails");
            check_output(wire, &output, zstd);
        });
    });
});

/// What the client sent, per request id, in the frames before the first malformed one (the
/// server reads no further).
#[derive(Default)]
struct Sent {
    /// Request and Open frames.
    requests: HashMap<u64, usize>,
    /// The Items the client's Credit frames allowed the server to send.
    credit: HashMap<u64, u64>,
}

fn sent_by_client(wire: &[u8], zstd: bool) -> Sent {
    let mut buf = BytesMut::from(wire);
    let mut frames = codec_for(zstd);
    let mut sent = Sent::default();
    while let Ok(Some(frame)) = frames.decode(&mut buf) {
        match frame.kind {
            FrameKind::Request | FrameKind::Open => {
                *sent.requests.entry(frame.request_id).or_default() += 1;
            }
            FrameKind::Credit => {
                if let Ok(n) = <[u8; 4]>::try_from(&frame.payload[..]) {
                    *sent.credit.entry(frame.request_id).or_default() +=
                        u64::from(u32::from_be_bytes(n));
                }
            }
            _ => {}
        }
    }
    sent
}

/// The decoder of a connection that negotiated zstd, or none.
fn codec_for(zstd: bool) -> FrameCodec {
    let codec = FrameCodec::for_version(MAX_FRAME_LEN, PROTOCOL_VERSION);
    if zstd {
        codec.accepting_zstd()
    } else {
        codec
    }
}

/// The server's bytes: an accepting hello, then whole frames within the limit, no more replies
/// to a request id than requests sent with it (an id may be reused once answered), and no
/// more Items on a stream than the client's Credit frames allowed.
fn check_output(wire: &[u8], output: &[u8], zstd: bool) {
    let (hello, used) = ServerHello::parse(output)
        .expect("a valid server hello")
        .expect("a whole server hello");
    assert_eq!(hello.status as u8, 0, "the hello is accepted");
    let chosen: &[u8] = if zstd { &[1] } else { &[] };
    assert_eq!(hello.compression, chosen, "zstd is chosen exactly when offered");
    let sent = sent_by_client(wire, zstd);
    let mut buf = BytesMut::from(&output[used..]);
    let mut frames = codec_for(zstd);
    let mut answered: HashMap<u64, usize> = HashMap::new();
    let mut items: HashMap<u64, u64> = HashMap::new();
    while let Some(frame) = frames
        .decode(&mut buf)
        .expect("the server sends valid frames")
    {
        match frame.kind {
            // The credit for an upload's items: only on a stream the client opened.
            FrameKind::Credit => assert!(
                sent.requests.contains_key(&frame.request_id),
                "credit on stream {} that was never opened",
                frame.request_id
            ),
            // A stream's items: only on a stream the client opened, and within its credit.
            FrameKind::Item => {
                let count = items.entry(frame.request_id).or_default();
                *count += 1;
                let allowed = sent.credit.get(&frame.request_id).copied().unwrap_or(0);
                assert!(
                    sent.requests.contains_key(&frame.request_id) && *count <= allowed,
                    "item {count} on stream {} (opened: {}), the client allowed {allowed}",
                    frame.request_id,
                    sent.requests.contains_key(&frame.request_id)
                );
            }
            FrameKind::Response | FrameKind::Error | FrameKind::End if frame.request_id != 0 => {
                let replies = answered.entry(frame.request_id).or_default();
                *replies += 1;
                let requests = sent.requests.get(&frame.request_id).copied().unwrap_or(0);
                assert!(
                    *replies <= requests,
                    "request id {} answered {} times, sent {requests} times",
                    frame.request_id,
                    replies
                );
                if frame.kind == FrameKind::Error {
                    assert!(frame.payload.len() >= 2, "an error frame has a code");
                    let _ = ErrorBody::decode(&frame.payload);
                }
            }
            FrameKind::Error | FrameKind::Ping | FrameKind::Pong => {}
            kind => panic!("a server never sends {kind:?}"),
        }
    }
    assert!(
        buf.is_empty(),
        "the server's output ends on a frame boundary"
    );
}
