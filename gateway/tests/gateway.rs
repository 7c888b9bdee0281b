//! The gateway over real HTTP (hyper's client against `axum::serve` on a TCP port), in front
//! of a real wirecall server: replies, the error status table, metadata headers, body and
//! time limits, one-way calls and the OpenAPI document.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use wirecall::{Channel, Codec, RunningServer, Server};
use wirecall_gateway::Gateway;
// The shared `UserService` fixture: the service behind the gateway.
use wirecall_test_support::{UserServiceServer, Users, PATIENCE, SERVED_BY};

struct Fixture {
    server: RunningServer,
    http: SocketAddr,
}

async fn fixture(builder: wirecall_gateway::GatewayBuilder) -> Fixture {
    let server = Server::builder()
        .serve(UserServiceServer::new(Users::default()))
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

/// Sends a request and returns the status, the headers and the body as JSON (or a string).
async fn request(
    fixture: &Fixture,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> (u16, hyper::HeaderMap, Value) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(format!("http://{}{path}", fixture.http));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = client
        .request(request.body(Full::new(body.into())).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, headers, value)
}

/// The header of a call's body.
const JSON_BODY: (&str, &str) = ("content-type", "application/json");

async fn post(fixture: &Fixture, path: &str, body: &'static str) -> (u16, Value) {
    let (status, _, value) = request(fixture, "POST", path, &[JSON_BODY], body).await;
    (status, value)
}

#[tokio::test]
async fn post_calls_the_method_and_answers_its_reply() {
    let fixture = fixture(Gateway::builder()).await;
    let (status, body) = post(
        &fixture,
        "/UserService/get_user",
        r#"{"user":{"user_id":7,"name":"ada","age":36}}"#,
    )
    .await;
    assert_eq!(
        (status, body),
        (200, json!({"user_id": 7, "name": "ada", "age": 36}))
    );
    let (status, body) = post(&fixture, "/UserService/find", r#"{"user_id":9}"#).await;
    assert_eq!(
        (status, body),
        (
            422,
            json!({"error": "Application", "value": {"user_id": 9, "reason": "no such user"}})
        )
    );
    let (status, body) = post(&fixture, "/UserService/poke", r#"{"note":"hi"}"#).await;
    assert_eq!((status, body), (202, json!("")));
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn errors_map_to_the_documented_statuses() {
    let fixture = fixture(Gateway::builder()).await;
    let (status, body) = post(&fixture, "/UserService/find", r#"{"user_id":"nine"}"#).await;
    assert_eq!(status, 400);
    assert_eq!(
        (body["error"].as_str(), body["code"].as_u64()),
        (Some("BadRequest"), Some(2))
    );
    let (status, body) = post(&fixture, "/UserService/find", r#"{"id":1}"#).await;
    assert_eq!(status, 400);
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("unknown argument `id`"));
    let (status, _) = post(&fixture, "/UserService/find", "[1]").await;
    assert_eq!(status, 400);
    let (status, _) = post(&fixture, "/UserService/nope", "{}").await;
    assert_eq!(status, 404);
    let (status, _) = post(&fixture, "/Nope/find", "{}").await;
    assert_eq!(status, 404);
    let (status, _, _) = request(&fixture, "GET", "/UserService/find", &[], "").await;
    assert_eq!(status, 405);
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn metadata_travels_as_headers_both_ways() {
    let fixture = fixture(Gateway::builder()).await;
    let (status, headers, body) = request(
        &fixture,
        "POST",
        "/UserService/metadata",
        &[("wirecall-meta-tenant", "acme"), JSON_BODY],
        r#"{"key":"tenant"}"#,
    )
    .await;
    assert_eq!((status, body), (200, json!("acme")));
    assert_eq!(headers["wirecall-meta-served-by"], SERVED_BY);
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn bodies_and_calls_are_limited() {
    let fixture = fixture(
        Gateway::builder()
            .max_body_bytes(64)
            .time_limit(Duration::from_millis(200)),
    )
    .await;
    let big = format!(
        r#"{{"user":{{"user_id":1,"name":"{}","age":18}}}}"#,
        "x".repeat(100)
    );
    let (status, _, body) =
        request(&fixture, "POST", "/UserService/get_user", &[JSON_BODY], big).await;
    assert_eq!(status, 413);
    assert_error_body(&body, "PayloadTooLarge", 5);
    let (status, body) = post(&fixture, "/UserService/sleep", r#"{"millis":2000}"#).await;
    assert_eq!(status, 504, "{body}");
    assert_error_body(&body, "DeadlineExceeded", 4);
    fixture.server.shutdown().await;
}

/// Fails unless `body` is the documented error body with this name and code, and a message.
fn assert_error_body(body: &Value, name: &str, code: u64) {
    assert_eq!(body["error"], name, "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
}

/// 413, 404, 405 and a path that does not decode: each with the JSON error body.
#[tokio::test]
async fn every_refusal_is_the_json_error_body() {
    let fixture = fixture(Gateway::builder().max_body_bytes(64)).await;
    // (HTTP method, path, a JSON body of this length or none, status, error name, code)
    let cases = [
        (
            "POST",
            "/UserService/get_user",
            Some(100),
            413,
            "PayloadTooLarge",
            5,
        ),
        ("POST", "/no/such/route", Some(2), 404, "NotFound", 1),
        ("GET", "/nothing-here", None, 404, "NotFound", 1),
        ("POST", "/UserService/nope", Some(2), 404, "NotFound", 1),
        ("GET", "/UserService/find", None, 405, "MethodNotAllowed", 2),
        ("POST", "/UserService/%FF", Some(2), 400, "BadRequest", 2),
    ];
    for (method, path, json_length, status, name, code) in cases {
        let (headers, body): (&[(&str, &str)], String) = match json_length {
            Some(length) => (&[JSON_BODY], "x".repeat(length)),
            None => (&[], String::new()),
        };
        let (got, headers, body) = request(&fixture, method, path, headers, body).await;
        assert_eq!(got, status, "{method} {path}: {body}");
        assert_eq!(
            headers[hyper::header::CONTENT_TYPE],
            "application/json",
            "{method} {path}"
        );
        assert_error_body(&body, name, code);
    }
    fixture.server.shutdown().await;
}

/// A body over the limit with no `Content-Length` (chunked) is refused once it passes the
/// limit, with the same body as one that announced its length.
#[tokio::test]
async fn a_chunked_body_over_the_limit_is_the_json_413() {
    let fixture = fixture(Gateway::builder().max_body_bytes(64)).await;
    let mut stream = tokio::net::TcpStream::connect(fixture.http).await.unwrap();
    let chunk = "x".repeat(100);
    let request = format!(
        "POST /UserService/get_user HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n\
         transfer-encoding: chunked\r\nconnection: close\r\n\r\n{:x}\r\n{chunk}\r\n0\r\n\r\n",
        chunk.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(PATIENCE, stream.read_to_string(&mut answer))
        .await
        .expect("the gateway answers and closes")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    assert_error_body(&serde_json::from_str(body).unwrap(), "PayloadTooLarge", 5);
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn openapi_and_the_explorer_are_served() {
    let fixture = fixture(Gateway::builder()).await;
    let (status, _, document) = request(&fixture, "GET", "/openapi.json", &[], "").await;
    assert_eq!(status, 200);
    assert_eq!(document["openapi"], "3.1.0");
    let operation = &document["paths"]["/UserService/get_user"]["post"];
    assert_eq!(operation["operationId"], "UserService.get_user");
    assert_eq!(
        operation["requestBody"]["content"]["application/json"]["schema"]["properties"]["user"]
            ["$ref"],
        "#/components/schemas/UserModel"
    );
    assert_eq!(
        document["components"]["schemas"]["UserModel"]["properties"]["name"]["type"],
        "string"
    );
    assert!(document["paths"]["/UserService/find"]["post"]["responses"]["422"].is_object());
    assert!(document["paths"]["/UserService/poke"]["post"]["responses"]["202"].is_object());

    let (status, _, page) = request(&fixture, "GET", "/", &[], "").await;
    assert_eq!(status, 200);
    let page = page.as_str().unwrap();
    assert!(page.contains("<title>wirecall explorer</title>"));
    assert!(
        !page.contains("src=\"http") && !page.contains("href=\"http"),
        "no external assets"
    );
    let (_, _, services) = request(&fixture, "GET", "/services.json", &[], "").await;
    assert_eq!(services[0]["name"], "UserService");
    fixture.server.shutdown().await;
}
