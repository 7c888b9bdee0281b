//! Negotiated compression (book: "Compression (version 5)"): large frames shrink on the wire
//! in both directions and in every call shape, small and incompressible ones travel as they
//! are, older or unwilling peers get plain frames, and a peer's bad compressed frames close
//! its connection with a protocol violation and nothing worse.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wirecall::stream::Streaming;
use wirecall::wire::{FrameKind, FLAG_COMPRESSED};
use wirecall::{Channel, Codec, Compression, RunningServer, Server};
use wirecall_runtime::negotiate::ClientHello;

#[wirecall::service]
trait Texts {
    async fn echo(&self, text: String) -> String;
    async fn bytes(&self, data: Bytes) -> Bytes;
    async fn lines(&self, count: u32, line: String) -> Streaming<String>;
    async fn total(&self, texts: Streaming<String>) -> u64;
}

#[derive(Clone, Default)]
struct TextsImpl;

impl Texts for TextsImpl {
    async fn echo(&self, text: String) -> String {
        text
    }

    async fn bytes(&self, data: Bytes) -> Bytes {
        data
    }

    async fn lines(&self, count: u32, line: String) -> Streaming<String> {
        Streaming::from_iter((0..count).map(move |_| line.clone()))
    }

    async fn total(&self, mut texts: Streaming<String>) -> u64 {
        let mut total = 0;
        while let Some(text) = texts.next().await {
            total += text.len() as u64;
        }
        total
    }
}

/// Text as a log or a JSON document is: compressible, not trivially.
fn text(len: usize) -> String {
    let words = [
        "alpha", "beta", "gamma", "delta", "request", "user", "42", "ok",
    ];
    let mut text = String::with_capacity(len + 8);
    let mut i = 0usize;
    while text.len() < len {
        text.push_str(words[(i * 7 + i / 3) % words.len()]);
        text.push(' ');
        i += 1;
    }
    text.truncate(len);
    text
}

async fn serve(builder: wirecall::ServerBuilder) -> RunningServer {
    builder
        .serve(TextsServer::new(TextsImpl))
        .bind("127.0.0.1:0")
        .await
        .unwrap()
}

/// A relay between one client and the server that counts the bytes each way.
struct CountingRelay {
    addr: SocketAddr,
    to_server: Arc<AtomicU64>,
    to_client: Arc<AtomicU64>,
}

