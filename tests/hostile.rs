//! Hostile peers over raw TCP: one table of scripted misbehaviours, each run against a fresh
//! server with small limits while a well-behaved client keeps calling on its own connection.
//!
//! A case passes when the misbehaving peer gets exactly the protocol's answer (a hello verdict,
//! an error frame with the right code, a close within a bound) and the well-behaved client got
//! correct answers during the case and still gets them after it.
//!
//! `HOSTILE_CASE=<substring>` runs only the matching cases.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use common::*;
use futures::future::BoxFuture;
use futures::FutureExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::codec::Decoder;
use wirecall::{Channel, Codec, Error, ErrorCode, MethodId, RunningServer, Server, WireMessage};
use wirecall_runtime::negotiate::ClientHello;
use wirecall_runtime::transport::frame::{ErrorBody, Frame, FrameCodec, FrameKind};
use wirecall_test_support::feed::{FeedImpl, FeedServer};

// The server's limits, small so that every case ends quickly.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_millis(500);
const IDLE_TIMEOUT: Duration = Duration::from_millis(300);
const PING_TIMEOUT: Duration = Duration::from_millis(300);
const MAX_FRAME_LEN: u32 = 64 * 1024;
const MAX_CONNECTIONS: usize = 16;
const MAX_IN_FLIGHT_PER_CONNECTION: usize = 32;
const MAX_IN_FLIGHT: usize = 80;

/// Generous bound for anything the server should do "soon" on a noisy two-core machine.
const SOON: Duration = Duration::from_secs(5);
/// Bound for a whole case, well-behaved client included.
const CASE_LIMIT: Duration = Duration::from_secs(45);

/// The server hello's tail for every refusal: no codec chosen, then the server's list
/// (msgpack, protobuf, json: the default order).
const SUPPORTED: [u8; 4] = [3, 2, 3, 1];

const ADD: MethodId = wirecall::method_id("Lab", "add");
const SLEEP_MS: MethodId = wirecall::method_id("Lab", "sleep_ms");
const BLOB: MethodId = wirecall::method_id("Lab", "blob");

/// The wire shape of `Lab::add`'s arguments (fields are tagged/positioned like the generated
/// ones: `a` then `b`).
#[wirecall::message]
struct AddArgs {
    a: i64,
    b: i64,
}

#[wirecall::message]
struct SleepArgs {
    ms: u64,
}

#[wirecall::message]
struct BlobArgs {
    len: u32,
}

/// The reply of a method returning `i64` (or `u64`): one field, `value`.
#[wirecall::message]
struct I64Reply {
    value: i64,
}

struct Case {
    name: &'static str,
    script: fn(Arena) -> BoxFuture<'static, ()>,
    /// The well-behaved client may be refused with `Overloaded` while this case runs (it
    /// shares the server-wide in-flight limit the case exhausts on purpose).
    may_overload_good_client: bool,
}

const fn case(name: &'static str, script: fn(Arena) -> BoxFuture<'static, ()>) -> Case {
    Case {
        name,
        script,
        may_overload_good_client: false,
    }
}

