//! The gateway's door over raw TCP: a request head that stalls is closed at the header
//! timeout, a body that stalls gets 408 and a closed connection, the time limit covers the
//! reading of the body, and connections over the cap are refused with 503 until one closes;
//! calls from other clients go on meanwhile.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;
use wirecall::{Channel, Codec, RunningServer, Server};
use wirecall_gateway::{Gateway, GatewayBuilder, JSON};
use wirecall_test_support::{eventually_async, UserServiceServer, Users, PATIENCE};

struct Fixture {
    server: RunningServer,
    http: SocketAddr,
}

async fn fixture(builder: GatewayBuilder) -> Fixture {
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

const GET_USER: &str = r#"{"user":{"user_id":7,"name":"ada","age":36}}"#;

/// A whole call through hyper's client on a connection of its own: its status.
async fn call(fixture: &Fixture) -> u16 {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = hyper::Request::builder()
        .method("POST")
        .uri(format!("http://{}/UserService/get_user", fixture.http))
        .header(hyper::header::CONTENT_TYPE, JSON)
        .body(Full::new(Bytes::from_static(GET_USER.as_bytes())))
        .unwrap();
    let response = tokio::time::timeout(PATIENCE, client.request(request))
        .await
        .expect("an answer within the patience")
        .unwrap();
    let status = response.status().as_u16();
    response.into_body().collect().await.unwrap();
    status
}

/// A request head for `POST /UserService/get_user` with this body length, ended.
fn head(content_length: usize, connection: &str) -> String {
    format!(
        "POST /UserService/get_user HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n\
         content-length: {content_length}\r\nconnection: {connection}\r\n\r\n"
    )
}

/// Everything the gateway sends until it closes the connection.
async fn read_until_closed(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut answer))
        .await
        .expect("the gateway closes the connection within the patience")
        .unwrap();
    String::from_utf8(answer).unwrap()
}

/// Reads one whole answer to a keep-alive request (its head says its length).
async fn read_answer(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let read = async {
        loop {
            let mut chunk = [0; 4096];
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(
                n > 0,
                "closed mid-answer: {:?}",
                String::from_utf8_lossy(&answer)
            );
            answer.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&answer).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|line| {
                        line.to_ascii_lowercase()
                            .strip_prefix("content-length: ")
                            .map(str::to_owned)
                    })
                    .and_then(|length| length.parse::<usize>().ok());
                if length.is_some_and(|length| body.len() >= length) {
                    return text;
                }
            }
        }
    };
    tokio::time::timeout(PATIENCE, read)
        .await
        .expect("an answer within the patience")
}

/// The JSON body of a whole HTTP/1.1 answer.
fn body_of(answer: &str) -> Value {
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body)
        .unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|error| panic!("{error}: {answer}"))
}

/// Twenty connections that send half a request head are each closed once the header timeout
/// has passed, not before; a call made meanwhile is answered.
#[tokio::test]
async fn half_a_request_head_is_closed_at_the_header_timeout() {
    let timeout = Duration::from_millis(800);
    let fixture = fixture(Gateway::builder().header_read_timeout(timeout)).await;
    let mut stalled = Vec::new();
    for _ in 0..20 {
        // Before the connection exists, so before the gateway's clock for it starts.
        let connecting = Instant::now();
        let mut stream = TcpStream::connect(fixture.http).await.unwrap();
        stream
            .write_all(b"POST /UserService/get_user HTTP/1.1\r\nhost: gat")
            .await
            .unwrap();
        stalled.push((stream, connecting));
    }
    assert_eq!(call(&fixture).await, 200, "other calls go on");
    for (mut stream, sent) in stalled {
        let answer = read_until_closed(&mut stream).await;
        assert_eq!(answer, "", "closed without an answer");
        assert!(
            sent.elapsed() >= timeout,
            "closed after {:?}",
            sent.elapsed()
        );
    }
    assert_eq!(call(&fixture).await, 200);
    fixture.server.shutdown().await;
}

/// A body that announces 100 bytes and sends 1 gets 408 with the JSON error body once it has
/// stalled for the body timeout, and its connection is closed.
#[tokio::test]
async fn a_stalled_body_gets_408_and_a_closed_connection() {
    let fixture = fixture(Gateway::builder().body_read_timeout(Duration::from_millis(300))).await;
    let mut stream = TcpStream::connect(fixture.http).await.unwrap();
    stream
        .write_all(format!("{}{{", head(100, "keep-alive")).as_bytes())
        .await
        .unwrap();
    let answer = read_until_closed(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    let body = body_of(&answer);
    assert_eq!(
        (&body["error"], &body["code"]),
        (&"RequestTimeout".into(), &10.into()),
        "{body}"
    );
    assert_eq!(call(&fixture).await, 200, "other calls go on");
    fixture.server.shutdown().await;
}

/// The time limit counts the reading of the body: a body that never ends gets 408 at the
/// time limit even with no stall timeout.
#[tokio::test]
async fn the_time_limit_covers_reading_the_body() {
    let fixture = fixture(
        Gateway::builder()
            .body_read_timeout(Duration::ZERO)
            .time_limit(Duration::from_millis(300)),
    )
    .await;
    let mut stream = TcpStream::connect(fixture.http).await.unwrap();
    stream
        .write_all(format!("{}{{", head(100, "keep-alive")).as_bytes())
        .await
        .unwrap();
    let answer = read_until_closed(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let body = body_of(&answer);
    assert_eq!(
        (&body["error"], &body["code"]),
        (&"RequestTimeout".into(), &4.into()),
        "{body}"
    );
    fixture.server.shutdown().await;
}

/// With a cap of 2, a third connection gets 503 with the JSON error body and is closed, while
/// the two go on; once one of them closes, a new connection is served.
#[tokio::test]
async fn connections_over_the_cap_are_refused_until_one_closes() {
    let fixture = fixture(Gateway::builder().max_connections(2)).await;
    let mut open = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(fixture.http).await.unwrap();
        stream
            .write_all(format!("{}{GET_USER}", head(GET_USER.len(), "keep-alive")).as_bytes())
            .await
            .unwrap();
        let answer = read_answer(&mut stream).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        open.push(stream);
    }

    let mut third = TcpStream::connect(fixture.http).await.unwrap();
    third
        .write_all(format!("{}{GET_USER}", head(GET_USER.len(), "keep-alive")).as_bytes())
        .await
        .unwrap();
    let answer = read_until_closed(&mut third).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let body = body_of(&answer);
    assert_eq!(
        (&body["error"], &body["code"]),
        (&"Overloaded".into(), &7.into()),
        "{body}"
    );

    // The two admitted connections are still served.
    for stream in &mut open {
        stream
            .write_all(format!("{}{GET_USER}", head(GET_USER.len(), "keep-alive")).as_bytes())
            .await
            .unwrap();
        let answer = read_answer(stream).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }

    drop(open.pop());
    eventually_async("a new connection is served once one closed", || async {
        call(&fixture).await == 200
    })
    .await;
    fixture.server.shutdown().await;
}