impl CountingRelay {
    async fn start(server: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let to_server = Arc::new(AtomicU64::new(0));
        let to_client = Arc::new(AtomicU64::new(0));
        let (up, down) = (Arc::clone(&to_server), Arc::clone(&to_client));
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(upstream) = TcpStream::connect(server).await else {
                    return;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = upstream.into_split();
                tokio::spawn(pump(client_read, server_write, Arc::clone(&up)));
                tokio::spawn(pump(server_read, client_write, Arc::clone(&down)));
            }
        });
        Self {
            addr,
            to_server,
            to_client,
        }
    }

    fn counts(&self) -> (u64, u64) {
        (
            self.to_server.load(Ordering::SeqCst),
            self.to_client.load(Ordering::SeqCst),
        )
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    counted: Arc<AtomicU64>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = to.shutdown().await;
                return;
            }
            Ok(n) => {
                counted.fetch_add(n as u64, Ordering::SeqCst);
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The bytes each way for one echo of `len` bytes of text, a server stream of 50 lines of
/// 4 KiB and an upload of 50 such lines, through a fresh relay, with the client's
/// `compression` and codec.
async fn traffic(server: &RunningServer, compression: Compression, codec: Codec) -> (u64, u64) {
    let relay = CountingRelay::start(server.local_addr()).await;
    let channel = Channel::builder()
        .codec(codec)
        .compression(compression)
        .connect(relay.addr)
        .await
        .unwrap();
    let client = TextsClient::new(channel);
    let sent = text(64 * 1024);
    assert_eq!(client.echo(sent.clone()).await.unwrap(), sent);
    let line = text(4096);
    let lines: Vec<String> = client
        .lines(50, line.clone())
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(lines, vec![line.clone(); 50]);
    let upload = futures::stream::iter(vec![line.clone(); 50]);
    assert_eq!(
        client.total(Streaming::new(upload)).await.unwrap(),
        50 * 4096
    );
    relay.counts()
}

#[tokio::test]
async fn large_frames_shrink_on_the_wire_both_ways_in_every_call_shape() {
    let server = serve(Server::builder()).await;
    for codec in [Codec::MessagePack, Codec::Json, Codec::Protobuf] {
        let (plain_up, plain_down) = traffic(&server, Compression::none(), codec).await;
        let (up, down) = traffic(&server, Compression::zstd(), codec).await;
        // 64 KiB + 200 KiB each way uncompressed.
        assert!(
            plain_up > 260_000 && plain_down > 260_000,
            "{codec}: {plain_up} / {plain_down}"
        );
        assert!(
            up * 5 < plain_up,
            "{codec}: requests and uploads {up} vs {plain_up} bytes"
        );
        assert!(
            down * 5 < plain_down,
            "{codec}: replies and items {down} vs {plain_down} bytes"
        );
    }
}

#[tokio::test]
async fn a_server_without_compression_or_of_version_4_gets_plain_frames() {
    for builder in [
        Server::builder().compression(Compression::none()),
        Server::builder().max_protocol_version(4),
    ] {
        let server = serve(builder).await;
        let (up, down) = traffic(&server, Compression::zstd(), Codec::MessagePack).await;
        assert!(
            up > 260_000 && down > 260_000,
            "uncompressed: {up} / {down}"
        );
    }
}

#[tokio::test]
async fn incompressible_and_small_frames_travel_as_they_are() {
    let server = serve(Server::builder()).await;
    let relay = CountingRelay::start(server.local_addr()).await;
    let channel = Channel::connect(relay.addr).await.unwrap();
    let client = TextsClient::new(channel);
    let random: Bytes = {
        use rand::RngCore;
        let mut bytes = vec![0u8; 256 * 1024];
        rand::rng().fill_bytes(&mut bytes);
        bytes.into()
    };
    for _ in 0..40 {
        assert_eq!(client.bytes(random.clone()).await.unwrap(), random);
    }
    let (up, down) = relay.counts();
    let payload = 40 * random.len() as u64;
    // Sent as they are: a few bytes of framing per call beyond the data, never more.
    assert!(
        (payload..payload + 40 * 64).contains(&up),
        "{up} for {payload}"
    );
    assert!(
        (payload..payload + 40 * 64).contains(&down),
        "{down} for {payload}"
    );
    assert_eq!(client.echo("small".to_owned()).await.unwrap(), "small");
}

/// A client hello of this version offering JSON and, with `zstd`, zstd compression.
fn hello(zstd: bool) -> Vec<u8> {
    ClientHello {
        version: wirecall::PROTOCOL_VERSION,
        codecs: vec![Codec::Json.id()],
        token: Vec::new(),
        max_frame_len: None,
        early_calls: false,
        compression: if zstd { vec![1] } else { Vec::new() },
    }
    .to_bytes()
}

/// A frame of `kind` with `flags` and exactly `payload`.
fn frame(kind: FrameKind, flags: u8, request_id: u64, method: u64, payload: &[u8]) -> Vec<u8> {
    let mut bytes = BytesMut::new();
    bytes.put_u32(22 + payload.len() as u32);
    bytes.put_u8(kind as u8);
    bytes.put_u8(flags);
    bytes.put_u64(request_id);
    bytes.put_u64(method);
    bytes.put_u32(0);
    bytes.extend_from_slice(payload);
    bytes.to_vec()
}

/// A compressed payload: the announced length, then `data`.
fn compressed(announced: u32, data: &[u8]) -> Vec<u8> {
    let mut payload = announced.to_be_bytes().to_vec();
    payload.extend_from_slice(data);
    payload
}

/// Connects with `hello`, reads the server's hello, sends `frames` (then, with `half_close`,
/// ends its side so that a well-behaved server closes too once it has answered), and returns
/// the server hello's extensions and everything the server sent until it closed.
async fn exchange(
    server: SocketAddr,
    hello: &[u8],
    frames: &[u8],
    half_close: bool,
) -> (Vec<u8>, Vec<u8>) {
    let mut socket = TcpStream::connect(server).await.unwrap();
    socket.write_all(hello).await.unwrap();
    // Accepted, JSON, three codecs, then the extensions.
    let mut head = vec![0u8; 13];
    socket.read_exact(&mut head).await.unwrap();
    let ext_len = u16::from_be_bytes([head[11], head[12]]) as usize;
    let mut extensions = vec![0u8; ext_len];
    socket.read_exact(&mut extensions).await.unwrap();
    socket.write_all(frames).await.unwrap();
    if half_close {
        socket.shutdown().await.unwrap();
    }
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), socket.read_to_end(&mut rest))
        .await
        .expect("the server closes the connection")
        .unwrap();
    (extensions, rest)
}