const CASES: &[Case] = &[
    case(
        "wrong magic gets a malformed verdict and a close",
        wrong_magic,
    ),
    case(
        "an unknown protocol version gets an unsupported-version verdict",
        unknown_version,
    ),
    case(
        "an empty codec list gets a malformed verdict",
        empty_codec_list,
    ),
    case("seventeen codecs get a malformed verdict", too_many_codecs),
    case(
        "a codec listed twice gets a malformed verdict",
        duplicate_codec,
    ),
    case(
        "a malformed extension block gets a malformed verdict",
        bad_extensions,
    ),
    case(
        "unknown codec ids only get a no-common-codec verdict",
        unknown_codecs_only,
    ),
    case(
        "a hello split into one-byte writes is accepted",
        one_byte_handshake,
    ),
    case(
        "a truncated hello then a close is dropped",
        truncated_hello_then_close,
    ),
    case(
        "a silent peer is closed by the handshake timeout",
        silent_peer,
    ),
    case(
        "a slowloris hello is closed by the handshake timeout",
        slowloris_hello,
    ),
    case(
        "a frame truncated in its length prefix then a close is dropped",
        truncated_in_prefix,
    ),
    case(
        "a frame truncated in its header then a close is dropped",
        truncated_in_header,
    ),
    case(
        "a frame truncated in its payload then a close is dropped",
        truncated_in_payload,
    ),
    case(
        "a zero length prefix is a protocol violation",
        zero_length_prefix,
    ),
    case(
        "a length prefix one short of the header is a protocol violation",
        length_below_header,
    ),
    case(
        "a length prefix one over the maximum is too large",
        length_over_max,
    ),
    case("a u32::MAX length prefix is too large", length_u32_max),
    case(
        "a frame of exactly the maximum length is read",
        frame_of_max_length,
    ),
    case(
        "an unknown frame kind is a protocol violation",
        unknown_frame_kind,
    ),
    case(
        "nonzero reserved flags are a protocol violation",
        reserved_flags,
    ),
    case(
        "a response frame from a client is a protocol violation",
        response_from_client,
    ),
    case(
        "an error frame from a client is a protocol violation",
        error_from_client,
    ),
    case(
        "a duplicate request id in flight is a protocol violation",
        duplicate_request_id,
    ),
    case(
        "a duplicate id is a violation even for an unknown method",
        duplicate_request_id_unknown_method,
    ),
    case(
        "request id 0 on a request or notify is a protocol violation",
        request_id_zero,
    ),
    case(
        "ping, pong and cancel with a method, deadline or payload are violations",
        control_frames_with_fields,
    ),
    case(
        "a malformed metadata block is a protocol violation",
        malformed_metadata,
    ),
    case("an unknown method fails only that request", unknown_method),
    case(
        "undecodable arguments are a bad request in every codec",
        undecodable_arguments,
    ),
    case(
        "a cancel for an unknown request id is ignored",
        cancel_unknown_id,
    ),
    case(
        "ten thousand pings get ten thousand pongs",
        ten_thousand_pings,
    ),
    case(
        "an idle peer is pinged, then closed with idle timeout",
        idle_peer,
    ),
    case(
        "an idle peer that answers pings stays connected",
        idle_peer_answering_pings,
    ),
    case(
        "a slowloris frame is closed by the idle timeout",
        slowloris_frame,
    ),
    case(
        "a peer beyond max connections gets a busy verdict",
        beyond_max_connections,
    ),
    Case {
        name: "calls beyond the server-wide in-flight limit are overloaded",
        script: beyond_max_in_flight,
        may_overload_good_client: true,
    },
    case(
        "a flooder that never reads is back-pressured",
        flooder_never_reading,
    ),
    case(
        "a credit past the outstanding limit is a protocol violation",
        credit_overflow,
    ),
    case("a zero credit is a protocol violation", zero_credit),
    case(
        "a credit whose payload is not four bytes is a protocol violation",
        credit_of_wrong_length,
    ),
    case(
        "an item from a client on a stream without upload is a protocol violation",
        item_from_client,
    ),
    case(
        "a credit for a stream that is not open is ignored",
        credit_for_unknown_stream,
    ),
    case(
        "a stream never granted credit waits and holds up nothing else",
        stream_without_credit,
    ),
    case(
        "a stream frame on a version 2 connection is an unknown kind",
        stream_frame_on_version_2,
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_peers_get_the_protocol_answer_and_never_disturb_other_clients() {
    let only = std::env::var("HOSTILE_CASE").ok();
    let mut failed = Vec::new();
    let mut ran = 0;
    for case in CASES {
        if only
            .as_deref()
            .is_some_and(|only| !case.name.contains(only))
        {
            continue;
        }
        ran += 1;
        let started = Instant::now();
        let outcome = run_case(case).await;
        let elapsed = started.elapsed();
        match &outcome {
            Ok(()) => eprintln!("ok      {:<70} {elapsed:.2?}", case.name),
            Err(why) => {
                eprintln!("FAILED  {:<70} {elapsed:.2?}\n        {why}", case.name);
                failed.push(format!("{}: {why}", case.name));
            }
        }
    }
    assert!(ran > 0, "no case matches HOSTILE_CASE={only:?}");
    assert!(
        failed.is_empty(),
        "{} of {ran} hostile cases failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// Everything a script may use.
#[derive(Clone)]
struct Arena {
    server: Arc<RunningServer>,
    addr: SocketAddr,
    /// Connections open before the script started (the well-behaved client's).
    baseline_connections: usize,
}

impl Arena {
    /// Waits until the server holds no connection beyond the well-behaved client's.
    async fn connections_settle(&self) {
        let server = Arc::clone(&self.server);
        let baseline = self.baseline_connections;
        eventually("connections return to the baseline", move || {
            server.connection_count() <= baseline
        })
        .await;
    }
}

fn hostile_server() -> wirecall::ServerBuilder {
    Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .serve(FeedServer::new(FeedImpl::default()))
        .handshake_timeout(HANDSHAKE_TIMEOUT)
        .idle_timeout(IDLE_TIMEOUT)
        .ping_timeout(PING_TIMEOUT)
        .max_frame_len(MAX_FRAME_LEN)
        .max_connections(MAX_CONNECTIONS)
        .max_in_flight_per_connection(MAX_IN_FLIGHT_PER_CONNECTION)
        .max_in_flight(MAX_IN_FLIGHT)
}

async fn run_case(case: &Case) -> Result<(), String> {
    let lab = Arc::new(LabImpl::default());
    let server = hostile_server()
        .serve(LabServer::new(lab))
        .bind("127.0.0.1:0")
        .await
        .map_err(|err| format!("server did not start: {err}"))?;
    let server = Arc::new(server);
    let addr = server.local_addr();
    let good = GoodClient::start(addr, case.may_overload_good_client).await?;
    eventually_result("the good client is counted", || {
        server.connection_count() == 1
    })
    .await?;
    let arena = Arena {
        server: Arc::clone(&server),
        addr,
        baseline_connections: 1,
    };
    let script = tokio::spawn((case.script)(arena));
    let outcome = match tokio::time::timeout(CASE_LIMIT, script).await {
        Err(_) => Err(format!("the script did not finish within {CASE_LIMIT:?}")),
        Ok(Err(join)) if join.is_panic() => Err(panic_text(join.into_panic())),
        Ok(Err(join)) => Err(format!("the script task failed: {join}")),
        Ok(Ok(())) => Ok(()),
    };
    let report = good.stop().await;
    outcome?;
    report?;
    // After the case: a new client on a new connection gets correct answers too.
    check_fresh_client(addr).await
}

fn panic_text(panic: Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "the script panicked".to_owned()
    }
}

async fn check_fresh_client(addr: SocketAddr) -> Result<(), String> {
    let outcome = tokio::time::timeout(SOON, async {
        let channel = Channel::builder()
            .timeout(SOON)
            .connect(addr)
            .await
            .map_err(|err| format!("a fresh client could not connect after the case: {err}"))?;
        let users = UserServiceClient::new(channel.clone());
        let lab = LabClient::new(channel);
        match users.get_user(fanly()).await {
            Ok(user) if user == fanly() => {}
            other => {
                return Err(format!(
                    "a fresh client's get_user after the case: {other:?}"
                ))
            }
        }
        match lab.add(20, 22).await {
            Ok(42) => Ok(()),
            other => Err(format!("a fresh client's add after the case: {other:?}")),
        }
    })
    .await;
    outcome.unwrap_or_else(|_| Err("a fresh client's calls after the case hung".to_owned()))
}

/// A client that keeps calling, with correct arguments, on its own connection while a case
/// runs, and checks every answer.
struct GoodClient {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Result<u64, String>>,
}

impl GoodClient {
    async fn start(addr: SocketAddr, may_be_overloaded: bool) -> Result<Self, String> {
        let channel = Channel::builder()
            .timeout(SOON)
            .connect(addr)
            .await
            .map_err(|err| format!("the good client could not connect: {err}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let task = tokio::spawn(async move {
            let users = UserServiceClient::new(channel.clone());
            let lab = LabClient::new(channel);
            let mut answered = 0u64;
            let mut round = 0i64;
            while !stopping.load(Ordering::Relaxed) || answered == 0 {
                round += 1;
                match users.get_user(fanly()).await {
                    Ok(user) if user == fanly() => answered += 1,
                    Err(Error::Remote {
                        code: ErrorCode::Overloaded,
                        ..
                    }) if may_be_overloaded => {}
                    other => return Err(format!("good client, get_user #{round}: {other:?}")),
                }
                match lab.add(round, 1).await {
                    Ok(sum) if sum == round + 1 => answered += 1,
                    Err(Error::Remote {
                        code: ErrorCode::Overloaded,
                        ..
                    }) if may_be_overloaded => {}
                    other => return Err(format!("good client, add #{round}: {other:?}")),
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok(answered)
        });
        Ok(Self { stop, task })
    }

    async fn stop(self) -> Result<(), String> {
        self.stop.store(true, Ordering::Relaxed);
        match tokio::time::timeout(SOON * 2, self.task).await {
            Err(_) => Err("the good client's calls hung".to_owned()),
            Ok(Err(join)) => Err(format!("the good client task failed: {join}")),
            Ok(Ok(Err(why))) => Err(why),
            Ok(Ok(Ok(_answered))) => Ok(()),
        }
    }
}

/// Polls `condition` every 10 ms for up to [`SOON`].
async fn eventually_result(what: &str, condition: impl Fn() -> bool) -> Result<(), String> {
    let started = Instant::now();
    while !condition() {
        if started.elapsed() > SOON {
            return Err(format!("{what}: not within {SOON:?}"));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

async fn eventually(what: &str, condition: impl Fn() -> bool) {
    if let Err(why) = eventually_result(what, condition).await {
        panic!("{why}");
    }
}

/// A raw TCP peer that speaks (or mis-speaks) the protocol byte by byte.
struct RawPeer {
    socket: TcpStream,
    received: BytesMut,
    frames: FrameCodec,
    /// Server-initiated pings seen so far.
    pings_seen: u64,
    /// Whether to answer server-initiated pings (a live peer does).
    answer_pings: bool,
}

/// What reading from a raw peer found.
#[derive(Debug)]
enum Received {
    Frame(Frame),
    Closed,
}

impl RawPeer {
    async fn connect(addr: SocketAddr) -> Self {
        let socket = tokio::time::timeout(SOON, TcpStream::connect(addr))
            .await
            .expect("connect within the bound")
            .expect("connect");
        socket.set_nodelay(true).unwrap();
        Self {
            socket,
            received: BytesMut::new(),
            // This build's version: the stream kinds are known.
            frames: FrameCodec::for_version(
                wirecall::wire::DEFAULT_MAX_FRAME_LEN,
                wirecall::PROTOCOL_VERSION,
            ),
            pings_seen: 0,
            answer_pings: true,
        }
    }

    /// Connects and completes the handshake offering only `codec`.
    async fn handshaken(addr: SocketAddr, codec: Codec) -> Self {
        let mut peer = Self::connect(addr).await;
        peer.send(&ClientHello::encode(&[codec])).await;
        let hello = peer.read_exact(accepted_hello(Codec::Json).len()).await;
        assert_eq!(
            hello,
            accepted_hello(codec),
            "the server accepts a hello offering {codec}"
        );
        peer
    }

    async fn send(&mut self, bytes: &[u8]) {
        tokio::time::timeout(SOON, self.socket.write_all(bytes))
            .await
            .expect("the server reads what it is sent")
            .expect("write to the server");
    }

    /// Sends `bytes`; false when the server has already closed the connection.
    async fn try_send(&mut self, bytes: &[u8]) -> bool {
        matches!(
            tokio::time::timeout(SOON, self.socket.write_all(bytes)).await,
            Ok(Ok(()))
        )
    }

    async fn send_frame(&mut self, frame: Frame) {
        self.send(&frame.to_bytes()).await;
    }

    async fn read_exact(&mut self, n: usize) -> Vec<u8> {
        while self.received.len() < n {
            let read = tokio::time::timeout(SOON, self.socket.read_buf(&mut self.received))
                .await
                .unwrap_or_else(|_| panic!("{n} bytes from the server within {SOON:?}"));
            match read {
                Ok(0) | Err(_) => panic!(
                    "the server closed after {} of {n} expected bytes: {:02x?}",
                    self.received.len(),
                    &self.received[..]
                ),
                Ok(_) => {}
            }
        }
        self.received.split_to(n).to_vec()
    }

    /// Everything the server sends until it closes; fails unless it closes within `limit`.
    async fn read_until_closed(&mut self, limit: Duration) -> Vec<u8> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match tokio::time::timeout_at(deadline, self.socket.read_buf(&mut self.received)).await
            {
                Err(_) => panic!(
                    "the server did not close within {limit:?}; it sent {:02x?}",
                    &self.received[..self.received.len().min(64)]
                ),
                Ok(Ok(0)) | Ok(Err(_)) => return self.received.split().to_vec(),
                Ok(Ok(_)) => {}
            }
        }
    }

    /// The next frame other than a server-initiated ping (answered when `answer_pings`).
    async fn next(&mut self, limit: Duration) -> Received {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match self.frames.decode(&mut self.received) {
                Ok(Some(frame)) if frame.kind == FrameKind::Ping => {
                    self.pings_seen += 1;
                    if self.answer_pings {
                        let pong = Frame::control(FrameKind::Pong, frame.request_id);
                        let _ = self.try_send(&pong.to_bytes()).await;
                    }
                    continue;
                }
                Ok(Some(frame)) => return Received::Frame(frame),
                Ok(None) => {}
                Err(err) => panic!("the server sent an undecodable frame: {err}"),
            }
            match tokio::time::timeout_at(deadline, self.socket.read_buf(&mut self.received)).await
            {
                Err(_) => panic!("nothing from the server within {limit:?}"),
                Ok(Ok(0)) | Ok(Err(_)) => return Received::Closed,
                Ok(Ok(_)) => {}
            }
        }
    }

    async fn next_frame(&mut self) -> Frame {
        match self.next(SOON).await {
            Received::Frame(frame) => frame,
            Received::Closed => panic!("the server closed the connection instead of replying"),
        }
    }

    /// Expects a connection-level error frame (request id 0) with `code`, then a close.
    async fn expect_connection_error(&mut self, code: u16) {
        let mut codes = Vec::new();
        loop {
            match self.next(SOON).await {
                Received::Closed => break,
                Received::Frame(frame) if frame.kind == FrameKind::Error => {
                    if frame.request_id == 0 {
                        codes.push(error_code(&frame));
                    }
                }
                Received::Frame(_) => {}
            }
        }
        assert_eq!(
            codes,
            vec![code],
            "exactly one connection error with code {code} before the close"
        );
    }

    /// Calls `Lab.add` on this connection and checks the answer: the connection is usable.
    async fn expect_usable(&mut self, codec: Codec, request_id: u64) {
        self.send_frame(request(
            request_id,
            ADD,
            encode(codec, &AddArgs { a: 40, b: 2 }),
        ))
        .await;
        let reply = self.next_frame().await;
        assert_eq!(reply.request_id, request_id, "{reply:?}");
        assert_eq!(reply.kind, FrameKind::Response, "{reply:?}");
        let sum: I64Reply = codec.decode(&reply.payload).expect("the reply decodes");
        assert_eq!(sum.value, 42);
    }
}

/// The server's acceptance: this build's version, status 0, the codec, its list, then the
/// extension block announcing the server's frame limit and that it understands early calls.
fn accepted_hello(codec: Codec) -> Vec<u8> {
    let mut hello = b"WCAL".to_vec();
    hello.extend_from_slice(&[wirecall::PROTOCOL_VERSION, 0]);
    hello.push(codec.id());
    hello.extend_from_slice(&SUPPORTED);
    hello.extend_from_slice(&[0, 8, 1, 4]);
    hello.extend_from_slice(&MAX_FRAME_LEN.to_be_bytes());
    hello.extend_from_slice(&[2, 0]);
    hello
}

/// A refusal: the server's newest version, the status, no codec, the server's list, an empty
/// extension block.
fn refusal(status: u8) -> Vec<u8> {
    let mut hello = b"WCAL".to_vec();
    hello.push(wirecall::PROTOCOL_VERSION);
    hello.push(status);
    hello.push(0);
    hello.extend_from_slice(&SUPPORTED);
    hello.extend_from_slice(&[0, 0]);
    hello
}

fn encode<T: WireMessage>(codec: Codec, value: &T) -> Bytes {
    let mut buf = BytesMut::new();
    codec.encode(value, &mut buf).expect("encodes");
    buf.freeze()
}

fn request(request_id: u64, method: MethodId, payload: Bytes) -> Frame {
    Frame {
        kind: FrameKind::Request,
        request_id,
        method,
        deadline_ms: 0,
        flags: 0,
        payload,
    }
}

fn error_code(frame: &Frame) -> u16 {
    ErrorBody::decode(&frame.payload).code.to_u16()
}

/// The header of a frame with an arbitrary length prefix, kind and flags.
fn raw_header(len: u32, kind: u8, flags: u8, request_id: u64) -> Vec<u8> {
    let mut bytes = len.to_be_bytes().to_vec();
    bytes.push(kind);
    bytes.push(flags);
    bytes.extend_from_slice(&request_id.to_be_bytes());
    bytes.extend_from_slice(&0u64.to_be_bytes());
    bytes.extend_from_slice(&0u32.to_be_bytes());
    bytes
}

fn vm_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

// ---- the scripts -------------------------------------------------------------------------

async fn expect_refusal(arena: &Arena, hello: &[u8], status: u8) {
    let mut peer = RawPeer::connect(arena.addr).await;
    peer.send(hello).await;
    let received = peer.read_until_closed(SOON).await;
    assert_eq!(received, refusal(status), "the verdict, then a close");
    arena.connections_settle().await;
}

fn wrong_magic(arena: Arena) -> BoxFuture<'static, ()> {
    async move { expect_refusal(&arena, b"GET / HTTP/1.1\r\n\r\n", 3).await }.boxed()
}

fn unknown_version(arena: Arena) -> BoxFuture<'static, ()> {
    async move { expect_refusal(&arena, b"WCAL\x00\x01\x02\x00", 2).await }.boxed()
}

fn empty_codec_list(arena: Arena) -> BoxFuture<'static, ()> {
    async move { expect_refusal(&arena, b"WCAL\x01\x00", 3).await }.boxed()
}

fn duplicate_codec(arena: Arena) -> BoxFuture<'static, ()> {
    async move { expect_refusal(&arena, b"WCAL\x02\x02\x01\x01\x00\x00\x00", 3).await }.boxed()
}

fn bad_extensions(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        // An extension block longer than 1024 bytes is refused from its length alone, with
        // nothing more read; a frame limit of 3 bytes once the block is in.
        expect_refusal(&arena, b"WCAL\x02\x01\x01\x00\x04\x01", 3).await;
        expect_refusal(
            &arena,
            b"WCAL\x02\x01\x01\x00\x00\x05\x01\x03\x00\x00\x01",
            3,
        )
        .await;
    }
    .boxed()
}

