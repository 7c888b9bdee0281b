//! Drives the gRPC door with arbitrary request bodies and `grpc-timeout` values, over a real
//! loopback connection (the door is chosen by the connection's first bytes, which only an
//! accepted socket has) and the h2 crate as the client.
//!
//! Input layout: byte 0 picks the path (each call shape, an unknown method, the health
//! check), byte 1 the `grpc-timeout` header (none, a valid one, or the next bytes as text),
//! the rest is the request body: gRPC's length-prefixed messages, or not. Invariants: the
//! server never panics (libFuzzer's hook aborts on any panic, in its tasks too), every call
//! ends within a few seconds with a `grpc-status` that is a number gRPC defines, and the
//! server still answers a good call on the same connection afterwards.

#![no_main]

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use wirecall::{RunningServer, Server};

/// How long a call may take before it counts as hung: far above any handler here.
const HANG: Duration = Duration::from_secs(5);

#[wirecall::service]
trait Target {
    async fn add(&self, a: i64, b: i64) -> i64;
    async fn sleep(&self, ms: u32) -> u32;
    /// A server stream of `0..count`.
    async fn count(&self, count: u32) -> wirecall::Streaming<u32>;
    /// An upload with arguments: the total of the readings, or an error over `limit`.
    async fn total(&self, limit: u64, readings: wirecall::Streaming<u64>) -> Result<u64, String>;
    /// A bidirectional stream: each reading back, doubled.
    async fn doubled(&self, readings: wirecall::Streaming<u64>) -> wirecall::Streaming<u64>;
}

struct TargetImpl;

impl Target for TargetImpl {
    async fn add(&self, a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }
    async fn sleep(&self, ms: u32) -> u32 {
        tokio::time::sleep(Duration::from_millis(u64::from(ms.min(50)))).await;
        ms
    }
    async fn count(&self, count: u32) -> wirecall::Streaming<u32> {
        wirecall::Streaming::from_iter(0..count.min(1_000))
    }
    async fn total(
        &self,
        limit: u64,
        mut readings: wirecall::Streaming<u64>,
    ) -> Result<u64, String> {
        use futures::StreamExt;
        let mut total = 0u64;
        while let Some(reading) = readings.next().await {
            total = total.saturating_add(reading);
            if total > limit {
                return Err(format!("over {limit}"));
            }
        }
        Ok(total)
    }
    async fn doubled(&self, readings: wirecall::Streaming<u64>) -> wirecall::Streaming<u64> {
        use futures::StreamExt;
        wirecall::Streaming::new(readings.map(|reading| reading.wrapping_mul(2)))
    }
}

const PATHS: [&str; 8] = [
    "/wirecall.services.Target/add",
    "/wirecall.services.Target/sleep",
    "/wirecall.services.Target/count",
    "/wirecall.services.Target/total",
    "/wirecall.services.Target/doubled",
    "/wirecall.services.Target/nothing",
    "/grpc.health.v1.Health/Check",
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
];

/// The codes gRPC defines.
const STATUSES: std::ops::RangeInclusive<u32> = 0..=16;

struct Harness {
    runtime: tokio::runtime::Runtime,
    addr: SocketAddr,
    _server: RunningServer,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let server = runtime.block_on(async {
            Server::builder()
                .serve(TargetServer::new(TargetImpl))
                .max_frame_len(4096)
                .bind("127.0.0.1:0")
                .await
                .expect("a server")
        });
        Harness {
            runtime,
            addr: server.local_addr(),
            _server: server,
        }
    })
}

/// One call: its `grpc-status`.
async fn call(
    client: &mut h2::client::SendRequest<Bytes>,
    path: &str,
    timeout: Option<&str>,
    body: Bytes,
) -> u32 {
    let mut request = http::Request::post(format!("http://localhost{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(timeout) = timeout {
        request = request.header("grpc-timeout", timeout);
    }
    let request = request.body(()).expect("a request");
    let (response, mut send) = client.send_request(request, false).expect("sent");
    // The server may answer (and reset) before reading the body: a failed send is fine.
    let _ = send.send_data(body, true);
    let response = response.await.expect("a response head");
    let head = response.headers().clone();
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        match chunk {
            Ok(chunk) => {
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            Err(err) => panic!("the response body broke: {err}"),
        }
    }
    let trailers = body.trailers().await.expect("trailers").unwrap_or(head);
    let status = trailers
        .get("grpc-status")
        .expect("every call ends with a grpc-status")
        .to_str()
        .expect("a text status")
        .parse()
        .expect("a numeric status");
    assert!(STATUSES.contains(&status), "status {status}");
    status
}

fuzz_target!(|data: &[u8]| {
    let Some((&path, rest)) = data.split_first() else {
        return;
    };
    let Some((&timeout, body)) = rest.split_first() else {
        return;
    };
    let path = PATHS[usize::from(path) % PATHS.len()];
    let text: String;
    let (timeout, body) = match timeout % 3 {
        0 => (None, body),
        1 => (Some("20m"), body),
        _ => {
            let (head, tail) = body.split_at(body.len().min(10));
            text = String::from_utf8_lossy(head)
                .chars()
                .filter(|c| c.is_ascii_graphic())
                .collect();
            (Some(text.as_str()), tail)
        }
    };
    let harness = harness();
    harness.runtime.block_on(async {
        let exchange = async {
            let tcp = tokio::net::TcpStream::connect(harness.addr).await.expect("connected");
            tcp.set_nodelay(true).expect("no delay");
            let (mut client, connection) = h2::client::handshake(tcp).await.expect("h2");
            tokio::spawn(connection);
            call(&mut client, path, timeout, Bytes::copy_from_slice(body)).await;
            // The connection still serves a good call.
            let good = Bytes::from_static(&[0, 0, 0, 0, 4, 0x08, 0x02, 0x10, 0x03]);
            let status = call(&mut client, PATHS[0], None, good).await;
            assert_eq!(status, 0, "a good call after the fuzzed one");
        };
        tokio::time::timeout(HANG, exchange).await.expect("the calls ended");
    });
});