const ECHO: u64 = wirecall::method_id("Texts", "echo").get();

#[tokio::test]
async fn the_server_chooses_zstd_and_reads_compressed_requests() {
    let server = serve(Server::builder()).await;
    let json = format!("{{\"text\":\"{}\"}}", text(4000));
    let data = zstd::bulk::compress(json.as_bytes(), 3).unwrap();
    let request = frame(
        FrameKind::Request,
        FLAG_COMPRESSED,
        1,
        ECHO,
        &compressed(json.len() as u32, &data),
    );
    let mut frames = request.clone();
    // A Cancel of nothing, then a half-close: the server answers and closes.
    frames.extend(frame(FrameKind::Cancel, 0, 9, 0, &[]));
    let (extensions, rest) = exchange(server.local_addr(), &hello(true), &frames, true).await;
    assert!(
        extensions.ends_with(&[3, 1, 1]),
        "the server names zstd: {extensions:02x?}"
    );
    // The reply is compressed too: Response, flag 02, then the length and a zstd frame.
    assert_eq!(rest[4], FrameKind::Response as u8, "{:02x?}", &rest[..26]);
    assert_eq!(rest[5], FLAG_COMPRESSED);
    let len = u32::from_be_bytes(rest[26..30].try_into().unwrap()) as usize;
    let frame_len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
    let reply = zstd::bulk::decompress(&rest[30..4 + frame_len], len).unwrap();
    let expected = format!("{{\"value\":\"{}\"}}", text(4000));
    assert!(reply == expected.as_bytes(), "the echoed text, {len} bytes");
}

/// The code of the connection-level Error frame (request id 0) that `bytes` starts with.
fn connection_error_code(bytes: &[u8]) -> u16 {
    assert!(
        bytes.len() >= 28,
        "an error frame before the close: {bytes:02x?}"
    );
    assert_eq!(bytes[4], FrameKind::Error as u8, "{bytes:02x?}");
    assert_eq!(&bytes[6..14], &[0; 8], "request id 0: the whole connection");
    u16::from_be_bytes([bytes[26], bytes[27]])
}

