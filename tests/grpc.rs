//! The gRPC door, called by tonic (a gRPC client no one here wrote) on the server's own port:
//! every call shape, arguments beside an upload, a deadline, a cancel, metadata both ways,
//! error statuses, the health check, the token; and a wirecall client on the same port.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::StreamExt;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::{Channel as GrpcChannel, Endpoint};
use tonic::{Code, Request, Status};
use wirecall::{CallContext, Channel, RunningServer, Server};
use wirecall_test_support::eventually;
use wirecall_test_support::feed::{FeedClient, FeedImpl, FeedServer};

/// Calls whose timing and metadata the tests watch.
#[wirecall::service]
trait Door {
    /// Answers `ms` after it is called.
    async fn wait(&self, ms: u64) -> u64;
    /// The caller's `x-tenant`, and `x-served-by: door` in the reply's metadata.
    async fn tenant(&self) -> String;
    /// `0..count`, with `x-unit: item` in the reply's metadata and `x-count: <count>` in its
    /// trailers.
    async fn counted(&self, count: u64) -> wirecall::Streaming<u64>;
}

struct DoorImpl;

impl Door for DoorImpl {
    async fn wait(&self, ms: u64) -> u64 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        ms
    }

    async fn tenant(&self) -> String {
        CallContext::with_current(|call| {
            call.set_reply_metadata("x-served-by", "door").unwrap();
            call.metadata().get("x-tenant").unwrap_or("").to_owned()
        })
        .unwrap_or_default()
    }

    async fn counted(&self, count: u64) -> wirecall::Streaming<u64> {
        CallContext::with_current(|call| {
            call.set_reply_metadata("x-unit", "item").unwrap();
            call.set_trailer("x-count", count.to_string()).unwrap();
        });
        wirecall::Streaming::from_iter(0..count)
    }
}

// The messages of `wirecall proto`'s export for `Feed` and `Door`, written as a gRPC user
// would get them from protoc: field numbers as the export states them.

