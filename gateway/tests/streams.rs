//! Server-streaming methods through the gateway over real HTTP: newline-delimited JSON
//! written as the items arrive, the statuses of errors before the first item, the error line
//! of a stream that fails later, the time limit over the whole stream, a client that goes
//! away, and the OpenAPI document; and the same stream as Server-Sent Events for a client
//! whose `Accept` prefers them: its events, its end and error events, keep-alive comments
//! while it is idle, and a client that closes it.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use tokio::sync::Semaphore;
use wirecall::{Channel, Codec, RunningServer, Server, Streaming};
use wirecall_gateway::{Gateway, GatewayBuilder, EVENT_STREAM, JSON, NDJSON};
use wirecall_test_support::feed::{FeedImpl, FeedServer, FeedStats};
use wirecall_test_support::{eventually, quiet_panics_starting_with, PATIENCE};

/// A stream whose last item waits for the test's word.
#[wirecall::service]
pub trait Gated {
    /// `0..count`; the item `count - 1` is produced only once the test releases it.
    async fn countdown(&self, count: u64) -> Streaming<u64>;
    /// `0..count`, with the reply metadata `unit: item` and the trailer `count: <count>`.
    async fn tallied(&self, count: u64) -> Streaming<u64>;
}

struct Gate {
    release_last: Arc<Semaphore>,
}

impl Gated for Gate {
    async fn tallied(&self, count: u64) -> Streaming<u64> {
        use futures::StreamExt as _;
        wirecall::CallContext::with_current(|call| call.set_reply_metadata("unit", "item").ok());
        let items = futures::stream::iter(0..count).map(Some);
        // A last step that yields no item: the trailer, once every item is out.
        let last = futures::stream::once(async move {
            wirecall::CallContext::with_current(|call| {
                call.set_trailer("count", count.to_string()).ok()
            });
            None
        });
        Streaming::new(items.chain(last).filter_map(|item| async move { item }))
    }

    async fn countdown(&self, count: u64) -> Streaming<u64> {
        let release_last = Arc::clone(&self.release_last);
        Streaming::new(futures::stream::unfold(0, move |n| {
            let release_last = Arc::clone(&release_last);
            async move {
                if n >= count {
                    return None;
                }
                if n + 1 == count {
                    release_last.acquire().await.ok()?.forget();
                }
                Some((n, n + 1))
            }
        }))
    }
}

struct Fixture {
    server: RunningServer,
    http: SocketAddr,
    stats: Arc<FeedStats>,
    release_last: Arc<Semaphore>,
}

async fn fixture(builder: GatewayBuilder) -> Fixture {
    let feed = FeedImpl::default();
    let stats = Arc::clone(&feed.stats);
    let release_last = Arc::new(Semaphore::new(0));
    let server = Server::builder()
        .serve(FeedServer::new(feed))
        .serve(GatedServer::new(Gate {
            release_last: Arc::clone(&release_last),
        }))
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
    Fixture {
        server,
        http,
        stats,
        release_last,
    }
}

/// POSTs `body` to `path` and returns the response, its body not read yet.
async fn open(fixture: &Fixture, path: &str, body: &'static str) -> hyper::Response<Incoming> {
    open_accepting(fixture, path, None, body).await
}

/// POSTs `body` to `path` with an `Accept` header, if any, and returns the response, its
/// body not read yet.
async fn open_accepting(
    fixture: &Fixture,
    path: &str,
    accept: Option<&str>,
    body: &'static str,
) -> hyper::Response<Incoming> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let mut request = hyper::Request::builder()
        .method("POST")
        .uri(format!("http://{}{path}", fixture.http))
        .header(hyper::header::CONTENT_TYPE, JSON);
    if let Some(accept) = accept {
        request = request.header(hyper::header::ACCEPT, accept);
    }
    let request = request
        .body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap();
    tokio::time::timeout(PATIENCE, client.request(request))
        .await
        .expect("the response starts within the patience")
        .unwrap()
}

/// POSTs and reads the whole answer: the status, the content type and the body.
async fn post(fixture: &Fixture, path: &str, body: &'static str) -> (u16, String, String) {
    post_accepting(fixture, path, None, body).await
}