#[tokio::test]
async fn bad_compressed_frames_close_the_connection_as_protocol_violations() {
    let server = serve(Server::builder()).await;
    let json = b"{\"text\":\"hi\"}";
    let valid = zstd::bulk::compress(json, 3).unwrap();
    let mut two_frames = valid.clone();
    two_frames.extend_from_slice(&valid);
    let cases: Vec<(&str, bool, Vec<u8>)> = vec![
        (
            "a bomb: 1 GiB announced",
            true,
            frame(
                FrameKind::Request,
                FLAG_COMPRESSED,
                1,
                ECHO,
                &compressed(1 << 30, &valid),
            ),
        ),
        (
            "more announced than the data holds",
            true,
            frame(
                FrameKind::Request,
                FLAG_COMPRESSED,
                1,
                ECHO,
                &compressed(4000, &valid),
            ),
        ),
        (
            "less announced than the data holds",
            true,
            frame(
                FrameKind::Request,
                FLAG_COMPRESSED,
                1,
                ECHO,
                &compressed(4, &valid),
            ),
        ),
        (
            "corrupt data",
            true,
            frame(
                FrameKind::Request,
                FLAG_COMPRESSED,
                1,
                ECHO,
                &compressed(13, &[0x28, 0xb5, 0x2f, 0xfd, 1, 2, 3]),
            ),
        ),
        (
            "two zstd frames",
            true,
            frame(
                FrameKind::Request,
                FLAG_COMPRESSED,
                1,
                ECHO,
                &compressed(26, &two_frames),
            ),
        ),
        (
            "no room for the length",
            true,
            frame(FrameKind::Request, FLAG_COMPRESSED, 1, ECHO, &[0, 0]),
        ),
        (
            "a compressed Ping",
            true,
            frame(
                FrameKind::Ping,
                FLAG_COMPRESSED,
                1,
                0,
                &compressed(13, &valid),
            ),
        ),
        (
            "compressed without negotiation",
            false,
            frame(
                FrameKind::Request,
                FLAG_COMPRESSED,
                1,
                ECHO,
                &compressed(13, &valid),
            ),
        ),
    ];
    for (case, zstd, bad) in cases {
        let (_, rest) = tokio::time::timeout(
            Duration::from_secs(10),
            exchange(server.local_addr(), &hello(zstd), &bad, false),
        )
        .await
        .unwrap_or_else(|_| panic!("{case}: the server closes within 10 s"));
        assert_eq!(connection_error_code(&rest), 6, "{case}: ProtocolViolation");
    }
    // The server is unharmed.
    let client = TextsClient::new(Channel::connect(server.local_addr()).await.unwrap());
    assert_eq!(client.echo(text(5000)).await.unwrap(), text(5000));
}

#[tokio::test]
async fn a_connection_opened_with_early_calls_compresses_once_the_server_chose_zstd() {
    let server = serve(Server::builder()).await;
    let relay = CountingRelay::start(server.local_addr()).await;
    let sent = text(64 * 1024);
    // The first connection learns that the server takes early calls; the second sends its
    // first call behind its hello, before it knows whether the server compresses.
    for round in 0..2 {
        let before = relay.counts();
        let channel = Channel::connect(relay.addr).await.unwrap();
        let client = TextsClient::new(channel.clone());
        for _ in 0..4 {
            assert_eq!(client.echo(sent.clone()).await.unwrap(), sent);
        }
        channel.close().await;
        let (up, down) = relay.counts();
        let (up, down) = (up - before.0, down - before.1);
        // The replies are compressed in both rounds; in the second, the first request goes
        // out uncompressed (early) and the other three compressed.
        assert!(
            down < 4 * 64 * 1024 / 5,
            "round {round}: {down} bytes of replies"
        );
        let most = if round == 0 {
            4 * 64 * 1024 / 5
        } else {
            64 * 1024 + 3 * 64 * 1024 / 5
        };
        assert!(up < most, "round {round}: {up} bytes of requests");
        if round == 1 {
            assert!(up > 64 * 1024, "the early call went as it was: {up} bytes");
        }
    }
}