fn too_many_codecs(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let mut hello = b"WCAL\x01\x11".to_vec();
        hello.extend_from_slice(&[2; 17]);
        expect_refusal(&arena, &hello, 3).await;
    }
    .boxed()
}

fn unknown_codecs_only(arena: Arena) -> BoxFuture<'static, ()> {
    // This build's version: two unknown ids, no token, an empty extension block.
    let hello = [
        b'W',
        b'C',
        b'A',
        b'L',
        wirecall::PROTOCOL_VERSION,
        2,
        9,
        200,
        0,
        0,
        0,
    ];
    async move { expect_refusal(&arena, &hello, 1).await }.boxed()
}

fn one_byte_handshake(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let mut peer = RawPeer::connect(arena.addr).await;
        for byte in ClientHello::encode(&[Codec::Json]) {
            peer.send(&[byte]).await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            peer.read_exact(accepted_hello(Codec::Json).len()).await,
            accepted_hello(Codec::Json)
        );
        // The first frame, split the same way, is read as well.
        let frame = request(1, ADD, encode(Codec::Json, &AddArgs { a: 1, b: 2 })).to_bytes();
        for byte in frame.iter() {
            peer.send(&[*byte]).await;
        }
        let reply = peer.next_frame().await;
        assert_eq!((reply.kind, reply.request_id), (FrameKind::Response, 1));
        let sum: I64Reply = Codec::Json.decode(&reply.payload).unwrap();
        assert_eq!(sum.value, 3);
    }
    .boxed()
}

