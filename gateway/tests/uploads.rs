//! Methods that take an upload through the gateway over real HTTP: a newline-delimited JSON
//! body of the arguments and then the items, streamed through as it is read. Client streams
//! answered once as JSON, bidirectional ones item by item while the upload goes on, bad and
//! overlong lines refused with their number (before and after the answer started), the time
//! limit over an unfinished upload, and the OpenAPI document.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::channel::mpsc;
use futures::{SinkExt as _, StreamExt as _};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use wirecall::{Channel, Codec, RunningServer, Server, Streaming};
use wirecall_gateway::{Gateway, GatewayBuilder, EVENT_STREAM, NDJSON};
use wirecall_test_support::feed::{FeedImpl, FeedServer};
use wirecall_test_support::{eventually, PATIENCE};

/// Uploads the tests watch from the server's side.
#[wirecall::service]
pub trait Tally {
    /// How many numbers were uploaded; each is counted as it arrives.
    async fn count(&self, numbers: Streaming<u64>) -> u64;
}

/// What the `Tally` handler saw.
#[derive(Default)]
struct TallyStats {
    /// Numbers taken from uploads so far.
    received: AtomicU64,
    /// Uploads whose end (the client's End) the handler reached.
    uploads_ended: AtomicU64,
    /// Handlers that are over: answered, or dropped by a cancelled call.
    calls_over: AtomicU64,
}

#[derive(Default)]
struct Tallies {
    stats: Arc<TallyStats>,
}

/// Counts a handler out when it is over, however it ends.
struct CallOver(Arc<TallyStats>);

impl Drop for CallOver {
    fn drop(&mut self) {
        self.0.calls_over.fetch_add(1, Ordering::SeqCst);
    }
}

impl Tally for Tallies {
    async fn count(&self, mut numbers: Streaming<u64>) -> u64 {
        let stats = Arc::clone(&self.stats);
        let _over = CallOver(Arc::clone(&stats));
        let mut count = 0;
        while numbers.next().await.is_some() {
            count += 1;
            stats.received.fetch_add(1, Ordering::SeqCst);
        }
        stats.uploads_ended.fetch_add(1, Ordering::SeqCst);
        count
    }
}

struct Fixture {
    server: RunningServer,
    http: SocketAddr,
    tally: Arc<TallyStats>,
}

async fn fixture(builder: GatewayBuilder) -> Fixture {
    let tallies = Tallies::default();
    let tally = Arc::clone(&tallies.stats);
    let server = Server::builder()
        .serve(FeedServer::new(FeedImpl::default()))
        .serve(TallyServer::new(tallies))
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
        tally,
    }
}

/// POSTs a whole ndjson body and reads the whole answer: status, content type, body.
async fn post(fixture: &Fixture, path: &str, body: impl Into<Bytes>) -> (u16, String, String) {
    post_accepting(fixture, path, "*/*", body).await
}

/// POSTs a whole ndjson body with an `Accept` header and reads the whole answer.
async fn post_accepting(
    fixture: &Fixture,
    path: &str,
    accept: &str,
    body: impl Into<Bytes>,
) -> (u16, String, String) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = hyper::Request::builder()
        .method("POST")
        .uri(format!("http://{}{path}", fixture.http))
        .header(hyper::header::CONTENT_TYPE, NDJSON)
        .header(hyper::header::ACCEPT, accept)
        .body(Full::new(body.into()))
        .unwrap();
    let response = tokio::time::timeout(PATIENCE, client.request(request))
        .await
        .expect("the response starts within the patience")
        .unwrap();
    read_whole(response).await
}

async fn read_whole(response: hyper::Response<Incoming>) -> (u16, String, String) {
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

fn json_body(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|error| panic!("{error}: {body}"))
}

/// Each line of an NDJSON body as JSON.
fn lines(body: &str) -> Vec<Value> {
    assert!(body.is_empty() || body.ends_with('\n'), "{body:?}");
    body.lines().map(json_body).collect()
}

type BodyChunks = mpsc::Sender<Result<Frame<Bytes>, Infallible>>;

/// A request whose body the test writes while the call runs.
struct OpenUpload {
    body: Option<BodyChunks>,
    response: JoinHandle<hyper::Response<Incoming>>,
}

