//! No cross-site calls by default: a call must declare a JSON body (an NDJSON one for an
//! upload), which makes a browser ask first (a CORS preflight); the gateway answers
//! preflights only for the origins listed on its builder, and the explorer page calls a
//! method only when its button is clicked.

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use wirecall::{Channel, Codec, RunningServer, Server};
use wirecall_gateway::{Gateway, GatewayBuilder};
use wirecall_test_support::feed::{FeedImpl, FeedServer};
use wirecall_test_support::{UserServiceServer, Users};

struct Fixture {
    server: RunningServer,
    http: SocketAddr,
}

async fn fixture(builder: GatewayBuilder) -> Fixture {
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
        .serve(FeedServer::new(FeedImpl::default()))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let channel = Channel::builder()
        .codec(Codec::Json)
        .connect(server.local_addr())
        .await
        .unwrap();
    let gateway = builder.build(channel).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http = listener.local_addr().unwrap();
    tokio::spawn(gateway.serve(listener));
    Fixture { server, http }
}

async fn request(
    fixture: &Fixture,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &'static str,
) -> (u16, hyper::HeaderMap, Value) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(format!("http://{}{path}", fixture.http));
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
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        headers,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// A call answered 422 (no such user): it was made.
const FIND: &str = r#"{"user_id":99}"#;

/// What a browser sends without a preflight (no type, `text/plain`, a form's types) and
/// anything else but JSON is refused with 415 and the JSON error body; an upload takes
/// NDJSON only.
#[tokio::test]
async fn a_call_needs_a_json_content_type() {
    let fixture = fixture(Gateway::builder()).await;
    for content_type in [
        None,
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/x-ndjson"),
    ] {
        let headers: Vec<(&str, &str)> = content_type
            .map(|t| ("content-type", t))
            .into_iter()
            .collect();
        let (status, _, body) =
            request(&fixture, "POST", "/UserService/find", &headers, FIND).await;
        assert_eq!(status, 415, "{content_type:?}: {body}");
        assert_eq!(
            (&body["error"], &body["code"]),
            (&"UnsupportedMediaType".into(), &2.into())
        );
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("application/json"),
            "{body}"
        );
    }
    let (status, _, _) = request(
        &fixture,
        "POST",
        "/UserService/find",
        &[("content-type", "application/json; charset=utf-8")],
        FIND,
    )
    .await;
    assert_eq!(status, 422, "the call is made");

    let upload = "{}\n1\n2\n";
    let (status, _, body) = request(
        &fixture,
        "POST",
        "/Feed/sum",
        &[("content-type", "text/plain")],
        upload,
    )
    .await;
    assert_eq!(status, 415, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("application/x-ndjson or application/json"),
        "{body}"
    );
    // As application/json an upload is one array: NDJSON text is not JSON.
    let (status, _, body) = request(
        &fixture,
        "POST",
        "/Feed/sum",
        &[("content-type", "application/json")],
        upload,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, _, body) = request(
        &fixture,
        "POST",
        "/Feed/sum",
        &[("content-type", "application/x-ndjson")],
        upload,
    )
    .await;
    assert_eq!((status, body), (200, 3.into()));
    fixture.server.shutdown().await;
}

/// A preflight as a browser sends it for a JSON call from another origin.
fn preflight(origin: &'static str) -> [(&'static str, &'static str); 3] {
    [
        ("origin", origin),
        ("access-control-request-method", "POST"),
        ("access-control-request-headers", "content-type"),
    ]
}

#[tokio::test]
async fn cors_is_off_by_default() {
    let fixture = fixture(Gateway::builder()).await;
    let (status, headers, _) = request(
        &fixture,
        "OPTIONS",
        "/UserService/find",
        &preflight("https://elsewhere.example"),
        "",
    )
    .await;
    assert!(!(200..300).contains(&status), "{status}");
    assert!(
        headers.get("access-control-allow-origin").is_none(),
        "{headers:?}"
    );
    let (_, headers, _) = request(
        &fixture,
        "POST",
        "/UserService/find",
        &[
            ("origin", "https://elsewhere.example"),
            ("content-type", "application/json"),
        ],
        FIND,
    )
    .await;
    assert!(
        headers.get("access-control-allow-origin").is_none(),
        "{headers:?}"
    );
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn cors_answers_the_listed_origins_only() {
    let fixture = fixture(Gateway::builder().cors_origins(["https://app.example"])).await;
    let (status, headers, _) = request(
        &fixture,
        "OPTIONS",
        "/UserService/find",
        &preflight("https://app.example"),
        "",
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(
        headers["access-control-allow-origin"],
        "https://app.example"
    );
    assert!(headers["access-control-allow-methods"]
        .to_str()
        .unwrap()
        .contains("POST"));
    assert_eq!(headers["access-control-allow-headers"], "content-type");
    assert!(headers.get("access-control-allow-credentials").is_none());

    let (status, headers, _) = request(
        &fixture,
        "POST",
        "/UserService/find",
        &[
            ("origin", "https://app.example"),
            ("content-type", "application/json"),
        ],
        FIND,
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(
        headers["access-control-allow-origin"],
        "https://app.example"
    );

    let (status, headers, _) = request(
        &fixture,
        "OPTIONS",
        "/UserService/find",
        &preflight("https://evil.example"),
        "",
    )
    .await;
    assert!(!(200..300).contains(&status), "{status}");
    assert!(
        headers.get("access-control-allow-origin").is_none(),
        "{headers:?}"
    );
    fixture.server.shutdown().await;
}

/// The explorer fills the form from a link's query but calls only on a click: its script
/// has no call outside the button's handler.
#[tokio::test]
async fn the_explorer_calls_only_on_a_click() {
    let fixture = fixture(Gateway::builder()).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let response = client
        .get(format!("http://{}/", fixture.http).parse().unwrap())
        .await
        .unwrap();
    let page = response.into_body().collect().await.unwrap().to_bytes();
    let page = String::from_utf8(page.to_vec()).unwrap();
    let calls: Vec<&str> = page
        .lines()
        .filter(|line| !line.contains("function call("))
        .filter(|line| line.contains("call()") || line.contains(" call)"))
        .collect();
    assert_eq!(
        calls,
        [r#"  byId("call").addEventListener("click", call);"#],
        "the button's handler is the only way to call"
    );
    assert!(!page.contains(r#"query.get("call")"#));
    fixture.server.shutdown().await;
}
