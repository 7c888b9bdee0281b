//! Pins the byte dumps of the book's wire-protocol chapter to what the code really sends.
//!
//! Every dump is captured from a real client talking to a real server through a recording TCP
//! relay (or, for `Ping`, from a raw socket), formatted, and looked up verbatim in
//! `book/src/wire-protocol.md`. When the protocol changes, this test fails and prints the
//! blocks the chapter should show; `cargo test --test wire_spec -- --nocapture` prints all of
//! them.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use wirecall::{method_id, Channel, ChannelBuilder, Codec, Compression, RunningServer, Server};
use wirecall_runtime::negotiate::{ClientHello, ServerHello};
use wirecall_runtime::transport::frame::{Frame, FrameKind};
// The shared `UserService` fixture: the chapter shows its `get_user` and `find` (method ids
// depend only on the service and method names, so these are the `user` example's ids).
use futures::StreamExt;
use wirecall_test_support::feed::{FeedClient, FeedImpl, FeedServer};
use wirecall_test_support::{
    fanly, NotFound, UserModel, UserServiceClient, UserServiceServer, Users,
};

const CHAPTER: &str = include_str!("../book/src/wire-protocol.md");

/// The chapter's two-argument method.
#[wirecall::service]
pub trait Accounts {
    /// Renames a user.
    async fn rename(&self, user_id: i32, name: String) -> Result<UserModel, NotFound>;
}

impl Accounts for Users {
    async fn rename(&self, user_id: i32, name: String) -> Result<UserModel, NotFound> {
        Ok(UserModel {
            user_id,
            name,
            age: 18,
        })
    }
}

/// The chapter's stream with reply metadata and trailers (protocol version 4).
#[wirecall::service]
pub trait Counted {
    /// `0..n`, with the reply metadata `unit: item` and the trailer `count: n`.
    async fn count(&self, n: u64) -> wirecall::Streaming<u64>;
    /// One item: 1,024 `w`s, which compress well (protocol version 5).
    async fn words(&self) -> wirecall::Streaming<String>;
}

struct CountedImpl;

impl Counted for CountedImpl {
    async fn count(&self, n: u64) -> wirecall::Streaming<u64> {
        wirecall::CallContext::with_current(|call| call.set_reply_metadata("unit", "item").ok());
        let items = futures::stream::iter(0..n).map(Some);
        // A last step that yields nothing: the trailer, once every item is out.
        let last = futures::stream::once(async move {
            wirecall::CallContext::with_current(|call| {
                call.set_trailer("count", n.to_string()).ok()
            });
            None
        });
        wirecall::Streaming::new(items.chain(last).filter_map(|item| async move { item }))
    }

    async fn words(&self) -> wirecall::Streaming<String> {
        wirecall::Streaming::from_iter(["w".repeat(1024)])
    }
}

/// The chapter's byte string in JSON (protocol version 6).
#[wirecall::service]
pub trait Files {
    /// The bytes back.
    async fn echo(&self, data: wirecall::Bytes) -> wirecall::Bytes;
}

struct FilesImpl;

impl Files for FilesImpl {
    async fn echo(&self, data: wirecall::Bytes) -> wirecall::Bytes {
        data
    }
}

/// Arguments for a method no service has.
#[wirecall::message]
struct NoArgs {}

async fn start_server() -> RunningServer {
    Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .serve(AccountsServer::new(Users::default()))
        .serve(FeedServer::new(FeedImpl::default()))
        .serve(CountedServer::new(CountedImpl))
        .serve(FilesServer::new(FilesImpl))
        .bind("127.0.0.1:0")
        .await
        .expect("server binds")
}

/// A relay between one client and the server that records both directions.
struct Tap {
    addr: SocketAddr,
    to_server: Arc<Mutex<Vec<u8>>>,
    to_client: Arc<Mutex<Vec<u8>>>,
}

impl Tap {
    async fn start(server: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let to_server = Arc::new(Mutex::new(Vec::new()));
        let to_client = Arc::new(Mutex::new(Vec::new()));
        let (up, down) = (Arc::clone(&to_server), Arc::clone(&to_client));
        tokio::spawn(async move {
            let (client, _) = listener.accept().await.unwrap();
            let server = TcpStream::connect(server).await.unwrap();
            let (client_read, client_write) = client.into_split();
            let (server_read, server_write) = server.into_split();
            tokio::spawn(relay(client_read, server_write, up));
            tokio::spawn(relay(server_read, client_write, down));
        });
        Self {
            addr,
            to_server,
            to_client,
        }
    }