/// POSTs with an `Accept` header, if any, and reads the whole answer: the status, the
/// content type and the body.
async fn post_accepting(
    fixture: &Fixture,
    path: &str,
    accept: Option<&str>,
    body: &'static str,
) -> (u16, String, String) {
    let response = open_accepting(fixture, path, accept, body).await;
    let status = response.status().as_u16();
    let content_type = response.headers()[hyper::header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .to_owned();
    let body = tokio::time::timeout(PATIENCE, response.into_body().collect())
        .await
        .expect("the body ends")
        .unwrap()
        .to_bytes();
    (
        status,
        content_type,
        String::from_utf8(body.to_vec()).unwrap(),
    )
}

/// Each line of an NDJSON body as JSON.
fn lines(body: &str) -> Vec<Value> {
    assert!(body.is_empty() || body.ends_with('\n'), "{body:?}");
    body.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// Reads a response body line by line, as its chunks arrive.
struct LineReader {
    body: Incoming,
    buffered: Vec<u8>,
}

impl LineReader {
    fn new(response: hyper::Response<Incoming>) -> Self {
        Self {
            body: response.into_body(),
            buffered: Vec::new(),
        }
    }

    /// The next whole line; fails the test if none comes within [`PATIENCE`].
    async fn next_line(&mut self) -> String {
        tokio::time::timeout(PATIENCE, async {
            loop {
                if let Some(end) = self.buffered.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = self.buffered.drain(..=end).collect();
                    return String::from_utf8(line[..end].to_vec()).unwrap();
                }
                let frame = self
                    .body
                    .frame()
                    .await
                    .expect("the body ended before a whole line")
                    .unwrap();
                if let Ok(data) = frame.into_data() {
                    self.buffered.extend_from_slice(&data);
                }
            }
        })
        .await
        .expect("a line within the patience")
    }

    /// The lines of the next Server-Sent Events block, up to the blank line that ends it: an
    /// event's fields, or a comment.
    async fn next_event(&mut self) -> Vec<String> {
        let mut fields = Vec::new();
        loop {
            let line = self.next_line().await;
            if line.is_empty() {
                return fields;
            }
            fields.push(line);
        }
    }

    /// Whether the body ends here.
    async fn ends(self) -> bool {
        let rest = tokio::time::timeout(PATIENCE, self.body.collect())
            .await
            .expect("the body ends")
            .unwrap()
            .to_bytes();
        self.buffered.is_empty() && rest.is_empty()
    }
}

#[tokio::test]
async fn a_server_stream_answers_one_json_line_per_item() {
    let fixture = fixture(Gateway::builder()).await;
    let (status, content_type, body) = post(&fixture, "/Feed/numbers", r#"{"count":3}"#).await;
    assert_eq!((status, content_type.as_str()), (200, NDJSON));
    assert_eq!(body, "0\n1\n2\n");

    let (status, _, body) = post(&fixture, "/Feed/numbers", r#"{"count":0}"#).await;
    assert_eq!((status, body.as_str()), (200, ""));

    // Items of `Result<Tick, Refused>`: the `ok` value, as a unary reply's.
    let (status, _, body) = post(
        &fixture,
        "/Feed/ticks",
        r#"{"count":2,"body_len":0,"fail_at":99}"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let ticks = lines(&body);
    assert_eq!(ticks.len(), 2, "{body}");
    for (n, tick) in ticks.iter().enumerate() {
        assert_eq!(tick["n"], n as u64, "{tick}");
    }
    fixture.server.shutdown().await;
}

/// A stream's reply metadata comes as headers, as a unary call's; its trailers as a line (or
/// an event) right before its end.
#[tokio::test]
async fn a_streams_metadata_comes_as_headers_and_its_trailers_before_its_end() {
    let fixture = fixture(Gateway::builder()).await;
    let response = open(&fixture, "/Gated/tallied", r#"{"count":2}"#).await;
    assert_eq!(response.headers()["wirecall-meta-unit"], "item");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"0\n1\n{\"trailers\":{\"count\":\"2\"}}\n");

    let (status, _, body) = post(&fixture, "/Gated/tallied", r#"{"count":0}"#).await;
    assert_eq!(
        (status, body.as_str()),
        (200, "{\"trailers\":{\"count\":\"0\"}}\n")
    );

    let (status, _, body) =
        post_accepting(&fixture, "/Gated/tallied", ACCEPT_EVENTS, r#"{"count":1}"#).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        "data: 0\n\nevent: trailers\ndata: {\"count\":\"1\"}\n\nevent: end\ndata: {}\n\n"
    );
    fixture.server.shutdown().await;
}

/// The first line reaches the client while the stream is open: the server has not even
/// produced the last item yet, since it waits for the test.
#[tokio::test]
async fn items_reach_the_client_before_the_last_is_produced() {
    let fixture = fixture(Gateway::builder()).await;
    let response = open(&fixture, "/Gated/countdown", r#"{"count":3}"#).await;
    assert_eq!(response.status(), 200);
    let mut reader = LineReader::new(response);
    assert_eq!(reader.next_line().await, "0");
    assert_eq!(reader.next_line().await, "1");
    fixture.release_last.add_permits(1);
    assert_eq!(reader.next_line().await, "2");
    assert!(reader.ends().await, "nothing after the last item");
    fixture.server.shutdown().await;
}

/// An endless stream through HTTP: its items come as long as the client reads, and a client
/// that goes away cancels the stream, so the server stops producing.
#[tokio::test]
async fn a_client_that_goes_away_stops_the_stream() {
    let fixture = fixture(Gateway::builder()).await;
    let response = open(&fixture, "/Feed/endless", "{}").await;
    assert_eq!(response.status(), 200);
    let mut reader = LineReader::new(response);
    for n in 0..100 {
        assert_eq!(reader.next_line().await, n.to_string());
    }
    assert_eq!(fixture.stats.dropped.load(Ordering::SeqCst), 0);
    drop(reader);
    eventually("the server drops the producer", || {
        fixture.stats.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn errors_before_the_first_item_have_the_unary_statuses() {
    quiet_panics_starting_with("feed panicked");
    let fixture = fixture(Gateway::builder()).await;
    let (status, content_type, body) =
        post(&fixture, "/Feed/numbers", r#"{"count":"three"}"#).await;
    assert_eq!((status, content_type.as_str()), (400, "application/json"));
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (&body["error"], &body["code"]),
        (&json!("BadRequest"), &json!(2))
    );

    let (status, _, body) = post(
        &fixture,
        "/Feed/ticks",
        r#"{"count":3,"body_len":0,"fail_at":0}"#,
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"error": "Application", "value": {"reason": "item 0 refused"}})
    );

    let (status, _, body) = post(&fixture, "/Feed/panics_after", r#"{"after":0}"#).await;
    assert_eq!(status, 500, "{body}");
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn a_stream_that_fails_after_its_first_item_ends_with_an_error_line() {
    quiet_panics_starting_with("feed panicked");
    let fixture = fixture(Gateway::builder()).await;
    let (status, content_type, body) = post(&fixture, "/Feed/panics_after", r#"{"after":2}"#).await;
    assert_eq!((status, content_type.as_str()), (200, NDJSON));
    let items = lines(&body);
    assert_eq!(items[..2], [json!(0), json!(1)], "{body}");
    assert_eq!(items.len(), 3, "{body}");
    assert_eq!(items[2]["error"]["error"], "HandlerPanicked", "{body}");
    assert_eq!(items[2]["error"]["code"], 3, "{body}");

    let (status, _, body) = post(
        &fixture,
        "/Feed/ticks",
        r#"{"count":5,"body_len":0,"fail_at":2}"#,
    )
    .await;
    assert_eq!(status, 200);
    let items = lines(&body);
    assert_eq!(items.len(), 3, "{body}");
    assert_eq!((&items[0]["n"], &items[1]["n"]), (&json!(0), &json!(1)));
    assert_eq!(
        items[2],
        json!({"error": {"error": "Application", "value": {"reason": "item 2 refused"}}})
    );
    fixture.server.shutdown().await;
}

/// The gateway's time limit is the deadline of the whole stream, not of its first item.
#[tokio::test]
async fn the_time_limit_bounds_the_whole_stream() {
    let fixture = fixture(Gateway::builder().time_limit(Duration::from_millis(300))).await;
    let (status, _, body) = post(&fixture, "/Feed/endless", "{}").await;
    assert_eq!(status, 200);
    let items = lines(&body);
    let (last, numbers) = items.split_last().unwrap();
    assert!(numbers.len() >= 2, "items came before the deadline");
    for (n, item) in numbers.iter().enumerate() {
        assert_eq!(item, &json!(n), "in order, none lost");
    }
    assert_eq!(last["error"]["error"], "DeadlineExceeded", "{last}");
    assert_eq!(last["error"]["code"], 4, "{last}");
    assert!(last["error"]["message"].is_string(), "{last}");
    eventually("the server drops the producer", || {
        fixture.stats.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn openapi_describes_a_stream_as_ndjson_or_events() {
    let fixture = fixture(Gateway::builder()).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let response = client
        .get(
            format!("http://{}/openapi.json", fixture.http)
                .parse()
                .unwrap(),
        )
        .await
        .unwrap();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let document: Value = serde_json::from_slice(&bytes).unwrap();

    let numbers = &document["paths"]["/Feed/numbers"]["post"];
    assert_eq!(numbers["x-wirecall-server-stream"], true);
    let content = numbers["responses"]["200"]["content"].as_object().unwrap();
    let mut media_types: Vec<&str> = content.keys().map(String::as_str).collect();
    media_types.sort_unstable();
    assert_eq!(media_types, [NDJSON, EVENT_STREAM]);
    let (item, error_line) = (
        &content[NDJSON]["schema"]["anyOf"][0],
        &content[NDJSON]["schema"]["anyOf"][1],
    );
    assert_eq!(
        (&item["type"], &item["minimum"]),
        (&json!("integer"), &json!(0))
    );
    assert_eq!(
        error_line["properties"]["error"]["$ref"],
        "#/components/schemas/WirecallError"
    );
    // An event's data: the item, the error of an `error` event, the `{}` of the `end` event.
    let event_data = content[EVENT_STREAM]["schema"]["anyOf"].as_array().unwrap();
    assert_eq!(event_data[0], *item);
    assert_eq!(event_data[1]["$ref"], "#/components/schemas/WirecallError");
    assert_eq!(event_data[2]["maxProperties"], 0);
    let ticks = &document["paths"]["/Feed/ticks"]["post"];
    assert_eq!(
        ticks["responses"]["200"]["content"][NDJSON]["schema"]["anyOf"][0]["$ref"],
        "#/components/schemas/Tick"
    );
    assert!(ticks["responses"]["422"].is_object());

    let add = &document["paths"]["/Feed/add"]["post"];
    assert!(add.get("x-wirecall-server-stream").is_none());
    assert!(add["responses"]["200"]["content"]["application/json"].is_object());
    fixture.server.shutdown().await;
}

const ACCEPT_EVENTS: Option<&str> = Some("text/event-stream");

/// Each event (or comment) of a Server-Sent Events body, as its lines.
fn events(body: &str) -> Vec<Vec<&str>> {
    let events = body
        .strip_suffix("\n\n")
        .unwrap_or_else(|| panic!("an event stream ends with a blank line: {body:?}"));
    events
        .split("\n\n")
        .map(|event| event.lines().collect())
        .collect()
}

/// An item event's data as JSON.
fn item_data(event: &[&str]) -> Value {
    let [data] = event else {
        panic!("an item event is one data line: {event:?}")
    };
    let data = data.strip_prefix("data: ").expect("a data line");
    serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"))
}

#[tokio::test]
async fn a_client_that_accepts_an_event_stream_gets_one_event_per_item_then_the_end() {
    let fixture = fixture(Gateway::builder()).await;
    let (status, content_type, body) =
        post_accepting(&fixture, "/Feed/numbers", ACCEPT_EVENTS, r#"{"count":3}"#).await;
    assert_eq!((status, content_type.as_str()), (200, EVENT_STREAM));
    assert_eq!(
        body,
        "data: 0\n\ndata: 1\n\ndata: 2\n\nevent: end\ndata: {}\n\n"
    );

    let (status, _, body) =
        post_accepting(&fixture, "/Feed/numbers", ACCEPT_EVENTS, r#"{"count":0}"#).await;
    assert_eq!((status, body.as_str()), (200, "event: end\ndata: {}\n\n"));

    // Items of `Result<Tick, Refused>`: the `ok` value, each on one line.
    let (status, _, body) = post_accepting(
        &fixture,
        "/Feed/ticks",
        ACCEPT_EVENTS,
        r#"{"count":2,"body_len":3,"fail_at":99}"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let events = events(&body);
    assert_eq!(events.len(), 3, "{body}");
    for (n, event) in events[..2].iter().enumerate() {
        let tick = item_data(event);
        assert_eq!(tick["n"], n as u64, "{tick}");
    }
    assert_eq!(events[2], ["event: end", "data: {}"]);
    fixture.server.shutdown().await;
}

/// NDJSON answers unless `Accept` ranks the event stream strictly higher, by q-value and
/// the most specific range; either way the response says it varies with `Accept`.
#[tokio::test]
async fn ndjson_stays_the_default_unless_accept_prefers_an_event_stream() {
    let fixture = fixture(Gateway::builder()).await;
    for (accept, expected) in [
        (None, NDJSON),
        (Some("*/*"), NDJSON),
        (Some("application/json"), NDJSON),
        (Some("text/event-stream, application/x-ndjson"), NDJSON),
        (Some("text/event-stream;q=0.5, */*"), NDJSON),
        (
            Some("text/*;q=0.9, text/event-stream;q=0, */*;q=0.1"),
            NDJSON,
        ),
        (
            Some("application/x-ndjson;q=0.5, text/event-stream"),
            EVENT_STREAM,
        ),
        (Some("text/*, */*;q=0.8"), EVENT_STREAM),
        (
            Some("application/json, text/event-stream;q=0.1"),
            EVENT_STREAM,
        ),
    ] {
        let response = open_accepting(&fixture, "/Feed/numbers", accept, r#"{"count":1}"#).await;
        assert_eq!(response.status(), 200);
        let headers = response.headers();
        assert_eq!(
            headers[hyper::header::CONTENT_TYPE],
            expected,
            "Accept: {accept:?}"
        );
        assert_eq!(headers[hyper::header::VARY], "accept");
    }
    fixture.server.shutdown().await;
}

/// The items reach the client as events while the stream is open.
#[tokio::test]
async fn events_reach_the_client_before_the_last_item_is_produced() {
    let fixture = fixture(Gateway::builder()).await;
    let response = open_accepting(
        &fixture,
        "/Gated/countdown",
        ACCEPT_EVENTS,
        r#"{"count":3}"#,
    )
    .await;
    assert_eq!(response.status(), 200);
    let mut reader = LineReader::new(response);
    assert_eq!(reader.next_event().await, ["data: 0"]);
    assert_eq!(reader.next_event().await, ["data: 1"]);
    fixture.release_last.add_permits(1);
    assert_eq!(reader.next_event().await, ["data: 2"]);
    assert_eq!(reader.next_event().await, ["event: end", "data: {}"]);
    assert!(reader.ends().await, "nothing after the end event");
    fixture.server.shutdown().await;
}

/// While the server produces nothing, comments keep the connection busy, so that a proxy
/// does not close it as idle; the items after them come as usual.
#[tokio::test]
async fn an_idle_event_stream_gets_keep_alive_comments() {
    let fixture =
        fixture(Gateway::builder().event_stream_keep_alive(Duration::from_millis(50))).await;
    let response = open_accepting(
        &fixture,
        "/Gated/countdown",
        ACCEPT_EVENTS,
        r#"{"count":2}"#,
    )
    .await;
    let mut reader = LineReader::new(response);
    assert_eq!(reader.next_event().await, ["data: 0"]);
    // The last item waits for the test: meanwhile, the stream is kept alive.
    for _ in 0..3 {
        assert_eq!(reader.next_event().await, [":"]);
    }
    fixture.release_last.add_permits(1);
    let mut event = reader.next_event().await;
    while event == [":"] {
        event = reader.next_event().await;
    }
    assert_eq!(event, ["data: 1"]);
    loop {
        let event = reader.next_event().await;
        if event != [":"] {
            assert_eq!(event, ["event: end", "data: {}"]);
            break;
        }
    }
    assert!(reader.ends().await, "nothing after the end event");
    fixture.server.shutdown().await;
}

/// An endless stream as events: a client that closes the response cancels the stream, so
/// the server drops its producer.
#[tokio::test]
async fn a_client_that_closes_an_event_stream_stops_the_stream() {
    let fixture = fixture(Gateway::builder()).await;
    let response = open_accepting(&fixture, "/Feed/endless", ACCEPT_EVENTS, "{}").await;
    assert_eq!(response.status(), 200);
    let mut reader = LineReader::new(response);
    for n in 0..100 {
        assert_eq!(reader.next_event().await, [format!("data: {n}")]);
    }
    assert_eq!(fixture.stats.dropped.load(Ordering::SeqCst), 0);
    drop(reader);
    eventually("the server drops the producer", || {
        fixture.stats.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
    fixture.server.shutdown().await;
}

/// The status is decided before the first event, as for NDJSON: an error before it is
/// answered as a unary call's, with its status and JSON body.
#[tokio::test]
async fn an_event_stream_that_fails_before_its_first_item_gets_the_unary_status() {
    let fixture = fixture(Gateway::builder()).await;
    let (status, content_type, body) = post_accepting(
        &fixture,
        "/Feed/numbers",
        ACCEPT_EVENTS,
        r#"{"count":"three"}"#,
    )
    .await;
    assert_eq!((status, content_type.as_str()), (400, "application/json"));
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["code"], 2);

    let (status, _, body) = post_accepting(
        &fixture,
        "/Feed/ticks",
        ACCEPT_EVENTS,
        r#"{"count":3,"body_len":0,"fail_at":0}"#,
    )
    .await;
    assert_eq!(status, 422, "{body}");
    fixture.server.shutdown().await;
}

/// A failure after the first item ends the events with an `error` event, whose data is what
/// the NDJSON answer's last line holds under `"error"`, and no `end` event.
#[tokio::test]
async fn an_event_stream_that_fails_after_its_first_item_ends_with_an_error_event() {
    quiet_panics_starting_with("feed panicked");
    let fixture = fixture(Gateway::builder()).await;
    for (path, args) in [
        ("/Feed/panics_after", r#"{"after":2}"#),
        ("/Feed/ticks", r#"{"count":5,"body_len":0,"fail_at":2}"#),
    ] {
        let (_, _, ndjson) = post(&fixture, path, args).await;
        let error_line = lines(&ndjson).pop().unwrap();

        let (status, content_type, body) =
            post_accepting(&fixture, path, ACCEPT_EVENTS, args).await;
        assert_eq!(
            (status, content_type.as_str()),
            (200, EVENT_STREAM),
            "{body}"
        );
        let events = events(&body);
        assert_eq!(events.len(), 3, "two items and the error: {body}");
        let (last, items) = events.split_last().unwrap();
        for event in items {
            item_data(event);
        }
        let [name, data] = last[..] else {
            panic!("an error event: {body}")
        };
        assert_eq!(name, "event: error", "{body}");
        let error: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(error, error_line["error"], "the NDJSON answer's error");
    }
    fixture.server.shutdown().await;
}

/// The time limit ends an event stream as it ends an NDJSON one: with its error.
#[tokio::test]
async fn the_time_limit_ends_an_event_stream_with_an_error_event() {
    let fixture = fixture(Gateway::builder().time_limit(Duration::from_millis(300))).await;
    let (status, _, body) = post_accepting(&fixture, "/Feed/endless", ACCEPT_EVENTS, "{}").await;
    assert_eq!(status, 200);
    let events = events(&body);
    let (last, items) = events.split_last().unwrap();
    assert!(items.len() >= 2, "items came before the deadline");
    for (n, event) in items.iter().enumerate() {
        assert_eq!(item_data(event), json!(n), "in order, none lost");
    }
    assert_eq!(last[0], "event: error");
    let error: Value = serde_json::from_str(last[1].strip_prefix("data: ").unwrap()).unwrap();
    assert_eq!(error["error"], "DeadlineExceeded", "{error}");
    assert_eq!(error["code"], 4, "{error}");
    assert!(error["message"].is_string(), "{error}");
    eventually("the server drops the producer", || {
        fixture.stats.dropped.load(Ordering::SeqCst) == 1
    })
    .await;
    fixture.server.shutdown().await;
}