impl OpenUpload {
    /// Starts a POST to `path`; nothing of the body is sent yet.
    fn start(fixture: &Fixture, path: &str) -> Self {
        let (body, chunks) = mpsc::channel(16);
        let client = Client::builder(TokioExecutor::new())
            .build_http::<StreamBody<mpsc::Receiver<Result<Frame<Bytes>, Infallible>>>>();
        let request = hyper::Request::builder()
            .method("POST")
            .uri(format!("http://{}{path}", fixture.http))
            .header(hyper::header::CONTENT_TYPE, NDJSON)
            .body(StreamBody::new(chunks))
            .unwrap();
        let response = tokio::spawn(async move { client.request(request).await.unwrap() });
        Self {
            body: Some(body),
            response,
        }
    }

    /// Sends `text` as the body's next chunk.
    async fn send(&mut self, text: String) {
        let body = self.body.as_mut().expect("the body is still open");
        tokio::time::timeout(PATIENCE, body.send(Ok(Frame::data(Bytes::from(text)))))
            .await
            .expect("the chunk is taken within the patience")
            .unwrap();
    }

    /// Ends the body.
    fn finish(&mut self) {
        self.body = None;
    }

    /// The response, once its head has come.
    async fn response(&mut self) -> hyper::Response<Incoming> {
        tokio::time::timeout(PATIENCE, &mut self.response)
            .await
            .expect("the response starts within the patience")
            .unwrap()
    }
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