fn truncated_hello_then_close(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let mut peer = RawPeer::connect(arena.addr).await;
        peer.send(b"WCAL\x01\x03\x02").await;
        peer.socket.shutdown().await.unwrap();
        let received = peer.read_until_closed(SOON).await;
        assert!(
            received.is_empty(),
            "no verdict for half a hello: {received:02x?}"
        );
        arena.connections_settle().await;
    }
    .boxed()
}

fn silent_peer(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let started = Instant::now();
        let mut peer = RawPeer::connect(arena.addr).await;
        let received = peer.read_until_closed(HANDSHAKE_TIMEOUT + SOON).await;
        assert!(received.is_empty(), "{received:02x?}");
        assert!(
            started.elapsed() >= HANDSHAKE_TIMEOUT - Duration::from_millis(50),
            "closed before the handshake timeout: {:?}",
            started.elapsed()
        );
        arena.connections_settle().await;
    }
    .boxed()
}

fn slowloris_hello(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let started = Instant::now();
        let mut peer = RawPeer::connect(arena.addr).await;
        // Four bytes of magic, a version, then codec ids one by one, forever.
        let mut dribble = b"WCAL\x01\x10".iter().copied().chain(std::iter::repeat(2));
        let closed = loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let byte = dribble.next().unwrap();
            if !peer.try_send(&[byte]).await {
                break true;
            }
            // Whether the server has closed: a read that ends at once.
            let mut probe = [0u8; 64];
            if let Ok(read) =
                tokio::time::timeout(Duration::from_millis(1), peer.socket.read(&mut probe)).await
            {
                assert!(
                    matches!(read, Ok(0) | Err(_)),
                    "the server answered a slowloris hello: {read:?} {:02x?}",
                    &probe[..]
                );
                break true;
            }
            if started.elapsed() > HANDSHAKE_TIMEOUT + SOON {
                break false;
            }
        };
        assert!(closed, "a slowloris hello kept its connection");
        arena.connections_settle().await;
    }
    .boxed()
}