    /// What the client sent and what the server sent, so far.
    fn recorded(&self) -> (Vec<u8>, Vec<u8>) {
        (
            self.to_server.lock().unwrap().clone(),
            self.to_client.lock().unwrap().clone(),
        )
    }
}

async fn relay(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, log: Arc<Mutex<Vec<u8>>>) {
    let mut buf = [0u8; 4096];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        // Recorded before forwarding: once the other side has reacted, the bytes are here.
        log.lock().unwrap().extend_from_slice(&buf[..n]);
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// A channel builder whose connection opens as a first connection does: it waits for the
/// server's hello. A tap may get the port of an earlier one, and the process's early-calls
/// table would then send the hello behind the first call, after `recorded` was read.
fn first_connection() -> ChannelBuilder {
    Channel::builder().early_calls(false)
}

/// Splits a recorded direction into its hello and its frames.
fn split(stream: &[u8], from_client: bool) -> (&[u8], Vec<&[u8]>) {
    let hello_len = if from_client {
        ClientHello::parse(stream).unwrap().unwrap().1
    } else {
        ServerHello::parse(stream).unwrap().unwrap().1
    };
    let (hello, mut rest) = stream.split_at(hello_len);
    let mut frames = Vec::new();
    while !rest.is_empty() {
        let len = 4 + u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        let (frame, tail) = rest.split_at(len);
        frames.push(frame);
        rest = tail;
    }
    (hello, frames)
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One annotated line: a field name, its bytes, and what they mean.
fn field(out: &mut String, name: &str, bytes: &[u8], meaning: &str) {
    let line = format!("{name:<11} {:<24} {meaning}", hex(bytes));
    out.push_str(line.trim_end());
    out.push('\n');
}

/// A payload, 16 bytes a line, continuation lines indented under the first.
fn payload_lines(out: &mut String, payload: &[u8]) {
    if payload.is_empty() {
        out.push_str("payload     (none)\n");
        return;
    }
    for (i, chunk) in payload.chunks(16).enumerate() {
        let name = if i == 0 { "payload" } else { "" };
        let _ = writeln!(out, "{name:<11} {}", hex(chunk));
    }
}

fn codec_names(ids: &[u8]) -> String {
    if ids.is_empty() {
        return "(none)".to_owned();
    }
    ids.iter()
        .map(|id| match id {
            0 => "none",
            _ => Codec::from_id(*id).map_or("unknown", |c| c.name()),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn annotate_client_hello(hello: &[u8]) -> String {
    let mut out = String::new();
    field(&mut out, "magic", &hello[..4], "\"WCAL\"");
    field(
        &mut out,
        "version",
        &hello[4..5],
        &format!("protocol version {}", hello[4]),
    );
    field(
        &mut out,
        "count",
        &hello[5..6],
        &format!("{} codec id(s) follow", hello[5]),
    );
    let token_len_at = 6 + hello[5] as usize;
    field(
        &mut out,
        "codecs",
        &hello[6..token_len_at],
        &codec_names(&hello[6..token_len_at]),
    );
    let token_len = hello[token_len_at];
    let described = match token_len {
        0 => "no token".to_owned(),
        n => format!("{n} token bytes follow"),
    };
    field(
        &mut out,
        "token_len",
        &hello[token_len_at..=token_len_at],
        &described,
    );
    let token_end = token_len_at + 1 + token_len as usize;
    if token_len > 0 {
        let token = &hello[token_len_at + 1..token_end];
        let text = format!("{:?}", String::from_utf8_lossy(token));
        field(&mut out, "token", token, &text);
    }
    if hello[4] >= 2 {
        annotate_extensions(&mut out, &hello[token_end..]);
    }
    out
}

/// The extension block of a version-2 hello: its length, then each `type len value` entry.
fn annotate_extensions(out: &mut String, block: &[u8]) {
    let len = u16::from_be_bytes([block[0], block[1]]) as usize;
    let described = match len {
        0 => "no extensions".to_owned(),
        n => format!("{n} bytes of extensions follow"),
    };
    field(out, "ext_len", &block[..2], &described);
    let mut rest = &block[2..2 + len];
    while let [kind, value_len, tail @ ..] = rest {
        let value = &tail[..*value_len as usize];
        let described = match kind {
            1 => format!(
                "max_frame_len = {}",
                u32::from_be_bytes(value.try_into().unwrap())
            ),
            2 => "early_calls".to_owned(),
            3 => format!("compression = {}", compression_names(value)),
            _ => format!("unknown extension {kind}"),
        };
        field(out, "extension", &rest[..2 + value.len()], &described);
        rest = &tail[value.len()..];
    }
}

fn compression_names(ids: &[u8]) -> String {
    let names: Vec<String> = ids
        .iter()
        .map(|id| match id {
            1 => "zstd".to_owned(),
            other => format!("algorithm {other}"),
        })
        .collect();
    names.join(", ")
}

fn annotate_server_hello(hello: &[u8]) -> String {
    let mut out = String::new();
    field(&mut out, "magic", &hello[..4], "\"WCAL\"");
    field(
        &mut out,
        "version",
        &hello[4..5],
        &format!("protocol version {}", hello[4]),
    );
    let status = match hello[5] {
        0 => "Accepted",
        1 => "NoCommonCodec",
        2 => "UnsupportedVersion",
        3 => "Malformed",
        4 => "Busy",
        5 => "AuthenticationFailed",
        _ => "unknown",
    };
    field(&mut out, "status", &hello[5..6], status);
    field(&mut out, "codec", &hello[6..7], &codec_names(&hello[6..7]));
    field(
        &mut out,
        "count",
        &hello[7..8],
        &format!("{} codec id(s) follow", hello[7]),
    );
    let ids_end = 8 + hello[7] as usize;
    field(
        &mut out,
        "supported",
        &hello[8..ids_end],
        &codec_names(&hello[8..ids_end]),
    );
    if hello[4] >= 2 {
        annotate_extensions(&mut out, &hello[ids_end..]);
    }
    out
}

fn method_names() -> HashMap<u64, &'static str> {
    [
        ("UserService", "get_user", "UserService.get_user"),
        ("UserService", "find", "UserService.find"),
        ("UserService", "delete_user", "UserService.delete_user"),
        ("Accounts", "rename", "Accounts.rename"),
        ("Feed", "numbers", "Feed.numbers"),
    ]
    .into_iter()
    .map(|(service, method, full)| (method_id(service, method).get(), full))
    .collect()
}

fn annotate_frame(frame: &[u8]) -> String {
    let names = method_names();
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap());
    let kind = FrameKind::from_u8(frame[4]).expect("a known kind");
    let request_id = u64::from_be_bytes(frame[6..14].try_into().unwrap());
    let method = u64::from_be_bytes(frame[14..22].try_into().unwrap());
    let deadline = u32::from_be_bytes(frame[22..26].try_into().unwrap());
    let mut out = String::new();
    field(
        &mut out,
        "length",
        &frame[..4],
        &format!("{len} bytes follow"),
    );
    field(
        &mut out,
        "kind",
        &frame[4..5],
        &format!("{} = {kind:?}", frame[4]),
    );
    let flags = match frame[5] {
        0 => "none",
        1 => "metadata: the payload starts with a metadata block",
        2 => "compressed",
        _ => "unknown",
    };
    field(&mut out, "flags", &frame[5..6], flags);
    field(
        &mut out,
        "request id",
        &frame[6..14],
        &request_id.to_string(),
    );
    let method_meaning = match (method, names.get(&method)) {
        (0, _) => "none".to_owned(),
        (_, Some(name)) => (*name).to_owned(),
        (_, None) => "unknown".to_owned(),
    };
    field(&mut out, "method id", &frame[14..22], &method_meaning);
    let deadline_meaning = match deadline {
        0 => "no deadline".to_owned(),
        ms => format!("{ms} ms"),
    };
    field(&mut out, "deadline", &frame[22..26], &deadline_meaning);
    payload_lines(&mut out, &frame[26..]);
    out
}

/// Collects the blocks the chapter must contain and reports every missing one at once.
#[derive(Default)]
struct Expected {
    blocks: Vec<(String, String)>,
}

impl Expected {
    fn add(&mut self, name: &str, block: String) {
        println!("---- {name} ----\n{block}");
        self.blocks.push((name.to_owned(), block));
    }

    fn check(self) {
        let missing: Vec<String> = self
            .blocks
            .iter()
            .filter(|(_, block)| !CHAPTER.contains(block.as_str()))
            .map(|(name, block)| format!("---- {name} ----\n{block}"))
            .collect();
        assert!(
            missing.is_empty(),
            "book/src/wire-protocol.md lacks these blocks (update the chapter):\n{}",
            missing.join("\n")
        );
    }
}

fn utf8(payload: &[u8]) -> String {
    String::from_utf8(payload.to_vec()).expect("JSON payloads are UTF-8")
}

#[tokio::test]
async fn the_chapter_shows_the_bytes_the_code_sends() {
    let server = start_server().await;
    let mut expected = Expected::default();

    // Method ids.
    expected.add(
        "method id of UserService.get_user",
        format!("{:#018x}", method_id("UserService", "get_user").get()),
    );

    // The default offer of a Rust client.
    let tap = Tap::start(server.local_addr()).await;
    let channel = first_connection()
        .compression(Compression::none())
        .connect(tap.addr)
        .await
        .unwrap();
    assert_eq!(channel.codec(), Codec::MessagePack);
    let (up, _) = tap.recorded();
    expected.add("default client hello", annotate_client_hello(&up));
    drop(channel);

    // The worked example: JSON, handshake, get_user, its reply; then find's two outcomes.
    let tap = Tap::start(server.local_addr()).await;
    let users = UserServiceClient::new(
        first_connection()
            .compression(Compression::none())
            .codec(Codec::Json)
            .connect(tap.addr)
            .await
            .unwrap(),
    );
    assert_eq!(users.get_user(fanly()).await.unwrap(), fanly());
    let (up, down) = tap.recorded();
    let (client_hello, requests) = split(&up, true);
    let (server_hello, replies) = split(&down, false);
    expected.add("json client hello hex", hex(client_hello));
    expected.add("json client hello", annotate_client_hello(client_hello));
    expected.add("json server hello hex", hex(server_hello));
    expected.add("json server hello", annotate_server_hello(server_hello));
    expected.add("get_user request", annotate_frame(requests[0]));
    expected.add("get_user request payload", utf8(&requests[0][26..]));
    expected.add("get_user response", annotate_frame(replies[0]));
    expected.add("get_user response payload", utf8(&replies[0][26..]));
    assert!(users.find(1).await.unwrap().is_ok());
    assert!(users.find(42).await.unwrap().is_err());
    let (up, down) = tap.recorded();
    let (_, requests) = split(&up, true);
    let (_, replies) = split(&down, false);
    expected.add("find request payload", utf8(&requests[1][26..]));
    expected.add("find ok payload", utf8(&replies[1][26..]));
    expected.add("find err payload", utf8(&replies[2][26..]));

    // A byte string in JSON: base64 on a version 6 connection, numbers on a version 5 one.
    for version in [wirecall::PROTOCOL_VERSION, 5] {
        let tap = Tap::start(server.local_addr()).await;
        let files = FilesClient::new(
            first_connection()
                .compression(Compression::none())
                .codec(Codec::Json)
                .max_protocol_version(version)
                .connect(tap.addr)
                .await
                .unwrap(),
        );
        let data = wirecall::Bytes::from_static(b"wirecall");
        assert_eq!(files.echo(data.clone()).await.unwrap(), data);
        let (up, down) = tap.recorded();
        let (_, requests) = split(&up, true);
        let (_, replies) = split(&down, false);
        expected.add(
            &format!("Files.echo request payload, version {version}"),
            utf8(&requests[0][26..]),
        );
        expected.add(
            &format!("Files.echo response payload, version {version}"),
            utf8(&replies[0][26..]),
        );
    }

    // An unknown method: an Error frame for that request.
    let raw: Result<UserModel, wirecall::Error> = users
        .channel()
        .call(
            &wirecall::client::Method::new("UserService", "delete_user"),
            NoArgs {},
        )
        .await;
    assert!(matches!(raw, Err(wirecall::Error::UnknownMethod { .. })));
    let (_, down) = tap.recorded();
    let (_, replies) = split(&down, false);
    expected.add("unknown method error", annotate_frame(replies[3]));
    drop(users);

    // The two-argument call in MessagePack and in Protobuf.
    for (codec, label) in [
        (Codec::MessagePack, "msgpack"),
        (Codec::Protobuf, "protobuf"),
    ] {
        let tap = Tap::start(server.local_addr()).await;
        let accounts = AccountsClient::new(
            first_connection()
                .compression(Compression::none())
                .codec(codec)
                .connect(tap.addr)
                .await
                .unwrap(),
        );
        let renamed = accounts.rename(7, "ada".to_owned()).await.unwrap();
        assert_eq!(renamed.unwrap().name, "ada");
        let (up, down) = tap.recorded();
        let (_, requests) = split(&up, true);
        let (_, replies) = split(&down, false);
        expected.add(
            &format!("rename request {label}"),
            annotate_frame(requests[0]),
        );
        expected.add(
            &format!("rename response {label}"),
            annotate_frame(replies[0]),
        );
    }

    // Ping from a raw socket, answered with a Pong carrying the same request id.
    let mut socket = TcpStream::connect(server.local_addr()).await.unwrap();
    socket.write_all(b"WCAL\x01\x01\x01\x00").await.unwrap();
    let mut hello = [0u8; 11];
    socket.read_exact(&mut hello).await.unwrap();
    let ping = Frame::control(FrameKind::Ping, 7).to_bytes();
    socket.write_all(&ping).await.unwrap();
    let mut pong = [0u8; 26];
    socket.read_exact(&mut pong).await.unwrap();
    expected.add("ping", annotate_frame(&ping));
    expected.add("pong", annotate_frame(&pong));

    // What a client sends when a caller gives up on request 2.
    expected.add(
        "cancel",
        annotate_frame(&Frame::control(FrameKind::Cancel, 2).to_bytes()),
    );

    // A server that requires a token: the right one, then a wrong one (status 5).
    let guarded = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .token("s3cret")
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let tap = Tap::start(guarded.local_addr()).await;
    let channel = first_connection()
        .compression(Compression::none())
        .codec(Codec::Json)
        .token("s3cret")
        .connect(tap.addr)
        .await
        .unwrap();
    let (up, _) = tap.recorded();
    let (client_hello, _) = split(&up, true);
    expected.add("token client hello", annotate_client_hello(client_hello));
    drop(channel);
    let tap = Tap::start(guarded.local_addr()).await;
    let refused = first_connection()
        .compression(Compression::none())
        .codec(Codec::Json)
        .token("guess")
        .connect(tap.addr)
        .await;
    assert!(
        matches!(
            refused,
            Err(wirecall::Error::Negotiation(
                wirecall::NegotiationError::AuthenticationFailed
            ))
        ),
        "{refused:?}"
    );
    let (_, down) = tap.recorded();
    expected.add("authentication failed hello", annotate_server_hello(&down));
    guarded.shutdown().await;

    // A call with metadata (protocol version 2): the block, then the JSON arguments.
    let tap = Tap::start(server.local_addr()).await;
    let users = UserServiceClient::new(
        first_connection()
            .compression(Compression::none())
            .codec(Codec::Json)
            .without_timeout()
            .metadata("tenant", "acme")
            .connect(tap.addr)
            .await
            .unwrap(),
    );
    assert_eq!(users.find(1).await.unwrap(), Ok(fanly()));
    let (up, _) = tap.recorded();
    let (_, requests) = split(&up, true);
    expected.add("request with metadata", annotate_frame(requests[0]));

    // A server stream (protocol version 3): the Open and the first credit, then two items
    // and the End.
    let tap = Tap::start(server.local_addr()).await;
    let feed = FeedClient::new(
        first_connection()
            .compression(Compression::none())
            .codec(Codec::Json)
            .without_timeout()
            .stream_window(4)
            .connect(tap.addr)
            .await
            .unwrap(),
    );
    let numbers: Vec<u64> = feed
        .numbers(2)
        .await
        .unwrap()
        .map(|item| item.unwrap())
        .collect()
        .await;
    assert_eq!(numbers, [0, 1]);
    let (up, down) = tap.recorded();
    let (_, opening) = split(&up, true);
    let (_, answer) = split(&down, false);
    assert_eq!(opening.len(), 2, "the Open and its credit");
    assert_eq!(answer.len(), 3, "two items and the End");
    for (name, frame) in ["stream open", "stream credit"].into_iter().zip(opening) {
        expected.add(name, annotate_frame(frame));
    }
    for (name, frame) in ["stream item 0", "stream item 1", "stream end"]
        .into_iter()
        .zip(answer)
    {
        expected.add(name, annotate_frame(frame));
    }

    // A stream's reply metadata and trailers (protocol version 4): the Head, two items, and
    // the End with its trailers.
    let tap = Tap::start(server.local_addr()).await;
    let counted = CountedClient::new(
        first_connection()
            .compression(Compression::none())
            .codec(Codec::Json)
            .without_timeout()
            .stream_window(4)
            .connect(tap.addr)
            .await
            .unwrap(),
    );
    let mut stream = counted.count(2).await.unwrap();
    let numbers: Vec<u64> = stream.by_ref().map(|item| item.unwrap()).collect().await;
    assert_eq!(numbers, [0, 1]);
    assert_eq!(stream.metadata().await.get("unit"), Some("item"));
    assert_eq!(stream.trailers().unwrap().get("count"), Some("2"));
    let (_, down) = tap.recorded();
    let (_, answer) = split(&down, false);
    assert_eq!(answer.len(), 4, "the Head, two items and the End");
    for (name, frame) in [
        "stream head",
        "counted item 0",
        "counted item 1",
        "stream end with trailers",
    ]
    .into_iter()
    .zip(answer)
    {
        expected.add(name, annotate_frame(frame));
    }

    // Compression (protocol version 5): a client with the zstd feature offers it, the server
    // chooses it, and a large stream item travels compressed.
    let tap = Tap::start(server.local_addr()).await;
    let counted = CountedClient::new(
        first_connection()
            .codec(Codec::Json)
            .compression(Compression::zstd())
            .connect(tap.addr)
            .await
            .unwrap(),
    );
    let words: Vec<String> = counted
        .words()
        .await
        .unwrap()
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(words, ["w".repeat(1024)]);
    let (up, down) = tap.recorded();
    let (client_hello, _) = split(&up, true);
    let (server_hello, answer) = split(&down, false);
    expected.add("zstd client hello", annotate_client_hello(client_hello));
    expected.add("zstd server hello", annotate_server_hello(server_hello));
    expected.add("compressed item", annotate_frame(answer[0]));
    server.shutdown().await;

    expected.check();
}

/// The chapter's Python client, run against a real server.
#[tokio::test(flavor = "multi_thread")]
async fn the_python_client_in_the_chapter_talks_to_a_server() {
    let Some(start) = CHAPTER.find("```python\n") else {
        panic!("the chapter has no python block");
    };
    let body = &CHAPTER[start + "```python\n".len()..];
    let script = &body[..body.find("```").expect("the python block ends")];
    let path = std::env::temp_dir().join(format!("wirecall-client-{}.py", std::process::id()));
    std::fs::write(&path, script).unwrap();

    let server = start_server().await;
    // python3 is part of every machine this project builds on (see README); a missing one is a
    // failure, not a reason to skip.
    let output = tokio::process::Command::new("python3")
        .arg(&path)
        .arg(server.local_addr().to_string())
        .output()
        .await
        .expect("python3 runs the chapter's client");
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let expected = "{'value': {'user_id': 1, 'name': 'fanly', 'age': 18}}\n\
                    {'ok': None, 'err': {'user_id': 42, 'reason': 'no such user'}}\n\
                    error 1 (request 3): no service on this server has method id 0xfc569b3741c766ac\n";
    assert_eq!(stdout, expected);
    assert!(
        CHAPTER.contains(expected),
        "the chapter shows the script's output"
    );
    server.shutdown().await;
}