#[derive(Clone, PartialEq, prost::Message)]
struct AddArgs {
    #[prost(uint64, tag = "1")]
    a: u64,
    #[prost(uint64, tag = "2")]
    b: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct U64Reply {
    #[prost(uint64, tag = "1")]
    value: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct CountArgs {
    #[prost(uint64, tag = "1")]
    count: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Empty {}

#[derive(Clone, PartialEq, prost::Message)]
struct U64Upload {
    #[prost(uint64, tag = "1")]
    value: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SumUntilArgs {
    #[prost(uint64, tag = "1")]
    limit: u64,
}

/// `Feed_sum_until_Upload`: over gRPC the first message carries the arguments.
#[derive(Clone, PartialEq, prost::Message)]
struct SumUntilUpload {
    #[prost(uint64, tag = "1")]
    value: u64,
    #[prost(message, optional, tag = "2")]
    args: Option<SumUntilArgs>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Refused {
    #[prost(string, tag = "1")]
    reason: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SumUntilReply {
    #[prost(uint64, optional, tag = "1")]
    ok: Option<u64>,
    #[prost(message, optional, tag = "2")]
    err: Option<Refused>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Tick {
    #[prost(uint64, tag = "1")]
    n: u64,
    #[prost(bytes = "vec", tag = "2")]
    body: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct TickMessage {
    #[prost(message, optional, tag = "1")]
    value: Option<Tick>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct StringReply {
    #[prost(string, tag = "1")]
    value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct HealthCheckRequest {
    #[prost(string, tag = "1")]
    service: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct HealthCheckResponse {
    #[prost(int32, tag = "1")]
    status: i32,
}

async fn serve(feed: FeedImpl) -> RunningServer {
    Server::builder()
        .serve(FeedServer::new(feed))
        .serve(DoorServer::new(DoorImpl))
        .bind("127.0.0.1:0")
        .await
        .unwrap()
}

async fn grpc(server: &RunningServer) -> tonic::client::Grpc<GrpcChannel> {
    let channel = Endpoint::from_shared(format!("http://{}", server.local_addr()))
        .unwrap()
        .connect()
        .await
        .unwrap();
    tonic::client::Grpc::new(channel)
}

fn path(service: &str, method: &str) -> PathAndQuery {
    format!("/wirecall.services.{service}/{method}")
        .parse()
        .unwrap()
}

fn codec<T, U>() -> tonic_prost::ProstCodec<T, U>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    tonic_prost::ProstCodec::default()
}

async fn unary<T, U>(
    client: &mut tonic::client::Grpc<GrpcChannel>,
    path: PathAndQuery,
    request: Request<T>,
) -> Result<tonic::Response<U>, Status>
where
    T: prost::Message + Send + Sync + 'static,
    U: prost::Message + Default + Send + Sync + 'static,
{
    client.ready().await.unwrap();
    client.unary(request, path, codec::<T, U>()).await
}

#[tokio::test]
async fn every_call_shape_answers_a_grpc_client() {
    let server = serve(FeedImpl::default()).await;
    let mut client = grpc(&server).await;

    // Unary.
    let sum: U64Reply = unary(
        &mut client,
        path("Feed", "add"),
        Request::new(AddArgs { a: 2, b: 3 }),
    )
    .await
    .unwrap()
    .into_inner();
    assert_eq!(sum.value, 5);

    // Server streaming: 50 items, in order.
    client.ready().await.unwrap();
    let numbers = client
        .server_streaming(
            Request::new(CountArgs { count: 50 }),
            path("Feed", "numbers"),
            codec::<CountArgs, U64Reply>(),
        )
        .await
        .unwrap()
        .into_inner();
    let numbers: Vec<u64> = numbers.map(|item| item.unwrap().value).collect().await;
    assert_eq!(numbers, (0..50).collect::<Vec<_>>());

    // Client streaming, no arguments: every message is an item.
    client.ready().await.unwrap();
    let items = futures::stream::iter((1..=10).map(|value| U64Upload { value }));
    let total = client
        .client_streaming(
            Request::new(items),
            path("Feed", "sum"),
            codec::<U64Upload, U64Reply>(),
        )
        .await
        .unwrap()
        .into_inner();
    assert_eq!(total.value, 55);

    // Client streaming with arguments: the first message carries them; a `Result` method's
    // application error travels in the reply, as the export describes.
    for (limit, expected) in [(100, Some(15)), (5, None)] {
        let first = SumUntilUpload {
            value: 0,
            args: Some(SumUntilArgs { limit }),
        };
        let items =
            std::iter::once(first).chain((1..=5).map(|value| SumUntilUpload { value, args: None }));
        client.ready().await.unwrap();
        let reply = client
            .client_streaming(
                Request::new(futures::stream::iter(items)),
                path("Feed", "sum_until"),
                codec::<SumUntilUpload, SumUntilReply>(),
            )
            .await
            .unwrap()
            .into_inner();
        match expected {
            Some(sum) => assert_eq!((reply.ok, reply.err), (Some(sum), None)),
            None => assert_eq!(reply.err.unwrap().reason, "the sum passed 5"),
        }
    }

    // Bidirectional: each tick back, doubled.
    client.ready().await.unwrap();
    let ticks = futures::stream::iter((0..20).map(|n| TickMessage {
        value: Some(Tick {
            n,
            body: vec![1, 2, 3],
        }),
    }));
    let doubled = client
        .streaming(
            Request::new(ticks),
            path("Feed", "doubled"),
            codec::<TickMessage, TickMessage>(),
        )
        .await
        .unwrap()
        .into_inner();
    let doubled: Vec<u64> = doubled
        .map(|item| item.unwrap().value.unwrap().n)
        .collect()
        .await;
    assert_eq!(doubled, (0..20).map(|n| n * 2).collect::<Vec<_>>());
}

/// One gRPC call over a bare HTTP/2 connection, with `headers` added: the reply's
/// `grpc-status` and `grpc-message` (from the trailers, or the headers of a trailers-only
/// reply), and the messages' bytes.
async fn raw_call(
    server: &RunningServer,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (String, String, Vec<u8>) {
    let tcp = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    tcp.set_nodelay(true).unwrap();
    raw_call_on(tcp, path, headers, body).await
}

/// [`raw_call`] on a connection already made (plain or TLS).
async fn raw_call_on<T>(
    io: T,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (String, String, Vec<u8>)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut client, connection) = h2::client::handshake(io).await.unwrap();
    tokio::spawn(connection);
    let mut request = tonic::codegen::http::Request::post(format!("http://localhost{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let (response, mut send) = client
        .send_request(request.body(()).unwrap(), false)
        .unwrap();
    send.send_data(body.into(), true).unwrap();
    let response = response.await.unwrap();
    let head = response.headers().clone();
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    let trailers = body.trailers().await.unwrap().unwrap_or(head);
    let text = |name: &str| {
        trailers
            .get(name)
            .map(|value| value.to_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    (text("grpc-status"), text("grpc-message"), bytes)
}

/// A message of gRPC's framing around `payload`.
fn framed(payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

#[tokio::test]
async fn grpc_timeout_is_the_calls_deadline() {
    let server = serve(FeedImpl::default()).await;
    let wait = prost::Message::encode_to_vec(&CountArgs { count: 2_000 });
    let started = Instant::now();
    let (status, message, _) = raw_call(
        &server,
        "/wirecall.services.Door/wait",
        &[("grpc-timeout", "100m")],
        framed(&wait),
    )
    .await;
    let elapsed = started.elapsed();
    assert_eq!(status, "4", "DEADLINE_EXCEEDED: {message}");
    assert!(elapsed >= Duration::from_millis(100), "took {elapsed:?}");
    assert!(elapsed < Duration::from_millis(1_000), "took {elapsed:?}");
    println!("DEADLINE_EXCEEDED after {elapsed:?} (grpc-timeout 100 ms)");
}

#[tokio::test]
async fn hostile_requests_get_a_status_not_a_hang() {
    let server = serve(FeedImpl::default()).await;
    let add = "/wirecall.services.Feed/add";
    let args = prost::Message::encode_to_vec(&AddArgs { a: 1, b: 2 });
    // A malformed timeout, a compressed message, a message over the frame limit, a body cut
    // inside a message, no message at all.
    let mut compressed = framed(&args);
    compressed[0] = 1;
    let mut huge = vec![0];
    huge.extend_from_slice(&u32::MAX.to_be_bytes());
    let cut = framed(&args)[..4].to_vec();
    type Case<'a> = (&'a [(&'a str, &'a str)], Vec<u8>, &'a str);
    let cases: [Case<'_>; 5] = [
        (&[("grpc-timeout", "soon")], framed(&args), "3"),
        (&[], compressed, "12"),
        (&[], huge, "8"),
        (&[], cut, "13"),
        (&[], Vec::new(), "13"),
    ];
    for (headers, body, expected) in cases {
        let (status, message, _) = raw_call(&server, add, headers, body).await;
        assert_eq!(status, expected, "{message}");
        assert!(!message.is_empty());
    }
    // The connection's other calls are unharmed.
    let (status, _, reply) = raw_call(&server, add, &[], framed(&args)).await;
    assert_eq!(status, "0");
    let reply: U64Reply = prost::Message::decode(&reply[5..]).unwrap();
    assert_eq!(reply.value, 3);
}

#[tokio::test]
async fn a_cancelled_grpc_stream_stops_its_producer() {
    let feed = FeedImpl::default();
    let stats = feed.stats.clone();
    let server = serve(feed).await;
    let mut client = grpc(&server).await;
    client.ready().await.unwrap();
    let mut endless = client
        .server_streaming(
            Request::new(Empty {}),
            path("Feed", "endless"),
            codec::<Empty, U64Reply>(),
        )
        .await
        .unwrap()
        .into_inner();
    for expected in 0..3 {
        assert_eq!(endless.next().await.unwrap().unwrap().value, expected);
    }
    drop(endless);
    eventually("the producer is dropped", || {
        stats.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
}

/// A stream's reply metadata comes in its response headers, its trailers beside
/// `grpc-status`.
#[tokio::test]
async fn a_streams_metadata_and_trailers_are_grpc_headers_and_trailers() {
    let server = serve(FeedImpl::default()).await;
    let mut client = grpc(&server).await;
    client.ready().await.unwrap();
    let response = client
        .server_streaming(
            Request::new(CountArgs { count: 3 }),
            path("Door", "counted"),
            codec::<CountArgs, U64Reply>(),
        )
        .await
        .unwrap();
    assert_eq!(response.metadata().get("x-unit").unwrap(), "item");
    let mut numbers = response.into_inner();
    let mut received = Vec::new();
    while let Some(item) = numbers.message().await.unwrap() {
        received.push(item.value);
    }
    assert_eq!(received, [0, 1, 2]);
    let trailers = numbers.trailers().await.unwrap().expect("trailers");
    assert_eq!(trailers.get("x-count").unwrap(), "3");
}

#[tokio::test]
async fn metadata_travels_both_ways_as_headers() {
    let server = serve(FeedImpl::default()).await;
    let mut client = grpc(&server).await;
    let mut request = Request::new(Empty {});
    request
        .metadata_mut()
        .insert("x-tenant", "acme".parse().unwrap());
    let reply = unary::<_, StringReply>(&mut client, path("Door", "tenant"), request)
        .await
        .unwrap();
    assert_eq!(reply.metadata().get("x-served-by").unwrap(), "door");
    assert_eq!(reply.into_inner().value, "acme");
}

#[tokio::test]
async fn failures_end_with_the_mapped_status() {
    wirecall_test_support::quiet_panics_starting_with("feed panicked");
    let server = serve(FeedImpl::default()).await;
    let mut client = grpc(&server).await;

    let status = unary::<_, U64Reply>(&mut client, path("Feed", "nothing"), Request::new(Empty {}))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unimplemented, "{status:?}");

    // Bytes that are not the arguments' message.
    let status = unary::<_, U64Reply>(
        &mut client,
        path("Feed", "add"),
        Request::new(StringReply {
            value: "not numbers".into(),
        }),
    )
    .await
    .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");

    // A producer that panics after two items: the items, then INTERNAL.
    client.ready().await.unwrap();
    let mut items = client
        .server_streaming(
            Request::new(CountArgs { count: 2 }),
            path("Feed", "panics_after"),
            codec::<CountArgs, U64Reply>(),
        )
        .await
        .unwrap()
        .into_inner();
    assert_eq!(items.next().await.unwrap().unwrap().value, 0);
    assert_eq!(items.next().await.unwrap().unwrap().value, 1);
    let status = items.next().await.unwrap().unwrap_err();
    assert_eq!(status.code(), Code::Internal, "{status:?}");
    assert!(
        status.message().contains("feed panicked after 2 items"),
        "{status:?}"
    );
}

#[tokio::test]
async fn the_health_check_answers_for_the_server_and_its_services() {
    let server = serve(FeedImpl::default()).await;
    let mut client = grpc(&server).await;
    let health = PathAndQuery::from_static("/grpc.health.v1.Health/Check");
    for service in ["", "wirecall.services.Feed", "Door"] {
        let request = Request::new(HealthCheckRequest {
            service: service.into(),
        });
        let reply: HealthCheckResponse = unary(&mut client, health.clone(), request)
            .await
            .unwrap()
            .into_inner();
        assert_eq!(reply.status, 1, "SERVING for {service:?}");
    }
    let request = Request::new(HealthCheckRequest {
        service: "Nobody".into(),
    });
    let status = unary::<_, HealthCheckResponse>(&mut client, health, request)
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
}

#[tokio::test]
async fn the_token_holds_for_grpc_callers() {
    let server = Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .token("s3cret-token-for-the-door")
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let mut client = grpc(&server).await;
    let status = unary::<_, U64Reply>(
        &mut client,
        path("Feed", "add"),
        Request::new(AddArgs { a: 1, b: 1 }),
    )
    .await
    .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");

    let mut request = Request::new(AddArgs { a: 1, b: 1 });
    request.metadata_mut().insert(
        "authorization",
        "Bearer s3cret-token-for-the-door".parse().unwrap(),
    );
    let reply: U64Reply = unary(&mut client, path("Feed", "add"), request)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.value, 2);
}

#[tokio::test]
async fn wirecall_and_grpc_callers_share_the_port() {
    let server = serve(FeedImpl::default()).await;
    let mut client = grpc(&server).await;
    let wirecall = FeedClient::new(Channel::connect(server.local_addr()).await.unwrap());
    for n in 0..20u64 {
        let over_grpc: U64Reply = unary(
            &mut client,
            path("Feed", "add"),
            Request::new(AddArgs { a: n, b: 1 }),
        )
        .await
        .unwrap()
        .into_inner();
        let over_wirecall = wirecall.add(n, 1).await.unwrap();
        assert_eq!(over_grpc.value, over_wirecall);
    }
}

#[tokio::test]
async fn the_door_can_be_turned_off() {
    let server = Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .grpc(false)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    // The HTTP/2 preface is not a wirecall hello: the connection is dropped.
    let connected = Endpoint::from_shared(format!("http://{}", server.local_addr()))
        .unwrap()
        .connect()
        .await;
    let failed = match connected {
        Err(_) => true,
        Ok(channel) => {
            let mut client = tonic::client::Grpc::new(channel);
            unary::<_, U64Reply>(
                &mut client,
                path("Feed", "add"),
                Request::new(AddArgs { a: 1, b: 1 }),
            )
            .await
            .is_err()
        }
    };
    assert!(failed, "a server with the door off answered gRPC");
}

#[tokio::test]
async fn over_tls_a_caller_asking_for_h2_is_served_as_grpc() {
    use tokio_rustls::rustls;

    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert_pem, key_pem) = (certified.cert.pem(), certified.key_pair.serialize_pem());
    let server = Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .tls(wirecall::ServerTlsConfig::new(&cert_pem, &key_pem).unwrap())
        .bind("127.0.0.1:0")
        .await
        .unwrap();

    let mut roots = rustls::RootCertStore::empty();
    roots.add(certified.cert.der().clone()).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = connector.connect(name, tcp).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));

    let args = prost::Message::encode_to_vec(&AddArgs { a: 40, b: 2 });
    let (status, message, reply) =
        raw_call_on(tls, "/wirecall.services.Feed/add", &[], framed(&args)).await;
    assert_eq!(status, "0", "{message}");
    let reply: U64Reply = prost::Message::decode(&reply[5..]).unwrap();
    assert_eq!(reply.value, 42);

    // A wirecall client on the same TLS port.
    let channel = Channel::builder()
        .tls(wirecall::ClientTlsConfig::new(&cert_pem, "localhost").unwrap())
        .connect(server.local_addr())
        .await
        .unwrap();
    assert_eq!(FeedClient::new(channel).add(40, 2).await.unwrap(), 42);
}

#[tokio::test]
async fn the_servers_authorisation_hook_and_layers_hold_for_grpc_callers() {
    let server = Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .serve(DoorServer::new(DoorImpl))
        .authorize(|_peer, target| target.method != "numbers")
        .layer(tower::timeout::TimeoutLayer::new(Duration::from_millis(50)))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let mut client = grpc(&server).await;
    client.ready().await.unwrap();
    let status = client
        .server_streaming(
            Request::new(CountArgs { count: 3 }),
            path("Feed", "numbers"),
            codec::<CountArgs, U64Reply>(),
        )
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    // The other methods pass the hook.
    let sum: U64Reply = unary(
        &mut client,
        path("Feed", "add"),
        Request::new(AddArgs { a: 1, b: 2 }),
    )
    .await
    .unwrap()
    .into_inner();
    assert_eq!(sum.value, 3);
    // The server's timeout layer ends a call that takes longer than 50 ms.
    let status = unary::<_, U64Reply>(
        &mut client,
        path("Door", "wait"),
        Request::new(CountArgs { count: 2_000 }),
    )
    .await
    .unwrap_err();
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
}

#[tokio::test]
async fn a_grpc_caller_that_stops_answering_is_dropped_with_its_stream() {
    let feed = FeedImpl::default();
    let stats = feed.stats.clone();
    let server = Server::builder()
        .serve(FeedServer::new(feed))
        .keepalive_while_serving(Duration::from_millis(100))
        .ping_timeout(Duration::from_millis(200))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let tcp = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    let (mut client, connection) = h2::client::handshake(tcp).await.unwrap();
    // The caller's side of the connection runs until `freeze`, then is kept open but never
    // polled again: no more reading, no pong, as a host that hung or vanished.
    let (freeze, frozen) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        tokio::pin!(connection);
        tokio::select! {
            _ = &mut connection => {}
            _ = frozen => std::future::pending::<()>().await,
        }
    });
    let request =
        tonic::codegen::http::Request::post("http://localhost/wirecall.services.Feed/endless")
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .unwrap();
    let (response, mut send) = client.send_request(request, false).unwrap();
    send.send_data(framed(&[]).into(), true).unwrap();
    let mut body = response.await.unwrap().into_body();
    let first = body.data().await.unwrap().unwrap();
    assert!(!first.is_empty());
    assert_eq!(stats.dropped.load(Ordering::SeqCst), 0);
    freeze.send(()).unwrap();
    eventually("the producer of the vanished caller is dropped", || {
        stats.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
}

#[tokio::test]
async fn the_health_check_reads_the_servers_health_reporter() {
    use wirecall::health::{HealthReporter, ServingStatus};

    let reporter = HealthReporter::new();
    reporter.set("Feed", ServingStatus::Serving);
    let server = Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .serve(reporter.service())
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let client = grpc(&server).await;
    let check = |service: &'static str| {
        let mut client = client.clone();
        async move {
            let request = Request::new(HealthCheckRequest {
                service: service.into(),
            });
            let health = PathAndQuery::from_static("/grpc.health.v1.Health/Check");
            unary::<_, HealthCheckResponse>(&mut client, health, request)
                .await
                .map(|reply| reply.into_inner().status)
        }
    };
    assert_eq!(check("wirecall.services.Feed").await.unwrap(), 1);
    reporter.set("Feed", ServingStatus::NotServing);
    assert_eq!(check("wirecall.services.Feed").await.unwrap(), 2);
    // gRPC has no draining: a draining service takes no new calls, NOT_SERVING.
    reporter.set("Feed", ServingStatus::Draining);
    assert_eq!(check("Feed").await.unwrap(), 2);
    assert_eq!(check("").await.unwrap(), 1);
    let unknown = check("Nobody").await.unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound, "{unknown:?}");
}

#[tokio::test]
async fn a_health_watch_sends_each_change() {
    use wirecall::health::{HealthReporter, ServingStatus};

    let reporter = HealthReporter::new();
    reporter.set("Feed", ServingStatus::Serving);
    let server = Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .serve(reporter.service())
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let mut client = grpc(&server).await;
    client.ready().await.unwrap();
    let mut statuses = client
        .server_streaming(
            Request::new(HealthCheckRequest {
                service: "wirecall.services.Feed".into(),
            }),
            PathAndQuery::from_static("/grpc.health.v1.Health/Watch"),
            codec::<HealthCheckRequest, HealthCheckResponse>(),
        )
        .await
        .unwrap()
        .into_inner();
    assert_eq!(statuses.next().await.unwrap().unwrap().status, 1);
    reporter.set("Feed", ServingStatus::NotServing);
    assert_eq!(statuses.next().await.unwrap().unwrap().status, 2);
    reporter.set("Feed", ServingStatus::Serving);
    assert_eq!(statuses.next().await.unwrap().unwrap().status, 1);
}
