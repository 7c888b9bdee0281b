//! One large request must not stall its connection: its arguments are decoded off the
//! connection's read loop, so Pings and small calls sent behind it are answered first, and a
//! deadline that passes while it decodes ends it with a timeout, not a late success.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::codec::Decoder;
use wirecall::{Codec, MethodId, RunningServer, Server, WireMessage};
use wirecall_runtime::negotiate::{ClientHello, HelloStatus, ServerHello};
use wirecall_runtime::transport::frame::{ErrorBody, Frame, FrameCodec, FrameKind};

#[wirecall::service]
trait Bulk {
    async fn take(&self, data: Vec<u32>) -> u32;
    async fn small(&self, x: i32) -> i32;
}

struct BulkImpl;

impl Bulk for BulkImpl {
    async fn take(&self, data: Vec<u32>) -> u32 {
        data.len() as u32
    }
    async fn small(&self, x: i32) -> i32 {
        x + 1
    }
}

/// The wire shape of `take`'s arguments.
#[wirecall::message]
struct TakeArgs {
    data: Vec<u32>,
}

/// The wire shape of `small`'s arguments.
#[wirecall::message]
struct SmallArgs {
    x: i32,
}

const TAKE: MethodId = wirecall::method_id("Bulk", "take");
const SMALL: MethodId = wirecall::method_id("Bulk", "small");
const SOON: Duration = Duration::from_secs(10);

/// About 4 MiB of JSON: a decode that takes milliseconds even in a release build.
fn large_arguments() -> Bytes {
    encode(&TakeArgs {
        data: (0..500_000).map(|i| i * 7919).collect(),
    })
}

fn encode<T: WireMessage>(value: &T) -> Bytes {
    let mut buf = BytesMut::new();
    Codec::Json.encode(value, &mut buf).expect("encodes");
    buf.freeze()
}

async fn start() -> RunningServer {
    Server::builder()
        .serve(BulkServer::new(BulkImpl))
        .bind("127.0.0.1:0")
        .await
        .expect("server binds")
}

/// A JSON connection that writes raw frames and reads whatever comes back.
struct Peer {
    socket: TcpStream,
    received: BytesMut,
    frames: FrameCodec,
}

impl Peer {
    async fn connect(addr: SocketAddr) -> Self {
        let mut socket = TcpStream::connect(addr).await.expect("connects");
        socket.set_nodelay(true).unwrap();
        socket
            .write_all(&ClientHello::encode(&[Codec::Json]))
            .await
            .unwrap();
        let mut received = BytesMut::new();
        let hello = loop {
            if let Some((hello, used)) = ServerHello::parse(&received).expect("a server hello") {
                let _ = received.split_to(used);
                break hello;
            }
            socket.read_buf(&mut received).await.expect("server hello");
        };
        assert_eq!(hello.status, HelloStatus::Accepted);
        Self {
            socket,
            received,
            frames: FrameCodec::default(),
        }
    }

    /// Writes all frames with one write, so the server finds them in one burst.
    async fn send(&mut self, frames: &[Frame]) {
        let mut bytes = Vec::new();
        for frame in frames {
            bytes.extend_from_slice(&frame.to_bytes());
        }
        self.socket.write_all(&bytes).await.unwrap();
    }

    async fn next_frame(&mut self) -> Frame {
        loop {
            if let Some(frame) = self.frames.decode(&mut self.received).unwrap() {
                return frame;
            }
            let read = tokio::time::timeout(SOON, self.socket.read_buf(&mut self.received))
                .await
                .expect("a frame within the bound")
                .unwrap();
            assert_ne!(read, 0, "the server closed the connection");
        }
    }
}

fn request(request_id: u64, method: MethodId, deadline_ms: u32, payload: Bytes) -> Frame {
    Frame {
        kind: FrameKind::Request,
        request_id,
        method,
        deadline_ms,
        flags: 0,
        payload,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ping_and_a_small_call_behind_a_large_request_are_answered_first() {
    let server = start().await;
    let mut peer = Peer::connect(server.local_addr()).await;
    peer.send(&[
        request(1, TAKE, 0, large_arguments()),
        Frame::control(FrameKind::Ping, 9),
        request(2, SMALL, 0, encode(&SmallArgs { x: 41 })),
    ])
    .await;

    let mut order = Vec::new();
    while order.len() < 3 {
        let frame = peer.next_frame().await;
        assert_ne!(frame.kind, FrameKind::Error, "{frame:?}");
        order.push((frame.kind, frame.request_id));
    }
    assert_eq!(
        order[2],
        (FrameKind::Response, 1),
        "the large request is answered last: {order:?}"
    );
    assert!(order.contains(&(FrameKind::Pong, 9)), "{order:?}");
    assert!(order.contains(&(FrameKind::Response, 2)), "{order:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_that_passes_during_decode_ends_the_call_with_a_timeout() {
    let server = start().await;
    let mut peer = Peer::connect(server.local_addr()).await;
    peer.send(&[request(1, TAKE, 1, large_arguments())]).await;
    let reply = peer.next_frame().await;
    assert_eq!((reply.kind, reply.request_id), (FrameKind::Error, 1));
    let body = ErrorBody::decode(&reply.payload);
    assert_eq!(
        body.code,
        wirecall::ErrorCode::DeadlineExceeded,
        "{}",
        body.message
    );

    // The connection is still usable.
    peer.send(&[request(2, SMALL, 0, encode(&SmallArgs { x: 1 }))])
        .await;
    let reply = peer.next_frame().await;
    assert_eq!((reply.kind, reply.request_id), (FrameKind::Response, 2));
}
