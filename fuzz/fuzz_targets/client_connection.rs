//! Drives a whole client connection, in memory, against a hostile server: the server's hello
//! accepts, and then arbitrary bytes (frames or not) arrive where its replies should be.
//!
//! Input layout: byte 0 picks the codec (json, msgpack, protobuf), the rest is what the
//! server sends after its hello, once the client has sent its first calls. The client makes
//! one call of every shape at once: a unary call, a one-way call, a server stream, an upload
//! and a bidirectional stream, with request ids 1 to 5 in that order. The server's end closes
//! a second (of virtual time) after its bytes.
//!
//! The server stream's reply metadata is read before its items, and its trailers after.
//!
//! Invariants: the client never panics; every call and every stream ends, with its result or
//! an error (the clock is tokio's paused test clock, so deadlines pass in virtual time and a
//! hang is one the clock cannot end); a stream yields no more items than Item frames arrived
//! for it; and the client sends an upload no more items than the server's Credit frames
//! allowed.

#![no_main]

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use bytes::BytesMut;
use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio_util::codec::Decoder;
use wirecall::{Channel, Codec};
use wirecall_runtime::negotiate::{HelloStatus, ServerHello, PROTOCOL_VERSION};
use wirecall_runtime::transport::frame::{Frame, FrameCodec, FrameKind};

/// The frame limit both sides announce: small, so that every length the fuzzer can write is
/// reachable.
const MAX_FRAME_LEN: u32 = 4096;

/// Virtual time after which a call that has not ended counts as hung.
const HANG: Duration = Duration::from_secs(3600);

/// The calls that carry a request id: the unary call, the server stream, the upload and the
/// bidirectional stream. The server's bytes go out once it has read all four.
const CALLS_WITH_IDS: usize = 4;

#[wirecall::service]
trait Target {
    async fn echo(&self, text: String) -> String;
    #[oneway]
    async fn record(&self, value: u64);
    async fn count(&self, count: u32) -> wirecall::Streaming<u32>;
    async fn total(&self, readings: wirecall::Streaming<u64>) -> Result<u64, String>;
    async fn doubled(&self, readings: wirecall::Streaming<u64>) -> wirecall::Streaming<u64>;
}

thread_local! {
    static RUNTIME: RefCell<Option<tokio::runtime::Runtime>> = const { RefCell::new(None) };
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime")
}

fuzz_target!(|data: &[u8]| {
    let [codec_byte, wire @ ..] = data else {
        return;
    };
    let codec = [Codec::Json, Codec::MessagePack, Codec::Protobuf][usize::from(*codec_byte % 3)];
    RUNTIME.with(|cell| {
        let mut cell = cell.borrow_mut();
        let runtime = cell.get_or_insert_with(runtime);
        runtime.block_on(async {
            let (client_end, server_end) = tokio::io::duplex(64 * 1024);
            let server = tokio::spawn(hostile_server(server_end, codec, wire.to_vec()));
            let channel = Channel::builder()
                .codec(codec)
                .max_frame_len(MAX_FRAME_LEN)
                .timeout(Duration::from_secs(30))
                .connect_with(client_end)
                .await
                .expect("the server's hello accepts");
            let client = TargetClient::new(channel);
            let received = tokio::time::timeout(HANG, every_shape(&client))
                .await
                .expect("every call and stream ends");
            drop(client);
            let sent_by_client = tokio::time::timeout(HANG, server)
                .await
                .expect("the client closes the connection")
                .expect("the hostile server does not panic");
            check(wire, &sent_by_client, &received);
        });
    });
});

/// What the client's streams yielded: items per method name.
type Received = HashMap<&'static str, usize>;

/// One call of each shape, all at once; returns how many items each stream yielded.
async fn every_shape(client: &TargetClient) -> Received {
    let unary = async {
        let _ = client.echo("hello".to_owned()).await;
    };
    let one_way = async {
        let _ = client.record(7).await;
    };
    let server_stream = async {
        match client.count(3).await {
            Ok(mut items) => {
                // Its reply metadata first (a Head, or none), taking no item; its trailers
                // once it ended (none before).
                let _ = items.metadata().await;
                let mut counted = 0;
                while let Some(item) = items.next().await {
                    if item.is_ok() {
                        assert!(items.trailers().is_none(), "trailers before the end");
                        counted += 1;
                    }
                }
                let _ = items.trailers();
                counted
            }
            Err(_) => 0,
        }
    };
    let upload = async {
        let _ = client.total(futures::stream::iter(1..=5u64)).await;
    };
    let bidi = async {
        match client.doubled(futures::stream::iter([1u64, 2, 3])).await {
            Ok(items) => {
                items
                    .filter(|item| std::future::ready(item.is_ok()))
                    .count()
                    .await
            }
            Err(_) => 0,
        }
    };
    let ((), (), counted, (), doubled) = tokio::join!(unary, one_way, server_stream, upload, bidi);
    HashMap::from([("count", counted), ("doubled", doubled)])
}