/// A server that accepts any hello choosing JSON and zstd, then answers the first frame it
/// reads with `reply(request_id)` and keeps the connection open.
async fn hostile_server(reply: fn(u64) -> Vec<u8>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut read = 0;
                // The hello: parse it when whole.
                let used = loop {
                    let Ok(n) = socket.read(&mut buf[read..]).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    read += n;
                    if let Ok(Some((_, used))) = ClientHello::parse(&buf[..read]) {
                        break used;
                    }
                };
                let hello = wirecall_runtime::negotiate::ServerHello {
                    version: wirecall::PROTOCOL_VERSION,
                    status: wirecall::wire::HelloStatus::Accepted,
                    codec: Codec::Json.id(),
                    supported: vec![Codec::Json.id()],
                    max_frame_len: None,
                    early_calls: false,
                    compression: vec![1],
                };
                socket.write_all(&hello.encode()).await.unwrap();
                let mut pending = buf[used..read].to_vec();
                while pending.len() < 26 {
                    let Ok(n) = socket.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    pending.extend_from_slice(&buf[..n]);
                }
                let request_id = u64::from_be_bytes(pending[6..14].try_into().unwrap());
                let _ = socket.write_all(&reply(request_id)).await;
                // Keep reading until the client goes.
                while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

#[tokio::test]
async fn a_server_s_bad_compressed_reply_fails_the_call_instead_of_hanging_it() {
    let replies: [fn(u64) -> Vec<u8>; 3] = [
        // A bomb: 1 GiB announced.
        |id| {
            frame(
                FrameKind::Response,
                FLAG_COMPRESSED,
                id,
                ECHO,
                &compressed(1 << 30, b"x"),
            )
        },
        // Corrupt data.
        |id| {
            frame(
                FrameKind::Response,
                FLAG_COMPRESSED,
                id,
                ECHO,
                &compressed(20, &[0x28, 0xb5, 0x2f, 0xfd, 9, 9]),
            )
        },
        // A compressed Pong.
        |id| {
            frame(
                FrameKind::Pong,
                FLAG_COMPRESSED,
                id,
                0,
                &compressed(1, b"x"),
            )
        },
    ];
    for reply in replies {
        let addr = hostile_server(reply).await;
        let channel = Channel::builder()
            .codec(Codec::Json)
            .compression(Compression::zstd())
            .connect(addr)
            .await
            .unwrap();
        let client = TextsClient::new(channel);
        let outcome = tokio::time::timeout(Duration::from_secs(10), client.echo("hi".to_owned()))
            .await
            .expect("the call ends, with an error");
        let err = outcome.unwrap_err();
        assert!(
            matches!(err, wirecall::Error::ConnectionClosed { .. }),
            "the connection closed under the call: {err}"
        );
    }
}

#[tokio::test]
async fn a_handle_without_compression_sends_its_calls_and_uploads_as_they_are() {
    let server = serve(Server::builder()).await;
    let relay = CountingRelay::start(server.local_addr()).await;
    let channel = Channel::connect(relay.addr).await.unwrap();
    let compressed = TextsClient::new(channel.clone());
    let plain = TextsClient::new(channel.without_compression());
    let sent = text(64 * 1024);
    let measure =
        |counts: (u64, u64), before: (u64, u64)| (counts.0 - before.0, counts.1 - before.1);
    let before = relay.counts();
    assert_eq!(compressed.echo(sent.clone()).await.unwrap(), sent);
    let (up, down) = measure(relay.counts(), before);
    assert!(
        up < 64 * 1024 / 5 && down < 64 * 1024 / 5,
        "compressed: {up} / {down}"
    );
    let before = relay.counts();
    assert_eq!(plain.echo(sent.clone()).await.unwrap(), sent);
    let (up, down) = measure(relay.counts(), before);
    assert!(up > 64 * 1024, "the request went as it was: {up}");
    assert!(
        down < 64 * 1024 / 5,
        "the server still compresses its reply: {down}"
    );
    let before = relay.counts();
    let lines = futures::stream::iter(vec![text(4096); 20]);
    assert_eq!(plain.total(Streaming::new(lines)).await.unwrap(), 20 * 4096);
    let (up, _) = measure(relay.counts(), before);
    assert!(up > 20 * 4096, "the upload's items went as they were: {up}");
}