    /// The next whole line as JSON; fails the test if none comes within [`PATIENCE`].
    async fn next_line(&mut self) -> Value {
        tokio::time::timeout(PATIENCE, async {
            loop {
                if let Some(end) = self.buffered.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = self.buffered.drain(..=end).collect();
                    return json_body(std::str::from_utf8(&line[..end]).unwrap());
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
async fn a_client_stream_upload_is_answered_once_as_json() {
    let fixture = fixture(Gateway::builder()).await;
    let (status, content_type, body) = post(&fixture, "/Feed/sum", "{}\n1\n2\n3\n").await;
    assert_eq!(
        (status, content_type.as_str(), body.as_str()),
        (200, "application/json", "6")
    );

    // The arguments on the first line; blank lines and CRLF line ends are fine; the last line
    // needs no newline.
    let body = "{\"limit\":100}\r\n3\r\n\r\n4\n5";
    let (status, _, body) = post(&fixture, "/Feed/sum_until", body).await;
    assert_eq!((status, body.as_str()), (200, "12"));

    // An empty body: no arguments, an empty upload.
    let (status, _, body) = post(&fixture, "/Feed/sum", "").await;
    assert_eq!((status, body.as_str()), (200, "0"));
    fixture.server.shutdown().await;
}

/// `sum_until` answers with its `Err` as soon as the sum passes the limit, with the rest of
/// the upload unread: the answer is the unary one, 422.
#[tokio::test]
async fn a_client_streams_application_error_is_a_422() {
    let fixture = fixture(Gateway::builder()).await;
    let (status, _, body) = post(&fixture, "/Feed/sum_until", "{\"limit\":5}\n3\n4\n5\n").await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        json_body(&body),
        json!({"error": "Application", "value": {"reason": "the sum passed 5"}})
    );
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn a_bidirectional_echo_answers_each_item_as_a_json_line() {
    let fixture = fixture(Gateway::builder()).await;
    let body = "{}\n{\"n\":1,\"body\":\"\"}\n{\"n\":2,\"body\":\"Bwg=\"}\n";
    let (status, content_type, body) = post(&fixture, "/Feed/doubled", body).await;
    assert_eq!((status, content_type.as_str()), (200, NDJSON), "{body}");
    assert_eq!(
        lines(&body),
        [json!({"n": 2, "body": ""}), json!({"n": 4, "body": "Bwg="})]
    );
    fixture.server.shutdown().await;
}

/// A bidirectional answer is a stream's answer: Server-Sent Events when `Accept` prefers
/// them, and a client stream's single reply stays JSON.
#[tokio::test]
async fn a_bidirectional_answer_comes_as_events_when_accept_prefers_them() {
    let fixture = fixture(Gateway::builder()).await;
    let body = "{}\n{\"n\":1,\"body\":\"\"}\n{\"n\":2,\"body\":\"Bw==\"}\n";
    let (status, content_type, body) =
        post_accepting(&fixture, "/Feed/doubled", "text/event-stream", body).await;
    assert_eq!(
        (status, content_type.as_str()),
        (200, EVENT_STREAM),
        "{body}"
    );
    assert_eq!(
        body,
        "data: {\"body\":\"\",\"n\":2}\n\ndata: {\"body\":\"Bw==\",\"n\":4}\n\nevent: end\ndata: {}\n\n"
    );

    let (status, content_type, body) =
        post_accepting(&fixture, "/Feed/sum", "text/event-stream", "{}\n1\n2\n").await;
    assert_eq!(
        (status, content_type.as_str(), body.as_str()),
        (200, "application/json", "3")
    );
    fixture.server.shutdown().await;
}

/// Each echoed item reaches the client while its upload is still open: the body is streamed
/// through both ways, not collected first.
#[tokio::test]
async fn bidirectional_items_come_back_while_the_upload_is_still_going() {
    let fixture = fixture(Gateway::builder()).await;
    let mut upload = OpenUpload::start(&fixture, "/Feed/doubled");
    upload
        .send("{}\n{\"n\":1,\"body\":\"\"}\n".to_owned())
        .await;
    let response = upload.response().await;
    assert_eq!(response.status(), 200);
    let mut reader = LineReader::new(response);
    assert_eq!(reader.next_line().await["n"], 2);
    upload.send("{\"n\":5,".to_owned()).await;
    upload.send("\"body\":\"\"}\n".to_owned()).await;
    assert_eq!(reader.next_line().await["n"], 10);
    upload.finish();
    assert!(reader.ends().await, "the upload's end ends the answer");
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn a_line_that_is_not_json_or_not_an_item_is_refused_with_its_number() {
    let fixture = fixture(Gateway::builder()).await;
    // Line 5 (blank lines count, as an editor numbers them).
    let (status, content_type, body) = post(&fixture, "/Feed/sum", "{}\n1\n\n2\nlots\n4\n").await;
    assert_eq!((status, content_type.as_str()), (400, "application/json"));
    let body = json_body(&body);
    assert_eq!(
        (&body["error"], &body["line"]),
        (&json!("BadRequest"), &json!(5))
    );
    let message = body["message"].as_str().unwrap();
    assert_eq!(
        message,
        "line 5: the item is not JSON (expected value at column 1)"
    );

    let (status, _, body) = post(&fixture, "/Feed/sum", "{}\n1\n\"2\"\n").await;
    let body = json_body(&body);
    assert_eq!((status, &body["line"]), (400, &json!(3)), "{body}");
    assert_eq!(
        body["message"],
        "line 3: the item is not a u64: expected u64, found a string"
    );

    // An item's field, found by its path.
    let (status, _, body) = post(&fixture, "/Feed/doubled", "{}\n{\"n\":\"one\"}\n").await;
    let body = json_body(&body);
    assert_eq!((status, &body["line"]), (400, &json!(2)), "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("at `.n`"),
        "{body}"
    );

    // The first line is the arguments, checked as a unary call's body.
    let (status, _, body) = post(&fixture, "/Feed/sum_until", "{\"limt\":3}\n1\n").await;
    let body = json_body(&body);
    assert_eq!((status, &body["line"]), (400, &json!(1)), "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("unknown argument `limt`"),
        "{body}"
    );
    fixture.server.shutdown().await;
}

/// A bad line cancels the call instead of ending the upload: the server never answers for
/// the lines before it as if they were the whole upload. (The handler waits for more items
/// when the bad line comes, so an End sent by mistake would reach it.)
#[tokio::test]
async fn a_bad_line_cancels_the_call_without_ending_the_upload() {
    let fixture = fixture(Gateway::builder()).await;
    let mut upload = OpenUpload::start(&fixture, "/Tally/count");
    upload.send("{}\n1\n2\n".to_owned()).await;
    eventually("the handler takes the good lines", || {
        fixture.tally.received.load(Ordering::SeqCst) == 2
    })
    .await;
    upload.send("three\n".to_owned()).await;
    let (status, _, body) = read_whole(upload.response().await).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(json_body(&body)["line"], 4, "{body}");
    eventually("the server drops the handler", || {
        fixture.tally.calls_over.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(
        fixture.tally.uploads_ended.load(Ordering::SeqCst),
        0,
        "the handler never saw the upload end"
    );
    fixture.server.shutdown().await;
}

/// Once the first item is out, the status is sent: a bad line then ends the answer with an
/// error line that names it.
#[tokio::test]
async fn a_bad_line_after_the_answer_started_ends_it_with_an_error_line() {
    let fixture = fixture(Gateway::builder()).await;
    let mut upload = OpenUpload::start(&fixture, "/Feed/doubled");
    upload
        .send("{}\n{\"n\":1,\"body\":\"\"}\n".to_owned())
        .await;
    let response = upload.response().await;
    assert_eq!(response.status(), 200);
    let mut reader = LineReader::new(response);
    assert_eq!(reader.next_line().await["n"], 2);
    upload.send("{\"n\":oops}\n".to_owned()).await;
    let last = reader.next_line().await;
    assert_eq!(last["error"]["error"], "BadRequest", "{last}");
    assert_eq!(last["error"]["line"], 3, "{last}");
    assert!(reader.ends().await, "nothing after the error line");
    fixture.server.shutdown().await;
}

/// The body limit bounds each line of an upload: a longer one is refused with 413 and its
/// number, before the rest of it is read.
#[tokio::test]
async fn a_line_over_the_body_limit_is_refused_with_413() {
    let fixture = fixture(Gateway::builder().max_body_bytes(64)).await;
    let long_line = "1".repeat(100);
    let (status, _, body) = post(&fixture, "/Feed/sum", format!("{{}}\n1\n{long_line}\n")).await;
    let body = json_body(&body);
    assert_eq!((status, &body["line"]), (413, &json!(3)), "{body}");
    assert_eq!(body["error"], "PayloadTooLarge");
    assert_eq!(body["code"], 5, "{body}");
    assert!(body["message"].is_string(), "{body}");
    fixture.server.shutdown().await;
}

/// 10,000 lines, ten times the body limit in all, go through; and the first half reaches the
/// server's handler while the body is still open, so the gateway holds no more than a line
/// at a time, whatever the upload's length.
#[tokio::test]
async fn a_large_upload_streams_through_before_its_body_ends() {
    const HALF: u64 = 5_000;
    let fixture = fixture(Gateway::builder().max_body_bytes(2048)).await;
    let mut upload = OpenUpload::start(&fixture, "/Tally/count");
    upload.send("{}\n".to_owned()).await;
    for chunk in 0..HALF / 500 {
        let lines: String = (0..500).map(|n| format!("{}\n", chunk * 500 + n)).collect();
        upload.send(lines).await;
    }
    eventually("the first half reaches the handler", || {
        fixture.tally.received.load(Ordering::SeqCst) == HALF
    })
    .await;
    assert_eq!(fixture.tally.uploads_ended.load(Ordering::SeqCst), 0);
    for chunk in 0..HALF / 500 {
        let lines: String = (0..500).map(|n| format!("{}\n", chunk * 500 + n)).collect();
        upload.send(lines).await;
    }
    upload.finish();
    let (status, _, body) = read_whole(upload.response().await).await;
    assert_eq!((status, body.as_str()), (200, "10000"));
    fixture.server.shutdown().await;
}

/// An upload that never ends meets the time limit: 504, and the call is cancelled.
#[tokio::test]
async fn the_time_limit_bounds_an_unfinished_upload() {
    let fixture = fixture(Gateway::builder().time_limit(Duration::from_millis(300))).await;
    let mut upload = OpenUpload::start(&fixture, "/Tally/count");
    upload.send("{}\n1\n".to_owned()).await;
    let (status, _, body) = read_whole(upload.response().await).await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(json_body(&body)["error"], "DeadlineExceeded");
    eventually("the server drops the handler", || {
        fixture.tally.calls_over.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(fixture.tally.uploads_ended.load(Ordering::SeqCst), 0);
    fixture.server.shutdown().await;
}

#[tokio::test]
async fn openapi_describes_an_upload_as_an_ndjson_request() {
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

    let sum_until = &document["paths"]["/Feed/sum_until"]["post"];
    assert_eq!(sum_until["x-wirecall-upload"], true);
    let request = sum_until["requestBody"]["content"].as_object().unwrap();
    assert_eq!(
        request.keys().collect::<Vec<_>>(),
        ["application/json", NDJSON]
    );
    assert_eq!(sum_until["requestBody"]["required"], true);
    // The JSON-array form, which a tool that cannot write NDJSON can generate.
    let array = &request["application/json"]["schema"];
    assert_eq!(array["type"], "array");
    assert_eq!(array["minItems"], 1);
    assert_eq!(
        array["prefixItems"][0]["properties"]["limit"]["type"],
        "integer"
    );
    assert_eq!(array["prefixItems"][0]["additionalProperties"], false);
    assert_eq!(array["items"]["type"], "integer");
    let (args, item) = (
        &request[NDJSON]["schema"]["anyOf"][0],
        &request[NDJSON]["schema"]["anyOf"][1],
    );
    assert_eq!(args["properties"]["limit"]["type"], "integer", "{args}");
    assert_eq!(item["type"], "integer", "{item}");
    // A client stream answers as a unary call.
    assert!(sum_until["responses"]["200"]["content"]["application/json"].is_object());
    assert!(sum_until.get("x-wirecall-server-stream").is_none());

    let doubled = &document["paths"]["/Feed/doubled"]["post"];
    assert_eq!(doubled["x-wirecall-upload"], true);
    assert_eq!(doubled["x-wirecall-server-stream"], true);
    assert_eq!(
        doubled["requestBody"]["content"][NDJSON]["schema"]["anyOf"][1]["$ref"],
        "#/components/schemas/Tick"
    );

    let add = &document["paths"]["/Feed/add"]["post"];
    assert!(add.get("x-wirecall-upload").is_none());
    assert!(add["requestBody"]["content"]["application/json"].is_object());
    fixture.server.shutdown().await;
}

/// An upload sent as one JSON array (`application/json`): the argument object, then the
/// items; a bad element is refused with its position in `line`, an empty body or array
/// with 400.
#[tokio::test]
async fn an_upload_may_be_one_json_array() {
    let fixture = fixture(Gateway::builder()).await;
    let call = |path: &'static str, body: &'static str| {
        let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
        let request = hyper::Request::builder()
            .method("POST")
            .uri(format!("http://{}{path}", fixture.http))
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap();
        async move {
            let response = tokio::time::timeout(PATIENCE, client.request(request))
                .await
                .expect("the response starts within the patience")
                .unwrap();
            read_whole(response).await
        }
    };
    let (status, _, body) = call("/Feed/sum", "[{}, 1, 2, 3.0]").await;
    assert_eq!((status, body.as_str()), (200, "6"));
    let (status, _, body) = call("/Feed/sum_until", r#"[{"limit": 100}, 5, 6]"#).await;
    assert_eq!((status, body.as_str()), (200, "11"));
    let (status, _, body) = call("/Feed/sum", r#"[{}, 1, "two"]"#).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(json_body(&body)["line"], 3, "{body}");
    for refused in ["", "[]", "{}", r#"[{"nope": 1}]"#] {
        let (status, _, body) = call("/Feed/sum", refused).await;
        assert_eq!(status, 400, "{refused:?}: {body}");
    }
    let (status, _, body) = call("/Feed/doubled", r#"[{}, {"n": 4}]"#).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(json_body(body.lines().next().unwrap())["n"], 8, "{body}");
    fixture.server.shutdown().await;
}

/// An upload whose body stalls after some lines gets 408 with the JSON error body once it
/// has stalled for the body timeout, and the connection is not kept.
#[tokio::test]
async fn a_stalled_upload_gets_408() {
    let fixture = fixture(Gateway::builder().body_read_timeout(Duration::from_millis(300))).await;
    let mut upload = OpenUpload::start(&fixture, "/Feed/sum");
    upload.send("{}\n1\n2\n".to_owned()).await;
    let response = upload.response().await;
    assert_eq!(response.status(), 408);
    assert_eq!(response.headers()[hyper::header::CONNECTION], "close");
    let (_, _, body) = read_whole(response).await;
    let body = json_body(&body);
    assert_eq!(
        (&body["error"], &body["code"]),
        (&json!("RequestTimeout"), &json!(10)),
        "{body}"
    );
    fixture.server.shutdown().await;
}