/// Sends the first `cut` bytes of a valid request, then closes the write side: the server
/// must drop the connection without a reply and forget it.
async fn truncated_frame(arena: Arena, cut: usize) {
    let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
    let frame = request(1, ADD, encode(Codec::MessagePack, &AddArgs { a: 1, b: 2 })).to_bytes();
    assert!(cut < frame.len());
    peer.send(&frame[..cut]).await;
    peer.socket.shutdown().await.unwrap();
    loop {
        match peer.next(SOON).await {
            Received::Closed => break,
            Received::Frame(frame) => {
                assert_ne!(frame.kind, FrameKind::Response, "a reply to half a frame");
            }
        }
    }
    arena.connections_settle().await;
}

fn truncated_in_prefix(arena: Arena) -> BoxFuture<'static, ()> {
    truncated_frame(arena, 2).boxed()
}

fn truncated_in_header(arena: Arena) -> BoxFuture<'static, ()> {
    truncated_frame(arena, 13).boxed()
}

fn truncated_in_payload(arena: Arena) -> BoxFuture<'static, ()> {
    truncated_frame(arena, 27).boxed()
}

async fn bad_header(arena: Arena, header: Vec<u8>, code: u16) {
    let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
    peer.send(&header).await;
    peer.expect_connection_error(code).await;
    arena.connections_settle().await;
}

fn zero_length_prefix(arena: Arena) -> BoxFuture<'static, ()> {
    bad_header(arena, vec![0, 0, 0, 0], 6).boxed()
}

fn length_below_header(arena: Arena) -> BoxFuture<'static, ()> {
    bad_header(arena, raw_header(21, 1, 0, 1), 6).boxed()
}

fn length_over_max(arena: Arena) -> BoxFuture<'static, ()> {
    bad_header(arena, raw_header(MAX_FRAME_LEN + 1, 1, 0, 1), 5).boxed()
}

fn length_u32_max(arena: Arena) -> BoxFuture<'static, ()> {
    bad_header(arena, raw_header(u32::MAX, 1, 0, 1), 5).boxed()
}

fn unknown_frame_kind(arena: Arena) -> BoxFuture<'static, ()> {
    bad_header(arena, raw_header(22, 99, 0, 1), 6).boxed()
}

fn reserved_flags(arena: Arena) -> BoxFuture<'static, ()> {
    bad_header(arena, raw_header(22, 1, 0x80, 1), 6).boxed()
}

fn response_from_client(arena: Arena) -> BoxFuture<'static, ()> {
    bad_header(arena, raw_header(22, 2, 0, 1), 6).boxed()
}

fn error_from_client(arena: Arena) -> BoxFuture<'static, ()> {
    let frame = Frame::error(1, ADD, ErrorCode::BadRequest, "from a client").to_bytes();
    bad_header(arena, frame.to_vec(), 6).boxed()
}

fn frame_of_max_length(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
        // `add`'s arguments followed by padding up to the maximum: the frame is legal; its
        // payload may or may not decode, but it must not cost the connection.
        let mut payload = encode(Codec::MessagePack, &AddArgs { a: 1, b: 2 }).to_vec();
        payload.resize(MAX_FRAME_LEN as usize - 22, 0xc0);
        let frame = request(1, ADD, Bytes::from(payload));
        assert_eq!(frame.to_bytes().len(), 4 + MAX_FRAME_LEN as usize);
        peer.send_frame(frame).await;
        let reply = peer.next_frame().await;
        assert_eq!(reply.request_id, 1, "{reply:?}");
        assert!(
            reply.kind == FrameKind::Response
                || (reply.kind == FrameKind::Error && error_code(&reply) == 2),
            "{reply:?}"
        );
        peer.expect_usable(Codec::MessagePack, 2).await;
    }
    .boxed()
}

fn duplicate_request_id(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
        let slow = encode(Codec::MessagePack, &SleepArgs { ms: 2_000 });
        peer.send_frame(request(5, SLEEP_MS, slow.clone())).await;
        peer.send_frame(request(5, SLEEP_MS, slow)).await;
        peer.expect_connection_error(6).await;
        arena.connections_settle().await;
        let server = Arc::clone(&arena.server);
        eventually("the abandoned call stops", move || server.in_flight() <= 1).await;
    }
    .boxed()
}

fn duplicate_request_id_unknown_method(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
        let slow = encode(Codec::MessagePack, &SleepArgs { ms: 2_000 });
        peer.send_frame(request(5, SLEEP_MS, slow)).await;
        // Same id, a method the server does not have: the duplicate is found first.
        peer.send_frame(request(5, MethodId::new(0xdead_beef), Bytes::new()))
            .await;
        peer.expect_connection_error(6).await;
        arena.connections_settle().await;
    }
    .boxed()
}

fn request_id_zero(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let mut peer = RawPeer::handshaken(arena.addr, Codec::Protobuf).await;
        peer.send_frame(request(0, MethodId::new(0xdead_beef), Bytes::new()))
            .await;
        peer.expect_connection_error(6).await;

        let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
        let mut notify = request(0, ADD, encode(Codec::MessagePack, &AddArgs { a: 1, b: 2 }));
        notify.kind = FrameKind::Notify;
        peer.send_frame(notify).await;
        peer.expect_connection_error(6).await;
        arena.connections_settle().await;
    }
    .boxed()
}

fn control_frames_with_fields(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let with_method = |kind| Frame {
            method: ADD,
            ..Frame::control(kind, 3)
        };
        let with_deadline = |kind| Frame {
            deadline_ms: 100,
            ..Frame::control(kind, 3)
        };
        let with_payload = |kind| Frame {
            payload: Bytes::from_static(b"x"),
            ..Frame::control(kind, 3)
        };
        for kind in [FrameKind::Ping, FrameKind::Pong, FrameKind::Cancel] {
            for frame in [with_method(kind), with_deadline(kind), with_payload(kind)] {
                let mut peer = RawPeer::handshaken(arena.addr, Codec::Json).await;
                peer.send_frame(frame.clone()).await;
                peer.expect_connection_error(6).await;
            }
        }
        arena.connections_settle().await;
    }
    .boxed()
}