/// The server's side: an accepting hello, then (once the client has sent its calls) the
/// fuzzer's bytes, then its end closes; reads the client's frames until the client closes.
async fn hostile_server(io: DuplexStream, codec: Codec, wire: Vec<u8>) -> Vec<Frame> {
    let (mut read_half, mut write_half) = tokio::io::split(io);
    let hello = ServerHello {
        version: PROTOCOL_VERSION,
        status: HelloStatus::Accepted,
        codec: codec.id(),
        supported: vec![
            Codec::Json.id(),
            Codec::MessagePack.id(),
            Codec::Protobuf.id(),
        ],
        max_frame_len: Some(MAX_FRAME_LEN),
        early_calls: false,
        // The client offers zstd (the fuzz build has the feature); this server chooses none,
        // so a compressed frame among the fuzzer's bytes is a protocol violation to the client.
        compression: Vec::new(),
    };
    let _ = write_half.write_all(&hello.encode()).await;
    let mut input = BytesMut::new();
    let mut frames = FrameCodec::for_version(MAX_FRAME_LEN, PROTOCOL_VERSION);
    let mut hello_len = None;
    let mut received = Vec::new();
    let mut wire = Some(wire);
    loop {
        let calls = received
            .iter()
            .filter(|frame: &&Frame| matches!(frame.kind, FrameKind::Request | FrameKind::Open))
            .count();
        if calls >= CALLS_WITH_IDS {
            if let Some(wire) = wire.take() {
                let _ = write_half.write_all(&wire).await;
                // A moment (of virtual time) for the client to act on them, sending upload
                // items for the credit they grant, before the connection's end arrives.
                tokio::time::sleep(Duration::from_secs(1)).await;
                let _ = write_half.shutdown().await;
            }
        }
        match read_half.read_buf(&mut input).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if hello_len.is_none() {
            match wirecall_runtime::negotiate::ClientHello::parse(&input) {
                Ok(Some((_, used))) => {
                    hello_len = Some(used);
                    let _ = input.split_to(used);
                }
                Ok(None) => continue,
                Err(error) => panic!("the client's hello is valid: {error}"),
            }
        }
        while let Some(frame) = frames
            .decode(&mut input)
            .expect("the client sends valid frames")
        {
            received.push(frame);
        }
    }
    // A client that closed before sending every call still gets the bytes (and its end).
    if let Some(wire) = wire {
        let _ = write_half.write_all(&wire).await;
    }
    received
}

/// Frames of `kind` per request id in `bytes`, up to the first malformed frame (the client
/// reads no further), and the sum of their 4-byte Credit payloads.
fn tally(bytes: &[u8], kind: FrameKind) -> HashMap<u64, u64> {
    let mut buf = BytesMut::from(bytes);
    let mut frames = FrameCodec::for_version(MAX_FRAME_LEN, PROTOCOL_VERSION);
    let mut counts = HashMap::new();
    while let Ok(Some(frame)) = frames.decode(&mut buf) {
        if frame.kind != kind {
            continue;
        }
        let weight = match kind {
            FrameKind::Credit => match <[u8; 4]>::try_from(&frame.payload[..]) {
                Ok(n) => u64::from(u32::from_be_bytes(n)),
                Err(_) => 0,
            },
            _ => 1,
        };
        *counts.entry(frame.request_id).or_default() += weight;
    }
    counts
}

fn check(wire: &[u8], sent_by_client: &[Frame], received: &Received) {
    let items_from_server = tally(wire, FrameKind::Item);
    let credit_from_server = tally(wire, FrameKind::Credit);
    let method_of = |name: &str| wirecall_runtime::method_id("Target", name);
    // Each stream's request id, from the client's Open frames.
    let stream_id = |name: &str| {
        sent_by_client
            .iter()
            .find(|frame| frame.kind == FrameKind::Open && frame.method == method_of(name))
            .map(|frame| frame.request_id)
    };
    for name in ["count", "doubled"] {
        let yielded = received[name] as u64;
        let arrived = stream_id(name)
            .and_then(|id| items_from_server.get(&id).copied())
            .unwrap_or(0);
        assert!(
            yielded <= arrived,
            "stream {name} yielded {yielded} items, {arrived} Item frames arrived for it"
        );
    }
    let mut items_from_client: HashMap<u64, u64> = HashMap::new();
    for frame in sent_by_client
        .iter()
        .filter(|frame| frame.kind == FrameKind::Item)
    {
        *items_from_client.entry(frame.request_id).or_default() += 1;
    }
    for (id, sent) in items_from_client {
        let allowed = credit_from_server.get(&id).copied().unwrap_or(0);
        assert!(
            sent <= allowed,
            "the client sent {sent} items on stream {id}, the server allowed {allowed}"
        );
    }
}
