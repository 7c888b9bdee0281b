//! The gateway in front of a discovered fleet: a balanced `Channel` over every server that
//! registered a service, each HTTP call going to one live endpoint.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use wirecall::discovery::{Registration, Registry, StaticRegistry};
use wirecall::{Channel, Codec, RunningServer, Server};
use wirecall_gateway::{Gateway, JSON, NDJSON};
use wirecall_test_support::feed::{FeedImpl, FeedServer};

/// Says which server answered.
#[wirecall::service]
pub trait Fleet {
    /// The answering server's name, and the caller's `tenant` metadata.
    async fn whoami(&self, greeting: String) -> String;
    /// A one-way call.
    #[oneway]
    async fn ping(&self);
}

struct Node(&'static str);

impl Fleet for Node {
    async fn whoami(&self, greeting: String) -> String {
        let tenant = wirecall::CallContext::with_current(|call| {
            call.metadata().get("tenant").unwrap_or("-").to_owned()
        })
        .unwrap_or_default();
        format!("{greeting} from {} for {tenant}", self.0)
    }
    async fn ping(&self) {}
}

async fn node(registry: &Registry, name: &'static str) -> RunningServer {
    Server::builder()
        .serve(FleetServer::new(Node(name)))
        .register(registry.clone(), Registration::bound_address())
        .drain_delay(Duration::from_millis(50))
        .bind("127.0.0.1:0")
        .await
        .unwrap()
}

async fn post(
    http: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &'static str,
) -> (u16, Value) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut request = hyper::Request::builder()
        .method("POST")
        .uri(format!("http://{http}{path}"))
        .header(hyper::header::CONTENT_TYPE, JSON);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = client
        .request(
            request
                .body(Full::new(Bytes::from_static(body.as_bytes())))
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_gateway_calls_every_live_endpoint_of_a_discovered_service() {
    let registry = Registry::new(StaticRegistry::new());
    let a = node(&registry, "a").await;
    let b = node(&registry, "b").await;
    let balanced = Channel::balanced()
        .channel(Channel::builder().codec(Codec::Json))
        .discover(&registry, "Fleet")
        .await
        .unwrap();
    // Both registrations are seen before the gateway starts counting.
    for _ in 0..100 {
        if balanced.endpoints().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(balanced.endpoints().len(), 2);
    let gateway = Gateway::builder().build(balanced).await.unwrap();
    assert!(gateway
        .schemas()
        .iter()
        .any(|schema| schema.name == "Fleet"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http = listener.local_addr().unwrap();
    tokio::spawn(gateway.serve(listener));

    // Calls are spread over both servers, and metadata headers reach whichever answers.
    let mut answered_by = std::collections::BTreeSet::new();
    for _ in 0..40 {
        let (status, body) = post(
            http,
            "/Fleet/whoami",
            &[("wirecall-meta-tenant", "acme")],
            r#"{"greeting":"hi"}"#,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let text = body.as_str().unwrap().to_owned();
        assert!(
            text.starts_with("hi from ") && text.ends_with(" for acme"),
            "{text}"
        );
        answered_by.insert(text);
    }
    assert_eq!(answered_by.len(), 2, "{answered_by:?}");
    let (status, _) = post(http, "/Fleet/ping", &[], "{}").await;
    assert_eq!(status, 202);

    // One server leaves: the gateway keeps answering from the other.
    a.shutdown().await;
    for _ in 0..10 {
        let (status, body) = post(http, "/Fleet/whoami", &[], r#"{"greeting":"hi"}"#).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body, "hi from b for -");
    }
    b.shutdown().await;
}

/// A balanced channel that may pick MessagePack cannot carry the gateway's JSON bodies: the
/// call fails with a configuration error (500) instead of sending JSON as MessagePack.
#[tokio::test]
async fn a_balanced_channel_in_another_codec_is_refused_per_call() {
    let registry = Registry::new(StaticRegistry::new());
    let server = node(&registry, "a").await;
    let balanced = Channel::balanced()
        .channel(Channel::builder().codec(Codec::MessagePack))
        .discover(&registry, "Fleet")
        .await
        .unwrap();
    for _ in 0..100 {
        if !balanced.endpoints().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let err = balanced
        .call_raw(
            &wirecall::client::Method::new("Fleet", "whoami"),
            Codec::Json,
            Bytes::from_static(br#"{"greeting":"hi"}"#),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, wirecall::Error::Config(message) if message.contains("msgpack")),
        "{err}"
    );
    server.shutdown().await;
}

/// A server stream through a balanced upstream: opened on one live endpoint, its items
/// answered as newline-delimited JSON.
#[tokio::test]
async fn a_server_stream_goes_to_one_discovered_endpoint() {
    let registry = Registry::new(StaticRegistry::new());
    let server = Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .register(registry.clone(), Registration::bound_address())
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let balanced = Channel::balanced()
        .channel(Channel::builder().codec(Codec::Json))
        .discover(&registry, "Feed")
        .await
        .unwrap();
    wirecall_test_support::eventually("the endpoint is discovered", || {
        !balanced.endpoints().is_empty()
    })
    .await;
    let gateway = Gateway::builder().build(balanced).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http = listener.local_addr().unwrap();
    tokio::spawn(gateway.serve(listener));

    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = hyper::Request::builder()
        .method("POST")
        .uri(format!("http://{http}/Feed/numbers"))
        .header(hyper::header::CONTENT_TYPE, JSON)
        .body(Full::new(Bytes::from_static(br#"{"count":3}"#)))
        .unwrap();
    let response = client.request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()[hyper::header::CONTENT_TYPE], NDJSON);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "0\n1\n2\n");
    server.shutdown().await;
}