fn malformed_metadata(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        // 65 entries announced (the limit is 64), then nothing.
        for block in [&[0u8, 65][..], &[0, 1, 1, b'a', 0, 200][..], &[0][..]] {
            let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
            let mut call = request(3, ADD, Bytes::copy_from_slice(block));
            call.flags = wirecall_runtime::transport::frame::FLAG_METADATA;
            peer.send_frame(call).await;
            peer.expect_connection_error(6).await;
        }
        arena.connections_settle().await;
    }
    .boxed()
}

fn unknown_method(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let mut peer = RawPeer::handshaken(arena.addr, Codec::Protobuf).await;
        peer.send_frame(request(7, MethodId::new(0xdead_beef), Bytes::new()))
            .await;
        let reply = peer.next_frame().await;
        assert_eq!((reply.kind, reply.request_id), (FrameKind::Error, 7));
        assert_eq!(error_code(&reply), 1, "code 1: unknown method");
        peer.expect_usable(Codec::Protobuf, 8).await;
    }
    .boxed()
}

fn undecodable_arguments(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let garbage: [(Codec, &[u8]); 3] = [
            (Codec::Json, b"{\"a\": 1, \"b\":"),
            // 0xc1 is the one byte MessagePack never uses.
            (Codec::MessagePack, &[0xc1, 0x00]),
            // Field 1 as a varint, then a varint that never ends.
            (Codec::Protobuf, &[0x08, 0xff]),
        ];
        for (codec, payload) in garbage {
            let mut peer = RawPeer::handshaken(arena.addr, codec).await;
            peer.send_frame(request(3, ADD, Bytes::copy_from_slice(payload)))
                .await;
            let reply = peer.next_frame().await;
            assert_eq!(
                (reply.kind, reply.request_id),
                (FrameKind::Error, 3),
                "{codec}: {reply:?}"
            );
            assert_eq!(error_code(&reply), 2, "{codec}: code 2, bad request");
            peer.expect_usable(codec, 4).await;
        }
    }
    .boxed()
}

fn cancel_unknown_id(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
        peer.send_frame(Frame::control(FrameKind::Cancel, 12_345))
            .await;
        peer.send_frame(Frame::control(FrameKind::Cancel, 0)).await;
        // The next frame is the reply to this call: nothing answered the cancels.
        peer.expect_usable(Codec::MessagePack, 1).await;
    }
    .boxed()
}

fn ten_thousand_pings(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        const PINGS: u64 = 10_000;
        let peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
        let (mut read, mut write) = peer.socket.into_split();
        let writer = tokio::spawn(async move {
            let mut batch = BytesMut::new();
            for id in 1..=PINGS {
                batch.extend_from_slice(&Frame::control(FrameKind::Ping, id).to_bytes());
                if id % 500 == 0 {
                    write.write_all(&batch).await.expect("write pings");
                    batch.clear();
                }
            }
            write
        });
        let mut buf = peer.received;
        let mut codec = FrameCodec::default();
        let mut expected = 1u64;
        let deadline = tokio::time::Instant::now() + SOON * 4;
        while expected <= PINGS {
            while let Some(frame) = codec.decode(&mut buf).expect("well-formed frames") {
                if frame.kind == FrameKind::Ping {
                    continue;
                }
                assert_eq!(frame.kind, FrameKind::Pong, "{frame:?}");
                assert_eq!(frame.request_id, expected, "pongs come back in order");
                expected += 1;
            }
            if expected > PINGS {
                break;
            }
            let read = tokio::time::timeout_at(deadline, read.read_buf(&mut buf))
                .await
                .unwrap_or_else(|_| panic!("only {} pongs in time", expected - 1));
            assert!(
                matches!(read, Ok(n) if n > 0),
                "closed after {} pongs",
                expected - 1
            );
        }
        let write = writer.await.unwrap();
        let mut peer = RawPeer {
            socket: read.reunite(write).unwrap(),
            received: buf,
            frames: codec,
            pings_seen: 0,
            answer_pings: true,
        };
        peer.expect_usable(Codec::MessagePack, PINGS + 1).await;
    }
    .boxed()
}

fn idle_peer(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let started = Instant::now();
        let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
        peer.answer_pings = false;
        peer.expect_connection_error(10).await;
        assert!(peer.pings_seen >= 1, "the server pinged before giving up");
        let elapsed = started.elapsed();
        assert!(
            elapsed >= IDLE_TIMEOUT + PING_TIMEOUT - Duration::from_millis(100),
            "closed after only {elapsed:?}"
        );
        arena.connections_settle().await;
    }
    .boxed()
}

fn idle_peer_answering_pings(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
        let quiet = (IDLE_TIMEOUT + PING_TIMEOUT) * 4;
        let until = tokio::time::Instant::now() + quiet;
        // Nothing but pings may arrive while the peer stays quiet (and answers them).
        while tokio::time::Instant::now() < until {
            let left = until - tokio::time::Instant::now();
            let mut probe = RawPeerProbe(&mut peer);
            if let Some(frame) = probe.frame_within(left).await {
                panic!("an idle but live peer was sent {frame:?}");
            }
        }
        assert!(peer.pings_seen >= 2, "pinged {} times", peer.pings_seen);
        peer.expect_usable(Codec::MessagePack, 1).await;
    }
    .boxed()
}

/// Reads frames for a while without treating silence as a failure.
struct RawPeerProbe<'a>(&'a mut RawPeer);

impl RawPeerProbe<'_> {
    /// A non-ping frame received within `limit`, if any; a close is a failure.
    async fn frame_within(&mut self, limit: Duration) -> Option<Frame> {
        let peer = &mut *self.0;
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            match peer.frames.decode(&mut peer.received) {
                Ok(Some(frame)) if frame.kind == FrameKind::Ping => {
                    peer.pings_seen += 1;
                    let pong = Frame::control(FrameKind::Pong, frame.request_id);
                    assert!(peer.try_send(&pong.to_bytes()).await, "answer a ping");
                    continue;
                }
                Ok(Some(frame)) => return Some(frame),
                Ok(None) => {}
                Err(err) => panic!("undecodable frame from the server: {err}"),
            }
            match tokio::time::timeout_at(deadline, peer.socket.read_buf(&mut peer.received)).await
            {
                Err(_) => return None,
                Ok(Ok(0)) | Ok(Err(_)) => panic!("the server closed a live connection"),
                Ok(Ok(_)) => {}
            }
        }
    }
}

/// A raw peer that answers pings and collects frames in the background, so that it stays
/// alive (to the idle timeout) while the script does something else.
struct Kept {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<(RawPeer, Vec<Frame>)>,
}

impl Kept {
    fn new(mut peer: RawPeer) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let task = tokio::spawn(async move {
            let mut frames = Vec::new();
            while !stopping.load(Ordering::Relaxed) {
                if let Some(frame) = RawPeerProbe(&mut peer)
                    .frame_within(Duration::from_millis(20))
                    .await
                {
                    frames.push(frame);
                }
            }
            (peer, frames)
        });
        Self { stop, task }
    }

    /// The peer back, with the frames it received meanwhile.
    async fn join(self) -> (RawPeer, Vec<Frame>) {
        self.stop.store(true, Ordering::Relaxed);
        tokio::time::timeout(SOON, self.task)
            .await
            .expect("the keeper stops")
            .expect("the keeper's peer stayed connected")
    }
}

fn slowloris_frame(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let started = Instant::now();
        let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
        // A header announcing a 1,000-byte request, then its bytes one per 100 ms: the frame
        // would take 100 s to arrive. Server pings are not answered (the peer only dribbles).
        let mut wire = raw_header(1_000, 1, 0, 1);
        wire.resize(4 + 1_000, 0);
        let limit = IDLE_TIMEOUT + PING_TIMEOUT + SOON;
        let mut closed = false;
        for byte in wire {
            if !peer.try_send(&[byte]).await {
                closed = true;
                break;
            }
            let mut chunk = [0u8; 256];
            match tokio::time::timeout(Duration::from_millis(100), peer.socket.read(&mut chunk))
                .await
            {
                Err(_) => {}
                Ok(Ok(0)) | Ok(Err(_)) => {
                    closed = true;
                    break;
                }
                Ok(Ok(n)) => peer.received.extend_from_slice(&chunk[..n]),
            }
            if started.elapsed() > limit {
                break;
            }
        }
        assert!(
            closed,
            "a peer dribbling one byte per 100 ms was still connected after {:?}",
            started.elapsed()
        );
        // Whatever arrived before the close ends with the idle-timeout error.
        let mut codes = Vec::new();
        while let Ok(Some(frame)) = peer.frames.decode(&mut peer.received) {
            if frame.kind == FrameKind::Error {
                codes.push(error_code(&frame));
            }
        }
        assert_eq!(
            codes,
            vec![10],
            "an idle-timeout error frame before the close"
        );
        arena.connections_settle().await;
    }
    .boxed()
}

fn beyond_max_connections(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let mut held = Vec::new();
        for _ in arena.baseline_connections..MAX_CONNECTIONS {
            held.push(Kept::new(
                RawPeer::handshaken(arena.addr, Codec::MessagePack).await,
            ));
        }
        let mut extra = RawPeer::connect(arena.addr).await;
        extra
            .send(&ClientHello::encode(&[Codec::MessagePack]))
            .await;
        let received = extra.read_until_closed(SOON).await;
        assert_eq!(received, refusal(4), "a busy verdict, then a close");
        // The held connections still work.
        for kept in held {
            let (mut peer, frames) = kept.join().await;
            assert!(frames.is_empty(), "{frames:?}");
            peer.expect_usable(Codec::MessagePack, 1).await;
        }
        arena.connections_settle().await;
        let mut again = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
        again.expect_usable(Codec::MessagePack, 1).await;
    }
    .boxed()
}

fn beyond_max_in_flight(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        const SLEEP: u64 = 1_500;
        let slow = encode(Codec::MessagePack, &SleepArgs { ms: SLEEP });
        // Two connections fill their own limit: 64 calls in flight server-wide.
        let mut fillers = Vec::new();
        for _ in 0..2 {
            let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
            let mut batch = BytesMut::new();
            for id in 1..=MAX_IN_FLIGHT_PER_CONNECTION as u64 {
                batch.extend_from_slice(&request(id, SLEEP_MS, slow.clone()).to_bytes());
            }
            peer.send(&batch).await;
            fillers.push(Kept::new(peer));
        }
        let server = Arc::clone(&arena.server);
        eventually("64 calls in flight", move || {
            server.in_flight() >= 2 * MAX_IN_FLIGHT_PER_CONNECTION
        })
        .await;
        // A third connection asks for 20 more: at most 80 - 64 fit (the good client may hold
        // one more); the rest are refused as overloaded, each for its own request id.
        const EXTRA: u64 = 20;
        let mut third = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
        let mut batch = BytesMut::new();
        for id in 1..=EXTRA {
            batch.extend_from_slice(&request(id, SLEEP_MS, slow.clone()).to_bytes());
        }
        third.send(&batch).await;
        let (mut answered, mut overloaded) = (0, 0);
        let mut seen = std::collections::HashSet::new();
        while answered + overloaded < EXTRA {
            let reply = match third.next(SOON + Duration::from_millis(SLEEP)).await {
                Received::Frame(frame) => frame,
                Received::Closed => panic!("the third connection was closed"),
            };
            assert!(seen.insert(reply.request_id), "two replies for {reply:?}");
            match reply.kind {
                FrameKind::Response => answered += 1,
                FrameKind::Error if error_code(&reply) == 7 => overloaded += 1,
                _ => panic!("unexpected {reply:?}"),
            }
        }
        let room = (MAX_IN_FLIGHT - 2 * MAX_IN_FLIGHT_PER_CONNECTION) as u64;
        assert!(
            overloaded >= EXTRA - room,
            "only {overloaded} of {EXTRA} calls over the limit were refused"
        );
        // The fillers' calls all complete.
        for kept in fillers {
            let (mut peer, mut replies) = kept.join().await;
            while replies.len() < MAX_IN_FLIGHT_PER_CONNECTION {
                replies.push(peer.next_frame().await);
            }
            for reply in replies {
                assert_eq!(reply.kind, FrameKind::Response, "{reply:?}");
            }
        }
        let server = Arc::clone(&arena.server);
        eventually("no call in flight", move || server.in_flight() <= 1).await;
    }
    .boxed()
}

fn flooder_never_reading(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        // Requests for 8 KiB replies, written until the server stops reading them (or
        // closes); their replies are never read.
        const GIVE_UP_AFTER_BYTES: u64 = 512 * 1024 * 1024;
        const RSS_BOUND: u64 = 256 * 1024 * 1024;
        let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
        let args = encode(Codec::MessagePack, &BlobArgs { len: 8 * 1024 });
        let mut next_id = 1u64;
        let mut written = 0u64;
        let outcome = loop {
            let mut batch = BytesMut::new();
            for _ in 0..256 {
                let id = next_id;
                next_id += 1;
                batch.extend_from_slice(&request(id, BLOB, args.clone()).to_bytes());
            }
            match tokio::time::timeout(Duration::from_secs(2), peer.socket.write_all(&batch)).await
            {
                Err(_) => break "back-pressured",
                Ok(Err(_)) => break "closed",
                Ok(Ok(())) => written += batch.len() as u64,
            }
            assert!(
                written < GIVE_UP_AFTER_BYTES,
                "the server read {written} bytes of requests whose replies nobody reads"
            );
        };
        let rss = vm_rss_bytes().unwrap_or(0);
        eprintln!(
            "        flooder: {outcome} after {written} bytes of requests; test process RSS {} MiB",
            rss / (1024 * 1024)
        );
        assert!(rss < RSS_BOUND, "RSS grew to {rss} bytes");
        // The well-behaved client keeps being served while the flooder is stuck.
        tokio::time::sleep(Duration::from_millis(500)).await;
        drop(peer);
        arena.connections_settle().await;
        let server = Arc::clone(&arena.server);
        eventually("the flooder's calls are dropped", move || {
            server.in_flight() <= 1
        })
        .await;
    }
    .boxed()
}

// ---- streams -----------------------------------------------------------------------------

const ENDLESS: MethodId = wirecall::method_id("Feed", "endless");
const NUMBERS: MethodId = wirecall::method_id("Feed", "numbers");

#[wirecall::message]
struct NoArgs {}

#[wirecall::message]
struct CountArgs {
    count: u64,
}

fn open(request_id: u64, method: MethodId, payload: Bytes) -> Frame {
    Frame {
        kind: FrameKind::Open,
        ..request(request_id, method, payload)
    }
}

fn credit(request_id: u64, payload: &[u8]) -> Frame {
    Frame {
        payload: Bytes::copy_from_slice(payload),
        ..Frame::control(FrameKind::Credit, request_id)
    }
}

/// Opens `Feed.endless` as stream 1, grants `first` items, then sends `then`: the server
/// closes the connection with a protocol violation.
async fn stream_violation(arena: Arena, first: u32, then: Frame) {
    let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
    peer.send_frame(open(1, ENDLESS, encode(Codec::MessagePack, &NoArgs {})))
        .await;
    // The grant and the frame after it in one write, so that the server reads them together.
    let mut both = credit(1, &first.to_be_bytes()).to_bytes().to_vec();
    both.extend_from_slice(&then.to_bytes());
    peer.send(&both).await;
    peer.expect_connection_error(6).await;
    arena.connections_settle().await;
}

fn credit_overflow(arena: Arena) -> BoxFuture<'static, ()> {
    // The whole limit, twice. Granting one item more than the limit would race the stream:
    // each item it sends before the server reads that grant frees one item of credit. It
    // cannot send all 65,536 between two frames read together.
    let limit = wirecall::stream::MAX_STREAM_CREDIT;
    stream_violation(arena, limit, credit(1, &limit.to_be_bytes())).boxed()
}

fn zero_credit(arena: Arena) -> BoxFuture<'static, ()> {
    stream_violation(arena, 1, credit(1, &0u32.to_be_bytes())).boxed()
}

fn credit_of_wrong_length(arena: Arena) -> BoxFuture<'static, ()> {
    stream_violation(arena, 1, credit(1, &[0, 1])).boxed()
}

fn item_from_client(arena: Arena) -> BoxFuture<'static, ()> {
    let item = Frame {
        payload: encode(Codec::MessagePack, &I64Reply { value: 1 }),
        ..Frame::control(FrameKind::Item, 1)
    };
    stream_violation(arena, 1, item).boxed()
}

fn credit_for_unknown_stream(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
        peer.send_frame(credit(77, &5u32.to_be_bytes())).await;
        // The next frame is the reply to this call: nothing answered the credit.
        peer.expect_usable(Codec::MessagePack, 1).await;
    }
    .boxed()
}

fn stream_without_credit(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let mut peer = RawPeer::handshaken(arena.addr, Codec::MessagePack).await;
        let args = encode(Codec::MessagePack, &CountArgs { count: 3 });
        peer.send_frame(open(1, NUMBERS, args)).await;
        // No credit: the stream sends nothing, and calls on the connection still complete.
        for request_id in 2..12 {
            peer.expect_usable(Codec::MessagePack, request_id).await;
        }
        // Credit for two items: exactly two come, and no End (a third item is owed first).
        peer.send_frame(credit(1, &2u32.to_be_bytes())).await;
        for n in 0..2 {
            let item = peer.next_frame().await;
            assert_eq!(
                (item.kind, item.request_id),
                (FrameKind::Item, 1),
                "{item:?}"
            );
            let value: I64Reply = Codec::MessagePack.decode(&item.payload).expect("decodes");
            assert_eq!(value.value, n);
        }
        peer.expect_usable(Codec::MessagePack, 12).await;
        // One more: the last item, then the End.
        peer.send_frame(credit(1, &1u32.to_be_bytes())).await;
        let item = peer.next_frame().await;
        assert_eq!(item.kind, FrameKind::Item, "{item:?}");
        let end = peer.next_frame().await;
        assert_eq!((end.kind, end.request_id), (FrameKind::End, 1), "{end:?}");
        peer.expect_usable(Codec::MessagePack, 13).await;
    }
    .boxed()
}

fn stream_frame_on_version_2(arena: Arena) -> BoxFuture<'static, ()> {
    async move {
        let mut peer = RawPeer::connect(arena.addr).await;
        peer.send(&ClientHello::encode_for_version(
            2,
            &[Codec::MessagePack],
            &[],
        ))
        .await;
        // The version 2 acceptance: the same bytes as a version 3 one but the version.
        let mut accepted = accepted_hello(Codec::MessagePack);
        accepted[4] = 2;
        assert_eq!(peer.read_exact(accepted.len()).await, accepted);
        peer.send_frame(open(
            1,
            NUMBERS,
            encode(Codec::MessagePack, &CountArgs { count: 1 }),
        ))
        .await;
        peer.expect_connection_error(6).await;
        arena.connections_settle().await;
    }
    .boxed()
}
